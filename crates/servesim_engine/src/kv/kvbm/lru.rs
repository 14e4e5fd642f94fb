//! Plain LRU over inactive blocks: the block released longest ago goes first.

use super::FullBlock;
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;

#[derive(Clone, Debug, Default)]
pub struct Lru {
    order: BTreeMap<u64, u64>,
    tick_of: FxHashMap<u64, u64>,
    clock: u64,
}

impl Lru {
    pub fn insert(&mut self, b: &FullBlock) {
        self.clock += 1;
        self.order.insert(self.clock, b.hash);
        self.tick_of.insert(b.hash, self.clock);
    }

    pub fn remove(&mut self, hash: u64) -> bool {
        match self.tick_of.remove(&hash) {
            Some(t) => {
                self.order.remove(&t);
                true
            }
            None => false,
        }
    }

    pub fn evict(&mut self) -> Option<u64> {
        let (_, hash) = self.order.pop_first()?;
        self.tick_of.remove(&hash);
        Some(hash)
    }

    pub fn len(&self) -> usize {
        self.order.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
