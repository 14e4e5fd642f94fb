//! What to simulate. Two front doors lead to one [`SimConfig`]:
//! - servesim's own versioned scenario format ([`Scenario`], documented in the README);
//! - Dynamo's replay arguments (`crate::replay`), for users of `run_trace_replay`.

use crate::SimError;
use crate::cluster::{RouterConfig, RouterMode};
mod profiles;

pub use crate::report::Slo;
use crate::workload::TraceFormat;
use crate::workload::synthetic::SyntheticSpec;
pub use profiles::Profiles;
use serde::{Deserialize, Serialize};
use servesim_engine::{Backend, WorkerType};
use servesim_engine::{EngineArgs, LaunchConfig};

/// A fully resolved simulation setup (the workload travels separately).
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// Engine arguments of every aggregated worker.
    pub launch: LaunchConfig,
    pub num_workers: u32,
    pub router_mode: RouterMode,
    pub router_config: RouterConfig,
    /// Separate prefill and decode pools instead of aggregated workers.
    pub disagg: Option<Disagg>,
    /// Divides trace arrival times (never engine timings).
    pub arrival_speedup_ratio: f64,
    /// Seeds every random choice of the harness (routing ties, sampling).
    pub seed: u64,
    /// Window of the time series, in virtual ms.
    pub timeseries_interval_ms: f64,
    /// NPZ profiles the engines name, loaded by `build` (the harness reads no files itself).
    pub profiles: Profiles,
    /// Measured-kernel models the engines name, built by `build` from the data files.
    pub kernels: crate::kernels::KernelSets,
    /// Price of one GPU-hour (USD), for the report's cost per million output tokens.
    pub gpu_hour_usd: Option<f64>,
    /// Closed loop: at most this many sessions in flight (arrivals then come from the load,
    /// not the trace's timestamps).
    pub concurrency: Option<u32>,
    /// Service levels: per-request thresholds (the report's goodput) and percentile bounds.
    pub slo: Slo,
    /// KV events reach a KV-aware router's indexer this much later (ms).
    pub kv_event_lag_ms: f64,
    /// Virtual time at which the run stops (ms): only what happened by then is reported.
    pub max_sim_time_ms: Option<f64>,
    /// Pools that grow and shrink during the run: a planner in the loop, or a script.
    pub scaling: Option<crate::planner::config::Scaling>,
    /// The measured-kernel model of the KV router's prefill-load estimate
    /// (`router_prefill_load_model: ais`): the AIS timing model's fields, as Dynamo's
    /// `ais_perf_config`.
    pub ais_perf_config: Option<serde_json::Map<String, serde_json::Value>>,
}

/// Disaggregated serving: prompts run on the prefill pool, their KV moves to the decode pool.
#[derive(Clone, Debug)]
pub struct Disagg {
    pub prefill: LaunchConfig,
    pub decode: LaunchConfig,
    pub num_prefill_workers: u32,
    pub num_decode_workers: u32,
}

impl Disagg {
    /// Each pool's engines get their role, whatever `worker_type` said.
    pub fn new(mut prefill: LaunchConfig, mut decode: LaunchConfig, num_prefill_workers: u32, num_decode_workers: u32) -> Self {
        prefill.engine.worker_type = WorkerType::Prefill;
        decode.engine.worker_type = WorkerType::Decode;
        Disagg { prefill, decode, num_prefill_workers, num_decode_workers }
    }
}

impl SimConfig {
    /// The engine arguments of every pool.
    pub fn engines(&self) -> Vec<&EngineArgs> {
        match &self.disagg {
            None => vec![&self.launch.engine],
            Some(d) => vec![&self.launch.engine, &d.prefill.engine, &d.decode.engine],
        }
    }

