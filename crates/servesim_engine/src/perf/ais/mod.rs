//! Measured-kernel timing (the reference's AIS model): each pass costs the sum of its ops'
//! latencies, read from AIConfigurator's tables of GPU kernels measured on real hardware for
//! one GPU × framework × version.
//!
//! - [`data`]: the data file (servesim's own format) and its tables;
//! - [`interp`]: reading a table between and beyond its points;
//! - [`ops`]: the ops of a pass and their costs; [`model`]: a model's shape and its ops;
//! - [`memory`]: the KV pool AIConfigurator's memory model leaves, power and energy.
//!
//! A pass's prefill part is priced as `prefill(n, ⌊Σ(prefix+new)/n⌋, ⌊Σprefix/n⌋)` and its
//! decode part as one generation step at the floor-mean context, as the reference does; a
//! pass time is a pure function of those numbers, memoised per model.

pub mod data;
pub mod energy;
pub mod interp;
pub mod memory;
pub mod mla;
pub mod model;
pub mod moe;
pub mod nearest;
pub mod ops;
pub mod quant;
pub mod sorted;

use std::sync::{Arc, Mutex};

use rustc_hash::FxHashMap;
use serde_json::Value;

use crate::args::Backend;
use data::KernelData;
use energy::PowerEvidence;
use model::{Dtypes, Graph, ModelShape};
use ops::{Op, Shape};
use quant::{FmhaQuant, GemmQuant, KvQuant};
use sorted::SortedMap;

/// The timing model's arguments (`engine.timing_model = {"type": "ais", ...}`; the
/// reference's `{"type": "external", "provider": "ais", "config": {...}}` reads into the same).
#[derive(Clone, Debug, PartialEq)]
pub struct AisArgs {
    /// A bundled model's name (`meta-llama/Meta-Llama-3.1-70B`) or a `config.json` object.
    pub model: Value,
    /// AIConfigurator's system name: `h200_sxm`, `b200_sxm`, `gb200`...
    pub system: String,
    /// The framework whose kernels were measured (defaults to the engine's scheduler).
    pub backend: Option<Backend>,
    /// The data's framework version (default: the newest the data has).
    pub backend_version: Option<String>,
    pub tp: u32,
    pub pp: u32,
    /// Attention data-parallel ranks one engine aggregates (`attention_dp_size`): a pass is
    /// priced as one rank's with `ceil(batch / attention_dp)` requests.
    pub attention_dp: u32,
    /// The experts' tensor- and expert-parallel sizes (`moe_tp_size`, `moe_ep_size`); with
    /// either set, `tp × attention_dp = moe_tp × moe_ep` must hold.
    pub moe_tp: Option<u32>,
    pub moe_ep: Option<u32>,
    /// The experts' GEMM mode (`moe_quant_mode`, the reference's `moe_dtype`).
    pub moe_quant_mode: Option<String>,
    pub gemm_quant_mode: Option<String>,
    pub kvcache_quant_mode: Option<String>,
    pub fmha_quant_mode: Option<String>,
    /// All-reduce payload dtype; only `half` is measured.
    pub comm_quant_mode: Option<String>,
    /// The reference's role field: the op graph of a dense model does not depend on it.
    pub worker_type: Option<String>,
    /// Reference fields that must stay at their neutral value here (MoE, attention DP, MTP,
    /// context parallelism...): accepted only as such, so a config written for the reference
    /// either times the same or says why not.
    pub neutral: SortedMap<String, Value>,
}

