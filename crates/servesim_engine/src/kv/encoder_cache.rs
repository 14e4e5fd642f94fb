//! The encoder cache: vision-encoder outputs kept by image hash, measured in image tokens
//! (vLLM v1's `EncoderCacheManager`).
//!
//! An entry is *referenced* while some request still has to prefill the image's tokens; once
//! every reference is gone it stays cached but *freeable*, so a later request with the same
//! image skips the encoder, until room is needed for a new entry: then the freeable entries go
//! oldest-freed first. Space is counted in tokens against `capacity`; referenced entries are
//! never evicted, so a request whose image does not fit waits (its prefill stops before the
//! image) until references drop.

use std::collections::{BTreeMap, HashMap};

#[derive(Clone, Debug)]
struct Entry {
    tokens: u32,
    /// Requests (by id) that still need this output.
    refs: Vec<u64>,
    /// While unreferenced: its place in the freeable order.
    freeable_at: Option<u64>,
}

#[derive(Clone, Debug)]
pub struct EncoderCache {
    capacity: u32,
    /// Tokens not held by any entry.
    free: u32,
    /// Tokens of unreferenced entries (still cached, evictable).
    freeable: u32,
    entries: HashMap<u64, Entry>,
    /// Unreferenced entries by when they became so: eviction order (a map, not the hash map's
    /// iteration order, so eviction is deterministic).
    freeable_order: BTreeMap<u64, u64>,
    next_tick: u64,
}

impl EncoderCache {
    pub fn new(capacity: u32) -> Self {
        EncoderCache { capacity, free: capacity, freeable: 0, entries: HashMap::new(), freeable_order: BTreeMap::new(), next_tick: 0 }
    }

    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    /// Whether `hash`'s output is cached; if so, `request` takes a reference to it (taking an
    /// unreferenced entry out of the eviction order).
    pub fn check_and_reference(&mut self, hash: u64, request: u64) -> bool {
        let Some(e) = self.entries.get_mut(&hash) else { return false };
        if let Some(tick) = e.freeable_at.take() {
            self.freeable_order.remove(&tick);
            self.freeable -= e.tokens;
        }
        if !e.refs.contains(&request) {
            e.refs.push(request);
        }
        true
    }

    /// Whether `tokens` more tokens (besides `pending` already promised this pass to the same
    /// request) can be allocated now, evicting unreferenced entries if that makes room. Like
    /// vLLM, eviction happens here, when the room is known to suffice.
    pub fn make_room(&mut self, tokens: u32, pending: u32) -> bool {
        let need = tokens + pending;
        if need <= self.free {
            return true;
        }
        if need > self.free + self.freeable {
            return false;
        }
        while need > self.free {
            let (&tick, &hash) = self.freeable_order.iter().next().expect("freeable entries cover the need");
            self.freeable_order.remove(&tick);
            let e = self.entries.remove(&hash).expect("freeable entry");
            self.freeable -= e.tokens;
            self.free += e.tokens;
        }
        true
    }

    /// Stores `hash`'s output (about to be computed this pass) for `request`. Room must have
    /// been made with [`Self::make_room`].
    pub fn allocate(&mut self, hash: u64, tokens: u32, request: u64) {
        debug_assert!(tokens <= self.free, "allocate after make_room");
        self.free -= tokens;
        self.entries.insert(hash, Entry { tokens, refs: vec![request], freeable_at: None });
    }

    /// `request` no longer needs `hash`'s output (its tokens are prefilled, or it left): the
    /// last reference makes the entry freeable.
    pub fn release(&mut self, hash: u64, request: u64) {
        let Some(e) = self.entries.get_mut(&hash) else { return };
        let Some(k) = e.refs.iter().position(|&r| r == request) else { return };
        e.refs.swap_remove(k);
        if e.refs.is_empty() {
            let tick = self.next_tick;
            self.next_tick += 1;
            e.freeable_at = Some(tick);
            self.freeable_order.insert(tick, hash);
            self.freeable += e.tokens;
        }
    }

    /// Whether `request` holds a reference to `hash`'s output.
    pub fn is_referenced_by(&self, hash: u64, request: u64) -> bool {
        self.entries.get(&hash).is_some_and(|e| e.refs.contains(&request))
    }

    /// Tokens held by cached entries (referenced or not).
    pub fn used(&self) -> u32 {
        self.capacity - self.free
    }

    pub fn contains(&self, hash: u64) -> bool {
        self.entries.contains_key(&hash)
    }

    /// Invariant: free + entries' tokens = capacity; freeable = unreferenced entries' tokens.
    pub fn check(&self) -> Result<(), String> {
        let held: u64 = self.entries.values().map(|e| e.tokens as u64).sum();
        let idle: u64 = self.entries.values().filter(|e| e.refs.is_empty()).map(|e| e.tokens as u64).sum();
        if held + self.free as u64 != self.capacity as u64 || idle != self.freeable as u64 {
            return Err(format!(
                "encoder cache: {held} tokens held + {} free != {} capacity, or {idle} idle != {} freeable",
                self.free, self.capacity, self.freeable
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unreferenced_entry_stays_cached_until_room_is_needed() {
        let mut c = EncoderCache::new(1000);
        assert!(!c.check_and_reference(7, 1));
        assert!(c.make_room(600, 0));
        c.allocate(7, 600, 1);
        c.release(7, 1);
        assert!(c.contains(7));
        // A second request with the same image hits it.
        assert!(c.check_and_reference(7, 2));
        c.release(7, 2);
        // A new image that needs the room evicts it.
        assert!(c.make_room(600, 0));
        assert!(!c.contains(7));
        c.allocate(8, 600, 3);
        c.check().unwrap();
    }

    #[test]
    fn referenced_entries_are_never_evicted() {
        let mut c = EncoderCache::new(1000);
        assert!(c.make_room(600, 0));
        c.allocate(1, 600, 1);
        assert!(!c.make_room(600, 0), "the first image is still needed");
        assert!(c.make_room(400, 0));
        // Tokens promised to the same request this pass count too.
        assert!(!c.make_room(300, 200));
        c.check().unwrap();
    }

    #[test]
    fn eviction_goes_oldest_freed_first() {
        let mut c = EncoderCache::new(300);
        for h in 1..=3 {
            assert!(c.make_room(100, 0));
            c.allocate(h, 100, h);
        }
        c.release(2, 2);
        c.release(1, 1);
        c.release(3, 3);
        assert!(c.make_room(150, 0));
        assert!(!c.contains(2) && !c.contains(1) && c.contains(3));
        c.check().unwrap();
    }
}
