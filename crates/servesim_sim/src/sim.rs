//! The discrete-event loop: one virtual clock; engine passes, KV transfers and arrivals as
//! events. At each timestamp, pass completions are applied first (their KV events reach the
//! router), then finished transfers, then arrivals are routed; then every idle rank with work
//! starts its next pass. A pass's effects are stamped at its end, so an arrival exactly at a
//! pass end joins the next pass.

use crate::cluster::{RouteQuery, Router};
use crate::report::timeseries::{Recorder, TimeSeries};
use crate::report::{Collector, Status};
use crate::scenario::SimConfig;
use crate::workload::Workload;
use crate::SimError;
use servesim_engine::args::KvTransferTimingMode;
use servesim_engine::engine::PassOutput;
use servesim_engine::hash::{block_hash, mix64, sequence_hash};
use servesim_engine::perf::duration_ms;
use servesim_engine::{Engine, EngineArgs, LaunchConfig, Outcome, Request, Reservation, WorkerType};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

/// Which pool a rank serves in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Aggregated,
    Prefill,
    Decode,
}

impl Role {
    fn name(self) -> &'static str {
        match self {
            Role::Aggregated => "aggregated",
            Role::Prefill => "prefill",
            Role::Decode => "decode",
        }
    }
}

/// Workers of one role behind one router; routing targets are their ranks.
struct Pool {
    role: Role,
    router: Router,
    /// Global index of the pool's first rank; its ranks are contiguous, worker by worker.
    first_rank: usize,
    workers: usize,
    dp_size: usize,
    block_size: u32,
    max_num_batched_tokens: u64,
    args: EngineArgs,
    /// Requests held by the router while every target is busy (FCFS).
    queued: std::collections::VecDeque<u32>,
}

impl Pool {
    /// Routing target k is rank k / workers of worker k mod workers (targets cycle through
    /// the workers first, as the reference's round robin does).
    fn rank_of(&self, target: usize) -> usize {
        self.first_rank + (target % self.workers) * self.dp_size + target / self.workers
    }

    fn target_of(&self, rank: usize) -> usize {
        let i = rank - self.first_rank;
        (i % self.dp_size) * self.workers + i / self.dp_size
    }
}

/// A worker's data-parallel ranks step together: a pass starts on every rank with work at
/// once and ends when the slowest rank does (the attention-DP barrier).
struct Worker {
    ranks: std::ops::Range<usize>,
    busy: bool,
}

/// One engine core (a worker's data-parallel rank).
struct Rank {
    engine: Engine,
    pool: usize,
    worker: u32,
    /// Global index of its worker.
    group: usize,
    /// Whether it computed a pass in its worker's current epoch.
    stepped: bool,
    /// The running pass's effects, applied when it ends.
    pending: PassOutput,
    /// Decode destinations asked for mid-pass: a reservation is a scheduler command, applied
    /// at a pass boundary, and the KV transfer starts only then.
    reservations: Vec<u32>,
    /// Counts the times this rank gave capacity back (a pass in which a request finished or
    /// was preempted, an activation that freed copies of cached pages): a head reservation
    /// that found no room is tried again only after the next one (the reference's
    /// "capacity generation").
    capacity_generation: u64,
    /// The generation at which the head of `reservations` last found no room.
    head_refused_at: Option<u64>,
    /// Transfers that finished mid-pass: the request is activated at the next boundary.
    arrived: Vec<u32>,
    /// A prefill rank's held prompts whose transfer is done, freed at its next boundary.
    releases: Vec<u32>,
    /// When its latest pass ended: the gap of its steady tokens runs from there.
    last_pass_end_ms: f64,
    /// Its pass just ended with nothing running and requests queued: the next pass, at the
    /// same instant, begins with reservation attempts (see `idle_pass_reservations`).
    idle_pass: bool,
}

#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
enum EventKind {
    /// Ordered first at equal times: pass completions, then transfers.
    PassEnd { worker: u32 },
    TransferDone { request: u32, rank: u32 },
}

#[derive(Debug)]
struct Event {
    at_ms: f64,
    seq: u64,
    kind: EventKind,
}

