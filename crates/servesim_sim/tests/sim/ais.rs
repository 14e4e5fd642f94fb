//! Measured-kernel timing: the committed data files, single passes against the reference
//! estimator's stored figures (bit for bit), and scenarios that name the model.

use crate::common::repo;
use serde_json::{Value, json};
use servesim_engine::EngineArgs;
use servesim_engine::perf::ais::data::KernelData;
use servesim_sim::kernels::{catalog, model_for};
use servesim_sim::{BuildOptions, DirFiles, Input, Scenario, build};

fn files() -> DirFiles {
    DirFiles::beside(&repo("tests/ais/cases/x.json"))
}

fn index() -> Value {
    serde_json::from_str(&std::fs::read_to_string(repo("data/ais/index.json")).unwrap()).unwrap()
}

/// Every data set the index lists is there, whole, names where it came from, and times a model.
#[test]
fn committed_data_sets_are_complete_and_name_their_source() {
    let index = index();
    assert_eq!(index["package"], "aiconfigurator-core");
    let sets = index["sets"].as_array().unwrap();
    let gpus = ["h100_sxm", "h200_sxm", "b200_sxm", "b300_sxm", "gb200", "gb300", "l40s", "rtx_pro_6000_server"];
    for gpu in gpus {
        for fw in ["vllm", "sglang", "trtllm"] {
            assert!(sets.iter().any(|s| s["system"] == gpu && s["backend"] == fw), "{gpu} × {fw} is missing");
        }
    }
    let mut total = 0;
    for s in sets {
        let file = s["file"].as_str().unwrap();
        let bytes = std::fs::read(repo(&format!("data/ais/{file}"))).unwrap();
        assert_eq!(bytes.len() as u64, s["bytes"].as_u64().unwrap(), "{file}: size");
        total += bytes.len();
        let d = KernelData::from_bytes(&bytes).unwrap();
        let p = &d.meta.provenance;
        assert_eq!(p["package"], "aiconfigurator-core", "{file}");
        assert_eq!(p["package_version"], index["package_version"], "{file}");
        assert_eq!(
            (p["system"].clone(), p["backend"].clone(), p["backend_version"].clone()),
            (s["system"].clone(), s["backend"].clone(), s["version"].clone())
        );
        assert!(
            p["tables"].as_array().unwrap().iter().any(|t| t["table"] == "gemm_perf" && !t["sources"].as_array().unwrap().is_empty()),
            "{file}"
        );
        assert!(d.gemm_quants().contains(&"bfloat16"), "{file}");
        let engine = EngineArgs::from_json(&json!({"backend": s["backend"], "timing_model": {"type": "ais", "model": "meta-llama/Meta-Llama-3.1-8B", "system": s["system"]}})).unwrap();
        let m = model_for(&engine, &mut files()).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(m.try_prefill(4, 1000, 100).unwrap() > 0.0 && m.try_decode(32, 2000).unwrap() > 0.0, "{file}");
    }
    println!("{} data sets, {:.1} MB", sets.len(), total as f64 / 1e6);
    // The bundled dense models all read.
    let models: Value = serde_json::from_str(&std::fs::read_to_string(repo("data/ais/models.json")).unwrap()).unwrap();
    let c = catalog(&index, Some(&models));
    let listed = c["models"].as_array().unwrap();
    assert!(listed.len() >= 10 && listed.iter().all(|m| m.get("error").is_none()), "{listed:?}");
    assert_eq!(c["systems"]["h200_sxm"]["vllm"][0], "0.24.0");
}

/// Single passes, bit for bit, against the reference estimator's figures stored in
/// tests/ais/estimates (scripts/ais/make-estimates.py made them with the oracle).
#[test]
fn single_passes_equal_the_reference_estimator_bit_for_bit() {
    let mut n = 0;
    for entry in std::fs::read_dir(repo("tests/ais/estimates")).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let mut lines = text.lines();
        let head: Value = serde_json::from_str(lines.next().unwrap()).unwrap();
        let engine = EngineArgs::from_json(&head["engine"]).unwrap();
        let m = model_for(&engine, &mut files()).unwrap();
        for line in lines {
            let v: Value = serde_json::from_str(line).unwrap();
            // Parsed by the standard library (exact), not serde_json's fast float reader.
            let raw = line.rsplit_once("\"ms\": ").unwrap().1.trim_end_matches('}');
            let want: f64 = raw.parse().unwrap();
            let q = &v["query"];
            let got = if let Some(p) = q.get("prefill") {
                let (b, new, pre) = (p[0].as_u64().unwrap(), p[1].as_u64().unwrap(), p[2].as_u64().unwrap());
                m.prefill_ms(b, pre + new, pre)
            } else {
                let d = &q["decode"];
                // decode_ms takes the context before the step; the query counts the token made.
                let (b, ctx) = (d[0].as_u64().unwrap(), d[1].as_u64().unwrap());
                m.decode_ms(b, b * (ctx - 1))
            };
            assert_eq!(got.to_bits(), want.to_bits(), "{}: {q}: servesim {got}, reference {want}", path.display());
            n += 1;
        }
    }
    assert!(n >= 500, "{n} passes");
}

