//! Engine arguments in Dynamo's mocker JSON form: the same field names, defaults and
//! validation, so a Dynamo user's `extra_engine_args` file works as it is.
//!
//! The launch configuration is `{"engine": {...}, "dp_size": N}`; unknown fields are errors
//! that name the field's path (`engine.bogus`).

use serde::{Deserialize, Deserializer, Serialize};
use std::fmt;

mod offload;
pub use offload::{G2Scope, G3Offload, G3Scope, NativeHostOffload};

/// Scheduler family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    Vllm,
    Sglang,
    Trtllm,
}

/// Victim choice when a running request needs blocks the pool cannot give.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PreemptionMode {
    /// The most recently admitted running request.
    Lifo,
    /// The oldest running request (possibly the one asking).
    Fifo,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WorkerType {
    Aggregated,
    Prefill,
    Decode,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KvTransferTimingMode {
    /// Charge the whole prompt.
    FullPrompt,
    /// Charge only the blocks the decode side had to reserve fresh.
    DestinationMissing,
}

/// The forward-pass timing model.
// The roofline's model shape (MoE and MLA fields) makes its variant the large one; the
// arguments are read once per run, so boxing would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum TimingModel {
    /// Dynamo's default polynomial fitted to H200 sweeps.
    Polynomial,
    /// A constant time per prefill and per decode step (each defaults to the page's first
    /// choice: 20 ms and 8 ms).
    Fixed {
        #[serde(default = "default_fixed_prefill_ms")]
        prefill_ms: f64,
        #[serde(default = "default_fixed_decode_ms")]
        decode_ms: f64,
    },
    /// A measured profile (`provider: "dynamo_profile"`, the default and only provider;
    /// `config.path` to an NPZ file).
    External {
        #[serde(default = "default_provider")]
        provider: String,
        #[serde(default)]
        config: serde_json::Value,
    },
    /// servesim's roofline from a model's shape and a GPU's figures.
    Roofline(crate::perf::roofline::RooflineArgs),
    /// Measured kernels (the reference's AIS model): AIConfigurator's tables for one GPU ×
    /// framework × version. The reference's `{"type": "external", "provider": "ais",
    /// "config": {...}}` reads as this.
    /// (Kept as its fields; [`TimingModel::ais`] reads them.)
    Ais(serde_json::Map<String, serde_json::Value>),
}

impl TimingModel {
    /// The measured-kernel arguments, whichever spelling named them.
    pub fn ais(&self) -> Option<std::borrow::Cow<'_, crate::perf::ais::AisArgs>> {
        match self {
            TimingModel::Ais(a) => crate::perf::ais::AisArgs::from_map(a).ok().map(std::borrow::Cow::Owned),
            TimingModel::External { provider, config } if provider == "ais" => {
                config.as_object().and_then(|m| crate::perf::ais::AisArgs::from_map(m).ok()).map(std::borrow::Cow::Owned)
            }
            _ => None,
        }
    }
}

/// Which KV block manager backs the vLLM scheduler.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KvManager {
    /// The vLLM-faithful pool (blocks visible once computed); matches the reference.
    Native,
    /// The kvbm-style logical manager with a choice of eviction backend.
    Kvbm,
}

/// How the kvbm manager picks an inactive block to evict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EvictionBackend {
    /// Leaves before shared prefixes, oldest first.
    Lineage,
    /// Least recently released first.
    Lru,
    /// Four LRU tiers chosen by a TinyLFU frequency estimate; coldest tier first.
    MultiLru,
}

/// SGLang-specific knobs (`engine.sglang`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SglangArgs {
    pub schedule_policy: SchedulePolicy,
    pub max_prefill_tokens: u32,
    pub chunked_prefill_size: u32,
    pub clip_max_new_tokens: u32,
    pub schedule_conservativeness: f64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SchedulePolicy {
    Fifo,
    /// Longest prefix match first.
    Lpm,
}

impl Default for SglangArgs {
    fn default() -> Self {
        SglangArgs {
            schedule_policy: SchedulePolicy::Fifo,
            max_prefill_tokens: 16384,
            chunked_prefill_size: 8192,
            clip_max_new_tokens: 4096,
            schedule_conservativeness: 1.0,
        }
    }
}

/// TRT-LLM-specific knobs (`engine.trtllm`), as Dynamo names them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TrtllmArgs {
    pub capacity_scheduler_policy: CapacitySchedulerPolicy,
}

/// TRT-LLM's capacity scheduler. The reference models its default only, and refuses
/// `max_utilization` (as an unknown variant, so servesim's message is the reference's).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CapacitySchedulerPolicy {
    /// A request is admitted only when the pool can hold its prompt and its whole output
    /// besides what the running requests may still take; nothing is ever preempted.
    #[default]
    GuaranteedNoEvict,
}

/// Engine arguments resolved and checked once ([`EngineArgs::resolve`]): engines are built
/// only from these, so a pool's arguments are validated once, not once per rank, and no core
/// reads a field whose 0 or absence means "the default" (`block_size` and `num_gpu_blocks`
/// hold the values in force). Reads as [`EngineArgs`].
#[derive(Clone, Debug, PartialEq)]
pub struct ResolvedArgs(EngineArgs);

impl std::ops::Deref for ResolvedArgs {
    type Target = EngineArgs;
    fn deref(&self) -> &EngineArgs {
        &self.0
    }
}

