//! A roofline timing model for users with no measured profile: pass times from a model's
//! architecture and a GPU's datasheet figures.
//!
//! - Prefill is bound by compute: 2 FLOPs per active parameter per new token, plus the
//!   attention score/value products over the context, at a fraction of the dense peak.
//! - Decode is bound by memory: every step reads the weights once (for a mixture of experts,
//!   the experts the batch is expected to touch) plus the KV of every context token, at a
//!   fraction of the HBM bandwidth. Whichever bound is larger wins, in both phases.
//! - Each pass adds a fixed overhead (scheduling, kernel launches, sampling).
//! - Tensor parallelism divides work and traffic evenly across `tp` GPUs (no communication
//!   cost: an optimistic bound).
//!
//! Presets name their sources (model `config.json` files on Hugging Face; NVIDIA datasheets,
//! dense figures without sparsity). Figures are per GPU.

use serde::{Deserialize, Serialize};

/// A transformer's shape, as in its Hugging Face `config.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
    pub num_hidden_layers: u32,
    pub hidden_size: u32,
    pub num_attention_heads: u32,
    /// Defaults to `num_attention_heads` (no grouped-query attention).
    #[serde(default)]
    pub num_key_value_heads: Option<u32>,
    /// Defaults to `hidden_size / num_attention_heads`.
    #[serde(default)]
    pub head_dim: Option<u32>,
    /// Dense MLP width (per expert for MoE models unless `moe_intermediate_size` is set).
    pub intermediate_size: u32,
    pub vocab_size: u32,
    /// `torch_dtype` of the weights: bfloat16, float16, float32, fp8, int8...
    #[serde(default = "default_dtype")]
    pub dtype: String,
    /// Embedding and LM head share one matrix.
    #[serde(default)]
    pub tie_word_embeddings: bool,
    /// Routed experts per MoE layer (absent or 0: dense).
    #[serde(default)]
    pub num_experts: u32,
    /// Experts each token is routed to.
    #[serde(default)]
    pub num_experts_per_tok: u32,
    #[serde(default)]
    pub moe_intermediate_size: Option<u32>,
    /// The vision tower of a multimodal model (`vision_config`); absent for text-only models.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vision: Option<VisionSpec>,
    /// Total width of the shared experts every token also runs (DeepSeek's
    /// `n_shared_experts × moe_intermediate_size`, Qwen2-MoE's own field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_expert_intermediate_size: Option<u32>,
    /// Leading layers with a dense MLP of `intermediate_size` instead of experts (DeepSeek).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub first_k_dense_replace: u32,
    /// The routed experts' weight dtype when it differs from `dtype` (gpt-oss: `mxfp4`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expert_dtype: Option<String>,
    /// Multi-head latent attention (DeepSeek, Kimi): the cached latent's width. With it set,
    /// each token caches `kv_lora_rank + qk_rope_head_dim` values per layer (on every
    /// tensor-parallel GPU: the latent is not split by head).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_lora_rank: Option<u32>,
    /// MLA's query compression rank (absent: queries are projected directly).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub q_lora_rank: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qk_rope_head_dim: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qk_nope_head_dim: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub v_head_dim: Option<u32>,
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

fn is_one(v: &u32) -> bool {
    *v == 1
}

/// MLA's dimensions, when the model has them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Mla {
    pub kv_lora_rank: u32,
    pub q_lora_rank: u32,
    pub rope: u32,
    pub nope: u32,
    pub v: u32,
}

impl ModelSpec {
    /// MLA's dimensions (a latent width without its head dims is refused by [`ModelSpec::check`]).
    pub fn mla(&self) -> Option<Mla> {
        let r = self.kv_lora_rank?;
        Some(Mla {
            kv_lora_rank: r,
            q_lora_rank: self.q_lora_rank.unwrap_or(0),
            rope: self.qk_rope_head_dim.unwrap_or(0),
            nope: self.qk_nope_head_dim.unwrap_or(0),
            v: self.v_head_dim.unwrap_or(0),
        })
    }

    /// Checks the MoE and MLA fields agree with each other. Errors name the field.
    pub fn check(&self) -> Result<(), String> {
        if self.num_experts > 0 && !(1..=self.num_experts).contains(&self.num_experts_per_tok) {
            return Err(format!("num_experts_per_tok: {} must be within 1..={}", self.num_experts_per_tok, self.num_experts));
        }
        if self.first_k_dense_replace > self.num_hidden_layers {
            return Err(format!("first_k_dense_replace: {} exceeds the {} layers", self.first_k_dense_replace, self.num_hidden_layers));
        }
        if self.kv_lora_rank.is_some() {
            for (k, v) in
                [("qk_rope_head_dim", self.qk_rope_head_dim), ("qk_nope_head_dim", self.qk_nope_head_dim), ("v_head_dim", self.v_head_dim)]
            {
                if v.is_none() {
                    return Err(format!("{k}: required with kv_lora_rank (multi-head latent attention)"));
                }
            }
        }
        Ok(())
    }
}

/// A ViT vision tower and its patch merger, as in a Qwen2-VL-style `vision_config`: `depth`
/// blocks of attention and a gated MLP over image patches, then a merger that folds
/// `spatial_merge_size²` patches into one image token of the language model's width.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VisionSpec {
    pub depth: u32,
    pub hidden_size: u32,
    pub intermediate_size: u32,
    pub num_heads: u32,
    #[serde(default = "default_merge")]
    pub spatial_merge_size: u32,
    /// The merger's output width; defaults to the language model's `hidden_size`.
    #[serde(default)]
    pub out_hidden_size: Option<u32>,
}

