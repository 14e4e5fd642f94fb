//! Dynamo replay cases: `{"trace": PATH, "replay": {keyword arguments of Dynamo's
//! run_trace_replay}}`, the form of the conformance cases.

use crate::SimError;
use crate::cluster::{RouterConfig, RouterMode};
use crate::scenario::{Disagg, SimConfig};
use serde::Deserialize;
use servesim_engine::{LaunchConfig, WorkerType};

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
    /// The KV router's knobs (Dynamo's `KvRouterConfig` names).
    #[serde(default)]
    pub router_config: Option<RouterConfig>,
    /// servesim extension: seed of the harness's random choices.
    #[serde(default)]
    pub seed: Option<u64>,
    /// servesim extension: time-series window in virtual ms.
    #[serde(default)]
    pub timeseries_interval_ms: Option<f64>,
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
        let router_mode = match r.router_mode.as_deref() {
            None | Some("round_robin") => RouterMode::RoundRobin,
            Some("kv_router") => RouterMode::KvRouter,
            Some("random") => RouterMode::Random,
            Some(other) => {
                return Err(SimError::new(format!("replay.router_mode: unknown `{other}`, expected round_robin, kv_router or random")));
            }
        };
        let parse = |v: &Option<serde_json::Value>, field: &str| match v {
            Some(v) => LaunchConfig::from_json(v).map_err(|e| SimError::new(format!("replay.{field}: {e}"))),
            None => Ok(LaunchConfig::default()),
        };
        let launch = parse(&r.extra_engine_args, "extra_engine_args")?;
        let disagg = if r.prefill_engine_args.is_some() || r.decode_engine_args.is_some() {
            // As in Dynamo's replay, each pool must say its role.
            for (field, args, want) in [
                ("prefill_engine_args", &r.prefill_engine_args, WorkerType::Prefill),
                ("decode_engine_args", &r.decode_engine_args, WorkerType::Decode),
            ] {
                let got = parse(args, field)?.engine.worker_type;
                if got != want {
                    return Err(SimError::new(format!(
                        "replay.{field}: disaggregated replay requires engine.worker_type {want:?}, got {got:?}"
                    )));
                }
            }
            Some(Disagg::new(
                parse(&r.prefill_engine_args, "prefill_engine_args")?,
                parse(&r.decode_engine_args, "decode_engine_args")?,
                r.num_prefill_workers.unwrap_or(1),
                r.num_decode_workers.unwrap_or(1),
            ))
        } else {
            None
        };
        let cfg = SimConfig {
            launch,
            num_workers: r.num_workers.unwrap_or(1),
            router_mode,
            router_config: r.router_config.clone().unwrap_or_default(),
            disagg,
            arrival_speedup_ratio: r.arrival_speedup_ratio.unwrap_or(1.0),
            seed: r.seed.unwrap_or(42),
            timeseries_interval_ms: r.timeseries_interval_ms.unwrap_or(1000.0),
            profiles: Default::default(),
        };
        cfg.validate()?;
        Ok(cfg)
    }
}
