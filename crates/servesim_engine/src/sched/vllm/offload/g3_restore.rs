//! One rank's side of the G3 store: write-through of G2 stores, and restores of blocks G2
//! lost (a read back into G2, after which the ordinary host-to-device load follows).
//!
//! Rules (the reference's):
//!
//! - When a store lands in G2, its blocks (kept pinned in G2 meanwhile) are offered to G3 as
//!   one write; the blocks G3 declines are unpinned at once, the others when the write ends.
//! - A lookup walks the prompt after the device prefix: G2 hits go on, G2 pending blocks make
//!   the request wait, G2 misses are probed in G3. A resident G3 block gets a G2 entry
//!   reserved (which may evict G2's least recent) and joins one read; a pending one makes the
//!   request wait; a miss ends the walk. With anything to read, the request sleeps until a
//!   completion wakes it.
//! - Within one instant a request does not re-promote a block it already promoted unless the
//!   prefix it could restore fits in G2 (a zero-time read could be evicted by the next
//!   lookup forever). A request that restores 1024 times while its rank makes no progress
//!   stops restoring (`bypassed_restores`).
//! - A request that leaves or is admitted only detaches from its reads: they still land.

use crate::kv::offload::fair_share::Way;
use crate::kv::offload::g3_store::Probe;
use crate::kv::offload::host_tier::{BlockMeta, Lookup, StoreOutcome};
use crate::kv::offload::{G3Store, HostTier, Key, Shared, TransferId};
use std::collections::{BTreeMap, BTreeSet};

/// Restore rounds a waiting request may make while its rank does nothing else.
const MAX_ROUNDS_WITHOUT_PROGRESS: u32 = 1024;

/// A request's restore rounds since its rank last made progress.
#[derive(Clone, Copy, Debug, Default)]
pub struct Restore {
    rounds: u32,
    rank_progress: u64,
}

impl Restore {
    pub fn bypassed(&self) -> bool {
        self.rounds >= MAX_ROUNDS_WITHOUT_PROGRESS
    }

    /// Scheduled or preempted: its rounds start over.
    pub fn reset(&mut self) {
        self.rounds = 0;
    }
}

#[derive(Debug)]
struct Stage {
    owner: Option<u64>,
    /// The G2 entries the read fills.
    reservations: Vec<TransferId>,
}

#[derive(Debug)]
pub struct G3Link {
    store: Shared<G3Store>,
    worker: u32,
    stages: BTreeMap<u64, Stage>,
    attempted_at: f64,
    attempted: BTreeSet<(u64, Key)>,
    /// Changes whenever a G3 job of this rank's starts or ends (see `Offload::g3_epoch`).
    pub epoch: u64,
    observed_epoch: u64,
    /// Passes in which the rank scheduled work or emitted output.
    rank_progress: u64,
}

impl G3Link {
    pub fn new(store: Shared<G3Store>, worker: u32) -> Self {
        G3Link {
            store,
            worker,
            stages: BTreeMap::new(),
            attempted_at: 0.0,
            attempted: BTreeSet::new(),
            epoch: 0,
            observed_epoch: 0,
            rank_progress: 0,
        }
    }

    pub fn note_rank_progress(&mut self) {
        self.rank_progress += 1;
    }

    /// A G2 store landed: offer its blocks to G3 (write-through).
    pub fn store(&mut self, tier: &mut HostTier, keys: &[Key], now: f64) {
        let mut g3 = self.store.borrow_mut();
        let accepted: Vec<Key> = g3.submit(self.worker, Way::Write, keys, now).map(|id| g3.job_keys(id).to_vec()).unwrap_or_default();
        let declined: Vec<Key> = keys.iter().copied().filter(|k| !accepted.contains(k)).collect();
        tier.unpin(&declined);
        self.epoch += !accepted.is_empty() as u64;
    }