fn default_merge() -> u32 {
    2
}

fn default_dtype() -> String {
    "bfloat16".into()
}

/// A GPU's datasheet figures (dense, no sparsity).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuSpec {
    pub bf16_tflops: f64,
    /// FP8 dense peak; absent on GPUs without FP8 (then BF16 applies).
    #[serde(default)]
    pub fp8_tflops: Option<f64>,
    pub hbm_gb_per_s: f64,
    pub hbm_gb: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ModelRef {
    Preset(String),
    Custom(ModelSpec),
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum GpuRef {
    Preset(String),
    Custom(GpuSpec),
}

/// `timing_model: {"type": "roofline", ...}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RooflineArgs {
    pub model: ModelRef,
    pub gpu: GpuRef,
    #[serde(default = "one")]
    pub tp: u32,
    /// Attention data-parallel ranks: each runs attention (and the dense layers) on its own
    /// requests over `tp` GPUs, and the experts are spread over all `tp × attention_dp` GPUs
    /// (the reference's `tp × attention_dp = moe_tp × moe_ep`). A pass is priced as every
    /// rank holding `ceil(batch / attention_dp)` requests, as the reference passes it.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub attention_dp: u32,
    /// Overrides the model's weight dtype (e.g. `fp8` for a quantised checkpoint).
    #[serde(default)]
    pub weight_dtype: Option<String>,
    /// KV cache element type: `auto` (the weights' dtype) or a dtype name.
    #[serde(default = "auto")]
    pub kv_cache_dtype: String,
    /// Share of the dense peak reached by prefill GEMMs.
    #[serde(default = "default_compute_eff")]
    pub compute_efficiency: f64,
    /// Share of HBM bandwidth reached by decode.
    #[serde(default = "default_bw_eff")]
    pub bandwidth_efficiency: f64,
    /// Fixed cost of every pass, ms.
    #[serde(default = "default_overhead")]
    pub overhead_ms: f64,
    /// Share of GPU memory for weights plus KV cache (vLLM's `gpu_memory_utilization`).
    #[serde(default = "default_mem_util")]
    pub gpu_memory_utilization: f64,
}

fn one() -> u32 {
    1
}
fn auto() -> String {
    "auto".into()
}
fn default_compute_eff() -> f64 {
    0.6
}
fn default_bw_eff() -> f64 {
    0.8
}
fn default_overhead() -> f64 {
    2.0
}
fn default_mem_util() -> f64 {
    0.9
}

/// Bytes per element of a dtype name (the mocker's table; unknown names count 2).
pub fn dtype_bytes(name: &str) -> f64 {
    match name {
        "float32" | "fp32" => 4.0,
        "float16" | "bfloat16" | "fp16" | "bf16" => 2.0,
        "fp8" | "float8_e4m3fn" | "float8_e5m2" | "fp8_e4m3" | "fp8_e5m2" | "fp8_ds_mla" | "fp8_inc" | "int8" => 1.0,
        "int4" | "fp4" | "nvfp4" | "mxfp4" => 0.5,
        _ => 2.0,
    }
}