impl AisArgs {
    /// Reads the arguments from their JSON object (the reference's aliases too: `tp_size`,
    /// `pp_size`, `gemm_dtype`, `kv_cache_dtype`, `fmha_dtype`, `comm_dtype`). Errors name the
    /// field.
    pub fn from_map(m: &serde_json::Map<String, Value>) -> Result<AisArgs, String> {
        let mut a = AisArgs {
            model: Value::Null,
            system: String::new(),
            backend: None,
            backend_version: None,
            tp: 1,
            pp: 1,
            attention_dp: 1,
            moe_tp: None,
            moe_ep: None,
            moe_quant_mode: None,
            gemm_quant_mode: None,
            kvcache_quant_mode: None,
            fmha_quant_mode: None,
            comm_quant_mode: None,
            worker_type: None,
            neutral: SortedMap::new(),
        };
        let text = |k: &str, v: &Value| v.as_str().map(str::to_string).ok_or_else(|| format!("{k}: expected a string"));
        let opt_text = |k: &str, v: &Value| if v.is_null() { Ok(None) } else { text(k, v).map(Some) };
        let count = |k: &str, v: &Value| {
            v.as_u64().filter(|&n| n <= u32::MAX as u64).map(|n| n as u32).ok_or_else(|| format!("{k}: expected a non-negative integer"))
        };
        let mut have_model = false;
        let mut have_system = false;
        let opt_count = |k: &str, v: &Value| if v.is_null() { Ok(None) } else { count(k, v).map(Some) };
        for (k, v) in m {
            // The reference's engine-argument spellings (`aic_moe_ep_size`...) read the same.
            match k.strip_prefix("aic_").unwrap_or(k) {
                "attention_dp" | "attention_dp_size" => a.attention_dp = count(k, v)?,
                "moe_tp_size" => a.moe_tp = opt_count(k, v)?,
                "moe_ep_size" => a.moe_ep = opt_count(k, v)?,
                "moe_quant_mode" | "moe_dtype" => a.moe_quant_mode = opt_text(k, v)?,
                _ => {}
            }
            match k.strip_prefix("aic_").unwrap_or(k) {
                "attention_dp" | "attention_dp_size" | "moe_tp_size" | "moe_ep_size" | "moe_quant_mode" | "moe_dtype" => {}
                "model" | "model_path" => {
                    a.model = v.clone();
                    have_model = true;
                }
                "system" => {
                    a.system = text(k, v)?;
                    have_system = true;
                }
                "backend" => {
                    a.backend = match opt_text(k, v)?.as_deref() {
                        None => None,
                        Some("vllm") => Some(Backend::Vllm),
                        Some("sglang") => Some(Backend::Sglang),
                        Some("trtllm") => Some(Backend::Trtllm),
                        Some(o) => return Err(format!("backend: unknown variant `{o}`, expected one of `vllm`, `sglang`, `trtllm`")),
                    }
                }
                "backend_version" => a.backend_version = opt_text(k, v)?,
                "tp" | "tp_size" => a.tp = count(k, v)?,
                "pp" | "pp_size" => a.pp = count(k, v)?,
                "gemm_quant_mode" | "gemm_dtype" => a.gemm_quant_mode = opt_text(k, v)?,
                "kvcache_quant_mode" | "kv_cache_dtype" => a.kvcache_quant_mode = opt_text(k, v)?,
                "fmha_quant_mode" | "fmha_dtype" => a.fmha_quant_mode = opt_text(k, v)?,
                "comm_quant_mode" | "comm_dtype" => a.comm_quant_mode = opt_text(k, v)?,
                "worker_type" => a.worker_type = opt_text(k, v)?,
                _ => {
                    a.neutral.insert(k.clone(), v.clone());
                }
            }
        }
        if !have_model {
            return Err("model: missing field".into());
        }
        if !have_system {
            return Err("system: missing field".into());
        }
        Ok(a)
    }
}

/// Reference config fields servesim accepts at their neutral value only.
const NEUTRAL: &[(&str, &[&str])] = &[
    ("dcp", &["null", "1"]),
    ("cp_size", &["null", "1"]),
    ("nextn", &["0"]),
    ("speculation", &["null"]),
    ("kv_block_size", &["null"]),
    ("decoder_replay", &["false"]),
    ("estimation_mode", &["\"auto\"", "\"op_level\""]),
    ("forward_model", &["\"auto\"", "\"op_level\""]),
    ("database_mode", &["\"SILICON\""]),
    ("transfer_policy", &["null"]),
    ("systems_paths", &["[]"]),
    ("fallback_policy", &[]),
    ("estimator_config", &[]),
    ("attention_backend", &["null", "\"default\""]),
    ("moe_kernel_source", &["null"]),
    ("moe_backend", &["null"]),
    ("enable_eplb", &["false"]),
    ("wideep_num_slots", &["null"]),
    ("enable_shared_layer", &["null", "true"]),
    ("strict_provenance", &["false"]),
    ("fpm_profile", &["null"]),
    ("fpm_fmha_quant_mode", &["null"]),
];

