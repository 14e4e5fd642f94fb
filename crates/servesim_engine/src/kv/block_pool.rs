//! The vLLM-faithful block pool ("native" G1 pool of Dynamo's mocker).
//!
//! - Physical capacity is `num_gpu_blocks` slots. A slot is free, *private* (held, not yet
//!   computed, not cache-visible) or *cached* (has a sequence hash).
//! - A block becomes cache-visible only once its tokens are computed (`register_run`).
//!   Several physical copies of one hash may exist; `Stored` is announced only when the first
//!   copy appears and `Removed` only when the last is evicted.
//! - Cached blocks with no holders are *inactive*: still hits, evictable from the head of an
//!   LRU list. Holders release leaf first, so a chain's tail is evicted before its prefix.
//! - Allocation takes free slots before evicting anything, and is all-or-nothing.
//! - With native offload, a block being copied to the host tier has a *reader* (the store)
//!   until the copy lands. Its slot may be evicted and handed out meanwhile; the new owner must
//!   not write it before the copy ends (a fence, `claim_fresh`), and its own content cannot be
//!   stored before then either. A cluster-shared host pool instead holds such blocks (an extra
//!   reference) until their copy ends.

use super::copy_index::{CopyIndex, Probe};
use super::events::{EventSink, KvEventData, StoredBlock};
use rustc_hash::{FxHashMap, FxHashSet};

pub type SlotId = u32;
const NIL: SlotId = SlotId::MAX;

/// 24 bytes, so that a 65,536-block pool's slots and its index fit in L2 together: the
/// eviction path reads cold slots, and measured side by side the last-level misses there were
/// the replay's largest cost.
#[derive(Clone, Copy, Debug)]
struct Slot {
    hash: u64,
    /// Holders in the low 31 bits; the top bit is set once the block is cache-visible.
    state: u32,
    prev: SlotId,
    next: SlotId,
    /// The next younger visible copy of the same hash.
    next_copy: SlotId,
}

const CACHED: u32 = 1 << 31;

impl Slot {
    fn refs(&self) -> u32 {
        self.state & !CACHED
    }
    fn cached(&self) -> bool {
        self.state & CACHED != 0
    }
}

#[derive(Debug)]
pub struct BlockPool {
    slots: Vec<Slot>,
    free: Vec<SlotId>,
    /// Inactive cached blocks, least recently released at the head.
    lru_head: SlotId,
    lru_tail: SlotId,
    inactive: u32,
    /// The oldest cache-visible copy of each hash (lookups use it); younger copies chain
    /// from it through `next_copy`. Holds slot ids with 32 bits of their hash, so a probe
    /// reads no slot but a likely match, and an eviction finds its entry by slot id.
    /// Profiled: the bucket miss in `evict_head` was the replay's largest single stall, and
    /// in wasm the index's group probing (see `copy_index.rs`).
    copies: CopyIndex,
    pub events: EventSink,
    evicted: Vec<u64>,
    /// Native offload only: stores still reading slots (absent otherwise, so the ordinary pool
    /// pays nothing).
    readers: Option<Box<Readers>>,
}

/// The stores (host-tier transfer ids) reading slots. A slot keeps its last reader's id after
/// the store lands; only ids in `pending` count.
#[derive(Debug, Default)]
struct Readers {
    of_slot: FxHashMap<SlotId, u64>,
    pending: FxHashSet<u64>,
    /// Hold a store's sources (an extra reference each) until it lands.
    hold: bool,
    held: FxHashMap<u64, Vec<SlotId>>,
}

impl BlockPool {
    pub fn new(capacity: u32, events: EventSink) -> Self {
        let empty = Slot { hash: 0, state: 0, prev: NIL, next: NIL, next_copy: NIL };
        BlockPool {
            slots: vec![empty; capacity as usize],
            // Popped from the back: slot 0 is handed out first.
            free: (0..capacity).rev().collect(),
            lru_head: NIL,
            lru_tail: NIL,
            inactive: 0,
            copies: CopyIndex::new(capacity),
            events,
            evicted: Vec::new(),
            readers: None,
        }
    }