/// Model presets: (name, config). Sources: the models' `config.json` on Hugging Face
/// (meta-llama/Llama-3.1-8B-Instruct, meta-llama/Llama-3.1-70B-Instruct,
/// Qwen/Qwen2.5-7B-Instruct, Qwen/Qwen3-32B, Qwen/Qwen3-30B-A3B,
/// mistralai/Mixtral-8x7B-Instruct-v0.1).
pub fn model_preset(name: &str) -> Option<ModelSpec> {
    let dense = |l, h, a, kv, hd, i, v, tie| ModelSpec {
        num_hidden_layers: l,
        hidden_size: h,
        num_attention_heads: a,
        num_key_value_heads: Some(kv),
        head_dim: Some(hd),
        intermediate_size: i,
        vocab_size: v,
        dtype: "bfloat16".into(),
        tie_word_embeddings: tie,
        num_experts: 0,
        num_experts_per_tok: 0,
        moe_intermediate_size: None,
        vision: None,
        shared_expert_intermediate_size: None,
        first_k_dense_replace: 0,
        expert_dtype: None,
        kv_lora_rank: None,
        q_lora_rank: None,
        qk_rope_head_dim: None,
        qk_nope_head_dim: None,
        v_head_dim: None,
    };
    Some(match name {
        "llama-3.1-8b" => dense(32, 4096, 32, 8, 128, 14336, 128256, false),
        "llama-3.1-70b" => dense(80, 8192, 64, 8, 128, 28672, 128256, false),
        "qwen2.5-7b" => dense(28, 3584, 28, 4, 128, 18944, 152064, false),
        "qwen3-32b" => dense(64, 5120, 64, 8, 128, 25600, 151936, false),
        "qwen3-30b-a3b" => ModelSpec {
            num_experts: 128,
            num_experts_per_tok: 8,
            moe_intermediate_size: Some(768),
            ..dense(48, 2048, 32, 4, 128, 6144, 151936, false)
        },
        "mixtral-8x7b" => ModelSpec { num_experts: 8, num_experts_per_tok: 2, ..dense(32, 4096, 32, 8, 128, 14336, 32000, false) },
        // Qwen/Qwen2.5-VL-7B-Instruct: Qwen2.5-7B's text model and its `vision_config`.
        "qwen2.5-vl-7b" => ModelSpec {
            vision: Some(VisionSpec {
                depth: 32,
                hidden_size: 1280,
                intermediate_size: 3420,
                num_heads: 16,
                spatial_merge_size: 2,
                out_hidden_size: Some(3584),
            }),
            ..dense(28, 3584, 28, 4, 128, 18944, 152064, false)
        },
        // Qwen/Qwen3-235B-A22B: 128 experts of 1536, 8 per token.
        "qwen3-235b-a22b" => ModelSpec {
            num_experts: 128,
            num_experts_per_tok: 8,
            moe_intermediate_size: Some(1536),
            ..dense(94, 4096, 64, 4, 128, 12288, 151936, false)
        },
        // openai/gpt-oss-120b and -20b: MXFP4 experts of width 2880, 4 per token; bf16
        // attention (its alternate 128-token sliding window is not modelled: full attention).
        "gpt-oss-120b" | "gpt-oss-20b" => {
            let (layers, experts) = if name == "gpt-oss-120b" { (36, 128) } else { (24, 32) };
            ModelSpec {
                num_experts: experts,
                num_experts_per_tok: 4,
                expert_dtype: Some("mxfp4".into()),
                ..dense(layers, 2880, 64, 8, 64, 2880, 201088, false)
            }
        }
        // deepseek-ai/DeepSeek-R1 (and -0528, and DeepSeek-V3, the same shape): 256 routed
        // experts + 1 shared of 2048, 8 per token, 3 leading dense layers of 18432; MLA with a
        // 512-wide latent, 64 RoPE dims and a 1536-rank query compression; fp8 weights.
        "deepseek-r1" | "deepseek-v3" => ModelSpec {
            dtype: "fp8".into(),
            num_experts: 256,
            num_experts_per_tok: 8,
            moe_intermediate_size: Some(2048),
            shared_expert_intermediate_size: Some(2048),
            first_k_dense_replace: 3,
            kv_lora_rank: Some(512),
            q_lora_rank: Some(1536),
            qk_rope_head_dim: Some(64),
            qk_nope_head_dim: Some(128),
            v_head_dim: Some(128),
            head_dim: None,
            ..dense(61, 7168, 128, 128, 128, 18432, 129280, false)
        },
        _ => return None,
    })
}

pub const MODEL_PRESETS: &[&str] = &[
    "llama-3.1-8b",
    "llama-3.1-70b",
    "qwen2.5-7b",
    "qwen3-32b",
    "qwen3-30b-a3b",
    "mixtral-8x7b",
    "qwen2.5-vl-7b",
    "qwen3-235b-a22b",
    "gpt-oss-120b",
    "gpt-oss-20b",
    "deepseek-r1",
    "deepseek-v3",
];
pub const GPU_PRESETS: &[&str] = &["a100", "l40s", "h100", "h200", "b200"];

/// GPU presets. Sources: NVIDIA datasheets, dense (non-sparse) Tensor Core peaks:
/// A100 SXM 80GB (312 BF16 TFLOPS, no FP8, 2039 GB/s, 80 GB); L40S (362 BF16, 733 FP8,
/// 864 GB/s, 48 GB); H100 SXM (989 BF16, 1979 FP8, 3350 GB/s, 80 GB); H200 SXM (989, 1979,
/// 4800 GB/s, 141 GB); HGX B200 (2250 BF16, 4500 FP8, 8000 GB/s, 180 GB).
pub fn gpu_preset(name: &str) -> Option<GpuSpec> {
    let g = |bf16, fp8, bw, mem| GpuSpec { bf16_tflops: bf16, fp8_tflops: fp8, hbm_gb_per_s: bw, hbm_gb: mem };
    Some(match name {
        "a100" => g(312.0, None, 2039.0, 80.0),
        "l40s" => g(362.0, Some(733.0), 864.0, 48.0),
        "h100" => g(989.0, Some(1979.0), 3350.0, 80.0),
        "h200" => g(989.0, Some(1979.0), 4800.0, 141.0),
        "b200" => g(2250.0, Some(4500.0), 8000.0, 180.0),
        _ => return None,
    })
}

/// The share of the memory for weights and KV (GPU memory × utilisation × tp) that must be
/// left for the KV cache for a tensor-parallel size to count as leaving room for it: below a
/// tenth, a 70B model on two 80 GB GPUs would hold about two 4k-token requests at a time.
pub const MIN_KV_SHARE: f64 = 0.1;

/// Tensor-parallel sizes tried when looking for room for the KV cache.
pub const TP_CHOICES: &[u32] = &[1, 2, 4, 8, 16, 32, 64];

/// The smallest tensor-parallel size (a power of two up to 64) at which the model's weights
/// leave at least [`MIN_KV_SHARE`] of the usable GPU memory for the KV cache, with every
/// other argument as given. `None` if no such size exists (or the arguments are invalid).
pub fn smallest_tp_with_kv_room(args: &RooflineArgs) -> Option<u32> {
    TP_CHOICES.iter().copied().find(|&tp| {
        let r = match Roofline::new(&RooflineArgs { tp, ..args.clone() }) {
            Ok(r) => r,
            Err(_) => return false,
        };
        let usable = r.usable_memory_bytes();
        usable > 0.0 && (usable - r.weight_bytes()) >= MIN_KV_SHARE * usable
    })
}

