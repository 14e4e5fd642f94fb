//! A model for the measured-kernel timing: its shape from a Hugging Face `config.json`, the
//! quantisation its checkpoint declares, and its ops per phase.
//!
//! Dense decoders of AIConfigurator's LLAMA family (Llama, Qwen2, Qwen3 — with per-head
//! Q/K norm —, MiMo) are modelled; other architectures are refused by name. The op list is
//! AIConfigurator 0.12's for the family, so the same shape times the same.

use serde_json::Value;

use super::ops::Op;
use super::quant::{FmhaQuant, GemmQuant, KvQuant};
use crate::args::Backend;

/// Architectures timed as dense decoders, and whether they norm Q and K per head.
const DENSE: [(&str, bool); 4] =
    [("LlamaForCausalLM", false), ("Qwen2ForCausalLM", false), ("Qwen3ForCausalLM", true), ("MiMoForCausalLM", false)];

/// A model's shape, as the timing model reads it.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelShape {
    pub architecture: String,
    pub layers: u32,
    pub heads: u32,
    /// 0 when the config names none (AIConfigurator's reading).
    pub kv_heads: u32,
    pub head_size: u32,
    pub hidden: u32,
    pub intermediate: u32,
    pub vocab: u32,
    pub context: u32,
    pub qk_norm: bool,
    /// The quantisation the checkpoint declares (None: bfloat16 unless set).
    pub gemm: Option<GemmQuant>,
    pub kv: Option<KvQuant>,
    pub fmha: Option<FmhaQuant>,
}

fn field_u32(cfg: &Value, name: &str) -> Result<Option<u32>, String> {
    match cfg.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .filter(|&v| v <= u32::MAX as u64)
            .map(|v| Some(v as u32))
            .ok_or_else(|| format!("{name}: expected a non-negative integer, got {v}")),
    }
}

fn required(cfg: &Value, name: &str) -> Result<u32, String> {
    field_u32(cfg, name)?.ok_or_else(|| format!("{name} is missing"))
}

impl ModelShape {
    /// Reads a Hugging Face `config.json` (with an `hf_quant_config` object inside, as the
    /// bundled configs carry it). Errors name the field.
    pub fn from_config(cfg: &Value) -> Result<ModelShape, String> {
        let arch = cfg
            .get("architectures")
            .and_then(|a| a.get(0))
            .and_then(|a| a.as_str())
            .ok_or("architectures: expected a list naming the model class")?;
        let Some(&(_, qk_norm)) = DENSE.iter().find(|(a, _)| *a == arch) else {
            // A shape servesim reads (MoE, MLA) whose measured ops are not converted yet.
            let what = match crate::perf::roofline::ModelSpec::from_hf_config(cfg) {
                Ok(m) if m.kv_lora_rank.is_some() => "a mixture of experts with latent attention (MLA)",
                Ok(m) if m.num_experts > 0 => "a mixture of experts",
                _ => "not a dense decoder",
            };
            return Err(format!(
                "architectures: `{arch}` is {what}; the measured-kernel model times dense decoders only ({}) — its MoE and MLA kernel tables are not converted yet; time it with the roofline (timing_model type `roofline`, which reads this config.json)",
                DENSE.iter().map(|d| d.0).collect::<Vec<_>>().join(", ")
            ));
        };
        let hidden = required(cfg, "hidden_size")?;
        let heads = required(cfg, "num_attention_heads")?;
        if heads == 0 {
            return Err("num_attention_heads must be positive".into());
        }
        let head_size = match field_u32(cfg, "head_dim")?.filter(|&d| d > 0).or(field_u32(cfg, "attention_head_dim")?.filter(|&d| d > 0)) {
            Some(d) => d,
            None => hidden / heads,
        };
        let (gemm, kv, fmha) = declared_quant(cfg)?;
        Ok(ModelShape {
            architecture: arch.to_string(),
            layers: required(cfg, "num_hidden_layers")?,
            heads,
            kv_heads: field_u32(cfg, "num_key_value_heads")?.unwrap_or(0),
            head_size,
            hidden,
            intermediate: field_u32(cfg, "intermediate_size")?.unwrap_or(0),
            vocab: required(cfg, "vocab_size")?,
            context: required(cfg, "max_position_embeddings")?,
            qk_norm,
            gemm,
            kv,
            fmha,
        })
    }

    /// KV heads each GPU holds at tensor-parallel size `tp` (rounded up: replicated heads).
    pub fn kv_heads_per_gpu(&self, tp: u32) -> u32 {
        self.kv_heads.div_ceil(tp)
    }
}

/// The quantisation a checkpoint declares: `hf_quant_config.quantization` (ModelOpt) or
/// `quantization_config`, read as AIConfigurator reads them.
/// A checkpoint's declared (GEMM, KV cache, attention) modes.
pub type Declared = (Option<GemmQuant>, Option<KvQuant>, Option<FmhaQuant>);

