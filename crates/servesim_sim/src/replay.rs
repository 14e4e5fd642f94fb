//! Dynamo replay cases: `{"trace": PATH, "replay": {keyword arguments of Dynamo's
//! run_trace_replay}}`, the form of the conformance cases.

use crate::cluster::RouterMode;
use crate::scenario::SimConfig;
use crate::SimError;
use serde::Deserialize;
use servesim_engine::LaunchConfig;

#[derive(Clone, Debug, Deserialize)]
pub struct Case {
    #[serde(default)]
    pub name: Option<String>,
    /// Trace path, relative to the case file.
    pub trace: String,
    #[serde(default)]
    pub replay: ReplayArgs,
}

/// The subset of `run_trace_replay`'s keyword arguments servesim understands.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplayArgs {
    #[serde(default)]
    pub num_workers: Option<u32>,
    #[serde(default)]
    pub router_mode: Option<String>,
    #[serde(default)]
    pub extra_engine_args: Option<serde_json::Value>,
    #[serde(default)]
    pub prefill_engine_args: Option<serde_json::Value>,
    #[serde(default)]
    pub decode_engine_args: Option<serde_json::Value>,
    #[serde(default)]
    pub num_prefill_workers: Option<u32>,
    #[serde(default)]
    pub num_decode_workers: Option<u32>,
    #[serde(default)]
    pub trace_block_size: Option<u32>,
    #[serde(default)]
    pub arrival_speedup_ratio: Option<f64>,
    /// servesim extension: seed of the harness's random choices.
    #[serde(default)]
    pub seed: Option<u64>,
}

impl Case {
    pub fn from_json_str(text: &str, source: &str) -> Result<Case, SimError> {
        let de = &mut serde_json::Deserializer::from_str(text);
        serde_path_to_error::deserialize(de).map_err(|e| SimError::new(format!("{source}: {}: {}", e.path(), e.inner())))
    }

    pub fn trace_block_size(&self) -> u32 {
        self.replay.trace_block_size.unwrap_or(512)
    }

    pub fn config(&self) -> Result<SimConfig, SimError> {
        let r = &self.replay;
        if r.prefill_engine_args.is_some() || r.decode_engine_args.is_some() || r.num_prefill_workers.is_some() || r.num_decode_workers.is_some() {
            return Err(SimError::new("replay: disaggregated prefill/decode is not supported yet"));
        }
        let router_mode = match r.router_mode.as_deref() {
            None | Some("round_robin") => RouterMode::RoundRobin,
            Some(other) => return Err(SimError::new(format!("replay.router_mode: `{other}` is not supported yet (round_robin is)"))),
        };
        let launch = match &r.extra_engine_args {
            Some(v) => LaunchConfig::from_json(v).map_err(|e| SimError::new(format!("replay.extra_engine_args: {e}")))?,
            None => LaunchConfig::default(),
        };
        let cfg = SimConfig {
            launch,
            num_workers: r.num_workers.unwrap_or(1),
            router_mode,
            arrival_speedup_ratio: r.arrival_speedup_ratio.unwrap_or(1.0),
            seed: r.seed.unwrap_or(42),
        };
        cfg.validate()?;
        Ok(cfg)
    }
}
