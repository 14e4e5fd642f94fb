//! What a run with scaling reports (`planner` in the answer): the planner's ticks, its scaling
//! events, and every lifecycle operation on the pools (workers starting, ready, draining,
//! removed), in the compact form the reference's cases store.

use serde::Serialize;
use serde_json::{Value, json};

/// A pool's worker ids by state.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Topology {
    pub active: Vec<u32>,
    pub starting: Vec<u32>,
    pub draining: Vec<u32>,
}

impl Topology {
    fn triple(&self) -> Value {
        json!([self.active, self.starting, self.draining])
    }
}

/// One planner tick.
#[derive(Clone, Debug, PartialEq)]
pub struct Tick {
    pub at_ms: f64,
    pub prefill: Topology,
    pub decode: Topology,
    /// The targets the tick proposed (None: no change), and why (None: the load decision
    /// was not due).
    pub scale_to: Option<(Option<u32>, Option<u32>)>,
    pub reason: Option<&'static str>,
    /// The targets applied (None: nothing to do), and the next tick.
    pub decision: Option<(u32, u32)>,
    pub next_tick_ms: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ScalingEvent {
    pub at_s: f64,
    pub component: &'static str,
    pub from_count: u32,
    pub to_count: u32,
    pub reason: &'static str,
}

/// One operation on a pool: its cause and the workers' transitions.
#[derive(Clone, Debug, PartialEq)]
pub struct Operation {
    pub at_ms: f64,
    pub pool: &'static str,
    /// `planner_scale`, `worker_ready_event`, `drain_settlement` or `manual_scale`.
    pub cause: &'static str,
    pub planner_tick_ordinal: Option<u64>,
    /// (worker id, `worker_starting` | `worker_ready` | `worker_draining` | `worker_removed`).
    pub transitions: Vec<(u32, &'static str)>,
    pub state_after: Topology,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct ScalingRecord {
    pub ticks: Vec<Tick>,
    pub scaling_events: Vec<ScalingEvent>,
    pub lifecycle: Vec<Operation>,
}

impl ScalingRecord {
    pub fn to_json(&self) -> Value {
        let ticks: Vec<Value> = self
            .ticks
            .iter()
            .map(|t| {
                json!({
                    "at_ms": t.at_ms,
                    "prefill": t.prefill.triple(),
                    "decode": t.decode.triple(),
                    "scale_to": t.scale_to.map(|(p, d)| json!({"num_prefill": p, "num_decode": d})),
                    "load_decision_reason": t.reason,
                    "decision": match t.decision {
                        Some((p, d)) => json!({"target_prefill": p, "target_decode": d, "next_tick_ms": t.next_tick_ms}),
                        None => json!({"target_prefill": null, "target_decode": null, "next_tick_ms": t.next_tick_ms}),
                    },
                })
            })
            .collect();
        let lifecycle: Vec<Value> = self
            .lifecycle
            .iter()
            .map(|o| {
                json!({
                    "at_ms": o.at_ms,
                    "pool": o.pool,
                    "cause": o.cause,
                    "planner_tick_ordinal": o.planner_tick_ordinal,
                    "transitions": o.transitions.iter().map(|(w, t)| json!([w, t])).collect::<Vec<_>>(),
                    "state_after": o.state_after,
                    "released_requests": 0,
                })
            })
            .collect();
        json!({
            "total_ticks": self.ticks.len(),
            "bootstrap": {"status": "not_required"},
            "scaling_events": self.scaling_events,
            "lifecycle": lifecycle,
            "ticks": ticks,
        })
    }
}
