//! The effective configuration of a scenario: what the engines run with once defaults are
//! filled and derived values computed (a roofline's KV pool and KV bytes per token, the GPU
//! count), and which settings have no effect in the combination given. `servesim run` prints
//! it as `config` next to `summary`; the page shows it beside the form, so what the form
//! says is what the engine uses.

use crate::SimError;
use crate::cluster::{RouterConfig, RouterMode};
use crate::kernels::KernelSets;
use crate::scenario::{Scenario, SimConfig, WorkloadSpec};
use crate::workload::synthetic::{Arrival, SyntheticSpec};
use serde_json::{Value, json};
use servesim_engine::args::{Backend, EvictionBackend, KvManager, KvTransferTimingMode, TimingModel};
use servesim_engine::perf::roofline::{GpuRef, ModelRef, Roofline, RooflineArgs};
use servesim_engine::{EngineArgs, LaunchConfig};

/// `{"total_gpus", "pools": [...], "no_effect": [{"field", "reason"}]}` for a scenario (its
/// errors are the scenario's own, naming the field).
pub fn effective(s: &Scenario) -> Result<Value, SimError> {
    effective_with(s, None)
}

/// [`effective_with`] after loading the measured-kernel models the scenario names through
/// `files` (no workload is built): the page's live figures for what is on screen.
pub fn effective_loaded(s: &Scenario, files: &mut dyn crate::build::Files) -> Result<Value, SimError> {
    let mut cfg = s.config()?;
    let kernels = KernelSets::load(&mut cfg, files)?;
    effective_with(s, Some(&kernels))
}

/// [`effective`] once the run is built: a measured-kernel model's figures (where its timing
/// comes from, its weights, the KV pool its memory model sized) come from its loaded data.
pub fn effective_with(s: &Scenario, kernels: Option<&KernelSets>) -> Result<Value, SimError> {
    let mut cfg = s.config()?;
    if let Some(k) = kernels {
        // The loaded run filled what the memory model derives; show those figures.
        for launch in std::iter::once(&mut cfg.launch).chain(cfg.disagg.iter_mut().flat_map(|d| [&mut d.prefill, &mut d.decode])) {
            if let (Some(m), None) = (k.get(&launch.engine), launch.engine.num_gpu_blocks) {
                launch.engine.kv_bytes_per_token.get_or_insert(m.kv_bytes_per_token());
                if let Some(p) = k.pool(&launch.engine) {
                    launch.engine.num_gpu_blocks = Some((p.kv_tokens / launch.engine.block_size() as u64).min(u32::MAX as u64) as u32);
                }
            }
        }
    }
    let pool = |name: &str, launch: &LaunchConfig, workers: u32| {
        let mut v = pool(name, launch, workers);
        if let Some(m) = kernels.and_then(|k| k.get(&launch.engine)) {
            let version = m.data.identity().2;
            let t = AisTiming {
                r#type: "ais",
                source: m.source(),
                model: &m.model_name,
                architecture: &m.shape.architecture,
                system: &m.data.meta.system.name,
                backend: m.backend_name(),
                backend_version: &version,
                tp: m.tp,
                pp: m.pp,
                gemm_quant_mode: m.dtypes.gemm.name(),
                kvcache_quant_mode: m.dtypes.kv.name(),
                fmha_quant_mode: m.dtypes.fmha.name(),
                weight_gib_per_gpu: m.weight_bytes() / (1u64 << 30) as f64,
                board_power_w: m.board_power_w(),
            };
            v["timing"] = serde_json::to_value(&t).unwrap_or(Value::Null);
            if let Some(p) = kernels.and_then(|k| k.pool(&launch.engine)) {
                v["kv_pool"] = serde_json::to_value(p).unwrap_or(Value::Null);
            }
        }
        v
    };
    let pools: Vec<Value> = match &cfg.disagg {
        None => vec![pool("aggregated", &cfg.launch, cfg.num_workers)],
        Some(d) => vec![pool("prefill", &d.prefill, d.num_prefill_workers), pool("decode", &d.decode, d.num_decode_workers)],
    };
    let total: u64 = pools.iter().map(|p| p["gpus"].as_u64().unwrap_or(0)).sum();
    Ok(json!({"total_gpus": total, "pools": pools, "no_effect": no_effect(s, &cfg)}))
}

/// A measured-kernel pool's timing figures (a struct, not `json!`: the page's engine stays small).
#[derive(serde::Serialize)]
struct AisTiming<'a> {
    r#type: &'static str,
    source: String,
    model: &'a str,
    architecture: &'a str,
    system: &'a str,
    backend: &'static str,
    backend_version: &'a str,
    tp: u32,
    pp: u32,
    gemm_quant_mode: &'static str,
    kvcache_quant_mode: &'static str,
    fmha_quant_mode: &'static str,
    weight_gib_per_gpu: f64,
    board_power_w: Option<f64>,
}

