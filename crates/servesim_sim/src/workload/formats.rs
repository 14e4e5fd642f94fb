//! Trace formats besides Mooncake, as Dynamo's replay reads them (`trace_format`):
//! - `mooncake-delta`: Mooncake rows whose later turns hold only the new part of the prompt;
//! - `applied_compute_agentic`: one row per agent session (turns of assistant responses and
//!   tool outputs, tool-call latencies as think times); closed loop only;
//! - `dynamo` (`dynamo.request.trace.v1`): `request_end` records of a served deployment, each
//!   replayed as a request at its start time; records with `agent_context` make a request
//!   graph instead (`agentic::dynamo`);
//! - `agentic_mooncake`: request graphs (`agentic::mooncake`).

use super::agentic::{self, dynamo::Claude, dynamo::ExplicitDependency};
use super::mooncake::{self, TraceOptions};
use super::{Sessions, TraceFormat, Workload};
use crate::SimError;
use serde::Deserialize;

/// Reads a trace held in memory, in any format.
pub fn read_text(text: &str, opts: TraceOptions, source: &str) -> Result<Workload, SimError> {
    match opts.format {
        TraceFormat::Mooncake | TraceFormat::MooncakeDelta => mooncake::parse_with(text, opts, source),
        TraceFormat::AppliedComputeAgentic => agentic(text.lines().map(|l| Ok(l.to_string())), opts, source),
        TraceFormat::Dynamo => dynamo(text.lines().map(|l| Ok(l.to_string())), opts, source),
        TraceFormat::AgenticMooncake => agentic_mooncake(text.lines().map(|l| Ok(l.to_string())), opts, source),
    }
}

/// Reads a trace line by line from a reader (a large file is never held whole), in any format.
pub fn read_reader(reader: impl std::io::BufRead, opts: TraceOptions, source: &str) -> Result<Workload, SimError> {
    match opts.format {
        TraceFormat::Mooncake | TraceFormat::MooncakeDelta => mooncake::parse_reader_with(reader, opts, source),
        TraceFormat::AppliedComputeAgentic => agentic(reader.lines(), opts, source),
        TraceFormat::Dynamo => dynamo(reader.lines(), opts, source),
        TraceFormat::AgenticMooncake => agentic_mooncake(reader.lines(), opts, source),
    }
}

