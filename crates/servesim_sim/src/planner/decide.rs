//! The planner's decision rule for its "easy" targets (Dynamo's load scaling without a
//! performance model): at most one worker more or less per pool and decision, from each
//! worker's latest forward-pass metrics.

use super::budget::{guard_pair, guard_single};
use super::config::{Mode, PlannerConfig, Target};
use servesim_engine::sched::output::ForwardPassMetrics;

/// What a pool's engines can hold, as the planner sizes them.
#[derive(Clone, Copy, Debug, Default)]
pub struct Caps {
    /// KV tokens of one worker (blocks × block size × DP ranks).
    pub max_kv_tokens: u64,
    /// GPUs of one worker (what the GPU budget counts).
    pub num_gpu: i64,
    /// The engines' `max_model_len`, which the prefill pool's queue is measured against.
    pub context_length: Option<u32>,
}

/// One pool as a due tick sees it.
#[derive(Clone, Debug, Default)]
pub struct PoolView {
    /// Active (ready) workers.
    pub ready: u32,
    /// Workers still starting.
    pub starting: u32,
    /// Latest metrics per (worker id, DP rank) of active workers.
    pub fpm: Vec<(u32, u32, ForwardPassMetrics)>,
    pub caps: Caps,
}

impl PoolView {
    /// A scale operation is under way: the planner only observes.
    fn blocked(&self) -> bool {
        self.starting > 0
    }

    /// Every active worker, with every one of its ranks, has reported (a worker that became
    /// ready less than a second ago and ran no pass has not).
    fn covered(&self) -> bool {
        let mut ranks: std::collections::BTreeMap<u32, usize> = Default::default();
        for (w, _, _) in &self.fpm {
            *ranks.entry(*w).or_default() += 1;
        }
        if ranks.len() != self.ready as usize {
            return false;
        }
        let mut sizes = ranks.values();
        let d = sizes.next().copied().unwrap_or(1);
        sizes.all(|&n| n == d) && self.fpm.len() == self.ready as usize * d
    }
}

/// A decision: the targets (None: unchanged) and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    pub prefill: Option<u32>,
    pub decode: Option<u32>,
    pub reason: &'static str,
}

fn keep(reason: &'static str) -> Outcome {
    Outcome { prefill: None, decode: None, reason }
}

/// Scale-up and scale-down thresholds of the decode (or aggregated) KV use, as fractions.
fn decode_thresholds(cfg: &PlannerConfig) -> Option<(f64, f64)> {
    match cfg.optimization_target {
        Target::Load => Some((cfg.decode_scale_up_kv_rate? / 100.0, cfg.decode_scale_down_kv_rate? / 100.0)),
        Target::Latency => Some((0.4, 0.1)),
        Target::Throughput => Some((1.0, 0.6)),
    }
}

/// Up if any value crosses the up threshold; down (by one, not below the floor) if all are
/// under the down one and redistributing the load would not cross the up threshold again;
/// `None` if neither. The `*_inclusive` flags say whether reaching a threshold counts.
fn step(values: &[f64], ready: u32, (up, up_inclusive): (f64, bool), (down, down_inclusive): (f64, bool), floor: u32) -> Option<u32> {
    let over = |v: f64| if up_inclusive { v >= up } else { v > up };
    if values.iter().any(|&v| over(v)) {
        return Some(ready + 1);
    }
    let under = |v: f64| if down_inclusive { v <= down } else { v < down };
    if ready > 1 && values.iter().all(|&v| under(v)) {
        let desired = (ready - 1).max(floor);
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if desired > 0 && desired < ready && max * ready as f64 / desired as f64 >= up {
            return Some(ready);
        }
        return Some(desired);
    }
    None
}

/// Decode (or aggregated) pool: KV use per rank, queued prefill tokens included when
/// aggregated. `Err` carries the reason there is no decision.
fn decode_desired(cfg: &PlannerConfig, pool: &PoolView, with_prefill: bool) -> Result<u32, &'static str> {
    let max_kv = pool.caps.max_kv_tokens;
    if max_kv == 0 || pool.ready == 0 {
        return Err("insufficient_data");
    }
    let (up, down) = decode_thresholds(cfg).ok_or("insufficient_data")?;
    let utils: Vec<f64> = pool
        .fpm
        .iter()
        .map(|(_, _, m)| {
            let queued_prefill = if with_prefill { m.sum_queued_prefill_tokens } else { 0 };
            (m.sum_decode_kv_tokens + m.sum_queued_decode_kv_tokens + queued_prefill) as f64 / max_kv as f64
        })
        .collect();
    if utils.is_empty() {
        return Err("insufficient_data");
    }
    let load = cfg.optimization_target == Target::Load;
    step(&utils, pool.ready, (up, load), (down, load), cfg.min_endpoint_of(false)).ok_or("no_change")
}

