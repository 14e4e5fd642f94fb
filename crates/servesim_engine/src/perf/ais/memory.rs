//! The KV pool a measured model leaves on each GPU, by AIConfigurator's memory model:
//! weights, activations for one pass of `max_num_batched_tokens`, NCCL's buffers and the
//! runtime's reserve come out of the GPU's memory times the framework's memory fraction
//! (vLLM `gpu_memory_utilization` and SGLang `mem_fraction_static` of the total, TRT-LLM
//! `free_gpu_memory_fraction` of what the rest leaves free).

use serde::Serialize;

use super::AisModel;
use crate::args::Backend;

const GIB: f64 = (1u64 << 30) as f64;

/// The framework's default memory fraction (the reference CLI's: 0.9, 0.88, 0.9).
pub fn default_fraction(backend: Backend) -> f64 {
    match backend {
        Backend::Vllm | Backend::Trtllm => 0.9,
        Backend::Sglang => 0.88,
    }
}

/// The arithmetic of one rank's KV pool, in bytes.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KvPool {
    pub gpu_memory_bytes: f64,
    pub fraction: f64,
    /// `of_total` (vLLM, SGLang) or `of_free` (TRT-LLM).
    pub fraction_of: &'static str,
    pub weights_bytes: f64,
    pub activations_bytes: f64,
    pub nccl_bytes: f64,
    pub other_bytes: f64,
    pub kv_budget_bytes: f64,
    pub kv_bytes_per_token: u64,
    /// KV tokens of one rank.
    pub kv_tokens: u64,
    /// Attention data-parallel ranks, each with a pool of `kv_tokens`.
    pub attention_dp_ranks: u32,
    /// The engine's pool: `kv_tokens × attention_dp_ranks`.
    pub engine_kv_tokens: u64,
}

/// Activation bytes per token per hidden element, by tensor-parallel size (1, 2, 4, 8), for
/// the dense family.
fn activation_coefficient(backend: Backend, tp: u32) -> Option<f64> {
    let table: [f64; 4] = match backend {
        Backend::Sglang => [14.0, 8.5, 6.5, 6.5],
        Backend::Vllm | Backend::Trtllm => [11.0, 6.5, 5.0, 5.0],
    };
    match tp.min(8) {
        1 => Some(table[0]),
        2 => Some(table[1]),
        4 => Some(table[2]),
        8 => Some(table[3]),
        _ => None,
    }
}

impl AisModel {
    /// The KV pool of one rank when each pass computes at most `max_tokens` tokens, by the
    /// data's framework's memory rules.
    pub fn kv_pool(&self, max_tokens: u64, fraction: f64) -> Result<KvPool, String> {
        let scheduler = self.backend;
        let sys = &self.data.meta.system;
        let capacity = sys.mem_capacity.ok_or_else(|| format!("{} has no memory capacity in its data", sys.name))? as f64;
        let tp_c = self.tp.min(8);
        let coeff =
            activation_coefficient(scheduler, self.tp).ok_or_else(|| format!("tp {}: the memory model knows tp 1, 2, 4 and 8", self.tp))?;
        let h = (self.shape.heads * self.shape.head_size) as f64;
        let (min_act, act_extra, other_extra) = match scheduler {
            Backend::Sglang => (90.0 * 1024.0 * 1024.0, 0.15, 0.20),
            _ => (70.0 * 1024.0 * 1024.0, 0.0, 0.0),
        };
        let mut activations = (2.0 * max_tokens as f64 * h * coeff).max(min_act);
        if act_extra > 0.0 {
            activations *= 1.0 + act_extra;
        }
        let nccl = *sys.nccl_mem.get(&tp_c).ok_or_else(|| format!("{}: no NCCL memory figure for {tp_c} GPUs", sys.name))? as f64;
        let mut other = sys.other_mem.unwrap_or(0) as f64;
        if other_extra > 0.0 {
            other *= 1.0 + other_extra;
        }
        // The reference reports each part in GiB and reads it back.
        let round = |b: f64| (b / GIB) * GIB;
        let (weights, activations, nccl, other) = (round(self.weight_bytes()), round(activations), round(nccl), round(other));
        let non_kv = weights + activations + other + nccl;
        let of_free = scheduler == Backend::Trtllm;
        let budget = if of_free { (capacity - non_kv) * fraction } else { capacity * fraction - non_kv };
        let per_token = self.kv_bytes_per_token();
        if per_token == 0 {
            return Err("the model has no KV heads to size a KV pool by".into());
        }
        let tokens = if budget > 0.0 { (budget / per_token as f64).floor() as u64 } else { 0 };
        Ok(KvPool {
            gpu_memory_bytes: capacity,
            fraction,
            fraction_of: if of_free { "of_free" } else { "of_total" },
            weights_bytes: weights,
            activations_bytes: activations,
            nccl_bytes: nccl,
            other_bytes: other,
            kv_budget_bytes: budget,
            kv_bytes_per_token: per_token,
            kv_tokens: tokens,
            attention_dp_ranks: self.attention_dp,
            engine_kv_tokens: tokens * self.attention_dp as u64,
        })
    }

    /// The GPU's board power (W), where the data names it.
    pub fn board_power_w(&self) -> Option<f64> {
        self.data.meta.system.power
    }
}
