//! Mixture-of-experts ops on the measured tables: the experts' GEMMs (AIConfigurator's MoE
//! table, one curve along tokens per expert shape, parallelism, quant and token
//! distribution) and the dispatch around them, following `aisimulate-core` 0.13's operators.

use super::data::KernelData;
use super::interp::LeafValue;
use super::ops::{Framework, allreduce, tc_flops};
use super::quant::GemmQuant;
use serde_json::json;

/// The experts' speed of light at `tokens` (ms): their GEMM FLOPs against the quant's
/// tensor cores, or the bytes of activations, intermediates and the weights of the experts
/// the tokens touch against memory bandwidth. Integer arithmetic in the reference's order.
#[allow(clippy::too_many_arguments)]
pub fn moe_sol(
    data: &KernelData,
    quant: GemmQuant,
    gemms: u64,
    tokens: u32,
    [hidden, inter, topk, experts, moe_tp, moe_ep]: [u32; 6],
    flops: f64,
) -> f64 {
    let sys = &data.meta.system;
    let total = tokens as u64 * topk as u64;
    let ep = (moe_ep as u64).max(1);
    let tp = (moe_tp as u64).max(1);
    let (h, i, ne) = (hidden as u64, inter as u64, experts as u64);
    let ops = total * h * i * gemms * 2 / ep / tp;
    let mem = total / ep * h * 2 + total / ep * i * gemms / tp + h * i * gemms / tp * std::cmp::min(ne / ep, total / ep);
    let mem = mem as f64 * quant.memory();
    let math = ops as f64 / flops * 1000.0;
    math.max(mem / sys.mem_bw * 1000.0)
}

/// The MoE table for `quant` and `distribution` (else `uniform` when the quant has no rows
/// of that distribution at all) at `tokens` (every rank's, with attention DP).
pub fn moe(data: &KernelData, quant: GemmQuant, distribution: &str, shape: [u32; 6], tokens: u32) -> Result<LeafValue, String> {
    let [hidden, inter, topk, experts, moe_tp, moe_ep] = shape;
    let key = |d: &str| json!({"quant": quant.name(), "distribution": d, "hidden": hidden, "inter": inter, "topk": topk, "experts": experts, "moe_tp": moe_tp, "moe_ep": moe_ep});
    let known = data.keyed_keys("moe");
    let has_dist = known.iter().any(|k| k["quant"] == quant.name() && k["distribution"] == distribution);
    let dist = if has_dist { distribution } else { "uniform" };
    let k = key(dist);
    let curve = data.keyed_curve("moe", &k)?.ok_or_else(|| {
        format!(
            "no MoE data for {} experts × top-{topk}, hidden {hidden}, width {inter}, moe_tp {moe_tp} × moe_ep {moe_ep}, {} ({dist}) in this data file",
            experts,
            quant.name()
        )
    })?;
    let flops = tc_flops(&data.meta.system, quant.compute_dtype())?;
    let sol = |t: f64| moe_sol(data, quant, 3, t.round() as u32, shape, flops);
    curve.query_sol(tokens as f64, "num_tokens", &sol).map_err(|e| e.0)
}

/// An NCCL collective (`op`: all_gather, reduce_scatter...) of `elements` half values over
/// `gpus`: the measured fan-out that answers (the size itself within a node, capped at the
/// largest measured), an unmeasured larger one scaled by fan-out and bandwidth.
pub fn nccl(data: &KernelData, op: &str, gpus: u32, elements: f64) -> Result<f64, String> {
    if gpus <= 1 {
        return Ok(0.0);
    }
    let sys = &data.meta.system;
    let fanouts: Vec<u32> =
        data.keyed_keys("nccl").iter().filter(|k| k["op"] == op).filter_map(|k| k["gpus"].as_u64()).map(|g| g as u32).collect();
    let effective = match fanouts.iter().max() {
        None => gpus,
        Some(&max) if gpus <= sys.num_gpus_per_node => gpus.min(max),
        Some(_) => fanouts.iter().copied().filter(|&f| f <= gpus).max().unwrap_or(sys.num_gpus_per_node),
    };
    if effective <= 1 {
        return Ok(0.0);
    }
    let curve = data
        .keyed_curve("nccl", &json!({"op": op, "gpus": effective}))?
        .ok_or_else(|| format!("no NCCL {op} data for {effective} GPUs in this data file"))?;
    let mut v = curve.query(elements).map_err(|e| e.0)?;
    if gpus > effective {
        let (n, m) = (gpus as f64, effective as f64);
        v.latency *= (n - 1.0) / n * m / (m - 1.0).max(1.0) * sys.p2p_bandwidth(effective) / sys.p2p_bandwidth(gpus);
    }
    Ok(v.latency.max(0.0))
}

