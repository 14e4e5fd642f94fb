//! The SGLang radix cache against a naive model, under random sequences of what the SGLang
//! scheduler does with it: match a prefix and lock it, take private pages (evicting first if
//! needed), insert computed pages below the locked node (moving the lock down), finish
//! (release the private pages, unlock), and evict.
//!
//! The model is a set of cached paths (a path is a sequence of page keys from the root), a lock
//! count per path and the pages requests hold privately. After every operation:
//! - tree pages = cached paths, protected pages = paths with a lock, and
//!   protected + evictable = tree, tree + private + free = total;
//! - `peek` finds the longest cached prefix of any path;
//! - eviction frees min(asked, evictable) pages, each an unlocked leaf when it goes;
//! - the event stream replayed into a set equals the cached paths' sequence hashes, every
//!   `Removed` hash was `Stored` before.

use proptest::prelude::*;
use servesim_engine::kv::{EventSink, KvEventData, NodeId, ROOT, RadixCache};
use std::collections::{BTreeMap, BTreeSet};

#[derive(Clone, Debug)]
enum Op {
    /// A request for the path `keys`; it locks its cached prefix and takes pages for the rest.
    Admit {
        keys: Vec<u8>,
    },
    /// Request `req` inserts up to `n` of its computed pages.
    Insert {
        req: u8,
        n: u8,
    },
    Finish {
        req: u8,
    },
    Evict {
        n: u8,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        prop::collection::vec(0u8..3, 1..5).prop_map(|keys| Op::Admit { keys }),
        (any::<u8>(), 1u8..4).prop_map(|(req, n)| Op::Insert { req, n }),
        any::<u8>().prop_map(|req| Op::Finish { req }),
        (1u8..5).prop_map(|n| Op::Evict { n }),
    ]
}

fn seq_hash(path: &[u64]) -> u64 {
    path.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &k| (h ^ (k + 1)).wrapping_mul(0x100_0000_01b3))
}

struct Req {
    keys: Vec<u64>,
    /// The node it locks and that node's depth (pages of `keys` in the tree).
    node: NodeId,
    depth: usize,
    private: u32,
}

struct Model {
    /// Cached paths and their lock counts.
    paths: BTreeMap<Vec<u64>, u32>,
    reqs: Vec<Req>,
    announced: BTreeSet<u64>,
}

impl Model {
    fn private(&self) -> u32 {
        self.reqs.iter().map(|r| r.private).sum()
    }
    fn protected(&self) -> u32 {
        self.paths.values().filter(|&&l| l > 0).count() as u32
    }
    fn lock(&mut self, keys: &[u64], depth: usize, delta: i32) {
        for d in 1..=depth {
            let l = self.paths.get_mut(&keys[..d]).expect("a locked path is cached");
            *l = (*l as i32 + delta) as u32;
        }
    }
    fn is_unlocked_leaf(&self, path: &[u64]) -> bool {
        self.paths.get(path) == Some(&0) && !self.paths.keys().any(|p| p.len() == path.len() + 1 && p.starts_with(path))
    }
}

fn apply_events(cache: &mut RadixCache, m: &mut Model) -> Result<Vec<u64>, TestCaseError> {
    let mut v = Vec::new();
    cache.events.drain_into(&mut v);
    let mut removed = Vec::new();
    for e in v {
        match e.data {
            KvEventData::Stored { blocks, .. } => {
                for b in blocks {
                    prop_assert!(m.announced.insert(b.block_hash), "{:x} stored twice", b.block_hash);
                }
            }
            KvEventData::Removed { block_hashes } => {
                for h in block_hashes {
                    prop_assert!(m.announced.remove(&h), "{:x} removed before it was stored", h);
                    removed.push(h);
                }
            }
        }
    }
    Ok(removed)
}

fn check(cache: &RadixCache, m: &Model) -> Result<(), TestCaseError> {
    let tree = m.paths.len() as u32;
    prop_assert_eq!(cache.protected_pages(), m.protected());
    prop_assert_eq!(cache.protected_pages() + cache.evictable_pages(), tree);
    prop_assert_eq!(cache.used_pages(), m.protected() + m.private());
    prop_assert_eq!(tree + m.private() + cache.free_pages(), cache.total_pages());
    for p in m.paths.keys() {
        prop_assert_eq!(cache.peek(p.iter().copied()).1 as usize, p.len(), "path {:?} is cached", p);
        let mut longer = p.clone();
        longer.push(99);
        prop_assert_eq!(cache.peek(longer.iter().copied()).1 as usize, p.len());
    }
    let visible: BTreeSet<u64> = m.paths.keys().map(|p| seq_hash(p)).collect();
    prop_assert_eq!(&m.announced, &visible, "events rebuilt != cached pages");
    cache.check().map_err(TestCaseError::fail)?;
    Ok(())
}

