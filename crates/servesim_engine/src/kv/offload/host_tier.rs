//! The host (G2) tier of vLLM's native offload: which prompt blocks host memory holds, in
//! what recency, and the copies moving in and out of it.
//!
//! Rules (the reference's, measured and read from its source):
//!
//! - A block is identified by its sequence hash. An entry is *pending* from the moment a store
//!   (device to host) is prepared until the copy lands, then *resident*. Capacity counts both.
//! - Eviction makes room for a store: least recently used resident blocks first, never one
//!   that is pending, being loaded (pinned) or part of the store itself; if too few can go,
//!   nothing changes and the store is retried later.
//! - Recency is an epoch counter; every block made evictable at once (a finished store, the
//!   end of a load) shares one epoch, ties broken by hash.
//! - Stores prepared during a pass are submitted at its end, one transfer per request cohort.
//!   A load (host to device) pins its blocks until it completes.
//! - A private tier (one DP rank) moves bytes over two FIFO lanes with fixed deadlines
//!   (`lane.rs`); a cluster-shared pool shares its bandwidth equally (`fair_share.rs`).
//!   Completions at one instant apply stores before loads, then by transfer id; each is
//!   delivered to the rank that asked for it.
//! - Ranks that publish KV events learn residency changes as host-tier events: a block is
//!   announced when its store lands and withdrawn when it is evicted.
//!
//! The tier has no clock: every call that depends on time is given the harness's time.

use super::fair_share::{FairShare, Job, Way};
use super::lane::{FifoLane, bytes_per_ms};
use crate::kv::{KvEventData, StoredBlock};
use rustc_hash::{FxHashMap, FxHashSet};
use std::cmp::Ordering;
use std::collections::{BTreeSet, VecDeque};

/// A block's identity in every tier: its sequence hash.
pub type Key = u64;

/// A transfer of one tier (ids are the tier's own, from 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TransferId(pub u64);

/// One rank's link to its host pool.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HostLink {
    pub d2h_gbps: f64,
    pub h2d_gbps: f64,
    pub latency_ms: f64,
}

