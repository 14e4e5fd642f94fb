//! Mooncake JSONL traces: one JSON object per line with `timestamp` (ms; alias
//! `created_time`), `input_length` (alias `input_tokens`; default: every hash id's block),
//! `output_length` (alias `output_tokens`) and `hash_ids`, one id per trace block.
//!
//! Rows may be turns of multi-turn sessions (`session_id`, a string): turns are a session's
//! rows in file order; a later turn's think time is its `delay` (alias `delay_ms`), else its
//! `timestamp` minus the session's latest timestamp, else 0. Rows without a `session_id` are
//! sessions of one turn, named `request_<line>`. In `mooncake-delta` traces a later turn's
//! row holds only the new part of its prompt (see `Workload::cumulative`).

use super::{Sessions, TraceFormat, Workload};
use crate::SimError;
use rustc_hash::FxHashMap;
use serde::Deserialize;
use serde::de::IgnoredAny;
use servesim_engine::sequence::Image;

/// How a trace is read.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TraceOptions {
    /// Tokens each hash id stands for (`trace_block_size`).
    pub block_tokens: u32,
    pub format: TraceFormat,
    /// Closed loop: arrivals come from the load, so first turns need no timestamp.
    pub closed_loop: bool,
}

impl TraceOptions {
    /// A plain Mooncake trace replayed open loop.
    pub fn open(block_tokens: u32) -> Self {
        TraceOptions { block_tokens, format: TraceFormat::Mooncake, closed_loop: false }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    #[serde(default, alias = "created_time")]
    timestamp: Option<f64>,
    #[serde(default, alias = "input_tokens")]
    input_length: Option<u32>,
    #[serde(alias = "output_tokens")]
    output_length: u32,
    hash_ids: Vec<u64>,
    #[serde(default)]
    session_id: Option<String>,
    /// Think time after the previous turn of the session ends, ms.
    #[serde(default, alias = "delay_ms")]
    delay: Option<f64>,
    #[serde(default)]
    output_token_ids: Option<IgnoredAny>,
    /// Multimodal requests: the prompt's images (see `docs/multimodal.md`).
    #[serde(default)]
    images: Option<Vec<ImageRow>>,
    // Accepted and ignored: a request's name, and the KV router queue's priorities (servesim's
    // router queue is first come, first served).
    #[serde(default)]
    #[allow(dead_code)]
    request_id: Option<IgnoredAny>,
    #[serde(default)]
    #[allow(dead_code)]
    priority: Option<IgnoredAny>,
    #[serde(default)]
    #[allow(dead_code)]
    strict_priority: Option<IgnoredAny>,
    #[serde(default)]
    #[allow(dead_code)]
    policy_class: Option<IgnoredAny>,
}

/// One image of a row: `tokens` image tokens (added to `input_length`'s text tokens), its
/// content `hash`, inserted before text position `offset` (default 0: before the text).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ImageRow {
    tokens: u32,
    hash: u64,
    #[serde(default)]
    offset: u32,
}

/// Parses a whole trace held in memory, replayed open loop. `source` names the file (or
/// upload) in errors.
pub fn parse(text: &str, block_tokens: u32, source: &str) -> Result<Workload, SimError> {
    parse_with(text, TraceOptions::open(block_tokens), source)
}

/// Parses a whole trace held in memory.
pub fn parse_with(text: &str, opts: TraceOptions, source: &str) -> Result<Workload, SimError> {
    let mut p = Parser::new(opts, source)?;
    for line in text.lines() {
        p.line(line)?;
    }
    p.finish()
}

/// Parses a trace line by line from a reader, so a large file is never held whole.
pub fn parse_reader(reader: impl std::io::BufRead, block_tokens: u32, source: &str) -> Result<Workload, SimError> {
    parse_reader_with(reader, TraceOptions::open(block_tokens), source)
}

/// Parses a trace line by line from a reader.
pub fn parse_reader_with(reader: impl std::io::BufRead, opts: TraceOptions, source: &str) -> Result<Workload, SimError> {
    let mut p = Parser::new(opts, source)?;
    for line in reader.lines() {
        let line = line.map_err(|e| SimError::new(format!("{source}:{}: {e}", p.line_no + 1)))?;
        p.line(&line)?;
    }
    p.finish()
}