/// `engine` section of the launch configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineArgs {
    #[serde(default = "default_backend")]
    pub backend: Backend,
    /// KV blocks per data-parallel rank. Unset (absent or `null`): 16384, or with a roofline
    /// timing model what fits in GPU memory ([`EngineArgs::resolve`]). Read it through
    /// [`EngineArgs::num_gpu_blocks`] once resolved.
    #[serde(default, deserialize_with = "nullable")]
    pub num_gpu_blocks: Option<u32>,
    /// Tokens per KV block; 0 or absent means the backend's default (vLLM 64, SGLang 1,
    /// TRT-LLM 32).
    #[serde(default)]
    pub block_size: u32,
    #[serde(default)]
    pub max_model_len: Option<u32>,
    /// Running requests per rank; `null` means unbounded.
    #[serde(default = "default_max_num_seqs", deserialize_with = "nullable")]
    pub max_num_seqs: Option<u32>,
    /// Token budget of one pass; `null` means unbounded.
    #[serde(default = "default_max_num_batched_tokens", deserialize_with = "nullable")]
    pub max_num_batched_tokens: Option<u32>,
    #[serde(default = "yes")]
    pub enable_prefix_caching: bool,
    #[serde(default = "yes")]
    pub enable_chunked_prefill: bool,
    #[serde(default = "one")]
    pub speedup_ratio: f64,
    #[serde(default = "one")]
    pub decode_speedup_ratio: f64,
    #[serde(default = "default_worker_type")]
    pub worker_type: WorkerType,
    #[serde(default = "default_preemption")]
    pub preemption_mode: PreemptionMode,
    /// Bytes of KV per token, for transfer sizing.
    #[serde(default, alias = "kv_transfer_bytes_per_token")]
    pub kv_bytes_per_token: Option<u64>,
    /// GB/s (1e9 bytes) between prefill and decode workers; 0 disables the delay.
    #[serde(default)]
    pub kv_transfer_bandwidth: Option<f64>,
    #[serde(default = "default_timing_mode")]
    pub kv_transfer_timing_mode: KvTransferTimingMode,
    #[serde(default = "default_timing_model")]
    pub timing_model: TimingModel,
    #[serde(default)]
    pub sglang: Option<SglangArgs>,
    /// Absent unless given, so a scenario written before it existed normalizes as before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trtllm: Option<TrtllmArgs>,
    #[serde(default = "default_kv_manager")]
    pub kv_manager: KvManager,
    #[serde(default = "default_eviction_backend")]
    pub eviction_backend: EvictionBackend,
    /// Path of a planner profile (NPZ) timing the passes, as with Dynamo's
    /// `--planner-profile-data`; same as an external `dynamo_profile` timing model.
    #[serde(default)]
    pub planner_profile_data: Option<String>,
    /// Bytes of KV per token in GPU memory: sizes an offloaded block (Dynamo's
    /// `kv_cache_bytes_per_token`; `kv_bytes_per_token` sizes disaggregated transfers only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_cache_bytes_per_token: Option<u64>,
    /// vLLM's native host (G2) KV offload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native_host_offload: Option<NativeHostOffload>,
    /// A G3 tier behind G2 (needs `native_host_offload`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub g3_offload: Option<G3Offload>,
    /// Multimodal requests (vLLM's names): image tokens the vision encoder may process in one
    /// pass. Absent: `max_num_batched_tokens` (8192 when that is unbounded), as vLLM.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_num_encoder_input_tokens: Option<u32>,
    /// Encoder outputs kept, in image tokens. Absent: as `max_num_encoder_input_tokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encoder_cache_size: Option<u32>,
    /// Vision-encoder time per image token, ms, for the polynomial, fixed and profile timing
    /// models (the roofline times the model's vision tower instead). Absent: 0.01 ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encoder_ms_per_token: Option<f64>,
    /// The reference's MTP (speculative draft tokens per step, with a measured-kernel model),
    /// its acceptance rates and seed, by its names. Read so its configs parse; drafts are not
    /// modelled yet (a set `aic_nextn` is an error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aic_nextn: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aic_nextn_accept_rates: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aic_mtp_seed: Option<u64>,
}

/// The whole launch configuration (`extra_engine_args` of Dynamo's replay).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LaunchConfig {
    #[serde(default = "EngineArgs::default")]
    pub engine: EngineArgs,
    #[serde(default = "default_dp")]
    pub dp_size: u32,
    /// GPUs each data-parallel rank spans (Dynamo's top-level `tensor_parallel_size`). Absent:
    /// the roofline timing model's `tp`, else 1. Only the report's GPU counts read it; the
    /// roofline times passes with its own `tp`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tensor_parallel_size: Option<u32>,
    /// Seconds a worker added during the run takes to become ready (Dynamo's top-level
    /// `startup_time`; absent or 0: ready at once). Only the harness reads it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub startup_time: Option<f64>,
    /// Memory fractions sizing a measured-kernel model's KV pool (the reference's top-level
    /// names): vLLM's of the GPU's memory (default 0.9), SGLang's (0.88), TRT-LLM's of what
    /// weights and buffers leave free (0.9).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_memory_utilization: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_fraction_static: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub free_gpu_memory_fraction: Option<f64>,
}

