//! KV offload tiers below the GPU pool (vLLM's native offload connector, as the reference
//! models it): the host tier G2 (`host_tier.rs`) and the G3 store behind it (`g3_store.rs`),
//! their transfer lanes (`lane.rs`: a private rank's FIFO lanes; `fair_share.rs`: a shared
//! pool's equal-share service), and [`Tiers`], what one deployment shares between its ranks.
//!
//! The scheduler's side — when to look a prompt up, store it, load it, and admit it — is in
//! `sched/vllm/offload.rs`. None of this has a clock: transfers get deadlines from the times
//! the harness hands in, and the harness comes back at those deadlines.

pub mod fair_share;
pub mod g3_store;
pub mod host_tier;
pub mod lane;

pub use g3_store::{G3Stats, G3Store};
pub use host_tier::{HostLink, HostTier, Key, TransferId};

use crate::args::{EngineArgs, G2Scope};
use std::cell::RefCell;
use std::rc::Rc;

/// A tier several ranks use at once (a cluster-shared G2 pool, the G3 store). Single-threaded:
/// a run's engines live in one thread, the harness's.
pub type Shared<T> = Rc<RefCell<T>>;

/// The tiers one deployment's ranks share, created once per pool of workers by the harness
/// and handed to each rank it builds. A `dp_rank_local` G2 tier is each rank's own and is
/// not here.
#[derive(Clone, Debug, Default)]
pub struct Tiers {
    pub g2: Option<Shared<HostTier>>,
    pub g3: Option<Shared<G3Store>>,
}

/// One G2 pool's figures for the report (`g2_domains`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct G2Domain {
    pub capacity_blocks: u64,
    pub resident_blocks: u64,
    pub used_blocks: u64,
}

impl Tiers {
    /// The shared tiers `args` asks for, for a pool of `workers` workers.
    pub fn for_pool(args: &EngineArgs, workers: u32) -> Self {
        let Some(host) = &args.native_host_offload else { return Tiers::default() };
        let bytes = args.offload_block_bytes();
        let g2 = (host.scope == G2Scope::ClusterShared).then(|| {
            let shared = (host.shared_d2h_bandwidth_gbps, host.shared_h2d_bandwidth_gbps);
            Rc::new(RefCell::new(HostTier::new(host.num_host_blocks, bytes, Some(shared))))
        });
        let g3 = args.g3_offload.as_ref().map(|g3| Rc::new(RefCell::new(G3Store::new(g3.clone(), workers, bytes))));
        Tiers { g2, g3 }
    }

    /// Worker `worker` of the pool is removed (scaled down).
    pub fn remove_worker(&self, worker: u32) {
        if let Some(g3) = &self.g3 {
            g3.borrow_mut().remove_worker(worker);
        }
    }

    pub fn g3_stats(&self) -> Option<G3Stats> {
        self.g3.as_ref().map(|g| g.borrow().snapshot())
    }

    pub fn g2_domain(&self) -> Option<G2Domain> {
        self.g2.as_ref().map(|g| {
            let g = g.borrow();
            let (resident_blocks, used_blocks) = g.occupancy();
            G2Domain { capacity_blocks: g.capacity(), resident_blocks, used_blocks }
        })
    }
}