    /// Tracks which slots stores to the host tier still read; `hold` keeps them referenced
    /// until their copy lands (a cluster-shared host pool) instead of fencing their next owner.
    pub fn track_store_readers(&mut self, hold: bool) {
        self.readers = Some(Box::new(Readers { hold, ..Readers::default() }));
    }

    /// The store still reading `slot`, if any.
    pub fn pending_reader(&self, slot: SlotId) -> Option<u64> {
        let r = self.readers.as_deref()?;
        r.of_slot.get(&slot).copied().filter(|id| r.pending.contains(id))
    }

    /// Whether store `id` may read `slots`: none is read by another pending store.
    pub fn can_attach_reader(&self, slots: &[SlotId]) -> bool {
        let mut seen = FxHashSet::default();
        slots.iter().all(|&s| seen.insert(s) && self.pending_reader(s).is_none())
    }

    /// Store `id` reads `slots` until [`BlockPool::reader_done`].
    pub fn attach_reader(&mut self, slots: &[SlotId], id: u64) {
        let r = self.readers.as_deref_mut().expect("store readers are tracked");
        r.pending.insert(id);
        for &s in slots {
            r.of_slot.insert(s, id);
        }
        if r.hold {
            r.held.insert(id, slots.to_vec());
            for &s in slots {
                if self.slots[s as usize].refs() == 0 {
                    self.unlink(s);
                }
                self.slots[s as usize].state += 1;
            }
        }
    }

    /// Store `id`'s copy landed: its slots are free of it (a holding pool lets them go, leaf
    /// first, as a request would).
    pub fn reader_done(&mut self, id: u64) {
        let Some(r) = self.readers.as_deref_mut() else { return };
        if !r.pending.remove(&id) {
            return;
        }
        if let Some(slots) = r.held.remove(&id) {
            for &s in slots.iter().rev() {
                self.release(s);
            }
        }
    }

    /// Slots held by stores still in flight (a holding pool's extra references).
    pub fn held_by_stores(&self) -> usize {
        self.readers.as_deref().map_or(0, |r| r.held.values().map(Vec::len).sum())
    }

    /// Fresh slots just reserved (`fresh`, the first `from_free` taken from the free list, the
    /// rest evicted, in `reserve`'s order): the pending stores that still read them, which the
    /// new owner's writes must wait for. The readers are handed to the slots in the order the
    /// reference hands out its anonymous capacity — evicted capacity last in first, then the
    /// free list's — so a later eviction finds them on the same blocks.
    pub fn claim_fresh(&mut self, fresh: &[SlotId], from_free: usize) -> Vec<u64> {
        let Some(r) = self.readers.as_deref_mut() else { return Vec::new() };
        if !fresh.iter().any(|s| r.of_slot.contains_key(s)) {
            return Vec::new();
        }
        let tags: Vec<Option<u64>> = fresh.iter().map(|s| r.of_slot.remove(s)).collect();
        let (from_list, evicted) = tags.split_at(from_free);
        let mut deps = Vec::new();
        for (&s, &tag) in fresh.iter().zip(evicted.iter().rev().chain(from_list)) {
            if let Some(t) = tag {
                r.of_slot.insert(s, t);
                if r.pending.contains(&t) && !deps.contains(&t) {
                    deps.push(t);
                }
            }
        }
        deps
    }

    pub fn capacity(&self) -> u32 {
        self.slots.len() as u32
    }

    /// Distinct physical blocks held by at least one request.
    pub fn active(&self) -> u32 {
        self.capacity() - self.free.len() as u32 - self.inactive
    }

    pub fn inactive(&self) -> u32 {
        self.inactive
    }

    pub fn free(&self) -> u32 {
        self.free.len() as u32
    }

    /// The slot a prefix hit on `hash` would pin, if the hash is cache-visible.
    pub fn lookup(&self, hash: u64) -> Option<SlotId> {
        let slots = &self.slots;
        match self.copies.probe(hash, |s| slots[s as usize].hash == hash) {
            Probe::Found(_, s) => Some(s),
            Probe::Vacant(_) => None,
        }
    }