/// Incremental trace parser: one line at a time into a [`Workload`].
pub struct Parser<'a> {
    workload: Workload,
    opts: TraceOptions,
    source: &'a str,
    line_no: usize,
    /// Sessions by `session_id`; rows without one are sessions of their own.
    named: FxHashMap<String, u32>,
    /// Per session: the latest timestamp its rows gave (later delays count from it).
    last_timestamp: Vec<Option<f64>>,
    sessions: Sessions,
}

impl<'a> Parser<'a> {
    pub fn new(opts: TraceOptions, source: &'a str) -> Result<Self, SimError> {
        if opts.block_tokens == 0 {
            return Err(SimError::new("trace_block_size must be positive"));
        }
        let mut workload = Workload::new(opts.block_tokens);
        workload.cumulative = opts.format == TraceFormat::MooncakeDelta;
        Ok(Parser {
            workload,
            opts,
            source,
            line_no: 0,
            named: FxHashMap::default(),
            last_timestamp: Vec::new(),
            sessions: Sessions::default(),
        })
    }

    pub fn line(&mut self, raw: &str) -> Result<(), SimError> {
        self.line_no += 1;
        let raw = raw.trim();
        if raw.is_empty() {
            return Ok(());
        }
        let (source, n, block_tokens) = (self.source, self.line_no, self.workload.block_tokens);
        let at = |msg: String| SimError::new(format!("{source}:{n}: {msg}"));
        let line: Line = serde_json::from_str(raw).map_err(|e| at(e.to_string()))?;
        if line.timestamp.is_some_and(|t| !t.is_finite()) {
            return Err(at("timestamp must be a finite number".into()));
        }
        if line.hash_ids.is_empty() {
            return Err(at("hash_ids must not be empty".into()));
        }
        if line.output_token_ids.is_some() {
            return Err(at("output_token_ids is not supported (servesim generates each request's output tokens itself)".into()));
        }
        let capacity = line.hash_ids.len() as u64 * block_tokens as u64;
        let input_length = line.input_length.unwrap_or(capacity.min(u32::MAX as u64) as u32);
        if input_length as u64 > capacity {
            return Err(at(format!(
                "input_length {} exceeds hash_ids capacity {} ({} ids × trace_block_size {block_tokens})",
                input_length,
                capacity,
                line.hash_ids.len()
            )));
        }
        let row = self.workload.rows.len() as u32;
        let existing = line.session_id.as_ref().and_then(|sid| self.named.get(sid).copied());
        let (s, delay) = match existing {
            None => {
                // A new session; this row is its first turn.
                let s = self.sessions.names.len() as u32;
                let name = match &line.session_id {
                    Some(sid) => {
                        self.named.insert(sid.clone(), s);
                        sid.clone()
                    }
                    None => format!("request_{n}"),
                };
                if line.delay.is_some_and(|d| d != 0.0) {
                    return Err(at(format!("sets delay on the first turn of session {name}")));
                }
                if line.timestamp.is_none() && !self.opts.closed_loop {
                    return Err(at(format!(
                        "the first turn of session {name} has no timestamp (an open-loop replay starts each session at its first turn's timestamp; closed loop needs none)"
                    )));
                }
                self.last_timestamp.push(line.timestamp);
                self.sessions.push(s, || name, row, 0.0);
                (s, 0.0)
            }
            Some(s) => {
                let last = &mut self.last_timestamp[s as usize];
                let delay = match (line.delay, line.timestamp, *last) {
                    (Some(d), _, _) => d,
                    (None, Some(ts), Some(prev)) => ts - prev,
                    (None, Some(_), None) => {
                        let name = &self.sessions.names[s as usize];
                        return Err(at(format!("session {name}: cannot infer the delay without a timestamp on an earlier turn")));
                    }
                    (None, None, _) => 0.0,
                };
                if !(delay.is_finite() && delay >= 0.0) {
                    return Err(at(format!("invalid delay {delay}")));
                }
                if line.timestamp.is_some() {
                    *last = line.timestamp;
                }
                (s, delay)
            }
        };
        if existing.is_some() {
            self.sessions.push(s, String::new, row, delay);
        }
        let images = match line.images {
            None => Vec::new(),
            Some(rows) => {
                if self.workload.cumulative {
                    return Err(at("images are not supported in mooncake-delta traces (a later turn's history would lose them)".into()));
                }
                let mut images = Vec::with_capacity(rows.len());
                for (k, m) in rows.iter().enumerate() {
                    if m.tokens == 0 {
                        return Err(at(format!("images[{k}].tokens must be at least 1")));
                    }
                    if m.offset > input_length {
                        return Err(at(format!("images[{k}].offset {} is past input_length {input_length}", m.offset)));
                    }
                    images.push(Image { offset: m.offset, tokens: m.tokens, hash: m.hash });
                }
                images
            }
        };
        self.workload.push(line.timestamp.unwrap_or(f64::NAN), input_length, line.output_length, &line.hash_ids);
        self.workload.set_images(images);
        Ok(())
    }

