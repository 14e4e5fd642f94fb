//! XXH3-64 with a seed, our own implementation of the short paths (inputs of at most 240
//! bytes: every sequence hash and the blocks of up to 60 tokens), the long path from
//! `xxhash-rust` with the seed's secret derived once.
//!
//! Why: the short paths fold 64×64 → 128-bit products. Written as `u128` arithmetic that is
//! one instruction on 64-bit targets but a call to the 128×128 multiply `__multi3` on wasm32
//! (5 % of a wasm replay, profiled); here wasm32 computes the same product from 32-bit limbs
//! with its native 64-bit multiplies (see `mul_fold_limbs`). The values are the XXH3 specification's, on every
//! target: the tests compare against `xxhash-rust` over every length and many inputs.

use xxhash_rust::xxh3::xxh3_64_with_secret;

const PRIME64_1: u64 = 0x9E37_79B1_85EB_CA87;
const PRIME64_2: u64 = 0xC2B2_AE3D_27D4_EB4F;
const PRIME64_3: u64 = 0x1656_67B1_9E37_79F9;

/// The specification's default secret (the short paths read its first 136 bytes).
#[rustfmt::skip]
const SECRET: [u8; 192] = [
    0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c,
    0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f,
    0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21,
    0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c,
    0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3,
    0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8,
    0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d,
    0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64,
    0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb,
    0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e,
    0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce,
    0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e,
];

/// The long path's secret for our seed. XXH3 derives a seeded long hash's secret from the
/// seed (each 16-byte pair: low word + seed, high word − seed); the crate does it at every
/// call, this is the same secret made once, at compile time.
const LONG_SECRET_1337: [u8; 192] = derive_secret(super::HASH_SEED);

const fn derive_secret(seed: u64) -> [u8; 192] {
    let mut out = [0u8; 192];
    let mut i = 0;
    while i < 192 {
        let mut w = [0u8; 8];
        let mut k = 0;
        while k < 8 {
            w[k] = SECRET[i + k];
            k += 1;
        }
        let word = u64::from_le_bytes(w);
        let word = if (i / 8) % 2 == 0 { word.wrapping_add(seed) } else { word.wrapping_sub(seed) };
        let b = word.to_le_bytes();
        k = 0;
        while k < 8 {
            out[i + k] = b[k];
            k += 1;
        }
        i += 8;
    }
    out
}

#[inline(always)]
fn r64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

#[inline(always)]
fn r32(b: &[u8], at: usize) -> u64 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes")) as u64
}

/// The low and high halves of the 128-bit product, xor-ed (XXH3's `mul128_fold64`).
#[inline(always)]
pub(crate) fn mul_fold(a: u64, b: u64) -> u64 {
    #[cfg(target_pointer_width = "64")]
    {
        let p = a as u128 * b as u128;
        p as u64 ^ (p >> 64) as u64
    }
    #[cfg(not(target_pointer_width = "64"))]
    {
        mul_fold_limbs(a, b)
    }
}

/// The same product from four 32×32 → 64-bit products (xxHash's portable `XXH_mult64to128`).
/// LLVM recognises this idiom as a 128-bit multiply and, on wasm32, turns it back into a
/// `__multi3` call (seen in the profile); hiding one limb from the optimiser keeps the four
/// native 64-bit multiplies.
#[inline(always)]
#[cfg_attr(target_pointer_width = "64", allow(dead_code))] // 64-bit targets: tests only
pub(crate) fn mul_fold_limbs(a: u64, b: u64) -> u64 {
    let (a0, a1) = (a & 0xFFFF_FFFF, std::hint::black_box(a >> 32));
    let (b0, b1) = (b & 0xFFFF_FFFF, b >> 32);
    let lo_lo = a0 * b0;
    let hi_lo = a1 * b0;
    let lo_hi = a0 * b1;
    let hi_hi = a1 * b1;
    // Cannot overflow: each term is below 2^64 - 2^33 + 1 and the sum fits.
    let cross = (lo_lo >> 32) + (hi_lo & 0xFFFF_FFFF) + lo_hi;
    let upper = (hi_lo >> 32) + (cross >> 32) + hi_hi;
    let lower = (cross << 32) | (lo_lo & 0xFFFF_FFFF);
    lower ^ upper
}

