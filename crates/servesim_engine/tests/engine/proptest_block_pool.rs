//! The vLLM block pool against a naive model, under random sequences of the operations the
//! scheduler uses: reserve (prefix hits + fresh slots), register_run, release (leaf first).
//!
//! The model keeps, per slot, its holders and whether it is cached (and under which hash),
//! the free set and the LRU order of inactive cached slots. After every operation:
//! - refcounts agree (`is_held`), and active + inactive + free = capacity;
//! - allocation takes a free slot while one exists and otherwise evicts the LRU head;
//! - `lookup` finds a hash exactly when some cached slot holds it;
//! - the event stream replayed into a set of hashes equals the set of cache-visible hashes,
//!   every `Removed` hash was announced by a `Stored` before, and no hash is stored twice
//!   without a removal between.

use proptest::prelude::*;
use servesim_engine::kv::{BlockPool, EventSink, KvEventData, SlotId};
use std::collections::{BTreeSet, VecDeque};

#[derive(Clone, Debug)]
enum Op {
    /// Pin the visible blocks among `hits` (hash universe indices) and take `fresh` slots.
    Reserve { hits: Vec<u8>, fresh: u8 },
    /// Register up to `n` of request `req`'s private slots under hashes drawn from `hashes`.
    Register { req: u8, hashes: Vec<u8> },
    /// Release all of request `req`'s slots, leaf first.
    Release { req: u8 },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (prop::collection::vec(0u8..12, 0..4), 0u8..6).prop_map(|(hits, fresh)| Op::Reserve { hits, fresh }),
        (any::<u8>(), prop::collection::vec(0u8..12, 1..5)).prop_map(|(req, hashes)| Op::Register { req, hashes }),
        any::<u8>().prop_map(|req| Op::Release { req }),
    ]
}

#[derive(Clone, Debug, Default)]
struct ModelSlot {
    refs: u32,
    hash: Option<u64>,
}

struct Model {
    slots: Vec<ModelSlot>,
    /// Inactive cached slots, least recently released first.
    lru: VecDeque<SlotId>,
    /// Requests: the slots each holds, in allocation order, and whether each is still private.
    reqs: Vec<Vec<(SlotId, bool)>>,
    /// The router's view rebuilt from events.
    announced: BTreeSet<u64>,
}

impl Model {
    fn free(&self) -> u32 {
        self.slots.iter().filter(|s| s.refs == 0 && s.hash.is_none()).count() as u32
    }

    fn visible(&self) -> BTreeSet<u64> {
        self.slots.iter().filter_map(|s| s.hash).collect()
    }
}

fn hash_of(i: u8) -> u64 {
    0x9e37_79b9_0000_0000 | i as u64
}

fn drain(pool: &mut BlockPool) -> Vec<KvEventData> {
    let mut v = Vec::new();
    pool.events.drain_into(&mut v);
    v.into_iter().map(|e| e.data).collect()
}

fn apply_events(m: &mut Model, events: Vec<KvEventData>) -> Result<(), TestCaseError> {
    for e in events {
        match e {
            KvEventData::Stored { blocks, .. } => {
                for b in blocks {
                    prop_assert!(m.announced.insert(b.block_hash), "hash {:x} stored twice without a removal", b.block_hash);
                }
            }
            KvEventData::Removed { block_hashes } => {
                for h in block_hashes {
                    prop_assert!(m.announced.remove(&h), "hash {:x} removed before it was stored", h);
                }
            }
        }
    }
    Ok(())
}

fn check(pool: &BlockPool, m: &Model) -> Result<(), TestCaseError> {
    let cap = pool.capacity();
    prop_assert_eq!(pool.active() + pool.inactive() + pool.free(), cap);
    let active = m.slots.iter().filter(|s| s.refs > 0).count() as u32;
    prop_assert_eq!(pool.active(), active);
    prop_assert_eq!(pool.inactive(), m.lru.len() as u32);
    prop_assert_eq!(pool.free(), m.free());
    for (i, s) in m.slots.iter().enumerate() {
        prop_assert_eq!(pool.is_held(i as SlotId), s.refs > 0, "slot {}", i);
    }
    let visible = m.visible();
    for i in 0..12u8 {
        let h = hash_of(i);
        let got = pool.lookup(h);
        prop_assert_eq!(got.is_some(), visible.contains(&h), "lookup of hash {}", i);
        if let Some(s) = got {
            prop_assert_eq!(m.slots[s as usize].hash, Some(h), "lookup returned a slot with another hash");
        }
    }
    prop_assert_eq!(&m.announced, &visible, "events rebuilt != cache-visible hashes");
    pool.check().map_err(TestCaseError::fail)?;
    Ok(())
}

