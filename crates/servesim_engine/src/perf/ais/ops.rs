//! The ops of a forward pass and what each costs on the measured tables.
//!
//! A phase (context = prefill, generation = one decode step) is a list of ops, each already
//! multiplied by its layer count (`scale`). Their costs follow `aisimulate-core` 0.13's
//! operators: GEMMs read the GEMM table at m tokens, attention the attention tables plus
//! the memory ops fused into the kernel, norms and activations are memory ops
//! (`bytes / (bw × scaling) + constant`), all-reduce reads the all-reduce table and P2P is
//! analytic. Every sum is taken in the reference's order, so the results are its bits.
//!
//! A new model shape (MoE, MLA) adds op kinds here and their tables in `data`; the phase
//! walk does not change.

use super::data::{AttnKey, KernelData, SystemSpec};
use super::interp::{GridRule, LeafValue, Miss};
use super::quant::{FmhaQuant, GemmQuant, KvQuant};

/// One op of a phase.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// Token embedding lookup: a memory op over `hidden` bf16 values per token.
    Embedding { scale: f64, hidden: u32 },
    /// Norms, residual adds, activations: a memory op of `bytes_per_token` per token.
    Elementwise { name: &'static str, scale: f64, bytes_per_token: f64 },
    /// `m × n × k` with m the phase's tokens (the LM head: one per request).
    Gemm { name: &'static str, scale: f64, n: u32, k: u32, quant: GemmQuant, low_precision_input: bool, logits: bool },
    /// Prefill attention over heads per GPU, with the fused Q/K-norm, RoPE and KV write.
    ContextAttention { scale: f64, heads: u32, kv_heads: u32, head_size: u32, kv: KvQuant, fmha: FmhaQuant, qk_norm: bool },
    /// One decode step's attention, with the fused Q/K-norm.
    GenerationAttention { scale: f64, heads: u32, kv_heads: u32, head_size: u32, kv: KvQuant, qk_norm: bool },
    /// Tensor-parallel all-reduce of `hidden` values per token.
    AllReduce { name: &'static str, scale: f64, hidden: u32, tp: u32 },
    /// Pipeline-parallel hand-over of `hidden` bf16 values per token.
    P2p { scale: f64, hidden: u32, pp: u32 },
    /// The routed experts' GEMMs (the MoE table along tokens; with attention DP the experts
    /// see every rank's tokens).
    Moe {
        scale: f64,
        hidden: u32,
        inter: u32,
        topk: u32,
        experts: u32,
        moe_tp: u32,
        moe_ep: u32,
        attention_dp: u32,
        quant: GemmQuant,
        distribution: &'static str,
    },
    /// The tokens' way to and from the experts (before / after them): an all-reduce over the
    /// experts' GPUs while attention is tensor-parallel, as the framework does it.
    MoeDispatch {
        name: &'static str,
        scale: f64,
        hidden: u32,
        moe_tp: u32,
        moe_ep: u32,
        attention_dp: u32,
        pre: bool,
        framework: Framework,
        quant: GemmQuant,
    },
    /// Latent attention in prefill (the MLA table at the full sequence, less the prefix's share).
    ContextMla { scale: f64, heads: u32, kv: KvQuant, fmha: FmhaQuant },
    /// Latent attention of one decode step.
    GenerationMla { scale: f64, heads: u32, kv: KvQuant },
    /// The latent up/down projections of decode attention (a batched GEMM per head).
    MlaBmm { name: &'static str, scale: f64, heads: u32, quant: GemmQuant, pre: bool },
    /// The whole MLA block measured as one module (TensorRT-LLM, vLLM).
    MlaModule { context: bool, scale: f64, heads: u32, kv: KvQuant, fmha: FmhaQuant, gemm: GemmQuant },
    /// `primary` where its table exists, else the sum of `chain` (the reference's fallback).
    Fallback { name: &'static str, primary: Box<Op>, chain: Vec<Op> },
    /// Two op groups run concurrently: the longer one's time.
    Overlap { name: &'static str, a: Vec<Op>, b: Vec<Op> },
}

/// The framework whose communication pattern a dispatch follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framework {
    Vllm,
    Sglang,
    Trtllm,
}

impl Op {
    /// A short name for breakdowns (`estimate.py --ops` spells them with a phase prefix).
    pub fn name(&self) -> &'static str {
        match self {
            Op::Embedding { .. } => "embedding",
            Op::Elementwise { name, .. } | Op::Gemm { name, .. } | Op::AllReduce { name, .. } => name,
            Op::ContextAttention { .. } | Op::GenerationAttention { .. } | Op::ContextMla { .. } | Op::GenerationMla { .. } => "attention",
            Op::P2p { .. } => "p2p",
            Op::Moe { .. } => "moe",
            Op::MoeDispatch { name, .. } | Op::MlaBmm { name, .. } | Op::Fallback { name, .. } | Op::Overlap { name, .. } => name,
            Op::MlaModule { .. } => "mla_module",
        }
    }
}

/// What one op query is about: the phase's batch, per-request sequence and prefix.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub batch: u32,
    /// Context: new tokens per request; generation: the context length at this step.
    pub s: u32,
    pub prefix: u32,
    /// Tokens through the token-major ops.
    pub tokens: u32,
}

/// A cost miss, naming the op.
pub fn op_miss(op: &Op, m: Miss) -> String {
    format!("{}: {}", op.name(), m.0)
}

/// `bytes / (bandwidth × scaling) + constant`, in ms.
pub fn mem_op_ms(sys: &SystemSpec, bytes: f64) -> f64 {
    let bw = sys.mem_bw.max(1.0);
    let scaling = sys.mem_bw_empirical_scaling_factor.max(1e-9);
    (bytes / (bw * scaling) + sys.mem_empirical_constant_latency) * 1000.0
}

/// Peak tensor FLOPs for a compute dtype name.
pub fn tc_flops(sys: &SystemSpec, dtype: &str) -> Result<f64, String> {
    let v = match dtype {
        "bfloat16" => sys.bfloat16_tc_flops,
        "int8" => sys.int8_tc_flops,
        "fp8" => sys.fp8_tc_flops,
        "fp4" => sys.fp4_tc_flops,
        _ => None,
    };
    v.filter(|v| v.is_finite() && *v > 0.0).ok_or_else(|| format!("{} has no {dtype} tensor-core FLOPs", sys.name))
}

/// The GEMM's speed of light, ms.
pub fn gemm_sol(sys: &SystemSpec, memory: f64, flops: f64, m: f64, n: f64, k: f64) -> f64 {
    let math = 2.0 * m * n * k / flops * 1000.0;
    let mem = memory * (m * n + m * k + n * k) / sys.mem_bw * 1000.0;
    math.max(mem)
}

/// Context attention's speed of light at a table point (full attention, no prefix), ms.
#[allow(clippy::too_many_arguments)]
pub fn context_attention_sol(sys: &SystemSpec, n_kv_lookup: u32, head_size: u32, window: u32, kv_mem: f64, flops: f64, c: &[f64]) -> f64 {
    let (n, s, b) = (c[0], c[1], c[2]);
    let h = head_size as f64;
    let w = window as f64;
    let n_kv = if n_kv_lookup == 0 { n } else { n_kv_lookup as f64 };
    let ops = if window > 0 && s > w { 2.0 * b * s * w * n * h * 2.0 } else { 2.0 * b * (s * s) * n * h * 2.0 / 2.0 };
    let mem = 2.0 * b * (n * s * h + n * s * h) + kv_mem * b * (2.0 * n_kv * s * h);
    (ops / flops * 1000.0).max(mem / sys.mem_bw * 1000.0)
}

/// Generation attention's speed of light at a table point (heads, batch, sequence), ms.
pub fn generation_attention_sol(
    sys: &SystemSpec,
    n_kv_lookup: u32,
    head_size: u32,
    window: u32,
    kv_mem: f64,
    flops: f64,
    c: &[f64],
) -> f64 {
    let (n, b, s) = (c[0], c[1], c[2]);
    let n_kv = if n_kv_lookup == 0 { n } else { n_kv_lookup as f64 };
    let kv_len = if window > 0 { (s - 1.0).min(window as f64) } else { s - 1.0 };
    let h = head_size as f64;
    let ops = 2.0 * b * n * h * 2.0 * kv_len;
    let mem = b * (n * h * 2.0 + 2.0 * n_kv * kv_len * h * kv_mem + n * h * 2.0);
    (ops / flops * 1000.0).max(mem / sys.mem_bw * 1000.0)
}

/// Decode attention computes in fp8 with an fp8 KV cache where the GPU has fp8 tensor cores.
pub fn generation_attention_dtype(sys: &SystemSpec, kv: KvQuant) -> &'static str {
    if kv == KvQuant::Fp8 && sys.sm_version.is_some_and(|sm| sm >= 89) { "fp8" } else { "bfloat16" }
}

fn n_kv_lookup(heads: u32, kv_heads: u32) -> u32 {
    if heads == kv_heads { 0 } else { kv_heads }
}

impl Op {
    /// The op's latency (ms) and energy (W·ms) at `shape`.
    pub fn cost(&self, data: &KernelData, shape: Shape) -> Result<(f64, f64), String> {
        let sys = &data.meta.system;
        let r = match *self {
            Op::Embedding { scale, hidden } => {
                let bytes = shape.tokens as f64 * hidden as f64 * 2.0;
                (mem_op_ms(sys, bytes) * scale, 0.0)
            }
            Op::Elementwise { scale, bytes_per_token, .. } => (mem_op_ms(sys, bytes_per_token * shape.tokens as f64) * scale, 0.0),
            Op::Gemm { scale, n, k, quant, low_precision_input, logits, .. } => {
                let m = if logits { shape.batch } else { shape.tokens };
                let v = gemm(data, quant, low_precision_input, m, n, k).map_err(|e| format!("{}: {e}", self.name()))?;
                (v.latency.max(0.0) * scale, v.energy.max(0.0) * scale)
            }
            Op::ContextAttention { scale, heads, kv_heads, head_size, kv, fmha, qk_norm } => {
                let full = shape.s + shape.prefix;
                let v = context_attention(data, shape.batch, full, heads, kv_heads, head_size, kv, fmha)
                    .map_err(|e| format!("attention: {e}"))?;
                let correction = prefix_correction(full, shape.prefix);
                let (lat, energy) = (v.latency * correction, v.energy * correction);
                let q = (heads * head_size) as f64;
                let kk = (kv_heads * head_size) as f64;
                let mem = |b: f64| mem_op_ms(sys, b);
                let mut extra = 0.0;
                if qk_norm {
                    extra += (mem(q * 2.0) * 2.0 + mem(kk * 2.0) * 2.0) * 2.0;
                }
                extra += mem(q * 2.0 + kk * 2.0) * 2.0; // RoPE
                let fm = fmha.memory();
                extra += mem(kk * fm) + mem(kk * fm); // K and V written to the cache
                ((lat + extra * 1.1).max(0.0) * scale, energy.max(0.0) * scale)
            }
            Op::GenerationAttention { scale, heads, kv_heads, head_size, kv, qk_norm } => {
                let v = generation_attention(data, shape.batch, shape.s, heads, kv_heads, head_size, kv)
                    .map_err(|e| format!("attention: {e}"))?;
                let mut lat = v.latency;
                if qk_norm {
                    let q = (heads * head_size) as f64;
                    let kk = (kv_heads * head_size) as f64;
                    lat += (mem_op_ms(sys, q * 2.0) * 2.0 + mem_op_ms(sys, kk * 2.0) * 2.0) * (2.0 * 1.1);
                }
                (lat.max(0.0) * scale, v.energy.max(0.0) * scale)
            }
            Op::AllReduce { scale, hidden, tp, .. } => {
                if tp <= 1 {
                    return Ok((0.0, 0.0));
                }
                let v = allreduce(data, tp, shape.tokens as f64 * hidden as f64).map_err(|e| format!("{}: {e}", self.name()))?;
                (v.latency.max(0.0) * scale, v.energy.max(0.0) * scale)
            }
            Op::P2p { scale, hidden, pp } => {
                if pp <= 1 {
                    return Ok((0.0, 0.0));
                }
                let bytes = shape.tokens as f64 * hidden as f64 * 2.0;
                ((bytes / sys.inter_node_bw.max(1.0) + sys.p2p_latency) * 1000.0 * scale, 0.0)
            }
            Op::Moe { scale, hidden, inter, topk, experts, moe_tp, moe_ep, attention_dp, quant, distribution } => {
                let tokens = shape.tokens.saturating_mul(attention_dp.max(1));
                let v = super::moe::moe(data, quant, distribution, [hidden, inter, topk, experts, moe_tp, moe_ep], tokens)
                    .map_err(|e| format!("moe: {e}"))?;
                (v.latency.max(0.0) * scale, v.energy.max(0.0) * scale)
            }
            Op::MoeDispatch { scale, hidden, moe_tp, moe_ep, attention_dp, pre, framework, quant, .. } => {
                let ms = super::moe::dispatch(data, framework, quant, hidden, [moe_tp, moe_ep, attention_dp], pre, shape.tokens)
                    .map_err(|e| format!("{}: {e}", self.name()))?;
                (ms.max(0.0) * scale, 0.0)
            }
            Op::ContextMla { scale, heads, kv, fmha } => {
                let v = super::mla::context(data, shape.batch, shape.s, shape.prefix, heads, kv, fmha, None)?;
                (v.latency.max(0.0) * scale, v.energy.max(0.0) * scale)
            }
            Op::GenerationMla { scale, heads, kv } => {
                let v = super::mla::generation(data, shape.batch, shape.s, heads, kv, None)?;
                (v.latency.max(0.0) * scale, v.energy.max(0.0) * scale)
            }
            Op::MlaBmm { scale, heads, quant, pre, .. } => {
                let v = super::mla::bmm(data, shape.batch, heads, quant, pre)?;
                (v.latency.max(0.0) * scale, v.energy.max(0.0) * scale)
            }
            Op::MlaModule { context, scale, heads, kv, fmha, gemm } => {
                let v = if context {
                    super::mla::context(data, shape.batch, shape.s, shape.prefix, heads, kv, fmha, Some(gemm))?
                } else {
                    super::mla::generation(data, shape.batch, shape.s, heads, kv, Some(gemm))?
                };
                (v.latency.max(0.0) * scale, v.energy.max(0.0) * scale)
            }
            // The reference falls back on any data miss of the primary.
            Op::Fallback { ref primary, ref chain, .. } => match primary.cost(data, shape) {
                Ok(r) => r,
                Err(_) => {
                    let (mut lat, mut energy) = (0.0, 0.0);
                    for op in chain {
                        let (l, e) = op.cost(data, shape)?;
                        lat += l;
                        energy += e;
                    }
                    (lat.max(0.0), energy.max(0.0))
                }
            },
            Op::Overlap { ref a, ref b, .. } => {
                let (mut la, mut ea, mut lb, mut eb) = (0.0, 0.0, 0.0, 0.0);
                for op in a {
                    let (l, e) = op.cost(data, shape)?;
                    la += l;
                    ea += e;
                }
                for op in b {
                    let (l, e) = op.cost(data, shape)?;
                    lb += l;
                    eb += e;
                }
                (f64::max(la, lb).max(0.0), (ea + eb).max(0.0))
            }
        };
        Ok(r)
    }
}

fn prefix_correction(full: u32, prefix: u32) -> f64 {
    if full == 0 {
        return 0.0;
    }
    let (f, p) = (full as f64, prefix as f64);
    (f * f - p * p) / (f * f)
}

/// The GEMM table at (m, n, k) for `quant`, with fp8_static's scale overheads taken off.
pub fn gemm(data: &KernelData, quant: GemmQuant, low_precision_input: bool, m: u32, n: u32, k: u32) -> Result<LeafValue, String> {
    let sys = &data.meta.system;
    let table_quant = quant.table_quant();
    let flops = tc_flops(sys, table_quant.compute_dtype())?;
    let memory = table_quant.memory();
    let table = data
        .gemm(table_quant.name())?
        .ok_or_else(|| format!("no GEMM data for quant `{}` (this file has: {})", table_quant.name(), data.gemm_quants().join(", ")))?;
    let sol = |m: f64, n: f64, k: f64| gemm_sol(sys, memory, flops, m, n, k);
    let mut v = table.query(m as f64, n, k, &sol).map_err(|e| e.0)?;
    if quant == GemmQuant::Fp8Static {
        // fp8_static runs the fp8 kernel without the dynamic scale computation (and, with a
        // low-precision input, without the scale matrix): their measured costs come off,
        // floored at the GEMM's own roofline.
        let cs = scale_table(data, false, m, k)?;
        let mut lat = v.latency - cs.latency;
        let mut energy = v.energy - cs.energy;
        if low_precision_input {
            let sm = scale_table(data, true, m, k)?;
            lat -= sm.latency;
            energy -= sm.energy;
        }
        let floor = gemm_sol(sys, GemmQuant::Fp8Static.memory(), tc_flops(sys, "fp8")?, m as f64, n as f64, k as f64);
        v = LeafValue { latency: lat.max(floor), power: v.power, energy };
    }
    Ok(v)
}

/// compute_scale (`matrix = false`) or scale_matrix at (m, k), clamped into the table's
/// range; beyond it compute_scale holds flat and scale_matrix scales by its memory SOL.
fn scale_table(data: &KernelData, matrix: bool, m: u32, k: u32) -> Result<LeafValue, String> {
    let sys = &data.meta.system;
    let what = if matrix { "scale_matrix" } else { "compute_scale" };
    let g = data.scale_table(matrix, "fp8")?.ok_or_else(|| format!("no {what} data for fp8 (fp8_static needs it)"))?;
    let factor = if matrix { 3.0 } else { 2.0 };
    let sol = move |c: &[f64]| factor * c[0] * c[1] / sys.mem_bw * 1000.0;
    // The table's range on each axis (over all its rows: the smallest and largest k of any m).
    let (mut m_lo, mut m_hi, mut k_lo, mut k_hi) = (u32::MAX, 0u32, u32::MAX, 0u32);
    for (c, _) in g.points() {
        m_lo = m_lo.min(c[0]);
        m_hi = m_hi.max(c[0]);
        k_lo = k_lo.min(c[1]);
        k_hi = k_hi.max(c[1]);
    }
    if g.is_empty() {
        return Err(format!("empty {what} table"));
    }
    let (mc, kc) = (m.clamp(m_lo, m_hi), k.clamp(k_lo, k_hi));
    let rule = GridRule { axes: &["m", "k"], sqrt_axis: None, sol: &sol };
    let v = g.query(&rule, &[mc as f64, kc as f64]).map_err(|e| e.0)?;
    if !matrix || (mc == m && kc == k) {
        return Ok(v);
    }
    let (sb, sq) = (sol(&[mc as f64, kc as f64]), sol(&[m as f64, k as f64]));
    if sb > 0.0 && sq > 0.0 {
        let ratio = sq / sb;
        Ok(LeafValue { latency: v.latency * ratio, power: v.power, energy: v.energy * ratio })
    } else {
        Ok(v)
    }
}

/// The context attention table at (batch, full sequence).
#[allow(clippy::too_many_arguments)]
pub fn context_attention(
    data: &KernelData,
    batch: u32,
    full: u32,
    heads: u32,
    kv_heads: u32,
    head_size: u32,
    kv: KvQuant,
    fmha: FmhaQuant,
) -> Result<LeafValue, String> {
    let sys = &data.meta.system;
    let flops = tc_flops(sys, fmha.compute_dtype())?;
    let key = AttnKey { fmha: fmha.name().into(), kv: kv.name().into(), n_kv: n_kv_lookup(heads, kv_heads), head_size, window: 0 };
    let g = data.context(&key)?.ok_or_else(|| format!("no context-attention data for {key:?}"))?;
    let sol = |c: &[f64]| context_attention_sol(sys, key.n_kv, head_size, 0, kv.memory(), flops, c);
    let rule = GridRule { axes: &["num_heads", "seq_len", "batch"], sqrt_axis: Some(1), sol: &sol };
    g.query(&rule, &[heads as f64, full as f64, batch as f64]).map_err(|e| e.0)
}

/// The generation attention table at (batch, context), averaged over five contexts spread
/// over ±10 % (a decode batch's contexts drift).
pub fn generation_attention(
    data: &KernelData,
    batch: u32,
    s: u32,
    heads: u32,
    kv_heads: u32,
    head_size: u32,
    kv: KvQuant,
) -> Result<LeafValue, String> {
    let sys = &data.meta.system;
    let flops = tc_flops(sys, generation_attention_dtype(sys, kv))?;
    let key = AttnKey { fmha: String::new(), kv: kv.name().into(), n_kv: n_kv_lookup(heads, kv_heads), head_size, window: 0 };
    let g = data.generation(&key)?.ok_or_else(|| format!("no generation-attention data for {key:?}"))?;
    let sol = |c: &[f64]| generation_attention_sol(sys, key.n_kv, head_size, 0, kv.memory(), flops, c);
    let rule = GridRule { axes: &["num_heads", "batch", "seq_len"], sqrt_axis: None, sol: &sol };
    let s_min = ((s as f64 * 0.9) as u32).max(1);
    let s_max = ((s as f64 * 1.1) as u32).max(s_min);
    const SAMPLES: u32 = 5;
    let (mut lat, mut energy) = (0.0, 0.0);
    for i in 0..SAMPLES {
        let si = s_min + ((u64::from(s_max - s_min) * u64::from(i)) / u64::from(SAMPLES - 1)) as u32;
        let v = g.query(&rule, &[heads as f64, batch as f64, si as f64]).map_err(|e| e.0)?;
        lat += v.latency;
        energy += v.energy;
    }
    Ok(LeafValue { latency: lat / SAMPLES as f64, power: 0.0, energy: energy / SAMPLES as f64 })
}

/// The measured all-reduce slice that answers `tp`: the size itself within a node (capped
/// at the largest measured), else the largest measured size not above it.
fn allreduce_slice(data: &KernelData, tp: u32) -> u32 {
    let per_node = data.meta.system.num_gpus_per_node;
    let sizes = data.allreduce_sizes();
    let Some(&max) = sizes.iter().max() else { return tp.min(per_node) };
    if tp <= per_node { tp.min(max) } else { sizes.iter().copied().filter(|&t| t <= tp).max().unwrap_or(per_node) }
}

/// The all-reduce of `elements` values over `tp` GPUs; an unmeasured size scales the
/// measured one by the fan-out and bandwidth ratio.
pub fn allreduce(data: &KernelData, tp: u32, elements: f64) -> Result<LeafValue, String> {
    let sys = &data.meta.system;
    if sys.num_gpus_per_node == 72 && tp > 4 {
        return Err(format!("{} routes all-reduce over {tp} GPUs through NCCL, whose table this data file does not hold", sys.name));
    }
    let eff = allreduce_slice(data, tp);
    if eff <= 1 {
        return Ok(LeafValue::default());
    }
    let curve =
        data.allreduce(eff)?.ok_or_else(|| format!("no custom all-reduce data for {eff} GPUs (measured: {:?})", data.allreduce_sizes()))?;
    let mut v = curve.query(elements).map_err(|e| e.0)?;
    if eff < tp {
        let (base, target) = (sys.p2p_bandwidth(eff), sys.p2p_bandwidth(tp));
        let (t, e) = (tp as f64, eff as f64);
        let scale = (t - 1.0) / t * e / (e - 1.0).max(1.0) * base / target;
        v.latency *= scale;
        v.energy *= scale;
    }
    Ok(v)
}