impl AisArgs {
    /// Checks the fields (errors name them, under `engine.timing_model`).
    pub fn validate(&self) -> Result<(), String> {
        for (k, v) in self.neutral.iter() {
            let Some((_, ok)) = NEUTRAL.iter().find(|(n, _)| n == k) else {
                return Err(format!("{k}: unknown field"));
            };
            let text = v.to_string();
            // fallback_policy / estimator_config only tune the reference's FPM estimators.
            if !ok.is_empty() && !ok.contains(&text.as_str()) {
                return Err(format!("{k}: {text} is not modelled (servesim times dense models op by op; allowed: {})", ok.join(", ")));
            }
        }
        if self.tp == 0 || self.pp == 0 || self.attention_dp == 0 {
            return Err("tp, pp and attention_dp must be at least 1".into());
        }
        self.moe_parallelism()?;
        if let Some(q) = &self.moe_quant_mode
            && GemmQuant::parse(q).is_none()
        {
            return Err(format!("moe_quant_mode: unknown mode `{q}`"));
        }
        if let Some(c) = &self.comm_quant_mode
            && c != "half"
        {
            return Err(format!("comm_quant_mode: `{c}` is not measured (only `half`)"));
        }
        self.dtypes()?;
        match &self.model {
            Value::String(_) | Value::Object(_) => Ok(()),
            _ => Err("model: expected a bundled model's name or a config.json object".into()),
        }
    }

    fn dtypes(&self) -> Result<model::Declared, String> {
        let g = self
            .gemm_quant_mode
            .as_deref()
            .map(|n| GemmQuant::parse(n).ok_or_else(|| format!("gemm_quant_mode: unknown mode `{n}`")))
            .transpose()?;
        let k = self
            .kvcache_quant_mode
            .as_deref()
            .map(|n| KvQuant::parse(n).ok_or_else(|| format!("kvcache_quant_mode: unknown mode `{n}`")))
            .transpose()?;
        let f = self
            .fmha_quant_mode
            .as_deref()
            .map(|n| FmhaQuant::parse(n).ok_or_else(|| format!("fmha_quant_mode: unknown mode `{n}`")))
            .transpose()?;
        Ok((g, k, f))
    }

    /// The experts' (tensor, expert) parallel sizes: as given, else all of `tp ×
    /// attention_dp` as tensor parallelism (the reference's default: moe_tp = tp, ep = 1,
    /// widened by attention DP). Checks the reference's constraint
    /// `tp × attention_dp = moe_tp × moe_ep`.
    pub fn moe_parallelism(&self) -> Result<(u32, u32), String> {
        let width = self.tp * self.attention_dp;
        let (mtp, mep) = match (self.moe_tp, self.moe_ep) {
            (None, None) => (width, 1),
            (Some(t), None) => (t, (width / t.max(1)).max(1)),
            (None, Some(e)) => ((width / e.max(1)).max(1), e),
            (Some(t), Some(e)) => (t, e),
        };
        if mtp == 0 || mep == 0 || mtp * mep != width {
            return Err(format!(
                "moe_tp_size × moe_ep_size ({mtp} × {mep}) must equal tp × attention_dp ({} × {}): the experts run on the same GPUs as attention",
                self.tp, self.attention_dp
            ));
        }
        Ok((mtp, mep))
    }

    /// GPUs one engine occupies: `tp × attention_dp × pp` (= `moe_tp × moe_ep × pp`).
    pub fn gpus(&self) -> u32 {
        self.tp * self.attention_dp * self.pp
    }

    /// The framework of the data: the `backend` given, else the engine's scheduler.
    pub fn data_backend(&self, engine: Backend) -> Backend {
        self.backend.unwrap_or(engine)
    }
}

/// A model timed on one GPU × framework × version: its ops, and a memo of pass times.
#[derive(Debug)]
pub struct AisModel {
    pub data: Arc<KernelData>,
    pub shape: ModelShape,
    /// The model's name (bundled) or `custom`.
    pub model_name: String,
    pub dtypes: Dtypes,
    pub tp: u32,
    pub pp: u32,
    /// Attention data-parallel ranks the engine aggregates.
    pub attention_dp: u32,
    pub backend: Backend,
    graph: Graph,
    memo: Mutex<Memo>,
}

