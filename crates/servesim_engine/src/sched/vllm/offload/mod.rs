//! The vLLM scheduler's offload connector: one rank's view of the host tier (and G3), and
//! each request's offload state. The admission loop asks it through `connector.rs`; its
//! answers are in `onboarding.rs`.
//!
//! Rules (the reference's, from its source and measured):
//!
//! - **Lookup.** A waiting request with no KV yet is looked up in G2 after its device (G1)
//!   prefix, only while the pass still has token budget, a running slot and no preemption:
//!   the contiguous run of host blocks after the G1 prefix (up to the prompt's last full
//!   block) is a hit; a pending block, a block another request is loading, the request's own
//!   store still in flight, or a load of its own under way make it wait (*deferred*). Every
//!   lookup touches all its prompt blocks in the host LRU, last block first.
//! - **Stores** (device to host) are write-through of full prompt blocks, never generated ones:
//!   after each pass's scheduling, each request scheduled in it offers the blocks from its
//!   cursor to its computed prompt blocks; those G2 lacks are stored as one cohort. The
//!   cohort waits for a later pass if one of its device blocks is still read by an earlier
//!   store, and when G2 has no room.
//! - **Fences.** A device block whose previous content is still being stored may be handed to
//!   a new owner: a pass that writes it computes only after that store ends (its admissions
//!   still count from the pass start), a load into it starts only then, and a preempted
//!   request's pass waits for its own last store. A cluster-shared pool holds such blocks
//!   instead.
//! - Any completion on the rank's tiers wakes every sleeping request.

mod g3_restore;

pub use g3_restore::{G3Link, Restore};

use crate::args::{EngineArgs, G2Scope};
use crate::kv::offload::host_tier::{BlockMeta, Completed, HostLink, Lookup};
use crate::kv::offload::{HostTier, Key, Shared, Tiers, TransferId};
use crate::kv::{BlockPool, KvTier};
use rustc_hash::FxHashMap;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

/// A request's host load: under way, or landed (its blocks are in its device blocks).
#[derive(Clone, Debug)]
pub enum Load {
    Loading {
        id: TransferId,
        keys: Vec<Key>,
        /// Tokens its G1 prefix covered when it was looked up.
        original_g1: u32,
        /// Blocks of its prompt it holds on the device once the load lands (G1 + loaded).
        loaded_prefix: u32,
        /// Blocks its known tokens needed at lookup.
        footprint: u32,
    },
    Activated {
        original_g1: u32,
        loaded_prefix: u32,
        loaded: u32,
        footprint: u32,
    },
}

impl Load {
    /// Blocks beyond its loaded prefix it will need (a headroom the admission of another host
    /// hit keeps free).
    pub fn tail(&self) -> u32 {
        match self {
            Load::Loading { loaded_prefix, footprint, .. } | Load::Activated { loaded_prefix, footprint, .. } => {
                footprint.saturating_sub(*loaded_prefix)
            }
        }
    }
}

/// One request's offload state.
#[derive(Debug)]
pub struct HostRequest {
    pub owner: u64,
    /// Sequence hashes of its prompt's full blocks.
    pub keys: Vec<Key>,
    /// Their router identities (only while residency is published).
    pub meta: Option<Vec<BlockMeta>>,
    pub restore: Restore,
    /// Prompt blocks before this one were offered to the host tier.
    pub next_store: u32,
    pub latest_store: Option<TransferId>,
    pub load: Option<Load>,
    /// Its first admission has been attributed to the tiers.
    pub first_recorded: bool,
    /// In the connector queue (ahead of ordinary waiting requests when awake).
    pub in_connector: bool,
    /// Waits for a transfer to complete before it is tried again.
    pub asleep: bool,
}

pub enum HostLookup {
    Miss,
    /// These host blocks extend its G1 prefix.
    Hit(Vec<Key>),
    Deferred,
}

/// What settling the tiers at an instant did.
#[derive(Default)]
pub struct Progress {
    /// (request slot, load) of loads that landed.
    pub loads: Vec<(u32, TransferId)>,
    /// A transfer completed (the rank's sleepers wake).
    pub any: bool,
}

#[derive(Debug)]
pub struct Offload {
    pub host: Shared<HostTier>,
    client: u64,
    shared: bool,
    publishes: bool,
    pub g3: Option<G3Link>,
    /// Counts loads started and landed (with G3, a pass that changed it is retried at once).
    load_epoch: u64,
    /// Blocks being loaded, and by which load.
    load_by_key: FxHashMap<Key, TransferId>,
    /// The latest store end a pass's compute must wait for.
    compute_not_before: f64,
    /// The harness's time for the pass being scheduled.
    pub now: f64,
    /// Per request slot.
    pub requests: Vec<Option<HostRequest>>,
    /// Requests the connector deferred, first come first served.
    pub connector: VecDeque<u32>,
    /// Deferred requests whose load must be retried at the pass end (the host blocks
    /// vanished): they wake once the admission loop is done.
    pub retry: Vec<u32>,
    /// With G3: the tiers' epoch when the pass began, and whether the pass just stepped should
    /// be stepped again at once (see `TransferClock::retry_at_once`).
    pub g3_epoch_before: Option<u64>,
    pub retry_at_once: bool,
}