fn default_backend() -> Backend {
    Backend::Vllm
}
/// Dynamo's default pool, per data-parallel rank.
pub const DEFAULT_NUM_GPU_BLOCKS: u32 = 16384;
/// Encoder budget and cache size when the token budget is unbounded (vLLM's default
/// `max_num_batched_tokens` for multimodal models).
pub const DEFAULT_ENCODER_TOKENS: u32 = 8192;
/// Vision-encoder cost per image token when the timing model has no vision tower, ms: about
/// a 0.7 B-parameter ViT (Qwen2.5-VL's) at four patches per token on an H200-class GPU.
pub const DEFAULT_ENCODER_MS_PER_TOKEN: f64 = 0.01;
fn default_max_num_seqs() -> Option<u32> {
    Some(256)
}
fn default_max_num_batched_tokens() -> Option<u32> {
    Some(8192)
}
fn yes() -> bool {
    true
}
fn one() -> f64 {
    1.0
}
fn default_kv_manager() -> KvManager {
    KvManager::Native
}
fn default_eviction_backend() -> EvictionBackend {
    EvictionBackend::Lineage
}
fn default_dp() -> u32 {
    1
}
fn default_worker_type() -> WorkerType {
    WorkerType::Aggregated
}
fn default_preemption() -> PreemptionMode {
    PreemptionMode::Lifo
}
fn default_timing_mode() -> KvTransferTimingMode {
    KvTransferTimingMode::FullPrompt
}
fn default_timing_model() -> TimingModel {
    TimingModel::Polynomial
}
fn default_fixed_prefill_ms() -> f64 {
    20.0
}
fn default_fixed_decode_ms() -> f64 {
    8.0
}
fn default_provider() -> String {
    "dynamo_profile".into()
}
fn nullable<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    Option::<u32>::deserialize(d)
}

impl Default for EngineArgs {
    fn default() -> Self {
        // Through the same deserializer as parsing (`serde_path_to_error` over a `Value`): a
        // second one (`from_str`) would put another copy of every field's code in the wasm.
        serde_path_to_error::deserialize(&serde_json::Value::Object(Default::default())).expect("defaults deserialize")
    }
}

impl Default for LaunchConfig {
    fn default() -> Self {
        LaunchConfig {
            engine: EngineArgs::default(),
            dp_size: 1,
            tensor_parallel_size: None,
            startup_time: None,
            gpu_memory_utilization: None,
            mem_fraction_static: None,
            free_gpu_memory_fraction: None,
        }
    }
}

/// A configuration error, naming the field.
#[derive(Clone, Debug, PartialEq)]
pub struct ArgsError(pub String);

impl fmt::Display for ArgsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ArgsError {}

impl LaunchConfig {
    /// Parses and validates a launch configuration from JSON.
    pub fn from_json(value: &serde_json::Value) -> Result<Self, ArgsError> {
        let mut cfg: LaunchConfig =
            serde_path_to_error::deserialize(value).map_err(|e| ArgsError(format!("{}: {}", e.path(), e.inner())))?;
        cfg.engine.fill_unset()?;
        cfg.validate()?;
        Ok(cfg)
    }

    pub fn validate(&self) -> Result<(), ArgsError> {
        if self.dp_size == 0 {
            return Err(ArgsError("dp_size must be positive".into()));
        }
        if self.engine.g3_offload.is_some() && self.dp_size != 1 {
            return Err(ArgsError("engine.g3_offload supports only dp_size=1".into()));
        }
        if let Some(s) = self.startup_time
            && !(s.is_finite() && s >= 0.0)
        {
            return Err(ArgsError("startup_time must be finite and non-negative".into()));
        }
        for (name, v) in [
            ("gpu_memory_utilization", self.gpu_memory_utilization),
            ("mem_fraction_static", self.mem_fraction_static),
            ("free_gpu_memory_fraction", self.free_gpu_memory_fraction),
        ] {
            if let Some(f) = v
                && !(f.is_finite() && f > 0.0 && f <= 1.0)
            {
                return Err(ArgsError(format!("{name} must be in (0, 1]")));
            }
        }
        if let Some(tp) = self.tensor_parallel_size {
            if tp == 0 {
                return Err(ArgsError("tensor_parallel_size must be positive".into()));
            }
            if let TimingModel::Roofline(r) = &self.engine.timing_model
                && r.tp != tp
            {
                return Err(ArgsError(format!("tensor_parallel_size {tp} differs from engine.timing_model.tp {}", r.tp)));
            }
        }
        self.engine.validate()
    }

    /// GPUs one worker occupies: tensor-parallel size × data-parallel ranks (as the
    /// reference counts them for `gpu_hours`).
    pub fn gpus_per_worker(&self) -> u32 {
        // Attention-DP ranks one engine aggregates (its timing model's) span GPUs of their own.
        let ranks = match &self.engine.timing_model {
            TimingModel::Roofline(r) => r.attention_dp,
            t => t.ais().map_or(1, |a| a.attention_dp),
        };
        let tp = match (&self.tensor_parallel_size, &self.engine.timing_model) {
            (Some(tp), _) => *tp * ranks,
            (None, TimingModel::Roofline(r)) => r.tp * r.attention_dp,
            (None, t) => t.ais().map_or(1, |a| a.gpus()),
        };
        tp * self.dp_size
    }

    /// The memory fraction the engine's framework reads (its own name), if set.
    pub fn memory_fraction(&self) -> Option<f64> {
        match self.engine.backend {
            Backend::Vllm => self.gpu_memory_utilization,
            Backend::Sglang => self.mem_fraction_static,
            Backend::Trtllm => self.free_gpu_memory_fraction,
        }
    }
}