/// What a router needs to place a host block in its prompt (kept only while someone listens).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockMeta {
    pub parent: Option<Key>,
    pub tokens_hash: u64,
    pub position: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lookup {
    Miss,
    Pending,
    Hit,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreOutcome {
    Prepared(TransferId),
    /// Every block is already held (or on its way).
    AlreadyPresent,
    /// Not enough room even after evicting what may go: try again later.
    RetryCapacity,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Completed {
    Store { owner: u64, id: TransferId, blocks: Vec<Key> },
    Load { owner: u64, id: TransferId, blocks: Vec<Key> },
}

/// Same-instant completions apply in this order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Store,
    Load,
    /// A G3 read's destination: capacity taken in G2 without a device copy.
    External,
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    pending: Option<TransferId>,
    pins: u32,
}

#[derive(Debug)]
struct Transfer {
    kind: Kind,
    client: u64,
    owner: u64,
    blocks: Vec<Key>,
    /// A private lane's fixed completion time, once submitted.
    deadline: Option<f64>,
}

/// A private lane's pending completion, ordered by time, kind, id.
#[derive(Clone, Copy, Debug)]
struct Deadline {
    at: f64,
    kind: Kind,
    id: TransferId,
}

impl PartialEq for Deadline {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Deadline {}
impl PartialOrd for Deadline {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Deadline {
    fn cmp(&self, o: &Self) -> Ordering {
        self.at.total_cmp(&o.at).then(self.kind.cmp(&o.kind)).then(self.id.cmp(&o.id))
    }
}

/// Recency of resident, unpinned blocks: oldest first.
#[derive(Debug, Default)]
struct Lru {
    clock: u64,
    epoch_of: FxHashMap<Key, u64>,
    order: BTreeSet<(u64, Key)>,
}

impl Lru {
    fn set(&mut self, key: Key, epoch: u64) {
        self.remove(key);
        self.epoch_of.insert(key, epoch);
        self.order.insert((epoch, key));
    }

    fn touch(&mut self, key: Key) {
        self.clock += 1;
        self.set(key, self.clock);
    }

    /// Every block of `keys` in one new epoch.
    fn touch_all(&mut self, keys: &[Key]) {
        if keys.is_empty() {
            return;
        }
        self.clock += 1;
        for &k in keys {
            self.set(k, self.clock);
        }
    }

    fn remove(&mut self, key: Key) {
        if let Some(e) = self.epoch_of.remove(&key) {
            self.order.remove(&(e, key));
        }
    }
}

#[derive(Debug)]
enum Transport {
    Lanes { d2h: FifoLane, h2d: FifoLane, deadlines: BTreeSet<Deadline> },
    Shared { service: FairShare, d2h_rate: f64, h2d_rate: f64 },
}

#[derive(Debug)]
struct Client {
    link: HostLink,
    /// Stores prepared in the current pass, submitted at its end.
    prepared: VecDeque<TransferId>,
    /// Completions not yet handed to the rank.
    done: VecDeque<(f64, Completed)>,
    /// The tier's completion count when the rank last looked: any change wakes its sleepers.
    seen_epoch: u64,
    /// With G3: a finished store stays pinned until G3 takes (or declines) it.
    hold_completed: bool,
    /// Host-tier KV events waiting for the rank (it publishes events).
    events: Option<Vec<KvEventData>>,
}

#[derive(Debug)]
pub struct HostTier {
    capacity: u64,
    block_bytes: u64,
    entries: FxHashMap<Key, Entry>,
    lru: Lru,
    transfers: FxHashMap<TransferId, Transfer>,
    transport: Transport,
    clients: Vec<Client>,
    meta: FxHashMap<Key, BlockMeta>,
    completion_epoch: u64,
    next_id: u64,
    now: f64,
}

impl HostTier {
    /// A pool of `capacity` blocks of `block_bytes`; `shared` gives a cluster-shared pool's
    /// (D2H, H2D) caps in GB/s, None a private one (one rank, FIFO lanes).
    pub fn new(capacity: u64, block_bytes: u64, shared: Option<(f64, f64)>) -> Self {
        let transport = match shared {
            None => Transport::Lanes { d2h: FifoLane::new(0.0), h2d: FifoLane::new(0.0), deadlines: BTreeSet::new() },
            Some((d2h, h2d)) => {
                Transport::Shared { service: FairShare::default(), d2h_rate: bytes_per_ms(d2h), h2d_rate: bytes_per_ms(h2d) }
            }
        };
        HostTier {
            capacity,
            block_bytes,
            entries: FxHashMap::default(),
            lru: Lru::default(),
            transfers: FxHashMap::default(),
            transport,
            clients: Vec::new(),
            meta: FxHashMap::default(),
            completion_epoch: 0,
            next_id: 0,
            now: 0.0,
        }
    }

    pub fn is_shared(&self) -> bool {
        matches!(self.transport, Transport::Shared { .. })
    }

    /// A rank joins; returns its client id.
    pub fn register(&mut self, link: HostLink) -> u64 {
        if let Transport::Lanes { d2h, h2d, .. } = &mut self.transport {
            debug_assert!(self.clients.is_empty(), "a private tier has one rank");
            *d2h = FifoLane::new(link.d2h_gbps);
            *h2d = FifoLane::new(link.h2d_gbps);
        }
        self.clients.push(Client {
            link,
            prepared: VecDeque::new(),
            done: VecDeque::new(),
            seen_epoch: self.completion_epoch,
            hold_completed: false,
            events: None,
        });
        (self.clients.len() - 1) as u64
    }

    pub fn hold_completed_sources(&mut self, client: u64) {
        self.clients[client as usize].hold_completed = true;
    }

    /// The rank publishes KV events: it hears of the pool's residency from now on, starting
    /// with what is resident already (parents before children).
    pub fn subscribe(&mut self, client: u64) {
        let mut resident: Vec<(u32, Key)> =
            self.meta.iter().filter(|(k, _)| self.lookup(**k) == Lookup::Hit).map(|(k, m)| (m.position, *k)).collect();
        resident.sort_unstable();
        let keys: Vec<Key> = resident.into_iter().map(|(_, k)| k).collect();
        let events = self.stored_events(&keys);
        self.clients[client as usize].events = Some(events);
    }

    pub fn take_events(&mut self, client: u64) -> Vec<KvEventData> {
        self.clients[client as usize].events.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Block identities are kept for a shared pool (any rank may listen) or while a rank
    /// listens.
    fn keeps_meta(&self) -> bool {
        self.is_shared() || self.clients.iter().any(|c| c.events.is_some())
    }

    pub fn lookup(&self, key: Key) -> Lookup {
        match self.entries.get(&key) {
            None => Lookup::Miss,
            Some(Entry { pending: Some(_), .. }) => Lookup::Pending,
            Some(_) => Lookup::Hit,
        }
    }

    /// A recency touch: only resident, unpinned blocks are in the LRU order.
    pub fn touch(&mut self, key: Key) {
        if self.entries.get(&key).is_some_and(|e| e.pending.is_none() && e.pins == 0) {
            self.lru.touch(key);
        }
    }

    /// Takes room for the blocks of `keys` the pool lacks, as one device-to-host store of
    /// `owner`'s, submitted at the pass end.
    pub fn prepare_store(&mut self, client: u64, owner: u64, keys: &[Key], meta: Option<&[BlockMeta]>, now: f64) -> StoreOutcome {
        self.reserve(client, owner, keys, meta, now, Kind::Store)
    }

    /// Takes room for a G3 read's destination blocks (no device copy involved).
    pub fn reserve_external(&mut self, client: u64, owner: u64, keys: &[Key], meta: Option<&[BlockMeta]>, now: f64) -> StoreOutcome {
        self.reserve(client, owner, keys, meta, now, Kind::External)
    }

    fn evictable(&self, key: Key, protected: &FxHashSet<Key>) -> bool {
        !protected.contains(&key) && self.entries.get(&key).is_some_and(|e| e.pending.is_none() && e.pins == 0)
    }

    fn reserve(&mut self, client: u64, owner: u64, keys: &[Key], meta: Option<&[BlockMeta]>, now: f64, kind: Kind) -> StoreOutcome {
        let now = self.settle_before_change(now);
        let mut protected = FxHashSet::default();
        let mut missing: Vec<(Key, Option<BlockMeta>)> = Vec::new();
        for (i, &k) in keys.iter().enumerate() {
            if protected.insert(k) && !self.entries.contains_key(&k) {
                missing.push((k, meta.map(|m| m[i])));
            }
        }
        if missing.is_empty() {
            return StoreOutcome::AlreadyPresent;
        }
        let free = self.capacity - self.entries.len() as u64;
        let needed = (missing.len() as u64).saturating_sub(free) as usize;
        let victims: Vec<Key> = self.lru.order.iter().map(|&(_, k)| k).filter(|&k| self.evictable(k, &protected)).take(needed).collect();
        if victims.len() != needed {
            return StoreOutcome::RetryCapacity;
        }
        for &v in &victims {
            self.entries.remove(&v);
            self.lru.remove(v);
        }
        if self.keeps_meta() {
            for v in &victims {
                self.meta.remove(v);
            }
            if !victims.is_empty() {
                self.publish(KvEventData::Removed { block_hashes: victims.clone() });
            }
            for &(k, m) in &missing {
                if let Some(m) = m {
                    self.meta.insert(k, m);
                }
            }
        }
        let _ = now;
        let id = self.new_id();
        let blocks: Vec<Key> = missing.into_iter().map(|(k, _)| k).collect();
        for &k in &blocks {
            self.entries.insert(k, Entry { pending: Some(id), pins: 0 });
        }
        if kind == Kind::Store {
            self.clients[client as usize].prepared.push_back(id);
        }
        self.transfers.insert(id, Transfer { kind, client, owner, blocks, deadline: None });
        StoreOutcome::Prepared(id)
    }

    /// Whether room for `keys` could be made now (no change, no touch).
    pub fn can_reserve(&self, keys: &[Key]) -> bool {
        let protected: FxHashSet<Key> = keys.iter().copied().collect();
        let missing = protected.iter().filter(|k| !self.entries.contains_key(k)).count() as u64;
        let needed = missing.saturating_sub(self.capacity - self.entries.len() as u64) as usize;
        self.lru.order.iter().filter(|&&(_, k)| self.evictable(k, &protected)).take(needed).count() == needed
    }

    /// A G3 read landed: its destination blocks are resident, each its own recency epoch.
    pub fn complete_external(&mut self, id: TransferId) {
        let t = self.transfers.remove(&id).expect("a G3 read's reservation");
        debug_assert_eq!(t.kind, Kind::External);
        for &k in &t.blocks {
            let e = self.entries.get_mut(&k).expect("a reserved block");
            e.pending = None;
            if e.pins == 0 {
                self.lru.touch(k);
            }
        }
        self.announce(&t.blocks);
        self.wake_peers(t.client);
    }

    /// Gives back a reservation that was never submitted.
    pub fn cancel_external(&mut self, id: TransferId) {
        let t = self.transfers.remove(&id).expect("a reservation");
        for k in &t.blocks {
            self.entries.remove(k);
            self.meta.remove(k);
        }
        if let Some(c) = self.clients.get_mut(t.client as usize) {
            c.prepared.retain(|&p| p != id);
        }
        self.wake_peers(t.client);
    }

    /// In a shared pool, a pending block that became resident (or vanished) outside a
    /// transfer's completion wakes the other ranks, not the one that caused it.
    fn wake_peers(&mut self, owner: u64) {
        if !self.is_shared() {
            return;
        }
        let before = self.completion_epoch;
        self.completion_epoch += 1;
        if let Some(c) = self.clients.get_mut(owner as usize)
            && c.seen_epoch == before
        {
            c.seen_epoch = self.completion_epoch;
        }
    }

    /// Drops one pin of each block (a load ended, or G3 is done with a source); the blocks
    /// that become evictable share one recency epoch.
    pub fn unpin(&mut self, keys: &[Key]) {
        let mut freed = Vec::new();
        for k in keys {
            let e = self.entries.get_mut(k).expect("a pinned block");
            e.pins -= 1;
            if e.pins == 0 && e.pending.is_none() {
                freed.push(*k);
            }
        }
        self.lru.touch_all(&freed);
    }

    /// Submits the stores prepared during the pass that ends at `now`.
    pub fn submit_prepared_stores(&mut self, client: u64, now: f64) {
        let at = self.settle_before_change(now);
        let prepared = std::mem::take(&mut self.clients[client as usize].prepared);
        for id in prepared {
            self.submit(id, at, now);
        }
    }

    fn submit(&mut self, id: TransferId, now: f64, not_before: f64) {
        let t = &self.transfers[&id];
        let (kind, client) = (t.kind, t.client);
        let link = self.clients[client as usize].link;
        let bytes = self.block_bytes * t.blocks.len() as u64;
        let ready = not_before + link.latency_ms;
        match &mut self.transport {
            Transport::Lanes { d2h, h2d, deadlines } => {
                let at = if kind == Kind::Load { h2d.submit(ready, bytes) } else { d2h.submit(ready, bytes) };
                deadlines.insert(Deadline { at, kind, id });
                self.transfers.get_mut(&id).expect("just read").deadline = Some(at);
            }
            Transport::Shared { service, d2h_rate, h2d_rate } => {
                let (way, client_gbps, shared_rate) =
                    if kind == Kind::Load { (Way::Read, link.h2d_gbps, *h2d_rate) } else { (Way::Write, link.d2h_gbps, *d2h_rate) };
                service.submit(Job {
                    id: id.0,
                    client,
                    way,
                    ready: ready.max(now),
                    bytes: bytes as f64,
                    client_rate: bytes_per_ms(client_gbps),
                    shared_rate,
                });
            }
        }
    }

    /// Queues a host-to-device load of `keys` (all resident) for `owner`, not before
    /// `not_before` (the device blocks it fills may still be read by a store). None if a block
    /// is not resident.
    pub fn schedule_load(&mut self, client: u64, owner: u64, keys: &[Key], now: f64, not_before: f64) -> Option<TransferId> {
        let now = self.settle_before_change(now);
        let mut seen = FxHashSet::default();
        if keys.is_empty()
            || keys.len() as u64 > self.capacity
            || !keys.iter().all(|k| seen.insert(*k))
            || keys.iter().any(|k| self.entries.get(k).is_none_or(|e| e.pending.is_some()))
        {
            return None;
        }
        for &k in keys {
            let e = self.entries.get_mut(&k).expect("checked");
            if e.pins == 0 {
                self.lru.remove(k);
            }
            e.pins += 1;
        }
        let id = self.new_id();
        self.transfers.insert(id, Transfer { kind: Kind::Load, client, owner, blocks: keys.to_vec(), deadline: None });
        self.submit(id, now, now.max(not_before));
        Some(id)
    }

    /// Withdraws a load whose request went away (its pins are released).
    pub fn cancel_load(&mut self, client: u64, id: TransferId, now: f64) {
        if self.transfers.get(&id).is_some_and(|t| t.kind == Kind::Load) {
            self.settle_before_change(now);
            let t = self.transfers.remove(&id).expect("checked");
            match &mut self.transport {
                Transport::Lanes { deadlines, .. } => {
                    deadlines.remove(&Deadline { at: t.deadline.expect("a queued load"), kind: Kind::Load, id });
                }
                Transport::Shared { service, .. } => {
                    service.cancel(id.0);
                }
            }
            self.unpin(&t.blocks);
        } else {
            self.clients[client as usize].done.retain(|(_, c)| !matches!(c, Completed::Load { id: i, .. } if *i == id));
        }
    }

    /// Applies every completion due by `now`; returns the rank's own, and whether any transfer
    /// of the pool completed since the rank last asked.
    pub fn tick(&mut self, client: u64, now: f64) -> (Vec<Completed>, bool) {
        self.now = if self.is_shared() { self.now.max(now) } else { now };
        self.complete_due(self.now);
        let epoch = self.completion_epoch;
        let c = &mut self.clients[client as usize];
        let progressed = std::mem::replace(&mut c.seen_epoch, epoch) != epoch;
        let mut out = Vec::new();
        while c.done.front().is_some_and(|(at, _)| *at <= now) {
            out.push(c.done.pop_front().expect("checked").1);
        }
        (out, progressed)
    }

    fn complete_due(&mut self, now: f64) {
        let mut due: Vec<(TransferId, f64)> = match &mut self.transport {
            Transport::Lanes { deadlines, .. } => {
                let mut v = Vec::new();
                while deadlines.first().is_some_and(|d| d.at <= now) {
                    let d = deadlines.pop_first().expect("checked");
                    v.push((d.id, d.at));
                }
                v
            }
            Transport::Shared { service, .. } => service.advance(now).into_iter().map(|(id, at)| (TransferId(id), at)).collect(),
        };
        due.sort_by(|(a, ta), (b, tb)| ta.total_cmp(tb).then(self.transfers[a].kind.cmp(&self.transfers[b].kind)).then(a.cmp(b)));
        for (id, at) in due {
            self.finish(id, at);
        }
    }

    fn finish(&mut self, id: TransferId, at: f64) {
        let t = self.transfers.remove(&id).expect("a due transfer");
        self.completion_epoch += 1;
        let done = if t.kind == Kind::Store {
            let hold = self.clients.get(t.client as usize).is_some_and(|c| c.hold_completed);
            for k in &t.blocks {
                let e = self.entries.get_mut(k).expect("a pending block");
                e.pending = None;
                e.pins += hold as u32;
            }
            if !hold {
                self.lru.touch_all(&t.blocks);
            }
            self.announce(&t.blocks);
            Completed::Store { owner: t.owner, id, blocks: t.blocks }
        } else {
            self.unpin(&t.blocks);
            Completed::Load { owner: t.owner, id, blocks: t.blocks }
        };
        if let Some(c) = self.clients.get_mut(t.client as usize) {
            c.done.push_back((at, done));
        }
    }

    /// When the rank next has something to learn: a completion, a shared pool's event (or a
    /// peer's completion it has not seen), or events waiting for it.
    pub fn next_deadline(&self, client: u64) -> Option<f64> {
        let c = &self.clients[client as usize];
        let events = c.events.as_ref().is_some_and(|e| !e.is_empty()).then_some(self.now);
        let transfers = match &self.transport {
            Transport::Lanes { deadlines, .. } => deadlines.first().map(|d| d.at),
            Transport::Shared { service, .. } => {
                [service.next_event(), c.done.front().map(|(at, _)| *at), (c.seen_epoch != self.completion_epoch).then_some(self.now)]
                    .into_iter()
                    .flatten()
                    .min_by(f64::total_cmp)
            }
        };
        [transfers, events].into_iter().flatten().min_by(f64::total_cmp)
    }

    /// A private lane's fixed completion time of a submitted transfer still in flight.
    pub fn transfer_deadline(&self, id: TransferId) -> Option<f64> {
        self.transfers.get(&id)?.deadline
    }

    pub fn has_transfer(&self, id: TransferId) -> bool {
        self.transfers.contains_key(&id)
    }

    /// Whether the rank still has transfers in flight or news to take.
    pub fn has_pending_work(&self, client: u64) -> bool {
        let c = &self.clients[client as usize];
        !c.done.is_empty() || c.events.as_ref().is_some_and(|e| !e.is_empty()) || self.transfers.values().any(|t| t.client == client)
    }

    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// (resident, used) blocks; used counts pending ones too.
    pub fn occupancy(&self) -> (u64, u64) {
        let resident = self.entries.values().filter(|e| e.pending.is_none()).count() as u64;
        (resident, self.entries.len() as u64)
    }

    /// A private tier's completions must have been applied before a later change; a shared
    /// pool is advanced to the change's time.
    fn settle_before_change(&mut self, now: f64) -> f64 {
        let now = now.max(self.now);
        match &self.transport {
            Transport::Lanes { deadlines, .. } => {
                debug_assert!(deadlines.first().is_none_or(|d| d.at >= now), "host completions must be applied first")
            }
            Transport::Shared { .. } => self.complete_due(now),
        }
        self.now = now;
        now
    }

    fn new_id(&mut self) -> TransferId {
        self.next_id += 1;
        TransferId(self.next_id - 1)
    }

    fn announce(&mut self, blocks: &[Key]) {
        if !self.keeps_meta() {
            return;
        }
        for e in self.stored_events(blocks) {
            self.publish(e);
        }
    }

    /// `Stored` events for `blocks` in order: one per run of parent-linked blocks.
    fn stored_events(&self, blocks: &[Key]) -> Vec<KvEventData> {
        let mut events: Vec<KvEventData> = Vec::new();
        for k in blocks {
            let Some(m) = self.meta.get(k) else { continue };
            let block = StoredBlock { block_hash: *k, tokens_hash: m.tokens_hash };
            match events.last_mut() {
                Some(KvEventData::Stored { blocks, .. }) if blocks.last().map(|b| b.block_hash) == m.parent => blocks.push(block),
                _ => events.push(KvEventData::Stored { parent_hash: m.parent, blocks: vec![block] }),
            }
        }
        events
    }

    fn publish(&mut self, e: KvEventData) {
        for c in &mut self.clients {
            if let Some(events) = &mut c.events {
                events.push(e.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MB: u64 = 1_000_000;

    fn tier(capacity: u64) -> (HostTier, u64) {
        let mut t = HostTier::new(capacity, MB, None);
        let c = t.register(HostLink { d2h_gbps: 1.0, h2d_gbps: 1.0, latency_ms: 0.0 });
        (t, c)
    }

    /// Stores `keys` at `now` and lets the copy land.
    fn seed(t: &mut HostTier, c: u64, keys: &[Key], now: f64) -> f64 {
        assert!(matches!(t.prepare_store(c, 0, keys, None, now), StoreOutcome::Prepared(_)));
        t.submit_prepared_stores(c, now);
        let at = t.next_deadline(c).unwrap();
        let (done, progressed) = t.tick(c, at);
        assert!(progressed && matches!(done[..], [Completed::Store { .. }]));
        at
    }

    #[test]
    fn stores_land_after_their_bytes_and_evict_the_least_recent() {
        let (mut t, c) = tier(2);
        // 1 MB at 1 GB/s: 1 ms per block; a pending block is not a hit.
        assert!(matches!(t.prepare_store(c, 0, &[1, 2], None, 0.0), StoreOutcome::Prepared(_)));
        assert_eq!(t.lookup(1), Lookup::Pending);
        t.submit_prepared_stores(c, 0.0);
        assert_eq!(t.next_deadline(c), Some(2.0));
        t.tick(c, 2.0);
        assert_eq!((t.lookup(1), t.lookup(2)), (Lookup::Hit, Lookup::Hit));
        t.touch(1);
        // Block 2 is now the least recent: a store of 3 evicts it.
        seed(&mut t, c, &[3], 2.0);
        assert_eq!((t.lookup(1), t.lookup(2), t.lookup(3)), (Lookup::Hit, Lookup::Miss, Lookup::Hit));
        // A store protects its own blocks and cannot evict pinned ones.
        let load = t.schedule_load(c, 7, &[1, 3], 3.0, 3.0).unwrap();
        assert_eq!(t.prepare_store(c, 0, &[4], None, 3.0), StoreOutcome::RetryCapacity);
        assert_eq!(t.transfer_deadline(load), Some(5.0));
        let (done, _) = t.tick(c, 5.0);
        assert!(matches!(&done[..], [Completed::Load { owner: 7, .. }]));
        assert!(matches!(t.prepare_store(c, 0, &[4], None, 5.0), StoreOutcome::Prepared(_)));
    }

    #[test]
    fn loads_wait_for_their_fence_and_queue_behind_each_other() {
        let (mut t, c) = tier(4);
        let now = seed(&mut t, c, &[1, 2], 0.0);
        assert_eq!(now, 2.0);
        let a = t.schedule_load(c, 1, &[1], now, 10.0).unwrap();
        let b = t.schedule_load(c, 2, &[2], now, now).unwrap();
        assert_eq!(t.transfer_deadline(a), Some(11.0));
        assert_eq!(t.transfer_deadline(b), Some(12.0), "the second load starts when the first ends");
    }

    #[test]
    fn listeners_hear_stores_and_evictions() {
        let (mut t, c) = tier(1);
        t.subscribe(c);
        let meta = [BlockMeta { parent: None, tokens_hash: 10, position: 0 }];
        t.prepare_store(c, 0, &[1], Some(&meta), 0.0);
        t.submit_prepared_stores(c, 0.0);
        t.tick(c, 1.0);
        assert_eq!(
            t.take_events(c),
            vec![KvEventData::Stored { parent_hash: None, blocks: vec![StoredBlock { block_hash: 1, tokens_hash: 10 }] }]
        );
        let meta = [BlockMeta { parent: None, tokens_hash: 20, position: 0 }];
        t.prepare_store(c, 0, &[2], Some(&meta), 1.0);
        assert_eq!(t.take_events(c), vec![KvEventData::Removed { block_hashes: vec![1] }]);
    }
}
