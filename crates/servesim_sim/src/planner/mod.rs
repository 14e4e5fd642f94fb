//! Scaling during a run: Dynamo's planner in the loop (its easy targets: throughput, latency,
//! load) or a scripted list of targets. The harness asks [`Planner::tick`] at each tick time
//! and applies the targets it returns to the pools; the planner only reads what the
//! reference's planner reads: each active worker's latest forward-pass metrics and the pools'
//! topology.
//!
//! Ticks fall every `scale_interval_seconds` from one interval on, last in their instant
//! (after arrivals are routed and passes start), and stop once no request work is left. A
//! worker's metrics are those of its latest pass ending by the tick; one that ran no pass for a
//! second or more reads all zero.

pub mod budget;
pub mod config;
pub mod decide;
pub mod record;

use config::{Mode, PlannerConfig, Scaling, ScriptStep};
use decide::{Caps, PoolView};
use record::{ScalingEvent, Tick, Topology};
use servesim_engine::sched::output::ForwardPassMetrics;
use std::collections::BTreeMap;

pub use record::ScalingRecord;

/// A worker rank's latest metrics, and when it last published.
#[derive(Clone, Debug)]
struct Latest {
    fpm: Option<ForwardPassMetrics>,
    last_publish_ms: f64,
}

/// Per pool: the latest metrics of each active (worker id, DP rank).
#[derive(Clone, Debug, Default)]
pub struct FpmCache {
    entries: BTreeMap<(u32, u32), Latest>,
}

impl FpmCache {
    /// Worker `id` became active at `t` with `ranks` DP ranks (no metrics yet).
    pub fn activate(&mut self, id: u32, ranks: u32, t: f64) {
        for r in 0..ranks {
            self.entries.insert((id, r), Latest { fpm: None, last_publish_ms: t });
        }
    }

    /// Worker `id` stopped being active (draining, removed): its metrics are dropped.
    pub fn deactivate(&mut self, id: u32) {
        self.entries.retain(|(w, _), _| *w != id);
    }

    /// A pass of an active worker's rank ended at `t` with these metrics.
    pub fn publish(&mut self, id: u32, rank: u32, fpm: ForwardPassMetrics, t: f64) {
        if let Some(e) = self.entries.get_mut(&(id, rank)) {
            e.fpm = Some(fpm);
            e.last_publish_ms = t;
        }
    }

    /// At a tick: ranks silent for a second or more read as idle (all zero).
    fn age(&mut self, now: f64) {
        for e in self.entries.values_mut() {
            let silent = now - e.last_publish_ms;
            if silent >= 1000.0 {
                e.fpm = Some(ForwardPassMetrics::default());
                e.last_publish_ms += (silent / 1000.0).floor() * 1000.0;
            }
        }
    }

    fn observations(&self) -> Vec<(u32, u32, ForwardPassMetrics)> {
        self.entries.iter().filter_map(|(&(w, r), e)| e.fpm.map(|m| (w, r, m))).collect()
    }
}

/// A pool as the harness shows it to a tick.
#[derive(Clone, Debug, Default)]
pub struct PoolState {
    pub topology: Topology,
    pub caps: Caps,
}

impl PoolState {
    fn non_draining(&self) -> u32 {
        (self.topology.active.len() + self.topology.starting.len()) as u32
    }
}

pub struct Planner {
    scaling: Scaling,
    interval_ms: f64,
    load_interval_ms: f64,
    next_tick_ms: f64,
    last_load_ms: f64,
    script_next: usize,
    /// Per pool (prefill, then decode or aggregated).
    pub fpm: [FpmCache; 2],
    pub record: ScalingRecord,
}

/// What a tick asks the harness to do: set the pools to these sizes (prefill, decode).
pub type Targets = (Option<u32>, Option<u32>);

impl Planner {
    pub fn new(scaling: Scaling) -> Self {
        let (interval_ms, load_interval_ms, first) = match &scaling {
            Scaling::Planner(c) => {
                let i = c.scale_interval_seconds * 1000.0;
                (i, c.load_adjustment_interval_seconds as f64 * 1000.0, i)
            }
            Scaling::Script(steps) => (0.0, 0.0, steps.first().map_or(f64::INFINITY, |s| s.at_s * 1000.0)),
        };
        Planner {
            scaling,
            interval_ms,
            load_interval_ms,
            next_tick_ms: first,
            last_load_ms: 0.0,
            script_next: 0,
            fpm: Default::default(),
            record: ScalingRecord::default(),
        }
    }

    /// When the next tick falls (infinity: none).
    pub fn next_tick_ms(&self) -> f64 {
        self.next_tick_ms
    }

    /// Whether the planner runs a disaggregated deployment.
    pub fn disaggregated(&self) -> Option<bool> {
        match &self.scaling {
            Scaling::Planner(c) => Some(c.mode == Mode::Disagg),
            Scaling::Script(_) => None,
        }
    }

    /// The tick at `now`: the targets to apply, if any. `prefill` is empty when aggregated.
    pub fn tick(&mut self, now: f64, prefill: &PoolState, decode: &PoolState, disaggregated: bool) -> Option<Targets> {
        match &self.scaling {
            Scaling::Script(steps) => {
                let steps: Vec<ScriptStep> = steps.clone();
                self.script_tick(now, &steps, prefill, decode)
            }
            Scaling::Planner(cfg) => {
                let cfg = cfg.clone();
                Some(self.planner_tick(now, &cfg, prefill, decode, disaggregated)).flatten()
            }
        }
    }

