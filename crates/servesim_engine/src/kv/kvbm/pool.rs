//! The kvbm manager seen through the handle interface the vLLM scheduler drives
//! (`kv_manager: "kvbm"`), so one scheduler runs over either manager.
//!
//! A request holds *handles* (`SlotId`s), one per block: a handle names a partial block
//! (still being computed, private) or a full block (shared by everyone who hits it). As in
//! the native pool, fresh blocks start partial and become full — cache-visible, announced —
//! once their tokens are computed (`register_run`, kvbm's Promote). When a promoted block
//! turns out to exist already, the request's handle is redirected to the existing one and the
//! partial slot goes back to the pool.

use super::{BlockRef, FullBlock, KvbmManager, UseOutcome};
use crate::args::EvictionBackend;
use crate::kv::{EventSink, SlotId};
use rustc_hash::FxHashMap;

#[derive(Clone, Copy, Debug)]
enum Handle {
    Unused,
    Partial(u64),
    Full(FullBlock),
}

#[derive(Debug)]
pub struct KvbmPool {
    mgr: KvbmManager,
    handles: Vec<Handle>,
    unused: Vec<SlotId>,
    /// The handle of each registered full block.
    by_hash: FxHashMap<u64, SlotId>,
    next_partial: u64,
    scratch: Vec<BlockRef>,
}

impl KvbmPool {
    pub fn new(capacity: u32, backend: EvictionBackend, events: EventSink) -> Self {
        KvbmPool {
            mgr: KvbmManager::new(capacity, backend, events),
            // Every handle names a distinct occupied slot, so `capacity` handles suffice.
            handles: vec![Handle::Unused; capacity as usize],
            unused: (0..capacity).rev().collect(),
            by_hash: FxHashMap::default(),
            next_partial: 0,
            scratch: Vec::new(),
        }
    }

    pub fn events(&mut self) -> &mut EventSink {
        &mut self.mgr.events
    }

    pub fn active(&self) -> u32 {
        self.mgr.active()
    }

    pub fn inactive(&self) -> u32 {
        self.mgr.inactive()
    }

    pub fn free(&self) -> u32 {
        self.mgr.free()
    }

    pub fn lookup(&self, hash: u64) -> Option<SlotId> {
        self.by_hash.get(&hash).copied()
    }

    pub fn is_held(&self, h: SlotId) -> bool {
        match self.handles[h as usize] {
            Handle::Full(fb) => self.mgr.lookup(fb.hash) == Some(true),
            Handle::Partial(_) => true,
            Handle::Unused => false,
        }
    }

    pub fn cached_count(&self) -> u32 {
        self.mgr.registered_count() as u32
    }

    pub fn cached_hashes(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self.mgr.registered().collect();
        v.sort_unstable();
        v
    }

    /// Takes a reference on each hit and `fresh` partial blocks; all or nothing, like the
    /// native pool (the scheduler's admission rule assumes it).
    pub fn reserve(&mut self, hits: &[SlotId], fresh: u32, out: &mut Vec<SlotId>) -> bool {
        let pinned_inactive = hits.iter().filter(|&&h| !self.is_held(h)).count() as u32;
        if fresh > self.mgr.free() + self.mgr.inactive() - pinned_inactive {
            return false;
        }
        let mut blocks = std::mem::take(&mut self.scratch);
        blocks.clear();
        for &h in hits {
            let Handle::Full(fb) = self.handles[h as usize] else { unreachable!("a hit is a full block") };
            blocks.push(BlockRef::Full(fb));
        }
        let first_partial = self.next_partial;
        for _ in 0..fresh {
            blocks.push(BlockRef::Partial(self.next_partial));
            self.next_partial += 1;
        }
        let outcomes = self.mgr.use_blocks(&blocks, None);
        debug_assert_eq!(outcomes.len(), blocks.len(), "the capacity check guarantees every block a slot");
        self.scratch = blocks;
        self.forget_evicted();
        out.extend_from_slice(hits);
        for id in first_partial..self.next_partial {
            let h = self.unused.pop().expect("a handle per occupied slot");
            self.handles[h as usize] = Handle::Partial(id);
            out.push(h);
        }
        true
    }

    fn forget_evicted(&mut self) {
        for hash in self.mgr.take_evicted() {
            let h = self.by_hash.remove(&hash).expect("an evicted block has a handle");
            self.handles[h as usize] = Handle::Unused;
            self.unused.push(h);
        }
    }

    /// Promotes newly computed blocks, in sequence order from block `first_position`.
    /// A block whose hash is already registered is merged into it: its entry in `run` is
    /// rewritten to the existing handle, which the caller must hold from now on.
    pub fn register_run(&mut self, parent: Option<u64>, first_position: u32, run: &mut [(SlotId, u64, u64)]) {
        let mut prev = parent;
        for (i, entry) in run.iter_mut().enumerate() {
            let (h, hash, local) = *entry;
            let Handle::Partial(id) = self.handles[h as usize] else { unreachable!("promoting a block that is not partial") };
            let fb = FullBlock { hash, local, position: first_position + i as u32, parent: prev };
            match self.mgr.promote(id, fb) {
                UseOutcome::NewStore => {
                    self.handles[h as usize] = Handle::Full(fb);
                    self.by_hash.insert(hash, h);
                }
                UseOutcome::ActiveHit | UseOutcome::InactiveHit => {
                    self.handles[h as usize] = Handle::Unused;
                    self.unused.push(h);
                    entry.0 = self.by_hash[&hash];
                }
            }
            prev = Some(hash);
        }
    }

    /// Drops one reference: a partial block is freed, a full one may become evictable.
    pub fn release(&mut self, h: SlotId) {
        match self.handles[h as usize] {
            Handle::Partial(id) => {
                self.mgr.deref_blocks(&[BlockRef::Partial(id)]);
                self.handles[h as usize] = Handle::Unused;
                self.unused.push(h);
            }
            Handle::Full(fb) => self.mgr.deref_blocks(&[BlockRef::Full(fb)]),
            Handle::Unused => unreachable!("releasing an unused handle"),
        }
    }

    pub fn check(&self) -> Result<(), String> {
        self.mgr.check()?;
        if self.by_hash.len() != self.mgr.registered().count() {
            return Err(format!("{} handles for {} registered blocks", self.by_hash.len(), self.mgr.registered().count()));
        }
        Ok(())
    }
}