/// Milliseconds of one MoE dispatch (`pre`: before the experts; else the combine after),
/// as each framework moves tokens: with tensor-parallel attention an all-reduce over the
/// experts' GPUs; with attention data parallelism an NCCL all-gather before and a
/// reduce-scatter after, of every rank's tokens (SGLang with both: a reduce-scatter and an
/// all-gather around the TP group; TensorRT-LLM on Blackwell gathers fp8/fp4 activations).
pub fn dispatch(
    data: &KernelData,
    framework: Framework,
    quant: GemmQuant,
    hidden: u32,
    [moe_tp, moe_ep, attention_dp]: [u32; 3],
    pre: bool,
    tokens: u32,
) -> Result<f64, String> {
    let gpus = (moe_tp * moe_ep).max(1);
    let dp = attention_dp.max(1);
    let attn_tp = (gpus / dp).max(1);
    let h = hidden as f64;
    let ar = || allreduce(data, gpus, tokens as f64 * h).map(|v| v.latency.max(0.0));
    let gather_or_scatter = |width: f64| nccl(data, if pre { "all_gather" } else { "reduce_scatter" }, gpus, (tokens * dp) as f64 * width);
    // The common rule (SGLang without both kinds of parallelism, TensorRT-LLM before
    // Blackwell): an all-reduce for tensor-parallel attention, else a gather or scatter for
    // attention DP, else nothing.
    let one_collective = || {
        if attn_tp > 1 {
            ar()
        } else if dp > 1 {
            gather_or_scatter(h)
        } else {
            Ok(0.0)
        }
    };
    match framework {
        Framework::Vllm => {
            let mut total = 0.0;
            if attn_tp > 1 {
                total += ar()?;
            }
            if dp > 1 {
                total += gather_or_scatter(h)?;
            }
            Ok(total)
        }
        Framework::Sglang => {
            if attn_tp > 1 && dp > 1 {
                let (a, b) = if pre {
                    (nccl(data, "reduce_scatter", attn_tp, tokens as f64 * h)?, nccl(data, "all_gather", gpus, (tokens * dp) as f64 * h)?)
                } else {
                    (nccl(data, "reduce_scatter", gpus, (tokens * dp) as f64 * h)?, nccl(data, "all_gather", attn_tp, tokens as f64 * h)?)
                };
                Ok(a + b)
            } else {
                one_collective()
            }
        }
        Framework::Trtllm => {
            let sys = &data.meta.system;
            if sys.sm_version == Some(100) {
                if dp > 1 && moe_tp == 1 && sys.num_gpus_per_node >= 72 {
                    return Err("TensorRT-LLM's NVLink all-to-all (NVL72 with attention DP) is not converted yet".into());
                }
                if dp > 1 {
                    let width = if pre {
                        let (x, sf) = match quant {
                            GemmQuant::Nvfp4 => (0.25, 0.25 / 8.0),
                            GemmQuant::Fp8 | GemmQuant::Fp8Block => (0.5, 0.0),
                            _ => (1.0, 0.0),
                        };
                        h * (x + sf)
                    } else {
                        h
                    };
                    gather_or_scatter(width)
                } else if attn_tp > 1 {
                    ar()
                } else {
                    Ok(0.0)
                }
            } else {
                one_collective()
            }
        }
    }
}
