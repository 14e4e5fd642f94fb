//! Executing a request graph: which requests are ready when (the rules of Dynamo 1.6.1's
//! agentic replay).
//!
//! - A root (a request without dependencies) is ready at its `not_before_ms`; times and
//!   delays are divided by `arrival_speedup_ratio`.
//! - A request with dependencies is ready once every edge has fired, at the latest of its
//!   `not_before_ms` and each edge's firing time plus its delay. A dispatch edge fires when
//!   its source is dispatched (so a child with no delay arrives in the same instant, right
//!   after its parent); a completion edge when its source completes.
//! - Requests ready by the same instant are dispatched by time, then by node (request id).
//! - A request that ends without completing (rejected, unschedulable) fails its play: the
//!   play's requests not yet dispatched never are; those in flight run to their end.
//! - A play is a trajectory: complete when all its requests completed; its end-to-end latency
//!   runs from its first root's dispatch to its last request's end.

use super::Graph;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Blocked,
    Ready,
    Dispatched,
    Done,
    Skipped,
}

/// A request ready at a time: ordered by time, then node.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Ready {
    at_ms: f64,
    node: u32,
}

impl Eq for Ready {}
impl PartialOrd for Ready {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Ready {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.at_ms.total_cmp(&other.at_ms).then(self.node.cmp(&other.node))
    }
}

#[derive(Clone, Debug, Default)]
struct PlayRun {
    in_flight: u32,
    completed: u32,
    failed: bool,
    first_dispatch_ms: Option<f64>,
    last_end_ms: Option<f64>,
}

/// How a graph's plays ended: the trajectories of the report.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Trajectories {
    pub total: usize,
    /// End-to-end latency of each play whose requests all completed, in play order.
    pub e2e_ms: Vec<f64>,
}

/// A graph being executed.
pub struct Run {
    speedup: f64,
    state: Vec<State>,
    waiting: Vec<u32>,
    ready_after: Vec<f64>,
    ready: BinaryHeap<Reverse<Ready>>,
    plays: Vec<PlayRun>,
}

impl Run {
    pub fn new(g: &Graph, speedup: f64) -> Run {
        let n = g.request_ids.len();
        let mut run = Run {
            speedup,
            state: vec![State::Blocked; n],
            waiting: g.num_dependencies.clone(),
            ready_after: g.not_before_ms.iter().map(|t| t / speedup).collect(),
            ready: BinaryHeap::new(),
            plays: vec![PlayRun::default(); g.plays.len()],
        };
        for p in &g.plays {
            for &r in &p.roots {
                run.schedule(r);
            }
        }
        run
    }

    fn schedule(&mut self, node: u32) {
        let i = node as usize;
        if self.state[i] == State::Blocked {
            self.state[i] = State::Ready;
            self.ready.push(Reverse(Ready { at_ms: self.ready_after[i], node }));
        }
    }

    /// Each edge fired at `t`: its target waits one edge fewer, and not before `t` + delay.
    fn fire(&mut self, edges: &[super::Edge], t: f64) {
        for e in edges {
            let i = e.target as usize;
            if self.state[i] != State::Blocked {
                continue;
            }
            self.waiting[i] -= 1;
            self.ready_after[i] = self.ready_after[i].max(t + e.delay_ms / self.speedup);
            if self.waiting[i] == 0 {
                self.schedule(e.target);
            }
        }
    }

    /// Drops skipped requests from the front, so the next time is a real one.
    fn settle(&mut self) {
        while self.ready.peek().is_some_and(|r| self.state[r.0.node as usize] != State::Ready) {
            self.ready.pop();
        }
    }

    pub fn next_time(&self) -> Option<f64> {
        self.ready.peek().map(|r| r.0.at_ms)
    }