impl Event {
    fn phase(&self) -> u8 {
        match self.kind {
            EventKind::PassEnd { .. } => 0,
            EventKind::TransferDone { .. } => 1,
        }
    }

    /// Within a phase, worker identity orders simultaneous pass ends (not the order the
    /// passes started: measured on the reference); transfers go in the order they started.
    fn tie(&self) -> u64 {
        match self.kind {
            EventKind::PassEnd { worker } => worker as u64,
            EventKind::TransferDone { .. } => self.seq,
        }
    }
}

impl PartialEq for Event {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == std::cmp::Ordering::Equal
    }
}
impl Eq for Event {}
impl PartialOrd for Event {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Event {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.at_ms.total_cmp(&other.at_ms).then(self.phase().cmp(&other.phase())).then(self.tie().cmp(&other.tie()))
    }
}

/// The finished run: summary, per-request records, time series.
#[derive(Debug)]
pub struct RunReport {
    pub collector: Collector,
    pub timeseries: TimeSeries,
}

impl RunReport {
    pub fn summary(&self) -> serde_json::Map<String, serde_json::Value> {
        self.collector.summary()
    }

    pub fn timeseries(&self) -> &TimeSeries {
        &self.timeseries
    }

    /// `[first_token_ms, end_ms, output_tokens, reused_input_tokens, readmissions]` per
    /// request, in trace order (the conformance cases' columns).
    pub fn per_request_rows(&self) -> Vec<serde_json::Value> {
        use serde_json::json;
        self.collector
            .records
            .iter()
            .map(|r| json!([r.first_token_ms, r.end_ms, r.output_tokens, r.reused_input_tokens, r.readmissions]))
            .collect()
    }

    /// Writes the same answer as [`RunReport::to_json`], row by row, without building it in
    /// memory (a million-request run stays small).
    pub fn write_json<W: std::io::Write + ?Sized>(&self, w: &mut W) -> std::io::Result<()> {
        write!(w, "{{\"summary\":")?;
        serde_json::to_writer(&mut *w, &self.summary())?;
        write!(w, ",\"per_request\":[")?;
        for (k, r) in self.collector.records.iter().enumerate() {
            if k > 0 {
                w.write_all(b",")?;
            }
            let row = (r.first_token_ms, r.end_ms, r.output_tokens, r.reused_input_tokens, r.readmissions);
            serde_json::to_writer(&mut *w, &row)?;
        }
        w.write_all(b"]")?;
        if let Some(list) = self.to_json_not_completed() {
            write!(w, ",\"not_completed\":")?;
            serde_json::to_writer(&mut *w, &list)?;
        }
        w.write_all(b"}\n")
    }

    fn to_json_not_completed(&self) -> Option<serde_json::Value> {
        if self.collector.reasons.is_empty() {
            return None;
        }
        let list: Vec<_> = self
            .collector
            .reasons
            .iter()
            .map(|(i, why)| serde_json::json!({"request": i, "trace_line": i + 1, "status": self.collector.records[*i as usize].status, "reason": why}))
            .collect();
        Some(list.into())
    }

    /// The case-file answer: `{"summary": ..., "per_request": ...}`, plus the reasons of any
    /// request that could not run.
    pub fn to_json(&self) -> serde_json::Value {
        let mut v = serde_json::json!({
            "summary": self.summary(),
            "per_request": self.per_request_rows(),
        });
        if let Some(list) = self.to_json_not_completed() {
            v["not_completed"] = list;
        }
        v
    }
}

pub struct Simulation {
    workload: Workload,
    arrival_ms: Vec<f64>,
    order: Vec<u32>,
    next_arrival: usize,
    pools: Vec<Pool>,
    workers: Vec<Worker>,
    ranks: Vec<Rank>,
    events: BinaryHeap<Reverse<Event>>,
    seq: u64,
    now_ms: f64,
    finished: usize,
    collector: Collector,
    recorder: Recorder,
    scratch: Vec<u8>,
    /// Disaggregated serving: the prefill rank holding each request's prompt KV.
    source_rank: Vec<u32>,
    /// SGLang hand-off order: the decode destination is reserved on arrival, before the
    /// prefill (vLLM reserves it after). Then `destination` holds each request's decode
    /// rank and the prefix blocks it had resident.
    destination_first: bool,
    destination: Vec<(u32, u32)>,
    /// Verify invariants after every pass (on in debug builds; tests turn it on).
    checks: bool,
    passes: u64,
}