impl Offload {
    /// The connector of rank `dp_rank` of worker `worker`, joining the pool's shared tiers.
    pub fn new(args: &EngineArgs, tiers: &Tiers, worker: u32, publishes: bool) -> Option<Self> {
        let cfg = args.native_host_offload.as_ref()?;
        let link =
            HostLink { d2h_gbps: cfg.d2h_bandwidth_gbps, h2d_gbps: cfg.h2d_bandwidth_gbps, latency_ms: cfg.latency_to_first_byte_ms };
        let host = match (&tiers.g2, cfg.scope) {
            (Some(shared), G2Scope::ClusterShared) => shared.clone(),
            _ => Rc::new(RefCell::new(HostTier::new(cfg.num_host_blocks, args.offload_block_bytes(), None))),
        };
        let (client, shared) = {
            let mut h = host.borrow_mut();
            let client = h.register(link);
            if publishes {
                h.subscribe(client);
            }
            if tiers.g3.is_some() {
                h.hold_completed_sources(client);
            }
            (client, h.is_shared())
        };
        Some(Offload {
            host,
            client,
            shared,
            publishes,
            g3: tiers.g3.clone().map(|g| G3Link::new(g, worker)),
            load_epoch: 0,
            load_by_key: FxHashMap::default(),
            compute_not_before: 0.0,
            now: 0.0,
            requests: Vec::new(),
            connector: VecDeque::new(),
            retry: Vec::new(),
            g3_epoch_before: None,
            retry_at_once: false,
        })
    }

    pub fn is_shared(&self) -> bool {
        self.shared
    }

    /// Requests keep their blocks' router identities (residency is published).
    pub fn keeps_meta(&self) -> bool {
        self.shared || self.publishes
    }

