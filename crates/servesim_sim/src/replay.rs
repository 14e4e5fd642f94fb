//! Dynamo replay cases: `{"trace": PATH, "replay": {keyword arguments of Dynamo's
//! run_trace_replay}}`, the form of the conformance cases.

use crate::SimError;
use crate::cluster::{RouterConfig, RouterMode};
use crate::report::{Column, Slo};
use crate::scenario::{Disagg, SimConfig};
use crate::workload::TraceFormat;
use crate::workload::mooncake::TraceOptions;
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
    /// The per-request columns to answer with (the reference's case files name them);
    /// default: first_token_ms, end_ms, output_tokens, reused_input_tokens, readmissions.
    #[serde(default)]
    pub per_request_columns: Option<Vec<String>>,
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
    /// Closed loop: at most this many sessions in flight.
    #[serde(default)]
    pub replay_concurrency: Option<u32>,
    #[serde(default)]
    pub sla_ttft_ms: Option<f64>,
    #[serde(default)]
    pub sla_itl_ms: Option<f64>,
    #[serde(default)]
    pub sla_e2e_ms: Option<f64>,
    #[serde(default)]
    pub kv_event_lag_ms: Option<f64>,
    #[serde(default)]
    pub max_sim_time_ms: Option<f64>,
    /// `mooncake` (default), `mooncake-delta`, `applied_compute_agentic`, `dynamo` or
    /// `agentic_mooncake`.
    #[serde(default)]
    pub trace_format: Option<String>,
    /// The model an agentic trace's requests run on (the reference requires it for request
    /// graphs; servesim runs every request on the configured engine either way).
    #[serde(default)]
    pub execution_model: Option<String>,
    /// The planner in the loop (Dynamo's `PlannerConfig` keys).
    #[serde(default)]
    pub planner_config: Option<serde_json::Value>,
    /// The KV router's measured prefill-load estimate (with `router_config`'s
    /// `router_prefill_load_model: ais`): the AIS timing model's fields.
    #[serde(default)]
    pub ais_perf_config: Option<serde_json::Map<String, serde_json::Value>>,
}

impl Case {
    pub fn from_json_str(text: &str, source: &str) -> Result<Case, SimError> {
        let de = &mut serde_json::Deserializer::from_str(text);
        serde_path_to_error::deserialize(de).map_err(|e| SimError::new(format!("{source}: {}: {}", e.path(), e.inner())))
    }

    pub fn trace_block_size(&self) -> u32 {
        self.replay.trace_block_size.unwrap_or(512)
    }

    /// How its trace is read.
    pub fn trace_options(&self) -> Result<TraceOptions, SimError> {
        let format = match &self.replay.trace_format {
            None => TraceFormat::Mooncake,
            Some(f) => TraceFormat::parse(f).map_err(|e| SimError::new(format!("replay.trace_format: {e}")))?,
        };
        if format == TraceFormat::AgenticMooncake && self.replay.execution_model.as_deref().is_none_or(|m| m.trim().is_empty()) {
            return Err(SimError::new("replay.execution_model: agentic execution requires a configured target model"));
        }
        if format.needs_closed_loop() && self.replay.replay_concurrency.is_none() {
            return Err(SimError::new(
                "replay.trace_format: applied_compute_agentic needs replay_concurrency (its sessions have no start times)",
            ));
        }
        Ok(TraceOptions { block_tokens: self.trace_block_size(), format, closed_loop: self.replay.replay_concurrency.is_some() })
    }

    /// The per-request columns of its answer.
    pub fn columns(&self) -> Result<Vec<Column>, SimError> {
        match &self.per_request_columns {
            None => Ok(Column::DEFAULT.to_vec()),
            Some(names) => names.iter().map(|n| Column::parse(n).map_err(|e| SimError::new(format!("per_request_columns: {e}")))).collect(),
        }
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
        if r.replay_concurrency == Some(0) {
            return Err(SimError::new("replay.replay_concurrency must be at least 1"));
        }
        let slo = Slo { ttft_ms: r.sla_ttft_ms, itl_ms: r.sla_itl_ms, e2e_ms: r.sla_e2e_ms, ..Slo::default() };
        slo.validate_per_request("replay.sla_").map_err(SimError::new)?;
        if let Some(lag) = r.kv_event_lag_ms {
            if !(lag.is_finite() && lag >= 0.0) {
                return Err(SimError::new(format!("replay.kv_event_lag_ms must be finite and non-negative, got {lag}")));
            }
            if lag > 0.0 && router_mode != RouterMode::KvRouter {
                return Err(SimError::new("replay.kv_event_lag_ms only supports router_mode kv_router"));
            }
        }
        if let Some(t) = r.max_sim_time_ms
            && !(t.is_finite() && t >= 0.0)
        {
            return Err(SimError::new(format!("replay.max_sim_time_ms must be finite and non-negative, got {t}")));
        }
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
        let disagg_mode = disagg.is_some();
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
            kernels: Default::default(),
            gpu_hour_usd: None,
            concurrency: r.replay_concurrency,
            slo,
            kv_event_lag_ms: r.kv_event_lag_ms.unwrap_or(0.0),
            max_sim_time_ms: r.max_sim_time_ms,
            scaling: scaling_of(r, disagg_mode)?,
            ais_perf_config: r.ais_perf_config.clone(),
        };
        cfg.validate()?;
        Ok(cfg)
    }
}

/// The planner a case runs with, as Dynamo's replay reads `planner_config`.
fn scaling_of(r: &ReplayArgs, disaggregated: bool) -> Result<Option<crate::planner::config::Scaling>, SimError> {
    use crate::planner::config::{Mode, PlannerConfig, Scaling};
    let Some(p) = &r.planner_config else { return Ok(None) };
    // A string holds the JSON inline (a path would be the caller's to read).
    let value = match p {
        serde_json::Value::String(text) => serde_json::from_str(text)
            .map_err(|e| SimError::new(format!("replay.planner_config: neither a JSON object nor JSON text ({e})")))?,
        v => v.clone(),
    };
    let cfg = PlannerConfig::from_json(&value, "replay.planner_config")?;
    match (cfg.mode, disaggregated) {
        (Mode::Disagg, false) => {
            Err(SimError::new("replay.planner_config: disagg planner replay requires prefill and decode engine arguments"))
        }
        (Mode::Agg, true) => Err(SimError::new(
            "replay.planner_config: mode 'agg' runs aggregated workers (extra_engine_args), not prefill and decode pools",
        )),
        _ => Ok(Some(Scaling::Planner(cfg))),
    }
}
