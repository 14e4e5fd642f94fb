//! The planner's settings: Dynamo's `planner_config` (the keys its offline replay reads, with
//! its defaults and validation messages), or a scripted list of scaling targets.

use crate::SimError;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Agg,
    Disagg,
}

/// What the planner keeps within bounds (Dynamo's "easy" targets; `sla` needs NVIDIA's
/// performance model, which servesim does not have).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Target {
    /// KV use above 100 % on any worker: +1; below 60 % on all: −1.
    Throughput,
    /// Above 40 %: +1; below 10 %: −1.
    Latency,
    /// The user's thresholds.
    Load,
}

/// Planner settings, in Dynamo's names.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlannerConfig {
    pub mode: Mode,
    pub optimization_target: Target,
    /// Seconds between load decisions.
    pub load_adjustment_interval_seconds: u32,
    /// Seconds between ticks (a divisor of the load interval; by default equal to it).
    pub scale_interval_seconds: f64,
    /// `load` target: KV use (percent) at which the decode (or aggregated) pool grows / shrinks.
    pub decode_scale_up_kv_rate: Option<f64>,
    pub decode_scale_down_kv_rate: Option<f64>,
    /// `load` target, disaggregated: queued prefill tokens at which the prefill pool grows / shrinks.
    pub prefill_scale_up_queue_tokens: Option<u64>,
    pub prefill_scale_down_queue_tokens: Option<u64>,
    pub min_endpoint: u32,
    pub prefill_min_endpoint: Option<u32>,
    pub decode_min_endpoint: Option<u32>,
    /// GPUs the planner may use in all (−1: no limit) and at least (−1: no floor).
    pub max_gpu_budget: i64,
    pub min_gpu_budget: i64,
}

/// Keys of Dynamo's `PlannerConfig` that do not change an offline replay under the targets
/// servesim runs (deployment, metrics, predictors, the SLA target's settings): accepted and
/// ignored, so a real planner configuration works as it is.
const INERT: &[&str] = &[
    "environment",
    "namespace",
    "backend",
    "log_dir",
    "throughput_adjustment_interval_seconds",
    "throughput_adjustment_interval",
    "max_throughput_scaling_replicas",
    "control_api_port",
    "decode_engine_num_gpu",
    "prefill_engine_num_gpu",
    "profile_results_dir",
    "ttft_ms",
    "itl_ms",
    "load_predictor",
    "load_predictor_log1p",
    "prophet_window_size",
    "load_predictor_warmup_trace",
    "kalman_q_level",
    "kalman_q_trend",
    "kalman_r",
    "kalman_min_points",
    "metric_pulling_prometheus_endpoint",
    "metric_pulling_prometheus_token",
    "metric_pulling_prometheus_token_file",
    "metric_pulling_prometheus_ssl_verify",
    "metric_pulling_prometheus_extra_query_params",
    "metric_pulling_prometheus_ca_bundle",
    "metric_pulling_prometheus_request_timeout_seconds",
    "metric_reporting_prometheus_port",
    "throughput_metrics_source",
    "model_name",
    "global_planner_namespace",
    "enable_throughput_scaling",
    "enable_load_scaling",
    "max_num_fpm_samples",
    "fpm_sample_bucket_size",
    "load_scaling_down_sensitivity",
    "load_min_observations",
    "speculative_nextn",
    "advisory",
    "report_interval_hours",
    "pre_deployment_sweeping_mode",
];

