//! The JS-facing handle, run as wasm in Node (`cargo test -p servesim_wasm --target
//! wasm32-unknown-unknown`; the runner is set in .cargo/config.toml).
#![cfg(target_arch = "wasm32")]

use js_sys::{Float64Array, Reflect};
use servesim_wasm::{Simulation, default_scenario, inspect_scenario, normalize_scenario, random_seed, smallest_tensor_parallel};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_test::wasm_bindgen_test;

fn get(obj: &JsValue, key: &str) -> JsValue {
    Reflect::get(obj, &JsValue::from_str(key)).unwrap()
}

fn run(json: &str, trace: Option<String>) -> Simulation {
    let mut sim = Simulation::new(json, trace, Some(0.0), None).map_err(JsValue::from).unwrap();
    while !sim.advance(500) {}
    sim
}

#[wasm_bindgen_test]
fn default_scenario_runs_and_reports_dynamo_keys() {
    let d: serde_json::Value = serde_json::from_str(&default_scenario().map_err(JsValue::from).unwrap()).unwrap();
    // Unset in the scenario; the engine's config says what it is.
    assert!(d["engine"]["num_gpu_blocks"].is_null());
    let sim = run("{}", None);
    let config = sim.config().map_err(JsValue::from).unwrap();
    let pool = Reflect::get(&get(&config, "pools"), &JsValue::from_f64(0.0)).unwrap();
    assert_eq!(get(&pool, "num_gpu_blocks").as_f64(), Some(16384.0));
    assert_eq!(sim.progress(), 1.0);
    let summary = sim.summary().map_err(JsValue::from).unwrap();
    assert_eq!(get(&summary, "num_requests").as_f64(), Some(200.0));
    for key in [
        "mean_ttft_ms",
        "p99_ttft_ms",
        "mean_tpot_ms",
        "mean_itl_ms",
        "mean_e2e_latency_ms",
        "duration_ms",
        "prefix_cache_reused_ratio",
        "output_throughput_tok_s",
    ] {
        assert!(get(&summary, key).as_f64().is_some(), "{key}");
    }
    let records = sim.records().map_err(JsValue::from).unwrap();
    let ends: Float64Array = get(&records, "end_ms").dyn_into().unwrap();
    assert_eq!(ends.length(), 200);
    let ts = sim.timeseries().map_err(JsValue::from).unwrap();
    let t: Float64Array = get(&ts, "t_ms").dyn_into().unwrap();
    let out: Float64Array = get(&get(&ts, "cluster"), "output_tok_s").dyn_into().unwrap();
    assert!(t.length() > 10);
    assert_eq!(t.length(), out.length());
}

