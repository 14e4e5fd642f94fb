//! The discrete-event loop: one virtual clock; engine passes, KV transfers and arrivals as
//! events. At each timestamp, pass completions are applied first (their KV events reach the
//! router), then finished transfers, then workers that finished starting become ready, then
//! arrivals are routed; then every idle worker with work starts its next pass; then drained
//! workers go, and last a planner tick scales the pools (`scaling.rs`). A pass's effects are
//! stamped at its end, so an arrival exactly at a pass end joins the next pass.

mod scaling;

use crate::SimError;
use crate::cluster::fleet::{Fleet, Pool, Rank, Role, Worker, WorkerState};
use crate::cluster::handoff::{Decision, Handoff, prompt_hashes};
use crate::cluster::router::UNBOUNDED_BATCH_TOKENS;
use crate::cluster::{RouteQuery, Router, RouterConfig};
use crate::planner::Planner;
use crate::queue::{EventKind, EventQueue};
use crate::report::events::{BlockMirror, EventSink, Place, SimEvent};
use crate::report::timeseries::Recorder;
use crate::report::{Collector, Column, ImageStats, RunReport, Status};
use crate::scenario::SimConfig;
use crate::workload::Workload;
use crate::workload::driver::{Driver, Load};
use servesim_engine::hash::mix64;
use servesim_engine::kv::offload::Tiers;
use servesim_engine::kv::{KvEvent, KvEventData, KvTier};
use servesim_engine::perf::duration_ms;
use servesim_engine::{Engine, HandOff, LaunchConfig, Outcome, PassOutput, RankSetup, Scheduler, WorkerType};
use std::time::Duration;

mod offload;

/// Rounds of one timestamp after which the harness gives up on it (a guard: the reference
/// aborts a replay whose internal work does not converge).
const MAX_ROUNDS: u32 = 100_000;

pub struct Simulation {
    workload: Workload,
    /// The measured-kernel models the engines run with (for the report's config).
    kernels: crate::kernels::KernelSets,
    /// When each request arrives (open or closed loop, sessions).
    driver: Driver,
    fleet: Fleet,
    /// Disaggregated serving's prefill-to-decode hand-off.
    handoff: Option<Handoff>,
    events: EventQueue,
    now_ms: f64,
    finished: usize,
    collector: Collector,
    recorder: Recorder,
    scratch: Vec<u8>,
    /// A cleared pass output, swapped with a rank's `pending` when its pass is applied.
    spare_pass: Option<Box<PassOutput>>,
    /// Verify invariants after every pass (on in debug builds; tests turn it on).
    checks: bool,
    passes: u64,
    /// The run stops before any timestamp past this (`max_sim_time_ms`).
    max_sim_time_ms: Option<f64>,
    /// It stopped there, with work left.
    cut_off: bool,
    columns: Vec<Column>,
    /// Native KV offload: each pool's shared tiers (None when no engine offloads; then the
    /// event loop is the one without transfer deadlines).
    offload: Option<Vec<Tiers>>,
    /// Engines count steady tokens (off when a run may be cut off).
    steady_tokens: bool,
    /// Scaling during the run (a planner or a script), and workers about to become ready
    /// (time, worker), in time order.
    planner: Option<Planner>,
    starting: Vec<(f64, usize)>,
    /// Each rank's offload-tier deadline in the event queue (`offload.rs`), if any.
    deadlines: Vec<Option<f64>>,
    /// Where the event stream goes, when one is recorded.
    event_sink: Option<Box<dyn EventSink>>,
    /// Each rank's KV pool block by block as its `blocks` lines told it (recording only).
    block_mirrors: Vec<BlockMirror>,
}

impl Simulation {
    pub fn new(cfg: &SimConfig, mut workload: Workload) -> Result<Self, SimError> {
        cfg.validate()?;
        let offload = cfg.engines().iter().any(|e| e.native_host_offload.is_some());
        if offload {
            workload.intern_ids();
        }
        if workload.is_empty() {
            return Err(SimError::new("the workload has no requests"));
        }
        let load = match cfg.concurrency {
            Some(concurrency) => Load::Closed { concurrency },
            None => Load::Open { speedup: cfg.arrival_speedup_ratio },
        };
        let mut collector = Collector::new(workload.len());
        collector.images = workload.has_images().then(|| Box::new(ImageStats::new(workload.len())));
        collector.gpu_hour_usd = cfg.gpu_hour_usd;
        let mut sim = Simulation {
            kernels: cfg.kernels.clone(),
            driver: Driver::new(&workload, load)?,
            fleet: Fleet::default(),
            handoff: None,
            events: EventQueue::default(),
            now_ms: 0.0,
            finished: 0,
            collector,
            recorder: Recorder::new(cfg.timeseries_interval_ms),
            scratch: Default::default(),
            spare_pass: None,
            checks: cfg!(debug_assertions),
            passes: 0,
            max_sim_time_ms: cfg.max_sim_time_ms,
            cut_off: false,
            columns: Column::DEFAULT.to_vec(),
            offload: offload.then(Vec::new),
            steady_tokens: cfg.max_sim_time_ms.is_none(),
            planner: cfg.scaling.clone().map(Planner::new),
            starting: Vec::new(),
            deadlines: Vec::new(),
            event_sink: None,
            block_mirrors: Vec::new(),
            workload,
        };
        sim.collector.slo = cfg.slo;
        match &cfg.disagg {
            None => sim.add_pool(cfg, Role::Aggregated, &cfg.launch, cfg.num_workers, cfg.router_config.clone())?,
            Some(d) => {
                sim.add_pool(cfg, Role::Prefill, &d.prefill, d.num_prefill_workers, cfg.router_config.prefill_pool())?;
                sim.add_pool(cfg, Role::Decode, &d.decode, d.num_decode_workers, cfg.router_config.decode_pool())?;
                let prefill = sim.fleet.pool_of(Role::Prefill).expect("just added");
                let decode = sim.fleet.pool_of(Role::Decode).expect("just added");
                let destination_first = d.decode.engine.backend == servesim_engine::Backend::Sglang;
                sim.handoff = Some(Handoff::new(&sim.fleet, prefill, decode, sim.workload.len(), destination_first));
            }
        }
        let gpus = &mut sim.collector.fleet;
        match &cfg.disagg {
            None => {
                gpus.decode_gpus_per_worker = cfg.launch.gpus_per_worker();
                gpus.total_gpus = cfg.num_workers * gpus.decode_gpus_per_worker;
            }
            Some(d) => {
                (gpus.prefill_gpus_per_worker, gpus.decode_gpus_per_worker) = (d.prefill.gpus_per_worker(), d.decode.gpus_per_worker());
                gpus.total_gpus = d.num_prefill_workers * gpus.prefill_gpus_per_worker + d.num_decode_workers * gpus.decode_gpus_per_worker;
            }
        }
        if cfg.max_sim_time_ms.is_some() {
            // Requests still running at the cut-off must leave no trace in the distributions:
            // every token is listed with its request, and gaps count once it completes.
            sim.collector.defer_gaps();
        }
        sim.init_planner();
        Ok(sim)
    }

