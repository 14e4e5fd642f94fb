//! The discrete-event loop: one virtual clock, engine passes as events, arrivals from the
//! workload. At each timestamp, pass completions are applied first, then arrivals are routed,
//! then every idle rank with work starts its next pass; the pass's effects are stamped at its
//! end. An arrival exactly at a pass end therefore joins the next pass.

use crate::cluster::Router;
use crate::report::{Collector, Status};
use crate::scenario::SimConfig;
use crate::workload::Workload;
use crate::SimError;
use servesim_engine::engine::PassOutput;
use servesim_engine::perf::duration_ms;
use servesim_engine::{Engine, Outcome};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// One engine core and its place in the cluster.
#[derive(Debug)]
struct Rank {
    engine: Engine,
    worker: u32,
    busy: bool,
    /// The running pass's effects, applied when it ends.
    pending: PassOutput,
}

/// A pass completion, ordered by (time, insertion sequence).
#[derive(Debug, PartialEq, PartialOrd)]
struct PassEnd {
    at_ms: f64,
    seq: u64,
    rank: u32,
}

impl Eq for PassEnd {}

impl Ord for PassEnd {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.at_ms.total_cmp(&other.at_ms).then(self.seq.cmp(&other.seq))
    }
}

/// The finished run: summary and per-request records.
#[derive(Debug)]
pub struct RunReport {
    pub collector: Collector,
}

impl RunReport {
    pub fn summary(&self) -> serde_json::Map<String, serde_json::Value> {
        self.collector.summary()
    }

    /// `[first_token_ms, end_ms, output_tokens, reused_input_tokens, readmissions]` per
    /// request, in trace order (the conformance cases' columns).
    pub fn per_request_rows(&self) -> Vec<serde_json::Value> {
        use serde_json::json;
        self.collector
            .records
            .iter()
            .map(|r| json!([r.first_token_ms, r.end_ms, r.output_tokens, r.reused_input_tokens, r.readmissions()]))
            .collect()
    }

    /// The case-file answer: `{"summary": ..., "per_request": ...}`, plus the reasons of any
    /// request that could not run.
    pub fn to_json(&self) -> serde_json::Value {
        let mut v = serde_json::json!({
            "summary": self.summary(),
            "per_request": self.per_request_rows(),
        });
        if !self.collector.reasons.is_empty() {
            let list: Vec<_> = self
                .collector
                .reasons
                .iter()
                .map(|(i, why)| serde_json::json!({"request": i, "trace_line": i + 1, "status": self.collector.records[*i as usize].status, "reason": why}))
                .collect();
            v["not_completed"] = list.into();
        }
        v
    }
}

pub struct Simulation {
    workload: Workload,
    arrival_ms: Vec<f64>,
    order: Vec<u32>,
    next_arrival: usize,
    ranks: Vec<Rank>,
    router: Router,
    passes: BinaryHeap<Reverse<PassEnd>>,
    seq: u64,
    now_ms: f64,
    collector: Collector,
}

impl Simulation {
    pub fn new(cfg: &SimConfig, workload: Workload) -> Result<Self, SimError> {
        cfg.validate()?;
        if workload.is_empty() {
            return Err(SimError::new("the workload has no requests"));
        }
        let mut ranks = Vec::new();
        for w in 0..cfg.num_workers {
            for dp in 0..cfg.launch.dp_size {
                let engine = Engine::new(&cfg.launch.engine, dp, false)?;
                ranks.push(Rank { engine, worker: w, busy: false, pending: PassOutput::default() });
            }
        }
        let (arrival_ms, order) = workload.arrivals(cfg.arrival_speedup_ratio);
        let mut collector = Collector::new();
        for (i, row) in workload.rows.iter().enumerate() {
            collector.arrive(arrival_ms[i], row.input_length);
        }
        Ok(Simulation {
            router: Router::new(cfg.router_mode, ranks.len()),
            workload,
            arrival_ms,
            order,
            next_arrival: 0,
            ranks,
            passes: BinaryHeap::new(),
            seq: 0,
            now_ms: 0.0,
            collector,
        })
    }

