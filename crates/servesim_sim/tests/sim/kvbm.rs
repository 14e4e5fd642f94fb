//! The kvbm block manager behind the vLLM scheduler (`kv_manager: "kvbm"`), replayed whole
//! with the harness's invariant checks on.

use serde_json::{Value, json};
use std::path::Path;

/// Replays a conformance case with `engine` merged into its engine arguments; returns the
/// per-request rows.
fn replay(case: &str, engine: Value) -> Vec<Value> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/conformance/cases");
    let path = dir.join(format!("{case}.json"));
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let args = doc["replay"].as_object_mut().unwrap().entry("extra_engine_args").or_insert(json!({}));
    let eng = args.as_object_mut().unwrap().entry("engine").or_insert(json!({}));
    eng.as_object_mut().unwrap().extend(engine.as_object().unwrap().clone());
    let report = crate::common::case_doc(&doc, &path).run().to_json();
    report["per_request"].as_array().unwrap().clone()
}

fn completed(rows: &[Value]) -> usize {
    rows.iter().filter(|r| r[1].is_number()).count()
}

#[test]
fn every_eviction_backend_completes_a_pressure_replay() {
    let native = replay("vllm-pressure-lifo", json!({}));
    for backend in ["lineage", "lru", "multi_lru"] {
        let rows = replay("vllm-pressure-lifo", json!({"kv_manager": "kvbm", "eviction_backend": backend}));
        assert_eq!(rows.len(), native.len(), "{backend}");
        assert_eq!(completed(&rows), completed(&native), "{backend}");
        // Every request still produces all its tokens.
        for (a, b) in rows.iter().zip(&native) {
            assert_eq!(a[2], b[2], "{backend}: output tokens");
        }
    }
}

#[test]
fn lineage_and_lru_agree_under_the_vllm_scheduler_and_multi_lru_does_not() {
    // A vLLM request holds its whole prefix and releases leaf first, so an inactive block's
    // parent is never released after it: the least recently released block is always a leaf,
    // and Lineage's choice is LRU's. MultiLru ranks by frequency instead.
    let lineage = replay("vllm-pressure-lifo", json!({"kv_manager": "kvbm", "eviction_backend": "lineage"}));
    let lru = replay("vllm-pressure-lifo", json!({"kv_manager": "kvbm", "eviction_backend": "lru"}));
    let multi = replay("vllm-pressure-lifo", json!({"kv_manager": "kvbm", "eviction_backend": "multi_lru"}));
    assert_eq!(lineage, lru);
    assert_ne!(multi, lru);
    let reused = |rows: &[Value]| rows.iter().map(|r| r[3].as_u64().unwrap()).sum::<u64>();
    assert_ne!(reused(&multi), reused(&lru), "the backends keep different blocks");
}