    fn add_pool(
        &mut self,
        cfg: &SimConfig,
        role: Role,
        launch: &LaunchConfig,
        workers: u32,
        router_cfg: RouterConfig,
    ) -> Result<(), SimError> {
        let engine = launch.engine.resolve()?;
        let fleet = &mut self.fleet;
        let pool = fleet.pools.len();
        let dp = launch.dp_size as usize;
        // Each pool draws its routing ties from its own stream of the scenario's seed.
        let seed = mix64(cfg.seed ^ pool as u64);
        let mut router =
            Router::new(cfg.router_mode, router_cfg, workers as usize, dp, engine.block_size, seed).with_event_lag(cfg.kv_event_lag_ms);
        if role != Role::Aggregated {
            router = router.rotating_ranks();
        }
        if role == Role::Decode {
            // A disaggregated decode pool's KV events do not reach its router: it places by load.
            router = router.without_kv_events();
        }
        if let Some(m) = cfg.kernels.router.clone() {
            // The `ais` prefill-load model: one request's prefill of the uncached tokens.
            router = router.with_prefill_estimate(std::sync::Arc::new(move |new, prefix| {
                let ms = m.prefill_ms(1, new + prefix, prefix);
                std::time::Duration::from_secs_f64(ms.max(0.0) / 1000.0).as_nanos().min(u64::MAX as u128) as u64
            }));
        }
        let tiers = Tiers::for_pool(&engine, workers);
        if let Some(all) = &mut self.offload {
            all.push(tiers.clone());
        }
        fleet.pools.push(Pool {
            role,
            router,
            workers: Vec::new(),
            target_rank: vec![usize::MAX; workers as usize * dp],
            dp_size: dp,
            block_size: engine.block_size,
            max_num_batched_tokens: engine.max_num_batched_tokens.map_or(UNBOUNDED_BATCH_TOKENS, u64::from),
            launch: launch.clone(),
            engine,
            profile: cfg.profiles.get(&launch.engine),
            kernels: cfg.kernels.get(&launch.engine),
            startup_ms: launch.startup_time.unwrap_or(0.0) * 1000.0,
            queued: Default::default(),
            tiers,
        });
        for w in 0..workers as usize {
            // Initial targets are rank-major: rank d of worker w is target d × workers + w.
            let targets = (0..dp).map(|d| d * workers as usize + w).collect();
            self.spawn_worker(pool, targets, WorkerState::Active)?;
        }
        Ok(())
    }

    /// Builds a worker of `pool` (its engines, one per DP rank, on `targets`) in `state`;
    /// returns its global index.
    fn spawn_worker(&mut self, pool: usize, targets: Vec<usize>, state: WorkerState) -> Result<usize, SimError> {
        let fleet = &mut self.fleet;
        let p = &fleet.pools[pool];
        let id = p.workers.len() as u32;
        let (role, dp_size, engine, profile, kernels, emit_events, tiers) =
            (p.role, p.launch.dp_size, p.engine.clone(), p.profile.clone(), p.kernels.clone(), p.router.wants_kv_events(), p.tiers.clone());
        let group = fleet.workers.len();
        let start = fleet.ranks.len();
        for (dp, &target) in targets.iter().enumerate() {
            let setup = RankSetup {
                dp_rank: dp as u32,
                dp_size,
                emit_events,
                profile: profile.clone(),
                kernels: kernels.clone(),
                worker: id,
                tiers: tiers.clone(),
            };
            let mut engine = Engine::new(&engine, &setup)?;
            engine.set_steady_tokens(self.steady_tokens);
            engine.set_forward_pass_metrics(self.planner.is_some());
            fleet.ranks.push(Rank {
                engine,
                pool,
                worker: id,
                dp_rank: dp as u32,
                group,
                stepped: false,
                pending: Box::default(),
                last_pass_end_ms: 0.0,
                started_ms: 0.0,
                idle_pass: false,
                target,
            });
            fleet.pools[pool].target_rank[target] = fleet.ranks.len() - 1;
            self.recorder.add_rank(role.name(), id, dp as u32);
        }
        fleet.workers.push(Worker { ranks: start..fleet.ranks.len(), busy: false, pool, id, state });
        fleet.pools[pool].workers.push(group);
        if let Some(h) = &mut self.handoff {
            h.add_ranks(fleet.ranks.len());
        }
        Ok(group)
    }

