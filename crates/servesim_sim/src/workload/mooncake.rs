//! Mooncake JSONL traces: one JSON object per line with `timestamp` (ms; alias
//! `created_time`), `input_length` (alias `input_tokens`), `output_length` (alias
//! `output_tokens`) and `hash_ids`, one id per trace block.

use super::Workload;
use crate::SimError;
use serde::Deserialize;
use serde::de::IgnoredAny;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    #[serde(alias = "created_time")]
    timestamp: f64,
    #[serde(alias = "input_tokens")]
    input_length: u32,
    #[serde(alias = "output_tokens")]
    output_length: u32,
    hash_ids: Vec<u64>,
    // Accepted and ignored: they only matter to features servesim does not model.
    #[serde(default)]
    #[allow(dead_code)]
    session_id: Option<IgnoredAny>,
    #[serde(default)]
    #[allow(dead_code)]
    request_id: Option<IgnoredAny>,
    #[serde(default)]
    #[allow(dead_code)]
    priority: Option<IgnoredAny>,
}

/// Parses a whole trace held in memory. `source` names the file (or upload) in errors.
pub fn parse(text: &str, block_tokens: u32, source: &str) -> Result<Workload, SimError> {
    let mut p = Parser::new(block_tokens, source)?;
    for line in text.lines() {
        p.line(line)?;
    }
    p.finish()
}

/// Parses a trace line by line from a reader, so a large file is never held whole.
pub fn parse_reader(reader: impl std::io::BufRead, block_tokens: u32, source: &str) -> Result<Workload, SimError> {
    let mut p = Parser::new(block_tokens, source)?;
    for line in reader.lines() {
        let line = line.map_err(|e| SimError::new(format!("{source}:{}: {e}", p.line_no + 1)))?;
        p.line(&line)?;
    }
    p.finish()
}

/// Incremental trace parser: one line at a time into a [`Workload`].
pub struct Parser<'a> {
    workload: Workload,
    source: &'a str,
    line_no: usize,
}

impl<'a> Parser<'a> {
    pub fn new(block_tokens: u32, source: &'a str) -> Result<Self, SimError> {
        if block_tokens == 0 {
            return Err(SimError::new("trace_block_size must be positive"));
        }
        Ok(Parser { workload: Workload::new(block_tokens), source, line_no: 0 })
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
        if !line.timestamp.is_finite() {
            return Err(at("timestamp must be a finite number".into()));
        }
        if line.hash_ids.is_empty() {
            return Err(at("hash_ids must not be empty".into()));
        }
        let capacity = line.hash_ids.len() as u64 * block_tokens as u64;
        if line.input_length as u64 > capacity {
            return Err(at(format!(
                "input_length {} exceeds hash_ids capacity {} ({} ids × trace_block_size {block_tokens})",
                line.input_length,
                capacity,
                line.hash_ids.len()
            )));
        }
        self.workload.push(line.timestamp, line.input_length, line.output_length, &line.hash_ids);
        Ok(())
    }

    pub fn finish(self) -> Result<Workload, SimError> {
        if self.workload.is_empty() {
            return Err(SimError::new(format!("{}: the trace has no requests", self.source)));
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
    }

    #[test]
    fn session_request_and_priority_fields_are_accepted_whatever_they_hold() {
        let t = concat!(
            "{\"timestamp\": 0, \"input_length\": 4, \"output_length\": 2, \"hash_ids\": [1], \"session_id\": \"s-1\", \"priority\": 3}\n",
            "{\"timestamp\": 1, \"input_length\": 4, \"output_length\": 2, \"hash_ids\": [1], \"request_id\": {\"a\": [1, null]}, \"session_id\": null}\n",
        );
        assert_eq!(parse(t, 16, "t").unwrap().len(), 2);
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