#[inline(always)]
fn avalanche(mut h: u64) -> u64 {
    h ^= h >> 37;
    h = h.wrapping_mul(0x1656_6791_9E37_79F9);
    h ^ (h >> 32)
}

/// XXH64's avalanche (the 0- and 1–3-byte paths use it).
#[inline(always)]
fn avalanche64(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(PRIME64_2);
    h ^= h >> 29;
    h = h.wrapping_mul(PRIME64_3);
    h ^ (h >> 32)
}

#[inline(always)]
fn rrmxmx(mut h: u64, len: u64) -> u64 {
    h ^= h.rotate_left(49) ^ h.rotate_left(24);
    h = h.wrapping_mul(0x9FB2_1C65_1E98_DF25);
    h ^= (h >> 35).wrapping_add(len);
    h = h.wrapping_mul(0x9FB2_1C65_1E98_DF25);
    h ^ (h >> 28)
}

#[inline(always)]
fn mix16(input: &[u8], at: usize, secret_at: usize, seed: u64) -> u64 {
    let lo = r64(input, at) ^ r64(&SECRET, secret_at).wrapping_add(seed);
    let hi = r64(input, at + 8) ^ r64(&SECRET, secret_at + 8).wrapping_sub(seed);
    mul_fold(lo, hi)
}

/// XXH3-64 of `input` with `seed` (the crate's `xxh3_64_with_seed`, bit for bit).
#[inline]
pub fn xxh3_64(input: &[u8], seed: u64) -> u64 {
    let len = input.len();
    if len <= 16 {
        return len_0to16(input, seed);
    }
    if len <= 128 {
        return len_17to128(input, seed);
    }
    if len <= 240 {
        return len_129to240(input, seed);
    }
    if seed == super::HASH_SEED { xxh3_64_with_secret(input, &LONG_SECRET_1337) } else { xxhash_rust::xxh3::xxh3_64_with_seed(input, seed) }
}

/// Exactly 16 bytes: two little-endian words (a sequence hash's parent and local hash).
#[inline(always)]
pub fn xxh3_64_two_words(lo_word: u64, hi_word: u64, seed: u64) -> u64 {
    let flip1 = (r64(&SECRET, 24) ^ r64(&SECRET, 32)).wrapping_add(seed);
    let flip2 = (r64(&SECRET, 40) ^ r64(&SECRET, 48)).wrapping_sub(seed);
    let lo = lo_word ^ flip1;
    let hi = hi_word ^ flip2;
    avalanche(16u64.wrapping_add(lo.swap_bytes()).wrapping_add(hi).wrapping_add(mul_fold(lo, hi)))
}

#[inline(always)]
fn len_0to16(input: &[u8], seed: u64) -> u64 {
    let len = input.len();
    if len > 8 {
        let flip1 = (r64(&SECRET, 24) ^ r64(&SECRET, 32)).wrapping_add(seed);
        let flip2 = (r64(&SECRET, 40) ^ r64(&SECRET, 48)).wrapping_sub(seed);
        let lo = r64(input, 0) ^ flip1;
        let hi = r64(input, len - 8) ^ flip2;
        return avalanche((len as u64).wrapping_add(lo.swap_bytes()).wrapping_add(hi).wrapping_add(mul_fold(lo, hi)));
    }
    if len >= 4 {
        let seed = seed ^ (((seed as u32).swap_bytes() as u64) << 32);
        let flip = (r64(&SECRET, 8) ^ r64(&SECRET, 16)).wrapping_sub(seed);
        let word = r32(input, len - 4).wrapping_add(r32(input, 0) << 32);
        return rrmxmx(word ^ flip, len as u64);
    }
    if len > 0 {
        let (c1, c2, c3) = (input[0] as u32, input[len >> 1] as u32, input[len - 1] as u32);
        let combo = (c1 << 16) | (c2 << 24) | c3 | ((len as u32) << 8);
        let flip = (r32(&SECRET, 0) ^ r32(&SECRET, 4)).wrapping_add(seed);
        return avalanche64(combo as u64 ^ flip);
    }
    avalanche64(seed ^ r64(&SECRET, 56) ^ r64(&SECRET, 64))
}

