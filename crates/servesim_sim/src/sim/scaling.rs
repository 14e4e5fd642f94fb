//! Pools that grow and shrink during a run, as the reference's replay runs them.
//!
//! A new worker gets the pool's next id (ids are never reused) and starts: it becomes ready
//! `startup_time` seconds later (at once without one), and only then takes requests. Shrinking
//! cancels starting workers first (highest id first), then drains the highest active ids: a
//! draining worker takes nothing new, finishes what it holds, and goes when it is idle (at
//! once if it already is). Every change is logged as an operation on its pool (cause, the
//! workers' transitions, the pool's state after), in the order the reference logs them.
//!
//! In a timestamp, workers become ready after the pass completions and before arrivals are
//! routed; drained workers go after passes start; a tick comes last.

use super::Simulation;
use crate::cluster::fleet::{Role, WorkerState};
use crate::planner::decide::Caps;
use crate::planner::record::{Operation, Topology};
use crate::planner::{PoolState, Targets};
use servesim_engine::{ForwardPassMetrics, HandOff, Scheduler};

impl Simulation {
    /// The planner sees the initial workers as active from t = 0.
    pub(super) fn init_planner(&mut self) {
        let Some(planner) = &mut self.planner else { return };
        for w in &self.fleet.workers {
            let slot = pool_slot(self.fleet.pools[w.pool].role);
            planner.fpm[slot].activate(w.id, w.ranks.len() as u32, 0.0);
        }
    }

    /// The next worker-ready or tick time, while request work is left (infinity otherwise).
    pub(super) fn next_lifecycle_ms(&self) -> f64 {
        if self.quiescent() {
            return f64::INFINITY;
        }
        let ready = self.starting.first().map_or(f64::INFINITY, |s| s.0);
        let tick = self.planner.as_ref().map_or(f64::INFINITY, |p| p.next_tick_ms());
        ready.min(tick)
    }

    /// A rank's pass ended at `t`: its forward-pass metrics reach the planner (a decode rank's
    /// also count the prompts waiting for a reservation on it).
    pub(super) fn publish_fpm(&mut self, r: usize, mut fpm: ForwardPassMetrics, t: f64) {
        let rank = &self.fleet.ranks[r];
        let worker = &self.fleet.workers[rank.group];
        let dp_rank = (r - worker.ranks.start) as u32;
        let slot = pool_slot(self.fleet.pools[rank.pool].role);
        if let Some(h) = &self.handoff {
            for i in h.waiting_reservations(r) {
                fpm.queued_decode(self.workload.input_length(i as usize));
            }
        }
        if let Some(p) = &mut self.planner {
            p.fpm[slot].publish(worker.id, dp_rank, fpm, t);
        }
    }

    /// Workers whose startup ends by `t` become ready (one operation per pool).
    pub(super) fn workers_ready(&mut self, t: f64) {
        let due = self.starting.iter().take_while(|s| s.0 <= t).count();
        if due == 0 {
            return;
        }
        let ready: Vec<usize> = self.starting.drain(..due).map(|s| s.1).collect();
        for pool in 0..self.fleet.pools.len() {
            let mine: Vec<usize> = ready.iter().copied().filter(|&w| self.fleet.workers[w].pool == pool).collect();
            if mine.is_empty() {
                continue;
            }
            let mut transitions = Vec::new();
            for w in mine {
                self.activate(w, t);
                transitions.push((self.fleet.workers[w].id, "worker_ready"));
            }
            self.log(pool, t, "worker_ready_event", None, transitions);
        }
    }

    /// Draining workers with nothing left (no pass in flight, no request) go.
    pub(super) fn settle_drains(&mut self, t: f64) {
        for pool in 0..self.fleet.pools.len() {
            let gone: Vec<usize> = self.fleet.pools[pool].workers.iter().copied().filter(|&w| self.drained(w)).collect();
            if gone.is_empty() {
                continue;
            }
            let transitions = gone.iter().map(|&w| (self.remove(w), "worker_removed")).collect();
            self.log(pool, t, "drain_settlement", None, transitions);
        }
    }