impl EngineArgs {
    /// Parses and validates the `engine` object alone.
    pub fn from_json(value: &serde_json::Value) -> Result<Self, ArgsError> {
        let mut args: EngineArgs =
            serde_path_to_error::deserialize(value).map_err(|e| ArgsError(format!("engine.{}: {}", e.path(), e.inner())))?;
        args.fill_unset()?;
        args.validate()?;
        Ok(args)
    }

    /// Fills what the user left unset (`null` or absent): with a roofline timing model, the
    /// KV pool (GPU memory × utilisation − weights) and the KV bytes per token, derived from
    /// the model and GPU; otherwise Dynamo's default pool. Values the user set are kept.
    ///
    /// Only the resolved copy is run: a scenario keeps its unset fields unset, so a page that
    /// sends the scenario back (with another GPU, say) gets the pool of the settings it shows,
    /// not the one derived for the previous settings.
    pub fn fill_unset(&mut self) -> Result<(), ArgsError> {
        if let TimingModel::Roofline(r) = &self.timing_model {
            let model = crate::perf::roofline::Roofline::new(r).map_err(|e| ArgsError(format!("engine.timing_model.{e}")))?;
            if self.num_gpu_blocks.is_none() {
                let blocks = model.num_gpu_blocks(self.block_size());
                if blocks == 0 {
                    let room = match crate::perf::roofline::smallest_tp_with_kv_room(r) {
                        Some(tp) => format!("; the smallest tp that leaves room for the KV cache is {tp}"),
                        None => String::new(),
                    };
                    return Err(ArgsError(format!(
                        "engine.num_gpu_blocks: the model's weights ({:.1} GB) leave no GPU memory for the KV cache at tp {} ({} × {:.1} GB usable){room}",
                        model.weight_bytes() / 1e9,
                        r.tp,
                        r.tp,
                        model.gpu.hbm_gb * r.gpu_memory_utilization,
                    )));
                }
                self.num_gpu_blocks = Some(blocks);
            }
            if self.kv_bytes_per_token.is_none() {
                self.kv_bytes_per_token = Some(model.kv_bytes_per_token());
            }
        }
        // A measured-kernel model's pool comes from its memory model, once its data is loaded.
        if self.timing_model.ais().is_none() {
            self.num_gpu_blocks.get_or_insert(DEFAULT_NUM_GPU_BLOCKS);
        }
        Ok(())
    }

    /// A copy with what the user left unset filled in (see [`EngineArgs::fill_unset`]): the
    /// arguments a scenario reports.
    pub fn resolved(&self) -> Result<EngineArgs, ArgsError> {
        let mut a = self.clone();
        a.fill_unset()?;
        Ok(a)
    }

    /// The arguments an engine runs with, produced once per pool: unset values derived
    /// ([`EngineArgs::fill_unset`]), the backend's defaults written into the fields whose
    /// 0 or absence means "default" (`block_size`, `num_gpu_blocks`), and the whole checked.
    pub fn resolve(&self) -> Result<ResolvedArgs, ArgsError> {
        let mut a = self.clone();
        a.fill_unset()?;
        a.block_size = a.block_size();
        a.num_gpu_blocks = Some(a.num_gpu_blocks());
        a.validate()?;
        Ok(ResolvedArgs(a))
    }

    /// KV blocks per data-parallel rank: the value set, else Dynamo's default. With a
    /// roofline timing model, call it on resolved arguments (unresolved, the roofline's
    /// derivation has not happened yet).
    pub fn num_gpu_blocks(&self) -> u32 {
        self.num_gpu_blocks.unwrap_or(DEFAULT_NUM_GPU_BLOCKS)
    }

    /// The block size after defaults: vLLM 64, SGLang 1, TRT-LLM 32.
    pub fn block_size(&self) -> u32 {
        match (self.block_size, self.backend) {
            (0, Backend::Vllm) => 64,
            (0, Backend::Sglang) => 1,
            (0, Backend::Trtllm) => 32,
            (b, _) => b,
        }
    }

    /// The NPZ profile this engine is timed by, if any (relative paths are the caller's to
    /// resolve).
    pub fn profile_path(&self) -> Option<&str> {
        match &self.timing_model {
            TimingModel::External { config, .. } => config.get("path").and_then(|p| p.as_str()),
            _ => self.planner_profile_data.as_deref(),
        }
    }

    /// The per-pass encoder budget, in image tokens (see `max_num_encoder_input_tokens`).
    pub fn encoder_budget(&self) -> u32 {
        self.max_num_encoder_input_tokens.or(self.max_num_batched_tokens).unwrap_or(DEFAULT_ENCODER_TOKENS)
    }

    /// The encoder cache's capacity, in image tokens (see `encoder_cache_size`).
    pub fn encoder_cache_tokens(&self) -> u32 {
        self.encoder_cache_size.unwrap_or_else(|| self.encoder_budget())
    }

    pub fn sglang(&self) -> SglangArgs {
        self.sglang.clone().unwrap_or_default()
    }

