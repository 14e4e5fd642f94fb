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
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum TimingModel {
    /// Dynamo's default polynomial fitted to H200 sweeps.
    Polynomial,
    /// A constant time per prefill and per decode step.
    Fixed { prefill_ms: f64, decode_ms: f64 },
    /// A measured profile (`provider: "dynamo_profile"`, `config.path` to an NPZ file).
    External {
        provider: String,
        #[serde(default)]
        config: serde_json::Value,
    },
    /// servesim's roofline from a model's shape and a GPU's figures.
    Roofline(crate::perf::roofline::RooflineArgs),
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

/// `engine` section of the launch configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineArgs {
    #[serde(default = "default_backend")]
    pub backend: Backend,
    /// KV blocks per data-parallel rank.
    #[serde(default = "default_num_gpu_blocks")]
    pub num_gpu_blocks: u32,
    /// Tokens per KV block; 0 or absent means the backend's default (vLLM 64, SGLang 1).
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
}

fn default_backend() -> Backend {
    Backend::Vllm
}
fn default_num_gpu_blocks() -> u32 {
    16384
}
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
fn nullable<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    Option::<u32>::deserialize(d)
}

impl Default for EngineArgs {
    fn default() -> Self {
        serde_json::from_str("{}").expect("defaults deserialize")
    }
}

impl Default for LaunchConfig {
    fn default() -> Self {
        LaunchConfig { engine: EngineArgs::default(), dp_size: 1, tensor_parallel_size: None }
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
        cfg.engine.derive_unset(value.get("engine").unwrap_or(&serde_json::Value::Null))?;
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
        let tp = match (&self.tensor_parallel_size, &self.engine.timing_model) {
            (Some(tp), _) => *tp,
            (None, TimingModel::Roofline(r)) => r.tp,
            (None, _) => 1,
        };
        tp * self.dp_size
    }
}

impl EngineArgs {
    /// Parses and validates the `engine` object alone.
    pub fn from_json(value: &serde_json::Value) -> Result<Self, ArgsError> {
        let mut args: EngineArgs =
            serde_path_to_error::deserialize(value).map_err(|e| ArgsError(format!("engine.{}: {}", e.path(), e.inner())))?;
        args.derive_unset(value)?;
        args.validate()?;
        Ok(args)
    }

    /// Fills what the timing model can derive and the user left out: with a roofline, the
    /// KV pool (GPU memory × utilisation − weights) and the KV bytes per token.
    /// `raw` is the engine object as written, to tell what the user set.
    pub fn derive_unset(&mut self, raw: &serde_json::Value) -> Result<(), ArgsError> {
        if let TimingModel::Roofline(r) = &self.timing_model {
            let model = crate::perf::roofline::Roofline::new(r).map_err(|e| ArgsError(format!("engine.timing_model.{e}")))?;
            if raw.get("num_gpu_blocks").is_none() {
                self.num_gpu_blocks = model.num_gpu_blocks(self.block_size());
                if self.num_gpu_blocks == 0 {
                    return Err(ArgsError("engine.num_gpu_blocks: the model's weights leave no GPU memory for the KV cache".into()));
                }
            }
            if self.kv_bytes_per_token.is_none() {
                self.kv_bytes_per_token = Some(model.kv_bytes_per_token());
            }
        }
        Ok(())
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

    pub fn sglang(&self) -> SglangArgs {
        self.sglang.clone().unwrap_or_default()
    }

    pub fn validate(&self) -> Result<(), ArgsError> {
        let err = |m: &str| Err(ArgsError(m.to_string()));
        if self.num_gpu_blocks == 0 {
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
        if self.max_model_len.is_some() && self.backend != Backend::Vllm {
            return err("engine.max_model_len is only supported by the vllm backend");
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
        if let TimingModel::External { provider, config } = &self.timing_model {
            if provider != "dynamo_profile" {
                return Err(ArgsError(format!("engine.timing_model.provider: unknown provider `{provider}`, expected `dynamo_profile`")));
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
        self.validate_offload()?;
        if self.backend == Backend::Trtllm {
            return err("engine.backend \"trtllm\" is not supported by servesim");
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
        assert_eq!(a.num_gpu_blocks, 16384);
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
    fn null_means_unbounded_and_ranges_are_checked() {
        let a = EngineArgs::from_json(&json!({"max_num_seqs": null})).unwrap();
        assert_eq!(a.max_num_seqs, None);
        assert!(EngineArgs::from_json(&json!({"num_gpu_blocks": 0})).is_err());
        assert!(EngineArgs::from_json(&json!({"speedup_ratio": -1.0})).is_err());
        assert!(EngineArgs::from_json(&json!({"kv_bytes_per_token": 1.5})).is_err());
        let a = EngineArgs::from_json(&json!({"kv_transfer_bytes_per_token": 131072})).unwrap();
        assert_eq!(a.kv_bytes_per_token, Some(131072));
        let e = EngineArgs::from_json(&json!({"timing_model": {"type": "fixed"}})).unwrap_err();
        assert!(e.0.contains("prefill_ms"), "{e}");
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
        assert!((26_000..27_000).contains(&a.num_gpu_blocks), "{}", a.num_gpu_blocks);
        assert_eq!(a.kv_bytes_per_token, Some(131_072));
        let a = EngineArgs::from_json(
            &json!({"num_gpu_blocks": 100, "timing_model": {"type": "roofline", "model": "llama-3.1-8b", "gpu": "h100"}}),
        )
        .unwrap();
        assert_eq!(a.num_gpu_blocks, 100, "given values win");
        let e = EngineArgs::from_json(&json!({"timing_model": {"type": "roofline", "model": "llama-3.1-70b", "gpu": "l40s"}})).unwrap_err();
        assert!(e.0.contains("engine.num_gpu_blocks"), "{e}");
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