fn run(capacity: u32, ops: Vec<Op>) -> Result<(), TestCaseError> {
    let mut pool = BlockPool::new(capacity, EventSink::new(true, 0));
    let mut m =
        Model { slots: vec![ModelSlot::default(); capacity as usize], lru: VecDeque::new(), reqs: Vec::new(), announced: BTreeSet::new() };
    for op in ops {
        match op {
            Op::Reserve { hits, fresh } => {
                // A request's prefix hits are distinct visible blocks.
                let mut slots: Vec<SlotId> = Vec::new();
                for h in hits {
                    if let Some(s) = pool.lookup(hash_of(h))
                        && !slots.contains(&s)
                    {
                        slots.push(s);
                    }
                }
                let pinned_inactive = slots.iter().filter(|&&s| m.slots[s as usize].refs == 0).count() as u32;
                let fits = fresh as u32 <= m.free() + m.lru.len() as u32 - pinned_inactive;
                let mut out = Vec::new();
                let ok = pool.reserve(&slots, fresh as u32, &mut out);
                prop_assert_eq!(ok, fits, "reserve({:?}, {}) with {} free, {} inactive", slots, fresh, m.free(), m.lru.len());
                if !ok {
                    prop_assert!(out.is_empty(), "a failed reservation changed nothing");
                    prop_assert!(drain(&mut pool).is_empty());
                } else {
                    prop_assert_eq!(out.len(), slots.len() + fresh as usize);
                    prop_assert_eq!(&out[..slots.len()], &slots[..]);
                    for &s in &slots {
                        if m.slots[s as usize].refs == 0 {
                            m.lru.retain(|&x| x != s);
                        }
                        m.slots[s as usize].refs += 1;
                    }
                    for &s in &out[slots.len()..] {
                        let ms = &m.slots[s as usize];
                        if m.free() > 0 {
                            prop_assert!(
                                ms.refs == 0 && ms.hash.is_none(),
                                "slot {} taken while free slots remain, but it was not free",
                                s
                            );
                        } else {
                            prop_assert_eq!(m.lru.front().copied(), Some(s), "with no free slot, the LRU head is evicted");
                            m.lru.pop_front();
                        }
                        m.slots[s as usize] = ModelSlot { refs: 1, hash: None };
                    }
                    let mut held: Vec<(SlotId, bool)> = slots.iter().map(|&s| (s, false)).collect();
                    held.extend(out[slots.len()..].iter().map(|&s| (s, true)));
                    m.reqs.push(held);
                    let ev = drain(&mut pool);
                    apply_events(&mut m, ev)?;
                }
            }
            Op::Register { req, hashes } => {
                if m.reqs.is_empty() {
                    continue;
                }
                let r = req as usize % m.reqs.len();
                let private: Vec<usize> = (0..m.reqs[r].len()).filter(|&i| m.reqs[r][i].1).collect();
                let mut run = Vec::new();
                let mut used = BTreeSet::new();
                let parent = m.reqs[r].iter().rev().find(|x| !x.1).and_then(|x| m.slots[x.0 as usize].hash);
                for (&i, &h) in private.iter().zip(&hashes) {
                    // Sequence hashes within one request are distinct (they are prefix-chained).
                    if !used.insert(h) {
                        break;
                    }
                    let s = m.reqs[r][i].0;
                    run.push((s, hash_of(h), h as u64));
                    m.reqs[r][i].1 = false;
                    m.slots[s as usize].hash = Some(hash_of(h));
                }
                pool.register_run(parent, &run);
                let ev = drain(&mut pool);
                apply_events(&mut m, ev)?;
            }
            Op::Release { req } => {
                if m.reqs.is_empty() {
                    continue;
                }
                let r = req as usize % m.reqs.len();
                let held = m.reqs.swap_remove(r);
                for &(s, _) in held.iter().rev() {
                    pool.release(s);
                    let ms = &mut m.slots[s as usize];
                    ms.refs -= 1;
                    if ms.refs == 0 && ms.hash.is_some() {
                        m.lru.push_back(s);
                    }
                }
                prop_assert!(drain(&mut pool).is_empty(), "releasing announces nothing");
            }
        }
        check(&pool, &m)?;
    }
    // Releasing everything leaves only free and inactive slots.
    while let Some(held) = m.reqs.pop() {
        for &(s, _) in held.iter().rev() {
            pool.release(s);
        }
    }
    prop_assert_eq!(pool.active(), 0);
    prop_assert_eq!(pool.inactive() + pool.free(), capacity);
    pool.check().map_err(TestCaseError::fail)?;
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn block_pool_matches_a_naive_model(capacity in 1u32..10, ops in prop::collection::vec(op(), 1..80)) {
        run(capacity, ops)?;
    }
}

/// Copies of one hash held by several requests: `Removed` only when the last copy goes.
#[test]
fn duplicate_copies_are_removed_once() {
    let ops = vec![
        Op::Reserve { hits: vec![], fresh: 1 },
        Op::Reserve { hits: vec![], fresh: 1 },
        Op::Register { req: 0, hashes: vec![3] },
        Op::Register { req: 1, hashes: vec![3] },
        Op::Release { req: 0 },
        Op::Release { req: 0 },
        Op::Reserve { hits: vec![], fresh: 2 },
    ];
    run(2, ops).unwrap();
}
