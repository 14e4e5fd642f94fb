//! A concrete DynoSim configuration (a `predict` file) as a servesim scenario. Each section is
//! read field by field with the reference's defaults and checks (`aisimulate`'s public
//! configuration models and the Dynamo stack's router and planner adapters, release 1.6.1);
//! what servesim simulates maps onto the scenario's own fields, what it cannot honour is
//! refused by name. The scenario is then validated as any scenario is.

use super::fields::{Obj, error_at};
use super::yaml::Node;
use crate::SimError;
use crate::build::Files;
use crate::report::Slo;
use crate::scenario::Scenario;
use serde_json::{Map, Value, json};
use servesim_engine::EngineArgs;
use servesim_engine::perf::roofline::{GpuRef, ModelRef, ModelSpec, Roofline, RooflineArgs, model_preset};

/// A predict file as servesim runs it.
#[derive(Clone, Debug)]
pub struct Mapped {
    /// The scenario, validated.
    pub scenario: Scenario,
    /// The same as JSON (what `servesim run` reads).
    pub scenario_json: Value,
    /// `evaluation.slo`: a run that misses it is infeasible.
    pub objective: Option<Slo>,
    /// GPUs of the deployment as it starts: replicas × tensor × pipeline × attention_data,
    /// summed over the worker roles.
    pub gpus: u32,
    /// What the mapping derived that the file did not say (the KV pool from the memory model,
    /// KV bytes per token, the closed loop a KV fraction gives), to print beside the report.
    pub derived: Map<String, Value>,
}

/// The sections a predict file has.
pub const SECTIONS: &[&str] = &["traffic", "engine", "router", "planner", "evaluation"];

/// Maps a concrete predict document; `src` names it in errors; `files` reads what it names
/// (a model directory's `config.json`; traces are read when the scenario is built).
pub fn map(doc: &Node, src: &str, files: &mut dyn Files) -> Result<Mapped, SimError> {
    let Unvalidated { scenario_json, objective, gpus, derived } = scenario_json(doc, src, files)?;
    let scenario = Scenario::from_json_str(&scenario_json.to_string())
        .map_err(|e| SimError::new(format!("{src}: the scenario this file maps to is not valid: {e}")))?;
    Ok(Mapped { scenario, scenario_json, objective, gpus, derived })
}

/// A mapping before the scenario's own validation (its timing model may be one this build
/// does not have yet).
pub struct Unvalidated {
    pub scenario_json: Value,
    pub objective: Option<Slo>,
    pub gpus: u32,
    pub derived: Map<String, Value>,
}

/// The scenario a concrete predict document maps to, as JSON, before the scenario's own
/// validation; with the objective, the GPU count and what was derived.
pub fn scenario_json(doc: &Node, src: &str, files: &mut dyn Files) -> Result<Unvalidated, SimError> {
    let mut top = Obj::new(src, "", Some(doc))?;
    for section in ["optimization", "optimizer"] {
        if top.has(section) {
            return Err(top.fail(section, "belongs in a recommend file (servesim recommend), not in predict"));
        }
        top.allow(&[section]);
    }
    let mut derived = Map::new();
    let engine = engine(&mut top.obj("engine")?, files, &mut derived)?;
    let traffic = traffic(top.get("traffic"), src, &engine, &mut derived, files)?;
    let router = router(&mut top.obj("router")?)?;
    let planner = planner(&mut top.obj("planner")?, &engine)?;
    let (slo, objective) = evaluation(&mut top.obj("evaluation")?)?;
    top.finish()?;
    if let Some(format) = &traffic.trace_format
        && matches!(format.as_str(), "mooncake-delta")
        && engine.disaggregated
    {
        return Err(error_at(src, 0, "traffic.source.format", "mooncake-delta requires aggregated engine mode"));
    }

    let mut s = json!({});
    let agg = &engine.roles[0];
    if engine.disaggregated {
        let (p, d) = (&engine.roles[0], &engine.roles[1]);
        s["engine"] = p.engine.clone();
        s["cluster"] = json!({
            "num_prefill_workers": p.replicas, "num_decode_workers": d.replicas,
            "prefill_engine": p.engine, "decode_engine": d.engine,
            "prefill_dp_size": p.rank_dp, "decode_dp_size": d.rank_dp,
            "prefill_tensor_parallel_size": p.tp * p.pp, "decode_tensor_parallel_size": d.tp * d.pp,
            "prefill_startup_time": p.startup, "decode_startup_time": d.startup,
        });
    } else {
        s["engine"] = agg.engine.clone();
        s["dp_size"] = agg.rank_dp.into();
        s["tensor_parallel_size"] = (agg.tp * agg.pp).into();
        s["startup_time"] = agg.startup.into();
        s["cluster"] = json!({"num_workers": agg.replicas});
    }
    s["cluster"]["router_mode"] = router.mode.into();
    if let Some(cfg) = router.config {
        s["cluster"]["router_config"] = cfg;
    }
    if router.measured_load {
        // As the reference's router adapter: the prompt-side pool's model (the prefill
        // workers' when disaggregated).
        s["cluster"]["router_config"]["router_prefill_load_model"] = "ais".into();
        s["cluster"]["ais_perf_config"] = engine.roles[0].ais_perf_config.clone();
    }
    s["workload"] = traffic.workload;
    if let Some(t) = traffic.max_sim_time_ms {
        s["max_sim_time_ms"] = t.into();
    }
    if let Some(p) = planner {
        s["planner"] = p;
    }
    if slo.is_set() {
        s["slo"] = serde_json::to_value(slo).map_err(|e| SimError::new(e.to_string()))?;
    }
    let gpus = engine.roles.iter().map(|r| r.replicas * r.tp * r.pp * r.dp).sum();
    Ok(Unvalidated { scenario_json: s, objective, gpus, derived })
}

/// One worker role (aggregated, prefill or decode) as engine arguments and a pool.
struct Role {
    name: &'static str,
    replicas: u32,
    tp: u32,
    pp: u32,
    /// Attention data-parallel ranks (GPUs: replicas × tp × pp × dp).
    dp: u32,
    /// The engine's `dp_size`: separate schedulers for a dense model's ranks; 1 for a mixture
    /// of experts, whose ranks one engine aggregates (its timing prices ceil(batch / dp)).
    rank_dp: u32,
    /// The role is timed by the roofline (a model the measured kernels do not time yet).
    roofline: bool,
    startup: f64,
    engine: Value,
    block_size: u32,
    num_gpu_blocks: Option<u64>,
    /// The role's measured-kernel model (the KV router's prefill-load estimate reads it).
    ais_perf_config: Value,
    /// Timed by the measured kernels (`timing` absent or of type `default`).
    measured: bool,
}

struct Engine {
    disaggregated: bool,
    /// `[aggregated]` or `[prefill, decode]`.
    roles: Vec<Role>,
    model: Model,
    backend: &'static str,
}

/// `engine.model`: a directory with a `config.json` (its fields), or a name.
struct Model {
    name: String,
    config: Option<Value>,
}

impl Model {
    /// The model's shape for servesim's memory model: from its `config.json`, else from the
    /// roofline preset its name names.
    fn spec(&self) -> Option<ModelSpec> {
        if let Some(c) = &self.config {
            return spec_of_config(c);
        }
        self.preset().and_then(model_preset)
    }

    /// The roofline preset the model's name names (`meta-llama/Llama-3.1-70B-Instruct` →
    /// `llama-3.1-70b`).
    fn preset(&self) -> Option<&'static str> {
        let lower = self.name.to_ascii_lowercase().replace("meta-llama-", "llama-");
        servesim_engine::perf::roofline::MODEL_PRESETS.iter().copied().find(|p| lower.contains(p))
    }
}

/// The fields of a Hugging Face `config.json` the memory model reads (dense, MoE, MLA).
fn spec_of_config(c: &Value) -> Option<ModelSpec> {
    ModelSpec::from_hf_config(c).ok()
}

/// servesim's GPU preset for an AIConfigurator system name (`h200_sxm` → `h200`).
fn gpu_of(hardware: &str) -> Option<&'static str> {
    let h = hardware.to_ascii_lowercase();
    let base = h.split(['_', '-']).next().unwrap_or("");
    ["a100", "l40s", "h100", "h200", "b200"].into_iter().find(|g| *g == base)
}