/// A resolved roofline: model and GPU figures plus the derived constants.
#[derive(Clone, Debug, PartialEq)]
pub struct Roofline {
    pub model: ModelSpec,
    pub gpu: GpuSpec,
    pub args: RooflineArgs,
    /// Parameters read per token outside attention, excluding routed experts not taken.
    active_params: f64,
    /// Parameters of all routed experts' MLPs in one layer (MoE only).
    expert_params_per_layer: f64,
    total_params: f64,
    /// Parameters of the vision tower (0 without one): held in memory, read by the encoder
    /// only.
    vision_params: f64,
    /// Layers with routed experts (all layers but DeepSeek's leading dense ones).
    moe_layers: f64,
}

impl Roofline {
    pub fn new(args: &RooflineArgs) -> Result<Roofline, String> {
        let model = match &args.model {
            ModelRef::Preset(n) => {
                model_preset(n).ok_or_else(|| format!("model: unknown preset `{n}`, expected one of {}", MODEL_PRESETS.join(", ")))?
            }
            ModelRef::Custom(m) => m.clone(),
        };
        let mut model = model;
        if let Some(d) = &args.weight_dtype {
            model.dtype = d.clone();
        }
        let gpu = match &args.gpu {
            GpuRef::Preset(n) => {
                gpu_preset(n).ok_or_else(|| format!("gpu: unknown preset `{n}`, expected one of {}", GPU_PRESETS.join(", ")))?
            }
            GpuRef::Custom(g) => g.clone(),
        };
        if args.tp == 0 {
            return Err("tp: must be at least 1".into());
        }
        for (name, v) in [
            ("compute_efficiency", args.compute_efficiency),
            ("bandwidth_efficiency", args.bandwidth_efficiency),
            ("gpu_memory_utilization", args.gpu_memory_utilization),
        ] {
            if !(v > 0.0 && v <= 1.0) {
                return Err(format!("{name}: must be within (0, 1]"));
            }
        }
        if !(args.overhead_ms.is_finite() && args.overhead_ms >= 0.0) {
            return Err("overhead_ms: must be finite and non-negative".into());
        }
        if model.num_attention_heads == 0 || model.num_hidden_layers == 0 || gpu.bf16_tflops <= 0.0 || gpu.hbm_gb_per_s <= 0.0 {
            return Err("model and gpu figures must be positive".into());
        }
        if args.attention_dp == 0 {
            return Err("attention_dp: must be at least 1".into());
        }
        model.check().map_err(|e| format!("model.{e}"))?;
        let h = model.hidden_size as f64;
        let attn = attention_params(&model);
        let layers = model.num_hidden_layers as f64;
        let dense_layers = if model.num_experts > 0 { model.first_k_dense_replace as f64 } else { 0.0 };
        let moe_layers = layers - dense_layers;
        let dense_mlp = 3.0 * h * model.intermediate_size as f64;
        // Shared experts run for every token (adding 0.0 leaves other models' bits alone).
        let shared = if model.num_experts > 0 { 3.0 * h * model.shared_expert_intermediate_size.unwrap_or(0) as f64 } else { 0.0 };
        let (mlp_active, experts) = if model.num_experts > 0 {
            let width = model.moe_intermediate_size.unwrap_or(model.intermediate_size) as f64;
            let one = 3.0 * h * width;
            (one * model.num_experts_per_tok.max(1) as f64 + shared, one * model.num_experts as f64)
        } else {
            (dense_mlp, 0.0)
        };
        let embed = model.vocab_size as f64 * h * if model.tie_word_embeddings { 1.0 } else { 2.0 };
        let vision_params = model.vision.as_ref().map_or(0.0, |v| vision_params(v, model.hidden_size));
        // The input embedding is a lookup: only the LM head counts as compute per token.
        let (active_params, total_params) = if dense_layers == 0.0 {
            (
                layers * (attn + mlp_active) + model.vocab_size as f64 * h,
                layers * (attn + if experts > 0.0 { experts + shared } else { mlp_active }) + embed + vision_params,
            )
        } else {
            (
                layers * attn + moe_layers * mlp_active + dense_layers * dense_mlp + model.vocab_size as f64 * h,
                layers * attn + moe_layers * (experts + shared) + dense_layers * dense_mlp + embed + vision_params,
            )
        };
        Ok(Roofline {
            model,
            gpu,
            args: args.clone(),
            active_params,
            expert_params_per_layer: experts,
            total_params,
            vision_params,
            moe_layers,
        })
    }

    /// GPUs of one engine: `tp × attention_dp`.
    pub fn gpus(&self) -> u32 {
        self.args.tp * self.args.attention_dp
    }

    /// Parameters read per token (the routed experts it is sent to, not the others).
    pub fn active_params(&self) -> f64 {
        self.active_params
    }

    /// Bytes of the routed experts' weights over all layers.
    fn routed_expert_bytes(&self) -> f64 {
        self.expert_params_per_layer * self.moe_layers * self.expert_bytes_per_param()
    }

    fn expert_bytes_per_param(&self) -> f64 {
        self.model.expert_dtype.as_deref().map_or_else(|| self.weight_bytes_per_param(), dtype_bytes)
    }

    /// How many copies of each token's KV the engine's GPUs hold: an MLA latent lives whole
    /// on every tensor-parallel GPU; GQA heads are split over them.
    fn kv_copies(&self) -> f64 {
        if self.model.kv_lora_rank.is_some() { self.args.tp as f64 } else { 1.0 }
    }