/// The roofline's model and GPU presets with their figures, for a page to look up rather than
/// compute: each model's parameters and KV bytes per token for each KV-cache dtype.
pub fn presets() -> serde_json::Value {
    use servesim_engine::perf::roofline::{GPU_PRESETS, MODEL_PRESETS, gpu_preset, model_preset};
    let kv_dtypes = ["auto", "bfloat16", "fp8", "float32"];
    let weight_dtypes = ["bfloat16", "fp8", "int4"];
    let models: Vec<_> = MODEL_PRESETS
        .iter()
        .map(|&id| {
            let args = |kv: &str| -> RooflineArgs {
                serde_json::from_value(serde_json::json!({"model": id, "gpu": "h100", "kv_cache_dtype": kv})).expect("preset arguments")
            };
            let kv: serde_json::Map<_, _> = kv_dtypes
                .iter()
                .map(|&d| (d.to_string(), Roofline::new(&args(d)).map(|r| r.kv_bytes_per_token()).unwrap_or(0).into()))
                .collect();
            let params = Roofline::new(&args("auto")).map(|r| r.total_params() / 1e9).unwrap_or(f64::NAN);
            serde_json::json!({"id": id, "spec": model_preset(id), "params_billion": params, "kv_bytes_per_token": kv})
        })
        .collect();
    let gpus: Vec<_> = GPU_PRESETS.iter().map(|&id| serde_json::json!({"id": id, "spec": gpu_preset(id)})).collect();
    serde_json::json!({"models": models, "gpus": gpus, "kv_dtypes": kv_dtypes, "weight_dtypes": weight_dtypes})
}

/// The smallest tensor-parallel size at which a roofline timing model (`{"type": "roofline",
/// ...}`, or its arguments alone) leaves room for the KV cache; `None` if none does.
pub fn smallest_tp(timing_model: &Value) -> Result<Option<u32>, SimError> {
    let mut v = timing_model.clone();
    if let Some(o) = v.as_object_mut() {
        o.remove("type");
    }
    let args: RooflineArgs = serde_json::from_value(v).map_err(|e| SimError::new(format!("engine.timing_model: {e}")))?;
    Ok(servesim_engine::perf::roofline::smallest_tp_with_kv_room(&args))
}

/// One pool's figures: its workers and GPUs, and each rank's KV pool.
fn pool(name: &str, launch: &LaunchConfig, workers: u32) -> Value {
    let e = &launch.engine;
    let block_size = e.block_size();
    // A measured-kernel pool left unset is sized when the run loads its data.
    if e.num_gpu_blocks.is_none() && e.timing_model.ais().is_some() {
        let gpus_per_worker = launch.gpus_per_worker();
        return json!({
            "pool": name, "workers": workers, "dp_size": launch.dp_size,
            "tensor_parallel_size": gpus_per_worker / launch.dp_size.max(1), "gpus_per_worker": gpus_per_worker,
            "gpus": gpus_per_worker as u64 * workers as u64, "backend": e.backend, "block_size": block_size,
            "num_gpu_blocks": null, "kv_bytes_per_token": e.kv_bytes_per_token, "timing": timing(&e.timing_model),
        });
    }
    let blocks = e.num_gpu_blocks();
    let tokens = blocks as u64 * block_size as u64;
    let gib = e.kv_bytes_per_token.map(|b| (tokens as f64 * b as f64) / (1u64 << 30) as f64);
    let gpus_per_worker = launch.gpus_per_worker();
    json!({
        "pool": name,
        "workers": workers,
        "dp_size": launch.dp_size,
        "tensor_parallel_size": gpus_per_worker / launch.dp_size.max(1),
        "gpus_per_worker": gpus_per_worker,
        "gpus": gpus_per_worker as u64 * workers as u64,
        "backend": e.backend,
        "block_size": block_size,
        "num_gpu_blocks": blocks,
        "kv_tokens_per_rank": tokens,
        "kv_bytes_per_token": e.kv_bytes_per_token,
        "kv_gib_per_rank": gib,
        "timing": timing(&e.timing_model),
    })
}