fn engine(e: &mut Obj, files: &mut dyn Files, derived: &mut Map<String, Value>) -> Result<Engine, SimError> {
    let mode = e.choice("mode", &["aggregated", "disaggregated"])?.unwrap_or("aggregated");
    let model_name = e
        .str("model")?
        .filter(|m| !m.is_empty())
        .ok_or_else(|| e.fail("model", "is required (a model name or a directory with config.json)"))?;
    let hardware = e.str("hardware")?.filter(|h| !h.is_empty()).ok_or_else(|| e.fail("hardware", "is required (e.g. h200_sxm)"))?;
    if hardware == "auto" {
        return Err(e.refuse("hardware", "`auto` (a search over hardware inventories) is not supported; name one system"));
    }
    let backend: &'static str = match e.choice("backend", &["vllm", "sglang", "trtllm"])?.unwrap_or("vllm") {
        "sglang" => "sglang",
        "trtllm" => "trtllm",
        _ => "vllm",
    };
    let backend_version = e.str("backend_version")?;
    let context_length = match e.get("context_length") {
        None => None,
        Some(n) => match (&n.value, n.to_json().as_u64()) {
            (super::yaml::Value::Str(s), _) if s == "max" => None,
            (_, Some(c)) if c > 0 => Some(c),
            _ => return Err(e.fail("context_length", format!("must be 'max' or a positive integer, got {}", n.describe()))),
        },
    };
    let chunked = e.bool("enable_chunked_prefill")?;
    let config = files.read(&format!("{model_name}/config.json")).ok().and_then(|b| serde_json::from_slice::<Value>(&b).ok());
    let model = Model { name: model_name.to_string(), config };
    let max_model_len =
        context_length.or_else(|| model.config.as_ref().and_then(|c| c.get("max_position_embeddings")).and_then(Value::as_u64));

    let mut workers = e.obj("workers")?;
    let mut transfer = e.obj("kv_transfer")?;
    let has_transfer = e.has("kv_transfer");
    let names: &[&'static str] = if mode == "aggregated" { &["aggregated"] } else { &["prefill", "decode"] };
    for other in ["aggregated", "prefill", "decode"] {
        if !names.contains(&other) && workers.has(other) {
            return Err(workers.fail(other, format!("{mode} mode has no {other} workers")));
        }
        if !names.contains(&other) {
            workers.allow(&[other]);
        }
    }
    if mode == "aggregated" && has_transfer {
        return Err(e.fail("kv_transfer", "aggregated mode has no KV transfer (it is for disaggregated serving)"));
    }
    if mode == "disaggregated" && backend == "trtllm" {
        return Err(e.fail("backend", "TensorRT-LLM disaggregated mode is unsupported (as in the reference)"));
    }
    let mut roles = Vec::new();
    for &name in names {
        if !workers.has(name) {
            return Err(workers.fail(name, format!("{mode} mode requires workers.{name}")));
        }
        let mut w = workers.obj(name)?;
        roles.push(role(&mut w, name, backend, hardware, backend_version, &model, max_model_len, chunked)?);
        w.finish()?;
    }
    workers.finish()?;
    // The memory model: a pool the file leaves at `capacity.type: default`. Under the
    // measured timing, AIConfigurator's (as the reference sizes it from the same estimator
    // identity); else servesim's own from the model's shape and the GPU.
    for r in &mut roles {
        if r.num_gpu_blocks.is_none() && r.roofline {
            // The roofline timing sizes its pool itself (weights per attention-DP rank, experts
            // over all GPUs, MLA's latent on every tensor-parallel GPU).
            let mut fields = r.engine["timing_model"].clone();
            if let Some(o) = fields.as_object_mut() {
                o.remove("type");
            }
            let args: RooflineArgs =
                serde_json::from_value(fields).map_err(|e| SimError::new(format!("engine.workers.{}.timing: {e}", r.name)))?;
            let roofline = Roofline::new(&args).map_err(|e| SimError::new(format!("engine.workers.{}.timing: {e}", r.name)))?;
            let blocks = roofline.num_gpu_blocks(r.block_size);
            if blocks == 0 {
                return Err(error_at(
                    e.src(),
                    0,
                    &format!("engine.workers.{}.parallelism", r.name),
                    format!("the model's weights leave no room for a KV cache on {} × {hardware}", roofline.gpus()),
                ));
            }
            r.num_gpu_blocks = Some(blocks as u64);
            r.engine["num_gpu_blocks"] = blocks.into();
            derived.insert(format!("{}.num_gpu_blocks", r.name), blocks.into());
        }
        if r.roofline {
            derived.insert(
                format!("{}.timing", r.name),
                "roofline: the measured-kernel model does not time this MoE/MLA architecture yet (docs/accuracy.md)".into(),
            );
        }
        if r.num_gpu_blocks.is_none() && r.measured {
            let fraction = r.engine["__memory_fraction"].as_f64().unwrap_or(0.9);
            let path = format!("engine.workers.{}.kv_cache.capacity", r.name);
            let mut bare = r.engine.clone();
            if let Some(o) = bare.as_object_mut() {
                o.retain(|k, _| !k.starts_with("__"));
            }
            let args =
                EngineArgs::from_json(&bare).map_err(|err| error_at(e.src(), 0, &format!("engine.workers.{}.timing", r.name), err.0))?;
            let ais = crate::kernels::model_for(&args, files)
                .map_err(|err| error_at(e.src(), 0, &format!("engine.workers.{}.timing", r.name), err.0))?;
            let max_tokens = r.engine["max_num_batched_tokens"].as_u64().unwrap_or(8192);
            let pool = ais.kv_pool(max_tokens, fraction).map_err(|why| error_at(e.src(), 0, &path, why))?;
            let blocks = pool.kv_tokens / r.block_size as u64;
            if blocks == 0 {
                return Err(error_at(
                    e.src(),
                    0,
                    &path,
                    format!("the model's weights and buffers leave no room for a KV cache on {} × {hardware}", r.tp * r.pp),
                ));
            }
            r.num_gpu_blocks = Some(blocks);
            r.engine["num_gpu_blocks"] = blocks.into();
            derived.insert(format!("{}.num_gpu_blocks", r.name), blocks.into());
            derived.insert(format!("{}.kv_pool", r.name), serde_json::to_value(&pool).unwrap_or_default());
        }
        if r.num_gpu_blocks.is_none() {
            let fraction = r.engine["__memory_fraction"].as_f64().unwrap_or(0.9);
            let kv_dtype = r.engine["__kv_dtype"].as_str().unwrap_or("auto").to_string();
            let path = format!("engine.workers.{}.kv_cache.capacity", r.name);
            let roofline = memory_model(&model, hardware, r.tp * r.pp, fraction, &kv_dtype).map_err(|why| {
                error_at(
                    e.src(),
                    0,
                    &path,
                    format!(
                        "type `default` sizes the KV pool from the model and the GPU, and {why}; set `capacity: {{type: fixed, blocks: N}}`"
                    ),
                )
            })?;
            let blocks = roofline.num_gpu_blocks(r.block_size);
            if blocks == 0 {
                return Err(error_at(
                    e.src(),
                    0,
                    &path,
                    format!("the model's weights leave no room for a KV cache on {} × {hardware}", r.tp * r.pp),
                ));
            }
            r.num_gpu_blocks = Some(blocks as u64);
            r.engine["num_gpu_blocks"] = blocks.into();
            derived.insert(format!("{}.num_gpu_blocks", r.name), blocks.into());
        }
    }
    for r in &mut roles {
        if let Some(o) = r.engine.as_object_mut() {
            o.remove("__memory_fraction");
            o.remove("__kv_dtype");
        }
    }
    if mode == "disaggregated" {
        let bytes = match transfer.get("bytes_per_token") {
            None => None,
            Some(n) => match (n.to_json().as_str().map(str::to_string), n.to_json().as_u64()) {
                (Some(s), _) if s == "auto" => None,
                (_, Some(b)) if b > 0 => Some(b),
                _ => return Err(transfer.fail("bytes_per_token", format!("must be 'auto' or a positive integer, got {}", n.describe()))),
            },
        };
        let bandwidth = transfer.positive("bandwidth_gb_per_second")?;
        let timing_mode = transfer.choice("timing_mode", &["full_prompt", "destination_missing"])?.unwrap_or("destination_missing");
        transfer.finish()?;
        let bytes = match (bytes, bandwidth) {
            (Some(b), _) => Some(b),
            // No bandwidth, no delay: the bytes do not matter.
            (None, None) => None,
            (None, Some(_)) => {
                let p = &roles[0];
                let kv = memory_model(&model, hardware, p.tp * p.pp, 0.9, "auto").map(|r| r.kv_bytes_per_token()).map_err(|why| {
                    transfer.fail(
                        "bytes_per_token",
                        format!("`auto` derives the KV footprint from the model, and {why}; give the bytes per token"),
                    )
                })?;
                derived.insert("kv_transfer.bytes_per_token".into(), kv.into());
                Some(kv)
            }
        };
        for r in &mut roles {
            let o = r.engine.as_object_mut().expect("an engine is an object");
            if let Some(b) = bytes {
                o.insert("kv_bytes_per_token".into(), b.into());
            }
            if let Some(bw) = bandwidth {
                o.insert("kv_transfer_bandwidth".into(), bw.into());
            }
            o.insert("kv_transfer_timing_mode".into(), timing_mode.into());
        }
        if roles[0].block_size != roles[1].block_size {
            return Err(error_at(e.src(), 0, "engine.workers.decode.kv_cache.block_size", "must equal the prefill workers' block_size"));
        }
    }
    e.finish()?;
    Ok(Engine { disaggregated: mode == "disaggregated", roles, model, backend })
}

