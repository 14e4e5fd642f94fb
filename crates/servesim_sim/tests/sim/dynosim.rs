//! The DynoSim-feature cases (tests/conformance/dynosim, figures from Dynamo 1.6.1's replay):
//! every key of each case's `expected` summary within 0.1 %, and every per-request column the
//! case names (`per_request_columns`) within 0.01 % or 0.01 ms for times, exactly otherwise;
//! a row of nulls (a request the reference did not report) must be nulls; a structured
//! summary key (`g3_offload`, `g2_domains`) matches member by member, numbers within 0.01. The
//! rule of the shared `compare_ext.py`.

use crate::common::{case_file, repo};
use serde_json::Value;
use std::path::Path;

/// Cases servesim reproduces; each must match.
const MUST_MATCH: &[&str] = &[
    "concurrency-4",
    "goodput-e2e",
    "goodput-ttft-itl",
    "kv-event-lag-2w",
    "max-sim-time",
    "sessions-open-loop",
    "planner-agg-load",
    "planner-agg-throughput",
    "offload-g2-basic",
    "offload-g2-slow-link",
    "offload-g3-local-2w",
];

fn close(reference: &Value, got: &Value) -> bool {
    match (reference.as_f64(), got.as_f64()) {
        (None, None) => reference == got,
        (Some(r), Some(g)) => (r - g).abs() <= f64::max(0.01, 1e-4 * r.abs()),
        _ => false,
    }
}

/// Equal structures, numbers within 0.01 (the planner record's rule).
fn same(r: &Value, g: &Value) -> bool {
    match (r, g) {
        (Value::Object(a), Value::Object(b)) => a.len() == b.len() && a.iter().all(|(k, v)| b.get(k).is_some_and(|w| same(v, w))),
        (Value::Array(a), Value::Array(b)) => a.len() == b.len() && a.iter().zip(b).all(|(v, w)| same(v, w)),
        (Value::Number(a), Value::Number(b)) => (a.as_f64().unwrap() - b.as_f64().unwrap()).abs() <= 0.01,
        _ => r == g,
    }
}

fn check(path: &Path) {
    let name = path.file_stem().unwrap().to_string_lossy().to_string();
    let case: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let got = case_file(path).run().to_json();
    for (k, r) in case["expected"].as_object().unwrap() {
        let g = &got["summary"][k];
        if !r.is_number() {
            assert!(same(r, g), "{name}: summary {k}: reference {r}, servesim {g}");
            continue;
        }
        let (r, g) = (r.as_f64().unwrap(), g.as_f64().unwrap_or_else(|| panic!("{name}: summary has no {k}")));
        let err = if r.abs() > 1e-9 { (g - r).abs() / r.abs() } else { g.abs() };
        assert!(err <= 1e-3, "{name}: summary {k}: reference {r}, servesim {g}");
    }
    if let Some(planner) = case.get("expected_planner") {
        for k in ["total_ticks", "scaling_events", "lifecycle", "ticks"] {
            assert!(same(&planner[k], &got["planner"][k]), "{name}: planner {k}: reference {}, servesim {}", planner[k], got["planner"][k]);
        }
    }
    let rows = case["per_request"].as_array().unwrap();
    let got_rows = got["per_request"].as_array().unwrap();
    assert_eq!(rows.len(), got_rows.len(), "{name}: row count");
    for (i, (r, g)) in rows.iter().zip(got_rows).enumerate() {
        let (r, g) = (r.as_array().unwrap(), g.as_array().unwrap());
        assert_eq!(r.len(), g.len(), "{name}: request {i}: columns");
        let ok = r.iter().zip(g).all(|(a, b)| close(a, b));
        assert!(ok, "{name}: request {i} (trace line {}): reference {r:?}, servesim {g:?}", i + 1);
    }
}

/// Our own native-offload scenarios, run through the reference with `replay_ext.py --write`
/// (tests/variants/README.md), judged the same way.
#[test]
fn offload_variants_match_the_reference_request_by_request() {
    let mut n = 0;
    for entry in std::fs::read_dir(repo("tests/variants/offload")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            check(&path);
            n += 1;
        }
    }
    assert!(n >= 9);
}

