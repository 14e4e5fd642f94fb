//! Every deterministic conformance case must match the reference request by request, by the
//! rule of the shared `compare.py` (see tests/conformance/README.md).

use crate::common::repo;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Cases servesim reproduces today; each must match exactly.
const MUST_MATCH: &[&str] = &[
    "vllm-light",
    "vllm-prefix",
    "vllm-pressure-lifo",
    "vllm-pressure-fifo",
    "vllm-nochunk-nocache",
    "rr4-burst",
    "disagg-2p2d",
    "sglang-prefix",
    "sglang-fixed-timing",
    "sglang-pressure",
    "vllm-npz-profile",
    "trtllm-light",
    "trtllm-pressure",
    "trtllm-prefix-rr2",
];

const SUMMARY_KEYS: &[&str] = &[
    "completed_requests",
    "total_output_tokens",
    "duration_ms",
    "mean_ttft_ms",
    "p99_ttft_ms",
    "mean_tpot_ms",
    "mean_itl_ms",
    "mean_e2e_latency_ms",
    "p99_e2e_latency_ms",
    "prefix_cache_reused_ratio",
    "output_throughput_tok_s",
];

fn cases_dir() -> PathBuf {
    repo("tests/conformance/cases")
}

fn run_case(path: &Path) -> Value {
    crate::common::case_file(path).run().to_json()
}

fn close(reference: &Value, got: &Value) -> bool {
    match (reference.as_f64(), got.as_f64()) {
        (None, None) => reference.is_null() && got.is_null(),
        (Some(r), Some(g)) => (r - g).abs() <= f64::max(0.01, 1e-4 * g.abs()),
        _ => false,
    }
}

fn check(name: &str) {
    check_file(&cases_dir().join(format!("{name}.json")));
}

fn check_file(path: &Path) {
    let path = path.to_path_buf();
    let name = path.file_stem().unwrap().to_string_lossy().to_string();
    let case: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let got = run_case(&path);
    for k in SUMMARY_KEYS {
        let (r, g) = (case["expected"][k].as_f64().unwrap(), got["summary"][k].as_f64().unwrap());
        let err = if r.abs() > 1e-9 { (g - r).abs() / r.abs() } else { g.abs() };
        assert!(err <= 1e-3, "{name}: summary {k}: reference {r}, servesim {g}");
    }
    let rows = case["per_request"].as_array().unwrap();
    let got_rows = got["per_request"].as_array().unwrap();
    assert_eq!(rows.len(), got_rows.len(), "{name}: row count");
    // The five default columns, or those the case names: times within tolerance, the rest equal.
    let columns: Vec<String> = match case["per_request_columns"].as_array() {
        Some(names) => names.iter().map(|n| n.as_str().unwrap().to_string()).collect(),
        None => ["first_token_ms", "end_ms", "output_tokens", "reused_input_tokens", "readmissions"].map(String::from).to_vec(),
    };
    for (i, (r, g)) in rows.iter().zip(got_rows).enumerate() {
        let ok = columns.iter().enumerate().all(|(c, col)| if col.ends_with("_ms") { close(&r[c], &g[c]) } else { r[c] == g[c] });
        assert!(ok, "{name}: request {i} (trace line {}): reference {r}, servesim {g}", i + 1);
    }
}

/// Our own scenarios, run through the reference (tests/variants/README.md).
#[test]
fn variant_cases_match_the_reference_request_by_request() {
    let dir = repo("tests/variants");
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            check_file(&path);
            n += 1;
        }
    }
    assert!(n >= 3);
}

/// The measured-kernel (AIS) cases: the public ones and servesim's own, every one run through
/// the reference (tests/ais/README.md). Each must match request by request.
#[test]
fn ais_cases_match_the_reference_request_by_request() {
    let mut n = 0;
    let mut names = Vec::new();
    for entry in std::fs::read_dir(repo("tests/ais/cases")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            let case: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            if case.get("per_request").is_none() {
                continue; // written by scripts/ais/make-cases.py, not yet run through the reference
            }
            check_file(&path);
            names.push(path.file_stem().unwrap().to_string_lossy().to_string());
            n += 1;
        }
    }
    assert!(n >= 3, "AIS cases checked: {names:?}");
}

#[test]
fn deterministic_cases_match_the_reference_request_by_request() {
    for name in MUST_MATCH {
        check(name);
    }
}