#[wasm_bindgen_test]
fn errors_are_js_errors_with_the_message() {
    let e = normalize_scenario(r#"{"engine": {"num_gpu_blockz": 1}}"#).err().unwrap();
    let e: js_sys::Error = JsValue::from(e).dyn_into().unwrap();
    let msg: String = e.message().into();
    assert!(msg.starts_with("engine.num_gpu_blockz: unknown field"), "{msg}");
    let e = Simulation::new(r#"{"workload": {"type": "trace", "path": "x.jsonl"}}"#, Some("{}\n".into()), None, None).err().unwrap();
    let e: js_sys::Error = JsValue::from(e).dyn_into().unwrap();
    let msg: String = e.message().into();
    assert!(msg.starts_with("x.jsonl:1:"), "{msg}");
}

#[wasm_bindgen_test]
fn cancel_stops_the_run() {
    let mut sim = Simulation::new(r#"{"workload": {"type": "synthetic", "num_requests": 3000, "rate_rps": 100}}"#, None, None, None)
        .map_err(JsValue::from)
        .unwrap();
    assert!(!sim.advance(100));
    assert!(sim.summary().is_err());
    sim.cancel();
    assert!(sim.done() && sim.cancelled());
    let s = sim.summary().map_err(JsValue::from).unwrap();
    assert!(get(&s, "completed_requests").as_f64().unwrap() < 3000.0);
}

#[wasm_bindgen_test]
fn the_engine_reports_derived_values() {
    let roofline = |gpu: &str| {
        format!(r#"{{"engine": {{"timing_model": {{"type": "roofline", "model": "llama-3.1-70b", "gpu": "{gpu}", "tp": 4}}}}}}"#)
    };
    let v: serde_json::Value = serde_json::from_str(&inspect_scenario(&roofline("h100")).map_err(JsValue::from).unwrap()).unwrap();
    assert_eq!(v["config"]["pools"][0]["num_gpu_blocks"], 7004);
    assert!(v["scenario"]["engine"]["num_gpu_blocks"].is_null(), "derived values stay unset in the scenario");
    let v: serde_json::Value = serde_json::from_str(&inspect_scenario(&roofline("h200")).map_err(JsValue::from).unwrap()).unwrap();
    assert_eq!(v["config"]["pools"][0]["num_gpu_blocks"], 17475);
    let tp = smallest_tensor_parallel(r#"{"type": "roofline", "model": "llama-3.1-70b", "gpu": "h100"}"#).map_err(JsValue::from).unwrap();
    assert_eq!(tp, Some(4));
}

#[wasm_bindgen_test]
fn random_seeds_are_distinct_safe_integers() {
    let seeds: Vec<f64> = (0..8).map(|_| random_seed().map_err(JsValue::from).unwrap()).collect();
    for s in &seeds {
        // A whole number a JS number (and so a share link) carries exactly.
        assert!(s.fract() == 0.0 && *s >= 0.0 && *s <= 9_007_199_254_740_991.0, "{s}");
    }
    // 8 draws from 2^53 values: a repeat would mean the source is not random.
    let mut sorted = seeds.clone();
    sorted.sort_by(f64::total_cmp);
    sorted.dedup();
    assert_eq!(sorted.len(), seeds.len(), "{seeds:?}");
    // And the scenario takes one as its seed.
    let json = format!(r#"{{"seed": {}, "workload": {{"seed": {}}}}}"#, seeds[0], seeds[1]);
    normalize_scenario(&json).map_err(JsValue::from).unwrap();
}

/// Measured kernels in the page: the catalog, the file to fetch, and a run whose pass times
/// equal the native engine's (a case of tests/ais, request by request).
#[wasm_bindgen_test]
fn measured_kernel_data_loads_lists_and_runs() {
    use servesim_wasm::{kernel_catalog, kernel_file_for, load_kernel_data};
    assert!(kernel_catalog().is_err(), "no index loaded yet");
    load_kernel_data("index.json", include_bytes!("../../../data/ais/index.json"));
    load_kernel_data("models.json", include_bytes!("../../../data/ais/models.json"));
    let file = kernel_file_for("h200_sxm", "vllm", None).map_err(JsValue::from).unwrap();
    assert_eq!(file, "h200_sxm/vllm-0.24.0.zip");
    let c: serde_json::Value = serde_json::from_str(&kernel_catalog().map_err(JsValue::from).unwrap()).unwrap();
    assert_eq!(c["systems"]["b200_sxm"]["trtllm"][0], "1.3.0rc20");
    assert!(c["models"].as_array().unwrap().iter().any(|m| m["name"] == "Qwen/Qwen3-32B" && m["layers"] == 64));
    let scenario = r#"{"engine": {"timing_model": {"type": "ais", "model": "Qwen/Qwen3-32B", "system": "h200_sxm"}},
                        "workload": {"num_requests": 20, "rate_rps": 2}}"#;
    let e = Simulation::new(scenario, None, None, None).err().unwrap();
    let msg: String = JsValue::from(e).dyn_into::<js_sys::Error>().unwrap().message().into();
    assert!(msg.contains("h200_sxm/vllm-0.24.0.zip") && msg.contains("loadKernelData"), "{msg}");
    load_kernel_data(&file, include_bytes!("../../../data/ais/h200_sxm/vllm-0.24.0.zip"));
    let listed: serde_json::Value = serde_json::from_str(&kernel_catalog().map_err(JsValue::from).unwrap()).unwrap();
    assert!(listed["sets"].as_array().unwrap().iter().any(|s| s["file"] == file && s["loaded"] == true));
    let config: serde_json::Value = serde_json::from_str(&inspect_scenario(scenario).map_err(JsValue::from).unwrap()).unwrap();
    assert!(config["config"]["pools"][0]["kv_pool"]["kv_tokens"].as_u64().unwrap() > 100_000, "{config}");
    let sim = run(scenario, None);
    let summary = sim.summary().map_err(JsValue::from).unwrap();
    assert_eq!(get(&summary, "completed_requests").as_f64(), Some(20.0));
}
