//! `agentic_mooncake` traces (alias `agentic-mooncake`).
//!
//! - **v2**: a header line `{"schema": "dynamo.agentic_mooncake", "version": 2, "block_size",
//!   "hash_id_scope": "local", "source": {"format", "digest"}}`, then one request per line:
//!   `request_id`, `play_id`, `session_id`, `model`, `input_length` (alias `input_tokens`),
//!   `output_length` (alias `output_tokens`; 0 is allowed: the request ends with its prefill),
//!   `hash_ids` (exactly ⌈input / block_size⌉), `not_before_ms`, optional
//!   `source_play_ordinal`, and `dependencies`: `[{request_id, trigger: dispatch|completion,
//!   delay_ms, relation: sequence|spawn|join|replay_barrier}]`. The header's block size is the
//!   trace's.
//!
//! Headerless (older) agentic rows are refused, as Dynamo 1.6.1's replay refuses them.

use super::{Dependency, Node, check_dependency, workload};
use crate::SimError;
use crate::workload::Workload;
use serde::Deserialize;
use serde::de::IgnoredAny;
use std::collections::HashSet;

pub const SCHEMA: &str = "dynamo.agentic_mooncake";

#[derive(Deserialize)]
struct Header {
    schema: String,
    version: u32,
    block_size: u32,
    hash_id_scope: Scope,
    source: Source,
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum Scope {
    Local,
}

#[derive(Deserialize)]
struct Source {
    format: String,
    digest: String,
}

#[derive(Deserialize)]
struct Row {
    request_id: String,
    play_id: String,
    #[serde(default)]
    source_play_ordinal: Option<usize>,
    session_id: String,
    model: String,
    #[serde(default, alias = "input_tokens")]
    input_length: Option<u32>,
    #[serde(default, alias = "output_tokens")]
    output_length: Option<u32>,
    #[serde(default)]
    output_token_ids: Option<IgnoredAny>,
    #[serde(default)]
    hash_ids: Option<Vec<u64>>,
    not_before_ms: f64,
    #[serde(default)]
    recorded_api_time_ms: Option<f64>,
    // Accepted and ignored, as in Mooncake traces (servesim's queues are first come, first
    // served).
    #[serde(default)]
    #[allow(dead_code)]
    priority: Option<IgnoredAny>,
    #[serde(default)]
    #[allow(dead_code)]
    strict_priority: Option<IgnoredAny>,
    #[serde(default)]
    #[allow(dead_code)]
    policy_class: Option<IgnoredAny>,
    #[serde(default)]
    dependencies: Vec<Dependency>,
}

/// Reads an agentic Mooncake v2 trace (its header carries its block size).
pub fn read(lines: impl Iterator<Item = std::io::Result<String>>, source: &str) -> Result<Workload, SimError> {
    let mut lines = lines.enumerate().map(|(k, l)| (k + 1, l));
    let mut nodes = Vec::new();
    let mut ids = HashSet::new();
    let mut header: Option<u32> = None;
    for (n, line) in &mut lines {
        let line = line.map_err(|e| SimError::new(format!("{source}:{n}: {e}")))?;
        let text = line.trim();
        if text.is_empty() {
            continue;
        }
        let at = |msg: String| SimError::new(format!("{source}:{n}: {msg}"));
        let Some(block_size) = header else {
            let h: Header = serde_json::from_str(text)
                .map_err(|e| at(format!("the agentic Mooncake v2 header (`{{\"schema\": \"{SCHEMA}\", \"version\": 2, ...}}`): {e}")))?;
            header = Some(check_header(&h).map_err(at)?);
            continue;
        };
        let row: Row = serde_json::from_str(text).map_err(|e| at(format!("an agentic Mooncake v2 request: {e}")))?;
        nodes.push(v2_node(row, block_size).map_err(at)?);
        let id = &nodes.last().expect("just pushed").request_id;
        if !ids.insert(id.clone()) {
            return Err(at(format!("duplicates request_id {id}")));
        }
    }
    if nodes.is_empty() {
        return Err(SimError::new(format!("{source}: the agentic trace has no requests")));
    }
    workload(nodes, header.unwrap_or(1), source)
}

fn check_header(h: &Header) -> Result<u32, String> {
    if h.schema != SCHEMA {
        return Err(format!("unsupported agentic Mooncake schema {:?}; expected {SCHEMA:?}", h.schema));
    }
    if h.version != 2 {
        return Err(format!("unsupported agentic Mooncake version {}; expected 2", h.version));
    }
    if h.block_size == 0 {
        return Err("agentic Mooncake block_size must be greater than 0".into());
    }
    let Scope::Local = h.hash_id_scope;
    if h.source.format.trim().is_empty() || h.source.digest.trim().is_empty() {
        return Err("agentic Mooncake source provenance requires nonempty format and digest".into());
    }
    Ok(h.block_size)
}

fn v2_node(r: Row, block_size: u32) -> Result<Node, String> {
    for (name, v) in [("request_id", &r.request_id), ("play_id", &r.play_id), ("session_id", &r.session_id), ("model", &r.model)] {
        if v.trim().is_empty() {
            return Err(format!("empty {name}"));
        }
    }
    let hash_ids = r.hash_ids.ok_or("missing hash_ids")?;
    if hash_ids.is_empty() {
        return Err("empty hash_ids".into());
    }
    let input = r.input_length.ok_or("missing input_length")?;
    if input == 0 {
        return Err("zero input_length".into());
    }
    let want = input.div_ceil(block_size) as usize;
    if hash_ids.len() != want {
        return Err(format!("input_length {input} at block_size {block_size} requires exactly {want} hash_ids, got {}", hash_ids.len()));
    }
    let output = r.output_length.ok_or("missing output_length")?;
    if r.output_token_ids.is_some() {
        return Err("output_token_ids: servesim makes its own output tokens (give output_length)".into());
    }
    if !(r.not_before_ms.is_finite() && r.not_before_ms >= 0.0) {
        return Err(format!("invalid not_before_ms {}", r.not_before_ms));
    }
    if r.recorded_api_time_ms.is_some_and(|d| !(d.is_finite() && d >= 0.0)) {
        return Err(format!("invalid recorded_api_time_ms {:?}", r.recorded_api_time_ms));
    }
    for d in &r.dependencies {
        check_dependency(d)?;
    }
    Ok(Node {
        request_id: r.request_id,
        play_id: r.play_id,
        source_play_ordinal: r.source_play_ordinal,
        session_id: r.session_id,
        model: r.model,
        input_length: input,
        output_length: output,
        hash_ids,
        not_before_ms: r.not_before_ms,
        dependencies: r.dependencies,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_str(text: &str, _block: u32) -> Result<Workload, SimError> {
        read(text.lines().map(|l| Ok(l.to_string())), "t")
    }

    const FIXTURE: &str = r#"{"schema":"dynamo.agentic_mooncake","version":2,"block_size":4,"hash_id_scope":"local","source":{"format":"e2e-fixture","digest":"agentic-v1"}}
{"request_id":"agent-root","play_id":"agent-play","session_id":"root","model":"tiny-model","input_length":4,"output_length":2,"hash_ids":[301],"not_before_ms":0,"dependencies":[]}
{"request_id":"agent-child","play_id":"agent-play","session_id":"child","model":"tiny-model","input_length":4,"output_length":2,"hash_ids":[302],"not_before_ms":0,"dependencies":[{"request_id":"agent-root","trigger":"dispatch","delay_ms":5,"relation":"spawn"}]}
{"request_id":"agent-join","play_id":"agent-play","session_id":"root","model":"tiny-model","input_length":4,"output_length":2,"hash_ids":[303],"not_before_ms":0,"dependencies":[{"request_id":"agent-root","trigger":"completion","delay_ms":1,"relation":"sequence"},{"request_id":"agent-child","trigger":"completion","delay_ms":1,"relation":"join"}]}"#;

    #[test]
    fn v2_rows_become_a_graph_in_request_id_order() {
        let w = read_str(FIXTURE, 512).unwrap();
        assert_eq!(w.block_tokens, 4, "the header's block size");
        let g = w.graph.as_ref().unwrap();
        assert_eq!(g.request_ids, ["agent-child", "agent-join", "agent-root"]);
        assert_eq!(g.num_dependencies, [1, 2, 0]);
        assert_eq!(g.plays[0].roots, [2]);
        assert_eq!(g.on_dispatch[2], [super::super::Edge { target: 0, delay_ms: 5.0 }]);
        assert_eq!(g.on_completion[2].len(), 1);
        assert_eq!(g.on_completion[0], [super::super::Edge { target: 1, delay_ms: 1.0 }]);
    }

    #[test]
    fn bad_rows_name_their_line() {
        let wrong = FIXTURE.replace(r#""hash_ids":[302]"#, r#""hash_ids":[302,9]"#);
        let e = read_str(&wrong, 4).unwrap_err();
        assert!(e.0.starts_with("t:3: input_length 4 at block_size 4 requires exactly 1 hash_ids, got 2"), "{e}");
        let e = read_str(&FIXTURE.replace(r#""version":2"#, r#""version":3"#), 4).unwrap_err();
        assert!(e.0.starts_with("t:1: unsupported agentic Mooncake version 3"), "{e}");
        let e = read_str(&FIXTURE.replace(r#""relation":"spawn""#, r#""relation":"join""#), 4).unwrap_err();
        assert!(e.0.starts_with("t:3: has invalid Join dependency with Dispatch trigger"), "{e}");
    }

    #[test]
    fn headerless_rows_are_refused() {
        let t = r#"{"request_id":"r1","timestamp":10,"input_length":8,"output_length":2,"hash_ids":[1,2]}"#;
        let e = read_str(t, 4).unwrap_err();
        assert!(e.0.starts_with("t:1: the agentic Mooncake v2 header"), "{e}");
    }
}
