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
    "max-sim-time",
    "sessions-open-loop",
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

/// Objects and lists member by member, numbers within 0.01 (`compare_ext.py`'s `same_struct`).
fn same_struct(reference: &Value, got: &Value) -> bool {
    match (reference, got) {
        (Value::Object(r), Value::Object(g)) => r.len() == g.len() && r.iter().all(|(k, v)| g.get(k).is_some_and(|w| same_struct(v, w))),
        (Value::Array(r), Value::Array(g)) => r.len() == g.len() && r.iter().zip(g).all(|(v, w)| same_struct(v, w)),
        (Value::Number(r), Value::Number(g)) => (r.as_f64().unwrap() - g.as_f64().unwrap()).abs() <= 0.01,
        _ => reference == got,
    }
}

fn check(path: &Path) {
    let name = path.file_stem().unwrap().to_string_lossy().to_string();
    let case: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let got = case_file(path).run().to_json();
    for (k, r) in case["expected"].as_object().unwrap() {
        let g = &got["summary"][k];
        if !r.is_number() {
            assert!(same_struct(r, g), "{name}: summary {k}: reference {r}, servesim {g}");
            continue;
        }
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