    /// Checks invariants after every pass — blocks balance in every rank (every 64th pass
    /// for pools over 4096 blocks), the clock never goes backwards, every request ends exactly
    /// once and none is lost — and panics with the broken one. On by default in debug builds.
    pub fn with_checks(mut self, on: bool) -> Self {
        self.checks = on;
        self
    }

    /// Whether to record the time series (on by default). A replay whose series nobody
    /// reads turns it off and saves the per-pass window bookkeeping.
    pub fn with_timeseries(mut self, on: bool) -> Self {
        self.recorder.set_enabled(on);
        self
    }

    /// Automatic time-series windows: recorded in windows of `fine_ms`, merged at the end
    /// into at most `target` round windows over what ran (see `report::timeseries`).
    pub fn with_auto_windows(mut self, fine_ms: f64, target: usize) -> Self {
        self.recorder.set_auto(fine_ms, target);
        self
    }

    /// Whether engines count their steady tokens instead of listing them (on by default;
    /// the records come out the same either way, which tests check).
    pub fn with_steady_tokens(mut self, on: bool) -> Self {
        self.steady_tokens = on;
        for rank in &mut self.fleet.ranks {
            rank.engine.set_steady_tokens(on);
        }
        self
    }

    /// Records the run's event stream into `sink` (engines then publish KV events even if no
    /// router reads them, and the KV router keeps its per-target costs).
    pub fn with_events(mut self, sink: Box<dyn EventSink>) -> Self {
        for rank in &mut self.fleet.ranks {
            rank.engine.set_kv_events(true);
        }
        for p in &mut self.fleet.pools {
            p.router.set_trace(true);
        }
        self.fleet.idle_events = Some(Vec::new());
        self.event_sink = Some(sink);
        self
    }

    /// Takes the event sink back (at the end of a run: its writer, its error).
    pub fn take_events(&mut self) -> Option<Box<dyn EventSink>> {
        self.event_sink.take()
    }

    fn emit(&mut self, t: f64, e: SimEvent<'_>) {
        self.flush_idle_events();
        if let Some(sink) = &mut self.event_sink {
            sink.record(t, &e);
        }
    }

    /// KV events published between passes (released prompts) go into the stream when they
    /// happened, before whatever is recorded next.
    fn flush_idle_events(&mut self) {
        let Some(log) = self.fleet.idle_events.as_mut().filter(|l| !l.is_empty()) else { return };
        let log = std::mem::take(log);
        for (r, e) in &log {
            let event = kv_event(self.place_of(*r), e);
            if let Some(sink) = &mut self.event_sink {
                sink.record(self.now_ms, &event);
            }
        }
    }

    /// (pool name, worker id, DP rank) of rank `r`.
    fn place_of(&self, r: usize) -> Place {
        let rank = &self.fleet.ranks[r];
        let worker = &self.fleet.workers[rank.group];
        Place { pool: self.fleet.pools[rank.pool].role.name(), worker: worker.id, dp_rank: rank.dp_rank }
    }

    /// Which per-request columns the report writes (the conformance cases' five by default).
    pub fn with_columns(mut self, columns: Vec<Column>) -> Self {
        self.columns = columns;
        self
    }

    /// Requests in the workload.
    pub fn num_requests(&self) -> usize {
        self.workload.len()
    }

    /// Every request's record so far (what has happened to it by now).
    pub fn records(&self) -> &[crate::report::RequestRecord] {
        &self.collector.records
    }

    /// Virtual time reached so far.
    pub fn now_ms(&self) -> f64 {
        self.now_ms
    }

    /// Fraction of the run done, in [0, 1]: arrivals and completions, equally weighted.
    pub fn progress(&self) -> f64 {
        let n = self.workload.len() as f64;
        (self.driver.dispatched() as f64 + self.finished as f64) / (2.0 * n)
    }

    pub fn is_done(&self) -> bool {
        self.cut_off || self.quiescent()
    }

    /// No request work is left: every arrival has come and nothing runs or moves. Workers
    /// about to become ready and planner ticks do not keep a run going.
    fn quiescent(&self) -> bool {
        self.driver.is_drained() && self.events.is_empty() && !(self.offload.is_some() && self.transfers_pending())
    }

    /// Runs to the end.
    pub fn run(mut self) -> RunReport {
        // In bounded slices, not one call: V8 moves a wasm function from its baseline to its
        // optimised code only when the function is entered again, so a single call of
        // `advance` would run the whole event loop in baseline code (measured: the wasm
        // replay of the 20k four-worker trace ~15 % slower).
        while !self.advance(1024) {}
        self.finish()
    }

    /// Processes up to `max_timestamps` distinct timestamps; returns true when the run is over.
    pub fn advance(&mut self, max_timestamps: usize) -> bool {
        for _ in 0..max_timestamps {
            if self.cut_off {
                return true;
            }
            self.drop_stale_deadlines();
            let next_event = self.events.next_time();
            let next_arrival = self.driver.next_time();
            let t = match (next_event, next_arrival) {
                (None, None) => {
                    self.end_stuck_requests();
                    // Requests that ended so may have sessions to go on with.
                    if self.driver.is_drained() {
                        return true;
                    }
                    continue;
                }
                (Some(e), None) => e,
                (None, Some(a)) => a,
                (Some(e), Some(a)) => e.min(a),
            };
            // While work is left, workers becoming ready and planner ticks are visited too.
            let t = t.min(self.next_lifecycle_ms());
            if self.max_sim_time_ms.is_some_and(|cap| t > cap) {
                self.cut_off = true;
                return true;
            }
            if self.checks {
                assert!(t >= self.now_ms, "the clock went backwards: {} ms after {} ms", t, self.now_ms);
            }
            self.count_worker_seconds(t);
            self.now_ms = t;
            self.instant(t);
        }
        self.is_done()
    }