    pub fn validate(&self) -> Result<(), ArgsError> {
        let err = |m: &str| Err(ArgsError(m.to_string()));
        if self.num_gpu_blocks == Some(0) {
            return err("engine.num_gpu_blocks must be positive");
        }
        for (name, v) in [("speedup_ratio", self.speedup_ratio), ("decode_speedup_ratio", self.decode_speedup_ratio)] {
            if !v.is_finite() || v < 0.0 {
                return Err(ArgsError(format!("engine.{name} must be finite and non-negative")));
            }
        }
        if self.max_num_seqs == Some(0) {
            return err("engine.max_num_seqs must be at least 1");
        }
        if self.max_num_batched_tokens == Some(0) {
            return err("engine.max_num_batched_tokens must be at least 1");
        }
        if self.max_model_len == Some(0) {
            return err("engine.max_model_len must be at least 1");
        }
        if self.max_model_len.is_some() && self.backend == Backend::Sglang {
            return err("engine.max_model_len is only supported by the vllm and trtllm backends");
        }
        if let Some(bw) = self.kv_transfer_bandwidth
            && (!bw.is_finite() || bw < 0.0)
        {
            return err("engine.kv_transfer_bandwidth must be finite and non-negative");
        }
        if let TimingModel::Fixed { prefill_ms, decode_ms } = self.timing_model
            && !(prefill_ms.is_finite() && prefill_ms >= 0.0 && decode_ms.is_finite() && decode_ms >= 0.0)
        {
            return err("engine.timing_model: prefill_ms and decode_ms must be finite and non-negative");
        }
        if let TimingModel::External { provider, config } = &self.timing_model
            && provider == "ais"
        {
            let m = config.as_object().ok_or_else(|| ArgsError("engine.timing_model.config: expected an object".into()))?;
            let a = crate::perf::ais::AisArgs::from_map(m).map_err(|e| ArgsError(format!("engine.timing_model.config.{e}")))?;
            a.validate().map_err(|e| ArgsError(format!("engine.timing_model.config.{e}")))?;
        } else if let TimingModel::External { provider, config } = &self.timing_model {
            if provider != "dynamo_profile" {
                return Err(ArgsError(format!(
                    "engine.timing_model.provider: unknown provider `{provider}`, expected `dynamo_profile` or `ais`"
                )));
            }
            if !config.get("path").is_some_and(|p| p.is_string()) {
                return err("engine.timing_model.config.path: a dynamo_profile model needs the path of its NPZ profile");
            }
        }
        if self.kv_manager == KvManager::Kvbm && self.backend == Backend::Sglang {
            // SGLang's pages live in its radix cache, which has its own LRU eviction.
            return err("engine.kv_manager: \"kvbm\" backs the vllm backend; sglang uses its radix cache");
        }
        if self.eviction_backend != EvictionBackend::Lineage && self.kv_manager != KvManager::Kvbm {
            return err("engine.eviction_backend: only the kvbm manager has eviction backends");
        }
        if let TimingModel::Roofline(r) = &self.timing_model {
            crate::perf::roofline::Roofline::new(r).map_err(|e| ArgsError(format!("engine.timing_model.{e}")))?;
        }
        if let TimingModel::Ais(a) = &self.timing_model {
            let a = crate::perf::ais::AisArgs::from_map(a).map_err(|e| ArgsError(format!("engine.timing_model.{e}")))?;
            a.validate().map_err(|e| ArgsError(format!("engine.timing_model.{e}")))?;
        }
        if let Some(sg) = &self.sglang {
            if self.backend != Backend::Sglang {
                return err("engine.sglang is only valid with backend \"sglang\"");
            }
            let pos = [
                ("max_prefill_tokens", sg.max_prefill_tokens),
                ("chunked_prefill_size", sg.chunked_prefill_size),
                ("clip_max_new_tokens", sg.clip_max_new_tokens),
            ];
            for (name, v) in pos {
                if v == 0 {
                    return Err(ArgsError(format!("engine.sglang.{name} must be at least 1")));
                }
            }
            if !(sg.schedule_conservativeness.is_finite() && sg.schedule_conservativeness >= 0.0) {
                return err("engine.sglang.schedule_conservativeness must be finite and non-negative");
            }
            if sg.chunked_prefill_size % self.block_size() != 0 {
                return err("engine.sglang.chunked_prefill_size must be a multiple of block_size");
            }
        }
        for (name, v) in
            [("max_num_encoder_input_tokens", self.max_num_encoder_input_tokens), ("encoder_cache_size", self.encoder_cache_size)]
        {
            if v == Some(0) {
                return Err(ArgsError(format!("engine.{name} must be at least 1")));
            }
        }
        if let Some(ms) = self.encoder_ms_per_token
            && !(ms.is_finite() && ms >= 0.0)
        {
            return err("engine.encoder_ms_per_token must be finite and non-negative");
        }
        if self.aic_nextn.is_some() {
            return err("engine.aic_nextn: MTP draft tokens are not modelled yet");
        }
        if self.aic_nextn_accept_rates.is_some() {
            return err("engine.aic_nextn_accept_rates: needs aic_nextn (MTP is not modelled yet)");
        }
        self.validate_offload()?;
        if self.trtllm.is_some() && self.backend != Backend::Trtllm {
            return err("engine.trtllm is only valid with backend \"trtllm\"");
        }
        if self.backend == Backend::Trtllm {
            if self.block_size() < 2 {
                return err("engine.block_size: vLLM/TRT-LLM block_size must be at least two");
            }
            if self.worker_type != WorkerType::Aggregated {
                return err(
                    "engine.worker_type: servesim runs backend \"trtllm\" aggregated only (no prefill or decode workers); use vllm or sglang for disaggregated serving",
                );
            }
        }
        Ok(())
    }