#[inline(always)]
fn len_17to128(input: &[u8], seed: u64) -> u64 {
    let len = input.len();
    let mut acc = (len as u64).wrapping_mul(PRIME64_1);
    if len > 32 {
        if len > 64 {
            if len > 96 {
                acc = acc.wrapping_add(mix16(input, 48, 96, seed));
                acc = acc.wrapping_add(mix16(input, len - 64, 112, seed));
            }
            acc = acc.wrapping_add(mix16(input, 32, 64, seed));
            acc = acc.wrapping_add(mix16(input, len - 48, 80, seed));
        }
        acc = acc.wrapping_add(mix16(input, 16, 32, seed));
        acc = acc.wrapping_add(mix16(input, len - 32, 48, seed));
    }
    acc = acc.wrapping_add(mix16(input, 0, 0, seed));
    acc = acc.wrapping_add(mix16(input, len - 16, 16, seed));
    avalanche(acc)
}

fn len_129to240(input: &[u8], seed: u64) -> u64 {
    let len = input.len();
    let mut acc = (len as u64).wrapping_mul(PRIME64_1);
    for i in 0..8 {
        acc = acc.wrapping_add(mix16(input, 16 * i, 16 * i, seed));
    }
    acc = avalanche(acc);
    for i in 8..len / 16 {
        acc = acc.wrapping_add(mix16(input, 16 * i, 16 * (i - 8) + 3, seed));
    }
    acc = acc.wrapping_add(mix16(input, len - 16, 136 - 17, seed));
    avalanche(acc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use xxhash_rust::xxh3::xxh3_64_with_seed;

    /// A deterministic byte stream (SplitMix64), so the inputs cover every bit pattern.
    fn bytes(n: usize, seed: u64) -> Vec<u8> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x = crate::hash::mix64(x);
                x as u8
            })
            .collect()
    }

    #[test]
    fn equals_the_crate_at_every_length_and_seed() {
        let seeds = [0, 1, super::super::HASH_SEED, u64::MAX, 0x8000_0000_0000_0001, 0xDEAD_BEEF_0BAD_F00D];
        for len in 0..=1100 {
            for (k, &seed) in seeds.iter().enumerate() {
                for trial in 0..3 {
                    let input = bytes(len, (len * 31 + k * 7 + trial) as u64);
                    assert_eq!(xxh3_64(&input, seed), xxh3_64_with_seed(&input, seed), "len {len} seed {seed:#x}");
                }
            }
        }
        for len in [2048, 4096, 8192 + 13] {
            let input = bytes(len, len as u64);
            assert_eq!(xxh3_64(&input, 1337), xxh3_64_with_seed(&input, 1337), "len {len}");
        }
    }

    #[test]
    fn two_words_is_the_16_byte_hash() {
        for i in 0..20_000u64 {
            let (a, b) = (crate::hash::mix64(i), crate::hash::mix64(!i));
            let mut buf = [0u8; 16];
            buf[..8].copy_from_slice(&a.to_le_bytes());
            buf[8..].copy_from_slice(&b.to_le_bytes());
            assert_eq!(xxh3_64_two_words(a, b, 1337), xxh3_64_with_seed(&buf, 1337));
        }
    }

    /// wasm32's fold (32-bit limbs) equals the 128-bit product's, on every target.
    #[test]
    fn limb_fold_equals_the_128_bit_fold() {
        let edge = [0, 1, 2, 0xFFFF_FFFF, 0x1_0000_0000, u64::MAX, u64::MAX - 1, 1 << 63, 0xFFFF_FFFF_0000_0000];
        let check = |a: u64, b: u64| {
            let p = a as u128 * b as u128;
            assert_eq!(mul_fold_limbs(a, b), p as u64 ^ (p >> 64) as u64, "{a:#x} * {b:#x}");
        };
        for &a in &edge {
            for &b in &edge {
                check(a, b);
            }
        }
        for i in 0..200_000u64 {
            check(crate::hash::mix64(i), crate::hash::mix64(i ^ 0x5555));
        }
    }
}