    /// Everything that happens at `t`, in rounds. A round: idle workers settle their due
    /// transfers; pass ends and hand-off transfers apply (then idle workers settle again);
    /// workers that finished starting become ready; arrivals are routed and idle workers with
    /// work start passes; drained workers go and a planner tick comes last. Without a
    /// connector that asks for more (the offload tiers' work at one instant), one round is
    /// all; with one, rounds repeat while a round changed anything.
    fn instant(&mut self, t: f64) {
        for _ in 0..MAX_ROUNDS {
            let mut changed = self.settle_due_transfers(t);
            let ended = self.apply_due_events(t);
            if ended {
                self.settle_due_transfers(t);
            }
            changed |= ended;
            self.workers_ready(t);
            let dispatched = self.driver.dispatched();
            changed |= self.start_passes_and_route(t);
            changed |= self.driver.dispatched() != dispatched;
            if self.planner.is_some() {
                self.settle_drains(t);
                self.planner_tick(t);
            }
            if !(changed && self.offload.is_some()) {
                self.refresh_deadlines();
                return;
            }
        }
        self.give_up("the offload tiers' work at one instant does not converge");
    }

    /// Pass ends and hand-off transfers due by `t`, in the queue's order; true if any.
    fn apply_due_events(&mut self, t: f64) -> bool {
        let mut any = false;
        while let Some(e) = self.events.pop_due(t) {
            match e.kind {
                EventKind::PassEnd { worker } => self.end_worker_pass(worker as usize, t),
                EventKind::TransferDone { request, rank } => self.transfer_done(request, rank as usize, t),
                EventKind::TransferDeadline { rank } => {
                    self.transfer_deadline(rank as usize, e.at_ms, t);
                }
            }
            any = true;
        }
        any
    }

    /// Arrivals are routed and idle workers with work start passes, in the order the
    /// reference's loop has them; true if a pass started (with offload: or ended at once).
    fn start_passes_and_route(&mut self, t: f64) -> bool {
        if self.offload.is_some() {
            // Passes that take no time end at once, and the round restarts (`offload.rs`).
            self.route_arrivals(t);
            return self.drive(t);
        }
        // Disaggregated serving: ranks whose pass just ended start their next one before
        // the arrivals of this instant are routed (an arrival exactly at a prefill pass end
        // waits a pass there; aggregated, it joins). Measured on the reference.
        if self.handoff.is_none() {
            self.route_arrivals(t);
            self.start_passes(t);
        } else {
            self.start_passes(t);
            self.route_arrivals(t);
            self.start_passes(t);
        }
        false
    }

    /// Nothing is left to happen, yet requests wait: ranks stalled behind a queue head that
    /// can never be admitted (the reference aborts its replay there). They end as
    /// unschedulable, with the reason, instead of being lost.
    fn end_stuck_requests(&mut self) {
        const WHY: &str = "stuck: nothing runs and the head of its rank's queue can never be admitted";
        for r in 0..self.fleet.ranks.len() {
            if let Some(h) = &mut self.handoff {
                for i in h.take_stuck(r) {
                    self.finish_request(i, Status::Unschedulable, Some(format!("{WHY} (it waited for a decode reservation)")));
                }
            }
            if self.fleet.ranks[r].engine.in_flight() == 0 {
                continue;
            }
            for f in self.fleet.ranks[r].engine.abandon(WHY) {
                self.finish_request(f.id as u32, Status::Unschedulable, Some(WHY.to_string()));
            }
        }
    }

    /// Every provisioned worker counts for the time the clock advances to `t` (the report's
    /// worker-seconds; aggregated workers count as decode workers, as in the reference).
    fn count_worker_seconds(&mut self, t: f64) {
        let dt = t - self.now_ms;
        if dt <= 0.0 {
            return;
        }
        for p in &self.fleet.pools {
            let live = p.workers.iter().filter(|&&w| self.fleet.workers[w].live()).count();
            let ws = live as f64 * dt / 1000.0;
            match p.role {
                Role::Prefill => self.collector.fleet.prefill_worker_seconds += ws,
                Role::Aggregated | Role::Decode => self.collector.fleet.decode_worker_seconds += ws,
            }
        }
    }

    /// Routes the arrivals due by `t` (to the router's queue while every target is busy).
    fn route_arrivals(&mut self, t: f64) {
        while let Some((i, at)) = self.driver.pop_ready(t, &mut self.workload) {
            self.collector.arrive(i, at, self.workload.input_length(i as usize));
            if let Some(im) = &mut self.collector.images {
                let n = self.workload.images(i as usize).len() as u32;
                im.num_images += n as u64;
                im.images_of[i as usize] = n;
            }
            if self.event_sink.is_some() {
                let (input_tokens, output_tokens) = (self.workload.input_length(i as usize), self.workload.rows[i as usize].output_length);
                self.emit(t, SimEvent::Arrived { request: i, input_tokens, output_tokens });
            }
            if self.hand_off(|h, fleet, workload, out| h.on_arrival(i, t, fleet, workload, out)) == Some(true) {
                continue;
            }
            self.admit(Fleet::ENTRY, i);
        }
    }