    fn weight_bytes_per_param(&self) -> f64 {
        dtype_bytes(&self.model.dtype)
    }

    /// Peak FLOP/s for the weights' dtype, over all `tp` GPUs.
    fn peak_flops(&self) -> f64 {
        let tflops =
            if self.weight_bytes_per_param() <= 1.0 { self.gpu.fp8_tflops.unwrap_or(self.gpu.bf16_tflops) } else { self.gpu.bf16_tflops };
        tflops * 1e12 * self.gpus() as f64 * self.args.compute_efficiency
    }

    fn bandwidth(&self) -> f64 {
        self.gpu.hbm_gb_per_s * 1e9 * self.gpus() as f64 * self.args.bandwidth_efficiency
    }

    pub fn total_params(&self) -> f64 {
        self.total_params
    }

    /// Bytes of weights over the engine's GPUs: every attention-DP rank holds its own copy of
    /// the dense part; the routed experts are held once, spread over all GPUs.
    pub fn weight_bytes(&self) -> f64 {
        let one = match &self.model.expert_dtype {
            None => self.total_params * self.weight_bytes_per_param(),
            Some(_) => {
                let routed = self.expert_params_per_layer * self.moe_layers;
                (self.total_params - routed) * self.weight_bytes_per_param() + self.routed_expert_bytes()
            }
        };
        if self.args.attention_dp == 1 { one } else { one + (one - self.routed_expert_bytes()) * (self.args.attention_dp - 1) as f64 }
    }

    /// Bytes of weights one GPU holds.
    pub fn weight_bytes_per_gpu(&self) -> f64 {
        self.weight_bytes() / self.gpus() as f64
    }

    /// KV bytes per token: layers × 2 (K and V) × KV heads × head dim × KV dtype bytes; with
    /// MLA, layers × (latent + RoPE dims) × KV dtype bytes.
    pub fn kv_bytes_per_token(&self) -> u64 {
        let dtype = if self.args.kv_cache_dtype == "auto" { self.model.dtype.as_str() } else { self.args.kv_cache_dtype.as_str() };
        let m = &self.model;
        if let Some(mla) = m.mla() {
            return (m.num_hidden_layers as f64 * (mla.kv_lora_rank + mla.rope) as f64 * dtype_bytes(dtype)) as u64;
        }
        (m.num_hidden_layers as f64 * 2.0 * kv_heads(m) as f64 * head_dim(m) as f64 * dtype_bytes(dtype)) as u64
    }

    /// GPU memory for weights and KV cache over the engine's GPUs: memory × utilisation, bytes.
    pub fn usable_memory_bytes(&self) -> f64 {
        self.gpu.hbm_gb * 1e9 * self.gpus() as f64 * self.args.gpu_memory_utilization
    }

    /// KV blocks that fit in GPU memory × utilisation after the weights (over the engine's
    /// GPUs; an MLA latent counts once per tensor-parallel GPU).
    pub fn num_gpu_blocks(&self, block_size: u32) -> u32 {
        let budget = self.usable_memory_bytes() - self.weight_bytes();
        let per_block = self.kv_bytes_per_token() as f64 * block_size as f64 * self.kv_copies();
        if budget <= 0.0 || per_block <= 0.0 { 0 } else { (budget / per_block).floor().min(u32::MAX as f64) as u32 }
    }

    /// Attention FLOPs (QKᵀ and PV) for `new` tokens attending to `prefix + new` (causal);
    /// MLA scores over its `nope + rope` query/key width and mixes its `v` width (the
    /// decompressed form).
    fn attention_flops(&self, new: f64, context_per_token: f64) -> f64 {
        if let Some(mla) = self.model.mla() {
            let width = (self.model.num_attention_heads * (mla.nope + mla.rope + mla.v)) as f64;
            return 2.0 * self.model.num_hidden_layers as f64 * width * new * context_per_token;
        }
        let q = (self.model.num_attention_heads * head_dim(&self.model)) as f64;
        4.0 * self.model.num_hidden_layers as f64 * q * new * context_per_token
    }

    /// Weight bytes one step touches for `batch` tokens: with experts, each layer reads the
    /// experts at least one token is routed to (expected number, uniform routing). With
    /// attention DP, each rank reads its copy of the dense part.
    fn weights_read(&self, batch: f64) -> f64 {
        let copies = self.args.attention_dp as f64;
        if self.expert_params_per_layer == 0.0 {
            let one = (self.total_params - self.vision_params) * self.weight_bytes_per_param();
            return if self.args.attention_dp == 1 { one } else { one * copies };
        }
        let e = self.model.num_experts as f64;
        let k = self.model.num_experts_per_tok.max(1) as f64;
        let touched = e * (1.0 - (1.0 - k / e).powf(batch));
        let per_expert = self.expert_params_per_layer / e;
        let non_expert = self.total_params - self.vision_params - self.expert_params_per_layer * self.moe_layers;
        if self.model.expert_dtype.is_none() && self.args.attention_dp == 1 {
            (non_expert + per_expert * touched * self.moe_layers) * self.weight_bytes_per_param()
        } else {
            non_expert * self.weight_bytes_per_param() * copies + per_expert * touched * self.moe_layers * self.expert_bytes_per_param()
        }
    }

    /// The requests each attention-DP rank is priced with: `ceil(batch / attention_dp)`.
    pub fn rank_batch(&self, batch: u64) -> u64 {
        batch.div_ceil(self.args.attention_dp.max(1) as u64)
    }