    pub fn host(&self) -> std::cell::RefMut<'_, HostTier> {
        self.host.borrow_mut()
    }

    pub fn client(&self) -> u64 {
        self.client
    }

    pub fn g3_epoch(&self) -> Option<u64> {
        self.g3.as_ref().map(|g| g.epoch + self.load_epoch)
    }

    pub fn request(&mut self, s: u32) -> &mut HostRequest {
        self.requests[s as usize].as_mut().expect("a request's offload state")
    }

    pub fn has_request(&self, s: u32) -> bool {
        self.requests.get(s as usize).is_some_and(Option::is_some)
    }

    pub fn insert(&mut self, s: u32, r: HostRequest) {
        if self.requests.len() <= s as usize {
            self.requests.resize_with(s as usize + 1, || None);
        }
        self.requests[s as usize] = Some(r);
    }

    /// Looks up `s`'s prompt after its `base` G1 blocks (see the module's rules).
    pub fn lookup(&mut self, s: u32, base: u32) -> HostLookup {
        let Offload { host, client, g3, load_by_key, requests, now, .. } = self;
        let r = requests[s as usize].as_mut().expect("a request's offload state");
        match r.load {
            Some(Load::Activated { .. }) => return HostLookup::Miss,
            Some(Load::Loading { .. }) => return HostLookup::Deferred,
            None => {}
        }
        let mut tier = host.borrow_mut();
        if let Some(id) = r.latest_store {
            if tier.has_transfer(id) {
                return HostLookup::Deferred;
            }
            r.latest_store = None;
        }
        let base = base as usize;
        let outcome = if base >= r.keys.len() {
            if let Some(g3) = g3 {
                g3.release(r.owner);
            }
            HostLookup::Miss
        } else if let Some(g3) = g3
            && !r.restore.bypassed()
            && g3.stage(&mut tier, *client, r.owner, &mut r.restore, &r.keys[base..], r.meta.as_deref().map(|m| &m[base..]), *now)
        {
            HostLookup::Deferred
        } else {
            let mut matched = 0;
            let mut wait = false;
            for &k in &r.keys[base..] {
                match tier.lookup(k) {
                    Lookup::Hit => wait |= load_by_key.contains_key(&k),
                    Lookup::Pending => wait = true,
                    Lookup::Miss => break,
                }
                matched += 1;
            }
            if matched == 0 {
                HostLookup::Miss
            } else if wait {
                HostLookup::Deferred
            } else {
                HostLookup::Hit(r.keys[base..base + matched].to_vec())
            }
        };
        // vLLM's LRU policy touches the looked-up blocks in reverse order.
        for &k in r.keys.iter().rev() {
            tier.touch(k);
        }
        outcome
    }

    /// Whether any of `keys` is being loaded already.
    pub fn any_loading(&self, keys: &[Key]) -> bool {
        keys.iter().any(|k| self.load_by_key.contains_key(k))
    }

    pub fn note_load(&mut self, keys: &[Key], id: TransferId, owner: u64) {
        for &k in keys {
            self.load_by_key.insert(k, id);
        }
        if let Some(g3) = &mut self.g3 {
            g3.release(owner);
        }
        self.load_epoch += 1;
    }

    /// A pass writes blocks still read by `stores`: it computes after they end.
    pub fn fence(&mut self, stores: &[u64]) {
        let tier = self.host.borrow();
        for &id in stores {
            let end = tier.transfer_deadline(TransferId(id)).expect("a pending store has a deadline");
            self.compute_not_before = self.compute_not_before.max(end);
        }
    }

    /// The latest end among `stores` (a load into their blocks starts after it).
    pub fn stores_end(&self, stores: &[u64], now: f64) -> f64 {
        let tier = self.host.borrow();
        stores.iter().filter_map(|&id| tier.transfer_deadline(TransferId(id))).fold(now, f64::max)
    }

    /// A preempted request releases its blocks only once its last store is done.
    pub fn preempted(&mut self, s: u32) {
        let Some(r) = self.requests.get_mut(s as usize).and_then(Option::as_mut) else { return };
        r.restore.reset();
        if let Some(id) = r.latest_store
            && let Some(end) = self.host.borrow().transfer_deadline(id)
        {
            self.compute_not_before = self.compute_not_before.max(end);
        }
    }

    pub fn compute_start(&self, now: f64) -> f64 {
        self.compute_not_before.max(now)
    }

    /// Applies the transfers due by `now`: stores free their device sources (and go on to
    /// G3), G3 completions land, host-tier events reach the rank's sink, loads are listed for
    /// activation.
    pub fn advance(&mut self, pool: &mut BlockPool, now: f64) -> Progress {
        let mut tier = self.host.borrow_mut();
        let (completed, mut any) = tier.tick(self.client, now);
        self.load_epoch += completed.len() as u64;
        for c in &completed {
            if let Completed::Store { id, blocks, .. } = c {
                pool.reader_done(id.0);
                if let Some(g3) = &mut self.g3 {
                    g3.store(&mut tier, blocks, now);
                }
            }
        }
        if let Some(g3) = &mut self.g3 {
            any |= g3.advance(&mut tier, now);
        }
        // After G3: a read that landed above announces its blocks now.
        for e in tier.take_events(self.client) {
            pool.events.push_tier(KvTier::HostPinned, e);
        }
        let mut loads = Vec::new();
        for c in completed {
            if let Completed::Load { owner, id, blocks } = c {
                for k in &blocks {
                    self.load_by_key.remove(k);
                }
                loads.push((owner as u32, id));
            }
        }
        Progress { loads, any }
    }

    /// A pass ended at `end`: settle, submit the pass's stores, settle again (transfers of no
    /// duration land at once).
    pub fn boundary(&mut self, pool: &mut BlockPool, end: f64) -> Progress {
        let mut p = self.advance(pool, end);
        self.host.borrow_mut().submit_prepared_stores(self.client, end);
        let q = self.advance(pool, end);
        p.loads.extend(q.loads);
        p.any |= q.any;
        p
    }

    pub fn next_deadline(&self) -> Option<f64> {
        let host = self.host.borrow().next_deadline(self.client);
        host.into_iter().chain(self.g3.as_ref().and_then(G3Link::next_deadline)).min_by(f64::total_cmp)
    }

    /// Transfers of the rank's are in flight (or news waits for it).
    pub fn has_work(&self) -> bool {
        self.host.borrow().has_pending_work(self.client) || self.g3.as_ref().is_some_and(G3Link::has_work)
    }

    /// The request leaves: its load is withdrawn and its reads detached.
    pub fn forget(&mut self, s: u32) {
        let Some(r) = self.requests.get_mut(s as usize).and_then(Option::take) else { return };
        if let Some(g3) = &mut self.g3 {
            g3.release(r.owner);
        }
        if let Some(Load::Loading { id, keys, .. }) = r.load {
            for k in &keys {
                self.load_by_key.remove(k);
            }
            self.host.borrow_mut().cancel_load(self.client, id, self.now);
        }
        if r.in_connector {
            self.connector.retain(|&c| c != s);
        }
    }
}
