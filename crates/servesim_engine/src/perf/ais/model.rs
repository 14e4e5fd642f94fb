//! A model for the measured-kernel timing: its shape from a Hugging Face `config.json`, the
//! quantisation its checkpoint declares, and its ops per phase.
//!
//! Dense decoders of AIConfigurator's LLAMA family (Llama, Qwen2, Qwen3 — with per-head
//! Q/K norm —, MiMo) are modelled; other architectures are refused by name. The op list is
//! AIConfigurator 0.12's for the family, so the same shape times the same.

use serde_json::Value;

use super::ops::{Framework, Op};
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
    /// The routed experts (MoE models), else None.
    pub moe: Option<MoeShape>,
    /// The latent attention's widths (DeepSeek's MLA), else None.
    pub mla: Option<MlaShape>,
}

/// A mixture of experts' routed part: how many, how many per token, their FFN width, and
/// the shared experts every token also runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MoeShape {
    pub experts: u32,
    pub topk: u32,
    pub inter: u32,
    pub shared: u32,
    /// The expert-load distribution AIConfigurator's tables were measured under for the
    /// family (`power_law_1.01` for DeepSeek, `power_law_1.2` for the generic MoE).
    pub distribution: &'static str,
}

/// MLA's widths: the query and KV latent ranks, the RoPE and no-RoPE head parts, V's head.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MlaShape {
    pub q_lora: u32,
    pub kv_lora: u32,
    pub rope: u32,
    pub nope: u32,
    pub v: u32,
}