    /// Prefill of `batch` requests, each with `isl` tokens after the chunk of which `prefix`
    /// were already present (with attention DP, every rank prefills `ceil(batch / dp)`).
    pub fn prefill_ms(&self, batch: u64, isl: u64, prefix: u64) -> f64 {
        let new = isl.saturating_sub(prefix) as f64;
        if batch == 0 || new == 0.0 {
            return 0.0;
        }
        let batch = self.rank_batch(batch) * self.args.attention_dp as u64;
        let tokens = batch as f64 * new;
        let ctx = prefix as f64 + (new + 1.0) / 2.0;
        let flops = 2.0 * self.active_params * tokens + self.attention_flops(tokens, ctx);
        let bytes = self.weights_read(tokens) + self.kv_bytes_per_token() as f64 * batch as f64 * isl as f64 * self.kv_copies();
        (flops / self.peak_flops()).max(bytes / self.bandwidth()) * 1e3 + self.args.overhead_ms
    }

    /// Whether the model has a vision tower to time.
    pub fn has_vision(&self) -> bool {
        self.model.vision.is_some()
    }

    /// The vision tower encoding `images` images of `tokens` image tokens in all: 2 FLOPs per
    /// parameter per patch (`spatial_merge_size²` patches per token) plus full attention
    /// within each image (Qwen2.5-VL attends within windows in most blocks: an upper bound),
    /// against one read of the tower's weights. No pass overhead: the encoder runs inside a
    /// pass that already pays it.
    pub fn encoder_ms(&self, tokens: u64, images: u64) -> f64 {
        let Some(v) = &self.model.vision else { return 0.0 };
        if tokens == 0 {
            return 0.0;
        }
        let m2 = (v.spatial_merge_size.max(1) * v.spatial_merge_size.max(1)) as f64;
        let patches = tokens as f64 * m2;
        let per_image = patches / images.max(1) as f64;
        let flops = 2.0 * self.vision_params * patches + 4.0 * v.depth as f64 * v.hidden_size as f64 * patches * per_image;
        let bytes = self.vision_params * self.weight_bytes_per_param();
        (flops / self.peak_flops()).max(bytes / self.bandwidth()) * 1e3
    }

    /// One decode step of `batch` requests holding `active_kv` context tokens in total.
    pub fn decode_ms(&self, batch: u64, active_kv: u64) -> f64 {
        if batch == 0 {
            return 0.0;
        }
        // With attention DP every rank decodes ceil(batch / dp) requests of the mean context.
        let (batch, active_kv) = if self.args.attention_dp == 1 {
            (batch, active_kv as f64)
        } else {
            let b = self.rank_batch(batch) * self.args.attention_dp as u64;
            (b, active_kv as f64 * b as f64 / batch as f64)
        };
        let b = batch as f64;
        let flops = 2.0 * self.active_params * b + self.attention_flops(1.0, active_kv);
        let bytes = self.weights_read(b) + self.kv_bytes_per_token() as f64 * active_kv * self.kv_copies();
        (flops / self.peak_flops()).max(bytes / self.bandwidth()) * 1e3 + self.args.overhead_ms
    }
}

/// Parameters of a vision tower: per block Q, K, V, O (4h²) and a gated MLP (3hi); the
/// merger's two-layer MLP from `m²h` to `m²h` to the output width.
fn vision_params(v: &VisionSpec, llm_hidden: u32) -> f64 {
    let h = v.hidden_size as f64;
    let blocks = v.depth as f64 * (4.0 * h * h + 3.0 * h * v.intermediate_size as f64);
    let merged = h * (v.spatial_merge_size * v.spatial_merge_size) as f64;
    blocks + merged * merged + merged * v.out_hidden_size.unwrap_or(llm_hidden) as f64
}

/// Attention projection parameters of one layer: Q, K, V, O for GQA/MQA/MHA; for MLA the
/// query (directly or through its `q_lora_rank` compression), the joint KV compression to
/// the latent plus RoPE key, its decompression to per-head keys and values, and O.
fn attention_params(m: &ModelSpec) -> f64 {
    let h = m.hidden_size as f64;
    let heads = m.num_attention_heads as f64;
    if let Some(mla) = m.mla() {
        let qk = (mla.nope + mla.rope) as f64;
        let q = if mla.q_lora_rank > 0 { h * mla.q_lora_rank as f64 + mla.q_lora_rank as f64 * heads * qk } else { h * heads * qk };
        let kv_a = h * (mla.kv_lora_rank + mla.rope) as f64;
        let kv_b = mla.kv_lora_rank as f64 * heads * (mla.nope + mla.v) as f64;
        return q + kv_a + kv_b + heads * mla.v as f64 * h;
    }
    let q = (m.num_attention_heads * head_dim(m)) as f64;
    let kv = (kv_heads(m) * head_dim(m)) as f64;
    h * q * 2.0 + h * kv * 2.0 // Q, O; K, V projections
}

fn kv_heads(m: &ModelSpec) -> u32 {
    m.num_key_value_heads.unwrap_or(m.num_attention_heads)
}