impl PlannerConfig {
    /// Reads a `planner_config` object; errors name the key (`planner_config.mode: ...`).
    pub fn from_json(v: &Value, at: &str) -> Result<Self, SimError> {
        let err = |key: &str, msg: String| SimError::new(format!("{at}.{key}: {msg}"));
        let obj: &Map<String, Value> = v.as_object().ok_or_else(|| SimError::new(format!("{at}: expected an object")))?;
        const READ: &[&str] = &[
            "mode",
            "optimization_target",
            "load_adjustment_interval_seconds",
            "load_adjustment_interval",
            "scheduling",
            "decode_scale_up_kv_rate",
            "decode_scale_down_kv_rate",
            "prefill_scale_up_queue_tokens",
            "prefill_scale_down_queue_tokens",
            "min_endpoint",
            "prefill_min_endpoint",
            "decode_min_endpoint",
            "max_gpu_budget",
            "min_gpu_budget",
            "enable_power_awareness",
            "total_gpu_power_limit",
            "aic_interpolation",
            "ais_perf_model",
        ];
        for k in obj.keys() {
            if !READ.contains(&k.as_str()) && !INERT.contains(&k.as_str()) {
                return Err(err(k, "unknown planner setting".into()));
            }
        }
        let str_of =
            |k: &str| obj.get(k).filter(|v| !v.is_null()).map(|v| v.as_str().ok_or_else(|| err(k, "expected a string".into()))).transpose();
        let num_of = |k: &str| -> Result<Option<f64>, SimError> {
            obj.get(k).filter(|v| !v.is_null()).map(|v| v.as_f64().ok_or_else(|| err(k, "expected a number".into()))).transpose()
        };
        let int_of = |k: &str| -> Result<Option<i64>, SimError> {
            match num_of(k)? {
                Some(x) if x.fract() != 0.0 => Err(err(k, "Input should be a valid integer, got a number with a fractional part".into())),
                Some(x) => Ok(Some(x as i64)),
                None => Ok(None),
            }
        };
        let mode = match str_of("mode")?.unwrap_or("disagg") {
            "agg" => Mode::Agg,
            "disagg" => Mode::Disagg,
            m @ ("prefill" | "decode") => {
                return Err(err("mode", format!("planner-in-the-loop replay supports mode 'agg' or 'disagg', got '{m}'")));
            }
            m => return Err(err("mode", format!("Input should be 'disagg', 'prefill', 'decode' or 'agg', got '{m}'"))),
        };
        let target = match str_of("optimization_target")?.unwrap_or("throughput") {
            "throughput" => Target::Throughput,
            "latency" => Target::Latency,
            "load" => Target::Load,
            "sla" => {
                return Err(err(
                    "optimization_target",
                    "'sla' needs NVIDIA's AIS performance model (the aisimulate packages), which servesim does not have; use throughput, latency or load".into(),
                ));
            }
            t => return Err(err("optimization_target", format!("Input should be 'throughput', 'latency', 'load' or 'sla', got '{t}'"))),
        };
        for k in ["aic_interpolation", "ais_perf_model"] {
            if obj.get(k).is_some_and(|v| !v.is_null()) {
                return Err(err(k, "needs NVIDIA's AIS performance model, which servesim does not have".into()));
            }
        }
        if obj.get("enable_power_awareness").and_then(Value::as_bool) == Some(true) {
            return Err(err("enable_power_awareness", "power awareness needs a Kubernetes deployment; not in replay".into()));
        }
        let interval = int_of("load_adjustment_interval_seconds")?.or(int_of("load_adjustment_interval")?).unwrap_or(5);
        if interval <= 0 {
            return Err(err("load_adjustment_interval_seconds", "Input should be greater than 0".into()));
        }
        let scale_interval = match obj.get("scheduling") {
            None | Some(Value::Null) => interval as f64,
            Some(Value::Object(s)) => {
                if let Some(k) = s
                    .keys()
                    .find(|k| !["scale_interval_seconds", "tick_max_duration_seconds", "external_plugins", "gateway"].contains(&k.as_str()))
                {
                    return Err(err(&format!("scheduling.{k}"), "Extra inputs are not permitted".into()));
                }
                match s.get("scale_interval_seconds") {
                    None => interval as f64,
                    Some(v) => v.as_f64().ok_or_else(|| err("scheduling.scale_interval_seconds", "expected a number".into()))?,
                }
            }
            Some(_) => return Err(err("scheduling", "expected an object".into())),
        };
        if !(scale_interval.is_finite() && scale_interval > 0.0) {
            return Err(err("scheduling.scale_interval_seconds", "Input should be greater than 0".into()));
        }
        let ratio = interval as f64 / scale_interval;
        if (ratio - ratio.round()).abs() > 1e-9 {
            return Err(err(
                "scheduling.scale_interval_seconds",
                "scheduling.scale_interval_seconds must evenly divide load_adjustment_interval_seconds".into(),
            ));
        }
        let rate = |k: &str| -> Result<Option<f64>, SimError> {
            let v = num_of(k)?;
            if let Some(x) = v
                && !(0.0..=100.0).contains(&x)
            {
                return Err(err(k, "Input should be between 0 and 100".into()));
            }
            Ok(v)
        };
        let tokens = |k: &str| -> Result<Option<u64>, SimError> {
            match int_of(k)? {
                Some(x) if x < 0 => Err(err(k, "Input should be greater than or equal to 0".into())),
                x => Ok(x.map(|x| x as u64)),
            }
        };
        let endpoint = |k: &str| -> Result<Option<u32>, SimError> {
            match int_of(k)? {
                Some(x) if x < 0 => Err(err(k, "Input should be greater than or equal to 0".into())),
                x => Ok(x.map(|x| x as u32)),
            }
        };
        let cfg = PlannerConfig {
            mode,
            optimization_target: target,
            load_adjustment_interval_seconds: interval as u32,
            scale_interval_seconds: scale_interval,
            decode_scale_up_kv_rate: rate("decode_scale_up_kv_rate")?,
            decode_scale_down_kv_rate: rate("decode_scale_down_kv_rate")?,
            prefill_scale_up_queue_tokens: tokens("prefill_scale_up_queue_tokens")?,
            prefill_scale_down_queue_tokens: tokens("prefill_scale_down_queue_tokens")?,
            min_endpoint: endpoint("min_endpoint")?.unwrap_or(1),
            prefill_min_endpoint: endpoint("prefill_min_endpoint")?,
            decode_min_endpoint: endpoint("decode_min_endpoint")?,
            max_gpu_budget: int_of("max_gpu_budget")?.unwrap_or(8),
            min_gpu_budget: int_of("min_gpu_budget")?.unwrap_or(-1),
        };
        if cfg.mode == Mode::Agg && (cfg.prefill_min_endpoint.is_some() || cfg.decode_min_endpoint.is_some()) {
            return Err(SimError::new(format!(
                "{at}: prefill_min_endpoint and decode_min_endpoint are not supported when mode='agg'; use min_endpoint"
            )));
        }
        if cfg.optimization_target == Target::Load {
            if cfg.mode == Mode::Disagg {
                match (cfg.prefill_scale_up_queue_tokens, cfg.prefill_scale_down_queue_tokens) {
                    (Some(up), Some(down)) if up <= down => {
                        return Err(SimError::new(format!(
                            "{at}: prefill_scale_up_queue_tokens must be greater than prefill_scale_down_queue_tokens"
                        )));
                    }
                    (Some(_), Some(_)) => {}
                    _ => {
                        return Err(SimError::new(format!(
                            "{at}: optimization_target='load' requires prefill_scale_up_queue_tokens and prefill_scale_down_queue_tokens for prefill scaling"
                        )));
                    }
                }
            }
            match (cfg.decode_scale_up_kv_rate, cfg.decode_scale_down_kv_rate) {
                (Some(up), Some(down)) if up <= down => {
                    return Err(SimError::new(format!("{at}: decode_scale_up_kv_rate must be greater than decode_scale_down_kv_rate")));
                }
                (Some(_), Some(_)) => {}
                _ => {
                    return Err(SimError::new(format!(
                        "{at}: optimization_target='load' requires decode_scale_up_kv_rate and decode_scale_down_kv_rate for decode scaling"
                    )));
                }
            }
        }
        Ok(cfg)
    }