#[derive(Debug, Default)]
struct Memo {
    /// A pass part's milliseconds and power evidence (`energy`), by its query.
    prefill: FxHashMap<(u64, u64, u64), (f64, PowerEvidence)>,
    decode: FxHashMap<(u64, u64), (f64, PowerEvidence)>,
    /// One op's milliseconds and energy by (phase, op, what it depends on): a GEMM on its m,
    /// attention on (batch, sequence, prefix). Passes share most of their ops' inputs.
    ops: FxHashMap<OpKey, (f64, f64)>,
}

/// (context phase, op index, and the op's inputs).
type OpKey = (bool, u8, u32, u32, u32);

fn backend_name(b: Backend) -> &'static str {
    match b {
        Backend::Vllm => "vllm",
        Backend::Sglang => "sglang",
        Backend::Trtllm => "trtllm",
    }
}

impl AisModel {
    /// The model `shape` on `data`, with the arguments' parallelism and dtypes; probes one
    /// query per phase so a table the model needs and the file lacks is an error now.
    pub fn new(data: Arc<KernelData>, shape: ModelShape, model_name: String, args: &AisArgs, backend: Backend) -> Result<AisModel, String> {
        let (g, k, f) = args.dtypes()?;
        let dtypes = Dtypes::resolve(&shape, backend, g, k, f);
        let graph = if shape.moe.is_some() {
            let (moe_tp, moe_ep) = args.moe_parallelism()?;
            let parallel = model::Parallel { tp: args.tp, pp: args.pp, attention_dp: args.attention_dp, moe_tp, moe_ep };
            // The experts' mode: as set, else the checkpoint's, else bfloat16.
            let moe_quant = match &args.moe_quant_mode {
                Some(q) => GemmQuant::parse(q).ok_or_else(|| format!("moe_quant_mode: unknown mode `{q}`"))?,
                None => shape.gemm.unwrap_or(GemmQuant::Bfloat16),
            };
            let framework = match backend {
                Backend::Vllm => ops::Framework::Vllm,
                Backend::Sglang => ops::Framework::Sglang,
                Backend::Trtllm => ops::Framework::Trtllm,
            };
            Graph::moe(&shape, &parallel, dtypes, moe_quant, framework)?
        } else {
            Graph::dense(&shape, args.tp, args.pp, dtypes)?
        };
        let m = AisModel {
            data,
            shape,
            model_name,
            dtypes,
            tp: args.tp,
            pp: args.pp,
            attention_dp: args.attention_dp,
            backend,
            graph,
            memo: Mutex::new(Memo::default()),
        };
        m.try_prefill(1, 1, 0)?;
        m.try_decode(1, 1)?;
        Ok(m)
    }

    /// Where the timing comes from, for labels: `measured kernels: h200_sxm · vllm 0.24.0`.
    pub fn source(&self) -> String {
        let (system, backend, version) = self.data.identity();
        format!("measured kernels: {system} · {backend} {version}")
    }

    /// Milliseconds of the prefill part of a pass: `batch` requests whose floor-mean length
    /// after this chunk is `isl`, of which `prefix` were already in KV.
    pub fn prefill_ms(&self, batch: u64, isl: u64, prefix: u64) -> f64 {
        self.prefill_timed(batch, isl, prefix).0
    }

    /// [`AisModel::prefill_ms`] with the part's power evidence.
    pub fn prefill_timed(&self, batch: u64, isl: u64, prefix: u64) -> (f64, PowerEvidence) {
        let batch = self.rank_batch(batch);
        let mut memo = self.memo.lock().expect("memo");
        if let Some(&v) = memo.prefill.get(&(batch, isl, prefix)) {
            return v;
        }
        // The constructor probed the tables; a later miss (a shape no table anchors) costs 0.
        let v = Self::prefill_shape(batch, isl, prefix).and_then(|s| self.sum(&mut memo, true, s)).unwrap_or_default();
        memo.prefill.insert((batch, isl, prefix), v);
        v
    }

    /// Milliseconds of one decode step of `batch` requests holding `active_kv` tokens.
    pub fn decode_ms(&self, batch: u64, active_kv: u64) -> f64 {
        self.decode_timed(batch, active_kv).0
    }

    /// [`AisModel::decode_ms`] with the step's power evidence.
    pub fn decode_timed(&self, batch: u64, active_kv: u64) -> (f64, PowerEvidence) {
        let s = active_kv / batch.max(1) + 1;
        let batch = self.rank_batch(batch);
        let mut memo = self.memo.lock().expect("memo");
        if let Some(&v) = memo.decode.get(&(batch, s)) {
            return v;
        }
        let v = Self::decode_shape(batch, s).and_then(|sh| self.sum(&mut memo, false, sh)).unwrap_or_default();
        memo.decode.insert((batch, s), v);
        v
    }

