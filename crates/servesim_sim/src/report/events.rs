//! The event stream of a run (`--events`, the page's inspector): every event in time order,
//! recorded from what the engines and the event bus really emit — KV events as the engines
//! publish them to the router, request lifecycle edges, and one `pass` per engine pass.
//!
//! Each line is one JSON object: `{"t_ms": ..., "kind": ..., ...}`. Recording is off unless a
//! sink is attached (`Simulation::with_events`); off, it costs one branch per hook.

use serde::Serialize;
use servesim_engine::KvBlocks;
use std::collections::HashMap;
use std::io::Write;

/// Where something happened: a pool (`aggregated`, `prefill`, `decode`), a worker in it (ids
/// are per pool) and its DP rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Place {
    pub pool: &'static str,
    pub worker: u32,
    pub dp_rank: u32,
}

/// One event; `kind` names it in the stream.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SimEvent<'a> {
    /// A request arrived (its prompt length includes a session's history).
    Arrived { request: u32, input_tokens: u32, output_tokens: u32 },
    /// The router sent it to a worker's rank: with KV-aware routing, the cost of every
    /// target (a worker's rank; lowest wins) and the prefix blocks it believed each cached.
    Routed {
        request: u32,
        #[serde(flatten)]
        at: Place,
        #[serde(skip_serializing_if = "Option::is_none")]
        costs: Option<&'a [f64]>,
        #[serde(skip_serializing_if = "Option::is_none")]
        overlap_blocks: Option<&'a [u32]>,
    },
    /// A pass admitted it, reusing `cached_tokens` prompt tokens from the prefix cache (told at
    /// the pass end, like everything the pass did; the pass says when it started).
    Admitted {
        request: u32,
        #[serde(flatten)]
        at: Place,
        cached_tokens: u32,
        readmission: bool,
    },
    /// vLLM took its blocks away to make room (it recomputes later).
    Preempted {
        request: u32,
        #[serde(flatten)]
        at: Place,
    },
    /// SGLang sent it back to the queue under decode memory pressure.
    Retracted {
        request: u32,
        #[serde(flatten)]
        at: Place,
    },
    /// Disaggregated: its prompt's KV starts moving to a decode rank, arriving after `ms`.
    TransferStart {
        request: u32,
        #[serde(flatten)]
        at: Place,
        ms: f64,
    },
    TransferEnd {
        request: u32,
        #[serde(flatten)]
        at: Place,
    },
    FirstToken {
        request: u32,
        #[serde(flatten)]
        at: Place,
        ttft_ms: f64,
    },
    /// It ended: completed, rejected or unschedulable (with the reason).
    Finished {
        request: u32,
        status: &'static str,
        output_tokens: u32,
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<&'a str>,
    },
    /// Blocks became cache-visible on a rank (sequence hashes, chained from `parent`).
    Stored {
        #[serde(flatten)]
        at: Place,
        parent: Option<u64>,
        hashes: Vec<u64>,
        /// `"host"` for the host tier of native offload; absent for the GPU's pool.
        #[serde(skip_serializing_if = "Option::is_none")]
        tier: Option<&'static str>,
    },
    /// The last copy of each block was evicted.
    Removed {
        #[serde(flatten)]
        at: Place,
        hashes: &'a [u64],
        #[serde(skip_serializing_if = "Option::is_none")]
        tier: Option<&'static str>,
    },
    /// A rank's KV pool block by block, as its pass left it, told as the changes since the
    /// rank's previous `blocks` line (the first one tells every block that is not free):
    /// `set` has `[block, hash or null, holders]` for each block whose hash (null: not
    /// cache-visible) or holder count changed; `held` has `[request, keep, blocks]` for each
    /// request whose blocks changed: it now holds its first `keep` blocks and then `blocks`
    /// (`[r, 0, []]`: none). Only from cores with a per-block table (vLLM's native pool).
    Blocks {
        #[serde(flatten)]
        at: Place,
        set: Vec<(u32, Option<u64>, u32)>,
        held: Vec<(u64, u32, Vec<u32>)>,
    },
    /// A rank's pass: when it started, how long it took, what it computed, and its KV pool at
    /// its end.
    Pass {
        #[serde(flatten)]
        at: Place,
        start_ms: f64,
        duration_ms: f64,
        prefill_tokens: u64,
        decode_tokens: u64,
        batch: u32,
        waiting: u32,
        blocks: KvBlocks,
    },
}

