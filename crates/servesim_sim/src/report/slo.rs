//! Service-level objectives: per-request thresholds (the reference's `sla_*_ms`, which give
//! the goodput) and bounds on the run's percentiles. A run meets its SLO when every request
//! completed, every percentile bound holds, and enough requests were good.

use super::RequestRecord;
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
        self.per_request() || self.bounds().iter().any(|(_, b)| b.is_some())
    }

    pub fn is_unset(&self) -> bool {
        !self.is_set()
    }

    /// Whether a per-request threshold is set (the reference's `sla_*_ms`: what the goodput
    /// counts).
    pub fn per_request(&self) -> bool {
        self.ttft_ms.is_some() || self.itl_ms.is_some() || self.e2e_ms.is_some()
    }

    /// Checks the per-request thresholds the way the reference does; `prefix` names where
    /// they were given (`replay.sla_` or `slo.`).
    pub fn validate_per_request(&self, prefix: &str) -> Result<(), String> {
        for (name, v) in [("ttft_ms", self.ttft_ms), ("itl_ms", self.itl_ms), ("e2e_ms", self.e2e_ms)] {
            if let Some(v) = v
                && !(v.is_finite() && v > 0.0)
            {
                return Err(format!("{prefix}{name} must be a finite, positive number, got {v}"));
            }
        }
        if self.e2e_ms.is_some() && (self.ttft_ms.is_some() || self.itl_ms.is_some()) {
            return Err(format!("{prefix}e2e_ms cannot be combined with {prefix}ttft_ms or {prefix}itl_ms (as in Dynamo's replay)"));
        }
        Ok(())
    }

    /// Whether a completed request met every per-request threshold: TTFT and E2E (to its
    /// last token) at most their bounds, and its mean inter-token latency too when it has two
    /// tokens or more. One with no token meets only an E2E-only threshold, by its end.
    pub(super) fn is_good(&self, r: &RequestRecord) -> bool {
        let Some(first) = r.first_token_ms else {
            return self.ttft_ms.is_none()
                && self.itl_ms.is_none()
                && self.e2e_ms.is_some_and(|b| r.end_ms.unwrap_or(f64::INFINITY) - r.arrival_ms <= b);
        };
        let last = r.last_token_ms.unwrap_or(first);
        let (ttft, e2e) = (first - r.arrival_ms, last - r.arrival_ms);
        let itl_ok = match self.itl_ms {
            Some(b) if r.output_tokens > 1 => (e2e - ttft) / (r.output_tokens - 1) as f64 <= b,
            _ => true,
        };
        self.ttft_ms.is_none_or(|b| ttft <= b) && self.e2e_ms.is_none_or(|b| e2e <= b) && itl_ok
    }

    /// Checks the values; `prefix` names where they were given (`slo.`).
    pub fn validate(&self, prefix: &str) -> Result<(), String> {
        self.validate_per_request(prefix)?;
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
        if self.min_goodput_ratio.is_some() && !self.per_request() {
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
        if self.per_request() {
            let good = num("goodput_completed_requests").unwrap_or(0.0);
            if good < self.min_goodput_ratio.unwrap_or(0.99) * done {
                return false;
            }
        }
        true
    }
}
