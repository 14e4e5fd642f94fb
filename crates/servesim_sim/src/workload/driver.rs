//! The load driver: when each row of a workload arrives.
//!
//! - **Open loop**: a session's first turn arrives at its timestamp, less the earliest first
//!   turn's, divided by `arrival_speedup_ratio`.
//! - **Closed loop** (`concurrency` N): at most N sessions are in flight; the first N (in order
//!   of first appearance) start at 0, and each ending session hands its slot to the next one
//!   at that instant. A session keeps its slot through its think times. Timestamps and the
//!   speed-up are not used.
//!
//! Either way a later turn arrives when the previous one ends (its last token, or its
//! rejection) plus its think time (divided by the speed-up in open loop). Turns ready at the
//! same instant arrive ordered by session (first appearance), then turn, which is the order
//! the reference dispatches them in.
//!
//! A request graph (an agentic trace) is executed by its own rules instead
//! ([`agentic::run`](super::agentic::run)), open loop only.

use super::Workload;
use super::agentic::run::{Run, Trajectories};
use crate::SimError;
use servesim_engine::Prompt;
use servesim_engine::sequence::generated_token;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// How load is offered.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Load {
    /// Arrivals at the trace's timestamps, divided by the speed-up.
    Open { speedup: f64 },
    /// At most this many sessions in flight.
    Closed { concurrency: u32 },
}

/// A turn ready to arrive: ordered by time, then session, then turn.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Ready {
    at_ms: f64,
    session: u32,
    turn: u32,
    row: u32,
}

impl Eq for Ready {}
impl PartialOrd for Ready {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Ready {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.at_ms.total_cmp(&other.at_ms).then(self.session.cmp(&other.session)).then(self.turn.cmp(&other.turn))
    }
}

pub struct Driver {
    load: Load,
    /// Open loop: first turns by arrival (session order breaks ties), and the next to arrive.
    firsts: Vec<Ready>,
    next_first: usize,
    /// Later turns (open loop) or every turn (closed loop) that will be ready.
    ready: BinaryHeap<Reverse<Ready>>,
    /// Closed loop: the next session to start, and how many are in flight.
    next_session: u32,
    active: u32,
    /// Per session of a cumulative workload: its history (earlier prompts and outputs).
    history: Vec<Vec<(u32, u32)>>,
    sessions: u32,
    dispatched: usize,
    /// A request graph's execution, when the workload is one.
    graph: Option<Run>,
}

impl Driver {
    pub fn new(workload: &Workload, load: Load) -> Result<Self, SimError> {
        let n = workload.len() as u32;
        let sessions = workload.sessions.as_ref().map_or(n, |s| s.names.len() as u32);
        let mut d = Driver {
            load,
            firsts: Vec::new(),
            next_first: 0,
            ready: BinaryHeap::new(),
            next_session: 0,
            active: 0,
            history: if workload.cumulative { vec![Vec::new(); sessions as usize] } else { Vec::new() },
            sessions,
            dispatched: 0,
            graph: None,
        };
        if let Some(g) = &workload.graph {
            let Load::Open { speedup } = load else {
                return Err(SimError::new("an agentic trace is replayed on its own times and dependencies, not with a concurrency"));
            };
            if !(speedup.is_finite() && speedup > 0.0) {
                return Err(SimError::new("arrival_speedup_ratio must be a positive number"));
            }
            d.graph = Some(Run::new(g, speedup));
            return Ok(d);
        }
        match load {
            Load::Open { speedup } => {
                if !(speedup.is_finite() && speedup > 0.0) {
                    return Err(SimError::new("arrival_speedup_ratio must be a positive number"));
                }
                d.firsts = match &workload.sessions {
                    // Every row a request of its own: sorted by arrival, file order on ties.
                    None => {
                        let (times, order) = workload.arrivals(speedup);
                        order.into_iter().map(|r| Ready { at_ms: times[r as usize], session: r, turn: 0, row: r }).collect()
                    }
                    Some(s) => {
                        let ts = |s: u32| workload.rows[s as usize].timestamp;
                        let t0 = s.first.iter().map(|&r| ts(r)).fold(f64::INFINITY, f64::min);
                        let mut firsts: Vec<Ready> = s
                            .first
                            .iter()
                            .enumerate()
                            .map(|(k, &r)| Ready { at_ms: (ts(r) - t0) / speedup, session: k as u32, turn: 0, row: r })
                            .collect();
                        firsts.sort();
                        firsts
                    }
                };
            }
            Load::Closed { concurrency } => {
                if concurrency == 0 {
                    return Err(SimError::new("concurrency must be at least 1"));
                }
                d.start_sessions(workload, 0.0);
            }
        }
        Ok(d)
    }