    pub fn validate(&self) -> Result<(), SimError> {
        self.launch.validate()?;
        if self.num_workers == 0 || self.num_workers > 4096 {
            return Err(SimError::new("num_workers must be within 1..=4096"));
        }
        self.router_config.validate().map_err(SimError::new)?;
        if let Some(d) = &self.disagg {
            if [&d.prefill, &d.decode].iter().any(|p| p.engine.backend == servesim_engine::Backend::Trtllm) {
                return Err(SimError::new(
                    "backend \"trtllm\" runs aggregated only in servesim: no prefill or decode pools (use vllm or sglang for disaggregated serving)",
                ));
            }
            d.prefill.validate().map_err(|e| SimError::new(format!("prefill: {e}")))?;
            d.decode.validate().map_err(|e| SimError::new(format!("decode: {e}")))?;
            for (name, n) in [("num_prefill_workers", d.num_prefill_workers), ("num_decode_workers", d.num_decode_workers)] {
                if n == 0 || n > 4096 {
                    return Err(SimError::new(format!("{name} must be within 1..=4096")));
                }
            }
            if d.prefill.engine.block_size() != d.decode.engine.block_size() {
                return Err(SimError::new("prefill and decode engines must use the same block_size"));
            }
            if d.prefill.engine.backend != d.decode.engine.backend {
                return Err(SimError::new("prefill and decode engines must use the same backend"));
            }
        }
        if !(self.timeseries_interval_ms.is_finite() && self.timeseries_interval_ms > 0.0) {
            return Err(SimError::new("timeseries_interval_ms must be a positive number"));
        }
        if !(self.arrival_speedup_ratio.is_finite() && self.arrival_speedup_ratio > 0.0) {
            return Err(SimError::new("arrival_speedup_ratio must be a positive number"));
        }
        if self.concurrency == Some(0) {
            return Err(SimError::new("concurrency must be at least 1"));
        }
        if !(self.kv_event_lag_ms.is_finite() && self.kv_event_lag_ms >= 0.0) {
            return Err(SimError::new("kv_event_lag_ms must be finite and non-negative"));
        }
        if self.kv_event_lag_ms > 0.0 && self.router_mode != RouterMode::KvRouter {
            return Err(SimError::new("kv_event_lag_ms applies only to router_mode kv_router"));
        }
        if let Some(t) = self.max_sim_time_ms
            && !(t.is_finite() && t >= 0.0)
        {
            return Err(SimError::new("max_sim_time_ms must be finite and non-negative"));
        }
        // As the reference's replay checks the pair.
        let ais_load = self.router_config.router_prefill_load_model == crate::cluster::PrefillLoadModel::Ais;
        match (ais_load, &self.ais_perf_config) {
            (true, None) => {
                return Err(SimError::new("cluster.router_config.router_prefill_load_model: `ais` requires cluster.ais_perf_config"));
            }
            (false, Some(_)) => {
                return Err(SimError::new("cluster.ais_perf_config requires router_config.router_prefill_load_model `ais`"));
            }
            (true, Some(_)) if self.router_mode != RouterMode::KvRouter => {
                return Err(SimError::new("cluster.router_config.router_prefill_load_model: `ais` requires router_mode kv_router"));
            }
            _ => {}
        }
        Ok(())
    }
}

pub const SCENARIO_VERSION: u32 = 1;

