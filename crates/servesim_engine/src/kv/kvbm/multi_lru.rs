//! Frequency-tiered LRU: four LRU pools (cold, warm, hot, very hot). A block joins the pool
//! its TinyLFU estimate places it in when it becomes inactive; eviction takes the least
//! recently released block of the coldest non-empty pool, so often reused prefixes outlive
//! one-off suffixes.

use super::FullBlock;
use super::lru::Lru;
use super::tinylfu::TinyLfu;
use rustc_hash::FxHashMap;

/// Estimates below 3 are cold, below 8 warm, below 15 hot; 15 (saturated) is very hot.
pub const THRESHOLDS: [u8; 3] = [3, 8, 15];

#[derive(Clone, Debug)]
pub struct MultiLru {
    pools: [Lru; 4],
    pool_of: FxHashMap<u64, u8>,
    pub freq: TinyLfu,
}

/// The pool for a frequency estimate.
pub fn tier(estimate: u8) -> u8 {
    THRESHOLDS.iter().position(|&t| estimate < t).unwrap_or(3) as u8
}

impl MultiLru {
    pub fn new(capacity: u32) -> Self {
        MultiLru { pools: Default::default(), pool_of: FxHashMap::default(), freq: TinyLfu::new(capacity) }
    }

    pub fn insert(&mut self, b: &FullBlock) {
        let t = tier(self.freq.estimate(b.plh()));
        self.pools[t as usize].insert(b);
        self.pool_of.insert(b.hash, t);
    }

    pub fn remove(&mut self, hash: u64) -> bool {
        match self.pool_of.remove(&hash) {
            Some(t) => self.pools[t as usize].remove(hash),
            None => false,
        }
    }

    pub fn evict(&mut self) -> Option<u64> {
        let pool = self.pools.iter_mut().find(|p| !p.is_empty())?;
        let hash = pool.evict()?;
        self.pool_of.remove(&hash);
        Some(hash)
    }

    /// A registry hit: one more use of the block.
    pub fn touch(&mut self, b: &FullBlock) {
        self.freq.increment(b.plh());
    }

    pub fn len(&self) -> usize {
        self.pool_of.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
