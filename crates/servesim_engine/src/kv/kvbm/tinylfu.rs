//! TinyLFU frequency sketch: a count-min sketch of 4-bit counters that forgets.
//!
//! `max(1, capacity / 4)` 64-bit words hold sixteen 4-bit counters each. A key (the block's
//! 128-bit lineage hash) picks four counters through four seeded XXH3 hashes: the word is
//! the hash modulo the table length, the nibble the hash's top four bits. An increment
//! bumps each of the four that is below 15 (counters saturate). Every `capacity × 10`
//! increments that changed something, all counters are halved, so old popularity fades.
//! The estimate is the smallest of the four counters.

use crate::hash::xxh3_64 as xxh3_64_with_seed;

const SEEDS: [u64; 4] = [0, 1, 2, 3];
/// Keeps the low three bits of every nibble after a right shift: halves all counters.
const HALVE_MASK: u64 = 0x7777_7777_7777_7777;

#[derive(Clone, Debug)]
pub struct TinyLfu {
    table: Vec<u64>,
    /// Increments since the last halving (adjusted at each halving).
    size: u64,
    reset_at: u64,
}

impl TinyLfu {
    pub fn new(capacity: u32) -> Self {
        let words = (capacity as usize / 4).max(1);
        TinyLfu { table: vec![0; words], size: 0, reset_at: (capacity as u64 * 10).max(1) }
    }

    fn slots(&self, key: u128) -> [(usize, u32); 4] {
        let bytes = key.to_le_bytes();
        SEEDS.map(|seed| {
            let h = xxh3_64_with_seed(&bytes, seed);
            // The nibble comes from the top bits: taken from the low bits, as the word is,
            // a table of 16k words would use one counter per word.
            ((h % self.table.len() as u64) as usize, ((h >> 60) * 4) as u32)
        })
    }

    /// Counts one more use of `key`.
    pub fn increment(&mut self, key: u128) {
        let mut changed = false;
        for (word, shift) in self.slots(key) {
            let c = (self.table[word] >> shift) & 15;
            if c < 15 {
                self.table[word] += 1 << shift;
                changed = true;
            }
        }
        if changed {
            self.size += 1;
            if self.size >= self.reset_at {
                self.halve();
            }
        }
    }

    fn halve(&mut self) {
        // Each odd counter loses half a count to rounding; the sample size follows.
        let odd: u64 = self.table.iter().map(|w| (w & 0x1111_1111_1111_1111).count_ones() as u64).sum();
        for w in &mut self.table {
            *w = (*w >> 1) & HALVE_MASK;
        }
        self.size = (self.size / 2).saturating_sub(odd / 4);
    }

    /// Estimated uses of `key` (0..=15).
    pub fn estimate(&self, key: u128) -> u8 {
        self.slots(key).iter().map(|&(w, s)| ((self.table[w] >> s) & 15) as u8).min().unwrap_or(0)
    }

    pub fn samples(&self) -> u64 {
        self.size
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_saturates_at_15() {
        let mut f = TinyLfu::new(1024);
        assert_eq!(f.estimate(7), 0);
        for i in 1..=20u8 {
            f.increment(7);
            assert_eq!(f.estimate(7), i.min(15));
        }
        // Saturated increments change nothing, so they are not sampled.
        assert_eq!(f.samples(), 15);
        assert_eq!(f.estimate(8), 0);
    }

    #[test]
    fn halving_shifts_every_counter_and_shrinks_the_sample() {
        let mut f = TinyLfu::new(4);
        for _ in 0..9 {
            f.increment(1);
        }
        assert_eq!((f.estimate(1), f.samples()), (9, 9));
        let odd: u64 = f.table.iter().map(|w| (w & 0x1111_1111_1111_1111).count_ones() as u64).sum();
        f.halve();
        assert_eq!(f.estimate(1), 4);
        assert_eq!(f.samples(), 4 - odd / 4);
    }

    #[test]
    fn halves_after_capacity_times_ten_counted_increments() {
        // Capacity 256: 64 words, halving when the sample reaches 2560.
        let mut f = TinyLfu::new(256);
        let mut k = 0u128;
        let mut last = 0;
        while k < 100_000 {
            f.increment(k);
            k += 1;
            if f.samples() < last {
                break;
            }
            last = f.samples();
        }
        assert_eq!(last, 2559, "the 2560th counted increment halves at once");
        assert!(f.samples() <= 1280);
        // Right after halving no counter is above 7.
        assert!(f.table.iter().all(|w| (0..16).all(|i| (w >> (4 * i)) & 15 <= 7)));
    }
}
