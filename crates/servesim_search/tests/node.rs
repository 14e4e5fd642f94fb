//! The search module's JS-facing handles, run as wasm in Node (`wasm-pack test --node
//! crates/servesim_search`; the runner is set in .cargo/config.toml).
#![cfg(target_arch = "wasm32")]

use wasm_bindgen::JsValue;
use wasm_bindgen_test::wasm_bindgen_test;

/// DynoSim files in the page: a predict file as a scenario, a recommend file searched with
/// candidates run as `CandidateRun`s, and the answer, through the same code as the CLI.
#[wasm_bindgen_test]
fn dynosim_files_map_and_a_recommendation_runs() {
    use servesim_search::predict::{CandidateRun, Recommendation, dynosim_to_scenario, scenario_to_dynosim};
    let predict = "traffic:\n  source: {type: synthetic, input_tokens: 64, output_tokens: 8}\n  load: {type: concurrency, concurrency: 2}\n  stop: {requests: 20}\nengine:\n  model: m\n  hardware: h200_sxm\n  workers:\n    aggregated:\n      kv_cache: {capacity: {type: fixed, blocks: 512}}\n      timing: {type: fixed, prefill_ms: 2, decode_ms: 1}\n";
    let m: serde_json::Value = serde_json::from_str(&dynosim_to_scenario(predict, None, None).map_err(JsValue::from).unwrap()).unwrap();
    assert_eq!(m["scenario"]["workload"]["num_requests"], 20);
    assert_eq!(m["gpus"], 1);
    let back = scenario_to_dynosim(&m["scenario"].to_string(), "m", "h200_sxm").map_err(JsValue::from).unwrap();
    assert!(back.contains("blocks: 512"), "{back}");
    let err = dynosim_to_scenario(&predict.replace("concurrency: 2}", "concurrency: 2, x: 1}"), None, None)
        .err()
        .map(|e| JsValue::from(e).as_string().unwrap_or_default());
    let _ = err;
    let recommend = format!("{predict}optimization: {{target: throughput}}\noptimizer: {{algorithm: random, max_trials: 4, seed: 1}}\n")
        .replace("concurrency: 2}", "concurrency: {choices: [1, 2, 4, 8]}}");
    let mut rec = Recommendation::new(&recommend, None, None).map_err(JsValue::from).unwrap();
    while !rec.is_done() {
        let batch: serde_json::Value = serde_json::from_str(&rec.next_batch(2)).unwrap();
        for c in batch.as_array().unwrap() {
            if c.get("infeasible").is_some() {
                continue;
            }
            let mut run = CandidateRun::new(
                &c["scenario"].to_string(),
                Some(c["objective"].to_string()),
                c["gpus"].as_u64().unwrap() as u32,
                None,
                None,
            )
            .map_err(JsValue::from)
            .unwrap();
            while !run.advance(256) {}
            rec.tell(c["id"].as_u64().unwrap() as usize, &run.outcome().map_err(JsValue::from).unwrap()).map_err(JsValue::from).unwrap();
        }
    }
    let ranking: serde_json::Value = serde_json::from_str(&rec.ranking()).unwrap();
    assert_eq!(ranking.as_array().unwrap().len(), 4);
    assert_eq!(ranking[0]["set"]["traffic.load.concurrency"], 8, "more users, more tokens/s");
    assert!(rec.ledger_csv().lines().count() == 5);
}