    pub fn finish(mut self) -> Result<Workload, SimError> {
        if self.workload.is_empty() {
            return Err(SimError::new(format!("{}: the trace has no requests", self.source)));
        }
        // Rows that are all requests of their own need no session bookkeeping.
        if !self.named.is_empty() {
            self.workload.sessions = Some(self.sessions);
        }
        Ok(self.workload)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_and_token_synthesis() {
        let t = "{\"created_time\": 5, \"input_tokens\": 5, \"output_tokens\": 2, \"hash_ids\": [7, 9]}\n\n";
        let w = parse(t, 3, "t.jsonl").unwrap();
        assert_eq!(w.len(), 1);
        assert_eq!(w.request(0, 0).prompt.to_vec(), vec![7, 7, 7, 9, 9]);
        assert!(w.sessions.is_none());
        // The input length defaults to every hash id's block.
        let w = parse("{\"timestamp\": 0, \"output_length\": 2, \"hash_ids\": [7, 9]}", 3, "t").unwrap();
        assert_eq!(w.rows[0].input_length, 6);
    }

    #[test]
    fn request_and_priority_fields_are_accepted_whatever_they_hold() {
        let t = concat!(
            "{\"timestamp\": 0, \"input_length\": 4, \"output_length\": 2, \"hash_ids\": [1], \"priority\": 3}\n",
            "{\"timestamp\": 1, \"input_length\": 4, \"output_length\": 2, \"hash_ids\": [1], \"request_id\": {\"a\": [1, null]}, \"session_id\": null}\n",
        );
        assert_eq!(parse(t, 16, "t").unwrap().len(), 2);
    }

    #[test]
    fn sessions_take_their_turns_and_think_times() {
        let t = concat!(
            "{\"session_id\": \"a\", \"timestamp\": 100, \"input_length\": 4, \"output_length\": 2, \"hash_ids\": [1]}\n",
            "{\"timestamp\": 50, \"input_length\": 4, \"output_length\": 2, \"hash_ids\": [2]}\n",
            "{\"session_id\": \"a\", \"timestamp\": 500, \"delay\": 7, \"input_length\": 4, \"output_length\": 2, \"hash_ids\": [1]}\n",
            "\n",
            "{\"session_id\": \"a\", \"timestamp\": 600, \"input_length\": 4, \"output_length\": 2, \"hash_ids\": [1]}\n",
            "{\"session_id\": \"a\", \"input_length\": 4, \"output_length\": 2, \"hash_ids\": [1]}\n",
            "{\"session_id\": \"a\", \"delay_ms\": 3.5, \"input_length\": 4, \"output_length\": 2, \"hash_ids\": [1]}\n",
        );
        let w = parse(t, 16, "t").unwrap();
        let s = w.sessions.unwrap();
        assert_eq!(s.names, vec!["a".to_string(), "request_2".to_string()]);
        assert_eq!(s.session, vec![0, 1, 0, 0, 0, 0]);
        assert_eq!(s.turn, vec![0, 0, 1, 2, 3, 4]);
        assert_eq!(s.next, vec![2, u32::MAX, 3, 4, 5, u32::MAX]);
        // An explicit delay wins over the timestamp; later timestamps count from the latest.
        assert_eq!(s.delay_ms, vec![0.0, 0.0, 7.0, 100.0, 0.0, 3.5]);
        assert!(s.multi_turn());
    }

    #[test]
    fn session_errors_name_the_line() {
        let row = |extra: &str| format!("{{\"input_length\": 4, \"output_length\": 2, \"hash_ids\": [1]{extra}}}\n");
        let e = parse(&row(", \"session_id\": \"s\", \"timestamp\": 0, \"delay\": 5"), 16, "t").unwrap_err();
        assert_eq!(e.0, "t:1: sets delay on the first turn of session s");
        let t = row(", \"session_id\": \"s\", \"timestamp\": 0") + &row(", \"session_id\": \"s\", \"delay\": -5");
        assert_eq!(parse(&t, 16, "t").unwrap_err().0, "t:2: invalid delay -5");
        let t = row(", \"session_id\": \"s\", \"timestamp\": 10") + &row(", \"session_id\": \"s\", \"timestamp\": 5");
        assert_eq!(parse(&t, 16, "t").unwrap_err().0, "t:2: invalid delay -5");
        let e = parse(&row(", \"session_id\": 3, \"timestamp\": 0"), 16, "t").unwrap_err();
        assert!(e.0.starts_with("t:1: invalid type: integer `3`, expected a string"), "{e}");
        let e = parse(&row(", \"delay\": 1, \"delay_ms\": 1, \"timestamp\": 0"), 16, "t").unwrap_err();
        assert!(e.0.contains("duplicate field"), "{e}");
        // Open loop needs the first turn's timestamp; closed loop does not.
        let e = parse(&row(", \"session_id\": \"s\""), 16, "t").unwrap_err();
        assert!(e.0.starts_with("t:1: the first turn of session s has no timestamp"), "{e}");
        let closed = TraceOptions { closed_loop: true, ..TraceOptions::open(16) };
        assert!(parse_with(&row(", \"session_id\": \"s\""), closed, "t").is_ok());
        let e = parse(&row(", \"timestamp\": 0, \"output_token_ids\": [1, 2]"), 16, "t").unwrap_err();
        assert!(e.0.contains("output_token_ids is not supported"), "{e}");
    }

    #[test]
    fn errors_name_the_file_and_line() {
        let t =
            "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 2, \"hash_ids\": [1]}\n{\"timestamp\": 1, \"input_length\": 5}\n";
        let e = parse(t, 512, "x.jsonl").unwrap_err().to_string();
        assert!(e.starts_with("x.jsonl:2: missing field"), "{e}");
        let e = parse("{\"timestamp\": 0, \"input_length\": 40, \"output_length\": 2, \"hash_ids\": [1, 2]}", 16, "y").unwrap_err();
        assert!(e.to_string().contains("y:1: input_length 40 exceeds hash_ids capacity 32"), "{e}");
        let e =
            parse("{\"timestamp\": 0, \"input_length\": 4, \"output_length\": 2, \"hash_ids\": [1], \"bogus\": 1}", 16, "z").unwrap_err();
        assert!(e.to_string().contains("z:1: unknown field `bogus`"), "{e}");
        assert!(parse("\n", 16, "e").unwrap_err().to_string().contains("no requests"));
        assert!(parse("not json", 16, "n").unwrap_err().to_string().starts_with("n:1:"));
    }

    #[test]
    fn images_are_read_and_checked() {
        let t = "{\"timestamp\": 0, \"input_length\": 4, \"output_length\": 2, \"hash_ids\": [7], \"images\": [{\"tokens\": 3, \"hash\": 99, \"offset\": 2}]}\n";
        let w = parse(t, 4, "m.jsonl").unwrap();
        assert!(w.has_images());
        assert_eq!(w.input_length(0), 7);
        let p = w.request(0, 0).prompt;
        let img = servesim_engine::sequence::image_token(99);
        assert_eq!(p.to_vec(), vec![7, 7, img, img, img, 7, 7]);
        assert_eq!(p.images()[0].start, 2);
        let bad = |imgs: &str| {
            parse(
                &format!("{{\"timestamp\": 0, \"input_length\": 4, \"output_length\": 2, \"hash_ids\": [7], \"images\": {imgs}}}"),
                4,
                "m.jsonl",
            )
            .unwrap_err()
            .to_string()
        };
        assert!(bad("[{\"tokens\": 0, \"hash\": 1}]").starts_with("m.jsonl:1: images[0].tokens must be at least 1"));
        assert!(bad("[{\"tokens\": 5, \"hash\": 1, \"offset\": 9}]").contains("images[0].offset 9 is past input_length 4"));
        assert!(bad("[{\"tokens\": 5, \"hash\": 1, \"size\": 9}]").contains("m.jsonl:1: unknown field `size`"));
        assert!(bad("[{\"tokens\": 5}]").contains("m.jsonl:1: missing field `hash`"));
    }

    #[test]
    fn arrivals_are_normalised_and_ordered() {
        let mut w = Workload::new(16);
        for ts in [100.0, 150.5, 0.0 + 100.0, 333.3333] {
            w.push(ts, 1, 1, &[1]);
        }
        let (t, order) = w.arrivals(2.0);
        assert_eq!(t, vec![0.0, 25.25, 0.0, 116.66665]);
        assert_eq!(order, vec![0, 2, 1, 3]);
    }
}