    /// A draining worker is done when no pass is in flight, no request is on it and its
    /// hand-off connector holds nothing: a prefill worker keeps draining until the decode
    /// side has every prompt it still holds (the reference's drain settles at that release).
    fn drained(&self, w: usize) -> bool {
        let worker = &self.fleet.workers[w];
        worker.state == WorkerState::Draining
            && !worker.busy
            && worker.ranks.clone().all(|r| {
                let engine = &self.fleet.ranks[r].engine;
                engine.in_flight() == 0 && !engine.holds_for_handoff()
            })
    }

    /// A tick at `t`, if one is due: the planner reads the pools and its targets are applied.
    pub(super) fn planner_tick(&mut self, t: f64) {
        let due = self.planner.as_ref().is_some_and(|p| p.next_tick_ms() <= t);
        if !due || self.quiescent() {
            return;
        }
        let disaggregated = self.handoff.is_some();
        let (prefill, decode) = if disaggregated {
            (self.pool_state(self.fleet.pool_of(Role::Prefill)), self.pool_state(self.fleet.pool_of(Role::Decode)))
        } else {
            (PoolState::default(), self.pool_state(self.fleet.pool_of(Role::Aggregated)))
        };
        let planner = self.planner.as_mut().expect("checked");
        let targets: Option<Targets> = planner.tick(t, &prefill, &decode, disaggregated);
        let ordinal = planner.tick_ordinal();
        let cause = if planner.disaggregated().is_some() { "planner_scale" } else { "manual_scale" };
        let Some((p, d)) = targets else { return };
        let pools = [(Role::Prefill, p), (if disaggregated { Role::Decode } else { Role::Aggregated }, d)];
        for (role, target) in pools {
            if let (Some(n), Some(pool)) = (target, self.fleet.pool_of(role)) {
                self.scale_pool(pool, n, t, cause, ordinal);
            }
        }
    }

    fn pool_state(&self, pool: Option<usize>) -> PoolState {
        let Some(pool) = pool else { return PoolState::default() };
        let p = &self.fleet.pools[pool];
        let args = p.args();
        let caps = Caps {
            max_kv_tokens: args.num_gpu_blocks() as u64 * args.block_size() as u64 * p.dp_size as u64,
            num_gpu: p.launch.gpus_per_worker() as i64,
            context_length: args.max_model_len,
        };
        PoolState { topology: self.topology(pool), caps }
    }

    /// The pool's worker ids by state.
    fn topology(&self, pool: usize) -> Topology {
        let mut t = Topology::default();
        for &w in &self.fleet.pools[pool].workers {
            let worker = &self.fleet.workers[w];
            match worker.state {
                WorkerState::Active => t.active.push(worker.id),
                WorkerState::Starting => t.starting.push(worker.id),
                WorkerState::Draining => t.draining.push(worker.id),
                WorkerState::Removed => {}
            }
        }
        t
    }