fn timing(t: &TimingModel) -> Value {
    match t {
        TimingModel::Polynomial => json!({"type": "polynomial"}),
        TimingModel::Fixed { prefill_ms, decode_ms } => json!({"type": "fixed", "prefill_ms": prefill_ms, "decode_ms": decode_ms}),
        TimingModel::External { provider, .. } if provider != "ais" => json!({"type": "external"}),
        TimingModel::External { .. } | TimingModel::Ais(_) => {
            let a = t.ais().expect("ais arguments");
            json!({"type": "ais", "model": a.model.as_str().unwrap_or("custom"), "system": a.system, "tp": a.tp, "pp": a.pp})
        }
        TimingModel::Roofline(r) => {
            let name = |m: &ModelRef| match m {
                ModelRef::Preset(n) => n.clone(),
                ModelRef::Custom(_) => "custom".into(),
            };
            let gpu = match &r.gpu {
                GpuRef::Preset(n) => n.clone(),
                GpuRef::Custom(_) => "custom".into(),
            };
            // A resolved engine's roofline is valid.
            let (params, weights) = Roofline::new(r).map(|m| (m.total_params(), m.weight_bytes())).unwrap_or((f64::NAN, f64::NAN));
            json!({
                "type": "roofline",
                "model": name(&r.model),
                "gpu": gpu,
                "tp": r.tp,
                "params_billion": params / 1e9,
                "weight_gb": weights / 1e9,
                "weight_gb_per_gpu": weights / 1e9 / r.tp as f64,
            })
        }
    }
}