fn agentic_mooncake(lines: impl Iterator<Item = std::io::Result<String>>, opts: TraceOptions, source: &str) -> Result<Workload, SimError> {
    if opts.closed_loop {
        return Err(SimError::new(format!(
            "{source}: an agentic_mooncake trace is replayed on its own times and dependencies, not with a concurrency"
        )));
    }
    agentic::mooncake::read(lines, source)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentRow {
    num_turns: usize,
    input_prompt_length: u32,
    assistant_response_length: Vec<u32>,
    tool_call_output_length: Vec<u32>,
    /// Seconds.
    tool_call_latency: Vec<f64>,
    final_assistant_response_length: u32,
}

/// `applied_compute_agentic`: a row of N turns becomes a session of N + 1 requests. Turn k's
/// prompt is turn k − 1's plus its response and tool output (the earlier trace blocks keep
/// their ids, new blocks get fresh ones), its think time the tool call's latency.
fn agentic(lines: impl Iterator<Item = std::io::Result<String>>, opts: TraceOptions, source: &str) -> Result<Workload, SimError> {
    if !opts.closed_loop {
        return Err(SimError::new(
            "trace_format applied_compute_agentic needs a closed loop (replay_concurrency): its sessions have no start times",
        ));
    }
    let tbs = opts.block_tokens;
    let mut w = Workload::new(tbs);
    let mut sessions = Sessions::default();
    let mut next_id: u64 = 0;
    let mut ids: Vec<u64> = Vec::new();
    for (k, line) in lines.enumerate() {
        let n = k + 1;
        let line = line.map_err(|e| SimError::new(format!("{source}:{n}: {e}")))?;
        if line.trim().is_empty() {
            continue;
        }
        let at = |msg: String| SimError::new(format!("{source}:{n}: {msg}"));
        let row: AgentRow = serde_json::from_str(line.trim()).map_err(|e| at(e.to_string()))?;
        for (name, len) in [
            ("assistant_response_length", row.assistant_response_length.len()),
            ("tool_call_output_length", row.tool_call_output_length.len()),
            ("tool_call_latency", row.tool_call_latency.len()),
        ] {
            if len != row.num_turns {
                return Err(at(format!("field {name} has length {len}, which does not match num_turns {}", row.num_turns)));
            }
        }
        if row.input_prompt_length == 0 {
            return Err(at("input_prompt_length must be positive".into()));
        }
        if let Some((j, l)) = row.tool_call_latency.iter().enumerate().find(|(_, l)| !(l.is_finite() && **l >= 0.0)) {
            return Err(at(format!("tool_call_latency[{j}] must be a finite non-negative number, got {l}")));
        }
        let s = sessions.names.len() as u32;
        let mut input = row.input_prompt_length;
        ids.clear();
        for turn in 0..=row.num_turns {
            let output = if turn < row.num_turns { row.assistant_response_length[turn] } else { row.final_assistant_response_length };
            while (ids.len() as u64) * (tbs as u64) < input as u64 {
                next_id += 1;
                ids.push(next_id);
            }
            let delay = if turn == 0 { 0.0 } else { row.tool_call_latency[turn - 1] * 1000.0 };
            sessions.push(s, || format!("applied_compute_agentic_session_{n}"), w.len() as u32, delay);
            w.push(f64::NAN, input, output, &ids);
            if turn < row.num_turns {
                input += row.assistant_response_length[turn] + row.tool_call_output_length[turn];
            }
        }
    }
    if w.is_empty() {
        return Err(SimError::new(format!("{source}: the trace has no requests")));
    }
    w.sessions = Some(sessions);
    Ok(w)
}

#[derive(Deserialize)]
struct DynamoRecord {
    #[serde(default)]
    schema: Option<String>,
    #[serde(default)]
    event_type: Option<String>,
    #[serde(default)]
    event_time_unix_ms: Option<u64>,
    #[serde(default)]
    request: Option<DynamoRequest>,
    #[serde(default)]
    agent_context: Option<AgentContext>,
    #[serde(default)]
    tool: Option<DynamoTool>,
}

#[derive(Deserialize)]
struct AgentContext {
    session_id: String,
    #[serde(default)]
    parent_session_id: Option<String>,
}

#[derive(Deserialize)]
struct DynamoTool {
    tool_call_id: String,
    tool_class: String,
    #[serde(default)]
    claude: Option<Claude>,
    #[serde(default)]
    started_at_unix_ms: Option<u64>,
    #[serde(default)]
    ended_at_unix_ms: Option<u64>,
    #[serde(default)]
    duration_ms: Option<f64>,
}

#[derive(Deserialize)]
struct DynamoRequest {
    request_id: String,
    #[serde(default)]
    model: Option<String>,
    output_tokens: Option<u32>,
    #[serde(default)]
    request_received_ms: Option<u64>,
    #[serde(default)]
    total_time_ms: Option<f64>,
    replay: DynamoReplay,
}

#[derive(Deserialize)]
struct DynamoReplay {
    trace_block_size: u32,
    input_length: u32,
    input_sequence_hashes: Vec<u64>,
    /// An exporter's edges to earlier requests (agentic traces).
    #[serde(default)]
    dependencies: Vec<ExplicitDependency>,
}

const DYNAMO_SCHEMA: &str = "dynamo.request.trace.v1";

/// `dynamo`: every `request_end` record becomes a request at its start time (request received,
/// else end − total time), sorted by start, end and id; times count from the earliest start.
fn dynamo(lines: impl Iterator<Item = std::io::Result<String>>, opts: TraceOptions, source: &str) -> Result<Workload, SimError> {
    let mut recs: Vec<agentic::dynamo::Entry> = Vec::new();
    let mut tools: Vec<agentic::dynamo::Tool> = Vec::new();
    let mut contextual = 0;
    let mut block_size: Option<u32> = None;
    for (k, line) in lines.enumerate() {
        let n = k + 1;
        let line = line.map_err(|e| SimError::new(format!("{source}:{n}: {e}")))?;
        let at = |msg: String| SimError::new(format!("{source}:{n}: {msg}"));
        let value: serde_json::Value = match serde_json::from_str(line.trim()) {
            Ok(v) => v,
            Err(_) if line.trim().is_empty() => continue,
            Err(e) => return Err(at(e.to_string())),
        };
        // A record, or an envelope holding one under `event`.
        let value = match value.get("event") {
            Some(inner) if inner.is_object() => inner.clone(),
            _ => value,
        };
        if !value.is_object() {
            continue;
        }
        let rec: DynamoRecord = serde_json::from_value(value).map_err(|e| at(e.to_string()))?;
        match rec.event_type.as_deref() {
            Some("request_payload") | Some("tool_start") => continue,
            Some("request_end") | Some("tool_end") | Some("tool_error") => {}
            other => {
                return Err(at(format!("event_type {other:?}: a request trace holds request_end records (and tool or payload events)")));
            }
        }
        if rec.schema.as_deref() != Some(DYNAMO_SCHEMA) {
            return Err(at(format!("unsupported Dynamo request trace schema {:?}, expected {DYNAMO_SCHEMA:?}", rec.schema)));
        }
        if rec.event_type.as_deref() != Some("request_end") {
            // A tool event of an agent session: its sub-agent link, if it names one.
            if let (Some(ctx), Some(t)) = (rec.agent_context, rec.tool) {
                tools.push(tool(ctx, t, rec.event_time_unix_ms).map_err(at)?);
            }
            continue;
        }
        let req = rec.request.ok_or_else(|| at("missing request".into()))?;
        if req.request_id.trim().is_empty() {
            return Err(at("request.request_id must not be empty".into()));
        }
        let output = req.output_tokens.ok_or_else(|| at("missing output_tokens".into()))?;
        let r = req.replay;
        if r.trace_block_size == 0 {
            return Err(at("request.replay.trace_block_size must be positive".into()));
        }
        match block_size {
            None => block_size = Some(r.trace_block_size),
            Some(b) if b != r.trace_block_size => return Err(at("mixed replay trace_block_size values are not supported".into())),
            Some(_) => {}
        }
        let event = rec.event_time_unix_ms.map(|t| t as i64);
        let total = match req.total_time_ms {
            Some(t) if !(t.is_finite() && t >= 0.0) => return Err(at("request duration must be finite and nonnegative".into())),
            t => t.map(|t| t.round() as i64),
        };
        let start = match (req.request_received_ms, event) {
            (Some(s), _) => s as i64,
            (None, Some(e)) => e - total.unwrap_or(0),
            _ => return Err(at("a record needs request_received_ms or event_time_unix_ms".into())),
        };
        let end = match (req.request_received_ms, total, event) {
            (Some(s), Some(t), _) => s as i64 + t,
            (_, _, Some(e)) => e,
            _ => start,
        };
        let (session_id, parent_session_id) = match rec.agent_context {
            Some(c) => {
                contextual += 1;
                (c.session_id, c.parent_session_id)
            }
            None => (String::new(), None),
        };
        recs.push(agentic::dynamo::Entry {
            start_ms: start,
            end_ms: end,
            request_id: req.request_id,
            session_id,
            parent_session_id,
            model: req.model,
            input_length: r.input_length,
            output_length: output,
            hashes: r.input_sequence_hashes,
            dependencies: r.dependencies,
        });
    }
    let embedded = block_size.ok_or_else(|| SimError::new(format!("{source}: the trace has no requests")))?;
    if opts.block_tokens != embedded {
        return Err(SimError::new(format!(
            "{source}: trace_block_size {} does not match the trace's own block size {embedded}",
            opts.block_tokens
        )));
    }
    if contextual != 0 && contextual != recs.len() {
        return Err(SimError::new(format!("{source}: a Dynamo request trace cannot mix requests with and without agent_context")));
    }
    recs.sort_by(|a, b| (a.start_ms, a.end_ms, &a.request_id).cmp(&(b.start_ms, b.end_ms, &b.request_id)));
    let mut ids = std::collections::BTreeSet::new();
    for r in &recs {
        if !ids.insert(r.request_id.as_str()) {
            return Err(SimError::new(format!("{source}: request_id {} appears twice", r.request_id)));
        }
    }
    if contextual != 0 {
        if opts.closed_loop {
            return Err(SimError::new(format!(
                "{source}: an agentic Dynamo trace is replayed on its own times and dependencies, not with a concurrency"
            )));
        }
        return agentic::dynamo::lower(recs, tools, embedded, source);
    }
    let t0 = recs.first().map_or(0, |r| r.start_ms);
    let mut w = Workload::new(embedded);
    for r in &recs {
        if r.input_length as u64 > r.hashes.len() as u64 * embedded as u64 {
            return Err(SimError::new(format!(
                "{source}: request {}: input_length {} exceeds its hashes' capacity",
                r.request_id, r.input_length
            )));
        }
        w.push((r.start_ms - t0) as f64, r.input_length, r.output_length, &r.hashes);
    }
    Ok(w)
}

/// A tool event's sub-agent link, checked as the reference checks it.
fn tool(ctx: AgentContext, t: DynamoTool, event_ms: Option<u64>) -> Result<agentic::dynamo::Tool, String> {
    if ctx.session_id.trim().is_empty() {
        return Err("tool session_id must be nonempty".into());
    }
    if t.tool_call_id.trim().is_empty() {
        return Err("tool_call_id must be nonempty".into());
    }
    if t.tool_class.trim().is_empty() {
        return Err("tool_class must be nonempty".into());
    }
    if t.duration_ms.is_some_and(|d| !(d.is_finite() && d >= 0.0)) {
        return Err("tool duration must be finite and nonnegative".into());
    }
    let end = t.ended_at_unix_ms.or(event_ms).unwrap_or(0) as i64;
    let start = t.started_at_unix_ms.map(|s| s as i64).or(t.duration_ms.map(|d| end - d.round() as i64)).unwrap_or(end);
    if end < start {
        return Err("tool end time precedes start time".into());
    }
    Ok(agentic::dynamo::Tool { session_id: ctx.session_id, tool_call_id: t.tool_call_id, tool_class: t.tool_class, claude: t.claude })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str, format: TraceFormat, opts: TraceOptions) -> Result<Workload, SimError> {
        read_text(text, TraceOptions { format, ..opts }, "t")
    }

    #[test]
    fn agentic_rows_become_growing_sessions() {
        let row = r#"{"num_turns":2,"input_prompt_length":16,"assistant_response_length":[4,4],"tool_call_output_length":[8,8],"tool_call_latency":[0.01,0.02],"final_assistant_response_length":4}"#;
        let closed = TraceOptions { closed_loop: true, ..TraceOptions::open(4) };
        let w = read(row, TraceFormat::AppliedComputeAgentic, closed).unwrap();
        let inputs: Vec<u32> = w.rows.iter().map(|r| r.input_length).collect();
        assert_eq!(inputs, vec![16, 28, 40]);
        let s = w.sessions.as_ref().unwrap();
        assert_eq!(s.delay_ms, vec![0.0, 10.0, 20.0]);
        assert_eq!(s.names, vec!["applied_compute_agentic_session_1".to_string()]);
        // Each prompt extends the previous one.
        let p: Vec<Vec<u32>> = (0..3).map(|i| w.request(i, i as u64).prompt.to_vec()).collect();
        assert_eq!(p[1][..16], p[0][..]);
        assert_eq!(p[2][..28], p[1][..]);
        let e = read(row, TraceFormat::AppliedComputeAgentic, TraceOptions::open(4)).unwrap_err();
        assert!(e.0.contains("needs a closed loop"), "{e}");
        let bad = row.replace("[0.01,0.02]", "[0.01]");
        let e = read(&bad, TraceFormat::AppliedComputeAgentic, closed).unwrap_err();
        assert!(e.0.starts_with("t:1: field tool_call_latency has length 1"), "{e}");
    }

    #[test]
    fn dynamo_records_become_requests_at_their_start() {
        let t = concat!(
            r#"{"event_type":"request_payload","request_id":"standard-1"}"#,
            "\n",
            r#"{"schema":"dynamo.request.trace.v1","event_type":"request_end","event_time_unix_ms":1030,"request":{"request_id":"b","output_tokens":2,"request_received_ms":1020,"total_time_ms":10,"replay":{"trace_block_size":4,"input_length":4,"input_sequence_hashes":[402]}}}"#,
            "\n",
            r#"{"event":{"schema":"dynamo.request.trace.v1","event_type":"request_end","event_time_unix_ms":1010,"request":{"request_id":"a","output_tokens":3,"total_time_ms":10,"replay":{"trace_block_size":4,"input_length":3,"input_sequence_hashes":[401]}}}}"#,
        );
        let w = read(t, TraceFormat::Dynamo, TraceOptions::open(4)).unwrap();
        let rows: Vec<(f64, u32, u32)> = w.rows.iter().map(|r| (r.timestamp, r.input_length, r.output_length)).collect();
        assert_eq!(rows, vec![(0.0, 3, 3), (20.0, 4, 2)]);
        let e = read(t, TraceFormat::Dynamo, TraceOptions::open(16)).unwrap_err();
        assert!(e.0.contains("trace_block_size 16 does not match the trace's own block size 4"), "{e}");
    }

    /// The shipped agentic Dynamo fixture: the tool event names the child session's spawner
    /// (`parent-source`, on dispatch) and consumer (`parent-consumer`, joining the child's last
    /// request); each session is a chain; the gaps are the recorded ones.
    #[test]
    fn agentic_dynamo_records_become_a_graph() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/dynosim-unified-cli/components/src/dynamo/replay/tests/e2e/configs/unified_cli/fixtures/traces/dynamo-agentic.jsonl"
        ))
        .unwrap();
        let w = read(&text, TraceFormat::Dynamo, TraceOptions::open(4)).unwrap();
        let g = w.graph.as_deref().unwrap();
        assert_eq!(g.request_ids, ["child-first", "child-last", "parent-consumer", "parent-source"]);
        assert_eq!(g.num_dependencies, [1, 1, 2, 0]);
        assert_eq!(g.plays[0].name, "dynamo-play:parent-source");
        let e = |target, delay_ms| agentic::Edge { target, delay_ms };
        assert_eq!(g.on_dispatch[3], [e(0, 20.0)]);
        assert_eq!(g.on_completion[3], [e(2, 90.0)]);
        assert_eq!(g.on_completion[0], [e(1, 20.0)]);
        assert_eq!(g.on_completion[1], [e(2, 40.0)]);
        let mixed = text.replacen(r#","agent_context":{"session_id":"parent"}"#, "", 1);
        let err = read(&mixed, TraceFormat::Dynamo, TraceOptions::open(4)).unwrap_err();
        assert!(err.0.contains("cannot mix requests with and without agent_context"), "{err}");
    }

    #[test]
    fn format_names() {
        assert_eq!(TraceFormat::parse("mooncake_delta"), Ok(TraceFormat::MooncakeDelta));
        assert!(TraceFormat::parse("weka").unwrap_err().contains("not read by servesim yet"));
        assert_eq!(TraceFormat::parse("agentic-mooncake"), Ok(TraceFormat::AgenticMooncake));
        assert!(TraceFormat::parse("Mooncake").unwrap_err().contains("unknown"));
    }
}