    /// Every cache-visible hash, sorted: what a router's indexer fed by this pool's events
    /// should hold (for tests).
    /// How many blocks are cache-visible (`cached_hashes().len()`, without building it).
    pub fn cached_count(&self) -> u32 {
        self.copies.len() as u32
    }

    pub fn cached_hashes(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self.copies.slots().map(|s| self.slots[s as usize].hash).collect();
        v.sort_unstable();
        v
    }

    pub fn is_held(&self, slot: SlotId) -> bool {
        self.slots[slot as usize].refs() > 0
    }

    /// Pins `hits` and allocates `fresh` private slots, appending all to `out`; or changes
    /// nothing and returns false when free + evictable (not counting the hits) is too small.
    pub fn reserve(&mut self, hits: &[SlotId], fresh: u32, out: &mut Vec<SlotId>) -> bool {
        let pinned_inactive = hits.iter().filter(|&&s| self.slots[s as usize].refs() == 0).count() as u32;
        if fresh > self.free.len() as u32 + self.inactive - pinned_inactive {
            return false;
        }
        for &s in hits {
            if self.slots[s as usize].refs() == 0 {
                self.unlink(s);
            }
            self.slots[s as usize].state += 1;
            out.push(s);
        }
        for _ in 0..fresh {
            let s = match self.free.pop() {
                Some(s) => s,
                None => self.evict_head(),
            };
            let slot = &mut self.slots[s as usize];
            slot.state = 1;
            out.push(s);
        }
        if !self.evicted.is_empty() {
            let block_hashes = std::mem::take(&mut self.evicted);
            self.events.push(KvEventData::Removed { block_hashes });
        }
        true
    }

    /// Makes a request's newly computed full blocks cache-visible, in order. `parent` is the
    /// sequence hash of the block before `run[0]`. Announces each maximal group of blocks whose
    /// hash had no visible copy as one `Stored` event.
    pub fn register_run(&mut self, parent: Option<u64>, run: &[(SlotId, u64, u64)]) {
        let announce = self.events.enabled;
        let mut group: Vec<StoredBlock> = Vec::new();
        let mut group_parent = parent;
        let mut prev = parent;
        for &(s, hash, local) in run {
            let slot = &mut self.slots[s as usize];
            debug_assert!(!slot.cached() && slot.refs() > 0, "registering a block that is not private");
            slot.state |= CACHED;
            slot.hash = hash;
            slot.next_copy = NIL;
            let slots = &self.slots;
            let first = match self.copies.probe(hash, |c| slots[c as usize].hash == hash) {
                Probe::Vacant(at) => {
                    self.copies.insert_at(at, hash, s);
                    true
                }
                Probe::Found(_, mut c) => {
                    while self.slots[c as usize].next_copy != NIL {
                        c = self.slots[c as usize].next_copy;
                    }
                    self.slots[c as usize].next_copy = s;
                    false
                }
            };
            if !announce {
                continue;
            }
            if first {
                if group.is_empty() {
                    group_parent = prev;
                }
                group.push(StoredBlock { block_hash: hash, tokens_hash: local });
            } else if !group.is_empty() {
                let blocks = std::mem::take(&mut group);
                self.events.push(KvEventData::Stored { parent_hash: group_parent, blocks });
            }
            prev = Some(hash);
        }
        if !group.is_empty() {
            self.events.push(KvEventData::Stored { parent_hash: group_parent, blocks: group });
        }
    }

    /// Drops one hold on `slot`: a private block is freed at once; a cached block with no
    /// holders left joins the LRU tail. Callers release a request's blocks leaf first.
    pub fn release(&mut self, s: SlotId) {
        let slot = &mut self.slots[s as usize];
        debug_assert!(slot.refs() > 0, "releasing an unheld block");
        slot.state -= 1;
        if slot.refs() > 0 {
            return;
        }
        if slot.cached() {
            self.push_tail(s);
        } else {
            self.free.push(s);
        }
    }