/// servesim's memory model over `gpus` GPUs (weights, then KV within `fraction` of the
/// memory), or why it cannot size this model.
fn memory_model(model: &Model, hardware: &str, gpus: u32, fraction: f64, kv_dtype: &str) -> Result<Roofline, String> {
    let spec = model.spec().ok_or_else(|| {
        format!("servesim knows no shape for `{}` (give a directory with its config.json, or a model it has a preset for)", model.name)
    })?;
    let gpu = gpu_of(hardware)
        .ok_or_else(|| format!("servesim has no memory figure for hardware `{hardware}` (it knows a100, l40s, h100, h200, b200)"))?;
    let args = RooflineArgs {
        model: ModelRef::Custom(spec),
        gpu: GpuRef::Preset(gpu.into()),
        tp: gpus.max(1),
        weight_dtype: None,
        kv_cache_dtype: kv_dtype.into(),
        compute_efficiency: 0.6,
        bandwidth_efficiency: 0.8,
        overhead_ms: 0.0,
        gpu_memory_utilization: fraction,
        attention_dp: 1,
    };
    Roofline::new(&args)
}

/// The measured timing's precision fields under `engine.workers.<role>.timing` and the names
/// AIConfigurator 0.12 gives their modes (`common.GEMMQuantMode`, …); whether the measured
/// timing has a mode's kernels is the timing model's to say.
const QUANT_MODES: &[(&str, &[&str])] = &[
    (
        "gemm_quant_mode",
        &["bfloat16", "int8_wo", "int4_wo", "fp8", "fp8_static", "sq", "fp8_block", "fp8_ootb", "nvfp4", "nvfp4_wo", "w4a16_nvfp4"],
    ),
    (
        "moe_quant_mode",
        &[
            "bfloat16",
            "fp8",
            "int4_wo",
            "fp8_block",
            "w4afp8",
            "nvfp4",
            "nvfp4_wo",
            "w4a16_mxfp4",
            "w4a8_mxfp4_mxfp8",
            "w4a8_mxfp4_mxfp8_trtllm",
            "w4a16_mxfp4_cutlass",
            "w4a16_nvfp4",
        ],
    ),
    ("kvcache_quant_mode", &["bfloat16", "int8", "fp8"]),
    ("fmha_quant_mode", &["bfloat16", "float16", "fp8", "fp8_block"]),
    ("comm_quant_mode", &["half", "int8", "fp8"]),
];