    /// Virtual time reached so far.
    pub fn now_ms(&self) -> f64 {
        self.now_ms
    }

    /// Fraction of requests that have arrived and finished, in [0, 1].
    pub fn progress(&self) -> f64 {
        let n = self.workload.len() as f64;
        let done = self.collector.records.iter().filter(|r| r.status != Status::Pending).count() as f64;
        (self.next_arrival as f64 + done) / (2.0 * n)
    }

    pub fn is_done(&self) -> bool {
        self.next_arrival == self.order.len() && self.passes.is_empty()
    }

    /// Runs to the end.
    pub fn run(mut self) -> RunReport {
        while !self.advance(usize::MAX) {}
        self.finish()
    }

    /// Processes up to `max_timestamps` distinct timestamps; returns true when the run is over.
    pub fn advance(&mut self, max_timestamps: usize) -> bool {
        for _ in 0..max_timestamps {
            let next_pass = self.passes.peek().map(|p| p.0.at_ms);
            let next_arrival = self.order.get(self.next_arrival).map(|&i| self.arrival_ms[i as usize]);
            let t = match (next_pass, next_arrival) {
                (None, None) => return true,
                (Some(p), None) => p,
                (None, Some(a)) => a,
                (Some(p), Some(a)) => p.min(a),
            };
            self.now_ms = t;
            while self.passes.peek().is_some_and(|p| p.0.at_ms <= t) {
                let Reverse(end) = self.passes.pop().expect("peeked");
                self.complete_pass(end.rank as usize, t);
            }
            while let Some(&i) = self.order.get(self.next_arrival) {
                if self.arrival_ms[i as usize] > t {
                    break;
                }
                self.next_arrival += 1;
                self.arrive(i);
            }
            for r in 0..self.ranks.len() {
                if !self.ranks[r].busy && self.ranks[r].engine.has_work() {
                    self.start_pass(r, t);
                }
            }
        }
        self.is_done()
    }

    /// Ends the run and hands over the report.
    pub fn finish(self) -> RunReport {
        RunReport { collector: self.collector }
    }

    fn arrive(&mut self, i: u32) {
        let target = self.router.route();
        let rank = &mut self.ranks[target];
        self.collector.records[i as usize].worker = rank.worker;
        rank.engine.submit(self.workload.request(i as usize, i as u64));
    }

    fn start_pass(&mut self, r: usize, now: f64) {
        let rank = &mut self.ranks[r];
        let out = rank.engine.step(now);
        let progressed = out.scheduled_tokens > 0
            || !out.finished.is_empty()
            || !out.preempted.is_empty()
            || !out.tokens.is_empty();
        let end = now + duration_ms(out.duration);
        rank.pending.clone_from(out);
        if !progressed {
            // A pass that changes nothing would repeat forever: end the rank's requests
            // with the reason instead of hanging.
            let stuck = rank.engine.abandon("no pass could make progress");
            rank.pending.finished.extend(stuck);
        }
        rank.busy = true;
        self.seq += 1;
        self.passes.push(Reverse(PassEnd { at_ms: end, seq: self.seq, rank: r as u32 }));
    }

    fn complete_pass(&mut self, r: usize, t: f64) {
        let rank = &mut self.ranks[r];
        rank.busy = false;
        let out = &rank.pending;
        let c = &mut self.collector;
        c.committed_prefill_tokens += out.committed_prefill_tokens;
        for a in &out.admissions {
            c.admit(a.id as u32, a.reused_tokens);
        }
        for &id in &out.tokens {
            c.token(id as u32, t);
        }
        for f in &out.finished {
            let (status, reason) = match &f.outcome {
                Outcome::Completed => (Status::Completed, None),
                Outcome::Rejected(why) => (Status::Rejected, Some(why.clone())),
                Outcome::Unschedulable(why) => (Status::Unschedulable, Some(why.clone())),
            };
            c.finish(f.id as u32, t, status, reason);
        }
    }
}