    /// The minimum number of workers of a pool.
    pub fn min_endpoint_of(&self, prefill: bool) -> u32 {
        let specific = if prefill { self.prefill_min_endpoint } else { self.decode_min_endpoint };
        specific.unwrap_or(self.min_endpoint)
    }
}

/// A what-if scaling script: at `at_s`, set `pool` to `count` workers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptStep {
    pub at_s: f64,
    /// `agg` (aggregated workers), `prefill` or `decode`.
    pub pool: String,
    pub count: u32,
}

/// How the pools are scaled during a run.
#[derive(Clone, Debug, PartialEq)]
pub enum Scaling {
    Planner(PlannerConfig),
    Script(Vec<ScriptStep>),
}

impl Scaling {
    /// Checks a script against the cluster (pool names, counts, times).
    pub fn check_script(steps: &[ScriptStep], disaggregated: bool) -> Result<(), SimError> {
        let mut last = f64::NEG_INFINITY;
        for (k, s) in steps.iter().enumerate() {
            let at = |m: String| SimError::new(format!("scaling[{k}]: {m}"));
            let pools: &[&str] = if disaggregated { &["prefill", "decode"] } else { &["agg"] };
            if !pools.contains(&s.pool.as_str()) {
                return Err(at(format!("pool `{}`: this cluster's pools are {}", s.pool, pools.join(", "))));
            }
            if !(s.at_s.is_finite() && s.at_s >= 0.0) {
                return Err(at("at_s must be a non-negative number".into()));
            }
            if s.at_s < last {
                return Err(at("steps must be in time order".into()));
            }
            if s.count == 0 || s.count > 4096 {
                return Err(at("count must be within 1..=4096".into()));
            }
            last = s.at_s;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_and_messages() {
        let c = PlannerConfig::from_json(&json!({"mode": "agg"}), "p").unwrap();
        assert_eq!((c.optimization_target, c.load_adjustment_interval_seconds, c.scale_interval_seconds), (Target::Throughput, 5, 5.0));
        assert_eq!((c.min_endpoint, c.max_gpu_budget, c.min_gpu_budget), (1, 8, -1));
        let e = PlannerConfig::from_json(&json!({}), "p").unwrap();
        assert_eq!(e.mode, Mode::Disagg);
        let e = PlannerConfig::from_json(&json!({"mode": "agg", "optimization_target": "sla"}), "p").unwrap_err();
        assert!(e.0.contains("AIS performance model"), "{e}");
        let e = PlannerConfig::from_json(&json!({"mode": "agg", "optimization_target": "load"}), "p").unwrap_err();
        assert!(e.0.contains("requires decode_scale_up_kv_rate"), "{e}");
        let e = PlannerConfig::from_json(
            &json!({"mode": "agg", "optimization_target": "load", "decode_scale_up_kv_rate": 20, "decode_scale_down_kv_rate": 60}),
            "p",
        )
        .unwrap_err();
        assert!(e.0.contains("must be greater than"), "{e}");
        let e = PlannerConfig::from_json(&json!({"mode": "agg", "load_adjustment_interval_seconds": 2.5}), "p").unwrap_err();
        assert!(e.0.contains("fractional part"), "{e}");
        let e = PlannerConfig::from_json(&json!({"mode": "agg", "bogus": 1}), "p").unwrap_err();
        assert_eq!(e.0, "p.bogus: unknown planner setting");
        assert!(PlannerConfig::from_json(&json!({"mode": "agg", "namespace": "x", "environment": "virtual"}), "p").is_ok());
        let c = PlannerConfig::from_json(&json!({"mode": "agg", "scheduling": {"scale_interval_seconds": 1}}), "p").unwrap();
        assert_eq!(c.scale_interval_seconds, 1.0);
        let e = PlannerConfig::from_json(&json!({"mode": "agg", "scheduling": {"scale_interval_seconds": 2}}), "p").unwrap_err();
        assert!(e.0.contains("evenly divide"), "{e}");
    }
}