    fn evict_head(&mut self) -> SlotId {
        let s = self.lru_head;
        debug_assert!(s != NIL, "evicting from an empty LRU");
        self.unlink(s);
        let Slot { hash, next_copy, .. } = self.slots[s as usize];
        self.slots[s as usize].state &= !CACHED;
        // The head copy is found by its slot id alone; a younger copy by its hash.
        if let Probe::Found(at, _) = self.copies.probe(hash, |c| c == s) {
            if next_copy == NIL {
                // The last copy is gone: the router must forget the block.
                self.copies.remove_at(at);
                if self.events.enabled {
                    self.evicted.push(hash);
                }
            } else {
                self.copies.replace_at(at, next_copy);
            }
        } else {
            let mut c = self.lookup(hash).expect("an evicted block is cache-visible");
            while self.slots[c as usize].next_copy != s {
                c = self.slots[c as usize].next_copy;
            }
            self.slots[c as usize].next_copy = next_copy;
        }
        s
    }

    fn push_tail(&mut self, s: SlotId) {
        let tail = self.lru_tail;
        {
            let slot = &mut self.slots[s as usize];
            slot.prev = tail;
            slot.next = NIL;
        }
        if tail == NIL {
            self.lru_head = s;
        } else {
            self.slots[tail as usize].next = s;
        }
        self.lru_tail = s;
        self.inactive += 1;
    }

    fn unlink(&mut self, s: SlotId) {
        let Slot { prev, next, .. } = self.slots[s as usize];
        if prev == NIL {
            self.lru_head = next;
        } else {
            self.slots[prev as usize].next = next;
        }
        if next == NIL {
            self.lru_tail = prev;
        } else {
            self.slots[next as usize].prev = prev;
        }
        let slot = &mut self.slots[s as usize];
        slot.prev = NIL;
        slot.next = NIL;
        self.inactive -= 1;
    }

    /// Slot `s` as the inspector shows it: its hash if cache-visible, and how many requests
    /// hold it. Read-only; nothing in the engine calls it.
    pub fn slot_view(&self, s: SlotId) -> (Option<u64>, u32) {
        let slot = &self.slots[s as usize];
        (slot.cached().then_some(slot.hash), slot.refs())
    }