/// MoE architectures timed op by op: Qwen3-MoE (GQA + MoE, AIConfigurator's MOE family) and
/// DeepSeek-V3/R1 (MLA + MoE with a shared expert).
const MOE: [&str; 2] = ["Qwen3MoeForCausalLM", "DeepseekV3ForCausalLM"];

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
        let moe_arch = MOE.contains(&arch);
        let dense = DENSE.iter().find(|(a, _)| *a == arch).map(|d| d.1);
        let Some(qk_norm) = dense.or(moe_arch.then_some(arch == "Qwen3MoeForCausalLM")) else {
            // A shape servesim reads (MoE, MLA) whose measured ops are not converted yet.
            let what = match crate::perf::roofline::ModelSpec::from_hf_config(cfg) {
                Ok(m) if m.kv_lora_rank.is_some() => "a mixture of experts with latent attention (MLA)",
                Ok(m) if m.num_experts > 0 => "a mixture of experts",
                _ => "not a dense decoder",
            };
            return Err(format!(
                "architectures: `{arch}` is {what}; the measured-kernel model times dense decoders ({}) and the MoE models {} — time it with the roofline (timing_model type `roofline`, which reads this config.json)",
                DENSE.iter().map(|d| d.0).collect::<Vec<_>>().join(", "),
                MOE.join(", ")
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
        let deepseek = arch == "DeepseekV3ForCausalLM";
        let moe = if moe_arch {
            let experts = field_u32(cfg, "n_routed_experts")?.or(field_u32(cfg, "num_experts")?).ok_or("num_experts is missing")?;
            Some(MoeShape {
                experts,
                topk: required(cfg, "num_experts_per_tok")?,
                inter: required(cfg, "moe_intermediate_size")?,
                shared: if deepseek { 1 } else { 0 },
                distribution: if deepseek { "power_law_1.01" } else { "power_law_1.2" },
            })
        } else {
            None
        };
        // AIConfigurator's defaults where a DeepSeek config leaves a width out.
        let or = |k: &str, d: u32| field_u32(cfg, k).map(|v| v.filter(|&v| v > 0).unwrap_or(d));
        let mla = if deepseek {
            Some(MlaShape {
                q_lora: or("q_lora_rank", 1536)?,
                kv_lora: or("kv_lora_rank", 512)?,
                rope: or("qk_rope_head_dim", 64)?,
                nope: or("qk_nope_head_dim", 128)?,
                v: or("v_head_dim", 128)?,
            })
        } else {
            None
        };
        Ok(ModelShape {
            moe,
            mla,
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

/// A run's parallelism as the ops see it: attention TP, PP, attention DP ranks, and the
/// experts' TP × EP.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Parallel {
    pub tp: u32,
    pub pp: u32,
    pub attention_dp: u32,
    pub moe_tp: u32,
    pub moe_ep: u32,
}

/// Grouped-query attention over `tp` GPUs: the prefill kernel in a context pass, the decode
/// kernel in a generation pass (dense decoders and Qwen3-MoE share it).
fn gqa_attention(m: &ModelShape, tp: u32, layers: f64, d: Dtypes, context: bool) -> Op {
    let (heads, kv_heads) = (m.heads / tp, m.kv_heads_per_gpu(tp));
    if context {
        Op::ContextAttention { scale: layers, heads, kv_heads, head_size: m.head_size, kv: d.kv, fmha: d.fmha, qk_norm: m.qk_norm }
    } else {
        Op::GenerationAttention { scale: layers, heads, kv_heads, head_size: m.head_size, kv: d.kv, qk_norm: m.qk_norm }
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
                gqa_attention(m, tp, l, d, context),
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

    /// A MoE model's ops (`Graph::dense` for the rest): Qwen3-MoE is the dense decoder with
    /// its FFN replaced by router, dispatch, experts and combine (and no prefill LM head, as
    /// AIConfigurator's MOE family has it); DeepSeek-V3/R1 has MLA (the module table where
    /// the framework measured one, else its GEMMs, attention and BMMs) and a shared expert
    /// that decode overlaps with the routed ones.
    pub fn moe(m: &ModelShape, p: &Parallel, d: Dtypes, moe_quant: GemmQuant, framework: Framework) -> Result<Graph, String> {
        let e = m.moe.ok_or("not a MoE model")?;
        let (tp, pp) = (p.tp, p.pp);
        if !m.heads.is_multiple_of(tp) {
            return Err(format!("tp: {} attention heads do not divide over {tp} GPUs", m.heads));
        }
        if e.experts < p.moe_ep {
            return Err(format!("moe_ep_size {} is larger than the {} experts", p.moe_ep, e.experts));
        }
        let (h, l) = (m.hidden, m.layers as f64);
        let norm_bytes = (2 * h) as f64 * 2.0 + (2 * h) as f64 * 2.0;
        let gemm = |name, scale, n, k, quant, lp, logits| Op::Gemm { name, scale, n, k, quant, low_precision_input: lp, logits };
        let routed = || {
            let dispatch = |name, pre| Op::MoeDispatch {
                name,
                scale: l,
                hidden: h,
                moe_tp: p.moe_tp,
                moe_ep: p.moe_ep,
                attention_dp: p.attention_dp,
                pre,
                framework,
                quant: moe_quant,
            };
            vec![
                gemm("router_gemm", l, e.experts, h, GemmQuant::Bfloat16, false, false),
                dispatch("moe_pre_dispatch", true),
                Op::Moe {
                    scale: l,
                    hidden: h,
                    inter: e.inter,
                    topk: e.topk,
                    experts: e.experts,
                    moe_tp: p.moe_tp,
                    moe_ep: p.moe_ep,
                    attention_dp: p.attention_dp,
                    quant: moe_quant,
                    distribution: e.distribution,
                },
                dispatch("moe_post_dispatch", false),
            ]
        };
        let Some(a) = m.mla else {
            // Qwen3-MoE: GQA attention as the dense decoder has it.
            let kv_gpu = m.kv_heads_per_gpu(tp);
            let q_out = m.heads * m.head_size / tp;
            let phase = |context: bool| {
                let mut ops = vec![
                    Op::Embedding { scale: 1.0, hidden: h },
                    Op::Elementwise { name: "add_norm_1", scale: l, bytes_per_token: norm_bytes },
                    gemm("qkv_gemm", l, q_out + m.head_size * kv_gpu * 2, h, d.gemm, false, false),
                    gqa_attention(m, tp, l, d, context),
                    gemm("proj_gemm", l, h, q_out, d.gemm, true, false),
                    Op::Elementwise { name: "add_norm_2", scale: l, bytes_per_token: norm_bytes },
                ];
                ops.extend(routed());
                if !context {
                    ops.push(gemm("logits_gemm", 1.0, m.vocab / tp, h, GemmQuant::Bfloat16, false, true));
                }
                ops.push(Op::AllReduce { name: "embedding_ar", scale: 1.0, hidden: h, tp });
                ops.push(Op::P2p { scale: (pp - 1) as f64, hidden: h, pp });
                ops
            };
            return Ok(Graph { context: phase(true), generation: phase(false) });
        };
        // DeepSeek-V3/R1.
        let heads = m.heads / tp;
        let mla_heads = 128 / tp;
        let si = e.shared * e.inter;
        let shared = vec![
            gemm("shared_gate_up_gemm", l, 2 * si / tp, h, d.gemm, false, false),
            Op::Elementwise { name: "shared_act_gate", scale: l, bytes_per_token: (2 * si / tp) as f64 * 2.0 + (si / tp) as f64 * 2.0 },
            gemm("shared_ffn2_gemm", l, h, si / tp, d.gemm, false, false),
        ];
        let bmm_quant = if d.gemm == GemmQuant::Bfloat16 { GemmQuant::Bfloat16 } else { GemmQuant::Fp8 };
        let downscale = gemm("downscale_gemm", l, a.q_lora + a.kv_lora + a.rope, h, d.gemm, false, false);
        let q_b = gemm("q_b_proj_gemm", l, heads * (a.nope + a.rope), a.q_lora, d.gemm, false, false);
        let proj = gemm("proj_gemm", l, h, heads * a.v, d.gemm, false, false);
        let module = |context| Op::MlaModule { context, scale: l, heads: mla_heads, kv: d.kv, fmha: d.fmha, gemm: d.gemm };
        // vLLM's fallback times the attention as MHA over the per-GPU heads, and its graph
        // adds both layers' all-reduces at the attention TP size.
        let vllm = framework == Framework::Vllm;
        let mha = |context: bool| {
            if context {
                Op::ContextAttention { scale: l, heads, kv_heads: heads, head_size: 128, kv: d.kv, fmha: d.fmha, qk_norm: false }
            } else {
                Op::GenerationAttention { scale: l, heads, kv_heads: heads, head_size: 128, kv: d.kv, qk_norm: false }
            }
        };
        let tail = |ops: &mut Vec<Op>| {
            if vllm {
                ops.push(Op::AllReduce { name: "tp_allreduce", scale: 2.0 * l, hidden: h, tp });
            }
            ops.push(Op::P2p { scale: (pp - 1) as f64, hidden: h, pp });
        };
        let context = vec![
            Op::Embedding { scale: 1.0, hidden: h },
            Op::Elementwise { name: "add_norm_1", scale: l, bytes_per_token: norm_bytes },
            Op::Fallback {
                name: "mla_block",
                primary: Box::new(module(true)),
                chain: vec![
                    downscale.clone(),
                    q_b.clone(),
                    gemm("kv_b_proj_gemm", l, heads * (a.nope + a.v), a.kv_lora, d.gemm, false, false),
                    if vllm { mha(true) } else { Op::ContextMla { scale: l, heads: mla_heads, kv: d.kv, fmha: d.fmha } },
                    proj.clone(),
                ],
            },
            Op::Elementwise { name: "add_norm_2", scale: l, bytes_per_token: norm_bytes },
        ]
        .into_iter()
        .chain(shared.clone())
        .chain(routed())
        .chain([gemm("logits_gemm", 1.0, m.vocab / tp, h, GemmQuant::Bfloat16, false, true)])
        .collect::<Vec<_>>();
        let mut context = context;
        tail(&mut context);
        let decode_chain = if vllm {
            vec![downscale, q_b, mha(false), proj]
        } else {
            vec![
                downscale,
                q_b,
                Op::MlaBmm { name: "bmm_pre", scale: l, heads, quant: bmm_quant, pre: true },
                Op::GenerationMla { scale: l, heads: mla_heads, kv: d.kv },
                Op::MlaBmm { name: "bmm_post", scale: l, heads, quant: bmm_quant, pre: false },
                proj,
            ]
        };
        let mut generation = vec![
            Op::Embedding { scale: 1.0, hidden: h },
            Op::Elementwise { name: "add_norm_1", scale: l, bytes_per_token: norm_bytes },
            Op::Fallback { name: "mla_block", primary: Box::new(module(false)), chain: decode_chain },
            Op::Elementwise { name: "add_norm_2", scale: l, bytes_per_token: norm_bytes },
            Op::Overlap { name: "moe_overlap", a: routed(), b: shared },
            gemm("logits_gemm", 1.0, m.vocab / tp, h, GemmQuant::Bfloat16, false, true),
        ];
        tail(&mut generation);
        Ok(Graph { context, generation })
    }

    /// Bytes of weights one GPU holds (GEMMs and the embedding), per pipeline stage.
    pub fn weight_bytes(&self, m: &ModelShape, tp: u32, pp: u32) -> f64 {
        fn walk(ops: &[Op], m: &ModelShape, tp: u32, w: &mut f64) {
            for op in ops {
                match *op {
                    Op::Gemm { scale, n, k, quant, .. } => *w += n as f64 * k as f64 * quant.memory() * scale,
                    Op::Embedding { scale, hidden } => *w += (m.vocab / tp) as f64 * hidden as f64 * 2.0 * scale,
                    // The experts this GPU holds (gate, up and down per expert).
                    Op::Moe { scale, hidden, inter, experts, moe_tp, moe_ep, quant, .. } => {
                        let raw = hidden as f64 * inter as f64 * experts as f64 * quant.memory() * 3.0;
                        *w += ((raw / moe_ep as f64).floor() / moe_tp as f64).floor() * scale;
                    }
                    Op::Fallback { ref chain, .. } => walk(chain, m, tp, w),
                    Op::Overlap { ref a, ref b, .. } => {
                        walk(a, m, tp, w);
                        walk(b, m, tp, w);
                    }
                    _ => {}
                }
            }
        }
        let mut w = 0.0;
        walk(&self.context, m, tp, &mut w);
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
        c["architectures"] = json!(["MixtralForCausalLM"]);
        assert!(ModelShape::from_config(&c).unwrap_err().contains("MixtralForCausalLM"));
    }
}