#[test]
fn dynosim_cases_match_the_reference_request_by_request() {
    for name in MUST_MATCH {
        check(&repo("tests/conformance/dynosim").join(format!("{name}.json")));
    }
}

/// Our own harness-feature scenarios, run through the reference's replay_ext.py (found by the
/// harness and planner fuzzers; tests/variants/README.md): every one must match.
#[test]
fn dynosim_variants_match_the_reference() {
    let dir = repo("tests/variants/dynosim");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            check(&path);
            n += 1;
        }
    }
    assert!(n >= 1, "no cases in {}", dir.display());
}

/// Agentic traces (request graphs: agentic_mooncake v2 and Dynamo traces with agent_context),
/// written with the reference's figures by tests/variants/agentic/make_cases.py: every request
/// of every case must match, and the summary's trajectory figures.
#[test]
fn agentic_variants_match_the_reference_request_by_request() {
    let dir = repo("tests/variants/agentic");
    let (mut cases, mut requests) = (0, 0);
    let mut paths: Vec<_> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == "json")).collect();
    paths.sort();
    for path in paths {
        check(&path);
        let case: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        requests += case["per_request"].as_array().unwrap().len();
        cases += 1;
    }
    println!("agentic variants: {cases} cases, {requests} requests, all equal to the reference");
    assert!(cases >= 20, "{cases} cases in {}", dir.display());
}

/// A scripted scaling run: the pool follows the script (a worker starting, becoming ready
/// after `startup_time`, a drain that waits for the worker's requests), the lifecycle log says
/// so, and worker-seconds count every provisioned worker.
#[test]
fn scripted_scaling_follows_the_script() {
    use servesim_sim::{BuildOptions, Input, MemFiles, Scenario, build};
    let s = Scenario::from_json_str(
        r#"{"engine": {"block_size": 16, "num_gpu_blocks": 2000}, "startup_time": 2,
            "cluster": {"num_workers": 1},
            "workload": {"type": "synthetic", "num_requests": 400, "rate_rps": 40, "arrival": "constant",
                         "input_tokens": {"mean": 600, "stddev": 0}, "output_tokens": {"mean": 100, "stddev": 0}},
            "scaling": [{"at_s": 1, "pool": "agg", "count": 3}, {"at_s": 6, "pool": "agg", "count": 1}]}"#,
    )
    .unwrap();
    let report = build(&Input::Scenario(s), &mut MemFiles::new(), &BuildOptions::default()).unwrap().with_checks(true).run();
    let out = report.to_json();
    let p = &out["planner"];
    let ops: Vec<(f64, String, Value)> = p["lifecycle"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| (o["at_ms"].as_f64().unwrap(), o["cause"].as_str().unwrap().to_string(), o["transitions"].clone()))
        .collect();
    assert_eq!(ops[0], (1000.0, "manual_scale".to_string(), serde_json::json!([[1, "worker_starting"], [2, "worker_starting"]])));
    assert_eq!(ops[1], (3000.0, "worker_ready_event".to_string(), serde_json::json!([[1, "worker_ready"], [2, "worker_ready"]])));
    assert_eq!(ops[2].0, 6000.0);
    assert_eq!(ops[2].2, serde_json::json!([[2, "worker_draining"], [1, "worker_draining"]]));
    // Busy workers go when their last request ends, after the drain began.
    let settled: Vec<&(f64, String, Value)> = ops.iter().filter(|o| o.1 == "drain_settlement").collect();
    assert!(!settled.is_empty() && settled.iter().all(|o| o.0 > 6000.0), "{ops:?}");
    let s = &out["summary"];
    assert_eq!(s["completed_requests"], 400);
    // Worker-seconds exceed one worker's for the run and stay below three workers'.
    let ws = s["decode_worker_seconds"].as_f64().unwrap();
    let last = s["duration_ms"].as_f64().unwrap() / 1000.0;
    assert!(ws > last + 2.0 * 3.0 && ws < 3.0 * last, "{ws} over {last} s");
}