#[allow(clippy::too_many_arguments)]
fn role(
    w: &mut Obj,
    name: &'static str,
    backend: &str,
    hardware: &str,
    backend_version: Option<&str>,
    model: &Model,
    max_model_len: Option<u64>,
    chunked: Option<bool>,
) -> Result<Role, SimError> {
    let mut par = w.obj("parallelism")?;
    if par.has("preset") {
        return Err(par.fail("preset", "a preset is a search domain: use it in a recommend file"));
    }
    par.allow(&["preset"]);
    let mut size = |k: &'static str| -> Result<u32, SimError> { Ok(par.positive_int(k)?.unwrap_or(1).min(u32::MAX as u64) as u32) };
    let (replicas, tp, pp, dp, moe_tp, moe_ep) =
        (size("replicas")?, size("tensor")?, size("pipeline")?, size("attention_data")?, size("moe_tensor")?, size("moe_expert")?);
    // The reference's constraint: the experts run on the attention GPUs (1 × 1: unset).
    if (moe_tp, moe_ep) != (1, 1) && moe_tp * moe_ep != tp * dp {
        return Err(par.fail(
            if moe_ep != 1 { "moe_expert" } else { "moe_tensor" },
            format!("moe_tensor × moe_expert ({moe_tp} × {moe_ep}) must equal tensor × attention_data ({tp} × {dp})"),
        ));
    }
    let spec = model.spec();
    let moe = spec.as_ref().is_some_and(|s| s.num_experts > 0);
    if !moe && (moe_tp, moe_ep) != (1, 1) {
        return Err(par.fail("moe_expert", "the model has no experts to spread"));
    }
    // A MoE's attention-DP ranks share every pass (the experts' all-to-all): one engine
    // aggregates them, as the reference does; a dense model's ranks are separate schedulers.
    let rank_dp = if moe { 1 } else { dp };
    par.finish()?;

    let mut sched = w.obj("scheduler")?;
    let max_batched = sched.positive_int("max_batched_tokens")?.unwrap_or(8192);
    let max_seqs = sched.positive_int("max_sequences")?.unwrap_or(if name == "prefill" { 1 } else { 256 });
    sched.finish()?;

    let mut cache = w.obj("kv_cache")?;
    let block_size = cache.positive_int("block_size")?.unwrap_or(match backend {
        "sglang" => 1,
        "trtllm" => 32,
        _ => 64,
    }) as u32;
    let prefix_caching = cache.bool("prefix_caching")?.unwrap_or(true);
    let mut cap = cache.obj("capacity")?;
    let cap_type = cap.choice("type", &["default", "fixed"])?.unwrap_or("default");
    let fraction = cap.positive("memory_fraction")?;
    let blocks = cap.positive_int("blocks")?;
    if fraction.is_some_and(|f| f > 1.0) {
        return Err(cap.fail("memory_fraction", "must be at most 1"));
    }
    let num_gpu_blocks = match cap_type {
        "fixed" => {
            if fraction.is_some() {
                return Err(cap.fail("memory_fraction", "fixed KV capacity rejects memory_fraction"));
            }
            Some(blocks.ok_or_else(|| cap.fail("blocks", "fixed KV capacity requires blocks"))?)
        }
        _ => {
            if blocks.is_some() {
                return Err(cap.fail("blocks", "default KV capacity rejects blocks (use type: fixed)"));
            }
            None
        }
    };
    cap.finish()?;
    cache.finish()?;

    let mut t = w.obj("timing")?;
    let timing_type = t.choice("type", &["default", "fixed", "polynomial", "roofline"])?.unwrap_or("default");
    let prefill_ms = t.non_negative("prefill_ms")?;
    let decode_ms = t.non_negative("decode_ms")?;
    // servesim's roofline (`type: roofline`, servesim's own): its efficiencies, if given.
    let mut roofline_args = Map::new();
    for k in ["compute_efficiency", "bandwidth_efficiency", "overhead_ms"] {
        if let Some(x) = t.non_negative(k)? {
            if timing_type != "roofline" {
                return Err(t.fail(k, format!("is a roofline figure; `{timing_type}` timing has none")));
            }
            roofline_args.insert(k.into(), x.into());
        }
    }
    let mut quant = Map::new();
    for &(k, names) in QUANT_MODES {
        if let Some(q) = t.str(k)? {
            if timing_type != "default" {
                return Err(t.fail(k, format!("sets the measured timing's precision; `{timing_type}` timing has none")));
            }
            // The reference's reading: `auto` / `none` / empty is the model's own precision,
            // `int4` is `int4_wo`; anything else must be one of AIConfigurator's names.
            let q = match q.trim() {
                "" | "auto" | "none" | "null" => continue,
                "int4" => "int4_wo",
                q => q,
            };
            if !names.contains(&q) {
                return Err(t.fail(k, format!("unknown mode `{q}` (AIConfigurator's names: {})", names.join(", "))));
            }
            quant.insert(k.into(), q.into());
        }
    }
    // The measured kernels time dense decoders; a MoE/MLA architecture they do not time yet
    // is timed by the roofline from the same config.json (said in `derived`).
    let ais_times = model.config.as_ref().map_or_else(|| !moe, |c| servesim_engine::perf::ais::model::ModelShape::from_config(c).is_ok());
    let roofline_timed = timing_type == "default" && !ais_times;
    // The measured-kernel (AIS) timing on AIConfigurator's data for this system, framework
    // and version: the role's timing by default, and the KV router's prefill-load estimate
    // (`router.prefill_load_model.type: ais`) whatever the role's timing.
    let mut ais = json!({
        "type": "ais",
        "model": model.config.clone().unwrap_or_else(|| model.name.clone().into()),
        "system": hardware,
        "backend": backend,
        "tp": tp,
        "pp": pp,
    });
    if let Some(v) = backend_version {
        ais["backend_version"] = v.into();
    }
    // A MoE's experts and attention-DP ranks, in the reference's names (1 × 1: unset, the
    // experts then take the whole width as tensor parallelism).
    if moe {
        ais["attention_dp_size"] = dp.into();
        if (moe_tp, moe_ep) != (1, 1) {
            ais["moe_tp_size"] = moe_tp.into();
            ais["moe_ep_size"] = moe_ep.into();
        }
    }
    ais.as_object_mut().expect("an object").extend(quant.clone());
    let timing = match timing_type {
        _ if roofline_timed => {
            let mut spec = spec.clone().ok_or_else(|| t.fail_here(format!("servesim knows no shape for `{}`", model.name)))?;
            let gpu = gpu_of(hardware).ok_or_else(|| {
                t.fail_here(format!("the roofline has no figures for hardware `{hardware}` (it knows a100, l40s, h100, h200, b200)"))
            })?;
            let dtype = |q: &str| match q {
                "bfloat16" | "float16" => Some("bfloat16"),
                "fp8" | "fp8_block" | "fp8_static" | "fp8_ootb" | "int8_wo" | "sq" => Some("fp8"),
                "nvfp4" | "w4a16_nvfp4" | "nvfp4_wo" | "mxfp4" | "w4a8_mxfp4_mxfp8" | "int4_wo" => Some("nvfp4"),
                _ => None,
            };
            let mode = |k: &str| {
                quant
                    .get(k)
                    .and_then(Value::as_str)
                    .map(|q| dtype(q).ok_or_else(|| t.fail(k, format!("`{q}` is not a mode the roofline reads"))))
                    .transpose()
            };
            if let Some(d) = mode("gemm_quant_mode")? {
                spec.dtype = d.into();
            }
            if let Some(d) = mode("moe_quant_mode")? {
                spec.expert_dtype = Some(d.into());
            }
            let kv = mode("kvcache_quant_mode")?.map_or("auto", |d| if d == "bfloat16" { "bfloat16" } else { "fp8" });
            json!({"type": "roofline", "model": spec, "gpu": gpu, "tp": tp, "attention_dp": dp,
                   "kv_cache_dtype": kv, "gpu_memory_utilization": fraction.unwrap_or(if backend == "sglang" { 0.88 } else { 0.9 })})
        }
        "fixed" => {
            let (Some(p), Some(d)) = (prefill_ms, decode_ms) else {
                return Err(t.fail_here("fixed timing requires prefill_ms and decode_ms"));
            };
            json!({"type": "fixed", "prefill_ms": p, "decode_ms": d})
        }
        other => {
            if prefill_ms.is_some() || decode_ms.is_some() {
                return Err(t.fail(
                    if prefill_ms.is_some() { "prefill_ms" } else { "decode_ms" },
                    format!("{other} timing rejects fixed timing values"),
                ));
            }
            if other == "polynomial" {
                json!({"type": "polynomial"})
            } else if other == "roofline" {
                // The roofline on the model's shape (its config.json, else the preset its name
                // names) and the hardware's figures: the model the memory model sizes KV with.
                let gpu = gpu_of(hardware).ok_or_else(|| {
                    t.fail(
                        "type",
                        format!("roofline: servesim has no figures for hardware `{hardware}` (it knows a100, l40s, h100, h200, b200)"),
                    )
                })?;
                let model_ref = match (&model.config, model.preset()) {
                    (None, Some(p)) => Value::from(p),
                    _ => serde_json::to_value(model.spec().ok_or_else(|| {
                        t.fail(
                            "type",
                            format!("roofline: servesim knows no shape for `{}` (give a directory with its config.json)", model.name),
                        )
                    })?)
                    .map_err(|e| SimError::new(e.to_string()))?,
                };
                let mut r = json!({"type": "roofline", "model": model_ref, "gpu": gpu, "tp": tp});
                r.as_object_mut().expect("an object").extend(roofline_args.clone());
                r
            } else {
                ais.clone()
            }
        }
    };
    if pp > 1 && (timing_type != "default" || roofline_timed) {
        return Err(error_at(
            w.src(),
            0,
            &format!("{}.parallelism.pipeline", w.path()),
            format!("{pp}: pipeline parallelism changes pass times only under the measured (default) timing, not `{timing_type}`"),
        ));
    }
    t.finish()?;
    let startup = w.non_negative("startup_seconds")?.unwrap_or(0.0);

    let mut engine = json!({
        "backend": backend,
        "block_size": block_size,
        "max_num_seqs": max_seqs,
        "max_num_batched_tokens": max_batched,
        "enable_prefix_caching": prefix_caching,
        "timing_model": timing,
    });
    if let Some(b) = num_gpu_blocks {
        engine["num_gpu_blocks"] = b.into();
    }
    // SGLang's engine has no max_model_len (the reference refuses it there).
    if let Some(l) = max_model_len
        && backend != "sglang"
    {
        engine["max_model_len"] = l.into();
    }
    if let Some(c) = chunked
        && name != "decode"
    {
        engine["enable_chunked_prefill"] = c.into();
    }
    // Read by the memory model, then dropped.
    engine["__memory_fraction"] = fraction.unwrap_or(if backend == "sglang" { 0.88 } else { 0.9 }).into();
    engine["__kv_dtype"] = match quant.get("kvcache_quant_mode").and_then(Value::as_str) {
        Some(q) if q.starts_with("fp8") => "fp8",
        Some(q) if q.contains("fp4") => "fp4",
        _ => "auto",
    }
    .into();
    let mut ais_perf_config = ais;
    if let Some(o) = ais_perf_config.as_object_mut() {
        o.remove("type");
        o.insert("worker_type".into(), if name == "aggregated" { "aggregated" } else { name }.into());
    }
    let measured = timing_type == "default" && !roofline_timed;
    Ok(Role {
        name,
        replicas,
        tp,
        pp,
        dp,
        rank_dp,
        roofline: roofline_timed,
        startup,
        engine,
        block_size,
        num_gpu_blocks,
        ais_perf_config,
        measured,
    })
}

struct Traffic {
    workload: Value,
    max_sim_time_ms: Option<f64>,
    trace_format: Option<String>,
}