impl Simulation {
    pub fn new(cfg: &SimConfig, workload: Workload) -> Result<Self, SimError> {
        cfg.validate()?;
        if workload.is_empty() {
            return Err(SimError::new("the workload has no requests"));
        }
        let mut sim = Simulation {
            arrival_ms: Vec::new(),
            order: Vec::new(),
            next_arrival: 0,
            pools: Vec::new(),
            workers: Vec::new(),
            ranks: Vec::new(),
            events: BinaryHeap::new(),
            seq: 0,
            now_ms: 0.0,
            finished: 0,
            collector: Collector::new(),
            recorder: Recorder::new(cfg.timeseries_interval_ms),
            scratch: Default::default(),
            source_rank: Vec::new(),
            destination_first: false,
            destination: Vec::new(),
            checks: cfg!(debug_assertions),
            passes: 0,
            workload,
        };
        match &cfg.disagg {
            None => sim.add_pool(cfg, Role::Aggregated, &cfg.launch, cfg.num_workers, cfg.router_config.clone())?,
            Some(d) => {
                sim.add_pool(cfg, Role::Prefill, &d.prefill, d.num_prefill_workers, cfg.router_config.prefill_pool())?;
                sim.add_pool(cfg, Role::Decode, &d.decode, d.num_decode_workers, cfg.router_config.decode_pool())?;
            }
        }
        if let Some(d) = &cfg.disagg {
            sim.source_rank = vec![u32::MAX; sim.workload.len()];
            if d.decode.engine.backend == servesim_engine::Backend::Sglang {
                sim.destination_first = true;
                sim.destination = vec![(u32::MAX, 0); sim.workload.len()];
            }
        }
        let (arrival_ms, order) = sim.workload.arrivals(cfg.arrival_speedup_ratio);
        for (i, row) in sim.workload.rows.iter().enumerate() {
            sim.collector.arrive(arrival_ms[i], row.input_length);
        }
        sim.arrival_ms = arrival_ms;
        sim.order = order;
        Ok(sim)
    }