/// servesim's scenario file (`servesim run SCENARIO.json`, the page, share links).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    #[serde(default = "version")]
    pub version: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Seed of the harness's random choices.
    #[serde(default = "seed")]
    pub seed: u64,
    /// Dynamo's engine arguments, same names and defaults.
    #[serde(default)]
    pub engine: EngineArgs,
    #[serde(default = "one")]
    pub dp_size: u32,
    /// GPUs each data-parallel rank spans (see `LaunchConfig::tensor_parallel_size`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tensor_parallel_size: Option<u32>,
    /// Seconds a worker added during the run takes to become ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub startup_time: Option<f64>,
    /// The share of GPU memory a measured-kernel model's framework takes for weights and KV
    /// (vLLM's `gpu_memory_utilization`, SGLang's `mem_fraction_static`, TRT-LLM's
    /// `free_gpu_memory_fraction`); absent: the framework's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_fraction: Option<f64>,
    /// Price of one GPU-hour (USD): the report then gives the cost per million output tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_hour_usd: Option<f64>,
    /// A planner in the loop (Dynamo's `planner_config` keys).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planner: Option<serde_json::Value>,
    /// Or a script of pool sizes: `[{"at_s", "pool", "count"}]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scaling: Option<Vec<crate::planner::config::ScriptStep>>,
    #[serde(default)]
    pub cluster: ClusterSpec,
    /// A `workload` object without a `type` is synthetic.
    #[serde(default, deserialize_with = "workload_spec")]
    pub workload: WorkloadSpec,
    /// Per-request service levels (a completed request is good when each one set holds):
    /// the report's goodput.
    #[serde(default, skip_serializing_if = "Slo::is_unset")]
    pub slo: Slo,
    /// Virtual time at which the run stops (ms): only what happened by then is reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_sim_time_ms: Option<f64>,
    /// Window of the time series, in virtual ms.
    #[serde(default = "interval")]
    pub timeseries_interval_ms: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClusterSpec {
    /// Aggregated workers (ignored when prefill and decode pools are set).
    pub num_workers: u32,
    pub router_mode: RouterMode,
    pub router_config: RouterConfig,
    /// Prefill and decode pools: both > 0 means disaggregated serving.
    pub num_prefill_workers: u32,
    pub num_decode_workers: u32,
    /// Engine arguments of the prefill / decode pools (default: `engine`).
    pub prefill_engine: Option<EngineArgs>,
    pub decode_engine: Option<EngineArgs>,
    /// KV events reach the KV-aware router's indexer this much later (ms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kv_event_lag_ms: Option<f64>,
    /// Each pool's own data-parallel ranks, GPUs per rank and startup time (unset: the
    /// scenario's `dp_size`, `tensor_parallel_size` and `startup_time`), so the prefill and
    /// decode pools can differ, as DynoSim's worker roles can.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefill_dp_size: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decode_dp_size: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefill_tensor_parallel_size: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decode_tensor_parallel_size: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefill_startup_time: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decode_startup_time: Option<f64>,
    /// The KV router's prefill-load estimate (`router_config.router_prefill_load_model:
    /// ais`): the measured-kernel timing model's fields (`model`, `system`, `backend`,
    /// `backend_version`, `tp`, `pp`, quant modes), as Dynamo's `ais_perf_config`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ais_perf_config: Option<serde_json::Map<String, serde_json::Value>>,
}

impl Default for ClusterSpec {
    fn default() -> Self {
        ClusterSpec {
            num_workers: 1,
            router_mode: RouterMode::RoundRobin,
            router_config: RouterConfig::default(),
            num_prefill_workers: 0,
            num_decode_workers: 0,
            prefill_engine: None,
            decode_engine: None,
            kv_event_lag_ms: None,
            prefill_dp_size: None,
            decode_dp_size: None,
            prefill_tensor_parallel_size: None,
            decode_tensor_parallel_size: None,
            prefill_startup_time: None,
            decode_startup_time: None,
            ais_perf_config: None,
        }
    }
}

/// Where requests come from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum WorkloadSpec {
    Synthetic(SyntheticSpec),
    /// A trace: `path` (relative to the scenario file) natively, or an uploaded file in the
    /// page; Mooncake JSONL unless `format` says otherwise.
    Trace {
        #[serde(default)]
        path: Option<String>,
        #[serde(default, skip_serializing_if = "is_mooncake")]
        format: TraceFormat,
        #[serde(default = "trace_block")]
        trace_block_size: u32,
        #[serde(default = "speedup")]
        arrival_speedup_ratio: f64,
        /// Closed loop: at most this many sessions in flight (timestamps are not used).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        concurrency: Option<u32>,
    },
}