    /// Request `i` comes to `pool`'s router: routed now, or queued while every target is
    /// busy or others wait before it.
    fn admit(&mut self, pool: usize, i: u32) {
        let p = &self.fleet.pools[pool];
        if !p.queued.is_empty() || p.router.all_busy(p.max_num_batched_tokens, self.now_ms) {
            self.enqueue(pool, i);
        } else {
            self.route(pool, i, None);
        }
    }

    /// Every idle worker with work starts a pass at `t`.
    fn start_passes(&mut self, t: f64) {
        for w in 0..self.fleet.workers.len() {
            if self.fleet.workers[w].busy {
                continue;
            }
            for r in self.fleet.workers[w].ranks.clone() {
                self.idle_pass(r, t);
            }
            if self.fleet.workers[w].ranks.clone().any(|r| self.fleet.ranks[r].engine.has_work()) {
                self.start_worker_pass(w, t);
            }
        }
    }

    /// Rank `r`'s last pass ended with nothing running and requests queued: the reference
    /// starts another pass at once, which on a decode rank begins with reservation attempts.
    /// On an SGLang rank each such pass also decays `new_token_ratio`, and the reference
    /// repeats them while it changes: when they end with nothing to run, it is at its floor.
    fn idle_pass(&mut self, r: usize, t: f64) {
        if !std::mem::take(&mut self.fleet.ranks[r].idle_pass) {
            return;
        }
        self.hand_off(|h, fleet, workload, out| h.idle_pass_reservations(r, t, fleet, workload, out));
        let engine = &mut self.fleet.ranks[r].engine;
        if !engine.has_work() {
            engine.idle_pass();
        }
    }

    /// Ends the run (early, if it is not done: unfinished requests stay pending).
    /// The measured-kernel models the engines run with, and the KV pools they sized.
    pub fn kernels(&self) -> &crate::kernels::KernelSets {
        &self.kernels
    }

    pub fn finish(mut self) -> RunReport {
        self.settle_open_streaks();
        self.flush_idle_events();
        // Blocks let go between passes (a prefill rank releasing a transferred prompt) show in
        // a rank's next `blocks` line; after the last pass, in one more.
        for r in 0..self.block_mirrors.len() {
            let at = self.place_of(r);
            if let Some(event) = self.block_changes(r, at)
                && let Some(sink) = &mut self.event_sink
            {
                sink.record(self.now_ms, &event);
            }
        }
        if self.checks && self.is_done() && !self.cut_off {
            let lost: Vec<usize> = (self.collector.records.iter().enumerate())
                .filter(|(i, r)| r.status == Status::Pending && !self.driver.skipped(*i as u32))
                .map(|(i, _)| i)
                .collect();
            assert!(lost.is_empty(), "requests never finished (trace lines {:?})", lost.iter().map(|i| i + 1).collect::<Vec<_>>());
        }
        if let Some(tiers) = &self.offload {
            let (g3, g2) = Self::offload_report(tiers);
            self.collector.offload = Some(crate::report::OffloadReport { g3, g2 });
        }
        self.collector.trajectories = self.driver.trajectories(&self.workload);
        self.collector.power = crate::report::power::PowerReport::of(&self.fleet);
        let block_size = self.fleet.pools[Fleet::ENTRY].block_size;
        let scaling = self.planner.map(|p| p.record);
        RunReport {
            collector: self.collector,
            timeseries: self.recorder.finish(),
            columns: self.columns,
            block_size,
            scaling,
            config: None,
        }
    }

    /// Request `i` waits in `pool`'s router queue, with the overlaps its router sees now.
    fn enqueue(&mut self, pool: usize, i: u32) {
        let req = self.workload.request(i as usize, i as u64);
        let p = &mut self.fleet.pools[pool];
        let hashes = if p.router.is_kv_aware() { prompt_hashes(&req, p.block_size, &mut self.scratch) } else { Vec::new() };
        let query = RouteQuery { id: i as u64, now_ms: self.now_ms, prompt_tokens: req.prompt.len(), block_hashes: &hashes };
        let overlaps = if p.router.is_kv_aware() { p.router.overlaps(&query) } else { Vec::new() };
        p.queued.push_back((i, overlaps));
    }

    /// Sends request `i` to a rank of `pool`: prompt work for the aggregated and prefill
    /// pools (the prefill pool computes the prompt and hands over, so it asks for 1 token).
    /// A request leaving the router's queue brings the overlaps seen at its arrival.
    fn route(&mut self, pool: usize, i: u32, queued_overlaps: Option<&[u32]>) {
        let mut req = self.workload.request(i as usize, i as u64);
        let p = &mut self.fleet.pools[pool];
        let hashes = if p.router.is_kv_aware() { prompt_hashes(&req, p.block_size, &mut self.scratch) } else { Vec::new() };
        let query = RouteQuery { id: i as u64, now_ms: self.now_ms, prompt_tokens: req.prompt.len(), block_hashes: &hashes };
        let placement = match queued_overlaps {
            Some(overlaps) => p.router.route_with(&query, overlaps),
            None => p.router.route(&query),
        };
        let rank = p.rank_of(placement.target);
        // The report's overlap is that of the request's first routing decision, as the
        // reference's: SGLang's hand-off routes the decode side first, which sees no KV
        // events, so its requests report none.
        let decode_routed_first = p.role == Role::Prefill && self.handoff.as_ref().is_some_and(|h| h.destination_first());
        if !decode_routed_first {
            self.collector.records[i as usize].router_overlap_blocks = placement.overlap_blocks;
        }
        if p.role == Role::Prefill {
            req.max_output = 1;
            if let Some(h) = &mut self.handoff {
                h.prefill_routed(i, rank);
            }
        } else {
            self.place(i, rank);
        }
        self.fleet.ranks[rank].engine.submit(req);
        if self.event_sink.is_some() {
            self.flush_idle_events();
            let at = self.place_of(rank);
            let (costs, overlap_blocks) = match self.fleet.pools[pool].router.last_decision() {
                Some((c, o)) => (Some(c), Some(o)),
                None => (None, None),
            };
            let event = SimEvent::Routed { request: i, at, costs, overlap_blocks };
            if let Some(sink) = &mut self.event_sink {
                sink.record(self.now_ms, &event);
            }
        }
    }