    /// Closed loop: sessions start while slots are free.
    fn start_sessions(&mut self, workload: &Workload, t: f64) {
        let Load::Closed { concurrency } = self.load else { return };
        while self.active < concurrency && self.next_session < self.sessions {
            let s = self.next_session;
            let row = workload.sessions.as_ref().map_or(s, |ss| ss.first[s as usize]);
            self.ready.push(Reverse(Ready { at_ms: t, session: s, turn: 0, row }));
            self.next_session += 1;
            self.active += 1;
        }
    }

    /// When the next turn will be ready, if any is scheduled.
    pub fn next_time(&self) -> Option<f64> {
        if let Some(run) = &self.graph {
            return run.next_time();
        }
        let first = self.firsts.get(self.next_first).map(|r| r.at_ms);
        let later = self.ready.peek().map(|r| r.0.at_ms);
        match (first, later) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The next turn ready by `t`, as (row, arrival time); a turn of a cumulative workload
    /// gets its prompt (its session's history, then its own part) now.
    pub fn pop_ready(&mut self, t: f64, workload: &mut Workload) -> Option<(u32, f64)> {
        if let (Some(run), Some(g)) = (&mut self.graph, &workload.graph) {
            let next = run.pop_ready(t, g);
            self.dispatched += next.is_some() as usize;
            return next;
        }
        let first = self.firsts.get(self.next_first).filter(|r| r.at_ms <= t);
        let later = self.ready.peek().map(|r| r.0).filter(|r| r.at_ms <= t);
        let next = match (first, later) {
            (Some(&a), Some(b)) if a <= b => {
                self.next_first += 1;
                a
            }
            (_, Some(b)) => {
                self.ready.pop();
                b
            }
            (Some(&a), None) => {
                self.next_first += 1;
                a
            }
            (None, None) => return None,
        };
        self.dispatched += 1;
        if workload.cumulative {
            let history = &mut self.history[next.session as usize];
            history.extend(workload.own_runs(next.row as usize));
            workload.set_prompt(next.row, Prompt::from_runs(history.iter().copied()));
        }
        Some((next.row, next.at_ms))
    }

    /// Row `row`'s request ended at `t` (completed after `output_tokens` tokens, or refused
    /// with none): its session's next turn becomes ready after its think time, or, if it was
    /// the last, a closed loop's next session starts. In a request graph, a completion
    /// releases the requests waiting for it, and anything else fails the request's play.
    pub fn on_terminal(&mut self, row: u32, t: f64, output_tokens: u32, completed: bool, workload: &mut Workload) {
        if let (Some(run), Some(g)) = (&mut self.graph, &workload.graph) {
            run.on_terminal(row, t, completed, g);
            return;
        }
        let Some(s) = &workload.sessions else {
            self.start_next_session(workload, t);
            return;
        };
        let (session, next) = (s.session[row as usize], s.next[row as usize]);
        let follow_up = (next != u32::MAX).then(|| (s.delay_ms[next as usize], s.turn[next as usize]));
        if workload.cumulative {
            // The tokens it generated join the history, as the engine generated them.
            let start = workload.input_length(row as usize);
            self.history[session as usize].extend((0..output_tokens).map(|k| (generated_token(row as u64, start + k), 1)));
            workload.drop_prompt(row);
        }
        let Some((delay, turn)) = follow_up else {
            if let Some(h) = self.history.get_mut(session as usize) {
                *h = Vec::new();
            }
            self.start_next_session(workload, t);
            return;
        };
        let delay = match self.load {
            Load::Open { speedup } => delay / speedup,
            Load::Closed { .. } => delay,
        };
        self.ready.push(Reverse(Ready { at_ms: t + delay, session, turn, row: next }));
    }

    fn start_next_session(&mut self, workload: &Workload, t: f64) {
        if let Load::Closed { .. } = self.load {
            self.active -= 1;
            self.start_sessions(workload, t);
        }
    }

    /// How a request graph's plays ended (none for other workloads).
    pub fn trajectories(&self, workload: &Workload) -> Option<Trajectories> {
        Some(self.graph.as_ref()?.trajectories(workload.graph.as_deref()?))
    }

    /// Whether row `row` will never arrive (a request of a failed agentic play).
    pub fn skipped(&self, row: u32) -> bool {
        self.graph.as_ref().is_some_and(|run| run.skipped(row))
    }

    /// Turns dispatched so far.
    pub fn dispatched(&self) -> usize {
        self.dispatched
    }

    /// Whether every turn that will ever arrive has arrived.
    pub fn is_drained(&self) -> bool {
        self.next_time().is_none()
    }
}