    fn add_pool(&mut self, cfg: &SimConfig, role: Role, launch: &LaunchConfig, workers: u32, router_cfg: crate::cluster::RouterConfig) -> Result<(), SimError> {
        let first_rank = self.ranks.len();
        let targets = (workers * launch.dp_size) as usize;
        let pool_index = self.pools.len();
        // Each pool draws its routing ties from its own stream of the scenario's seed.
        let router = Router::new(cfg.router_mode, router_cfg, targets, launch.engine.block_size(), mix64(cfg.seed ^ pool_index as u64));
        let emit_events = router.wants_kv_events();
        for w in 0..workers {
            let group = self.workers.len();
            let start = self.ranks.len();
            for dp in 0..launch.dp_size {
                let mut engine = Engine::rank_of(&launch.engine, dp, launch.dp_size, emit_events)?;
                engine.set_steady_tokens(true);
                self.ranks.push(Rank {
                    engine,
                    pool: pool_index,
                    worker: w,
                    group,
                    stepped: false,
                    pending: PassOutput::default(),
                    reservations: Vec::new(),
                    capacity_generation: 0,
                    head_refused_at: None,
                    arrived: Vec::new(),
                    releases: Vec::new(),
                    last_pass_end_ms: 0.0,
                    idle_pass: false,
                });
                self.recorder.add_rank(role.name(), w, dp);
            }
            self.workers.push(Worker { ranks: start..self.ranks.len(), busy: false });
        }
        self.pools.push(Pool {
            role,
            router,
            first_rank,
            workers: workers as usize,
            dp_size: launch.dp_size as usize,
            block_size: launch.engine.block_size(),
            max_num_batched_tokens: launch.engine.max_num_batched_tokens.map_or(u64::MAX, u64::from),
            args: launch.engine.clone(),
            queued: Default::default(),
        });
        Ok(())
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

    /// Whether engines count their steady tokens instead of listing them (on by default;
    /// the records come out the same either way, which tests check).
    pub fn with_steady_tokens(mut self, on: bool) -> Self {
        for rank in &mut self.ranks {
            rank.engine.set_steady_tokens(on);
        }
        self
    }

    /// Virtual time reached so far.
    pub fn now_ms(&self) -> f64 {
        self.now_ms
    }

    /// Fraction of the run done, in [0, 1]: arrivals and completions, equally weighted.
    pub fn progress(&self) -> f64 {
        let n = self.workload.len() as f64;
        (self.next_arrival as f64 + self.finished as f64) / (2.0 * n)
    }

    pub fn is_done(&self) -> bool {
        self.next_arrival == self.order.len() && self.events.is_empty()
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
            let next_event = self.events.peek().map(|e| e.0.at_ms);
            let next_arrival = self.order.get(self.next_arrival).map(|&i| self.arrival_ms[i as usize]);
            let t = match (next_event, next_arrival) {
                (None, None) => {
                    self.end_stuck_requests();
                    return true;
                }
                (Some(e), None) => e,
                (None, Some(a)) => a,
                (Some(e), Some(a)) => e.min(a),
            };
            if self.checks {
                assert!(t >= self.now_ms, "the clock went backwards: {} ms after {} ms", t, self.now_ms);
            }
            self.now_ms = t;
            while self.events.peek().is_some_and(|e| e.0.at_ms <= t) {
                let Reverse(e) = self.events.pop().expect("peeked");
                match e.kind {
                    EventKind::PassEnd { worker } => self.complete_epoch(worker as usize, t),
                    EventKind::TransferDone { request, rank } => self.transfer_done(request, rank as usize),
                }
            }
            // Disaggregated serving: ranks whose pass just ended start their next one before
            // the arrivals of this instant are routed (an arrival exactly at a prefill pass end
            // waits a pass there; aggregated, it joins). Measured on the reference.
            if !self.disaggregated() {
                self.route_arrivals(t);
                self.start_epochs(t);
            } else {
                self.start_epochs(t);
                self.route_arrivals(t);
                self.start_epochs(t);
            }
        }
        self.is_done()
    }

    /// Nothing is left to happen, yet requests wait: ranks stalled behind a queue head that
    /// can never be admitted (the reference aborts its replay there). They end as
    /// unschedulable, with the reason, instead of being lost.
    fn end_stuck_requests(&mut self) {
        const WHY: &str = "stuck: nothing runs and the head of its rank's queue can never be admitted";
        for r in 0..self.ranks.len() {
            for i in std::mem::take(&mut self.ranks[r].reservations) {
                self.finish_request(i, Status::Unschedulable, Some(format!("{WHY} (it waited for a decode reservation)")));
            }
            if self.ranks[r].engine.in_flight() == 0 {
                continue;
            }
            for f in self.ranks[r].engine.abandon(WHY) {
                self.finish_request(f.id as u32, Status::Unschedulable, Some(WHY.to_string()));
            }
        }
    }

    fn disaggregated(&self) -> bool {
        !self.source_rank.is_empty()
    }

    /// Routes the arrivals due by `t` (to the router's queue while every target is busy).
    fn route_arrivals(&mut self, t: f64) {
        while let Some(&i) = self.order.get(self.next_arrival) {
            if self.arrival_ms[i as usize] > t {
                break;
            }
            self.next_arrival += 1;
            if self.destination_first {
                self.request_destination(i, t);
                continue;
            }
            let p = &mut self.pools[0];
            if !p.queued.is_empty() || p.router.all_busy(p.max_num_batched_tokens) {
                p.queued.push_back(i);
            } else {
                self.route(0, i);
            }
        }
    }

    /// Every idle worker with work starts a pass at `t`.
    fn start_epochs(&mut self, t: f64) {
        for w in 0..self.workers.len() {
            let idle = !self.workers[w].busy;
            if !idle {
                continue;
            }
            for r in self.workers[w].ranks.clone() {
                self.idle_pass_reservations(r, t);
            }
            if self.workers[w].ranks.clone().any(|r| self.ranks[r].engine.has_work()) {
                self.start_epoch(w, t);
            }
        }
    }

