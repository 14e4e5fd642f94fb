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
