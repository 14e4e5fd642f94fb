//! Service-level objectives: per-request thresholds (the reference's `sla_*_ms`, which give
//! the goodput) and bounds on the run's percentiles. A run meets its SLO when every request
//! completed, every percentile bound holds, and enough requests were good.

use super::Sla;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Slo {
    /// Per request: its TTFT, mean inter-token latency and end-to-end latency at most these
    /// (ms); a completed request meeting all that are set is "good".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub itl_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e2e_ms: Option<f64>,
    /// Share of completed requests that must be good (default 0.99) when per-request
    /// thresholds are set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_goodput_ratio: Option<f64>,
    /// The run's 99th percentiles at most these (ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_ttft_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_itl_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_tpot_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_e2e_latency_ms: Option<f64>,
}

impl Slo {
    fn bounds(&self) -> [(&'static str, Option<f64>); 4] {
        [
            ("p99_ttft_ms", self.p99_ttft_ms),
            ("p99_itl_ms", self.p99_itl_ms),
            ("p99_tpot_ms", self.p99_tpot_ms),
            ("p99_e2e_latency_ms", self.p99_e2e_latency_ms),
        ]
    }

    pub fn is_set(&self) -> bool {
        self.sla().is_set() || self.bounds().iter().any(|(_, b)| b.is_some())
    }

    pub fn is_unset(&self) -> bool {
        !self.is_set()
    }

    /// The per-request part (what the goodput counts).
    pub fn sla(&self) -> Sla {
        Sla { ttft_ms: self.ttft_ms, itl_ms: self.itl_ms, e2e_ms: self.e2e_ms }
    }

    /// Checks the values; `prefix` names where they were given (`slo.`).
    pub fn validate(&self, prefix: &str) -> Result<(), String> {
        self.sla().validate(prefix)?;
        for (name, v) in self.bounds() {
            if let Some(v) = v
                && !(v.is_finite() && v > 0.0)
            {
                return Err(format!("{prefix}{name} must be a finite, positive number, got {v}"));
            }
        }
        if let Some(r) = self.min_goodput_ratio
            && !(0.0..=1.0).contains(&r)
        {
            return Err(format!("{prefix}min_goodput_ratio must be within [0, 1], got {r}"));
        }
        if self.min_goodput_ratio.is_some() && !self.sla().is_set() {
            return Err(format!("{prefix}min_goodput_ratio needs a per-request threshold (ttft_ms, itl_ms or e2e_ms)"));
        }
        Ok(())
    }

    /// Whether a run with this summary meets the objective: every request completed, every
    /// percentile bound holds (a percentile with no sample fails), and the share of good
    /// requests reaches `min_goodput_ratio`.
    pub fn met(&self, summary: &Map<String, Value>) -> bool {
        let num = |k: &str| summary.get(k).and_then(Value::as_f64);
        let (Some(n), Some(done)) = (num("num_requests"), num("completed_requests")) else { return false };
        if done < n || done == 0.0 {
            return false;
        }
        for (key, bound) in self.bounds() {
            if let Some(b) = bound
                && !num(key).is_some_and(|v| v <= b)
            {
                return false;
            }
        }
        if self.sla().is_set() {
            let good = num("goodput_completed_requests").unwrap_or(0.0);
            if good < self.min_goodput_ratio.unwrap_or(0.99) * done {
                return false;
            }
        }
        true
    }
}