    /// Ends the run (early, if it is not done: unfinished requests stay pending).
    pub fn finish(mut self) -> RunReport {
        self.settle_open_streaks();
        if self.checks && self.is_done() {
            let lost: Vec<usize> = self.collector.records.iter().enumerate().filter(|(_, r)| r.status == Status::Pending).map(|(i, _)| i).collect();
            assert!(lost.is_empty(), "requests never finished (trace lines {:?})", lost.iter().map(|i| i + 1).collect::<Vec<_>>());
        }
        RunReport { collector: self.collector, timeseries: self.recorder.finish() }
    }

    fn push(&mut self, at_ms: f64, kind: EventKind) {
        self.seq += 1;
        self.events.push(Reverse(Event { at_ms, seq: self.seq, kind }));
    }

    /// Sends request `i` to a rank of `pool`: prompt work for the aggregated and prefill
    /// pools (the prefill pool computes the prompt and hands over, so it asks for 1 token).
    fn route(&mut self, pool: usize, i: u32) {
        let mut req = self.workload.request(i as usize, i as u64);
        let p = &mut self.pools[pool];
        let (hashes, full) = if p.router.is_kv_aware() {
            prompt_hashes(&req, p.block_size, &mut self.scratch)
        } else {
            (Vec::new(), 0)
        };
        let query = RouteQuery { id: i as u64, prompt_tokens: req.prompt.len(), block_hashes: &hashes, full_blocks: full };
        let placement = p.router.route(&query);
        let rank = p.rank_of(placement.target);
        if p.role == Role::Prefill {
            req.max_output = 1;
            self.source_rank[i as usize] = rank as u32;
        } else {
            self.collector.records[i as usize].worker = self.ranks[rank].worker;
        }
        self.ranks[rank].engine.submit(req);
    }

    /// A prompt's KV reached its decode rank; a busy rank takes it at its next boundary.
    fn transfer_done(&mut self, i: u32, rank: usize) {
        if self.busy(rank) {
            self.ranks[rank].arrived.push(i);
        } else {
            // The activation wakes an idle rank, which takes one pending reservation.
            self.activate(i, rank);
            self.take_reservation(rank, self.now_ms);
        }
    }

    /// The decode rank takes the request; the prefill rank that held its KV lets it go (a
    /// scheduler command, so a busy prefill rank frees it at its next boundary).
    fn activate(&mut self, i: u32, rank: usize) {
        self.collector.records[i as usize].worker = self.ranks[rank].worker;
        let before = self.ranks[rank].engine.free_blocks();
        let reserved = self.ranks[rank].engine.activate(i as u64);
        debug_assert!(reserved, "a transfer goes only to a reservation");
        if self.ranks[rank].engine.free_blocks() > before {
            // Caching its prompt gave pages back (copies of pages cached meanwhile).
            self.ranks[rank].capacity_generation += 1;
        }
        let source = self.source_rank[i as usize] as usize;
        if self.busy(source) {
            self.ranks[source].releases.push(i);
        } else {
            self.ranks[source].engine.release_source(i as u64);
        }
    }

    fn busy(&self, rank: usize) -> bool {
        self.workers[self.ranks[rank].group].busy
    }

    /// Every rank of worker `w` with work computes a pass; the worker is busy until the
    /// slowest one ends.
    fn start_epoch(&mut self, w: usize, now: f64) {
        let mut longest = Duration::ZERO;
        for r in self.workers[w].ranks.clone() {
            let rank = &mut self.ranks[r];
            if !rank.engine.has_work() {
                continue;
            }
            let out = rank.engine.step(now);
            let progressed = out.scheduled_tokens > 0 || !out.finished.is_empty() || !out.preempted.is_empty() || !out.tokens.is_empty() || out.steady_tokens > 0;
            longest = longest.max(out.duration);
            rank.pending.clone_from(out);
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
            if self.checks && (rank.engine.metrics().total_blocks <= 4096 || self.passes % 64 == 0) {
                if let Err(e) = rank.engine.check() {
                    panic!("worker {w}, rank {r}: {e} after the pass at {now} ms");
                }
            }
        }
        self.workers[w].busy = true;
        self.push(now + duration_ms(longest), EventKind::PassEnd { worker: w as u32 });
    }

