//! The KV offload tiers' arguments, in Dynamo's JSON form: `engine.native_host_offload` (G2,
//! host memory) and `engine.g3_offload` (G3, secondary storage behind G2), with the
//! reference's defaults and validation messages. Bandwidths are decimal GB/s (1e9 bytes/s);
//! 0 means unlimited. A block moves `block_size × kv_cache_bytes_per_token` bytes.

use serde::{Deserialize, Deserializer, Serialize};

/// Who shares a G2 pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum G2Scope {
    /// One private host pool per DP rank, with its own FIFO lanes.
    DpRankLocal,
    /// One pool for the whole deployment; transfers share bandwidth equally.
    ClusterShared,
}

// By hand, for the reference's messages (`worker_local` is named as a G3 scope).
impl<'de> Deserialize<'de> for G2Scope {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        match s.as_str() {
            "dp_rank_local" => Ok(G2Scope::DpRankLocal),
            "cluster_shared" => Ok(G2Scope::ClusterShared),
            "worker_local" => Err(serde::de::Error::custom(
                "host_offload.scope `worker_local` is a G3 scope; use `dp_rank_local` for per-DP-rank G2 caches",
            )),
            other => {
                Err(serde::de::Error::custom(format!("unknown host_offload.scope `{other}`; expected `dp_rank_local` or `cluster_shared`")))
            }
        }
    }
}

/// `engine.native_host_offload`: vLLM's host (G2) tier. Field order is the reference's (its
/// unknown-field message lists them in this order).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NativeHostOffload {
    #[serde(default = "dp_rank_local")]
    pub scope: G2Scope,
    /// Host blocks per DP rank (`dp_rank_local`) or of the whole pool (`cluster_shared`).
    pub num_host_blocks: u64,
    #[serde(default = "thirty_two")]
    pub d2h_bandwidth_gbps: f64,
    #[serde(default = "thirty_two")]
    pub h2d_bandwidth_gbps: f64,
    #[serde(default = "eighty")]
    pub shared_d2h_bandwidth_gbps: f64,
    #[serde(default = "eighty")]
    pub shared_h2d_bandwidth_gbps: f64,
    #[serde(default)]
    pub latency_to_first_byte_ms: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_layout_id: Option<String>,
}

/// Who shares a G3 pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum G3Scope {
    /// One pool per worker, shared by its DP ranks.
    WorkerLocal,
    /// One pool for the deployment, under shared bandwidth caps.
    ClusterShared,
}

/// `engine.g3_offload`: secondary storage written through from G2 and read back into it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct G3Offload {
    pub scope: G3Scope,
    pub num_g3_blocks: u64,
    #[serde(default = "tenth")]
    pub latency_to_first_byte_ms: f64,
    #[serde(default = "ten")]
    pub read_bandwidth_gbps: f64,
    #[serde(default = "ten")]
    pub write_bandwidth_gbps: f64,
    #[serde(default = "eighty")]
    pub shared_read_bandwidth_gbps: f64,
    #[serde(default = "eighty")]
    pub shared_write_bandwidth_gbps: f64,
}

fn dp_rank_local() -> G2Scope {
    G2Scope::DpRankLocal
}
fn thirty_two() -> f64 {
    32.0
}
fn eighty() -> f64 {
    80.0
}
fn ten() -> f64 {
    10.0
}
fn tenth() -> f64 {
    0.1
}

impl NativeHostOffload {
    pub(super) fn validate(&self) -> Result<(), String> {
        if self.num_host_blocks == 0 {
            return Err("engine.native_host_offload.num_host_blocks must be positive".into());
        }
        let timings = [
            ("d2h_bandwidth_gbps", self.d2h_bandwidth_gbps),
            ("h2d_bandwidth_gbps", self.h2d_bandwidth_gbps),
            ("shared_d2h_bandwidth_gbps", self.shared_d2h_bandwidth_gbps),
            ("shared_h2d_bandwidth_gbps", self.shared_h2d_bandwidth_gbps),
            ("latency_to_first_byte_ms", self.latency_to_first_byte_ms),
        ];
        for (name, v) in timings {
            if !(v.is_finite() && v >= 0.0) {
                return Err(format!("engine.native_host_offload.{name} must be finite and non-negative"));
            }
        }
        if self.scope == G2Scope::ClusterShared && self.kv_layout_id.as_deref().is_none_or(|id| id.trim().is_empty()) {
            return Err("engine.native_host_offload: cluster_shared native_host_offload requires a nonempty kv_layout_id".into());
        }
        Ok(())
    }
}

impl G3Offload {
    pub(super) fn validate(&self) -> Result<(), String> {
        if self.num_g3_blocks == 0 {
            return Err("engine.g3_offload.num_g3_blocks must be positive".into());
        }
        let timings = [
            self.latency_to_first_byte_ms,
            self.read_bandwidth_gbps,
            self.write_bandwidth_gbps,
            self.shared_read_bandwidth_gbps,
            self.shared_write_bandwidth_gbps,
        ];
        if timings.iter().any(|v| !(v.is_finite() && *v >= 0.0)) {
            return Err("engine.g3_offload: g3_offload timing must be finite and non-negative".into());
        }
        Ok(())
    }
}