fn declared_quant(cfg: &Value) -> Result<Declared, String> {
    let qc = cfg.get("quantization_config").filter(|v| v.is_object());
    let hf = cfg.get("hf_quant_config").and_then(|h| h.get("quantization")).filter(|v| v.is_object());
    let s = |v: Option<&Value>, k: &str| {
        v.and_then(|v| v.get(k)).and_then(|x| x.as_str()).map(|x| x.trim().to_ascii_lowercase()).filter(|x| !x.is_empty())
    };
    let algo = s(hf, "quant_algo").or(s(qc, "quant_algo")).or(s(qc, "quant_method")).or(s(qc, "quantization_method"));
    let kv_algo =
        s(hf, "kv_cache_quant_algo").or(s(qc, "kv_cache_quant_algo")).or(s(qc, "kv_cache_quant_method")).or(s(qc, "kv_cache_dtype"));
    let block = qc.and_then(|q| q.get("weight_block_size")).is_some_and(|b| b.as_array().is_some_and(|a| !a.is_empty()));
    let dynamic = qc.and_then(|q| q.get("activation_scheme")).and_then(|a| a.as_str()).map(|a| a == "dynamic");
    let algo = match algo.as_deref() {
        Some("fp8") if block => Some("fp8_block".to_string()),
        other => other.map(str::to_string),
    };
    let gemm = match algo.as_deref() {
        None => None,
        Some("fp8") => Some(if dynamic == Some(true) { GemmQuant::Fp8 } else { GemmQuant::Fp8Static }),
        Some("fp8_block") => Some(GemmQuant::Fp8Block),
        Some("nvfp4") => Some(GemmQuant::Nvfp4),
        Some(other) => {
            return Err(format!(
                "quantization_config: `{other}` is not a quantisation the measured-kernel model reads; set gemm_quant_mode instead"
            ));
        }
    };
    let mut kv = match kv_algo.as_deref() {
        None => None,
        Some("fp8") => Some(KvQuant::Fp8),
        Some("bfloat16") => Some(KvQuant::Bfloat16),
        Some(other) => return Err(format!("quantization_config: KV cache `{other}` is not modelled; set kvcache_quant_mode instead")),
    };
    let mut fmha = None;
    if algo.is_some() && (matches!(algo.as_deref(), Some("fp8" | "fp8_block" | "nvfp4")) || kv == Some(KvQuant::Fp8)) {
        fmha = Some(FmhaQuant::Fp8);
        if kv != Some(KvQuant::Fp8) {
            kv = Some(KvQuant::Fp8);
        }
    }
    Ok((gemm, kv, fmha))
}

/// The dtypes a run uses after the user's choices and the checkpoint's declarations.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Dtypes {
    pub gemm: GemmQuant,
    pub kv: KvQuant,
    pub fmha: FmhaQuant,
}

impl Dtypes {
    /// The user's modes win; unset ones come from the checkpoint, else bfloat16. vLLM's
    /// tables have no fp8 attention kernel: an fp8 attention the checkpoint implies falls
    /// back to bfloat16 there (one the user asked for stays, and misses).
    pub fn resolve(shape: &ModelShape, backend: Backend, gemm: Option<GemmQuant>, kv: Option<KvQuant>, fmha: Option<FmhaQuant>) -> Dtypes {
        let mut fmha_out = fmha.or(shape.fmha).unwrap_or(FmhaQuant::Bfloat16);
        if fmha.is_none() && backend == Backend::Vllm && fmha_out == FmhaQuant::Fp8 {
            fmha_out = FmhaQuant::Bfloat16;
        }
        Dtypes {
            gemm: gemm.or(shape.gemm).unwrap_or(GemmQuant::Bfloat16),
            kv: kv.or(shape.kv).unwrap_or(KvQuant::Bfloat16),
            fmha: fmha_out,
        }
    }
}

/// The ops of both phases at tensor-parallel `tp` and pipeline-parallel `pp`.
#[derive(Clone, Debug)]
pub struct Graph {
    pub context: Vec<Op>,
    pub generation: Vec<Op>,
}