fn is_mooncake(f: &TraceFormat) -> bool {
    *f == TraceFormat::Mooncake
}

impl Default for WorkloadSpec {
    fn default() -> Self {
        WorkloadSpec::Synthetic(SyntheticSpec::default())
    }
}

/// Every nested object takes defaults for the fields it leaves out: here, the workload's
/// `type` (synthetic).
fn workload_spec<'de, D: serde::Deserializer<'de>>(d: D) -> Result<WorkloadSpec, D::Error> {
    use serde::de::Error;
    let mut v = serde_json::Value::deserialize(d)?;
    if let Some(o) = v.as_object_mut() {
        o.entry("type").or_insert_with(|| "synthetic".into());
    }
    WorkloadSpec::deserialize(v).map_err(D::Error::custom)
}

fn version() -> u32 {
    SCENARIO_VERSION
}
fn seed() -> u64 {
    42
}
fn one() -> u32 {
    1
}
fn trace_block() -> u32 {
    512
}
fn speedup() -> f64 {
    1.0
}
fn interval() -> f64 {
    1000.0
}

impl Default for Scenario {
    fn default() -> Self {
        // Through the same deserializer as parsing (`serde_path_to_error` over a `Value`): a
        // second one (`from_str`) would put another copy of every field's code in the wasm.
        serde_path_to_error::deserialize(&serde_json::Value::Object(Default::default())).expect("defaults deserialize")
    }
}

/// An image workload must suit the engine: the vLLM backend (the only one that models a
/// vision encoder), images within the encoder budget and cache, a roofline with a vision tower.
fn check_images(engine: &EngineArgs, tokens_per_image: u32) -> Result<(), SimError> {
    use servesim_engine::Backend;
    let bad = |m: String| Err(SimError::new(m));
    if engine.backend != Backend::Vllm {
        let name = if engine.backend == Backend::Sglang { "sglang" } else { "trtllm" };
        return bad(format!("workload.images: the {name} backend does not model multimodal requests (use backend \"vllm\")"));
    }
    let budget = engine.encoder_budget();
    if tokens_per_image > budget {
        return bad(format!(
            "workload.images.tokens_per_image: {tokens_per_image} is more than engine.max_num_encoder_input_tokens {budget} (the encoder could never take one image)"
        ));
    }
    let cache = engine.encoder_cache_tokens();
    if tokens_per_image > cache {
        return bad(format!(
            "workload.images.tokens_per_image: {tokens_per_image} is more than engine.encoder_cache_size {cache} (the encoder cache cannot hold one image)"
        ));
    }
    if let servesim_engine::args::TimingModel::Roofline(r) = &engine.timing_model {
        let roofline = servesim_engine::perf::roofline::Roofline::new(r).map_err(SimError::new)?;
        if !roofline.has_vision() {
            return bad("workload.images: the roofline model has no vision tower (use a multimodal preset such as qwen2.5-vl-7b, or add `vision` to the model)".into());
        }
    }
    Ok(())
}

impl Scenario {
    /// Parses and validates a scenario; errors name the field's path. The scenario keeps
    /// what the user left unset unset (`engine.num_gpu_blocks`, `engine.kv_bytes_per_token`):
    /// [`Scenario::config`] derives them, so a scenario written back out and edited (a page's
    /// form) derives them again for its new settings.
    pub fn from_json_str(text: &str) -> Result<Self, SimError> {
        let raw: serde_json::Value = serde_json::from_str(text).map_err(|e| SimError::new(e.to_string()))?;
        let s: Scenario = serde_path_to_error::deserialize(&raw).map_err(|e| {
            let path = e.path().to_string();
            if path == "." { SimError::new(e.inner().to_string()) } else { SimError::new(format!("{path}: {}", e.inner())) }
        })?;
        if s.version != SCENARIO_VERSION {
            return Err(SimError::new(format!(
                "version: unsupported scenario version {} (this build reads {SCENARIO_VERSION})",
                s.version
            )));
        }
        s.config()?;
        if let WorkloadSpec::Synthetic(spec) = &s.workload {
            spec.validate()?;
            if let Some(images) = &spec.images
                && images.per_request > 0
            {
                for engine in [Some(&s.engine), s.cluster.prefill_engine.as_ref()].into_iter().flatten() {
                    check_images(engine, images.tokens_per_image)?;
                }
            }
        }
        Ok(s)
    }

