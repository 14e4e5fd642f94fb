//! A kvbm-style logical block manager: the alternative to the native vLLM pool
//! (`kv_manager: "kvbm"`), with a choice of eviction backend for its inactive blocks.
//!
//! Blocks are *full* (identified by their sequence hash; shareable) or *partial* (still
//! filling, private to one request, named by an id). The pool's slots are free, *active*
//! (referenced) or *inactive* (registered, unreferenced, still a cache hit, evictable).
//! Requests speak the `MoveBlock` protocol:
//! - `use_blocks`: for each block in order, an active hit takes one more reference, an
//!   inactive hit comes back to life, anything else takes a free slot (evicting an inactive
//!   block if none is free) and is registered. It stops at the first block that cannot get
//!   a slot. New full blocks are announced in one `Stored` event whose parent is the last
//!   block before them that was *reused* (hits advance the cursor, new stores do not).
//! - `deref_blocks`: one reference less each; a partial block's slot is freed, a full block
//!   at zero references becomes inactive. No events.
//! - `promote`: a partial block fills up and becomes full: merged into an existing copy if
//!   the hash is known, otherwise registered and announced alone.
//!
//! Evicting an inactive block announces `Removed`.

pub mod lineage;
pub mod lru;
pub mod multi_lru;
pub mod pool;
pub mod tinylfu;

use super::events::{EventSink, KvEventData, StoredBlock};
use crate::args::EvictionBackend;
use rustc_hash::FxHashMap;

/// A full block's identity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FullBlock {
    /// Sequence hash (chained over the prefix): the router's identity.
    pub hash: u64,
    /// Hash of the block's own tokens.
    pub local: u64,
    /// Index of the block in its sequence.
    pub position: u32,
    /// Sequence hash of the block before it.
    pub parent: Option<u64>,
}