impl Graph {
    pub fn dense(m: &ModelShape, tp: u32, pp: u32, d: Dtypes) -> Result<Graph, String> {
        if !m.heads.is_multiple_of(tp) {
            return Err(format!("tp: {} attention heads do not divide over {tp} GPUs", m.heads));
        }
        let (h, l) = (m.hidden, m.layers as f64);
        let kv_gpu = m.kv_heads_per_gpu(tp);
        let q_out = m.heads * m.head_size / tp;
        let qkv_n = q_out + m.head_size * kv_gpu * 2;
        let ffn1_n = 2 * m.intermediate / tp;
        let ffn2_k = m.intermediate / tp;
        let vocab = m.vocab / tp;
        let norm_bytes = (2 * h) as f64 * 2.0 + (2 * h) as f64 * 2.0;
        let act_bytes = ffn1_n as f64 * 2.0 + ffn2_k as f64 * 2.0;
        let gemm = |name, scale, n, k, quant, lp, logits| Op::Gemm { name, scale, n, k, quant, low_precision_input: lp, logits };
        let phase = |context: bool| {
            let mut ops = vec![
                Op::Embedding { scale: 1.0, hidden: h },
                Op::Elementwise { name: "add_norm_1", scale: l, bytes_per_token: norm_bytes },
                gemm("qkv_gemm", l, qkv_n, h, d.gemm, false, false),
                if context {
                    Op::ContextAttention {
                        scale: l,
                        heads: m.heads / tp,
                        kv_heads: kv_gpu,
                        head_size: m.head_size,
                        kv: d.kv,
                        fmha: d.fmha,
                        qk_norm: m.qk_norm,
                    }
                } else {
                    Op::GenerationAttention {
                        scale: l,
                        heads: m.heads / tp,
                        kv_heads: kv_gpu,
                        head_size: m.head_size,
                        kv: d.kv,
                        qk_norm: m.qk_norm,
                    }
                },
                gemm("proj_gemm", l, h, q_out, d.gemm, true, false),
                Op::Elementwise { name: "add_norm_2", scale: l, bytes_per_token: norm_bytes },
                gemm("gate_ffn1_gemm", l, ffn1_n, h, d.gemm, false, false),
                Op::Elementwise { name: "act_gate", scale: l, bytes_per_token: act_bytes },
                gemm("ffn2_gemm", l, h, ffn2_k, d.gemm, true, false),
                gemm("logits_gemm", 1.0, vocab, h, GemmQuant::Bfloat16, false, true),
                Op::AllReduce { name: "embedding_ar", scale: 1.0, hidden: h, tp },
                Op::AllReduce { name: "ar_1", scale: l, hidden: h, tp },
                Op::AllReduce { name: "ar_2", scale: l, hidden: h, tp },
                Op::P2p { scale: (pp - 1) as f64, hidden: h, pp },
            ];
            ops.shrink_to_fit();
            ops
        };
        Ok(Graph { context: phase(true), generation: phase(false) })
    }

    /// Bytes of weights one GPU holds (GEMMs and the embedding), per pipeline stage.
    pub fn weight_bytes(&self, m: &ModelShape, tp: u32, pp: u32) -> f64 {
        let mut w = 0.0;
        for op in &self.context {
            match *op {
                Op::Gemm { scale, n, k, quant, .. } => w += n as f64 * k as f64 * quant.memory() * scale,
                Op::Embedding { scale, hidden } => w += (m.vocab / tp) as f64 * hidden as f64 * 2.0 * scale,
                _ => {}
            }
        }
        w / pp as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn qwen3_32b() -> Value {
        json!({"architectures": ["Qwen3ForCausalLM"], "num_hidden_layers": 64, "hidden_size": 5120, "num_attention_heads": 64,
               "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 25600, "vocab_size": 151936, "max_position_embeddings": 40960})
    }

    #[test]
    fn reads_a_dense_config_and_builds_its_ops() {
        let m = ModelShape::from_config(&qwen3_32b()).unwrap();
        assert!(m.qk_norm);
        let d = Dtypes::resolve(&m, Backend::Vllm, None, None, None);
        let g = Graph::dense(&m, 2, 1, d).unwrap();
        // The reference's spec for Qwen3-32B at TP 2: qkv 5120 × 5120, ffn1 25600 × 5120, LM head 75968.
        assert!(matches!(g.context[2], Op::Gemm { n: 5120, k: 5120, .. }));
        assert!(matches!(g.context[6], Op::Gemm { n: 25600, k: 5120, .. }));
        assert!(matches!(g.context[9], Op::Gemm { n: 75968, k: 5120, logits: true, .. }));
        assert!(matches!(g.context[3], Op::ContextAttention { heads: 32, kv_heads: 4, .. }));
        assert!(matches!(g.context[7], Op::Elementwise { bytes_per_token: 76800.0, .. }));
        assert!(Graph::dense(&m, 3, 1, d).is_err(), "64 heads over 3 GPUs");
    }

    #[test]
    fn quantisation_comes_from_the_checkpoint_unless_set() {
        let mut c = qwen3_32b();
        c["quantization_config"] = json!({"quant_method": "fp8", "weight_block_size": [128, 128], "activation_scheme": "dynamic"});
        let m = ModelShape::from_config(&c).unwrap();
        assert_eq!(m.gemm, Some(GemmQuant::Fp8Block));
        assert_eq!(m.kv, Some(KvQuant::Fp8));
        // vLLM has no fp8 attention kernel in its tables: bf16 unless asked for.
        assert_eq!(Dtypes::resolve(&m, Backend::Vllm, None, None, None).fmha, FmhaQuant::Bfloat16);
        assert_eq!(Dtypes::resolve(&m, Backend::Sglang, None, None, None).fmha, FmhaQuant::Fp8);
        assert_eq!(Dtypes::resolve(&m, Backend::Sglang, Some(GemmQuant::Bfloat16), None, None).gemm, GemmQuant::Bfloat16);
        c["architectures"] = json!(["DeepseekV3ForCausalLM"]);
        assert!(ModelShape::from_config(&c).unwrap_err().contains("DeepseekV3ForCausalLM"));
    }
}