    /// The planner or the script, checked against the cluster.
    fn scaling_policy(&self, disaggregated: bool) -> Result<Option<crate::planner::config::Scaling>, SimError> {
        use crate::planner::config::{Mode, PlannerConfig, Scaling};
        match (&self.planner, &self.scaling) {
            (Some(_), Some(_)) => Err(SimError::new("planner and scaling: choose one (a planner in the loop, or a script)")),
            (Some(p), None) => {
                let cfg = PlannerConfig::from_json(p, "planner")?;
                if (cfg.mode == Mode::Disagg) != disaggregated {
                    return Err(SimError::new(format!(
                        "planner.mode: `{}` does not fit this cluster ({})",
                        if cfg.mode == Mode::Disagg { "disagg" } else { "agg" },
                        if disaggregated { "prefill and decode pools" } else { "aggregated workers" }
                    )));
                }
                Ok(Some(Scaling::Planner(cfg)))
            }
            (None, Some(steps)) => {
                Scaling::check_script(steps, disaggregated)?;
                Ok(Some(Scaling::Script(steps.clone())))
            }
            (None, None) => Ok(None),
        }
    }

    /// One pool's launch configuration around its engine arguments.
    fn launch(&self, engine: EngineArgs) -> LaunchConfig {
        let f = self.memory_fraction;
        let b = engine.backend;
        LaunchConfig {
            engine,
            dp_size: self.dp_size,
            tensor_parallel_size: self.tensor_parallel_size,
            startup_time: self.startup_time,
            gpu_memory_utilization: f.filter(|_| b == Backend::Vllm),
            mem_fraction_static: f.filter(|_| b == Backend::Sglang),
            free_gpu_memory_fraction: f.filter(|_| b == Backend::Trtllm),
        }
    }

