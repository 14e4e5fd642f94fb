//! The per-rank metrics snapshot published after every pass (Dynamo's `MockerMetrics`, plus
//! the pass's prefix-cache counters for hit-rate charts).

use serde::Serialize;

#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct RankMetrics {
    pub dp_rank: u32,
    /// Distinct physical KV blocks held by requests.
    pub active_decode_blocks: u64,
    pub total_blocks: u64,
    pub gpu_cache_usage_perc: f64,
    pub running_requests: u32,
    pub waiting_requests: u32,
    pub preemptions_total: u64,
    /// Prompt tokens reused from the prefix cache by this pass's admissions.
    pub cache_hit_tokens: u64,
    /// Prompt tokens of this pass's admissions.
    pub cache_query_tokens: u64,
}

impl RankMetrics {
    /// A rank's gauges (the pass's prefix-cache counters start at zero).
    pub fn snapshot(dp_rank: u32, active: u64, total: u64, running: usize, waiting: usize, preemptions_total: u64) -> Self {
        RankMetrics {
            dp_rank,
            active_decode_blocks: active,
            total_blocks: total,
            gpu_cache_usage_perc: if total == 0 { 0.0 } else { active as f64 / total as f64 },
            running_requests: running as u32,
            waiting_requests: waiting as u32,
            preemptions_total,
            cache_hit_tokens: 0,
            cache_query_tokens: 0,
        }
    }
}
