//! The kvbm manager, driven through the handle interface the vLLM scheduler uses, against a
//! naive model under random reserve / register / release sequences, for each eviction
//! backend. Hashes chain as sequence hashes do (a block's hash determines its parent), and a
//! request's hits are a cached path from the root, as in the scheduler: the Lineage backend
//! relies on both (an inactive block never has a held child).
//!
//! The model keeps the registered blocks (hash → references), the partial blocks, and — for
//! the LRU backend — the order in which registered blocks lost their last reference. After
//! every operation:
//! - active (referenced blocks + partials) + inactive + free = capacity, and references agree;
//! - a reservation succeeds exactly when free + evictable (not counting its own hits) covers
//!   its fresh blocks; only unreferenced blocks are evicted, and under LRU the least recently
//!   released one;
//! - a promoted block whose hash is registered is merged into it (the handle is rewritten);
//! - `lookup` finds exactly the registered hashes;
//! - the event stream replayed into a set equals the registered set; every `Removed` follows
//!   its `Stored`, and no hash is stored twice without a removal between.

use proptest::prelude::*;
use servesim_engine::args::EvictionBackend;
use servesim_engine::kv::kvbm::pool::KvbmPool;
use servesim_engine::kv::{EventSink, KvEventData, SlotId};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

#[derive(Clone, Debug)]
enum Op {
    /// Reuse the cached prefix of the token path `path`, and take `fresh` partial blocks.
    Reserve {
        path: Vec<u8>,
        fresh: u8,
    },
    /// Fill up to `tokens.len()` of request `req`'s partial blocks with these block tokens.
    Register {
        req: u8,
        tokens: Vec<u8>,
    },
    Release {
        req: u8,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (prop::collection::vec(0u8..3, 0..4), 0u8..6).prop_map(|(path, fresh)| Op::Reserve { path, fresh }),
        (any::<u8>(), prop::collection::vec(0u8..3, 1..5)).prop_map(|(req, tokens)| Op::Register { req, tokens }),
        any::<u8>().prop_map(|req| Op::Release { req }),
    ]
}

/// The sequence hash of a block holding `token` after the block hashed `parent`.
fn chain(parent: Option<u64>, token: u8) -> u64 {
    let x = parent.unwrap_or(0x51ed).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (token as u64 + 1);
    x.wrapping_mul(0xbf58_476d_1ce4_e5b9).rotate_left(31)
}

/// A request's handles in sequence order: `Some(hash)` once full, `None` while partial.
type Held = Vec<(SlotId, Option<u64>)>;

struct Model {
    capacity: u32,
    refs: BTreeMap<u64, u32>,
    partials: u32,
    /// Registered blocks with no reference, least recently released first.
    lru: VecDeque<u64>,
    reqs: Vec<Held>,
    announced: BTreeSet<u64>,
    /// Every hash ever registered (lookups are checked over all of them).
    seen: BTreeSet<u64>,
}

impl Model {
    fn inactive(&self) -> u32 {
        self.refs.values().filter(|&&r| r == 0).count() as u32
    }
    fn active(&self) -> u32 {
        self.refs.values().filter(|&&r| r > 0).count() as u32 + self.partials
    }
    fn free(&self) -> u32 {
        self.capacity - self.refs.len() as u32 - self.partials
    }
}

fn apply_events(pool: &mut KvbmPool, m: &mut Model) -> Result<Vec<u64>, TestCaseError> {
    let mut events = Vec::new();
    pool.events().drain_into(&mut events);
    let mut removed = Vec::new();
    for e in events {
        match e.data {
            KvEventData::Stored { blocks, .. } => {
                for b in blocks {
                    prop_assert!(m.announced.insert(b.block_hash), "hash {:x} stored twice without a removal", b.block_hash);
                }
            }
            KvEventData::Removed { block_hashes } => {
                for h in block_hashes {
                    prop_assert!(m.announced.remove(&h), "hash {:x} removed before it was stored", h);
                    removed.push(h);
                }
            }
        }
    }
    Ok(removed)
}

fn check(pool: &KvbmPool, m: &Model) -> Result<(), TestCaseError> {
    prop_assert_eq!(pool.active() + pool.inactive() + pool.free(), m.capacity);
    prop_assert_eq!(pool.active(), m.active());
    prop_assert_eq!(pool.inactive(), m.inactive());
    for &h in &m.seen {
        prop_assert_eq!(pool.lookup(h).is_some(), m.refs.contains_key(&h), "lookup of hash {:x}", h);
        if let (Some(handle), Some(&r)) = (pool.lookup(h), m.refs.get(&h)) {
            prop_assert_eq!(pool.is_held(handle), r > 0, "is_held of hash {:x}", h);
        }
    }
    let registered: BTreeSet<u64> = m.refs.keys().copied().collect();
    prop_assert_eq!(&m.announced, &registered, "events rebuilt != registered hashes");
    prop_assert_eq!(pool.cached_hashes(), registered.into_iter().collect::<Vec<_>>());
    pool.check().map_err(TestCaseError::fail)?;
    Ok(())
}