    /// The offload tiers' checks, in the reference's words (before the backend is refused, so
    /// a TRT-LLM engine with offload hears about the offload, as with the reference).
    fn validate_offload(&self) -> Result<(), ArgsError> {
        let err = |m: &str| Err(ArgsError(m.to_string()));
        if let Some(g3) = &self.g3_offload {
            if self.native_host_offload.is_none() {
                return err("engine.g3_offload requires native_host_offload");
            }
            g3.validate().map_err(ArgsError)?;
            if self.worker_type != WorkerType::Aggregated {
                return err("engine.g3_offload is supported only for worker_type=aggregated");
            }
        }
        let Some(host) = &self.native_host_offload else { return Ok(()) };
        if self.backend != Backend::Vllm {
            return err("engine.native_host_offload is supported only for backend=vllm");
        }
        if !self.enable_prefix_caching {
            return err("engine.native_host_offload requires enable_prefix_caching=true");
        }
        if self.kv_cache_bytes_per_token.is_none_or(|b| b == 0) {
            return err("engine.native_host_offload requires kv_cache_bytes_per_token to derive the physical host block size");
        }
        host.validate().map_err(ArgsError)?;
        if self.kv_manager != KvManager::Native {
            // The tiers sit beside the reference's block pool; the kvbm manager has no
            // counterpart in the reference.
            return err("engine.native_host_offload needs kv_manager \"native\"");
        }
        if self.worker_type != WorkerType::Aggregated {
            return err("engine.native_host_offload: servesim supports offload only for worker_type=aggregated");
        }
        Ok(())
    }

