//! The block pool's hash index: block hash → the slot of its oldest cache-visible copy.
//!
//! A flat open-addressing table with linear probing, sized once from the pool's capacity
//! (it never holds more entries than the pool has slots, so it never grows and is at most
//! half full). Each bucket is 8 bytes: the hash's top 32 bits, which also pick the home
//! bucket, and the slot id. A probe compares the stored bits before it reads any slot, so
//! a miss reads no slot at all, and a bucket's home is known from the bucket alone, which
//! lets a removal shift its followers back instead of leaving tombstones.
//!
//! Why not `hashbrown`: its group probing is SSE2 natively but a byte-by-byte fallback in
//! wasm32 without SIMD, where the index's lookups were the largest item of a replay's
//! profile. Block hashes are XXH3 outputs, used as they are.

use super::block_pool::SlotId;

const EMPTY: u64 = u64::MAX;

#[derive(Debug)]
pub struct CopyIndex {
    buckets: Vec<u64>,
    mask: usize,
    len: usize,
}

/// Where a hash's probe ended: at the bucket holding a matching entry, or at the empty
/// bucket an insert would take.
pub enum Probe {
    Found(usize, SlotId),
    Vacant(usize),
}

#[inline]
fn tag(hash: u64) -> u64 {
    hash >> 32
}

#[inline]
fn slot_of(bucket: u64) -> SlotId {
    bucket as SlotId
}

impl CopyIndex {
    /// An index for a pool of `capacity` slots.
    pub fn new(capacity: u32) -> Self {
        let n = (capacity as usize * 2).next_power_of_two().max(8);
        CopyIndex { buckets: vec![EMPTY; n], mask: n - 1, len: 0 }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    fn home(&self, tag: u64) -> usize {
        tag as usize & self.mask
    }

    /// Probes for the entry of `hash` whose slot satisfies `is`: `is` is asked only about
    /// entries whose stored bits match.
    #[inline]
    pub fn probe(&self, hash: u64, mut is: impl FnMut(SlotId) -> bool) -> Probe {
        let t = tag(hash);
        let mut i = self.home(t);
        loop {
            let b = self.buckets[i];
            if b == EMPTY {
                return Probe::Vacant(i);
            }
            if b >> 32 == t && is(slot_of(b)) {
                return Probe::Found(i, slot_of(b));
            }
            i = (i + 1) & self.mask;
        }
    }

    /// Fills the empty bucket `at` (from a `Probe::Vacant` of `hash`, with no change since).
    pub fn insert_at(&mut self, at: usize, hash: u64, slot: SlotId) {
        debug_assert!(self.buckets[at] == EMPTY && self.len < self.mask);
        self.buckets[at] = (tag(hash) << 32) | slot as u64;
        self.len += 1;
    }

    /// Points the entry at bucket `at` to another slot of the same hash.
    pub fn replace_at(&mut self, at: usize, slot: SlotId) {
        let b = &mut self.buckets[at];
        *b = (*b & !(SlotId::MAX as u64)) | slot as u64;
    }

    /// Removes the entry at bucket `at`, moving back the entries after it that probing
    /// would otherwise no longer reach.
    pub fn remove_at(&mut self, mut at: usize) {
        let mut j = at;
        loop {
            j = (j + 1) & self.mask;
            let b = self.buckets[j];
            if b == EMPTY {
                break;
            }
            let home = self.home(b >> 32);
            // The entry at `j` stays unless the hole lies cyclically in [home, j).
            if (j.wrapping_sub(home) & self.mask) >= (j.wrapping_sub(at) & self.mask) {
                self.buckets[at] = b;
                at = j;
            }
        }
        self.buckets[at] = EMPTY;
        self.len -= 1;
    }

    /// Every entry's slot, in no particular order.
    pub fn slots(&self) -> impl Iterator<Item = SlotId> + '_ {
        self.buckets.iter().filter(|&&b| b != EMPTY).map(|&b| slot_of(b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The index against a plain map under inserts and removals whose hashes collide in
    /// their home buckets (a tiny table, hashes chosen to share top bits).
    #[test]
    fn agrees_with_a_map_through_collisions_and_removals() {
        let mut ix = CopyIndex::new(8); // 16 buckets
        let mut model = std::collections::HashMap::new();
        // A deterministic walk: insert or remove keys whose top bits fall in a few buckets.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for step in 0..4000u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Homes among buckets 14, 15, 0, 1 (wrapping); the tags and low bits vary.
            let home = (14 + x % 4) % 16;
            let tag = home | (((x >> 20) & 3) << 4);
            let key = (tag << 32) | ((x >> 40) % 6);
            match ix.probe(key, |s| model.get(&key) == Some(&s)) {
                Probe::Found(at, _) => {
                    ix.remove_at(at);
                    model.remove(&key);
                }
                Probe::Vacant(at) if model.len() < 8 => {
                    ix.insert_at(at, key, step);
                    model.insert(key, step);
                }
                Probe::Vacant(_) => {}
            }
            assert_eq!(ix.len(), model.len());
            for (&k, &s) in &model {
                assert!(matches!(ix.probe(k, |c| c == s), Probe::Found(_, c) if c == s), "key {k:x} lost at step {step}");
            }
        }
    }
}