    fn script_tick(&mut self, now: f64, steps: &[ScriptStep], prefill: &PoolState, decode: &PoolState) -> Option<Targets> {
        let mut targets: Targets = (None, None);
        while let Some(s) = steps.get(self.script_next).filter(|s| s.at_s * 1000.0 <= now) {
            let (slot, state, component) = if s.pool == "prefill" {
                (&mut targets.0, prefill, "prefill")
            } else {
                (&mut targets.1, decode, if s.pool == "agg" { "agg" } else { "decode" })
            };
            let from = state.non_draining();
            if s.count != from {
                let reason = if s.count > from { "scale_up" } else { "scale_down" };
                self.record.scaling_events.push(ScalingEvent {
                    at_s: now / 1000.0,
                    component,
                    from_count: from,
                    to_count: s.count,
                    reason,
                });
                *slot = Some(s.count);
            }
            self.script_next += 1;
        }
        self.next_tick_ms = steps.get(self.script_next).map_or(f64::INFINITY, |s| s.at_s * 1000.0);
        (targets != (None, None)).then_some(targets)
    }

    fn planner_tick(
        &mut self,
        now: f64,
        cfg: &PlannerConfig,
        prefill: &PoolState,
        decode: &PoolState,
        disaggregated: bool,
    ) -> Option<Targets> {
        for cache in &mut self.fpm {
            cache.age(now);
        }
        let due = now - self.last_load_ms >= self.load_interval_ms - 1e-6;
        let view = |s: &PoolState, cache: &FpmCache| PoolView {
            ready: s.topology.active.len() as u32,
            starting: s.topology.starting.len() as u32,
            fpm: cache.observations(),
            caps: s.caps,
        };
        let (pv, dv) = (view(prefill, &self.fpm[0]), view(decode, &self.fpm[1]));
        let (mut scale_to, mut reason) = (None, None);
        let (mut p, mut d) = (None, None);
        if due {
            self.last_load_ms = now;
            let out = decide::decide(cfg, &pv, &dv);
            reason = Some(out.reason);
            (p, d) = (out.prefill, out.decode);
        }
        // The proposal, with the pools' floors (restored at every tick, with or without a
        // decision, while nothing is starting) and the budget's final clamp; nothing if it
        // changes no count.
        if pv.starting == 0 && dv.starting == 0 {
            let (pmin, dmin) = (cfg.min_endpoint_of(true), cfg.min_endpoint_of(false));
            if disaggregated && pv.ready < pmin {
                p = Some(p.unwrap_or(0).max(pmin));
            }
            if dv.ready < dmin {
                d = Some(d.unwrap_or(0).max(dmin));
            }
        }
        let unchanged = |p: Option<u32>, d: Option<u32>| p.is_none_or(|n| n == pv.ready) && d.is_none_or(|n| n == dv.ready);
        if !unchanged(p, d) {
            if disaggregated {
                if let (Some(np), Some(nd)) = (p, d) {
                    let (pmin, dmin) = (cfg.min_endpoint_of(true), cfg.min_endpoint_of(false));
                    let (cp, cd) = budget::clamp_pair(
                        np.max(pmin) as i64,
                        nd.max(dmin) as i64,
                        pv.caps.num_gpu,
                        dv.caps.num_gpu,
                        cfg.min_gpu_budget,
                        cfg.max_gpu_budget,
                        pmin as i64,
                        dmin as i64,
                    );
                    (p, d) = (Some(cp as u32), Some(cd as u32));
                }
            } else {
                let floor = cfg.min_endpoint_of(false);
                d = d.map(|n| {
                    budget::clamp_single(n.max(floor) as i64, dv.caps.num_gpu, cfg.min_gpu_budget, cfg.max_gpu_budget, floor as i64) as u32
                });
            }
            if !unchanged(p, d) {
                scale_to = Some((p, d));
            }
        }
        // Targets against the pools' non-draining sizes: a change is applied and logged.
        let mut decision = None;
        let mut targets: Targets = (None, None);
        if let Some((p, d)) = scale_to {
            let (tp, td) = (p.unwrap_or(prefill.non_draining()), d.unwrap_or(decode.non_draining()));
            if tp != prefill.non_draining() || td != decode.non_draining() {
                decision = Some((tp, td));
                let pools: [(&'static str, u32, u32, &mut Option<u32>); 2] = [
                    ("prefill", prefill.non_draining(), tp, &mut targets.0),
                    (if disaggregated { "decode" } else { "agg" }, decode.non_draining(), td, &mut targets.1),
                ];
                for (component, from, to, slot) in pools {
                    if from != to {
                        let reason = if to > from { "scale_up" } else { "scale_down" };
                        self.record.scaling_events.push(ScalingEvent {
                            at_s: now / 1000.0,
                            component,
                            from_count: from,
                            to_count: to,
                            reason,
                        });
                        *slot = Some(to);
                    }
                }
            }
        }
        self.next_tick_ms = now + self.interval_ms;
        self.record.ticks.push(Tick {
            at_ms: now,
            prefill: prefill.topology.clone(),
            decode: decode.topology.clone(),
            scale_to,
            reason,
            decision,
            next_tick_ms: self.next_tick_ms,
        });
        (targets != (None, None)).then_some(targets)
    }

    /// The tick ordinal of the latest tick (for lifecycle operations it causes).
    pub fn tick_ordinal(&self) -> Option<u64> {
        self.record.ticks.len().checked_sub(1).map(|n| n as u64)
    }
}