impl FullBlock {
    /// Positional lineage hash: [2-bit mode][position][64-bit hash][low bits of the parent
    /// hash], with 8, 16 or 24 position bits by magnitude.
    pub fn plh(&self) -> u128 {
        let (mode, pos_bits) = match self.position {
            p if p < 1 << 8 => (0u128, 8),
            p if p < 1 << 16 => (1, 16),
            _ => (2, 24),
        };
        let frag_bits = 128 - 2 - pos_bits - 64;
        let parent = self.parent.unwrap_or(0) as u128 & ((1u128 << frag_bits) - 1);
        (mode << 126) | ((self.position as u128 & ((1 << pos_bits) - 1)) << (126 - pos_bits)) | ((self.hash as u128) << frag_bits) | parent
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockRef {
    Full(FullBlock),
    Partial(u64),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UseOutcome {
    ActiveHit,
    InactiveHit,
    NewStore,
}

#[derive(Clone, Debug)]
enum Evictor {
    Lineage(lineage::Lineage),
    Lru(lru::Lru),
    MultiLru(Box<multi_lru::MultiLru>),
}

impl Evictor {
    fn insert(&mut self, b: &FullBlock) {
        match self {
            Evictor::Lineage(e) => e.insert(b),
            Evictor::Lru(e) => e.insert(b),
            Evictor::MultiLru(e) => e.insert(b),
        }
    }
    fn remove(&mut self, hash: u64) -> bool {
        match self {
            Evictor::Lineage(e) => e.remove(hash),
            Evictor::Lru(e) => e.remove(hash),
            Evictor::MultiLru(e) => e.remove(hash),
        }
    }
    fn evict(&mut self) -> Option<u64> {
        match self {
            Evictor::Lineage(e) => e.evict(),
            Evictor::Lru(e) => e.evict(),
            Evictor::MultiLru(e) => e.evict(),
        }
    }
    fn touch(&mut self, b: &FullBlock) {
        if let Evictor::MultiLru(e) = self {
            e.touch(b);
        }
    }
    fn len(&self) -> usize {
        match self {
            Evictor::Lineage(e) => e.len(),
            Evictor::Lru(e) => e.len(),
            Evictor::MultiLru(e) => e.len(),
        }
    }
}

#[derive(Clone, Debug)]
struct Registered {
    block: FullBlock,
    refs: u32,
}

#[derive(Debug)]
pub struct KvbmManager {
    capacity: u32,
    /// Slots never used or given back.
    free: u32,
    /// Full blocks known to the pool (active or inactive), by sequence hash.
    registry: FxHashMap<u64, Registered>,
    partial: FxHashMap<u64, ()>,
    evictor: Evictor,
    pub events: EventSink,
    /// Hashes evicted since the last `take_evicted` (whoever maps blocks to handles must
    /// forget them, whether or not events are published).
    evicted: Vec<u64>,
}

impl KvbmManager {
    pub fn new(capacity: u32, backend: EvictionBackend, events: EventSink) -> Self {
        let evictor = match backend {
            EvictionBackend::Lineage => Evictor::Lineage(Default::default()),
            EvictionBackend::Lru => Evictor::Lru(Default::default()),
            EvictionBackend::MultiLru => Evictor::MultiLru(Box::new(multi_lru::MultiLru::new(capacity))),
        };
        KvbmManager {
            capacity,
            free: capacity,
            registry: FxHashMap::default(),
            partial: FxHashMap::default(),
            evictor,
            events,
            evicted: Vec::new(),
        }
    }

    pub fn capacity(&self) -> u32 {
        self.capacity
    }
    pub fn inactive(&self) -> u32 {
        self.evictor.len() as u32
    }
    /// Distinct physical blocks held.
    pub fn active(&self) -> u32 {
        self.capacity - self.free - self.inactive()
    }
    /// Slots neither registered nor partial.
    pub fn free(&self) -> u32 {
        self.free
    }
    /// Every registered (cache-visible) hash, in no particular order.
    pub fn registered_count(&self) -> usize {
        self.registry.len()
    }
    pub fn registered(&self) -> impl Iterator<Item = u64> + '_ {
        self.registry.keys().copied()
    }
    /// Hashes evicted since the last call.
    pub fn take_evicted(&mut self) -> std::vec::Drain<'_, u64> {
        self.evicted.drain(..)
    }
    /// Whether `hash` would be a hit, and whether someone holds it.
    pub fn lookup(&self, hash: u64) -> Option<bool> {
        self.registry.get(&hash).map(|r| r.refs > 0)
    }

    /// A free slot, evicting the backend's choice if none is left.
    fn take_slot(&mut self, removed: &mut Vec<u64>) -> bool {
        if self.free > 0 {
            self.free -= 1;
            return true;
        }
        match self.evictor.evict() {
            Some(hash) => {
                self.registry.remove(&hash);
                self.evicted.push(hash);
                removed.push(hash);
                true
            }
            None => false,
        }
    }

    fn flush_removed(&mut self, removed: Vec<u64>) {
        if !removed.is_empty() {
            self.events.push(KvEventData::Removed { block_hashes: removed });
        }
    }

    /// `Use`: returns the outcome of each block processed (fewer than asked when the pool
    /// ran out).
    pub fn use_blocks(&mut self, blocks: &[BlockRef], parent: Option<u64>) -> Vec<UseOutcome> {
        let mut outcomes = Vec::with_capacity(blocks.len());
        let mut removed = Vec::new();
        let mut stored = Vec::new();
        let mut cursor = parent;
        let mut stored_parent = None;
        for b in blocks {
            match *b {
                BlockRef::Partial(id) => {
                    if !self.take_slot(&mut removed) {
                        break;
                    }
                    self.partial.insert(id, ());
                    outcomes.push(UseOutcome::NewStore);
                }
                BlockRef::Full(fb) => {
                    let outcome = match self.registry.get_mut(&fb.hash) {
                        Some(r) if r.refs > 0 => {
                            r.refs += 1;
                            UseOutcome::ActiveHit
                        }
                        Some(r) => {
                            r.refs = 1;
                            self.evictor.remove(fb.hash);
                            UseOutcome::InactiveHit
                        }
                        None => {
                            if !self.take_slot(&mut removed) {
                                break;
                            }
                            self.registry.insert(fb.hash, Registered { block: fb, refs: 1 });
                            UseOutcome::NewStore
                        }
                    };
                    if outcome == UseOutcome::NewStore {
                        if stored.is_empty() {
                            stored_parent = cursor;
                        }
                        stored.push(StoredBlock { block_hash: fb.hash, tokens_hash: fb.local });
                    } else {
                        self.evictor.touch(&fb);
                        if stored.is_empty() {
                            cursor = Some(fb.hash);
                        }
                    }
                    outcomes.push(outcome);
                }
            }
        }
        self.flush_removed(removed);
        if !stored.is_empty() {
            self.events.push(KvEventData::Stored { parent_hash: stored_parent, blocks: stored });
        }
        outcomes
    }

    /// `Deref`: callers release leaf first (reverse sequence order).
    pub fn deref_blocks(&mut self, blocks: &[BlockRef]) {
        for b in blocks {
            match *b {
                BlockRef::Partial(id) => {
                    self.partial.remove(&id).expect("deref of an unknown partial block");
                    self.free += 1;
                }
                BlockRef::Full(fb) => {
                    let r = self.registry.get_mut(&fb.hash).expect("deref of an unknown block");
                    r.refs -= 1;
                    if r.refs == 0 {
                        let block = r.block;
                        self.evictor.insert(&block);
                    }
                }
            }
        }
    }

    /// `Promote`: partial block `id` is now full as `fb`.
    pub fn promote(&mut self, id: u64, fb: FullBlock) -> UseOutcome {
        self.partial.remove(&id).expect("promote of an unknown partial block");
        match self.registry.get_mut(&fb.hash) {
            Some(r) => {
                // Same content elsewhere: keep that copy, give the partial slot back.
                self.free += 1;
                let outcome = if r.refs > 0 { UseOutcome::ActiveHit } else { UseOutcome::InactiveHit };
                if r.refs == 0 {
                    self.evictor.remove(fb.hash);
                }
                r.refs += 1;
                self.evictor.touch(&fb);
                outcome
            }
            None => {
                self.registry.insert(fb.hash, Registered { block: fb, refs: 1 });
                self.events.push(KvEventData::Stored {
                    parent_hash: fb.parent,
                    blocks: vec![StoredBlock { block_hash: fb.hash, tokens_hash: fb.local }],
                });
                UseOutcome::NewStore
            }
        }
    }

    pub fn check(&self) -> Result<(), String> {
        let inactive = self.registry.values().filter(|r| r.refs == 0).count() as u32;
        if inactive != self.inactive() {
            return Err(format!("{inactive} unreferenced blocks, {} in the evictor", self.inactive()));
        }
        let used = self.registry.len() as u32 + self.partial.len() as u32;
        if used + self.free != self.capacity {
            return Err(format!("{used} used + {} free != {}", self.free, self.capacity));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
