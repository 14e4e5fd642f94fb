//! The event queue of the virtual clock: transfer deadlines of the offload tiers, pass ends
//! and KV hand-off transfers, ordered by time, then phase (an idle worker's transfer
//! deadline first, then pass ends, then hand-off transfers), then a tie-break fixed by the
//! reference.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EventKind {
    /// A transfer of rank `rank`'s offload tiers is due (checked when popped: a busy
    /// worker's transfers land only at its pass end, and a deadline that moved is stale).
    TransferDeadline { rank: u32 },
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
            EventKind::TransferDeadline { .. } => 0,
            EventKind::PassEnd { .. } => 1,
            EventKind::TransferDone { .. } => 2,
        }
    }

    /// Within a phase, worker identity orders simultaneous pass ends (not the order the
    /// passes started: measured on the reference) and rank order the deadlines (idle
    /// workers settle in worker order); transfers go in the order they started.
    fn tie(&self) -> u64 {
        match self.kind {
            EventKind::PassEnd { worker } => worker as u64,
            EventKind::TransferDeadline { rank } => rank as u64,
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

    /// The next event, without taking it.
    pub fn peek(&self) -> Option<&Event> {
        self.heap.peek().map(|e| &e.0)
    }

    /// Takes the next event.
    pub fn pop(&mut self) -> Option<Event> {
        self.heap.pop().map(|e| e.0)
    }

    /// The next event due by `t`, if any.
    pub fn pop_due(&mut self, t: f64) -> Option<Event> {
        if self.heap.peek().is_some_and(|e| e.0.at_ms <= t) { self.heap.pop().map(|e| e.0) } else { None }
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}
