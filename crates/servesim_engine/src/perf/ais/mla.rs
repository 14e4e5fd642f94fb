//! Multi-head latent attention (DeepSeek's MLA) on the measured tables: prefill and decode
//! attention over the 576-wide latent KV, the decode BMMs, and the whole-block module
//! tables some frameworks measure, following `aisimulate-core` 0.13's operators.

use super::data::KernelData;
use super::interp::{GridRule, LeafValue};
use super::ops::{generation_attention_dtype, tc_flops};
use super::quant::{FmhaQuant, GemmQuant, KvQuant};
use serde_json::json;

/// How a missing MLA table's error starts: a `Fallback` op then times its chain instead.
pub const MISSING: &str = "no MLA data";

/// Prefill MLA's speed of light (ms) for `n` heads, `s` new tokens after `prefix`, batch `b`.
fn context_sol(data: &KernelData, kv: KvQuant, n: f64, s: f64, prefix: f64, b: f64, flops: f64) -> f64 {
    let full_s = s + prefix;
    let ops = b * n * 2.0 / 2.0 * (192.0 + 128.0) * (full_s * full_s - prefix * prefix);
    let mem_bytes = b * n * (kv.memory() * full_s * (192.0 + 128.0) + 2.0 * s * (192.0 + 128.0));
    (ops / flops * 1000.0).max(mem_bytes / data.meta.system.mem_bw * 1000.0)
}

/// Decode MLA's speed of light (ms) at `n` heads, batch `b`, context `s`.
fn generation_sol(data: &KernelData, kv: KvQuant, n: f64, b: f64, s: f64, flops: f64) -> f64 {
    let ops = 2.0 * b * n * 1088.0 * s;
    let mem_bytes = b * (n * 1088.0 * 2.0 + (s - 1.0) * 576.0 * kv.memory());
    (ops / flops * 1000.0).max(mem_bytes / data.meta.system.mem_bw * 1000.0)
}

/// The decode module's speed of light: attention plus the pre and post BMMs.
#[allow(clippy::too_many_arguments)]
fn generation_module_sol(data: &KernelData, kv: KvQuant, gemm: GemmQuant, n: f64, b: f64, s: f64, attn_flops: f64, bmm_flops: f64) -> f64 {
    let bw = data.meta.system.mem_bw;
    let attn_ops = 2.0 * b * n * 1088.0 * s;
    let mem_bytes = b * (n * 1088.0 * 2.0 + (s - 1.0) * 576.0 * kv.memory());
    let mut math = attn_ops / attn_flops * 1000.0;
    let mut mem = mem_bytes / bw * 1000.0;
    let bmm_ops = 2.0 * 2.0 * b * n * 128.0 * 512.0;
    let bmm_mem = 2.0 * n * (b * 640.0 + 128.0 * 512.0) * gemm.memory();
    math += bmm_ops / bmm_flops * 1000.0;
    mem += bmm_mem / bw * 1000.0;
    math.max(mem)
}

fn bmm_sol(data: &KernelData, quant: GemmQuant, n: f64, t: f64, flops: f64) -> f64 {
    let ops = 2.0 * t * n * 128.0 * 512.0;
    let mem_bytes = n * (t * 640.0 + 128.0 * 512.0) * quant.memory();
    (ops / flops * 1000.0).max(mem_bytes / data.meta.system.mem_bw * 1000.0)
}

fn prefix_correction(full: u32, prefix: u32) -> f64 {
    if full == 0 {
        return 0.0;
    }
    let (f, p) = (full as f64, prefix as f64);
    (f * f - p * p) / (f * f)
}