    /// Sets `pool` to `target` non-draining workers: new ones start, or starting ones are
    /// cancelled and then the highest active ids drain (idle ones go at once).
    fn scale_pool(&mut self, pool: usize, target: u32, t: f64, cause: &'static str, ordinal: Option<u64>) {
        let ids = |s: &Self, state: WorkerState| -> Vec<usize> {
            s.fleet.pools[pool].workers.iter().copied().filter(|&w| s.fleet.workers[w].state == state).collect()
        };
        let starting = ids(self, WorkerState::Starting);
        let active = ids(self, WorkerState::Active);
        let current = (starting.len() + active.len()) as u32;
        let mut transitions = Vec::new();
        if target > current {
            for _ in current..target {
                let dp = self.fleet.pools[pool].dp_size;
                let targets = self.fleet.pools[pool].router.add_worker(dp);
                let p = &mut self.fleet.pools[pool];
                p.target_rank.resize(p.target_rank.len() + dp, usize::MAX);
                let startup = self.fleet.pools[pool].startup_ms;
                let w = match self.spawn_worker(pool, targets, WorkerState::Starting) {
                    Ok(w) => w,
                    // The pool's arguments built its first workers, so they build this one.
                    Err(e) => unreachable!("a pool's arguments stopped building engines: {e}"),
                };
                let id = self.fleet.workers[w].id;
                if startup > 0.0 {
                    transitions.push((id, "worker_starting"));
                    let at = t + startup;
                    let k = self.starting.partition_point(|s| s.0 <= at);
                    self.starting.insert(k, (at, w));
                } else {
                    self.activate(w, t);
                    transitions.push((id, "worker_ready"));
                }
            }
        } else if target < current {
            let mut excess = (current - target) as usize;
            for &w in starting.iter().rev().take(excess) {
                self.starting.retain(|s| s.1 != w);
                transitions.push((self.remove(w), "worker_removed"));
                excess -= 1;
            }
            let draining: Vec<usize> = active.iter().rev().take(excess).copied().collect();
            for &w in &draining {
                self.drain(w);
                transitions.push((self.fleet.workers[w].id, "worker_draining"));
            }
            for &w in &draining {
                if self.drained(w) {
                    transitions.push((self.remove(w), "worker_removed"));
                }
            }
        }
        self.log(pool, t, cause, ordinal, transitions);
    }

    /// Worker `w` becomes ready: it takes requests, and the planner expects its metrics.
    fn activate(&mut self, w: usize, t: f64) {
        let worker = &mut self.fleet.workers[w];
        worker.state = WorkerState::Active;
        let (pool, id, ranks) = (worker.pool, worker.id, worker.ranks.len() as u32);
        self.fleet.pools[pool].router.set_ready(id as usize, true);
        if let Some(p) = &mut self.planner {
            p.fpm[pool_slot(self.fleet.pools[pool].role)].activate(id, ranks, t);
        }
    }

    fn drain(&mut self, w: usize) {
        let worker = &mut self.fleet.workers[w];
        worker.state = WorkerState::Draining;
        let (pool, id) = (worker.pool, worker.id);
        self.fleet.pools[pool].router.set_ready(id as usize, false);
        if let Some(p) = &mut self.planner {
            p.fpm[pool_slot(self.fleet.pools[pool].role)].deactivate(id);
        }
    }

    /// Worker `w` goes (with its worker-local offload tiers); returns its id.
    fn remove(&mut self, w: usize) -> u32 {
        let worker = &mut self.fleet.workers[w];
        worker.state = WorkerState::Removed;
        let (pool, id) = (worker.pool, worker.id);
        self.fleet.pools[pool].router.set_ready(id as usize, false);
        self.fleet.pools[pool].tiers.remove_worker(id);
        if let Some(p) = &mut self.planner {
            p.fpm[pool_slot(self.fleet.pools[pool].role)].deactivate(id);
        }
        id
    }

    /// Logs an operation on `pool` if anything changed.
    fn log(&mut self, pool: usize, t: f64, cause: &'static str, ordinal: Option<u64>, transitions: Vec<(u32, &'static str)>) {
        if transitions.is_empty() {
            return;
        }
        let state_after = self.topology(pool);
        let name = match self.fleet.pools[pool].role {
            Role::Aggregated => "agg",
            Role::Prefill => "prefill",
            Role::Decode => "decode",
        };
        if let Some(p) = &mut self.planner {
            p.record.lifecycle.push(Operation { at_ms: t, pool: name, cause, planner_tick_ordinal: ordinal, transitions, state_after });
        }
    }
}

/// The planner's slot of a pool: prefill first, decode (or aggregated) second.
fn pool_slot(role: Role) -> usize {
    match role {
        Role::Prefill => 0,
        Role::Aggregated | Role::Decode => 1,
    }
}