    /// Request `i` is served (decodes) on rank `rank`: the report's worker and DP rank.
    fn place(&mut self, i: u32, rank: usize) {
        let (record, rank) = (&mut self.collector.records[i as usize], &self.fleet.ranks[rank]);
        (record.worker, record.dp_rank) = (rank.worker, rank.dp_rank);
    }

    /// A prompt's KV reached its decode rank.
    fn transfer_done(&mut self, i: u32, rank: usize, t: f64) {
        if self.event_sink.is_some() {
            let at = self.place_of(rank);
            self.emit(t, SimEvent::TransferEnd { request: i, at });
        }
        let done = self.hand_off(|h, fleet, workload, out| h.transfer_done(i, rank, t, fleet, workload, out));
        debug_assert!(done.is_some(), "transfers happen only in disaggregated serving");
    }

    /// Runs `call` on the hand-off (None without one) and carries out what it decided: the
    /// only way the loop talks to the hand-off's deciding calls, so no decision is left behind.
    fn hand_off<R>(&mut self, call: impl FnOnce(&mut Handoff, &mut Fleet, &Workload, &mut Vec<Decision>) -> R) -> Option<R> {
        let h = self.handoff.as_mut()?;
        let prefill_pool = h.prefill_pool();
        let mut decided = Vec::new();
        let result = call(h, &mut self.fleet, &self.workload, &mut decided);
        self.apply_decisions(prefill_pool, decided);
        Some(result)
    }

    /// Carries out what the hand-off decided, in order.
    fn apply_decisions(&mut self, prefill_pool: usize, decided: Vec<Decision>) {
        for d in decided {
            match d {
                Decision::Prefill(i) => self.admit(prefill_pool, i),
                Decision::Transfer { request, rank, at_ms } => {
                    self.events.push(at_ms, EventKind::TransferDone { request, rank: rank as u32 });
                    if self.event_sink.is_some() {
                        let at = self.place_of(rank);
                        self.emit(self.now_ms, SimEvent::TransferStart { request, at, ms: at_ms - self.now_ms });
                    }
                }
                Decision::Activated { request, rank } => self.place(request, rank),
                Decision::Fail { request, reason } => self.finish_request(request, Status::Rejected, Some(reason)),
            }
        }
    }

    /// Every rank of worker `w` with work computes a pass; the worker is busy until the
    /// slowest one ends.
    fn start_worker_pass(&mut self, w: usize, now: f64) {
        let mut longest = Duration::ZERO;
        for r in self.fleet.workers[w].ranks.clone() {
            let rank = &mut self.fleet.ranks[r];
            if !rank.engine.has_work() {
                continue;
            }
            // The pass's output buffers are swapped into `pending`, not copied.
            rank.engine.step_into(&mut rank.pending);
            let out = &rank.pending;
            let progressed = out.scheduled_tokens > 0
                || !out.finished.is_empty()
                || !out.preempted.is_empty()
                || !out.tokens.is_empty()
                || out.steady_tokens > 0;
            longest = longest.max(out.duration);
            if !progressed && !rank.engine.stalled() {
                // A pass that changes nothing would repeat forever: end the rank's requests
                // with the reason instead of hanging.
                let stuck = rank.engine.abandon("no pass could make progress");
                rank.pending.finished.extend(stuck);
            }
            rank.stepped = true;
            // A pool check walks every block: every pass for small pools, every 64th for
            // large ones (tests of 16k-block pools would otherwise take minutes).
            self.passes += 1;
            if self.checks
                && (rank.engine.metrics().total_blocks <= 4096 || self.passes.is_multiple_of(64))
                && let Err(e) = rank.engine.check()
            {
                panic!("worker {w}, rank {r}: {e} after the pass at {now} ms");
            }
        }
        self.fleet.workers[w].busy = true;
        for r in self.fleet.workers[w].ranks.clone() {
            self.fleet.ranks[r].started_ms = now;
        }
        self.events.push(now + duration_ms(longest), EventKind::PassEnd { worker: w as u32 });
    }

    /// A run cut short leaves streaks open, some counting a token of a pass still in flight
    /// (whose effects a cut run never applies): settle the applied part into the records.
    fn settle_open_streaks(&mut self) {
        for rank in &mut self.fleet.ranks {
            let prev = rank.last_pass_end_ms;
            // Only the tokens up to the rank's last applied pass count.
            let in_flight = rank.stepped;
            if in_flight {
                for &(id, n) in &rank.pending.streak_ends {
                    self.collector.steady_tokens(id as u32, n, prev);
                }
                for f in rank.pending.finished.iter().filter(|f| f.steady_tokens > 0) {
                    // A completing request's last (steady) token is the unapplied pass's.
                    let applied = f.steady_tokens - (f.outcome == Outcome::Completed) as u32;
                    if applied > 0 {
                        self.collector.steady_tokens(f.id as u32, applied, prev);
                    }
                }
            }
            for (id, n) in rank.engine.take_open_streaks() {
                // A streak still open after a pass had a token in it.
                let applied = n - in_flight as u32;
                if applied > 0 {
                    self.collector.steady_tokens(id as u32, applied, prev);
                }
            }
        }
    }