    /// The batch one attention-DP rank is priced with: `ceil(batch / attention_dp)` (the
    /// reference's rule when one engine aggregates its ranks; the mean lengths are the
    /// engine's).
    pub fn rank_batch(&self, batch: u64) -> u64 {
        batch.div_ceil(self.attention_dp.max(1) as u64)
    }

    /// GPUs the engine occupies: `tp × attention_dp × pp`.
    pub fn gpus(&self) -> u32 {
        self.tp * self.attention_dp * self.pp
    }

    fn u32_of(v: u64, what: &str) -> Result<u32, String> {
        u32::try_from(v).map_err(|_| format!("{what} {v} is out of range"))
    }

    /// The prefill part, op by op (`Err` names the op no table anchors).
    pub fn try_prefill(&self, batch: u64, isl: u64, prefix: u64) -> Result<f64, String> {
        let shape = Self::prefill_shape(batch, isl, prefix)?;
        self.sum(&mut self.memo.lock().expect("memo"), true, shape).map(|v| v.0)
    }

    /// One decode step at context `s` (the token being produced counts), op by op.
    pub fn try_decode(&self, batch: u64, s: u64) -> Result<f64, String> {
        let shape = Self::decode_shape(batch, s)?;
        self.sum(&mut self.memo.lock().expect("memo"), false, shape).map(|v| v.0)
    }

    fn prefill_shape(batch: u64, isl: u64, prefix: u64) -> Result<Shape, String> {
        if prefix >= isl {
            return Err(format!("prefill: the prefix ({prefix}) must be shorter than the sequence ({isl})"));
        }
        let b = Self::u32_of(batch, "batch")?;
        let s = Self::u32_of(isl - prefix, "new tokens")?;
        let tokens = b.checked_mul(s).ok_or("prefill: too many tokens")?;
        Ok(Shape { batch: b, s, prefix: Self::u32_of(prefix, "prefix")?, tokens })
    }

    fn decode_shape(batch: u64, s: u64) -> Result<Shape, String> {
        let b = Self::u32_of(batch, "batch")?;
        Ok(Shape { batch: b, s: Self::u32_of(s, "context")?, prefix: 0, tokens: b })
    }

    /// The phase's ops summed in their order (the reference's order, so its bits), with their
    /// power evidence (an op with positive energy is covered).
    fn sum(&self, memo: &mut Memo, context: bool, shape: Shape) -> Result<(f64, PowerEvidence), String> {
        let ops = if context { &self.graph.context } else { &self.graph.generation };
        let mut total = 0.0;
        let mut evidence = PowerEvidence::default();
        for (i, op) in ops.iter().enumerate() {
            let key = match op {
                Op::ContextAttention { .. }
                | Op::GenerationAttention { .. }
                | Op::ContextMla { .. }
                | Op::GenerationMla { .. }
                | Op::MlaBmm { .. }
                | Op::MlaModule { .. }
                | Op::Fallback { .. }
                | Op::Overlap { .. } => (shape.batch, shape.s, shape.prefix),
                Op::Gemm { logits: true, .. } => (shape.batch, 0, 0),
                _ => (shape.tokens, 0, 0),
            };
            let key = (context, i as u8, key.0, key.1, key.2);
            let (ms, energy) = match memo.ops.get(&key) {
                Some(&v) => v,
                None => {
                    let v = op.cost(&self.data, shape)?;
                    memo.ops.insert(key, v);
                    v
                }
            };
            total += ms;
            evidence.count(ms, energy);
        }
        evidence.latency_ms = total;
        Ok((total, evidence))
    }

    /// The prefill part's ops and their milliseconds.
    pub fn prefill_ops(&self, batch: u64, isl: u64, prefix: u64) -> Result<Vec<(&'static str, f64)>, String> {
        let shape = Self::prefill_shape(batch, isl, prefix)?;
        self.walk(&self.graph.context, shape)
    }

    /// One decode step's ops and their milliseconds.
    pub fn decode_ops(&self, batch: u64, s: u64) -> Result<Vec<(&'static str, f64)>, String> {
        self.walk(&self.graph.generation, Self::decode_shape(batch, s)?)
    }