    pub fn config(&self) -> Result<SimConfig, SimError> {
        if let Some(p) = self.gpu_hour_usd
            && !(p.is_finite() && p >= 0.0)
        {
            return Err(SimError::new("gpu_hour_usd must be finite and non-negative"));
        }
        let (speed, concurrency) = match &self.workload {
            WorkloadSpec::Trace { arrival_speedup_ratio, concurrency, .. } => (*arrival_speedup_ratio, *concurrency),
            WorkloadSpec::Synthetic(s) => (1.0, s.concurrency),
        };
        self.slo.validate("slo.").map_err(SimError::new)?;
        let c = &self.cluster;
        // What the user left unset, derived (a roofline's KV pool and KV bytes per token).
        let engine = self.engine.resolved()?;
        let launch = self.launch(engine.clone());
        let disagg = match (c.num_prefill_workers, c.num_decode_workers) {
            (0, 0) => None,
            (p, d) if p > 0 && d > 0 => {
                let pool = |e: &Option<EngineArgs>, name: &str, (dp, tp, startup): (Option<u32>, Option<u32>, Option<f64>)| {
                    let engine = match e {
                        Some(e) => e.resolved().map_err(|err| SimError::new(format!("cluster.{name}: {err}")))?,
                        None => engine.clone(),
                    };
                    let mut launch = self.launch(engine);
                    launch.dp_size = dp.unwrap_or(self.dp_size);
                    launch.tensor_parallel_size = tp.or(self.tensor_parallel_size);
                    launch.startup_time = startup.or(self.startup_time);
                    Ok::<_, SimError>(launch)
                };
                let prefill =
                    pool(&c.prefill_engine, "prefill_engine", (c.prefill_dp_size, c.prefill_tensor_parallel_size, c.prefill_startup_time))?;
                let decode =
                    pool(&c.decode_engine, "decode_engine", (c.decode_dp_size, c.decode_tensor_parallel_size, c.decode_startup_time))?;
                Some(Disagg::new(prefill, decode, p, d))
            }
            _ => {
                return Err(SimError::new(
                    "cluster: num_prefill_workers and num_decode_workers must both be set for disaggregated serving",
                ));
            }
        };
        if disagg.is_none()
            && let Some(k) = [
                ("prefill_dp_size", c.prefill_dp_size.is_some()),
                ("decode_dp_size", c.decode_dp_size.is_some()),
                ("prefill_tensor_parallel_size", c.prefill_tensor_parallel_size.is_some()),
                ("decode_tensor_parallel_size", c.decode_tensor_parallel_size.is_some()),
                ("prefill_startup_time", c.prefill_startup_time.is_some()),
                ("decode_startup_time", c.decode_startup_time.is_some()),
            ]
            .iter()
            .find(|(_, set)| *set)
        {
            return Err(SimError::new(format!(
                "cluster.{}: applies to prefill and decode pools only (set dp_size, tensor_parallel_size or startup_time for aggregated workers)",
                k.0
            )));
        }
        let disaggregated = disagg.is_some();
        let cfg = SimConfig {
            launch,
            num_workers: c.num_workers,
            router_mode: c.router_mode,
            router_config: c.router_config.clone(),
            disagg,
            arrival_speedup_ratio: speed,
            seed: self.seed,
            timeseries_interval_ms: self.timeseries_interval_ms,
            profiles: Default::default(),
            kernels: Default::default(),
            gpu_hour_usd: self.gpu_hour_usd,
            concurrency,
            slo: self.slo,
            kv_event_lag_ms: c.kv_event_lag_ms.unwrap_or(0.0),
            max_sim_time_ms: self.max_sim_time_ms,
            scaling: self.scaling_policy(disaggregated)?,
            ais_perf_config: c.ais_perf_config.clone(),
        };
        cfg.validate()?;
        Ok(cfg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_named_errors() {
        let s = Scenario::from_json_str("{}").unwrap();
        assert_eq!(s.engine.num_gpu_blocks, None);
        assert_eq!(s.config().unwrap().launch.engine.num_gpu_blocks(), 16384);
        let s = Scenario::from_json_str(r#"{"engine": {"num_gpu_blocks": 12345, "block_size": 32}}"#).unwrap();
        assert_eq!((s.engine.num_gpu_blocks, s.engine.block_size), (Some(12345), 32));
        let e = Scenario::from_json_str(r#"{"engine": {"num_gpu_blockz": 1}}"#).unwrap_err();
        assert!(e.0.starts_with("engine.num_gpu_blockz: unknown field"), "{e}");
        let e = Scenario::from_json_str(r#"{"workload": {"type": "synthetic", "rate_rps": -1}}"#).unwrap_err();
        assert!(e.0.contains("workload.rate_rps"), "{e}");
        let e = Scenario::from_json_str(r#"{"cluster": {"num_workers": 0}}"#).unwrap_err();
        assert!(e.0.contains("num_workers"), "{e}");
        // A roofline scenario derives its KV pool and KV bytes per token unless they are set.
        let s = Scenario::from_json_str(
            r#"{"engine": {"block_size": 16, "timing_model": {"type": "roofline", "model": "llama-3.1-8b", "gpu": "h100"}}}"#,
        )
        .unwrap();
        let e = s.config().unwrap().launch.engine;
        assert!(e.num_gpu_blocks() > 16384 && e.kv_bytes_per_token == Some(131072), "{:?}", (e.num_gpu_blocks, e.kv_bytes_per_token));
        // ... and the scenario itself keeps them unset.
        assert_eq!((s.engine.num_gpu_blocks, s.engine.kv_bytes_per_token), (None, None));
        let s = Scenario::from_json_str(
            r#"{"engine": {"num_gpu_blocks": 100, "timing_model": {"type": "roofline", "model": "llama-3.1-8b", "gpu": "h100"}}}"#,
        )
        .unwrap();
        assert_eq!(s.config().unwrap().launch.engine.num_gpu_blocks(), 100);
        let e = Scenario::from_json_str(r#"{"version": 9}"#).unwrap_err();
        assert!(e.0.contains("version"), "{e}");
    }

    /// A scenario written back out (as the page holds it) and edited derives its pool for
    /// the new settings, exactly as a fresh scenario with those settings does.
    #[test]
    fn derived_values_follow_the_settings_whatever_the_path() {
        let h100 = r#"{"engine": {"timing_model": {"type": "roofline", "model": "llama-3.1-70b", "gpu": "h100", "tp": 4}}}"#;
        let s = Scenario::from_json_str(h100).unwrap();
        assert_eq!(s.config().unwrap().launch.engine.num_gpu_blocks(), 7004);
        let mut written = serde_json::to_value(&s).unwrap();
        written["engine"]["timing_model"]["gpu"] = "h200".into();
        let edited = Scenario::from_json_str(&written.to_string()).unwrap();
        let fresh = Scenario::from_json_str(&h100.replace("h100", "h200")).unwrap();
        assert_eq!(edited, fresh);
        let (a, b) = (edited.config().unwrap().launch.engine, fresh.config().unwrap().launch.engine);
        assert_eq!((a.num_gpu_blocks(), a.kv_bytes_per_token), (17475, Some(327_680)));
        assert_eq!(a, b);
    }

    /// Every nested object takes defaults for the fields it leaves out.
    #[test]
    fn partial_nested_objects_take_defaults() {
        let s = Scenario::from_json_str(r#"{"workload": {"output_tokens": {"stddev": 100}}}"#).unwrap();
        let WorkloadSpec::Synthetic(w) = &s.workload else { panic!("synthetic by default") };
        assert_eq!((w.output_tokens.mean, w.output_tokens.stddev), (256.0, 100.0));
        assert_eq!((w.input_tokens.mean, w.input_tokens.stddev), (2048.0, 512.0));
        let s = Scenario::from_json_str(r#"{"workload": {"input_tokens": {"stddev": 7}, "rate_rps": 20}}"#).unwrap();
        let WorkloadSpec::Synthetic(w) = &s.workload else { panic!() };
        assert_eq!((w.input_tokens.mean, w.input_tokens.stddev, w.rate_rps), (2048.0, 7.0, 20.0));
        // A mean alone keeps its old meaning, a fixed length (links made before must keep
        // their numbers).
        let s = Scenario::from_json_str(r#"{"workload": {"type": "synthetic", "input_tokens": {"mean": 4096}}}"#).unwrap();
        let WorkloadSpec::Synthetic(w) = &s.workload else { panic!() };
        assert_eq!((w.input_tokens.mean, w.input_tokens.stddev), (4096.0, 0.0));
        let e = Scenario::from_json_str(r#"{"workload": {"input_tokens": {"mean": 1, "sd": 2}}}"#).unwrap_err();
        assert!(e.0.contains("sd"), "{e}");
        let s = Scenario::from_json_str(r#"{"cluster": {"router_config": {"router_temperature": 0.5}}}"#).unwrap();
        assert_eq!(s.cluster.router_config.overlap_score_credit, 1.0);
        let s = Scenario::from_json_str(r#"{"engine": {"backend": "sglang", "sglang": {"schedule_policy": "lpm"}}}"#).unwrap();
        assert_eq!(s.engine.sglang.unwrap().chunked_prefill_size, 8192);
    }
}
