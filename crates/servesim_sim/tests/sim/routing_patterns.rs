//! Over the stretch where the reference's KV router is deterministic (up to relabeling of
//! workers), servesim's routing must be the same (tests/routing-patterns/README.md).

use crate::common::{case_doc, repo};
use serde_json::{Value, json};
use std::collections::HashMap;

/// Each request's (worker, DP rank) as a canonical label: workers numbered in order of first
/// use, as the oracle's `route-pattern.py` does.
fn canonical(rows: &[Value]) -> Vec<u64> {
    let mut labels: HashMap<(u64, u64), u64> = HashMap::new();
    rows.iter()
        .map(|r| {
            let key = (r[0].as_u64().unwrap(), r[1].as_u64().unwrap());
            let next = labels.len() as u64;
            *labels.entry(key).or_insert(next)
        })
        .collect()
}

fn check(path: &std::path::Path) {
    let spec: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let name = spec["name"].as_str().unwrap();
    let case_path = path.parent().unwrap().join(spec["case"].as_str().unwrap());
    let mut case: Value = serde_json::from_str(&std::fs::read_to_string(&case_path).unwrap()).unwrap();
    for (k, v) in spec["replay"].as_object().unwrap() {
        case["replay"][k] = v.clone();
    }
    case["per_request_columns"] = json!(["worker", "dp_rank"]);
    let n = spec["deterministic_lines"].as_u64().unwrap() as usize;
    let reference: Vec<u64> = spec["pattern"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
    assert_eq!(reference.len(), n, "{name}: the pattern covers the deterministic stretch");
    // Inside the stretch no tie decides anything, so the tie-break seed must not matter.
    for seed in [1, 42, 2024] {
        case["replay"]["seed"] = json!(seed);
        let got = case_doc(&case, &case_path).run().to_json();
        let pattern = canonical(got["per_request"].as_array().unwrap());
        assert_eq!(pattern[..n], reference[..], "{name}, seed {seed}: routing pattern over the first {n} trace lines");
    }
}

#[test]
fn kv_routing_follows_the_reference_where_it_is_deterministic() {
    let mut n = 0;
    for entry in std::fs::read_dir(repo("tests/routing-patterns")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            check(&path);
            n += 1;
        }
    }
    assert!(n >= 2);
}