fn traffic(
    node: Option<&Node>,
    src: &str,
    engine: &Engine,
    derived: &mut Map<String, Value>,
    files: &mut dyn Files,
) -> Result<Traffic, SimError> {
    let Some(node) = node else {
        // The reference's default traffic: 100 synthetic requests of 1,024 / 128 tokens, 10 at a time.
        let w = json!({"type": "synthetic", "num_requests": 100, "concurrency": 10, "input_tokens": {"mean": 1024, "stddev": 0},
                       "output_tokens": {"mean": 128, "stddev": 0}, "block_tokens": engine.roles[0].block_size, "arrival": "burst"});
        return Ok(Traffic { workload: w, max_sim_time_ms: None, trace_format: None });
    };
    let mut t = Obj::new(src, "traffic", Some(node))?;
    let mut source = t.obj("source")?;
    let mut load = t.obj("load")?;
    let has_stop = t.has("stop");
    let mut stop = t.obj("stop")?;
    if !t.has("source") || !t.has("load") {
        return Err(t.fail_here("traffic needs source and load"));
    }
    let kind = source.choice("type", &["synthetic", "synthetic-session", "trace"])?.ok_or_else(|| source.fail("type", "is required"))?;
    let load_type = load
        .choice("type", &["concurrency", "poisson", "constant_rate", "kv_capacity_fraction", "trace_timestamps"])?
        .unwrap_or("concurrency");
    // The fields each load type takes.
    let allowed: &[&str] = match load_type {
        "concurrency" => &["concurrency"],
        "poisson" => &["requests_per_second", "sessions_per_second", "seed"],
        "constant_rate" => &["requests_per_second", "sessions_per_second"],
        "kv_capacity_fraction" => &["fraction"],
        _ => &["speedup"],
    };
    for k in ["concurrency", "requests_per_second", "sessions_per_second", "seed", "fraction", "speedup"] {
        if load.has(k) && !allowed.contains(&k) {
            return Err(load.fail(k, format!("traffic.load.type={load_type} does not accept {k}")));
        }
    }
    let concurrency = load.positive_int("concurrency")?;
    let rps = load.positive("requests_per_second")?;
    let sps = load.positive("sessions_per_second")?;
    let seed = load.non_negative_int("seed")?;
    let fraction = load.positive("fraction")?;
    let speedup = load.positive("speedup")?;
    if load_type == "concurrency" && concurrency.is_none() {
        return Err(load.fail("concurrency", "traffic.load.type=concurrency requires concurrency"));
    }
    if load_type == "kv_capacity_fraction" && fraction.is_none() {
        return Err(load.fail("fraction", "traffic.load.type=kv_capacity_fraction requires fraction"));
    }
    load.finish()?;
    let requests = stop.positive_int("requests")?;
    let requests_per_unit = stop.positive("requests_per_load_unit")?;
    let sessions = stop.positive_int("sessions")?;
    let sessions_per_unit = stop.positive("sessions_per_load_unit")?;
    let max_virtual_s = stop.positive("max_virtual_time_seconds")?;
    stop.finish()?;
    let counts = [requests.is_some(), requests_per_unit.is_some(), sessions.is_some(), sessions_per_unit.is_some()];

    if kind == "trace" {
        let paths: Vec<String> = match source.get("paths") {
            Some(n) => match n.to_json() {
                Value::Array(a) if !a.is_empty() && a.iter().all(|p| p.as_str().is_some_and(|s| !s.is_empty())) => {
                    a.iter().filter_map(|p| p.as_str().map(str::to_string)).collect()
                }
                _ => return Err(source.fail("paths", "trace paths must contain at least one nonempty path")),
            },
            None => return Err(source.fail("paths", "is required")),
        };
        let format = source
            .choice("format", &["mooncake", "mooncake-delta", "agentic_mooncake", "applied_compute_agentic", "dynamo", "weka"])?
            .unwrap_or("mooncake");
        let block_size = source.positive_int("block_size")?;
        for k in ["range_ratio", "input_tokens", "output_tokens"] {
            if source.has(k) {
                return Err(source.fail(k, "applies to synthetic sources only"));
            }
        }
        source.allow(&["range_ratio", "input_tokens", "output_tokens"]);
        source.finish()?;
        if format == "weka" {
            return Err(source.refuse("format", "`weka` (Weka/AgentX agent traces) is not read yet; convert it to agentic_mooncake"));
        }
        if format != "dynamo" && paths.len() != 1 {
            return Err(source.fail("paths", format!("trace format '{format}' requires exactly one path")));
        }
        if paths.len() > 1 {
            return Err(source.refuse("paths", "several trace shards: servesim replays one file (concatenate the shards)"));
        }
        if !matches!(load_type, "trace_timestamps" | "concurrency") {
            return Err(load.fail("type", "trace traffic requires trace_timestamps or concurrency load"));
        }
        if counts.iter().any(|c| *c) {
            return Err(stop.fail_here("trace traffic only accepts max_virtual_time_seconds"));
        }
        if format == "applied_compute_agentic" && load_type != "concurrency" {
            return Err(load.fail("type", "applied_compute_agentic requires concurrency load"));
        }
        if format == "agentic_mooncake" && load_type != "trace_timestamps" {
            return Err(load.fail("type", "agentic_mooncake traces run on their own times and dependencies (trace_timestamps load)"));
        }
        let mut w = json!({"type": "trace", "path": paths[0]});
        if format != "mooncake" {
            w["format"] = format.into();
        }
        w["trace_block_size"] = block_size.unwrap_or(512).into();
        if matches!(format, "dynamo" | "agentic_mooncake") {
            // A Dynamo trace and an agentic Mooncake v2 trace carry their own block size (a
            // given one must agree); an agentic one (a request graph) runs on its times.
            let bytes = files.read(&paths[0]).map_err(|e| source.fail("paths", e))?;
            let (embedded, agentic) =
                if format == "dynamo" { dynamo_trace_head(&bytes) } else { (agentic_mooncake_block_size(&bytes), true) };
            if agentic && load_type != "trace_timestamps" {
                return Err(load.fail("type", "an agentic trace runs on its own times and dependencies (trace_timestamps load)"));
            }
            if let Some(b) = embedded {
                if block_size.is_some_and(|given| given as u32 != b) {
                    return Err(source.fail("block_size", format!("must match the trace's own block size {b}")));
                }
                w["trace_block_size"] = b.into();
            }
        }
        match load_type {
            "concurrency" => w["concurrency"] = concurrency.into(),
            _ => w["arrival_speedup_ratio"] = speedup.unwrap_or(1.0).into(),
        }
        return Ok(Traffic { workload: w, max_sim_time_ms: max_virtual_s.map(|s| s * 1000.0), trace_format: Some(format.into()) });
    }

    // Synthetic requests or sessions.
    let session_source = kind == "synthetic-session";
    let (isl, osl, shape) = if session_source {
        let isl = source.positive_int("new_input_tokens_per_turn")?.unwrap_or(1024);
        let osl = source.positive_int("output_tokens_per_turn")?.unwrap_or(128);
        if !source.has("session") {
            return Err(source.fail("session", "synthetic-session requires a session mapping"));
        }
        let mut s = source.obj("session")?;
        let turns = s.positive_int("turns")?.unwrap_or(4);
        if turns < 2 {
            return Err(s.fail("turns", "must be at least 2 (use a synthetic source for single requests)"));
        }
        let ratio = s.non_negative("shared_prefix_ratio")?.unwrap_or(0.0);
        if ratio > 1.0 {
            return Err(s.fail("shared_prefix_ratio", "must be at most 1"));
        }
        let groups = s.non_negative_int("prefix_groups")?.unwrap_or(0);
        if ratio > 0.0 && groups == 0 {
            return Err(s.fail("prefix_groups", "prefix_groups must be positive when shared_prefix_ratio is positive"));
        }
        let delay = s.non_negative("inter_turn_delay_ms")?.unwrap_or(0.0);
        s.finish()?;
        (isl, osl, Some((turns, ratio, groups, delay)))
    } else {
        if source.has("session") {
            return Err(source.fail("session", "belongs to a synthetic-session source"));
        }
        source.allow(&["session"]);
        (source.positive_int("input_tokens")?.unwrap_or(1024), source.positive_int("output_tokens")?.unwrap_or(128), None)
    };
    let range_ratio = source.positive("range_ratio")?;
    if range_ratio.is_some_and(|r| r > 1.0) {
        return Err(source.fail("range_ratio", "must be within (0, 1] (lengths uniform in [r·L, L])"));
    }
    source.allow(&["paths", "format", "block_size"]);
    for k in ["paths", "format", "block_size"] {
        if source.has(k) {
            return Err(source.fail(k, "applies to trace sources only"));
        }
    }
    source.finish()?;
    if load_type == "trace_timestamps" {
        return Err(load.fail("type", "synthetic traffic does not accept trace_timestamps load"));
    }
    let (rate, wrong) = if session_source { (sps, rps) } else { (rps, sps) };
    let unit = if session_source { "sessions_per_second" } else { "requests_per_second" };
    if matches!(load_type, "poisson" | "constant_rate") && rate.is_none() {
        return Err(load.fail(unit, format!("{load_type} synthetic traffic requires {unit}")));
    }
    if wrong.is_some() {
        return Err(load.fail(
            if session_source { "requests_per_second" } else { "sessions_per_second" },
            "traffic load rate unit does not match source type",
        ));
    }
    if !has_stop {
        return Err(t.fail("stop", "synthetic traffic requires a stop condition"));
    }
    if max_virtual_s.is_some() {
        return Err(stop.fail("max_virtual_time_seconds", "max_virtual_time_seconds is trace-only"));
    }
    let (fixed, relative) = if session_source { (sessions, sessions_per_unit) } else { (requests, requests_per_unit) };
    let wrong_unit = if session_source { counts[0] || counts[1] } else { counts[2] || counts[3] };
    if (fixed.is_none() && relative.is_none()) || wrong_unit {
        return Err(stop.fail_here(if session_source {
            "synthetic session traffic requires a session stop"
        } else {
            "synthetic request traffic requires a request stop"
        }));
    }
    if counts.iter().filter(|c| **c).count() != 1 {
        return Err(stop.fail_here("traffic.stop requires exactly one count condition"));
    }
    t.finish()?;

    // The load unit: concurrency, the rate, or the closed loop a KV fraction resolves to.
    let kv_concurrency = match fraction {
        None => None,
        Some(f) => {
            let r = engine.roles.last().expect("a role");
            let capacity = r.num_gpu_blocks.unwrap_or(0) * r.block_size as u64 * r.rank_dp.max(1) as u64 * r.replicas.max(1) as u64;
            let expected = isl + osl / 2;
            if capacity < expected {
                return Err(error_at(
                    src,
                    0,
                    "traffic.load.fraction",
                    format!("{} KV capacity {capacity} tokens cannot hold one request averaging {expected} tokens", r.name),
                ));
            }
            let c = ((f * (capacity / expected) as f64) as u64).max(1);
            derived.insert("traffic.load.concurrency".into(), c.into());
            Some(c)
        }
    };
    let closed = concurrency.or(kv_concurrency);
    let load_unit = closed.map(|c| c as f64).or(rate).unwrap_or(0.0);
    let units = fixed.unwrap_or_else(|| ((relative.unwrap_or(0.0) * load_unit).round() as u64).max(1));
    let turns = shape.map_or(1, |s| s.0);
    let mut w = json!({
        "type": "synthetic",
        "num_requests": units * turns,
        "input_tokens": {"mean": isl, "stddev": 0},
        "output_tokens": {"mean": osl, "stddev": 0},
        // Prefix groups are cut in blocks of the engine that receives the prompts.
        "block_tokens": engine.roles[0].block_size,
    });
    if let Some((turns, ratio, groups, delay)) = shape {
        w["turns_per_session"] = turns.into();
        w["shared_prefix_ratio"] = ratio.into();
        w["num_prefix_groups"] = groups.into();
        w["think_time_ms"] = delay.into();
        // Dynamo 1.6.1's synthetic sessions: each turn a prompt of its own (measured: 9
        // turns of 16 tokens are 144 input tokens), after the session's shared prefix.
        w["history"] = false.into();
    }
    if let Some(r) = range_ratio {
        w["range_ratio"] = r.into();
    }
    match (closed, load_type) {
        (Some(c), _) => {
            w["concurrency"] = c.into();
            w["arrival"] = "burst".into();
        }
        (None, "poisson") => {
            w["arrival"] = "poisson".into();
            w["rate_rps"] = rate.into();
            w["seed"] = seed.unwrap_or(42).into();
        }
        (None, _) => {
            w["arrival"] = "constant".into();
            w["rate_rps"] = rate.into();
        }
    }
    Ok(Traffic { workload: w, max_sim_time_ms: None, trace_format: None })
}

