//! What to simulate. Two front doors lead to one [`SimConfig`]:
//! - servesim's own versioned scenario format ([`Scenario`], documented in the README);
//! - Dynamo's replay arguments (`crate::replay`), for users of `run_trace_replay`.

use crate::cluster::RouterMode;
use crate::workload::synthetic::SyntheticSpec;
use crate::SimError;
use serde::{Deserialize, Serialize};
use servesim_engine::{EngineArgs, LaunchConfig};

/// A fully resolved simulation setup (the workload travels separately).
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// Engine arguments of every aggregated worker.
    pub launch: LaunchConfig,
    pub num_workers: u32,
    pub router_mode: RouterMode,
    /// Divides trace arrival times (never engine timings).
    pub arrival_speedup_ratio: f64,
    /// Seeds every random choice of the harness (routing ties, sampling).
    pub seed: u64,
}

impl SimConfig {
    pub fn validate(&self) -> Result<(), SimError> {
        self.launch.validate()?;
        if self.num_workers == 0 || self.num_workers > 4096 {
            return Err(SimError::new("num_workers must be within 1..=4096"));
        }
        if !(self.arrival_speedup_ratio.is_finite() && self.arrival_speedup_ratio > 0.0) {
            return Err(SimError::new("arrival_speedup_ratio must be a positive number"));
        }
        Ok(())
    }
}

pub const SCENARIO_VERSION: u32 = 1;

/// servesim's scenario file (`servesim run SCENARIO.json`, the page, share links).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    #[serde(default = "version")]
    pub version: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Seed of the harness's random choices.
    #[serde(default = "seed")]
    pub seed: u64,
    /// Dynamo's engine arguments, same names and defaults.
    #[serde(default)]
    pub engine: EngineArgs,
    #[serde(default = "one")]
    pub dp_size: u32,
    #[serde(default)]
    pub cluster: ClusterSpec,
    #[serde(default)]
    pub workload: WorkloadSpec,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClusterSpec {
    pub num_workers: u32,
    pub router_mode: RouterMode,
}

impl Default for ClusterSpec {
    fn default() -> Self {
        ClusterSpec { num_workers: 1, router_mode: RouterMode::RoundRobin }
    }
}

/// Where requests come from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum WorkloadSpec {
    Synthetic(SyntheticSpec),
    /// A Mooncake JSONL trace: `path` (relative to the scenario file) natively, or an
    /// uploaded file in the page.
    Trace {
        #[serde(default)]
        path: Option<String>,
        #[serde(default = "trace_block")]
        trace_block_size: u32,
        #[serde(default = "speedup")]
        arrival_speedup_ratio: f64,
    },
}

impl Default for WorkloadSpec {
    fn default() -> Self {
        WorkloadSpec::Synthetic(SyntheticSpec::default())
    }
}

fn version() -> u32 {
    SCENARIO_VERSION
}
fn seed() -> u64 {
    42
}
fn one() -> u32 {
    1
}
fn trace_block() -> u32 {
    512
}
fn speedup() -> f64 {
    1.0
}

impl Default for Scenario {
    fn default() -> Self {
        serde_json::from_str("{}").expect("defaults deserialize")
    }
}

impl Scenario {
    /// Parses and validates a scenario; errors name the field's path.
    pub fn from_json_str(text: &str) -> Result<Self, SimError> {
        let de = &mut serde_json::Deserializer::from_str(text);
        let s: Scenario = serde_path_to_error::deserialize(de).map_err(|e| {
            let path = e.path().to_string();
            if path == "." { SimError::new(e.inner().to_string()) } else { SimError::new(format!("{path}: {}", e.inner())) }
        })?;
        if s.version != SCENARIO_VERSION {
            return Err(SimError::new(format!("version: unsupported scenario version {} (this build reads {SCENARIO_VERSION})", s.version)));
        }
        s.config()?;
        if let WorkloadSpec::Synthetic(spec) = &s.workload {
            spec.validate()?;
        }
        Ok(s)
    }

    pub fn config(&self) -> Result<SimConfig, SimError> {
        let speed = match &self.workload {
            WorkloadSpec::Trace { arrival_speedup_ratio, .. } => *arrival_speedup_ratio,
            WorkloadSpec::Synthetic(_) => 1.0,
        };
        let cfg = SimConfig {
            launch: LaunchConfig { engine: self.engine.clone(), dp_size: self.dp_size },
            num_workers: self.cluster.num_workers,
            router_mode: self.cluster.router_mode,
            arrival_speedup_ratio: speed,
            seed: self.seed,
        };
        cfg.validate()?;
        Ok(cfg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_named_errors() {
        let s = Scenario::from_json_str("{}").unwrap();
        assert_eq!(s.engine.num_gpu_blocks, 16384);
        let s = Scenario::from_json_str(r#"{"engine": {"num_gpu_blocks": 12345, "block_size": 32}}"#).unwrap();
        assert_eq!((s.engine.num_gpu_blocks, s.engine.block_size), (12345, 32));
        let e = Scenario::from_json_str(r#"{"engine": {"num_gpu_blockz": 1}}"#).unwrap_err();
        assert!(e.0.starts_with("engine.num_gpu_blockz: unknown field"), "{e}");
        let e = Scenario::from_json_str(r#"{"workload": {"type": "synthetic", "rate_rps": -1}}"#).unwrap_err();
        assert!(e.0.contains("workload.rate_rps"), "{e}");
        let e = Scenario::from_json_str(r#"{"cluster": {"num_workers": 0}}"#).unwrap_err();
        assert!(e.0.contains("num_workers"), "{e}");
        let e = Scenario::from_json_str(r#"{"version": 9}"#).unwrap_err();
        assert!(e.0.contains("version"), "{e}");
    }
}