fn run(backend: EvictionBackend, capacity: u32, ops: Vec<Op>) -> Result<(), TestCaseError> {
    let mut pool = KvbmPool::new(capacity, backend, EventSink::new(true, 0));
    let mut m = Model {
        capacity,
        refs: BTreeMap::new(),
        partials: 0,
        lru: VecDeque::new(),
        reqs: Vec::new(),
        announced: BTreeSet::new(),
        seen: BTreeSet::new(),
    };
    for op in ops {
        match op {
            Op::Reserve { path, fresh } => {
                let mut handles: Vec<SlotId> = Vec::new();
                let mut hashes: Vec<u64> = Vec::new();
                for t in path {
                    let h = chain(hashes.last().copied(), t);
                    let Some(handle) = pool.lookup(h) else { break };
                    handles.push(handle);
                    hashes.push(h);
                }
                let pinned_inactive = hashes.iter().filter(|h| m.refs[*h] == 0).count() as u32;
                let fits = fresh as u32 <= m.free() + m.inactive() - pinned_inactive;
                let free_before = m.free();
                let mut out = Vec::new();
                let ok = pool.reserve(&handles, fresh as u32, &mut out);
                prop_assert_eq!(ok, fits);
                if !ok {
                    prop_assert!(out.is_empty());
                    prop_assert!(apply_events(&mut pool, &mut m)?.is_empty());
                } else {
                    prop_assert_eq!(out.len(), handles.len() + fresh as usize);
                    prop_assert_eq!(&out[..handles.len()], &handles[..]);
                    for h in &hashes {
                        let r = m.refs.get_mut(h).unwrap();
                        if *r == 0 {
                            m.lru.retain(|x| x != h);
                        }
                        *r += 1;
                    }
                    m.partials += fresh as u32;
                    let removed = apply_events(&mut pool, &mut m)?;
                    prop_assert_eq!(removed.len() as u32, (fresh as u32).saturating_sub(free_before), "evicts only when no slot is free");
                    for h in removed {
                        prop_assert_eq!(m.refs.remove(&h), Some(0), "evicted a referenced block");
                        if backend == EvictionBackend::Lru {
                            prop_assert_eq!(m.lru.pop_front(), Some(h), "LRU evicts the least recently released block");
                        } else {
                            m.lru.retain(|&x| x != h);
                        }
                    }
                    let mut held: Held = out[..handles.len()].iter().zip(&hashes).map(|(&s, &h)| (s, Some(h))).collect();
                    held.extend(out[handles.len()..].iter().map(|&s| (s, None)));
                    m.reqs.push(held);
                }
            }
            Op::Register { req, tokens } => {
                if m.reqs.is_empty() {
                    continue;
                }
                let r = req as usize % m.reqs.len();
                let first = m.reqs[r].iter().position(|x| x.1.is_none());
                let Some(first) = first else { continue };
                let parent = if first == 0 { None } else { m.reqs[r][first - 1].1 };
                let mut run = Vec::new();
                let mut prev = parent;
                for (k, &t) in tokens.iter().enumerate() {
                    let idx = first + k;
                    if idx >= m.reqs[r].len() {
                        break;
                    }
                    let h = chain(prev, t);
                    run.push((m.reqs[r][idx].0, h, t as u64));
                    m.seen.insert(h);
                    prev = Some(h);
                }
                let asked: Vec<SlotId> = run.iter().map(|x| x.0).collect();
                pool.register_run(parent, first as u32, &mut run);
                for (k, &(handle, h, _)) in run.iter().enumerate() {
                    m.partials -= 1;
                    match m.refs.get_mut(&h) {
                        Some(refs) => {
                            // Merged into the registered block.
                            prop_assert_eq!(Some(handle), pool.lookup(h), "a merged block takes the existing handle");
                            if *refs == 0 {
                                m.lru.retain(|&x| x != h);
                            }
                            *refs += 1;
                        }
                        None => {
                            prop_assert_eq!(handle, asked[k], "a new block keeps its handle");
                            m.refs.insert(h, 1);
                        }
                    }
                    m.reqs[r][first + k] = (handle, Some(h));
                }
                prop_assert!(apply_events(&mut pool, &mut m)?.is_empty(), "promotion evicts nothing");
            }
            Op::Release { req } => {
                if m.reqs.is_empty() {
                    continue;
                }
                let r = req as usize % m.reqs.len();
                let held = m.reqs.swap_remove(r);
                for &(s, h) in held.iter().rev() {
                    pool.release(s);
                    match h {
                        None => m.partials -= 1,
                        Some(h) => {
                            let refs = m.refs.get_mut(&h).unwrap();
                            *refs -= 1;
                            if *refs == 0 {
                                m.lru.push_back(h);
                            }
                        }
                    }
                }
                prop_assert!(apply_events(&mut pool, &mut m)?.is_empty(), "releasing announces nothing");
            }
        }
        check(&pool, &m)?;
    }
    while let Some(held) = m.reqs.pop() {
        for &(s, _) in held.iter().rev() {
            pool.release(s);
        }
    }
    prop_assert_eq!(pool.active(), 0);
    pool.check().map_err(TestCaseError::fail)?;
    Ok(())
}

fn backend() -> impl Strategy<Value = EvictionBackend> {
    prop_oneof![Just(EvictionBackend::Lineage), Just(EvictionBackend::Lru), Just(EvictionBackend::MultiLru)]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn kvbm_pool_matches_a_naive_model(backend in backend(), capacity in 1u32..10, ops in prop::collection::vec(op(), 1..80)) {
        run(backend, capacity, ops)?;
    }
}
