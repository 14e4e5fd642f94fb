//! The G3 store: secondary storage behind the host tier, one per deployment (`worker_local`:
//! a pool per worker, shared by its DP ranks; `cluster_shared`: one pool).
//!
//! Rules (the reference's):
//!
//! - Writes are write-through from G2: when a store lands in G2 its blocks are offered to G3
//!   as one job. G3 takes only blocks it lacks, the leading ones that fit in its free room
//!   plus what it may evict (least recently touched, not pending, not being read, not offered
//!   in this job, even if already held); it evicts only as many as it needs.
//! - A read brings blocks back into G2; its blocks are pinned until it completes.
//! - Jobs move at an equal share of the worker's read or write bandwidth (and, cluster-shared,
//!   of the pool's), after `latency_to_first_byte_ms`.
//! - Every probe counts (`lookup_probes`, including the miss that ends a walk), as do hits,
//!   pending probes, evictions, jobs, bytes and each job's time from submission to
//!   completion; a read of a block another worker wrote counts as a cross-worker read.
//! - `completion_epoch` counts completions anywhere in the store: a rank that has not seen the
//!   latest one is due to look (its sleepers may now proceed).

use super::fair_share::{FairShare, Job, Way};
use super::host_tier::Key;
use super::lane::bytes_per_ms;
use crate::args::{G3Offload, G3Scope};
use rustc_hash::FxHashSet;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct G3Io {
    pub submitted_jobs: u64,
    pub completed_jobs: u64,
    pub cancelled_jobs: u64,
    pub completed_bytes: u64,
    pub transfer_ms: f64,
}

/// The report's `g3_offload` block.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct G3Stats {
    pub lookup_probes: u64,
    pub lookup_hits: u64,
    pub lookup_pending: u64,
    pub read: G3Io,
    pub write: G3Io,
    pub evictions: u64,
    pub cross_worker_read_blocks: u64,
    pub resident_blocks: u64,
    pub pending_blocks: u64,
    /// Requests that gave up restoring from G3 (omitted when none did).
    #[serde(skip_serializing_if = "is_zero")]
    pub bypassed_restores: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Probe {
    Miss,
    Pending,
    Resident,
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    pending: bool,
    pins: u32,
    writer: u32,
    touched: u64,
}

#[derive(Debug)]
struct G3Job {
    worker: u32,
    way: Way,
    keys: Vec<Key>,
    submitted: f64,
}

#[derive(Clone, Debug)]
pub struct G3Completion {
    pub id: u64,
    pub way: Way,
    pub keys: Vec<Key>,
    pub at: f64,
}

#[derive(Debug)]
pub struct G3Store {
    cfg: G3Offload,
    block_bytes: u64,
    /// By (pool, block).
    entries: BTreeMap<(u32, Key), Entry>,
    jobs: BTreeMap<u64, G3Job>,
    service: FairShare,
    /// Completions not yet taken, per worker (a worker added by scaling joins on its first).
    completed: BTreeMap<u32, Vec<G3Completion>>,
    /// Orders touches and names jobs.
    ordinal: u64,
    pub completion_epoch: u64,
    pub stats: G3Stats,
}

impl G3Store {
    pub fn new(cfg: G3Offload, workers: u32, block_bytes: u64) -> Self {
        G3Store {
            cfg,
            block_bytes,
            entries: BTreeMap::new(),
            jobs: BTreeMap::new(),
            service: FairShare::default(),
            completed: (0..workers).map(|w| (w, Vec::new())).collect(),
            ordinal: 0,
            completion_epoch: 0,
            stats: G3Stats::default(),
        }
    }

    pub fn now(&self) -> f64 {
        self.service.now()
    }

    fn pool(&self, worker: u32) -> u32 {
        match self.cfg.scope {
            G3Scope::WorkerLocal => worker,
            G3Scope::ClusterShared => 0,
        }
    }

    /// Whether the worker's pool holds `key` (no statistics, no touch).
    pub fn contains(&self, worker: u32, key: Key) -> bool {
        self.entries.contains_key(&(self.pool(worker), key))
    }