    /// Checks the pool's bookkeeping; used by tests and debug builds.
    pub fn check(&self) -> Result<(), String> {
        let held = self.slots.iter().filter(|s| s.refs() > 0).count() as u32;
        if held != self.active() {
            return Err(format!("held {} != active {}", held, self.active()));
        }
        let mut n = 0;
        let mut s = self.lru_head;
        while s != NIL {
            let slot = &self.slots[s as usize];
            if slot.refs() != 0 || !slot.cached() {
                return Err(format!("slot {s} in the LRU is held or not cached"));
            }
            n += 1;
            s = slot.next;
        }
        if n != self.inactive {
            return Err(format!("LRU length {n} != inactive {}", self.inactive));
        }
        if self.free.len() as u32 + self.inactive + held != self.capacity() {
            return Err("free + inactive + active != capacity".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(n: u32) -> BlockPool {
        BlockPool::new(n, EventSink::new(true, 0))
    }

    fn events(p: &mut BlockPool) -> Vec<KvEventData> {
        let mut v = Vec::new();
        p.events.drain_into(&mut v);
        v.into_iter().map(|e| e.data).collect()
    }

    #[test]
    fn duplicates_consume_capacity_but_share_visibility() {
        let mut p = pool(4);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        assert!(p.reserve(&[], 1, &mut a));
        assert!(p.reserve(&[], 1, &mut b));
        p.register_run(None, &[(a[0], 7, 70)]);
        p.register_run(None, &[(b[0], 7, 70)]);
        assert_eq!(p.active(), 2);
        assert_eq!(events(&mut p).len(), 1, "only the first copy is announced");
        p.release(a[0]);
        p.release(b[0]);
        // Evict both copies: only the last one is reported.
        let mut c = Vec::new();
        assert!(p.reserve(&[], 4, &mut c));
        assert_eq!(events(&mut p), vec![KvEventData::Removed { block_hashes: vec![7] }]);
        p.check().unwrap();
    }

    #[test]
    fn failed_reservation_is_atomic_and_pins_are_not_evictable() {
        let mut p = pool(3);
        let mut a = Vec::new();
        assert!(p.reserve(&[], 2, &mut a));
        p.register_run(None, &[(a[0], 1, 1), (a[1], 2, 2)]);
        p.release(a[1]);
        p.release(a[0]);
        let hit = p.lookup(1).unwrap();
        let mut b = Vec::new();
        // 1 free + 2 inactive, one of which is the pinned hit: 2 fresh fit, 3 do not.
        assert!(!p.reserve(&[hit], 3, &mut b));
        assert!(b.is_empty());
        assert_eq!((p.free(), p.inactive()), (1, 2));
        assert!(p.reserve(&[hit], 2, &mut b));
        assert_eq!(p.lookup(2), None, "the unpinned leaf was evicted");
        assert_eq!(p.lookup(1), Some(hit));
        p.check().unwrap();
    }

    /// `check` itself: a pool whose counts balance but whose LRU list holds a slot that is held
    /// or not cached is reported.
    #[test]
    fn check_reports_a_held_or_uncached_slot_in_the_lru() {
        // Slot 0 cached and inactive (in the LRU), slot 1 private and held; then `corrupt`.
        let check_after = |corrupt: fn(&mut BlockPool)| {
            let mut p = pool(3);
            let mut a = Vec::new();
            assert!(p.reserve(&[], 2, &mut a));
            assert_eq!(a, vec![0, 1]);
            p.register_run(None, &[(0, 1, 1)]);
            p.release(0);
            p.check().unwrap();
            corrupt(&mut p);
            p.check()
        };
        let err = Err("slot 0 in the LRU is held or not cached".to_string());
        // Slot 1's hold moved onto slot 0: one slot held, one active, but it is in the LRU.
        assert_eq!(
            check_after(|p| {
                p.slots[0].state += 1;
                p.slots[1].state -= 1;
            }),
            err
        );
        // Slot 0 no longer cached, still in the LRU.
        assert_eq!(check_after(|p| p.slots[0].state &= !CACHED), err);
    }

    #[test]
    fn leaf_first_release_evicts_the_tail_before_the_prefix() {
        let mut p = pool(3);
        let mut a = Vec::new();
        assert!(p.reserve(&[], 3, &mut a));
        p.register_run(None, &[(a[0], 1, 1), (a[1], 2, 2), (a[2], 3, 3)]);
        for &s in a.iter().rev() {
            p.release(s);
        }
        let mut b = Vec::new();
        assert!(p.reserve(&[], 1, &mut b));
        assert_eq!(p.lookup(3), None);
        assert!(p.lookup(2).is_some() && p.lookup(1).is_some());
    }

    #[test]
    fn free_slots_are_used_before_evicting() {
        let mut p = pool(3);
        let mut a = Vec::new();
        assert!(p.reserve(&[], 2, &mut a));
        p.register_run(None, &[(a[0], 1, 1)]);
        p.release(a[1]); // private: freed at once
        p.release(a[0]);
        let mut b = Vec::new();
        assert!(p.reserve(&[], 2, &mut b));
        assert!(p.lookup(1).is_some(), "two free slots, nothing evicted");
    }

    #[test]
    fn stored_groups_split_at_duplicates_and_carry_the_parent() {
        let mut p = pool(6);
        let mut a = Vec::new();
        assert!(p.reserve(&[], 1, &mut a));
        p.register_run(None, &[(a[0], 20, 2)]);
        events(&mut p);
        let mut b = Vec::new();
        assert!(p.reserve(&[], 3, &mut b));
        p.register_run(Some(5), &[(b[0], 10, 1), (b[1], 20, 2), (b[2], 30, 3)]);
        let ev = events(&mut p);
        assert_eq!(ev.len(), 2);
        assert_eq!(ev[0], KvEventData::Stored { parent_hash: Some(5), blocks: vec![StoredBlock { block_hash: 10, tokens_hash: 1 }] });
        assert_eq!(ev[1], KvEventData::Stored { parent_hash: Some(20), blocks: vec![StoredBlock { block_hash: 30, tokens_hash: 3 }] });
    }
}