#[derive(Serialize)]
struct Line<'a> {
    t_ms: f64,
    #[serde(flatten)]
    event: &'a SimEvent<'a>,
}

/// Where recorded events go.
pub trait EventSink {
    fn record(&mut self, t_ms: f64, event: &SimEvent<'_>);
}

/// Writes events as JSON lines; the first write error is kept (and later events dropped).
pub struct JsonLines<W: Write> {
    out: W,
    pub error: Option<std::io::Error>,
    pub written: u64,
}

impl<W: Write> JsonLines<W> {
    pub fn new(out: W) -> Self {
        JsonLines { out, error: None, written: 0 }
    }

    pub fn into_inner(self) -> (W, Option<std::io::Error>) {
        (self.out, self.error)
    }

    pub fn out_mut(&mut self) -> &mut W {
        &mut self.out
    }
}

/// One event as its line (without the newline).
pub fn line(t_ms: f64, event: &SimEvent<'_>) -> String {
    serde_json::to_string(&Line { t_ms, event }).expect("events serialize")
}

impl<W: Write> EventSink for JsonLines<W> {
    fn record(&mut self, t_ms: f64, event: &SimEvent<'_>) {
        if self.error.is_some() {
            return;
        }
        let result = serde_json::to_writer(&mut self.out, &Line { t_ms, event })
            .map_err(std::io::Error::from)
            .and_then(|()| self.out.write_all(b"\n"));
        match result {
            Ok(()) => self.written += 1,
            Err(e) => self.error = Some(e),
        }
    }
}

/// Keeps the events of a time window in memory (the page's inspector records a window of a
/// large run), at most `max` of them.
pub struct Window {
    pub from_ms: f64,
    pub to_ms: f64,
    pub max: usize,
    pub lines: Vec<String>,
    /// Events in the window left out past `max`.
    pub dropped: u64,
}

impl EventSink for Window {
    fn record(&mut self, t_ms: f64, event: &SimEvent<'_>) {
        if t_ms < self.from_ms || t_ms > self.to_ms {
            return;
        }
        if self.lines.len() >= self.max {
            self.dropped += 1;
            return;
        }
        self.lines.push(line(t_ms, event));
    }
}

/// A sink shared with the caller, who reads it back after the run (its writer, its error).
impl<S: EventSink> EventSink for std::rc::Rc<std::cell::RefCell<S>> {
    fn record(&mut self, t_ms: f64, event: &SimEvent<'_>) {
        self.borrow_mut().record(t_ms, event);
    }
}

/// A `blocks` line's changes: `[block, hash or null, holders]`, and `[request, keep, blocks]`.
pub type BlockChanges = (Vec<(u32, Option<u64>, u32)>, Vec<(u64, u32, Vec<u32>)>);

/// A rank's KV pool block by block as its `blocks` lines have told it so far: what the next
/// line's changes are measured against.
#[derive(Clone, Debug, Default)]
pub struct BlockMirror {
    /// Per physical block: hash if cache-visible, holders.
    blocks: Vec<(Option<u64>, u32)>,
    /// (request, its blocks), ascending request ids, and how many of each one's leading
    /// blocks were cache-visible.
    held: Vec<(u64, Vec<u32>)>,
    visible: Vec<usize>,
    /// Blocks held / cached and unheld, and copies of each cache-visible hash, in `blocks`.
    in_use: u32,
    idle: u32,
    hashes: HashMap<u64, u32>,
    /// The update in which each block was last read (so each is read once per update).
    stamp: Vec<u32>,
    epoch: u32,
}

impl BlockMirror {
    fn tally(&mut self, b: (Option<u64>, u32), add: bool) {
        let step = |n: &mut u32| if add { *n += 1 } else { *n -= 1 };
        if b.1 > 0 {
            step(&mut self.in_use);
        } else if b.0.is_some() {
            step(&mut self.idle);
        }
        if let Some(h) = b.0 {
            let copies = self.hashes.entry(h).or_default();
            step(copies);
            if *copies == 0 {
                self.hashes.remove(&h);
            }
        }
    }