    /// Stages restores of `keys` (the prompt after the device prefix) for `owner`; true when
    /// the request must wait for a transfer (a read it started, or a pending block).
    #[allow(clippy::too_many_arguments)]
    pub fn stage(
        &mut self,
        tier: &mut HostTier,
        client: u64,
        owner: u64,
        restore: &mut Restore,
        keys: &[Key],
        meta: Option<&[BlockMeta]>,
        now: f64,
    ) -> bool {
        if now > self.attempted_at {
            self.attempted_at = now;
            self.attempted.clear();
        }
        let mut reads = Vec::new();
        let mut reservations = Vec::new();
        let mut wait = false;
        let mut g3 = self.store.borrow_mut();
        for (i, &key) in keys.iter().enumerate() {
            match tier.lookup(key) {
                Lookup::Hit => {}
                Lookup::Pending => wait = true,
                Lookup::Miss => match g3.probe(self.worker, key) {
                    Probe::Resident => {
                        if self.attempted.contains(&(owner, key)) {
                            // Promoted already at this instant: again only if the prefix it could
                            // restore fits in G2 now.
                            let prefix: Vec<Key> = keys
                                .iter()
                                .copied()
                                .take_while(|k| tier.lookup(*k) != Lookup::Miss || g3.contains(self.worker, *k))
                                .collect();
                            if !tier.can_reserve(&prefix) {
                                break;
                            }
                        }
                        let m = meta.map(|m| &m[i..=i]);
                        let StoreOutcome::Prepared(id) = tier.reserve_external(client, owner, &[key], m, now) else { break };
                        reads.push(key);
                        reservations.push(id);
                    }
                    Probe::Pending => wait = true,
                    Probe::Miss => break,
                },
            }
        }
        if reads.is_empty() {
            return wait;
        }
        let Some(job) = g3.submit(self.worker, Way::Read, &reads, now) else {
            for id in reservations {
                tier.cancel_external(id);
            }
            return wait;
        };
        if restore.rank_progress != self.rank_progress {
            restore.rank_progress = self.rank_progress;
            restore.rounds = 0;
        }
        restore.rounds += 1;
        if restore.bypassed() {
            g3.stats.bypassed_restores += 1;
        }
        self.attempted.extend(reads.into_iter().map(|k| (owner, k)));
        self.stages.insert(job, Stage { owner: Some(owner), reservations });
        self.epoch += 1;
        true
    }

    /// Takes the rank's G3 completions due by `now`: writes unpin their G2 sources, reads make
    /// their G2 entries resident. True when anything completed in the store since last time.
    pub fn advance(&mut self, tier: &mut HostTier, now: f64) -> bool {
        let (done, epoch) = {
            let mut g3 = self.store.borrow_mut();
            let done = g3.take_completed(self.worker, now);
            (done, g3.completion_epoch)
        };
        let progressed = !done.is_empty() || epoch != self.observed_epoch;
        self.observed_epoch = epoch;
        for c in done {
            match c.way {
                Way::Write => tier.unpin(&c.keys),
                Way::Read => {
                    let stage = self.stages.remove(&c.id).expect("a read's stage");
                    for id in stage.reservations {
                        tier.complete_external(id);
                    }
                }
            }
            self.epoch += 1;
        }
        progressed
    }

    /// `owner` stops waiting for its reads (they still land).
    pub fn release(&mut self, owner: u64) -> bool {
        let mut detached = false;
        for s in self.stages.values_mut().filter(|s| s.owner == Some(owner)) {
            s.owner = None;
            detached = true;
        }
        self.epoch += detached as u64;
        detached
    }

    pub fn has_work(&self) -> bool {
        self.store.borrow().has_work(self.worker)
    }

    /// Due at once when another job completed somewhere in the store since the rank last
    /// looked; else the store's next event or the rank's next completion.
    pub fn next_deadline(&self) -> Option<f64> {
        let g3 = self.store.borrow();
        if g3.completion_epoch != self.observed_epoch { Some(g3.now()) } else { g3.next_deadline(self.worker) }
    }
}