fn run(json: &str) -> servesim_sim::RunReport {
    let s = Scenario::from_json_str(json).unwrap();
    build(&Input::Scenario(s), &mut files(), &BuildOptions::default()).unwrap().with_checks(true).run()
}

/// `{"type": "ais"}` and the reference's external spelling time the same, and an unset pool
/// comes from the memory model.
#[test]
fn both_spellings_time_alike_and_the_pool_is_sized() {
    let workload = r#""workload": {"num_requests": 60, "rate_rps": 5, "input_tokens": {"mean": 800}, "output_tokens": {"mean": 60}}"#;
    let native = run(&format!(
        r#"{{"engine": {{"timing_model": {{"type": "ais", "model": "Qwen/Qwen3-8B", "system": "h200_sxm"}}, "num_gpu_blocks": 5000}}, {workload}}}"#
    ));
    let external = run(&format!(
        r#"{{"engine": {{"timing_model": {{"type": "external", "provider": "ais", "config": {{"model": "Qwen/Qwen3-8B", "system": "h200_sxm", "backend": "vllm", "worker_type": "aggregated", "tp": 1}}}}, "num_gpu_blocks": 5000}}, {workload}}}"#
    ));
    assert_eq!(native.to_json()["per_request"], external.to_json()["per_request"]);
    let json = format!(
        r#"{{"engine": {{"timing_model": {{"type": "ais", "model": "Qwen/Qwen3-8B", "system": "h200_sxm"}}}}, "gpu_hour_usd": 3.0, {workload}}}"#
    );
    let s = Scenario::from_json_str(&json).unwrap();
    let sim = build(&Input::Scenario(s.clone()), &mut files(), &BuildOptions::default()).unwrap();
    let config = servesim_sim::report::config::effective_with(&s, Some(sim.kernels())).unwrap();
    let pool = &config["pools"][0];
    // 141 GiB × 0.9 less weights, activations and buffers, in 64-token blocks of 144 KiB per token.
    let kv = &pool["kv_pool"];
    let tokens = kv["kv_tokens"].as_u64().unwrap();
    assert_eq!(pool["num_gpu_blocks"].as_u64().unwrap(), tokens / 64);
    assert_eq!(kv["kv_bytes_per_token"], 147456);
    let want = kv["gpu_memory_bytes"].as_f64().unwrap() * 0.9
        - (kv["weights_bytes"].as_f64().unwrap()
            + kv["activations_bytes"].as_f64().unwrap()
            + kv["other_bytes"].as_f64().unwrap()
            + kv["nccl_bytes"].as_f64().unwrap());
    assert_eq!(tokens, (want / 147456.0).floor() as u64);
    assert_eq!(pool["timing"]["source"], "measured kernels: h200_sxm · vllm 0.24.0");
    let summary = sim.run().summary();
    let cost = summary["cost_per_million_output_tokens_usd"].as_f64().unwrap();
    let want = summary["gpu_hours"].as_f64().unwrap() * 3.0 / (summary["total_output_tokens"].as_f64().unwrap() / 1e6);
    assert!((cost - want).abs() < 1e-9 * want);
}

#[test]
fn bad_measured_kernel_settings_are_errors_naming_the_field() {
    let err = |tm: Value| {
        let s = Scenario::from_json_str(&json!({"engine": {"timing_model": tm}, "workload": {"num_requests": 2}}).to_string());
        match s {
            Err(e) => e.to_string(),
            Ok(s) => build(&Input::Scenario(s), &mut files(), &BuildOptions::default()).err().map(|e| e.to_string()).unwrap_or_default(),
        }
    };
    let e = err(json!({"type": "ais", "model": "Qwen/Qwen3-8B", "system": "h200_sxm", "tp": 3}));
    assert!(e.contains("tp"), "{e}");
    let e = err(json!({"type": "ais", "model": "Qwen/Qwen3-8B", "system": "a100_sxm"}));
    assert!(e.contains("system") && e.contains("h200_sxm"), "{e}");
    let e = err(json!({"type": "ais", "model": "mistralai/Mixtral-8x7B-v0.1", "system": "h200_sxm"}));
    assert!(e.contains("model") && e.contains("not a bundled model"), "{e}");
    let e = err(
        json!({"type": "external", "provider": "ais", "config": {"model": "Qwen/Qwen3-8B", "system": "h200_sxm", "backend": "vllm", "worker_type": "aggregated", "moe_ep_size": 8}}),
    );
    assert!(e.contains("moe_ep_size"), "{e}");
    let e = err(json!({"type": "ais", "model": "Qwen/Qwen3-8B", "system": "h200_sxm", "gemm_quant_mode": "fp3"}));
    assert!(e.contains("gemm_quant_mode"), "{e}");
    let e = err(json!({"type": "ais", "model": "meta-llama/Meta-Llama-3.1-405B", "system": "l40s"}));
    assert!(e.contains("num_gpu_blocks") && e.contains("no room"), "{e}");
}