    /// A run cut short leaves streaks open, some counting a token of a pass still in flight
    /// (whose effects a cut run never applies): settle the applied part into the records.
    fn settle_open_streaks(&mut self) {
        for rank in &mut self.ranks {
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

    fn complete_epoch(&mut self, w: usize, t: f64) {
        self.workers[w].busy = false;
        // Releases sent during the pass are commands queued before anything this pass's end
        // causes, so their blocks join the LRU first (older, evicted sooner).
        for r in self.workers[w].ranks.clone() {
            for i in std::mem::take(&mut self.ranks[r].releases) {
                self.ranks[r].engine.release_source(i as u64);
            }
        }
        for r in self.workers[w].ranks.clone() {
            if std::mem::take(&mut self.ranks[r].stepped) {
                self.complete_pass(r, t);
            }
        }
        for r in self.workers[w].ranks.clone() {
            self.apply_reservations(r, t);
        }
    }

    fn complete_pass(&mut self, r: usize, t: f64) {
        let out = std::mem::take(&mut self.ranks[r].pending);
        if !out.finished.is_empty() || !out.preempted.is_empty() {
            self.ranks[r].capacity_generation += 1;
        }
        let pool = self.ranks[r].pool;
        let role = self.pools[pool].role;
        let target = self.pools[pool].target_of(r);
        self.recorder.rank_metrics(r, t, &out.metrics);
        self.pools[pool].router.apply_events(target, &out.kv_events);
        self.collector.committed_prefill_tokens += out.committed_prefill_tokens;
        for a in &out.admissions {
            self.collector.admit(a.id as u32, a.reused_tokens, role == Role::Decode, a.readmission);
        }
        let prev_end = std::mem::replace(&mut self.ranks[r].last_pass_end_ms, t);
        if role != Role::Prefill {
            self.recorder.tokens(t, out.tokens.len() as u64 + out.steady_tokens);
            // Steady tokens (see `PassOutput::steady_tokens`) all have the gap since this
            // rank's previous pass end; their records are settled when their streak ends.
            if out.steady_tokens > 0 {
                self.fold_gaps(t, t - prev_end, out.steady_tokens);
            }
            for &(id, n) in &out.streak_ends {
                self.collector.steady_tokens(id as u32, n, prev_end);
            }
            // Requests decoding pass after pass share their gap: fold gaps in runs.
            let mut run: Option<(f64, u64)> = None;
            for &id in &out.tokens {
                let (gap, ttft) = self.collector.token(id as u32, t);
                if let Some(ttft) = ttft {
                    self.recorder.first_token(t, ttft);
                    self.pools[pool].router.prefill_done(id);
                }
                let Some(gap) = gap else { continue };
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
        for f in &out.finished {
            let i = f.id as u32;
            if f.steady_tokens > 0 {
                // A completing request's last token is this pass's; any other ended its
                // streak at the previous pass.
                let last = if f.outcome == Outcome::Completed { t } else { prev_end };
                self.collector.steady_tokens(i, f.steady_tokens, last);
            }
            self.pools[pool].router.free(f.id);
            if role == Role::Aggregated && self.pools[pool].args.worker_type == WorkerType::Prefill {
                // A prefill-type engine outside a disaggregated pool: nothing takes its KV.
                self.ranks[r].engine.release_source(f.id);
            }
            match (&f.outcome, role) {
                (Outcome::Completed, Role::Prefill) => self.hand_over(i, t),
                (Outcome::Completed, _) => self.finish_request(i, Status::Completed, None),
                (Outcome::Rejected(why), _) => self.finish_request(i, Status::Rejected, Some(why.clone())),
                (Outcome::Unschedulable(why), _) => self.finish_request(i, Status::Unschedulable, Some(why.clone())),
            }
        }
        let mut out = out;
        out.clear();
        self.ranks[r].pending = out;
        // Lifecycle edges may have freed a target: dispatch the router's queue.
        while !self.pools[pool].queued.is_empty() && !self.pools[pool].router.all_busy(self.pools[pool].max_num_batched_tokens) {
            let i = self.pools[pool].queued.pop_front().expect("non-empty");
            self.route(pool, i);
        }
    }

    /// Prefill finished: pick the decode rank, which reserves room (at once if idle, else at
    /// its next pass boundary) before the KV transfer starts.
    fn hand_over(&mut self, i: u32, t: f64) {
        if self.destination_first {
            // Reserved before the prefill: the KV starts moving now.
            let (rank, resident) = self.destination[i as usize];
            let prompt_len = self.workload.rows[i as usize].input_length;
            self.start_transfer(i, rank as usize, t, prompt_len, resident);
            return;
        }
        self.request_destination(i, t);
    }

    /// No decode worker's pool can ever hold request `i`'s prompt: the hand-off fails at
    /// once (and the prefill rank, if it holds the prompt, lets it go).
    fn fail_hand_off(&mut self, i: u32) {
        let p = &self.pools[self.pools.len() - 1];
        let blocks = self.workload.rows[i as usize].input_length.div_ceil(p.block_size);
        let why = format!("its prompt needs {blocks} KV blocks; a decode worker's pool has {}", p.args.num_gpu_blocks);
        self.finish_request(i, Status::Rejected, Some(why));
        if let Some(&source) = self.source_rank.get(i as usize).filter(|&&r| r != u32::MAX) {
            self.ranks[source as usize].engine.release_source(i as u64);
        }
    }

    /// Picks request `i`'s decode rank, which takes its reservation in order, one per wake:
    /// a busy rank at its pass boundary; an idle one, woken by this request, at once (the
    /// oldest waiting one).
    fn request_destination(&mut self, i: u32, t: f64) {
        let decode_pool = self.pools.len() - 1;
        let req = self.workload.request(i as usize, i as u64);
        let p = &mut self.pools[decode_pool];
        let (hashes, full) = prompt_hashes(&req, p.block_size, &mut self.scratch);
        let placement = p.router.route(&RouteQuery { id: i as u64, prompt_tokens: req.prompt.len(), block_hashes: &hashes, full_blocks: full });
        // A prompt no decode pool holds fails only once routed (a round-robin turn is spent).
        if req.prompt.len().div_ceil(p.block_size) > p.args.num_gpu_blocks {
            p.router.free(i as u64);
            self.fail_hand_off(i);
            return;
        }
        let rank = p.rank_of(placement.target);
        self.ranks[rank].reservations.push(i);
        self.sync_destinations(rank);
        if !self.busy(rank) {
            self.take_reservation(rank, t);
        }
    }

    /// At a decode rank's pass boundary: each scheduler command it takes — the boundary
    /// itself and every activation of a request whose KV arrived mid-pass — lets one pending
    /// reservation through (the reference's one-command-per-wake engine loop, observed as
    /// reservation times). The boundary's attempt comes before the activations, so it does
    /// not see their blocks as resident (which `destination_missing` would not charge).
    /// Reservations wait in order: one that finds no room holds back those behind it.
    fn apply_reservations(&mut self, r: usize, t: f64) {
        self.take_reservation(r, t);
        for i in std::mem::take(&mut self.ranks[r].arrived) {
            self.activate(i, r);
            self.take_reservation(r, t);
        }
        self.ranks[r].idle_pass = self.ranks[r].engine.idle_with_queue();
    }

    /// Nothing runs on decode rank `r` but requests wait: the reference starts another pass
    /// at once, which begins with a reservation attempt; while such passes can do nothing
    /// else they repeat at the same instant, one attempt each (measured: two or three
    /// reservations at one boundary). They come in the worker's turn among the workers
    /// starting passes at that instant, so a prefill worker earlier in the order has
    /// already formed its batch (SGLang reserves destinations before the prefill). On an
    /// SGLang rank each such pass also decays `new_token_ratio`, and the reference repeats
    /// them while it changes: when they end with nothing to run, it is at its floor.
    fn idle_pass_reservations(&mut self, r: usize, t: f64) {
        if std::mem::take(&mut self.ranks[r].idle_pass) {
            while self.take_reservation(r, t) && !self.ranks[r].engine.has_work() {}
            if !self.ranks[r].engine.has_work() {
                self.ranks[r].engine.idle_pass();
            }
        }
    }

    /// One reservation attempt on rank `r` (a scheduler command takes one): its oldest pending
    /// reservation, if it finds room. Returns whether one was taken.
    fn take_reservation(&mut self, r: usize, t: f64) -> bool {
        let rank = &self.ranks[r];
        let Some(&first) = rank.reservations.first() else { return false };
        if rank.head_refused_at == Some(rank.capacity_generation) {
            // Nothing was given back since it found no room: the reference does not try it
            // again (a prefix that became resident meanwhile does not count).
            return false;
        }
        if !self.reserve(first, r, t) {
            self.ranks[r].head_refused_at = Some(self.ranks[r].capacity_generation);
            return false;
        }
        self.ranks[r].reservations.remove(0);
        self.ranks[r].head_refused_at = None;
        self.sync_destinations(r);
        true
    }

    /// Tells rank `r`'s scheduler whether requests wait for a reservation on it (see
    /// `Engine::set_destinations_pending`); called wherever its list changes.
    fn sync_destinations(&mut self, r: usize) {
        let rank = &mut self.ranks[r];
        rank.engine.set_destinations_pending(!rank.reservations.is_empty());
    }

    /// The decode rank takes room for request `i` — its blocks, sharing any resident
    /// prefix — and the prompt KV starts moving. False, with nothing done, if it has no room
    /// yet. A prompt larger than the pool moves anyway and is refused on activation.
    fn reserve(&mut self, i: u32, rank: usize, t: f64) -> bool {
        let req = self.workload.request(i as usize, i as u64);
        let prompt_len = req.prompt.len();
        let resident = match self.ranks[rank].engine.reserve_destination(req) {
            Reservation::Reserved { resident_blocks } => resident_blocks,
            Reservation::NoRoom => return false,
            Reservation::NeverFits => {
                self.fail_hand_off(i);
                return true;
            }
        };
        if self.destination_first {
            // The prefill starts only now.
            self.destination[i as usize] = (rank as u32, resident);
            self.route(0, i);
        } else {
            self.start_transfer(i, rank, t, prompt_len, resident);
        }
        true
    }

    /// The prompt KV of request `i` starts moving to `rank`, which holds `resident` of its
    /// blocks already.
    fn start_transfer(&mut self, i: u32, rank: usize, t: f64, prompt_len: u32, resident: u32) {
        let bs = self.pools[self.ranks[rank].pool].block_size;
        let prefill = &self.pools[0].args;
        let delay = match (prefill.kv_transfer_bandwidth, prefill.kv_bytes_per_token) {
            (Some(gbps), Some(bytes)) if gbps > 0.0 => {
                let tokens = match prefill.kv_transfer_timing_mode {
                    KvTransferTimingMode::FullPrompt => prompt_len as u64,
                    KvTransferTimingMode::DestinationMissing => prompt_len.div_ceil(bs).saturating_sub(resident) as u64 * bs as u64,
                };
                duration_ms(Duration::from_secs_f64(tokens as f64 * bytes as f64 / (gbps * 1e9)))
            }
            _ => 0.0,
        };
        self.push(t + delay, EventKind::TransferDone { request: i, rank: rank as u32 });
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
        self.collector.finish(i, t, status, reason);
        if status == Status::Completed {
            self.recorder.completed(t, self.collector.records[i as usize].input_length);
        }
        self.finished += 1;
    }
}

/// Sequence hashes of a prompt's full blocks, then a unique id for a partial tail block
/// (which no cache can share), as the router tracks them.
fn prompt_hashes(req: &Request, bs: u32, bytes: &mut Vec<u8>) -> (Vec<u64>, u32) {
    let tokens = req.prompt.to_vec();
    let full = tokens.len() as u32 / bs;
    let mut out = Vec::with_capacity(tokens.len().div_ceil(bs as usize));
    let mut parent = None;
    for b in tokens.chunks_exact(bs as usize) {
        let h = sequence_hash(parent, block_hash(b, bytes));
        out.push(h);
        parent = Some(h);
    }
    if tokens.len() as u32 % bs != 0 {
        out.push(mix64(req.id ^ 0x5EED_0000_0000_0000));
    }
    (out, full)
}