/// Evicts `n` pages from cache and model, checking each victim was an unlocked leaf.
fn evict(cache: &mut RadixCache, m: &mut Model, n: u32) -> Result<u32, TestCaseError> {
    let evictable = m.paths.len() as u32 - m.protected();
    let freed = cache.evict(n);
    prop_assert_eq!(freed, n.min(evictable), "evict({}) with {} evictable", n, evictable);
    let removed = apply_events(cache, m)?;
    prop_assert_eq!(removed.len() as u32, freed);
    for h in removed {
        let path = m.paths.keys().find(|p| seq_hash(p) == h).cloned();
        let Some(path) = path else { return Err(TestCaseError::fail(format!("removed {h:x} is not cached"))) };
        prop_assert!(m.is_unlocked_leaf(&path), "evicted {:?}, not an unlocked leaf", path);
        m.paths.remove(&path);
    }
    Ok(freed)
}

fn run(total: u32, ops: Vec<Op>) -> Result<(), TestCaseError> {
    let mut cache = RadixCache::new(total, EventSink::new(true, 0));
    let mut m = Model { paths: BTreeMap::new(), reqs: Vec::new(), announced: BTreeSet::new() };
    for op in ops {
        match op {
            Op::Admit { keys } => {
                let keys: Vec<u64> = keys.into_iter().map(u64::from).collect();
                let (node, depth) = cache.match_and_touch(keys.iter().copied());
                let depth = depth as usize;
                let want = (0..=keys.len()).take_while(|&d| d == 0 || m.paths.contains_key(&keys[..d])).last().unwrap();
                prop_assert_eq!(depth, want, "matched prefix of {:?}", keys);
                cache.lock(node);
                m.lock(&keys, depth, 1);
                let need = (keys.len() - depth) as u32;
                if need > cache.free_pages() {
                    let short = need - cache.free_pages();
                    evict(&mut cache, &mut m, short)?;
                }
                if cache.take_private(need) {
                    m.reqs.push(Req { keys, node, depth, private: need });
                } else {
                    prop_assert!(need > cache.free_pages());
                    cache.unlock(node);
                    m.lock(&keys, depth, -1);
                }
            }
            Op::Insert { req, n } => {
                if m.reqs.is_empty() {
                    continue;
                }
                let r = req as usize % m.reqs.len();
                let Req { keys, node, depth, private } = &m.reqs[r];
                let k = (n as u32).min(*private) as usize;
                if k == 0 {
                    continue;
                }
                let (keys, node, depth) = (keys.clone(), *node, *depth);
                let pages: Vec<(u64, u64)> = (depth..depth + k).map(|d| (keys[d], seq_hash(&keys[..=d]))).collect();
                let new = cache.insert(node, &pages);
                cache.lock(new);
                cache.unlock(node);
                prop_assert_eq!(cache.depth(new) as usize, depth + k);
                for d in depth + 1..=depth + k {
                    m.paths.entry(keys[..d].to_vec()).or_insert(0);
                }
                m.lock(&keys, depth + k, 1);
                m.lock(&keys, depth, -1);
                let q = &mut m.reqs[r];
                q.node = new;
                q.depth = depth + k;
                q.private -= k as u32;
                apply_events(&mut cache, &mut m)?;
            }
            Op::Finish { req } => {
                if m.reqs.is_empty() {
                    continue;
                }
                let r = req as usize % m.reqs.len();
                let q = m.reqs.swap_remove(r);
                cache.release_private(q.private);
                cache.unlock(q.node);
                m.lock(&q.keys, q.depth, -1);
                if q.node != ROOT {
                    prop_assert_eq!(cache.depth(q.node) as usize, q.depth);
                }
            }
            Op::Evict { n } => {
                evict(&mut cache, &mut m, n as u32)?;
            }
        }
        check(&cache, &m)?;
    }
    // With every request gone, everything cached is evictable and eviction empties the tree.
    while let Some(q) = m.reqs.pop() {
        cache.release_private(q.private);
        cache.unlock(q.node);
        m.lock(&q.keys, q.depth, -1);
    }
    prop_assert_eq!(cache.protected_pages(), 0);
    let tree = m.paths.len() as u32;
    evict(&mut cache, &mut m, tree + 1)?;
    prop_assert_eq!(cache.free_pages(), total);
    prop_assert!(m.announced.is_empty());
    check(&cache, &m)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn radix_cache_matches_a_naive_model(total in 1u32..10, ops in prop::collection::vec(op(), 1..60)) {
        run(total, ops)?;
    }
}

/// Two requests computing the same path: the second's pages are duplicates, stored once.
#[test]
fn duplicate_inserts_are_stored_once() {
    let ops = vec![
        Op::Admit { keys: vec![1, 2] },
        Op::Admit { keys: vec![1, 2] },
        Op::Insert { req: 0, n: 2 },
        Op::Insert { req: 1, n: 2 },
        Op::Finish { req: 0 },
        Op::Evict { n: 4 },
    ];
    run(4, ops).unwrap();
}