    /// Worker `w`'s pass ended at `t`: its ranks' passes take effect, then each decode rank
    /// takes its pass-boundary reservations.
    fn end_worker_pass(&mut self, w: usize, t: f64) {
        if self.offload.is_some() {
            self.offload_boundary(w, t);
        }
        self.apply_worker_pass(w, t);
    }

    /// Worker `w`'s pass takes effect (after its offload boundary, if any).
    fn apply_worker_pass(&mut self, w: usize, t: f64) {
        self.fleet.workers[w].busy = false;
        if let Some(h) = &mut self.handoff {
            for r in self.fleet.workers[w].ranks.clone() {
                h.release_sources(r, &mut self.fleet);
            }
        }
        for r in self.fleet.workers[w].ranks.clone() {
            if std::mem::take(&mut self.fleet.ranks[r].stepped) {
                self.apply_rank_pass(r, t);
            }
        }
        if self.handoff.is_some() {
            // The releases' KV events reach the router after the pass's own.
            for r in self.fleet.workers[w].ranks.clone() {
                self.fleet.publish_idle_events(r, t);
            }
        }
        for r in self.fleet.workers[w].ranks.clone() {
            self.hand_off(|h, fleet, workload, out| h.at_boundary(r, t, fleet, workload, out));
            let rank = &mut self.fleet.ranks[r];
            rank.idle_pass = rank.engine.idle_with_queue();
        }
    }

    /// Applies rank `r`'s pass: its KV events reach the router, its admissions, tokens and
    /// completions reach the records.
    fn apply_rank_pass(&mut self, r: usize, t: f64) {
        let spare = self.spare_pass.take().unwrap_or_default();
        let mut out = std::mem::replace(&mut self.fleet.ranks[r].pending, spare);
        if (!out.finished.is_empty() || !out.preempted.is_empty())
            && let Some(h) = &mut self.handoff
        {
            h.capacity_returned(r);
        }
        let pool = self.fleet.ranks[r].pool;
        let role = self.fleet.pools[pool].role;
        let target = self.fleet.ranks[r].target;
        self.recorder.rank_pass(r, t, &out.metrics, duration_ms(out.duration), duration_ms(out.encoder_duration));
        if self.event_sink.is_some() {
            self.record_pass(r, &out, t);
        }
        self.fleet.pools[pool].router.apply_events(target, &out.kv_events, t);
        if self.planner.is_some() {
            self.publish_fpm(r, out.fpm, t);
        }
        self.collector.committed_prefill_tokens += out.committed_prefill_tokens;
        if let Some(im) = &mut self.collector.images {
            let ms = duration_ms(out.encoder_duration);
            for &id in &out.encoded {
                im.encoder_ms[id as usize] += ms;
            }
            im.lookups += out.encoder_lookups as u64;
            im.hits += out.encoder_hits as u64;
        }
        match self.fleet.pools[pool].args().backend {
            servesim_engine::Backend::Sglang => self.collector.retractions += out.preempted.len() as u64,
            _ => self.collector.preemptions += out.preempted.len() as u64,
        }
        for a in &out.admissions {
            self.collector.admit(a.id as u32, a.reused_tokens, role == Role::Decode, a.readmission);
            if let Some(host) = a.host_reused_tokens {
                self.collector.records[a.id as usize].host_reused_input_tokens = Some(host);
            }
        }
        let prev_end = std::mem::replace(&mut self.fleet.ranks[r].last_pass_end_ms, t);
        if role != Role::Prefill {
            self.record_tokens(&out, r, pool, t, prev_end);
        }
        for f in &out.finished {
            let i = f.id as u32;
            if f.steady_tokens > 0 {
                // A completing request's last token is this pass's; any other ended its
                // streak at the previous pass.
                let last = if f.outcome == Outcome::Completed { t } else { prev_end };
                self.collector.steady_tokens(i, f.steady_tokens, last);
            }
            self.fleet.pools[pool].router.free(f.id, t);
            if role == Role::Aggregated && self.fleet.pools[pool].args().worker_type == WorkerType::Prefill {
                // A prefill-type engine outside a disaggregated pool: nothing takes its KV.
                self.fleet.release_source(r, f.id, t);
            }
            match (&f.outcome, role) {
                (Outcome::Completed, Role::Prefill) => {
                    let done = self.hand_off(|h, fleet, workload, out| h.on_prefill_done(i, t, fleet, workload, out));
                    debug_assert!(done.is_some(), "a prefill pool has a hand-off");
                }
                (Outcome::Completed, _) => self.finish_request(i, Status::Completed, None),
                (Outcome::Rejected(why), _) => self.finish_request(i, Status::Rejected, Some(why.clone())),
                (Outcome::Unschedulable(why), _) => self.finish_request(i, Status::Unschedulable, Some(why.clone())),
            }
        }
        out.clear();
        self.spare_pass = Some(out);
        // Lifecycle edges may have freed a target: dispatch the router's queue.
        while !self.fleet.pools[pool].queued.is_empty()
            && !self.fleet.pools[pool].router.all_busy(self.fleet.pools[pool].max_num_batched_tokens, t)
        {
            let (i, overlaps) = self.fleet.pools[pool].queued.pop_front().expect("non-empty");
            self.route(pool, i, Some(&overlaps));
        }
    }