    fn walk(&self, ops: &[Op], shape: Shape) -> Result<Vec<(&'static str, f64)>, String> {
        ops.iter().map(|op| op.cost(&self.data, shape).map(|(ms, _)| (op.name(), ms))).collect()
    }

    /// Bytes of weights per GPU.
    pub fn weight_bytes(&self) -> f64 {
        self.graph.weight_bytes(&self.shape, self.tp, self.pp)
    }

    /// KV bytes per token per GPU (all layers, K and V).
    pub fn kv_bytes_per_token(&self) -> u64 {
        if let Some(a) = self.shape.mla {
            // MLA caches one latent (KV rank + RoPE part) per layer, on every attention rank.
            return (((a.kv_lora + a.rope) as u64 * self.shape.layers as u64) as f64 * self.dtypes.kv.memory()) as u64;
        }
        let per_gpu = self.shape.kv_heads_per_gpu(self.tp) as u64 * self.shape.head_size as u64 * self.shape.layers as u64 * 2;
        (per_gpu as f64 * self.dtypes.kv.memory()) as u64
    }

    /// The framework's name of the data.
    pub fn backend_name(&self) -> &'static str {
        backend_name(self.backend)
    }
}

/// Reads a bundled-model list (`models.json` beside the data: `{"models": {NAME: config}}`)
/// and the `model` argument into a shape and a name.
pub fn resolve_model(model: &Value, bundled: Option<&Value>) -> Result<(ModelShape, String), String> {
    match model {
        Value::String(name) => {
            let cfg = bundled
                .and_then(|b| b.get("models"))
                .and_then(|m| m.get(name))
                .ok_or_else(|| format!("model: `{name}` is not a bundled model; pass its config.json fields instead"))?;
            Ok((ModelShape::from_config(cfg).map_err(|e| format!("model `{name}`: {e}"))?, name.clone()))
        }
        Value::Object(_) => Ok((ModelShape::from_config(model).map_err(|e| format!("model.{e}"))?, "custom".to_string())),
        _ => Err("model: expected a bundled model's name or a config.json object".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: Value) -> Result<AisArgs, String> {
        let a = AisArgs::from_map(v.as_object().unwrap())?;
        a.validate()?;
        Ok(a)
    }

    /// The reference's MoE parallelism fields, in both spellings, and its constraint.
    #[test]
    fn moe_parallelism_reads_the_reference_fields_and_checks_the_constraint() {
        let base = serde_json::json!({"model": "deepseek-ai/DeepSeek-R1", "system": "h200_sxm"});
        let with = |extra: Value| {
            let mut v = base.clone();
            v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
            args(v)
        };
        // SGLang's --tp 8 --ep 8 --dp 8 --enable-dp-attention: attention TP 1 × DP 8 = EP 8.
        let a = with(serde_json::json!({"tp": 1, "attention_dp_size": 8, "moe_tp_size": 1, "moe_ep_size": 8, "moe_dtype": "fp8_block"}))
            .unwrap();
        assert_eq!((a.attention_dp, a.moe_parallelism().unwrap(), a.gpus()), (8, (1, 8), 8));
        assert_eq!(a.moe_quant_mode.as_deref(), Some("fp8_block"));
        // The engine-argument names (aic_*) read unchanged.
        let a =
            with(serde_json::json!({"aic_tp_size": 4, "aic_attention_dp_size": 2, "aic_moe_ep_size": 8, "aic_moe_tp_size": 1})).unwrap();
        assert_eq!((a.tp, a.attention_dp, a.moe_parallelism().unwrap(), a.gpus()), (4, 2, (1, 8), 8));
        // Unset: the experts take the whole width as tensor parallelism.
        assert_eq!(with(serde_json::json!({"tp": 8})).unwrap().moe_parallelism().unwrap(), (8, 1));
        let e = with(serde_json::json!({"tp": 8, "moe_tp_size": 1, "moe_ep_size": 4})).unwrap_err();
        assert!(e.contains("moe_tp_size × moe_ep_size (1 × 4) must equal tp × attention_dp (8 × 1)"), "{e}");
        assert!(with(serde_json::json!({"attention_dp": 0})).unwrap_err().contains("attention_dp"));
        assert!(with(serde_json::json!({"moe_quant_mode": "fp3"})).unwrap_err().contains("moe_quant_mode"));
    }
}
