//! The cluster's hardware as the harness sees it: pools of workers behind a router, each
//! worker a group of data-parallel ranks, each rank one engine core.

use super::router::Router;
use servesim_engine::kv::KvEvent;
use servesim_engine::perf::interpolated::Profile;
use servesim_engine::{Engine, EngineArgs, HandOff, LaunchConfig, PassOutput, Scheduler};
use std::collections::VecDeque;
use std::sync::Arc;

/// Which pool a rank serves in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    Aggregated,
    Prefill,
    Decode,
}

impl Role {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Role::Aggregated => "aggregated",
            Role::Prefill => "prefill",
            Role::Decode => "decode",
        }
    }
}

/// Workers of one role behind one router; routing targets are their ranks.
pub(crate) struct Pool {
    pub role: Role,
    pub router: Router,
    /// Its workers (global indices) in id order: every worker it ever had.
    pub workers: Vec<usize>,
    /// Routing target → global rank.
    pub target_rank: Vec<usize>,
    pub dp_size: usize,
    pub block_size: u32,
    /// Its engines' batch budget, as the router's queue threshold reads it.
    pub max_num_batched_tokens: u64,
    /// What its workers run (new workers are built from it), and their timing profile.
    pub launch: LaunchConfig,
    /// Its engines' arguments, resolved and checked once for every worker it builds.
    pub engine: servesim_engine::ResolvedArgs,
    pub profile: Option<Arc<Profile>>,
    /// The measured-kernel model the engines are timed by, if any.
    pub kernels: Option<Arc<servesim_engine::perf::ais::AisModel>>,
    /// A new worker takes this long to become ready (ms; Dynamo's `startup_time`).
    pub startup_ms: f64,
    /// Requests held by the router while every target is busy (FCFS), each with the overlaps
    /// the router saw at its arrival (see [`Router::overlaps`]).
    pub queued: VecDeque<(u32, Vec<u32>)>,
    /// Native offload's tiers shared by the pool's ranks (none without offload).
    pub tiers: servesim_engine::kv::offload::Tiers,
}

impl Pool {
    pub fn rank_of(&self, target: usize) -> usize {
        self.target_rank[target]
    }

    pub fn args(&self) -> &EngineArgs {
        &self.engine
    }
}

/// Where a worker is in its life: it serves only while active; a draining one finishes what
/// it has and takes nothing new.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WorkerState {
    Starting,
    Active,
    Draining,
    Removed,
}

/// A worker's data-parallel ranks step together: a pass starts on every rank with work at
/// once and ends when the slowest rank does (the attention-DP barrier).
pub(crate) struct Worker {
    pub ranks: std::ops::Range<usize>,
    pub busy: bool,
    pub pool: usize,
    /// Its id within its pool (ids are never reused).
    pub id: u32,
    pub state: WorkerState,
}

impl Worker {
    /// Whether it counts as provisioned (for worker-seconds).
    pub fn live(&self) -> bool {
        self.state != WorkerState::Removed
    }
}

/// One engine core (a worker's data-parallel rank).
pub(crate) struct Rank {
    pub engine: Engine,
    pub pool: usize,
    pub worker: u32,
    /// Its data-parallel rank within the worker.
    pub dp_rank: u32,
    /// Global index of its worker.
    pub group: usize,
    /// Whether it computed a pass in its worker's current pass.
    pub stepped: bool,
    /// The running pass's effects, applied when it ends. Boxed: a pass's output changes
    /// hands twice a pass (core to rank, rank to the harness), as a pointer, not ~400 bytes.
    pub pending: Box<PassOutput>,
    /// When its latest pass ended: the gap of its steady tokens runs from there.
    pub last_pass_end_ms: f64,
    /// When its latest pass started.
    pub started_ms: f64,
    /// Its pass just ended with nothing running and requests queued: the next pass, at the
    /// same instant, begins as an idle pass (see `Simulation::idle_pass`).
    pub idle_pass: bool,
    /// Its routing target in its pool.
    pub target: usize,
}

/// Every pool, worker and rank of the cluster.
#[derive(Default)]
pub(crate) struct Fleet {
    pub pools: Vec<Pool>,
    pub workers: Vec<Worker>,
    pub ranks: Vec<Rank>,
    /// KV events published between passes (rank, event), kept for the event stream while one
    /// is recorded.
    pub idle_events: Option<Vec<(usize, KvEvent)>>,
}

impl Fleet {
    /// The pool arrivals are routed to: the aggregated pool, or the prefill pool.
    pub const ENTRY: usize = 0;

    pub fn busy(&self, rank: usize) -> bool {
        self.workers[self.ranks[rank].group].busy
    }

    /// KV events rank `rank` raised between passes reach its pool's router now (a prefill
    /// worker caching a released prompt: the reference publishes a scheduler command's
    /// events at once).
    pub fn publish_idle_events(&mut self, rank: usize, now_ms: f64) {
        let mut events = Vec::new();
        self.ranks[rank].engine.take_idle_kv_events(&mut events);
        if !events.is_empty() {
            let target = self.ranks[rank].target;
            self.pools[self.ranks[rank].pool].router.apply_events(target, &events, now_ms);
            if let Some(log) = &mut self.idle_events {
                log.extend(events.into_iter().map(|e| (rank, e)));
            }
        }
    }

    /// Rank `rank` lets request `id`'s held prompt go now; its KV events are published.
    pub fn release_source(&mut self, rank: usize, id: u64, now_ms: f64) {
        self.ranks[rank].engine.release_source(id);
        self.publish_idle_events(rank, now_ms);
    }

    /// The pool of `role`, if the cluster has one.
    pub fn pool_of(&self, role: Role) -> Option<usize> {
        self.pools.iter().position(|p| p.role == role)
    }
}
