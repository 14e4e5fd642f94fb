//! The router's view of what each target caches, built only from KV events.
//!
//! Sequence hashes are prefix-chained, so each one names a whole path from the root: a map
//! from sequence hash to the targets holding it is a radix tree over block chains. A target's
//! overlap with a request is how many of the request's leading blocks it holds, stopping at
//! the first miss. Blocks a target's host tier holds (native offload's `HostPinned` events)
//! are kept apart: they extend a target's device overlap, from where it stops.

use rustc_hash::FxHashMap;
use servesim_engine::kv::KvEventData;
use smallvec::SmallVec;

#[derive(Clone, Debug, Default)]
pub struct Indexer {
    holders: FxHashMap<u64, SmallVec<[u32; 2]>>,
    /// The host tier's blocks, by target (empty unless engines offload).
    host: FxHashMap<u64, SmallVec<[u32; 2]>>,
}

impl Indexer {
    pub fn apply(&mut self, target: u32, data: &KvEventData) {
        Self::apply_to(&mut self.holders, target, data);
    }

    /// A host-tier event of `target`'s.
    pub fn apply_host(&mut self, target: u32, data: &KvEventData) {
        Self::apply_to(&mut self.host, target, data);
    }

    /// Blocks of `chain` from position `from` on that `target`'s host tier holds, leading.
    pub fn host_overlap(&self, target: u32, chain: &[u64], from: u32) -> u32 {
        if self.host.is_empty() {
            return 0;
        }
        chain[from as usize..].iter().take_while(|h| self.host.get(h).is_some_and(|t| t.contains(&target))).count() as u32
    }

    fn apply_to(holders: &mut FxHashMap<u64, SmallVec<[u32; 2]>>, target: u32, data: &KvEventData) {
        match data {
            KvEventData::Stored { blocks, .. } => {
                for b in blocks {
                    let h = holders.entry(b.block_hash).or_default();
                    if !h.contains(&target) {
                        h.push(target);
                    }
                }
            }
            KvEventData::Removed { block_hashes } => {
                for hash in block_hashes {
                    if let Some(h) = holders.get_mut(hash) {
                        h.retain(|t| *t != target);
                        if h.is_empty() {
                            holders.remove(hash);
                        }
                    }
                }
            }
        }
    }

    /// Leading blocks of `chain` that `target` holds.
    pub fn overlap(&self, target: u32, chain: &[u64]) -> u32 {
        chain.iter().take_while(|h| self.holders.get(h).is_some_and(|t| t.contains(&target))).count() as u32
    }

    /// Every (target, hash) the indexer holds, sorted (for comparing with the engines' caches).
    pub fn entries(&self) -> Vec<(u32, u64)> {
        let mut v: Vec<(u32, u64)> = self.holders.iter().flat_map(|(&h, ts)| ts.iter().map(move |&t| (t, h))).collect();
        v.sort_unstable();
        v
    }
}