/// Settings that change nothing in this combination, each with the reason.
fn no_effect(s: &Scenario, cfg: &SimConfig) -> Vec<Value> {
    let mut out = Vec::new();
    let mut note = |field: &str, reason: String| out.push(json!({"field": field, "reason": reason}));
    let e = &s.engine;
    let resolved: &EngineArgs = &cfg.launch.engine;
    let disagg = cfg.disagg.is_some();
    match &e.timing_model {
        TimingModel::Roofline(_) => {}
        t if t.ais().is_some() => {}
        other => {
            let what = match other {
                TimingModel::Polynomial => "Polynomial timing (an H200 fit)",
                TimingModel::Fixed { .. } => "Fixed pass times",
                _ => "A measured profile",
            };
            note("engine.timing_model", format!("{what} ignores the model and the GPU: only the model's KV size per token counts"));
            if s.tensor_parallel_size.is_some_and(|tp| tp > 1) {
                note("tensor_parallel_size", "counts GPUs only: this timing does not model tensor parallelism".into());
            }
        }
    }
    if let Some(bw) = e.kv_transfer_bandwidth
        && bw > 0.0
    {
        if !disagg {
            note(
                "engine.kv_transfer_bandwidth",
                "no effect: KV moves between workers only in disaggregated serving (prefill and decode workers)".into(),
            );
        } else if resolved.kv_bytes_per_token.is_none() {
            note(
                "engine.kv_transfer_bandwidth",
                "no effect: kv_bytes_per_token is not set (choose a model), so a transfer has no size".into(),
            );
        }
    }
    if !disagg && e.kv_transfer_timing_mode != KvTransferTimingMode::FullPrompt {
        note("engine.kv_transfer_timing_mode", "no effect: there are no KV transfers without disaggregated serving".into());
    }
    if disagg && s.cluster.num_workers != 1 {
        note("cluster.num_workers", "unused: the prefill and decode pools are set".into());
    }
    for (field, v) in [("engine.speedup_ratio", e.speedup_ratio), ("engine.decode_speedup_ratio", e.decode_speedup_ratio)] {
        if v == 0.0 {
            note(field, "0 means no speed-up: it counts as 1, as in Dynamo's mocker".into());
        }
    }
    if e.backend == Backend::Sglang {
        note("engine.preemption_mode", "no effect: SGLang retracts the running request with the fewest generated tokens".into());
    } else if e.kv_manager == KvManager::Kvbm && e.eviction_backend == EvictionBackend::Lru {
        note(
            "engine.eviction_backend",
            "same victims as lineage: under the vLLM scheduler requests release their blocks leaf first, so the least recently released block is always a leaf (docs/models.md)".into(),
        );
    }
    if s.cluster.router_mode != RouterMode::KvRouter && s.cluster.router_config != RouterConfig::default() {
        note("cluster.router_config", "no effect: only the KV-aware router reads these".into());
    }
    if let WorkloadSpec::Synthetic(w) = &s.workload {
        let d = SyntheticSpec::default();
        if w.num_prefix_groups == 0 {
            if w.shared_prefix_ratio > 0.0 {
                note("workload.shared_prefix_ratio", "no effect: there are no shared-prefix groups (0 groups)".into());
            }
            if w.block_tokens != d.block_tokens {
                note("workload.block_tokens", "no effect: there are no shared-prefix groups (0 groups)".into());
            }
        } else if w.shared_prefix_ratio == 0.0 {
            note("workload.num_prefix_groups", "no effect: the shared fraction of each prompt is 0".into());
        }
        if w.arrival == Arrival::Burst && w.rate_rps != d.rate_rps {
            note("workload.rate_rps", "no effect: every request arrives at t = 0".into());
        }
        if w.arrival != Arrival::Gamma && w.smoothness != d.smoothness {
            note("workload.smoothness", "no effect: only gamma arrivals have a shape".into());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(json: &str) -> Value {
        effective(&Scenario::from_json_str(json).unwrap()).unwrap()
    }

    fn fields(c: &Value) -> Vec<&str> {
        c["no_effect"].as_array().unwrap().iter().map(|n| n["field"].as_str().unwrap()).collect()
    }

    #[test]
    fn defaults_and_a_roofline_pool() {
        let c = config("{}");
        let p = &c["pools"][0];
        assert_eq!(
            (p["num_gpu_blocks"].as_u64(), p["block_size"].as_u64(), p["kv_tokens_per_rank"].as_u64()),
            (Some(16384), Some(64), Some(1 << 20))
        );
        assert!(p["kv_bytes_per_token"].is_null() && p["kv_gib_per_rank"].is_null());
        assert_eq!((c["total_gpus"].as_u64(), p["gpus_per_worker"].as_u64()), (Some(1), Some(1)));
        assert_eq!(fields(&c), ["engine.timing_model"]);

        let c = config(
            r#"{"dp_size": 2, "cluster": {"num_workers": 3}, "engine": {"timing_model": {"type": "roofline", "model": "llama-3.1-70b", "gpu": "h100", "tp": 4}}}"#,
        );
        let p = &c["pools"][0];
        assert_eq!(p["num_gpu_blocks"], 7004);
        assert_eq!(p["kv_bytes_per_token"], 327_680);
        assert_eq!(p["kv_tokens_per_rank"], 7004 * 64);
        let gib = p["kv_gib_per_rank"].as_f64().unwrap();
        assert!((gib - 7004.0 * 64.0 * 327_680.0 / 2f64.powi(30)).abs() < 1e-9, "{gib}");
        assert_eq!((p["tensor_parallel_size"].as_u64(), p["gpus_per_worker"].as_u64(), p["gpus"].as_u64()), (Some(4), Some(8), Some(24)));
        assert_eq!(c["total_gpus"], 24);
        assert_eq!(p["timing"]["model"], "llama-3.1-70b");
        assert!((p["timing"]["params_billion"].as_f64().unwrap() - 70.6).abs() < 0.1);
        assert!(fields(&c).is_empty(), "{c}");
    }

    #[test]
    fn disaggregated_pools_add_up() {
        let c = config(r#"{"tensor_parallel_size": 2, "cluster": {"num_prefill_workers": 2, "num_decode_workers": 3}}"#);
        assert_eq!(c["pools"][0]["pool"], "prefill");
        assert_eq!(c["pools"][1]["gpus"], 6);
        assert_eq!(c["total_gpus"], 10);
    }

    #[test]
    fn settings_without_effect_are_named() {
        let c = config(r#"{"workload": {"shared_prefix_ratio": 0.6}, "engine": {"kv_transfer_bandwidth": 50, "speedup_ratio": 0}}"#);
        assert_eq!(
            fields(&c),
            ["engine.timing_model", "engine.kv_transfer_bandwidth", "engine.speedup_ratio", "workload.shared_prefix_ratio"]
        );
        let c = config(r#"{"engine": {"kv_transfer_bandwidth": 50}, "cluster": {"num_prefill_workers": 1, "num_decode_workers": 1}}"#);
        assert!(fields(&c).contains(&"engine.kv_transfer_bandwidth"), "no KV bytes per token: {c}");
        let c = config(
            r#"{"engine": {"kv_transfer_bandwidth": 50, "kv_bytes_per_token": 131072}, "cluster": {"num_prefill_workers": 1, "num_decode_workers": 1}}"#,
        );
        assert!(!fields(&c).contains(&"engine.kv_transfer_bandwidth"), "{c}");
        let c = config(r#"{"engine": {"kv_manager": "kvbm", "eviction_backend": "lru"}}"#);
        assert!(fields(&c).contains(&"engine.eviction_backend"));
        let c = config(r#"{"engine": {"kv_manager": "kvbm", "eviction_backend": "multi_lru"}}"#);
        assert!(!fields(&c).contains(&"engine.eviction_backend"));
        let c = config(r#"{"workload": {"num_prefix_groups": 4}}"#);
        assert!(fields(&c).contains(&"workload.num_prefix_groups"));
    }
}