    /// The next request ready by `t`, dispatched now: (node, the time it became ready).
    pub fn pop_ready(&mut self, t: f64, g: &Graph) -> Option<(u32, f64)> {
        let next = *self.ready.peek().filter(|r| r.0.at_ms <= t)?;
        self.ready.pop();
        let Ready { at_ms, node } = next.0;
        let i = node as usize;
        self.state[i] = State::Dispatched;
        let p = &mut self.plays[g.play_of[i] as usize];
        p.in_flight += 1;
        if g.num_dependencies[i] == 0 {
            p.first_dispatch_ms = Some(p.first_dispatch_ms.map_or(t, |d| d.min(t)));
        }
        self.fire(&g.on_dispatch[i], t);
        self.settle();
        Some((node, at_ms))
    }

    /// Node `node` ended at `t`, completed or not.
    pub fn on_terminal(&mut self, node: u32, t: f64, completed: bool, g: &Graph) {
        let i = node as usize;
        self.state[i] = State::Done;
        let k = g.play_of[i] as usize;
        let p = &mut self.plays[k];
        p.in_flight -= 1;
        p.last_end_ms = Some(p.last_end_ms.map_or(t, |e| e.max(t)));
        if completed {
            p.completed += 1;
            if !p.failed {
                self.fire(&g.on_completion[i], t);
            }
        } else if !p.failed {
            p.failed = true;
            for &m in &g.plays[k].nodes {
                if matches!(self.state[m as usize], State::Blocked | State::Ready) {
                    self.state[m as usize] = State::Skipped;
                }
            }
        }
        self.settle();
    }

    /// Whether node `node` will never be dispatched (its play failed first).
    pub fn skipped(&self, node: u32) -> bool {
        self.state[node as usize] == State::Skipped
    }

    pub fn trajectories(&self, g: &Graph) -> Trajectories {
        let e2e_ms = self
            .plays
            .iter()
            .zip(&g.plays)
            .filter(|(r, p)| !r.failed && r.completed as usize == p.nodes.len())
            .filter_map(|(r, _)| Some(r.last_end_ms? - r.first_dispatch_ms?))
            .collect();
        Trajectories { total: g.plays.len(), e2e_ms }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::Workload;
    use crate::workload::agentic::mooncake;

    /// The reference's shipped agentic Mooncake fixture: a root, a child and a join.
    fn fixture() -> Workload {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/dynosim-unified-cli/components/src/dynamo/replay/tests/e2e/configs/unified_cli/fixtures/traces/agentic-mooncake.jsonl"
        ))
        .unwrap();
        mooncake::read(text.lines().map(|l| Ok(l.to_string())), "t").unwrap()
    }

    /// The shipped fixture: the child is spawned 5 ms after the root's dispatch; the join
    /// waits 1 ms after both complete.
    #[test]
    fn the_fixture_graph_runs_spawn_then_join() {
        let w = fixture();
        let g = w.graph.as_deref().unwrap();
        // Nodes: agent-child 0, agent-join 1, agent-root 2.
        let mut run = Run::new(g, 1.0);
        assert_eq!(run.next_time(), Some(0.0));
        assert_eq!(run.pop_ready(0.0, g), Some((2, 0.0)));
        assert_eq!(run.pop_ready(0.0, g), None);
        assert_eq!(run.next_time(), Some(5.0));
        assert_eq!(run.pop_ready(7.0, g), Some((0, 5.0)));
        run.on_terminal(2, 10.0, true, g);
        assert_eq!(run.next_time(), None, "the join waits for the child too");
        run.on_terminal(0, 20.0, true, g);
        assert_eq!(run.pop_ready(21.0, g), Some((1, 21.0)));
        run.on_terminal(1, 30.0, true, g);
        assert_eq!(run.trajectories(g), Trajectories { total: 1, e2e_ms: vec![30.0] });
    }

    #[test]
    fn a_failed_request_skips_its_play() {
        let w = fixture();
        let g = w.graph.as_deref().unwrap();
        let mut run = Run::new(g, 2.0);
        assert_eq!(run.pop_ready(0.0, g), Some((2, 0.0)));
        assert_eq!(run.next_time(), Some(2.5), "delays divided by the speed-up");
        run.on_terminal(2, 1.0, false, g);
        assert_eq!(run.next_time(), None);
        assert_eq!(run.trajectories(g), Trajectories { total: 1, e2e_ms: vec![] });
    }
}
