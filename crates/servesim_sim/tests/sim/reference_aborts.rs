//! Cases on which the reference (Dynamo 1.6.1's replay) aborts the whole run or never returns
//! (tests/reference-aborts, see its README). servesim must finish each quickly, with its
//! invariant checks on, name every request it could not run by trace line with a reason, and
//! complete all the others with every output token.

use serde_json::Value;
use servesim_sim::replay::Case;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/reference-aborts")
}

/// Runs a case with a bound on distinct timestamps and on wall time; returns the report and
/// the trace's requested output lengths.
fn run(name: &str) -> (Value, Vec<u64>) {
    let path = dir().join(format!("{name}.json"));
    let text = std::fs::read_to_string(&path).unwrap();
    let case = Case::from_json_str(&text, name).unwrap();
    let trace_text = std::fs::read_to_string(dir().join(&case.trace)).unwrap();
    let outputs: Vec<u64> =
        trace_text.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()["output_length"].as_u64().unwrap()).collect();
    let mut sim = crate::common::case_file(&path);
    let start = Instant::now();
    let mut steps = 0;
    while !sim.advance(1) {
        steps += 1;
        assert!(steps < 200_000, "{name}: still running after {steps} timestamps (virtual {} ms)", sim.now_ms());
        assert!(start.elapsed() < Duration::from_secs(10), "{name}: still running after 10 s");
    }
    (sim.finish().to_json(), outputs)
}

/// The trace lines servesim reports as not completed, with their reasons.
fn not_completed(out: &Value) -> Vec<(u64, String, String)> {
    out.get("not_completed")
        .and_then(Value::as_array)
        .map(|v| {
            v.iter()
                .map(|r| {
                    (
                        r["trace_line"].as_u64().unwrap(),
                        r["status"].as_str().unwrap().to_string(),
                        r["reason"].as_str().unwrap().to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Checks that exactly `stuck` (trace line, reason) are reported unschedulable, with exactly
/// those reasons, and every other request completes with all its tokens: every request ends
/// exactly once, and none is rejected.
fn expect(name: &str, stuck: &[(u64, &str)]) {
    let (out, outputs) = run(name);
    let nc = not_completed(&out);
    let lines: Vec<u64> = nc.iter().map(|r| r.0).collect();
    assert_eq!(lines, stuck.iter().map(|s| s.0).collect::<Vec<_>>(), "{name}: not completed {nc:?}");
    for ((line, status, reason), (_, want)) in nc.iter().zip(stuck) {
        assert_eq!(status, "unschedulable", "{name}: trace line {line}");
        assert_eq!(reason, want, "{name}: trace line {line}");
    }
    let s = &out["summary"];
    let ends = ["completed_requests", "rejected_requests", "unschedulable_requests"].map(|k| s[k].as_u64().unwrap());
    assert_eq!(ends, [(outputs.len() - stuck.len()) as u64, 0, stuck.len() as u64], "{name}: {s}");
    let rows = out["per_request"].as_array().unwrap();
    assert_eq!(rows.len(), outputs.len());
    for (i, (row, want)) in rows.iter().zip(&outputs).enumerate() {
        if !lines.contains(&(i as u64 + 1)) {
            assert_eq!(row[2].as_u64(), Some(*want), "{name}: trace line {} generates all its tokens: {row}", i + 1);
        }
    }
}

#[test]
fn vllm_request_that_outgrows_the_pool() {
    expect("vllm-outgrows-pool", &[(1, "grew to 161 tokens (11 KV blocks) and no longer fits the pool of 10 blocks")]);
}

#[test]
fn vllm_prompt_over_the_budget_with_chunking_off() {
    expect("vllm-prompt-over-budget-nochunk", &[(1, "prompt of 101 tokens exceeds max_num_batched_tokens 100 with chunked prefill off")]);
}

#[test]
fn sglang_prompt_larger_than_the_pool() {
    expect("sglang-prompt-over-pool", &[(1, "needs 100 tokens of KV plus 2 reserved for output; the pool has 64")]);
}

#[test]
fn sglang_prompt_and_output_outgrow_the_pool() {
    expect("sglang-outgrows-pool", &[(1, "needs 50 tokens of KV plus 30 reserved for output; the pool has 64")]);
}

#[test]
fn sglang_chunk_over_max_prefill_tokens() {
    expect("sglang-chunk-over-max-prefill", &[(1, "a prefill chunk of 64 tokens exceeds max_prefill_tokens 32")]);
}

/// Line 3's prompt (159 tokens, 37 to generate) can never fit the 128-token pool. With
/// chunked prefill (64) the reference admits its first chunk, which then holds half the pool
/// while line 1 decodes, and never returns; servesim refuses line 3 on arrival, and line 1
/// (38 + 32 tokens, which fits alone) completes.
#[test]
fn sglang_chunked_prompt_over_the_pool_does_not_take_others_down() {
    expect("sglang-hang-chunked-prompt-over-pool", &[(3, "needs 159 tokens of KV plus 37 reserved for output; the pool has 128")]);
}

/// Every request here fits the 288-token pool alone (at most 156 + 25 tokens), so none is
/// unschedulable. Line 7 ends up decoding alone while line 8's partial prefill holds the
/// pages it needs to grow (the reference never returns); servesim retracts that partial
/// prefill, and every request completes.
#[test]
fn sglang_decode_pressure_completes_every_request() {
    expect("sglang-hang-decode-pressure", &[]);
}