/// The block size an agentic Mooncake trace's v2 header gives (none for legacy rows).
fn agentic_mooncake_block_size(bytes: &[u8]) -> Option<u32> {
    let line = bytes.split(|b| *b == b'\n').find(|l| l.iter().any(|c| !c.is_ascii_whitespace()))?;
    let v: Value = serde_json::from_slice(line).ok()?;
    if v.get("schema").and_then(Value::as_str) != Some(crate::workload::agentic::mooncake::SCHEMA) {
        return None;
    }
    v.get("block_size").and_then(Value::as_u64).map(|b| b as u32)
}

/// The block size a Dynamo request trace records (its first `request_end` record's), and
/// whether any record carries `agent_context`.
fn dynamo_trace_head(bytes: &[u8]) -> (Option<u32>, bool) {
    let mut block = None;
    let mut agentic = false;
    for line in bytes.split(|b| *b == b'\n') {
        let Ok(v) = serde_json::from_slice::<Value>(line) else { continue };
        let v = v.get("event").filter(|e| e.is_object()).cloned().unwrap_or(v);
        if v.get("event_type").and_then(Value::as_str) != Some("request_end") {
            continue;
        }
        agentic |= v.get("agent_context").is_some_and(|a| !a.is_null());
        if block.is_none() {
            block = v.pointer("/request/replay/trace_block_size").and_then(Value::as_u64).map(|b| b as u32);
        }
    }
    (block, agentic)
}

struct Router {
    mode: &'static str,
    config: Option<Value>,
    /// `prefill_load_model.type: ais`: the prompt-side load decays with the measured
    /// kernels' expected prefill time.
    measured_load: bool,
}

fn router(r: &mut Obj) -> Result<Router, SimError> {
    if r.has("preset") {
        return Err(r.refuse("preset", "router presets are not supported; give policy and its knobs"));
    }
    r.allow(&["preset"]);
    let policy = r.choice("policy", &["round_robin", "kv_router"])?.unwrap_or("round_robin");
    let mut model = r.obj("prefill_load_model")?;
    let load_model = model.choice("type", &["none", "ais", "aic"])?.unwrap_or("none");
    model.finish()?;
    let knobs = ["overlap_score_credit", "prefill_load_scale", "temperature"];
    let mut values = [None; 3];
    for (i, k) in knobs.iter().enumerate() {
        values[i] = r.non_negative(k)?;
    }
    r.finish()?;
    if policy == "round_robin" {
        let set: Vec<&str> = knobs.iter().zip(values).filter(|(_, v)| v.is_some()).map(|(k, _)| *k).collect();
        if load_model != "none" || !set.is_empty() {
            return Err(r.fail_here(format!("round_robin requires prefill_load_model.type='none' and rejects KV-router knobs {set:?}")));
        }
        return Ok(Router { mode: "round_robin", config: None, measured_load: false });
    }
    let [credit, scale, temperature] = values;
    Ok(Router {
        mode: "kv_router",
        measured_load: load_model != "none",
        config: Some(json!({
            "overlap_score_credit": credit.unwrap_or(1.0),
            "prefill_load_scale": scale.unwrap_or(1.0),
            "router_temperature": temperature.unwrap_or(0.0),
        })),
    })
}

/// Planner knobs passed to Dynamo's `PlannerConfig` under the same name.
const PLANNER_PASSTHROUGH: &[&str] = &[
    "enable_throughput_scaling",
    "enable_load_scaling",
    "throughput_adjustment_interval_seconds",
    "load_adjustment_interval_seconds",
    "max_throughput_scaling_replicas",
    "max_num_fpm_samples",
    "fpm_sample_bucket_size",
    "load_scaling_down_sensitivity",
    "load_min_observations",
    "load_predictor",
    "load_predictor_log1p",
    "prophet_window_size",
    "kalman_q_level",
    "kalman_q_trend",
    "kalman_r",
    "kalman_min_points",
];

/// Planner knobs renamed on the way.
const PLANNER_RENAMED: &[(&str, &str)] = &[
    ("target", "optimization_target"),
    ("max_num_gpus", "max_gpu_budget"),
    ("min_num_gpus", "min_gpu_budget"),
    ("min_workers", "min_endpoint"),
    ("prefill_min_workers", "prefill_min_endpoint"),
    ("decode_min_workers", "decode_min_endpoint"),
];