    /// Reads block `i` (once per update) and records a change.
    fn read(&mut self, i: u32, view: &impl Fn(u32) -> (Option<u64>, u32), set: &mut Vec<(u32, Option<u64>, u32)>) {
        let Some(stamp) = self.stamp.get_mut(i as usize) else { return };
        if *stamp == self.epoch {
            return;
        }
        *stamp = self.epoch;
        let (was, now) = (self.blocks[i as usize], view(i));
        if was != now {
            self.tally(was, false);
            self.tally(now, true);
            self.blocks[i as usize] = now;
            set.push((i, now.0, now.1));
        }
    }

    /// Brings the mirror to the engine's pool now, returning the changes. `held` is what each
    /// request holds now; `view` reads one block. Only blocks that can have changed are read,
    /// so the cost follows the pass's changes, not the pool or the blocks held: those of
    /// requests whose blocks changed (every allocation, release or prefix hit is one), and of
    /// the rest only the blocks past their cache-visible prefix (a block filling up becomes
    /// visible). Anything else (a block allocated by evicting a cached one, then freed by a
    /// preemption in the same pass) shows in the counts, checked against the engine's
    /// `counts`: where they differ, every block is read.
    pub fn update(&mut self, held: Vec<(u64, Vec<u32>)>, counts: KvBlocks, view: impl Fn(u32) -> (Option<u64>, u32)) -> BlockChanges {
        let capacity = (counts.in_use + counts.idle + counts.free) as usize;
        if self.blocks.len() != capacity {
            *self = BlockMirror { blocks: vec![(None, 0); capacity], stamp: vec![0; capacity], ..BlockMirror::default() };
        }
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.stamp.fill(0);
            self.epoch = 1;
        }
        let mut set = Vec::new();
        let before = std::mem::take(&mut self.held);
        let before_visible = std::mem::take(&mut self.visible);
        let changes = held_changes(&before, &held);
        // Requests whose blocks changed: the blocks past what they kept, old and new.
        for (r, keep, _) in &changes {
            for list in [&before, &held] {
                if let Ok(k) = list.binary_search_by_key(r, |e| e.0) {
                    for &b in list[k].1.iter().skip(*keep as usize) {
                        self.read(b, &view, &mut set);
                    }
                }
            }
        }
        // Every request's blocks past its cache-visible prefix (a block filling up becomes
        // visible), the prefix measured from where it was (visible blocks stay visible while
        // held). Without cached blocks, nothing can become visible.
        let any_cache = counts.cached > 0 || !self.hashes.is_empty();
        self.visible = Vec::with_capacity(held.len());
        let mut k = 0;
        for (r, blocks) in &held {
            while before.get(k).is_some_and(|e| e.0 < *r) {
                k += 1;
            }
            let was = match (before.get(k), changes.binary_search_by_key(r, |c| c.0)) {
                (Some(e), Ok(c)) if e.0 == *r => before_visible[k].min(changes[c].1 as usize),
                (Some(e), Err(_)) if e.0 == *r => before_visible[k],
                _ => 0,
            };
            let mut v = was.min(blocks.len());
            if any_cache {
                for &b in &blocks[v..] {
                    self.read(b, &view, &mut set);
                }
                while v < blocks.len() && self.blocks[blocks[v] as usize].0.is_some() {
                    v += 1;
                }
            }
            self.visible.push(v);
        }
        if (self.in_use, self.idle, self.hashes.len() as u32) != (counts.in_use, counts.idle, counts.cached) {
            self.epoch = self.epoch.wrapping_add(1).max(1);
            for b in 0..capacity as u32 {
                self.read(b, &view, &mut set);
            }
        }
        set.sort_unstable_by_key(|c| c.0);
        self.held = held;
        (set, changes)
    }
}