/// Prefill MLA (`module`: the whole block's table with its GEMM mode) at batch `b`, `s` new
/// tokens after `prefix`: the table at the full sequence, scaled by the new tokens' share.
#[allow(clippy::too_many_arguments)]
pub fn context(
    data: &KernelData,
    b: u32,
    s: u32,
    prefix: u32,
    heads: u32,
    kv: KvQuant,
    fmha: FmhaQuant,
    module: Option<GemmQuant>,
) -> Result<LeafValue, String> {
    let flops = tc_flops(&data.meta.system, fmha.compute_dtype())?;
    let (kind, key) = match module {
        None => ("context_mla", json!({"fmha": fmha.name(), "kv": kv.name()})),
        Some(g) => ("context_mla_module", json!({"fmha": fmha.name(), "kv": kv.name(), "gemm": g.name()})),
    };
    let g = data.keyed_grid(kind, &key)?.ok_or_else(|| {
        let have: Vec<String> = data.keyed_keys(kind).iter().map(|k| k.to_string()).collect();
        format!(
            "{MISSING} ({kind} {key}; this file has {}) — the reference refuses this pass too; an fp8 fmha_quant_mode has no measured MLA prefill kernel here, set fmha_quant_mode `bfloat16`",
            if have.is_empty() { "none".to_string() } else { have.join(", ") }
        )
    })?;
    let sol = |c: &[f64]| context_sol(data, kv, c[0], c[1], 0.0, c[2], flops);
    let rule = GridRule { axes: &["num_heads", "seq_len", "batch"], sqrt_axis: Some(1), sol: &sol };
    let full = s + prefix;
    let v = g.query(&rule, &[heads as f64, full as f64, b as f64]).map_err(|e| format!("attention: {}", e.0))?;
    let c = prefix_correction(full, prefix);
    Ok(LeafValue { latency: v.latency * c, power: v.power, energy: v.energy * c })
}

/// Decode MLA (or the decode module) at batch `b`, context `s`.
pub fn generation(data: &KernelData, b: u32, s: u32, heads: u32, kv: KvQuant, module: Option<GemmQuant>) -> Result<LeafValue, String> {
    let sys = &data.meta.system;
    let attn_flops = tc_flops(sys, generation_attention_dtype(sys, kv))?;
    let rule_axes = &["num_heads", "batch", "seq_len"];
    let q = [heads as f64, b as f64, s as f64];
    match module {
        None => {
            let key = json!({"kv": kv.name()});
            let g = data.keyed_grid("generation_mla", &key)?.ok_or_else(|| format!("{MISSING} (generation_mla {key})"))?;
            let sol = |c: &[f64]| generation_sol(data, kv, c[0], c[1], c[2], attn_flops);
            g.query(&GridRule { axes: rule_axes, sqrt_axis: None, sol: &sol }, &q).map_err(|e| format!("attention: {}", e.0))
        }
        Some(gemm) => {
            let key = json!({"kv": kv.name(), "gemm": gemm.name()});
            let g = data.keyed_grid("generation_mla_module", &key)?.ok_or_else(|| format!("{MISSING} (generation_mla_module {key})"))?;
            let bmm_flops = tc_flops(sys, gemm.compute_dtype())?;
            let sol = |c: &[f64]| generation_module_sol(data, kv, gemm, c[0], c[1], c[2], attn_flops, bmm_flops);
            g.query(&GridRule { axes: rule_axes, sqrt_axis: None, sol: &sol }, &q).map_err(|e| format!("mla_module: {}", e.0))
        }
    }
}

/// A decode BMM over `tokens` (the batch) at `heads` heads: the measured quant, else bf16's
/// table; a head count not a power of two and not measured reads the next power of two,
/// scaled down by the ratio.
pub fn bmm(data: &KernelData, tokens: u32, heads: u32, quant: GemmQuant, pre: bool) -> Result<LeafValue, String> {
    let op = if pre { "mla_gen_pre" } else { "mla_gen_post" };
    let keys = data.keyed_keys("mla_bmm");
    let has_quant = |q: &str| keys.iter().any(|k| k["quant"] == q);
    let has = |q: &str, h: u32| keys.iter().any(|k| k["quant"] == q && k["op"] == op && k["heads"] == h);
    let selected = if has_quant(quant.name()) { quant.name() } else { "bfloat16" };
    let pow2 = heads.next_power_of_two();
    let (heads, head_scale) = if pow2 == heads || has(selected, heads) { (heads, 1.0) } else { (pow2, heads as f64 / pow2 as f64) };
    let with_op = |q: &str| keys.iter().any(|k| k["quant"] == q && k["op"] == op);
    let table_quant = if with_op(quant.name()) { quant.name() } else { "bfloat16" };
    let key = json!({"quant": table_quant, "op": op, "heads": heads});
    let g = data.keyed_grid("mla_bmm", &key)?.ok_or_else(|| format!("{op}: no MLA BMM data for {key}"))?;
    let flops = tc_flops(&data.meta.system, quant.compute_dtype())?;
    let sol = |c: &[f64]| bmm_sol(data, quant, heads as f64, c[0], flops);
    let v =
        g.query(&GridRule { axes: &["num_tokens"], sqrt_axis: None, sol: &sol }, &[tokens as f64]).map_err(|e| format!("{op}: {}", e.0))?;
    Ok(LeafValue { latency: v.latency * head_scale, power: v.power, energy: v.energy * head_scale })
}