    pub fn probe(&mut self, worker: u32, key: Key) -> Probe {
        let pool = self.pool(worker);
        self.stats.lookup_probes += 1;
        self.ordinal += 1;
        match self.entries.get_mut(&(pool, key)) {
            None => Probe::Miss,
            Some(e) if e.pending => {
                self.stats.lookup_pending += 1;
                Probe::Pending
            }
            Some(e) => {
                e.touched = self.ordinal;
                self.stats.lookup_hits += 1;
                Probe::Resident
            }
        }
    }

    /// Starts a job of `worker`'s at `now`: a write of the blocks G3 lacks (as many as fit) or
    /// a read of resident blocks. Returns its id, or None when there is nothing to do.
    pub fn submit(&mut self, worker: u32, way: Way, keys: &[Key], now: f64) -> Option<u64> {
        // A rank behind the store's time never schedules work in the past.
        self.advance(now);
        let pool = self.pool(worker);
        // Every block offered is safe from eviction, those G3 holds already included.
        let protected: FxHashSet<Key> = keys.iter().copied().collect();
        let mut keys: Vec<Key> = match way {
            Way::Write => keys.iter().copied().filter(|k| !self.entries.contains_key(&(pool, *k))).collect(),
            Way::Read => keys.to_vec(),
        };
        if keys.is_empty() {
            return None;
        }
        if way == Way::Write {
            let used = self.entries.keys().filter(|(p, _)| *p == pool).count() as u64;
            let free = self.cfg.num_g3_blocks - used;
            let mut victims: Vec<(u64, (u32, Key))> = self
                .entries
                .iter()
                .filter(|((p, k), e)| *p == pool && !e.pending && e.pins == 0 && !protected.contains(k))
                .map(|(id, e)| (e.touched, *id))
                .collect();
            victims.sort_unstable();
            keys.truncate((free as usize).saturating_add(victims.len()));
            if keys.is_empty() {
                return None;
            }
            let needed = (keys.len() as u64).saturating_sub(free) as usize;
            for (_, id) in victims.into_iter().take(needed) {
                self.entries.remove(&id);
                self.stats.evictions += 1;
            }
            for &k in &keys {
                self.entries.insert((pool, k), Entry { pending: true, pins: 0, writer: worker, touched: 0 });
            }
        } else {
            if keys.iter().any(|k| self.entries.get(&(pool, *k)).is_none_or(|e| e.pending)) {
                return None;
            }
            for k in &keys {
                self.entries.get_mut(&(pool, *k)).expect("checked").pins += 1;
            }
        }
        self.ordinal += 1;
        let id = self.ordinal;
        self.io(way).submitted_jobs += 1;
        let now = self.service.now();
        let (worker_gbps, shared_gbps) = match way {
            Way::Read => (self.cfg.read_bandwidth_gbps, self.cfg.shared_read_bandwidth_gbps),
            Way::Write => (self.cfg.write_bandwidth_gbps, self.cfg.shared_write_bandwidth_gbps),
        };
        self.service.submit(Job {
            id,
            client: worker as u64,
            way,
            ready: now + self.cfg.latency_to_first_byte_ms,
            bytes: (keys.len() as u64 * self.block_bytes) as f64,
            client_rate: bytes_per_ms(worker_gbps),
            shared_rate: match self.cfg.scope {
                G3Scope::WorkerLocal => f64::INFINITY,
                G3Scope::ClusterShared => bytes_per_ms(shared_gbps),
            },
        });
        self.jobs.insert(id, G3Job { worker, way, keys, submitted: now });
        Some(id)
    }

    pub fn job_keys(&self, id: u64) -> &[Key] {
        &self.jobs[&id].keys
    }

    fn io(&mut self, way: Way) -> &mut G3Io {
        match way {
            Way::Read => &mut self.stats.read,
            Way::Write => &mut self.stats.write,
        }
    }

    /// The next event of any job (they share the service), or a completion of the worker's
    /// not yet taken.
    pub fn next_deadline(&self, worker: u32) -> Option<f64> {
        self.service.next_event().into_iter().chain(self.completed.get(&worker).into_iter().flatten().map(|c| c.at)).min_by(f64::total_cmp)
    }

    pub fn advance(&mut self, target: f64) {
        for (id, at) in self.service.advance(target) {
            let job = self.jobs.remove(&id).expect("a finished job");
            self.finish(id, job, at);
        }
    }