fn head_dim(m: &ModelSpec) -> u32 {
    m.head_dim.unwrap_or(m.hidden_size / m.num_attention_heads.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roofline(model: &str, gpu: &str, tp: u32) -> Roofline {
        let args: RooflineArgs = serde_json::from_value(serde_json::json!({"model": model, "gpu": gpu, "tp": tp})).unwrap();
        Roofline::new(&args).unwrap()
    }

    #[test]
    fn parameter_counts_match_the_model_cards() {
        let cases = [
            ("llama-3.1-8b", 8.03e9),
            ("llama-3.1-70b", 70.6e9),
            ("qwen2.5-7b", 7.6e9),
            ("mixtral-8x7b", 46.7e9),
            ("qwen3-30b-a3b", 30.5e9),
        ];
        for (m, want) in cases {
            let r = roofline(m, "h100", 1);
            let err = (r.total_params() - want).abs() / want;
            assert!(err < 0.03, "{m}: {} vs {want}", r.total_params());
        }
    }

    #[test]
    fn kv_bytes_follow_the_config_and_cache_dtype() {
        // Llama-3.1-8B in bf16: 32 layers × 2 × 8 heads × 128 × 2 bytes = 131072.
        let r = roofline("llama-3.1-8b", "h100", 1);
        assert_eq!(r.kv_bytes_per_token(), 131_072);
        let args: RooflineArgs =
            serde_json::from_value(serde_json::json!({"model": "llama-3.1-8b", "gpu": "h100", "kv_cache_dtype": "fp8"})).unwrap();
        assert_eq!(Roofline::new(&args).unwrap().kv_bytes_per_token(), 65_536);
    }

    #[test]
    fn blocks_come_from_memory_left_after_weights() {
        let r = roofline("llama-3.1-8b", "h100", 1);
        // 80 GB × 0.9 − 16.06 GB of weights, over 16 × 131072 bytes per block.
        let want = ((72e9 - r.weight_bytes()) / (16.0 * 131072.0)).floor() as u32;
        assert_eq!(r.num_gpu_blocks(16), want);
        assert!((26_000..27_000).contains(&want), "{want}");
        assert_eq!(roofline("llama-3.1-70b", "l40s", 1).num_gpu_blocks(16), 0, "does not fit");
    }

    #[test]
    fn the_smallest_tp_leaves_a_tenth_of_the_memory_for_kv() {
        let args =
            |model: &str, gpu: &str| -> RooflineArgs { serde_json::from_value(serde_json::json!({"model": model, "gpu": gpu})).unwrap() };
        assert_eq!(smallest_tp_with_kv_room(&args("llama-3.1-8b", "h100")), Some(1));
        // 141 GB of weights: two H100s would leave 2 % of their 144 GB; four leave half.
        assert_eq!(smallest_tp_with_kv_room(&args("llama-3.1-70b", "h100")), Some(4));
        assert_eq!(smallest_tp_with_kv_room(&args("llama-3.1-70b", "h200")), Some(2));
        assert_eq!(smallest_tp_with_kv_room(&args("llama-3.1-70b", "l40s")), Some(4));
        let mut fp8 = args("llama-3.1-70b", "h100");
        fp8.weight_dtype = Some("fp8".into());
        assert_eq!(smallest_tp_with_kv_room(&fp8), Some(2));
        // Every choice at or above it leaves room; the one below does not.
        for (m, g) in [("llama-3.1-70b", "h100"), ("qwen3-32b", "h100"), ("mixtral-8x7b", "a100")] {
            let tp = smallest_tp_with_kv_room(&args(m, g)).unwrap();
            assert!(roofline(m, g, tp).num_gpu_blocks(64) > 0, "{m} on {g} at tp {tp}");
            if tp > 1 {
                let below = roofline(m, g, tp / 2);
                assert!(below.usable_memory_bytes() - below.weight_bytes() < MIN_KV_SHARE * below.usable_memory_bytes());
            }
        }
    }

    #[test]
    fn prefill_is_compute_bound_and_decode_memory_bound() {
        let r = roofline("llama-3.1-8b", "h100", 1);
        // 8k tokens of prefill: ≈ 2 × 7.5e9 × 8192 FLOPs at 60 % of 989 TFLOP/s ≈ 210 ms.
        let p = r.prefill_ms(1, 8192, 0);
        assert!((150.0..300.0).contains(&p), "{p}");
        // One decode step at small batch: 16 GB at 80 % of 3.35 TB/s ≈ 6 ms, plus overhead.
        let d = r.decode_ms(1, 1000);
        assert!((7.0..10.0).contains(&d), "{d}");
        // More context means more KV to read; more GPUs, less time.
        assert!(r.decode_ms(64, 64 * 4000) > d);
        assert!(roofline("llama-3.1-8b", "h100", 2).decode_ms(1, 1000) < d);
        // A sparse MoE reads a fraction of its experts at batch 1.
        let moe = roofline("qwen3-30b-a3b", "h100", 1);
        assert!(moe.decode_ms(1, 1000) < moe.decode_ms(256, 1000));
    }

    /// The README's comparison: NVIDIA NIM's published Llama-3.3-70B (same shape as 3.1-70B)
    /// figures on 2 × H100 80GB, FP8, TP2, concurrency 1.
    #[test]
    fn published_comparison() {
        let args: RooflineArgs = serde_json::from_value(serde_json::json!(
            {"model": "llama-3.1-70b", "gpu": "h100", "tp": 2, "weight_dtype": "fp8"}))
        .unwrap();
        let r = Roofline::new(&args).unwrap();
        let rows = [(5000u64, 500u64, 406.77, 18.58), (500, 2000, 47.77, 18.91)];
        for (isl, osl, ttft, itl) in rows {
            let p = r.prefill_ms(1, isl, 0);
            let d = r.decode_ms(1, isl + osl / 2);
            eprintln!("{isl}/{osl}: TTFT {p:.2} vs {ttft} ({:.2}x), ITL {d:.2} vs {itl} ({:.2}x)", p / ttft, d / itl);
            assert!((0.3..3.0).contains(&(p / ttft)) && (0.3..3.0).contains(&(d / itl)));
        }
        // vLLM's performance-benchmark CI (Buildkite build 9515, "Latency tests"): Llama-3.1-8B,
        // one H200, TP1, bf16 (dtype auto), a fixed batch of 8 prompts of 32 tokens generating
        // 128 tokens each; mean end-to-end latency 833.421 ms. One prefill pass for the batch
        // (it yields the first token), then 127 decode steps of the 8 requests.
        let args: RooflineArgs = serde_json::from_value(serde_json::json!(
            {"model": "llama-3.1-8b", "gpu": "h200", "tp": 1}))
        .unwrap();
        let r = Roofline::new(&args).unwrap();
        let (batch, isl, osl, measured) = (8u64, 32u64, 128u64, 833.421);
        let prefill = r.prefill_ms(batch, isl, 0);
        let decode: f64 = (1..osl).map(|i| r.decode_ms(batch, batch * (isl + i))).sum();
        let e2e = prefill + decode;
        eprintln!(
            "llama-3.1-8b h200 batch {batch} {isl}/{osl}: end-to-end {e2e:.2} vs {measured} ({:.2}x); prefill {prefill:.2}, mean decode step {:.2}",
            e2e / measured,
            decode / (osl - 1) as f64
        );
        assert!((0.3..3.0).contains(&(e2e / measured)));
    }

    /// DeepSeek-R1 on one 8 × H200 node as SGLang runs it with `--tp 8 --ep 8 --dp 8
    /// --enable-dp-attention`: in the reference's terms attention TP 1 × attention DP 8 =
    /// MoE TP 1 × MoE EP 8, 8 GPUs. Hand-computed: 670.92 B parameters, of which 653.91 B
    /// routed experts (held once, 81.74 B per GPU) and 17.01 B dense (attention, 3 dense
    /// layers, shared experts, embedding and LM head: one copy per attention-DP rank); fp8.
    #[test]
    fn deepseek_r1_gpu_count_and_kv_pool_at_ep8_attention_dp8() {
        let args: RooflineArgs =
            serde_json::from_value(serde_json::json!({"model": "deepseek-r1", "gpu": "h200", "tp": 1, "attention_dp": 8})).unwrap();
        let r = Roofline::new(&args).unwrap();
        assert_eq!(r.gpus(), 8);
        assert!((r.total_params() / 1e9 - 670.919).abs() < 1e-3, "{}", r.total_params());
        let per_gpu = r.weight_bytes_per_gpu();
        assert!((per_gpu / 1e9 - 98.7488).abs() < 1e-3, "17.01 GB dense + 653.91 / 8 GB experts: {per_gpu}");
        // 61 layers × (512 latent + 64 RoPE) × 1 byte, on each rank for its own requests.
        assert_eq!(r.kv_bytes_per_token(), 35_136);
        // (8 × 141 GB × 0.9 − 789.99 GB) / (35,136 × 64) = 100,150.87 blocks of 64 tokens:
        // 801,207 tokens per rank.
        assert_eq!(r.num_gpu_blocks(64), 100_150);
        // The same GPUs as one TP-8 engine (no attention DP): one dense copy, the latent on
        // all eight GPUs — fewer tokens in all, but one engine's worth of requests.
        let tp8: RooflineArgs = serde_json::from_value(serde_json::json!({"model": "deepseek-r1", "gpu": "h200", "tp": 8})).unwrap();
        let t = Roofline::new(&tp8).unwrap();
        assert_eq!(t.gpus(), 8);
        assert!((t.weight_bytes() / 1e9 - 670.919).abs() < 1e-3);
        let want = ((8.0 * 141e9 * 0.9 - t.weight_bytes()) / (35_136.0 * 64.0 * 8.0)).floor() as u32;
        assert_eq!(t.num_gpu_blocks(64), want);
        assert_eq!(want, 19_137, "1.22 M tokens for the TP-8 engine against 6.41 M over the eight DP ranks");
        // Attention DP prices a pass as every rank holding ceil(batch / 8) requests.
        assert_eq!(r.rank_batch(17), 3);
        assert_eq!(r.decode_ms(17, 17 * 2000), r.decode_ms(24, 24 * 2000));
        assert!(r.decode_ms(8, 8 * 2000) < r.decode_ms(9, 9 * 2000));
    }

    #[test]
    fn unknown_presets_and_bad_figures_are_named() {
        let bad = |v: serde_json::Value| Roofline::new(&serde_json::from_value::<RooflineArgs>(v).unwrap()).unwrap_err();
        assert!(bad(serde_json::json!({"model": "gpt-9", "gpu": "h100"})).contains("model: unknown preset `gpt-9`"));
        assert!(bad(serde_json::json!({"model": "llama-3.1-8b", "gpu": "tpu"})).contains("gpu: unknown preset `tpu`"));
        assert!(bad(serde_json::json!({"model": "llama-3.1-8b", "gpu": "h100", "tp": 0})).contains("tp"));
        assert!(bad(serde_json::json!({"model": "llama-3.1-8b", "gpu": "h100", "compute_efficiency": 1.5})).contains("compute_efficiency"));
    }
}