fn planner(p: &mut Obj, engine: &Engine) -> Result<Option<Value>, SimError> {
    let policy = p.choice("policy", &["enabled", "disabled"])?.unwrap_or("disabled");
    for group in ["scaling_policy", "fpm_sampling", "load_sensitivity"] {
        if p.has(group) {
            return Err(p.fail(group, "is a recommend preset; a predict file sets the planner's knobs themselves"));
        }
        p.allow(&[group]);
    }
    let mut cfg = Map::new();
    for &k in PLANNER_PASSTHROUGH.iter().chain(PLANNER_RENAMED.iter().map(|(k, _)| k)) {
        if let Some(n) = p.get(k) {
            let name = PLANNER_RENAMED.iter().find(|(a, _)| *a == k).map_or(k, |(_, b)| b);
            cfg.insert(name.to_string(), n.to_json());
        }
    }
    if policy == "disabled" {
        // As in the reference: the knobs of a disabled planner change nothing.
        p.finish()?;
        return Ok(None);
    }
    let target = cfg.get("optimization_target").and_then(Value::as_str).unwrap_or("throughput").to_string();
    match target.as_str() {
        "throughput" | "latency" | "load" => {}
        "sla" => {
            return Err(p.refuse(
                "target",
                "`sla` scales on TTFT and ITL predicted by the AIS performance model, which servesim's planner does not have; use throughput, latency or load",
            ));
        }
        other => return Err(p.fail("target", format!("expected one of throughput, latency, load, sla, got \"{other}\""))),
    }
    p.finish()?;
    let mode = if engine.disaggregated { "disagg" } else { "agg" };
    cfg.insert("mode".into(), mode.into());
    cfg.insert("optimization_target".into(), target.clone().into());
    let gpus = |r: &Role| r.tp * r.dp;
    if engine.disaggregated {
        cfg.insert("prefill_engine_num_gpu".into(), gpus(&engine.roles[0]).into());
        cfg.insert("decode_engine_num_gpu".into(), gpus(&engine.roles[1]).into());
    } else {
        cfg.insert("decode_engine_num_gpu".into(), gpus(&engine.roles[0]).into());
    }
    // The thresholds the reference's adapter gives the load target.
    if target == "load" {
        if engine.disaggregated {
            cfg.insert("prefill_scale_up_queue_tokens".into(), 1.into());
            cfg.insert("prefill_scale_down_queue_tokens".into(), 0.into());
        }
        cfg.insert("decode_scale_up_kv_rate".into(), 90.0.into());
        cfg.insert("decode_scale_down_kv_rate".into(), 70.0.into());
    }
    let _ = (&engine.model, engine.backend);
    Ok(Some(Value::Object(cfg)))
}

/// `evaluation.sla` (per-request goodput, as the reference) and servesim's `evaluation.slo`
/// (the scenario's `slo` keys; a run that misses it is infeasible).
fn evaluation(e: &mut Obj) -> Result<(Slo, Option<Slo>), SimError> {
    let mut sla = e.obj("sla")?;
    let ttft = sla.positive("ttft_ms")?;
    let itl = sla.positive("itl_ms")?;
    let e2e = sla.positive("e2e_ms")?;
    if (ttft.is_some() || itl.is_some()) && (ttft.is_none() || itl.is_none()) {
        return Err(sla.fail_here("ttft_ms and itl_ms must be supplied together"));
    }
    if ttft.is_some() && e2e.is_some() {
        return Err(sla.fail("e2e_ms", "e2e_ms is mutually exclusive with ttft_ms/itl_ms"));
    }
    sla.finish()?;
    let objective = match e.get("slo") {
        None => None,
        Some(n) => {
            let slo: Slo = serde_path_to_error::deserialize(n.to_json()).map_err(|err| {
                let path = err.path().to_string();
                let at = if path == "." { "evaluation.slo".to_string() } else { format!("evaluation.slo.{path}") };
                e.fail("slo", format!("{at}: {}", err.inner()))
            })?;
            slo.validate("evaluation.slo.").map_err(|m| e.fail("slo", m))?;
            Some(slo)
        }
    };
    e.finish()?;
    let mut slo = objective.unwrap_or_default();
    for (name, ours, theirs) in [("ttft_ms", &mut slo.ttft_ms, ttft), ("itl_ms", &mut slo.itl_ms, itl), ("e2e_ms", &mut slo.e2e_ms, e2e)] {
        match (&ours, theirs) {
            (Some(_), Some(_)) => {
                return Err(e.fail("slo", format!("{name} is set in both evaluation.sla and evaluation.slo; set it once")));
            }
            (None, Some(x)) => *ours = Some(x),
            _ => {}
        }
    }
    slo.validate("evaluation.").map_err(|m| e.fail_here(m))?;
    // The objective's own goodput share counts requests against the thresholds of both.
    let objective = objective
        .map(|o| if o.min_goodput_ratio.is_some() { Slo { ttft_ms: slo.ttft_ms, itl_ms: slo.itl_ms, e2e_ms: slo.e2e_ms, ..o } } else { o });
    Ok((slo, objective))
}

/// Sets `--set PATH=VALUE` overrides (the value is YAML) on a document, left to right; the
/// path must name a field of the schema (a misspelt one is refused as the file's would be).
pub fn apply_overrides(doc: &mut Node, sets: &[String]) -> Result<(), SimError> {
    for s in sets {
        let (path, value) = s.split_once('=').ok_or_else(|| SimError::new(format!("--set {s}: expected PATH=VALUE")))?;
        let path = path.trim();
        if path.is_empty() || path.split('.').any(|p| p.is_empty() || p.chars().all(|c| c.is_ascii_digit())) {
            return Err(SimError::new(format!(
                "--set {s}: `{path}` is not a dotted path to a field (list items cannot be set one by one)"
            )));
        }
        let mut v = super::yaml::parse(value)
            .map_err(|e| SimError::new(format!("--set {s}: {}", e.split_once(": ").map_or(e.as_str(), |x| x.1))))?;
        clear_lines(&mut v);
        doc.set(path, v);
    }
    Ok(())
}

/// Marks a tree as not from the file (errors then name the field without a line).
pub fn clear_lines(n: &mut Node) {
    n.line = 0;
    match &mut n.value {
        super::yaml::Value::Seq(items) => items.iter_mut().for_each(clear_lines),
        super::yaml::Value::Map(m) => m.iter_mut().for_each(|(_, v)| clear_lines(v)),
        _ => {}
    }
}

