//! The event queue of the virtual clock: pass ends and KV transfers, ordered by time, then
//! phase (pass ends before transfers), then a tie-break fixed by the reference.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EventKind {
    /// Worker `worker`'s pass ends (all its data-parallel ranks).
    PassEnd { worker: u32 },
    /// Request `request`'s prompt KV reached decode rank `rank`.
    TransferDone { request: u32, rank: u32 },
}

#[derive(Debug)]
pub(crate) struct Event {
    pub at_ms: f64,
    seq: u64,
    pub kind: EventKind,
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
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Event {}
impl PartialOrd for Event {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Event {
    fn cmp(&self, other: &Self) -> Ordering {
        self.at_ms.total_cmp(&other.at_ms).then(self.phase().cmp(&other.phase())).then(self.tie().cmp(&other.tie()))
    }
}

#[derive(Debug, Default)]
pub(crate) struct EventQueue {
    heap: BinaryHeap<Reverse<Event>>,
    seq: u64,
}

impl EventQueue {
    pub fn push(&mut self, at_ms: f64, kind: EventKind) {
        self.seq += 1;
        self.heap.push(Reverse(Event { at_ms, seq: self.seq, kind }));
    }

    /// When the next event is due.
    pub fn next_time(&self) -> Option<f64> {
        self.heap.peek().map(|e| e.0.at_ms)
    }

    /// The next event due by `t`, if any.
    pub fn pop_due(&mut self, t: f64) -> Option<Event> {
        if self.heap.peek().is_some_and(|e| e.0.at_ms <= t) { self.heap.pop().map(|e| e.0) } else { None }
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}