/// `[request, keep, blocks]` for each request whose blocks differ between `before` and `now`
/// (both sorted by request id).
fn held_changes(before: &[(u64, Vec<u32>)], now: &[(u64, Vec<u32>)]) -> Vec<(u64, u32, Vec<u32>)> {
    let mut out = Vec::new();
    let (mut i, mut j) = (0, 0);
    loop {
        match (before.get(i), now.get(j)) {
            (Some((ra, old)), Some((rb, blocks))) if ra == rb => {
                if old != blocks {
                    let keep = old.iter().zip(blocks).take_while(|(x, y)| x == y).count();
                    out.push((*rb, keep as u32, blocks[keep..].to_vec()));
                }
                i += 1;
                j += 1;
            }
            (Some((ra, _)), Some((rb, _))) if ra < rb => {
                out.push((*ra, 0, Vec::new()));
                i += 1;
            }
            (Some((ra, _)), None) => {
                out.push((*ra, 0, Vec::new()));
                i += 1;
            }
            (_, Some((rb, blocks))) => {
                out.push((*rb, 0, blocks.clone()));
                j += 1;
            }
            (None, None) => return out,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(blocks: &[(Option<u64>, u32)]) -> KvBlocks {
        let in_use = blocks.iter().filter(|b| b.1 > 0).count() as u32;
        let idle = blocks.iter().filter(|b| b.1 == 0 && b.0.is_some()).count() as u32;
        let cached = blocks.iter().filter_map(|b| b.0).collect::<std::collections::HashSet<_>>().len() as u32;
        KvBlocks { in_use, idle, free: blocks.len() as u32 - in_use - idle, cached }
    }

    fn step(m: &mut BlockMirror, blocks: &[(Option<u64>, u32)], held: &[(u64, &[u32])]) -> BlockChanges {
        let held = held.iter().map(|(r, b)| (*r, b.to_vec())).collect();
        m.update(held, counts(blocks), |i| blocks[i as usize])
    }

    #[test]
    fn blocks_lines_tell_only_what_changed() {
        let mut m = BlockMirror::default();
        let a = [(Some(7), 1), (None, 1), (None, 0)];
        assert_eq!(step(&mut m, &a, &[(3, &[0, 1])]), (vec![(0, Some(7), 1), (1, None, 1)], vec![(3, 0, vec![0, 1])]));
        assert_eq!(step(&mut m, &a, &[(3, &[0, 1])]), (vec![], vec![]));
        // Request 3 grows by a block and 5 arrives holding block 0; then 3 is preempted.
        let b = [(Some(7), 2), (Some(9), 1), (None, 1)];
        let (set, held) = step(&mut m, &b, &[(3, &[0, 1, 2]), (5, &[0])]);
        assert_eq!(set, vec![(0, Some(7), 2), (1, Some(9), 1), (2, None, 1)]);
        assert_eq!(held, vec![(3, 2, vec![2]), (5, 0, vec![0])]);
        let c = [(Some(7), 1), (Some(9), 0), (None, 0)];
        assert_eq!(step(&mut m, &c, &[(5, &[0])]), (vec![(0, Some(7), 1), (1, Some(9), 0), (2, None, 0)], vec![(3, 0, vec![])]));
    }

    #[test]
    fn a_held_block_filling_up_is_seen_though_its_holder_did_not_change() {
        let mut m = BlockMirror::default();
        step(&mut m, &[(Some(7), 1), (None, 1), (None, 0)], &[(1, &[0, 1])]);
        let (set, held) = step(&mut m, &[(Some(7), 1), (Some(8), 1), (None, 0)], &[(1, &[0, 1])]);
        assert_eq!((set, held), (vec![(1, Some(8), 1)], vec![]));
    }

    #[test]
    fn a_block_changed_outside_the_held_lists_is_found_by_the_counts() {
        let mut m = BlockMirror::default();
        step(&mut m, &[(Some(7), 0), (None, 1)], &[(1, &[1])]);
        // Block 0 (cached, idle) was evicted for a request that lost it in the same pass.
        let (set, _) = step(&mut m, &[(None, 0), (None, 1)], &[(1, &[1])]);
        assert_eq!(set, vec![(0, None, 0)]);
    }
}