/// Prefill pool (disaggregated): queued prefill tokens per rank, against the user's thresholds
/// (`load`) or the engines' context length.
fn prefill_desired(cfg: &PlannerConfig, pool: &PoolView) -> Result<u32, &'static str> {
    if pool.ready == 0 {
        return Err("insufficient_data");
    }
    let queued = pool.fpm.iter().map(|(_, _, m)| m.sum_queued_prefill_tokens as f64);
    let (values, up, down): (Vec<f64>, f64, f64) = match cfg.optimization_target {
        Target::Load => {
            let (Some(up), Some(down)) = (cfg.prefill_scale_up_queue_tokens, cfg.prefill_scale_down_queue_tokens) else {
                return Err("insufficient_data");
            };
            (queued.collect(), up as f64, down as f64)
        }
        t => {
            let ctx = pool.caps.context_length.filter(|&c| c > 0).ok_or("insufficient_data")? as f64;
            let (up, down) = if t == Target::Latency { (0.1, 0.0) } else { (1.0, 0.1) };
            (queued.map(|q| q / ctx).collect(), up, down)
        }
    };
    if values.is_empty() {
        return Err("insufficient_data");
    }
    let inclusive_down = cfg.optimization_target != Target::Throughput;
    step(&values, pool.ready, (up, true), (down, inclusive_down), cfg.min_endpoint_of(true)).ok_or("no_change")
}

/// The aggregated pool's decision (`decode` is the pool).
pub fn agg(cfg: &PlannerConfig, pool: &PoolView) -> Outcome {
    if pool.fpm.is_empty() {
        return keep("no_fpm_data");
    }
    if pool.blocked() {
        return keep("scaling_in_progress");
    }
    if !pool.covered() {
        return keep("worker_count_mismatch");
    }
    let n = pool.ready;
    let desired = match decode_desired(cfg, pool, true) {
        Ok(d) => d,
        Err(reason) => return keep(reason),
    };
    let floor = cfg.min_endpoint_of(false);
    let desired = desired.max(floor);
    let (desired, budget) = guard_single(n as i64, desired as i64, pool.caps.num_gpu, cfg.min_gpu_budget, cfg.max_gpu_budget, floor as i64);
    let desired = desired as u32;
    let reason = budget.unwrap_or(if desired < n {
        "scale_down"
    } else if desired > n {
        "scale_up"
    } else {
        "no_change"
    });
    Outcome { prefill: None, decode: Some(desired), reason }
}

/// The disaggregated pools' decision.
pub fn disagg(cfg: &PlannerConfig, prefill: &PoolView, decode: &PoolView) -> Outcome {
    if prefill.fpm.is_empty() && decode.fpm.is_empty() {
        return keep("no_fpm_data");
    }
    if prefill.blocked() || decode.blocked() {
        return keep("scaling_in_progress");
    }
    if (!prefill.fpm.is_empty() && !prefill.covered()) || (!decode.fpm.is_empty() && !decode.covered()) {
        return keep("worker_count_mismatch");
    }
    let p = if prefill.fpm.is_empty() { Err("") } else { prefill_desired(cfg, prefill) };
    let d = if decode.fpm.is_empty() { Err("") } else { decode_desired(cfg, decode, false) };
    let (pmin, dmin) = (cfg.min_endpoint_of(true), cfg.min_endpoint_of(false));
    let fp = p.unwrap_or(prefill.ready).max(pmin);
    let fd = d.unwrap_or(decode.ready).max(dmin);
    let (fp, fd, budget) = guard_pair(
        (prefill.ready as i64, decode.ready as i64),
        (fp as i64, fd as i64),
        (prefill.caps.num_gpu, decode.caps.num_gpu),
        cfg.min_gpu_budget,
        cfg.max_gpu_budget,
        (pmin as i64, dmin as i64),
    );
    let (fp, fd) = (fp as u32, fd as u32);
    let direction = |f: u32, cur: u32| {
        if f > cur {
            "scale_up"
        } else if f < cur {
            "scale_down"
        } else {
            "no_change"
        }
    };
    let rank = |r: &str| match r {
        "scale_up" => 3,
        "scale_down" => 2,
        _ => 1,
    };
    let (rp, rd) = (direction(fp, prefill.ready), direction(fd, decode.ready));
    let mut reason = if rank(rp) >= rank(rd) { rp } else { rd };
    if let Some(b) = budget {
        reason = b;
    }
    if fp == prefill.ready && fd == decode.ready {
        if budget.is_none() {
            for sub in [p.err(), d.err()].into_iter().flatten() {
                if !sub.is_empty() && sub != "no_change" {
                    reason = sub;
                    break;
                }
            }
        }
        return keep(reason);
    }
    Outcome { prefill: Some(fp), decode: Some(fd), reason }
}

/// The mode's decision.
pub fn decide(cfg: &PlannerConfig, prefill: &PoolView, decode: &PoolView) -> Outcome {
    match cfg.mode {
        Mode::Agg => agg(cfg, decode),
        Mode::Disagg => disagg(cfg, prefill, decode),
    }
}
