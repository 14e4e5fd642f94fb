//! Block identity: the same XXH3-64 (seed 1337) hashes Dynamo's router uses, so the KV events
//! servesim emits can feed a real router indexer.

mod xxh3;

pub use xxh3::xxh3_64;

/// Seed of every block and sequence hash (Dynamo's `XXH3_SEED`).
pub const HASH_SEED: u64 = 1337;

/// Hashes a block's tokens, serialised as little-endian u32 (the "local" or tokens hash).
/// `scratch` is reused across calls to avoid an allocation per block.
pub fn block_hash(tokens: &[u32], scratch: &mut Vec<u8>) -> u64 {
    if cfg!(target_endian = "little") {
        // The in-memory bytes already are the little-endian serialisation.
        return xxh3_64(bytemuck::cast_slice(tokens), HASH_SEED);
    }
    scratch.clear();
    for t in tokens {
        scratch.extend_from_slice(&t.to_le_bytes());
    }
    xxh3_64(scratch, HASH_SEED)
}

/// Chains a block's local hash onto its parent's sequence hash: the first block's sequence
/// hash is its local hash; every later one is XXH3(LE(parent) ‖ LE(local)).
pub fn sequence_hash(parent: Option<u64>, local: u64) -> u64 {
    match parent {
        None => local,
        // The 16 bytes LE(parent) ‖ LE(local), hashed without building them.
        Some(p) => xxh3::xxh3_64_two_words(p, local, HASH_SEED),
    }
}

/// SplitMix64: a cheap, well-mixed hash of an integer, used to derive deterministic ids.
pub fn mix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use xxhash_rust::xxh3::xxh3_64_with_seed;

    #[test]
    fn chain_starts_with_the_local_hash() {
        let mut s = Vec::new();
        let a = block_hash(&[1, 2, 3, 4], &mut s);
        assert_eq!(sequence_hash(None, a), a);
        let b = block_hash(&[5, 6, 7, 8], &mut s);
        assert_ne!(sequence_hash(Some(a), b), b);
        assert_ne!(sequence_hash(Some(a), b), sequence_hash(Some(b), a));
    }

    #[test]
    fn tokens_are_hashed_as_little_endian_u32() {
        let mut s = Vec::new();
        let bytes: Vec<u8> = [7u32, 9].iter().flat_map(|t| t.to_le_bytes()).collect();
        assert_eq!(block_hash(&[7, 9], &mut s), xxh3_64_with_seed(&bytes, 1337));
    }
}