    /// Bytes one offloaded block moves (block size × `kv_cache_bytes_per_token`).
    pub fn offload_block_bytes(&self) -> u64 {
        self.block_size() as u64 * self.kv_cache_bytes_per_token.unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_follow_dynamo() {
        let a = EngineArgs::default();
        assert_eq!(a.block_size(), 64);
        assert_eq!((a.num_gpu_blocks, a.num_gpu_blocks()), (None, 16384), "unset until resolved: Dynamo's default");
        assert_eq!(a.max_num_seqs, Some(256));
        assert_eq!(a.max_num_batched_tokens, Some(8192));
        assert!(a.enable_prefix_caching && a.enable_chunked_prefill);
        assert_eq!(a.preemption_mode, PreemptionMode::Lifo);
        let sg = EngineArgs::from_json(&json!({"backend": "sglang"})).unwrap();
        assert_eq!(sg.block_size(), 1);
    }

    #[test]
    fn unknown_fields_are_named() {
        let e = LaunchConfig::from_json(&json!({"engine": {"bogus": 1}})).unwrap_err();
        assert!(e.0.starts_with("engine.bogus: unknown field `bogus`"), "{e}");
        let e = LaunchConfig::from_json(&json!({"engine": {"sglang": {"page_size": 4}, "backend": "sglang"}})).unwrap_err();
        assert!(e.0.contains("engine.sglang.page_size"), "{e}");
        let e = LaunchConfig::from_json(&json!({"engine": {"preemption_mode": "LIFO"}})).unwrap_err();
        assert!(e.0.contains("engine.preemption_mode") && e.0.contains("unknown variant `LIFO`"), "{e}");
        let e = LaunchConfig::from_json(&json!({"engine": {"block_size": "16"}})).unwrap_err();
        assert!(e.0.contains("engine.block_size"), "{e}");
    }

    #[test]
    fn trtllm_follows_dynamo() {
        let a = EngineArgs::from_json(&json!({"backend": "trtllm"})).unwrap();
        assert_eq!(a.block_size(), 32);
        let a =
            EngineArgs::from_json(&json!({"backend": "trtllm", "trtllm": {"capacity_scheduler_policy": "guaranteed_no_evict"}})).unwrap();
        assert_eq!(a.trtllm.unwrap().capacity_scheduler_policy, CapacitySchedulerPolicy::GuaranteedNoEvict);
        // The reference's own words.
        let e =
            LaunchConfig::from_json(&json!({"engine": {"backend": "trtllm", "trtllm": {"capacity_scheduler_policy": "max_utilization"}}}))
                .unwrap_err();
        assert_eq!(e.0, "engine.trtllm.capacity_scheduler_policy: unknown variant `max_utilization`, expected `guaranteed_no_evict`");
        let e = LaunchConfig::from_json(&json!({"engine": {"backend": "trtllm", "trtllm": {"bogus": 1}}})).unwrap_err();
        assert_eq!(e.0, "engine.trtllm.bogus: unknown field `bogus`, expected `capacity_scheduler_policy`");
        let e = EngineArgs::from_json(&json!({"trtllm": {}})).unwrap_err();
        assert!(e.0.contains("engine.trtllm"), "{e}");
        let e = EngineArgs::from_json(&json!({"backend": "trtllm", "worker_type": "decode"})).unwrap_err();
        assert!(e.0.starts_with("engine.worker_type") && e.0.contains("aggregated only"), "{e}");
        let e = EngineArgs::from_json(&json!({"backend": "trtllm", "block_size": 1})).unwrap_err();
        assert!(e.0.contains("at least two"), "{e}");
        assert!(EngineArgs::from_json(&json!({"backend": "trtllm", "max_model_len": 128})).is_ok());
        assert!(EngineArgs::from_json(&json!({"backend": "sglang", "max_model_len": 128})).is_err());
    }

    #[test]
    fn null_means_unbounded_and_ranges_are_checked() {
        let a = EngineArgs::from_json(&json!({"max_num_seqs": null})).unwrap();
        assert_eq!(a.max_num_seqs, None);
        assert!(EngineArgs::from_json(&json!({"num_gpu_blocks": 0})).is_err());
        assert!(EngineArgs::from_json(&json!({"speedup_ratio": -1.0})).is_err());
        assert!(EngineArgs::from_json(&json!({"kv_bytes_per_token": 1.5})).is_err());
        let a = EngineArgs::from_json(&json!({"kv_transfer_bytes_per_token": 131072})).unwrap();
        assert_eq!(a.kv_bytes_per_token, Some(131072));
        // Nested fields have defaults too.
        let a = EngineArgs::from_json(&json!({"timing_model": {"type": "fixed", "decode_ms": 5}})).unwrap();
        assert_eq!(a.timing_model, TimingModel::Fixed { prefill_ms: 20.0, decode_ms: 5.0 });
        let e = EngineArgs::from_json(&json!({"timing_model": {"type": "fixed", "prefill_ms": -1}})).unwrap_err();
        assert!(e.0.contains("prefill_ms"), "{e}");
        let a = EngineArgs::from_json(&json!({"num_gpu_blocks": null})).unwrap();
        assert_eq!(a.num_gpu_blocks, Some(16384), "null is unset: resolved to the default");
    }

    #[test]
    fn kv_manager_choices_are_checked() {
        let a = EngineArgs::from_json(&json!({"kv_manager": "native"})).unwrap();
        assert_eq!((a.kv_manager, a.eviction_backend), (KvManager::Native, EvictionBackend::Lineage));
        let a = EngineArgs::from_json(&json!({"kv_manager": "kvbm", "eviction_backend": "multi_lru"})).unwrap();
        assert_eq!((a.kv_manager, a.eviction_backend), (KvManager::Kvbm, EvictionBackend::MultiLru));
        let e = EngineArgs::from_json(&json!({"kv_manager": "kvbm", "backend": "sglang"})).unwrap_err();
        assert!(e.0.contains("engine.kv_manager"), "{e}");
        let e = EngineArgs::from_json(&json!({"eviction_backend": "multi_lru"})).unwrap_err();
        assert!(e.0.contains("engine.eviction_backend"), "{e}");
        let e = EngineArgs::from_json(&json!({"eviction_backend": "lfu"})).unwrap_err();
        assert!(e.0.contains("engine.eviction_backend") && e.0.contains("unknown variant"), "{e}");
    }

    #[test]
    fn roofline_derives_the_pool_and_kv_size() {
        let a =
            EngineArgs::from_json(&json!({"block_size": 16, "timing_model": {"type": "roofline", "model": "llama-3.1-8b", "gpu": "h100"}}))
                .unwrap();
        assert!((26_000..27_000).contains(&a.num_gpu_blocks()), "{}", a.num_gpu_blocks());
        assert_eq!(a.kv_bytes_per_token, Some(131_072));
        let a = EngineArgs::from_json(
            &json!({"num_gpu_blocks": 100, "timing_model": {"type": "roofline", "model": "llama-3.1-8b", "gpu": "h100"}}),
        )
        .unwrap();
        assert_eq!(a.num_gpu_blocks(), 100, "given values win");
        let e = EngineArgs::from_json(&json!({"timing_model": {"type": "roofline", "model": "llama-3.1-70b", "gpu": "l40s"}})).unwrap_err();
        assert!(e.0.contains("engine.num_gpu_blocks") && e.0.contains("the smallest tp that leaves room for the KV cache is 4"), "{e}");
        // Resolving fills only what is unset, so an unresolved copy re-derives for new settings.
        let mut h100: EngineArgs =
            serde_json::from_value(json!({"timing_model": {"type": "roofline", "model": "llama-3.1-70b", "gpu": "h100", "tp": 4}}))
                .unwrap();
        let mut h200 = h100.clone();
        h200.timing_model = serde_json::from_value(json!({"type": "roofline", "model": "llama-3.1-70b", "gpu": "h200", "tp": 4})).unwrap();
        assert_eq!(h100.resolved().unwrap().num_gpu_blocks(), 7004);
        assert_eq!(h200.resolved().unwrap().num_gpu_blocks(), 17475);
        h100.fill_unset().unwrap();
        h200.fill_unset().unwrap();
        assert_eq!((h100.kv_bytes_per_token, h200.kv_bytes_per_token), (Some(327_680), Some(327_680)));
        let e = EngineArgs::from_json(&json!({"timing_model": {"type": "roofline", "model": "nope", "gpu": "h100"}})).unwrap_err();
        assert!(e.0.contains("engine.timing_model.model: unknown preset `nope`"), "{e}");
        let e = LaunchConfig::from_json(
            &json!({"engine": {"timing_model": {"type": "roofline", "model": "llama-3.1-8b", "gpu": "h100", "bogus": 1}}}),
        )
        .unwrap_err();
        assert!(e.0.contains("engine.timing_model"), "{e}");
    }

    #[test]
    fn offload_tiers_keep_the_references_names_defaults_and_messages() {
        let ok = |v: serde_json::Value| EngineArgs::from_json(&v).unwrap();
        let bad = |v: serde_json::Value| EngineArgs::from_json(&v).unwrap_err().0;
        let host = json!({"num_host_blocks": 10});
        let a = ok(json!({"kv_cache_bytes_per_token": 1024, "native_host_offload": host}));
        let h = a.native_host_offload.unwrap();
        assert_eq!(
            (h.scope, h.d2h_bandwidth_gbps, h.h2d_bandwidth_gbps, h.latency_to_first_byte_ms),
            (G2Scope::DpRankLocal, 32.0, 32.0, 0.0)
        );
        assert_eq!((h.shared_d2h_bandwidth_gbps, h.shared_h2d_bandwidth_gbps), (80.0, 80.0));
        let a = ok(
            json!({"kv_cache_bytes_per_token": 1, "native_host_offload": host, "g3_offload": {"scope": "worker_local", "num_g3_blocks": 5}}),
        );
        let g3 = a.g3_offload.unwrap();
        assert_eq!((g3.latency_to_first_byte_ms, g3.read_bandwidth_gbps, g3.write_bandwidth_gbps), (0.1, 10.0, 10.0));
        assert!(bad(json!({"native_host_offload": host})).contains("requires kv_cache_bytes_per_token"));
        assert!(bad(json!({"kv_bytes_per_token": 8, "native_host_offload": host})).contains("requires kv_cache_bytes_per_token"));
        let with = |extra: serde_json::Value| {
            let mut v = json!({"kv_cache_bytes_per_token": 8, "native_host_offload": host});
            v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
            v
        };
        assert!(bad(with(json!({"backend": "sglang"}))).contains("native_host_offload is supported only for backend=vllm"));
        assert!(bad(with(json!({"backend": "trtllm"}))).contains("native_host_offload is supported only for backend=vllm"));
        assert!(bad(with(json!({"enable_prefix_caching": false}))).contains("requires enable_prefix_caching=true"));
        assert!(bad(with(json!({"native_host_offload": {"num_host_blocks": 0}}))).contains("num_host_blocks must be positive"));
        assert!(bad(with(json!({"native_host_offload": {}}))).contains("missing field `num_host_blocks`"));
        let e = bad(with(json!({"native_host_offload": {"num_host_blocks": 1, "h2d_bandwidth_gbps": -1.0}})));
        assert!(e.contains("h2d_bandwidth_gbps must be finite and non-negative"), "{e}");
        let e = bad(with(json!({"native_host_offload": {"num_host_blocks": 1, "bogus": 1}})));
        assert!(e.contains("unknown field `bogus`, expected one of `scope`, `num_host_blocks`, `d2h_bandwidth_gbps`"), "{e}");
        let e = bad(with(json!({"native_host_offload": {"num_host_blocks": 1, "scope": "foo"}})));
        assert!(e.contains("unknown host_offload.scope `foo`; expected `dp_rank_local` or `cluster_shared`"), "{e}");
        let e = bad(with(json!({"native_host_offload": {"num_host_blocks": 1, "scope": "worker_local"}})));
        assert!(e.contains("is a G3 scope"), "{e}");
        let e = bad(with(json!({"native_host_offload": {"num_host_blocks": 1, "scope": "cluster_shared"}})));
        assert!(e.contains("requires a nonempty kv_layout_id"), "{e}");
        assert!(
            bad(json!({"g3_offload": {"scope": "worker_local", "num_g3_blocks": 1}})).contains("g3_offload requires native_host_offload")
        );
        assert!(bad(with(json!({"g3_offload": {"scope": "worker_local", "num_g3_blocks": 0}}))).contains("num_g3_blocks must be positive"));
        assert!(bad(with(json!({"g3_offload": {"num_g3_blocks": 1}}))).contains("missing field `scope`"));
        let e = bad(with(json!({"g3_offload": {"scope": "dp_rank_local", "num_g3_blocks": 1}})));
        assert!(e.contains("unknown variant `dp_rank_local`, expected `worker_local` or `cluster_shared`"), "{e}");
        let e = bad(with(json!({"g3_offload": {"scope": "worker_local", "num_g3_blocks": 1, "read_bandwidth_gbps": -2.0}})));
        assert!(e.contains("g3_offload timing must be finite and non-negative"), "{e}");
        let e = bad(with(json!({"worker_type": "prefill", "g3_offload": {"scope": "worker_local", "num_g3_blocks": 1}})));
        assert!(e.contains("g3_offload is supported only for worker_type=aggregated"), "{e}");
        let launch = json!({"dp_size": 2, "engine": with(json!({"g3_offload": {"scope": "worker_local", "num_g3_blocks": 1}}))});
        assert!(LaunchConfig::from_json(&launch).unwrap_err().0.contains("g3_offload supports only dp_size=1"));
    }

    #[test]
    fn profiles_are_named_two_ways() {
        let a = EngineArgs::from_json(
            &json!({"timing_model": {"type": "external", "provider": "dynamo_profile", "config": {"path": "p.npz"}}}),
        )
        .unwrap();
        assert_eq!(a.profile_path(), Some("p.npz"));
        let a = EngineArgs::from_json(&json!({"planner_profile_data": "q.npz"})).unwrap();
        assert_eq!(a.profile_path(), Some("q.npz"));
        let e = EngineArgs::from_json(&json!({"timing_model": {"type": "external", "provider": "aic", "config": {}}})).unwrap_err();
        assert!(e.0.contains("engine.timing_model.provider") && e.0.contains("`aic`"), "{e}");
        let e = EngineArgs::from_json(&json!({"timing_model": {"type": "external", "provider": "dynamo_profile"}})).unwrap_err();
        assert!(e.0.contains("engine.timing_model.config.path"), "{e}");
        // Unloaded, the engine refuses to guess a timing.
        let e = crate::perf::PassTimer::from_args(&a, None).unwrap_err();
        assert!(e.0.contains("q.npz") && e.0.contains("not loaded"), "{e}");
    }
}