    /// A pass's emitted tokens: first tokens (TTFT, and the router's prefill charge ends),
    /// inter-token gaps (folded in runs: requests decoding pass after pass share their gap).
    fn record_tokens(&mut self, out: &PassOutput, r: usize, pool: usize, t: f64, prev_end: f64) {
        self.recorder.tokens(t, out.tokens.len() as u64 + out.steady_tokens);
        // Steady tokens (see `PassOutput::steady_tokens`) all have the gap since this
        // rank's previous pass end; their records are settled when their streak ends.
        if out.steady_tokens > 0 {
            self.fold_gaps(t, t - prev_end, out.steady_tokens);
        }
        for &(id, n) in &out.streak_ends {
            self.collector.steady_tokens(id as u32, n, prev_end);
        }
        let mut run: Option<(f64, u64)> = None;
        for &id in &out.tokens {
            let (gap, ttft) = self.collector.token(id as u32, t);
            if let Some(ttft) = ttft {
                self.recorder.first_token(t, ttft);
                self.fleet.pools[pool].router.prefill_done(id, t);
                if self.event_sink.is_some() {
                    let at = self.place_of(r);
                    self.emit(t, SimEvent::FirstToken { request: id as u32, at, ttft_ms: ttft });
                }
            }
            let Some(gap) = gap else { continue };
            if self.collector.gaps_deferred() {
                self.collector.request_gap(id as u32, gap);
                self.recorder.gaps(t, gap, 1);
                continue;
            }
            match &mut run {
                Some((g, n)) if *g == gap => *n += 1,
                _ => {
                    if let Some((g, n)) = run.replace((gap, 1)) {
                        self.fold_gaps(t, g, n);
                    }
                }
            }
        }
        if let Some((g, n)) = run {
            self.fold_gaps(t, g, n);
        }
    }

    /// The event stream's view of rank `r`'s pass ending at `t`: what the engine published (KV
    /// events) and did (admissions, preemptions or retractions), then the pass itself with the
    /// KV pool as it left it.
    fn record_pass(&mut self, r: usize, out: &PassOutput, t: f64) {
        self.flush_idle_events();
        let at = self.place_of(r);
        let start_ms = self.fleet.ranks[r].started_ms;
        let pass = SimEvent::Pass {
            at,
            start_ms,
            duration_ms: t - start_ms,
            prefill_tokens: out.committed_prefill_tokens,
            decode_tokens: out.tokens.len() as u64 + out.steady_tokens,
            batch: out.metrics.running_requests,
            waiting: out.metrics.waiting_requests,
            blocks: self.fleet.ranks[r].engine.kv_blocks(),
        };
        let sglang = self.fleet.pools[self.fleet.ranks[r].pool].args().backend == servesim_engine::Backend::Sglang;
        let blocks = self.block_changes(r, at);
        let Some(sink) = &mut self.event_sink else { return };
        for e in &out.kv_events {
            sink.record(t, &kv_event(at, e));
        }
        for a in &out.admissions {
            let event = SimEvent::Admitted { request: a.id as u32, at, cached_tokens: a.reused_tokens, readmission: a.readmission };
            sink.record(t, &event);
        }
        for &id in &out.preempted {
            let request = id as u32;
            let event = if sglang { SimEvent::Retracted { request, at } } else { SimEvent::Preempted { request, at } };
            sink.record(t, &event);
        }
        if let Some(event) = &blocks {
            sink.record(t, event);
        }
        sink.record(t, &pass);
    }

    /// Rank `r`'s pool block by block, as a `blocks` line of the changes since its previous
    /// one (`None`: nothing changed, or the core keeps no block table).
    fn block_changes(&mut self, r: usize, at: Place) -> Option<SimEvent<'static>> {
        self.event_sink.as_ref()?;
        let engine = &self.fleet.ranks[r].engine;
        let held = engine.held_blocks()?;
        if self.block_mirrors.len() <= r {
            self.block_mirrors.resize(r + 1, BlockMirror::default());
        }
        let (set, held) = self.block_mirrors[r].update(held, engine.kv_blocks(), |b| engine.block_view(b));
        (!set.is_empty() || !held.is_empty()).then_some(SimEvent::Blocks { at, set, held })
    }

    fn fold_gaps(&mut self, t: f64, gap: f64, n: u64) {
        self.collector.gaps(gap, n);
        self.recorder.gaps(t, gap, n);
    }

    fn finish_request(&mut self, i: u32, status: Status, reason: Option<String>) {
        let t = self.now_ms;
        if self.checks {
            let was = self.collector.records[i as usize].status;
            assert!(was == Status::Pending, "request {i} (trace line {}) finished twice: {was:?}, then {status:?}", i + 1);
        }
        if self.event_sink.is_some() {
            let status_name = match status {
                Status::Completed => "completed",
                Status::Rejected => "rejected",
                Status::Unschedulable => "unschedulable",
                Status::Pending => "pending",
            };
            let output_tokens = self.collector.records[i as usize].output_tokens;
            self.emit(t, SimEvent::Finished { request: i, status: status_name, output_tokens, reason: reason.as_deref() });
        }
        self.collector.finish(i, t, status, reason);
        if status == Status::Completed {
            self.recorder.completed(t, self.collector.records[i as usize].input_length);
        }
        self.finished += 1;
        let output_tokens = self.collector.records[i as usize].output_tokens;
        self.driver.on_terminal(i, t, output_tokens, status == Status::Completed, &mut self.workload);
    }
}

/// A KV event as the stream tells it.
fn kv_event(at: Place, e: &KvEvent) -> SimEvent<'_> {
    let tier = (e.tier != KvTier::Device).then_some("host");
    match &e.data {
        KvEventData::Stored { parent_hash, blocks } => {
            SimEvent::Stored { at, parent: *parent_hash, hashes: blocks.iter().map(|b| b.block_hash).collect(), tier }
        }
        KvEventData::Removed { block_hashes } => SimEvent::Removed { at, hashes: block_hashes, tier },
    }
}
