//! The DynoSim-feature cases (tests/conformance/dynosim, figures from Dynamo 1.6.1's replay):
//! every key of each case's `expected` summary within 0.1 %, and every per-request column the
//! case names (`per_request_columns`) within 0.01 % or 0.01 ms for times, exactly otherwise;
//! a row of nulls (a request the reference did not report) must be nulls. The rule of the
//! shared `compare_ext.py`.

use crate::common::{case_file, repo};
use serde_json::Value;
use std::path::Path;

/// Cases servesim reproduces; each must match.
const MUST_MATCH: &[&str] = &["concurrency-4", "goodput-e2e", "goodput-ttft-itl", "kv-event-lag-2w", "max-sim-time", "sessions-open-loop"];

fn close(reference: &Value, got: &Value) -> bool {
    match (reference.as_f64(), got.as_f64()) {
        (None, None) => reference == got,
        (Some(r), Some(g)) => (r - g).abs() <= f64::max(0.01, 1e-4 * r.abs()),
        _ => false,
    }
}

fn check(path: &Path) {
    let name = path.file_stem().unwrap().to_string_lossy().to_string();
    let case: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let got = case_file(path).run().to_json();
    for (k, r) in case["expected"].as_object().unwrap() {
        let g = &got["summary"][k];
        let (r, g) = (r.as_f64().unwrap(), g.as_f64().unwrap_or_else(|| panic!("{name}: summary has no {k}")));
        let err = if r.abs() > 1e-9 { (g - r).abs() / r.abs() } else { g.abs() };
        assert!(err <= 1e-3, "{name}: summary {k}: reference {r}, servesim {g}");
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

#[test]
fn dynosim_cases_match_the_reference_request_by_request() {
    for name in MUST_MATCH {
        check(&repo("tests/conformance/dynosim").join(format!("{name}.json")));
    }
}