    fn finish(&mut self, id: u64, job: G3Job, at: f64) {
        self.completion_epoch += 1;
        let pool = self.pool(job.worker);
        self.ordinal += 1;
        for k in &job.keys {
            let e = self.entries.get_mut(&(pool, *k)).expect("a job's block");
            match job.way {
                Way::Write => e.pending = false,
                Way::Read => {
                    e.pins -= 1;
                    self.stats.cross_worker_read_blocks += (e.writer != job.worker) as u64;
                }
            }
            e.touched = self.ordinal;
        }
        let bytes = job.keys.len() as u64 * self.block_bytes;
        let io = self.io(job.way);
        io.completed_jobs += 1;
        io.completed_bytes += bytes;
        io.transfer_ms += at - job.submitted;
        self.completed.entry(job.worker).or_default().push(G3Completion { id, way: job.way, keys: job.keys, at });
    }

    /// Advances to `now` and hands the worker its completions due by then.
    pub fn take_completed(&mut self, worker: u32, now: f64) -> Vec<G3Completion> {
        self.advance(now);
        let list = self.completed.entry(worker).or_default();
        let (due, later): (Vec<_>, Vec<_>) = std::mem::take(list).into_iter().partition(|c| c.at <= now);
        *list = later;
        due
    }

    pub fn has_work(&self, worker: u32) -> bool {
        self.completed.get(&worker).is_some_and(|c| !c.is_empty()) || self.service.has_client_jobs(worker as u64)
    }

    /// The statistics, with the blocks resident and pending now.
    /// Worker `worker` is removed from its pool (scaled down): a `worker_local` store goes
    /// with it, so its blocks no longer count as resident (as the reference's report has it).
    pub fn remove_worker(&mut self, worker: u32) {
        if self.cfg.scope == G3Scope::WorkerLocal {
            self.entries.retain(|&(pool, _), _| pool != worker);
        }
    }

    pub fn snapshot(&self) -> G3Stats {
        let mut s = self.stats.clone();
        s.pending_blocks = self.entries.values().filter(|e| e.pending).count() as u64;
        s.resident_blocks = self.entries.len() as u64 - s.pending_blocks;
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(capacity: u64) -> G3Store {
        let cfg = G3Offload {
            scope: G3Scope::WorkerLocal,
            num_g3_blocks: capacity,
            latency_to_first_byte_ms: 0.1,
            read_bandwidth_gbps: 10.0,
            write_bandwidth_gbps: 10.0,
            shared_read_bandwidth_gbps: 80.0,
            shared_write_bandwidth_gbps: 80.0,
        };
        G3Store::new(cfg, 2, 2_097_152)
    }

    #[test]
    fn a_read_of_ten_blocks_takes_its_first_byte_and_its_bytes() {
        // The worked example: 10 blocks of 2 MiB at 10 GB/s after 0.1 ms.
        let mut g = store(100);
        let keys: Vec<Key> = (1..=10).collect();
        let w = g.submit(0, Way::Write, &keys, 0.0).unwrap();
        assert_eq!(g.job_keys(w).len(), 10);
        let done = g.take_completed(0, 100.0);
        assert_eq!(done.len(), 1);
        assert!((done[0].at - 2.197152).abs() < 1e-9);
        assert_eq!(g.probe(0, 1), Probe::Resident);
        assert_eq!(g.probe(1, 1), Probe::Miss, "worker-local pools");
        g.submit(0, Way::Read, &keys, 200.0).unwrap();
        let done = g.take_completed(0, 300.0);
        assert!((done[0].at - 202.197152).abs() < 1e-9);
        let s = g.snapshot();
        assert_eq!((s.read.completed_bytes, s.write.completed_jobs, s.resident_blocks), (20_971_520, 1, 10));
        assert_eq!((s.lookup_probes, s.lookup_hits), (2, 1));
    }

    #[test]
    fn writes_keep_the_leading_blocks_that_fit() {
        let mut g = store(3);
        g.submit(0, Way::Write, &[1, 2], 0.0);
        g.take_completed(0, 10.0);
        g.submit(0, Way::Write, &[3], 10.0);
        // Pending 3 and the job's own blocks stay; 1 and 2 may go: [4, 5, 6] → room for 2.
        let id = g.submit(0, Way::Write, &[4, 5, 6], 10.0).unwrap();
        assert_eq!(g.job_keys(id), &[4, 5]);
        assert_eq!(g.snapshot().evictions, 2);
    }
}