/// A scenario as a concrete predict document, for a page's "Download as DynoSim config":
/// everything the DynoSim schema can say; a setting it cannot is an error naming it (a
/// download that silently lost a setting would run a different cluster).
pub fn from_scenario(s: &Scenario, model: &str, hardware: &str) -> Result<Value, SimError> {
    use crate::scenario::WorkloadSpec;
    use crate::workload::synthetic::Arrival;
    let cfg = s.config()?;
    let cannot = |field: &str, why: &str| Err(SimError::new(format!("{field}: {why}; DynoSim's configuration cannot say it")));
    let worker = |l: &servesim_engine::LaunchConfig, replicas: u32, path: &str| -> Result<Value, SimError> {
        let e = &l.engine;
        // Every engine argument the schema has no field for must be at its default.
        let covered = [
            "backend",
            "block_size",
            "num_gpu_blocks",
            "max_num_seqs",
            "max_num_batched_tokens",
            "enable_prefix_caching",
            "enable_chunked_prefill",
            "max_model_len",
            "timing_model",
            "worker_type",
            "kv_bytes_per_token",
            "kv_transfer_bandwidth",
            "kv_transfer_timing_mode",
        ];
        let actual = serde_json::to_value(e).map_err(|x| SimError::new(x.to_string()))?;
        let mut rebuilt = serde_json::to_value(servesim_engine::EngineArgs::default()).map_err(|x| SimError::new(x.to_string()))?;
        for k in covered {
            rebuilt[k] = actual[k].clone();
        }
        if let Some(k) = actual.as_object().and_then(|a| a.keys().find(|k| a[*k] != rebuilt[k.as_str()])) {
            return cannot(&format!("{path}.{k}"), "this engine argument has no field in it");
        }
        let timing = match &e.timing_model {
            servesim_engine::args::TimingModel::Fixed { prefill_ms, decode_ms } => {
                json!({"type": "fixed", "prefill_ms": prefill_ms, "decode_ms": decode_ms})
            }
            servesim_engine::args::TimingModel::Polynomial => json!({"type": "polynomial"}),
            _ => {
                return cannot(
                    &format!("{path}.timing_model"),
                    "only fixed and polynomial timing carry over (the measured timing is the file's default)",
                );
            }
        };
        if e.speedup_ratio != 1.0 || e.decode_speedup_ratio != 1.0 {
            return cannot(&format!("{path}.speedup_ratio"), "speed-up ratios are not in its schema");
        }
        let tp = l.tensor_parallel_size.unwrap_or(1);
        Ok(json!({
            "parallelism": {"replicas": replicas, "tensor": tp, "pipeline": 1, "attention_data": l.dp_size, "moe_tensor": 1, "moe_expert": 1},
            "scheduler": {"max_batched_tokens": e.max_num_batched_tokens.unwrap_or(8192), "max_sequences": e.max_num_seqs.unwrap_or(256)},
            "kv_cache": {"block_size": e.block_size(), "prefix_caching": e.enable_prefix_caching, "capacity": {"type": "fixed", "blocks": e.num_gpu_blocks()}},
            "timing": timing,
            "startup_seconds": l.startup_time.unwrap_or(0.0),
        }))
    };
    let backend = serde_json::to_value(cfg.launch.engine.backend).map_err(|e| SimError::new(e.to_string()))?;
    let mut engine = json!({"mode": "aggregated", "model": model, "hardware": hardware, "backend": backend});
    if let Some(l) = cfg.launch.engine.max_model_len {
        engine["context_length"] = l.into();
    }
    let first = cfg.disagg.as_ref().map_or(&cfg.launch.engine, |d| &d.prefill.engine);
    if !first.enable_chunked_prefill {
        engine["enable_chunked_prefill"] = false.into();
    }
    match &cfg.disagg {
        None => engine["workers"] = json!({"aggregated": worker(&cfg.launch, cfg.num_workers, "engine")?}),
        Some(d) => {
            engine["mode"] = "disaggregated".into();
            engine["workers"] = json!({"prefill": worker(&d.prefill, d.num_prefill_workers, "cluster.prefill_engine")?,
                                       "decode": worker(&d.decode, d.num_decode_workers, "cluster.decode_engine")?});
            let e = &d.prefill.engine;
            let mut t = json!({"timing_mode": serde_json::to_value(e.kv_transfer_timing_mode).map_err(|e| SimError::new(e.to_string()))?});
            t["bytes_per_token"] = e.kv_bytes_per_token.map_or(json!("auto"), Value::from);
            if let Some(b) = e.kv_transfer_bandwidth {
                t["bandwidth_gb_per_second"] = b.into();
            }
            engine["kv_transfer"] = t;
        }
    }
    let traffic = match &s.workload {
        WorkloadSpec::Synthetic(w) => {
            if w.input_tokens.stddev != 0.0 || w.output_tokens.stddev != 0.0 {
                return cannot("workload.input_tokens.stddev", "its synthetic lengths are fixed (or uniform with range_ratio)");
            }
            if w.images.is_some() {
                return cannot("workload.images", "it has no multimodal requests");
            }
            let sessions = w.turns_per_session > 1;
            if sessions && w.history {
                return cannot(
                    "workload.history",
                    "servesim's later turns carry the conversation; DynoSim's synthetic turns do not (set history: false)",
                );
            }
            let mut source = if sessions {
                json!({"type": "synthetic-session", "new_input_tokens_per_turn": w.input_tokens.mean, "output_tokens_per_turn": w.output_tokens.mean,
                       "session": {"turns": w.turns_per_session, "shared_prefix_ratio": w.shared_prefix_ratio, "prefix_groups": w.num_prefix_groups, "inter_turn_delay_ms": w.think_time_ms}})
            } else {
                if w.shared_prefix_ratio > 0.0 && w.num_prefix_groups > 0 {
                    return cannot("workload.shared_prefix_ratio", "its single-request source has no shared prefixes");
                }
                json!({"type": "synthetic", "input_tokens": w.input_tokens.mean, "output_tokens": w.output_tokens.mean})
            };
            if let Some(r) = w.range_ratio {
                source["range_ratio"] = r.into();
            }
            let rate_key = if sessions { "sessions_per_second" } else { "requests_per_second" };
            let load = match (w.concurrency, w.arrival) {
                (Some(c), _) => json!({"type": "concurrency", "concurrency": c}),
                (None, Arrival::Poisson) => json!({"type": "poisson", rate_key: w.rate_rps, "seed": w.seed}),
                (None, Arrival::Constant) => json!({"type": "constant_rate", rate_key: w.rate_rps}),
                (None, _) => return cannot("workload.arrival", "its open-loop loads are poisson and constant_rate"),
            };
            let units = w.num_requests.div_ceil(w.turns_per_session.max(1));
            let stop = if sessions { json!({"sessions": units}) } else { json!({"requests": units}) };
            json!({"source": source, "load": load, "stop": stop})
        }
        WorkloadSpec::Trace { path, format, trace_block_size, arrival_speedup_ratio, concurrency } => {
            let path = path.clone().ok_or_else(|| {
                SimError::new("workload.path: an uploaded trace has no path to write; DynoSim's configuration names its trace file")
            })?;
            let format = serde_json::to_value(format).map_err(|e| SimError::new(e.to_string()))?;
            let load = match concurrency {
                Some(c) => json!({"type": "concurrency", "concurrency": c}),
                None => json!({"type": "trace_timestamps", "speedup": arrival_speedup_ratio}),
            };
            let mut t =
                json!({"source": {"type": "trace", "paths": [path], "format": format, "block_size": trace_block_size}, "load": load});
            if let Some(ms) = s.max_sim_time_ms {
                t["stop"] = json!({"max_virtual_time_seconds": ms / 1000.0});
            }
            t
        }
    };
    if s.seed != 42 {
        return cannot("seed", "its harness seed is fixed");
    }
    if s.cluster.kv_event_lag_ms.is_some_and(|l| l > 0.0) {
        return cannot("cluster.kv_event_lag_ms", "it has no KV event lag");
    }
    let r = &cfg.router_config;
    let knobs_only = crate::cluster::RouterConfig {
        overlap_score_credit: r.overlap_score_credit,
        prefill_load_scale: r.prefill_load_scale,
        router_temperature: r.router_temperature,
        router_prefill_load_model: r.router_prefill_load_model,
        ..Default::default()
    };
    if *r != knobs_only {
        return cannot(
            "cluster.router_config",
            "its router has overlap_score_credit, prefill_load_scale, temperature and the prefill-load model only",
        );
    }
    let measured_load = r.router_prefill_load_model == crate::cluster::PrefillLoadModel::Ais;
    if let Some(a) = &cfg.ais_perf_config {
        // The file's router estimate times the file's model on its hardware, at the prompt
        // workers' parallelism and precision.
        let prompt = cfg.disagg.as_ref().map_or(&cfg.launch, |d| &d.prefill);
        let tp = prompt.tensor_parallel_size.unwrap_or(1) as u64;
        let same = a.get("system").and_then(Value::as_str) == Some(hardware)
            && a.get("tp").and_then(Value::as_u64).unwrap_or(1) * a.get("pp").and_then(Value::as_u64).unwrap_or(1) == tp
            && a.keys().all(|k| ["model", "system", "backend", "backend_version", "tp", "pp", "worker_type"].contains(&k.as_str()));
        if !same {
            return cannot("cluster.ais_perf_config", "its router estimate is the prompt workers' own model, hardware and parallelism");
        }
    }
    let mut out = json!({"traffic": traffic, "engine": engine});
    if cfg.router_mode == crate::cluster::RouterMode::KvRouter {
        let r = &cfg.router_config;
        out["router"] = json!({"policy": "kv_router", "prefill_load_model": {"type": if measured_load { "ais" } else { "none" }},
                               "overlap_score_credit": r.overlap_score_credit,
                               "prefill_load_scale": r.prefill_load_scale, "temperature": r.router_temperature});
    } else if cfg.router_mode != crate::cluster::RouterMode::RoundRobin {
        return cannot("cluster.router_mode", "its router policies are round_robin and kv_router");
    }
    if s.planner.is_some() || s.scaling.is_some() {
        return cannot("planner", "planner settings do not carry back one to one (write the planner section by hand)");
    }
    if matches!(&s.workload, WorkloadSpec::Synthetic(_))
        && let Some(ms) = s.max_sim_time_ms
    {
        return cannot("max_sim_time_ms", &format!("its synthetic traffic stops by count, not at {ms} ms"));
    }
    let slo = s.slo;
    if slo.is_set() {
        let mut eval = json!({});
        if slo.ttft_ms.is_some() && slo.itl_ms.is_some() && slo.e2e_ms.is_none() {
            eval["sla"] = json!({"ttft_ms": slo.ttft_ms, "itl_ms": slo.itl_ms});
        } else if slo.e2e_ms.is_some() && slo.ttft_ms.is_none() && slo.itl_ms.is_none() {
            eval["sla"] = json!({"e2e_ms": slo.e2e_ms});
        }
        let per_request_in_sla = eval.get("sla").is_some();
        let mut rest = slo;
        if per_request_in_sla {
            (rest.ttft_ms, rest.itl_ms, rest.e2e_ms) = (None, None, None);
            if rest.min_goodput_ratio.is_some() {
                // The share needs its thresholds beside it in `slo`; keep them there instead.
                rest = slo;
                eval = json!({});
            }
        }
        if rest.is_set() || rest.min_goodput_ratio.is_some() {
            eval["slo"] = serde_json::to_value(rest).map_err(|e| SimError::new(e.to_string()))?;
        }
        out["evaluation"] = eval;
    }
    Ok(out)
}
