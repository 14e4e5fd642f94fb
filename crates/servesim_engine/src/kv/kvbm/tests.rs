use super::*;
use crate::kv::events::KvEvent;

fn manager(capacity: u32, backend: EvictionBackend) -> KvbmManager {
    KvbmManager::new(capacity, backend, EventSink::new(true, 0))
}

/// Block `id` of the test lineage, hashed as 1000 + id.
fn blk(id: u64, position: u32, parent: Option<u64>) -> BlockRef {
    BlockRef::Full(FullBlock { hash: 1000 + id, local: id, position, parent: parent.map(|p| 1000 + p) })
}

/// A sequence of ids as blocks, each the child of the one before.
fn chain(ids: &[u64]) -> Vec<BlockRef> {
    let mut out: Vec<BlockRef> = Vec::new();
    for (i, &id) in ids.iter().enumerate() {
        out.push(blk(id, i as u32, if i == 0 { None } else { Some(ids[i - 1]) }));
    }
    out
}

fn release(m: &mut KvbmManager, blocks: &[BlockRef]) {
    let rev: Vec<BlockRef> = blocks.iter().rev().copied().collect();
    m.deref_blocks(&rev);
}

fn drain(m: &mut KvbmManager) -> Vec<KvEventData> {
    let mut v: Vec<KvEvent> = Vec::new();
    m.events.drain_into(&mut v);
    v.into_iter().map(|e| e.data).collect()
}

fn removed(events: &[KvEventData]) -> Vec<u64> {
    events
        .iter()
        .flat_map(|e| match e {
            KvEventData::Removed { block_hashes } => block_hashes.iter().map(|h| h - 1000).collect(),
            _ => vec![],
        })
        .collect()
}

/// Chains 0-1-2-3-4, 1-5-6 and 2-7-8-9 fill a pool of 10; all are released leaf first,
/// then 0-1-2-7-8-9 is used again.
fn lineage_scene(backend: EvictionBackend) -> KvbmManager {
    let mut m = manager(10, backend);
    let (a, b, c) = (chain(&[0, 1, 2, 3, 4]), chain(&[0, 1, 5, 6]), chain(&[0, 1, 2, 7, 8, 9]));
    for s in [&a, &b, &c] {
        m.use_blocks(s, None);
    }
    for s in [&a, &b, &c] {
        release(&mut m, s);
    }
    assert_eq!(m.inactive(), 10);
    let outcomes = m.use_blocks(&c, None);
    assert!(outcomes.iter().all(|&o| o == UseOutcome::InactiveHit));
    drain(&mut m);
    m
}

#[test]
fn lineage_evicts_leaves_before_shared_prefixes() {
    let mut m = lineage_scene(EvictionBackend::Lineage);
    let fresh = chain(&[10, 11, 12]);
    assert_eq!(m.use_blocks(&fresh, None).len(), 3);
    let ev = drain(&mut m);
    assert_eq!(ev.len(), 2, "one Removed, one Stored: {ev:?}");
    assert_eq!(ev[0], KvEventData::Removed { block_hashes: vec![1004, 1003, 1006] });
    m.use_blocks(&[blk(13, 0, None)], None);
    assert_eq!(removed(&drain(&mut m)), vec![5]);
    m.check().unwrap();
}

#[test]
fn lineage_and_lru_differ_when_a_prefix_is_released_first() {
    // Released root first: LRU evicts the root, Lineage only ever evicts the leaf.
    for (backend, want) in [(EvictionBackend::Lru, vec![0, 1]), (EvictionBackend::Lineage, vec![2, 1])] {
        let mut m = manager(3, backend);
        let s = chain(&[0, 1, 2]);
        m.use_blocks(&s, None);
        m.deref_blocks(&s); // forward order
        m.use_blocks(&chain(&[20, 21]), None);
        assert_eq!(removed(&drain(&mut m)), want, "{backend:?}");
        m.check().unwrap();
    }
}

#[test]
fn lru_evicts_in_release_order() {
    let mut m = lineage_scene(EvictionBackend::Lru);
    m.use_blocks(&chain(&[10, 11, 12, 13]), None);
    assert_eq!(removed(&drain(&mut m)), vec![4, 3, 6, 5]);
}

#[test]
fn multi_lru_keeps_frequently_hit_blocks() {
    let mut m = manager(4, EvictionBackend::MultiLru);
    let hot = chain(&[0]);
    // Ten hits put block 0 in the hot tier (estimate 10 ≥ 8).
    m.use_blocks(&hot, None);
    for _ in 0..10 {
        m.use_blocks(&hot, None);
        m.deref_blocks(&hot);
    }
    m.deref_blocks(&hot);
    // Three one-off blocks, released after block 0 (so more recent).
    for id in [1, 2, 3] {
        let s = [blk(id, 0, None)];
        m.use_blocks(&s, None);
        m.deref_blocks(&s);
    }
    m.use_blocks(&chain(&[10, 11, 12]), None);
    assert_eq!(removed(&drain(&mut m)), vec![1, 2, 3], "cold blocks go first, oldest first");
    m.use_blocks(&[blk(13, 0, None)], None);
    assert_eq!(removed(&drain(&mut m)), vec![0]);
}

#[test]
fn tiers_follow_the_thresholds() {
    use multi_lru::tier;
    let got: Vec<u8> = (0..=15).map(tier).collect();
    assert_eq!(got, vec![0, 0, 0, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 3]);
}

#[test]
fn use_reports_hits_and_stores_and_announces_only_new_blocks() {
    let mut m = manager(8, EvictionBackend::Lineage);
    let a = chain(&[0, 1, 2]);
    assert_eq!(m.use_blocks(&a, None), vec![UseOutcome::NewStore; 3]);
    let ev = drain(&mut m);
    assert_eq!(ev.len(), 1);
    assert!(matches!(&ev[0], KvEventData::Stored { parent_hash: None, blocks } if blocks.len() == 3));
    // A second request shares 0-1 (active hits) and adds 3: the Stored parent is 1.
    let b = [blk(0, 0, None), blk(1, 1, Some(0)), blk(3, 2, Some(1))];
    assert_eq!(m.use_blocks(&b, None), vec![UseOutcome::ActiveHit, UseOutcome::ActiveHit, UseOutcome::NewStore]);
    let ev = drain(&mut m);
    assert!(matches!(&ev[0], KvEventData::Stored { parent_hash: Some(1001), blocks } if blocks[0].block_hash == 1003));
    // Released, block 2 is an inactive hit; no events for hits or derefs.
    release(&mut m, &a);
    assert_eq!(m.use_blocks(&a[2..], Some(1001)), vec![UseOutcome::InactiveHit]);
    assert!(drain(&mut m).is_empty());
    assert_eq!(m.active(), 4);
    m.check().unwrap();
}

#[test]
fn use_stops_when_the_pool_is_exhausted() {
    let mut m = manager(2, EvictionBackend::Lineage);
    assert_eq!(m.use_blocks(&chain(&[0, 1, 2]), None).len(), 2);
    assert_eq!(m.active(), 2);
    m.check().unwrap();
}

#[test]
fn partial_blocks_free_on_deref_and_promote_by_outcome() {
    let mut m = manager(4, EvictionBackend::Lineage);
    assert_eq!(m.use_blocks(&[BlockRef::Partial(7)], None), vec![UseOutcome::NewStore]);
    assert!(drain(&mut m).is_empty(), "partial blocks are not announced");
    m.deref_blocks(&[BlockRef::Partial(7)]);
    assert_eq!(m.active(), 0);
    // Promotion of a new hash: registered and announced alone, under its parent.
    m.use_blocks(&[BlockRef::Partial(8)], None);
    let full = FullBlock { hash: 1005, local: 5, position: 1, parent: Some(1000) };
    assert_eq!(m.promote(8, full), UseOutcome::NewStore);
    assert!(matches!(&drain(&mut m)[0], KvEventData::Stored { parent_hash: Some(1000), blocks } if blocks.len() == 1));
    // Promotion onto an active copy merges (slot freed), onto an inactive one reactivates.
    m.use_blocks(&[BlockRef::Partial(9)], None);
    assert_eq!(m.promote(9, full), UseOutcome::ActiveHit);
    assert_eq!(m.active(), 1);
    m.deref_blocks(&[BlockRef::Full(full), BlockRef::Full(full)]);
    m.use_blocks(&[BlockRef::Partial(10)], None);
    assert_eq!(m.promote(10, full), UseOutcome::InactiveHit);
    assert!(drain(&mut m).is_empty());
    m.check().unwrap();
}

#[test]
fn lineage_hashes_are_injective_in_position_and_parent() {
    let a = FullBlock { hash: 5, local: 5, position: 1, parent: Some(1) };
    let b = FullBlock { position: 2, ..a };
    let c = FullBlock { parent: Some(2), ..a };
    let d = FullBlock { position: 300, ..a };
    assert!(a.plh() != b.plh() && a.plh() != c.plh() && a.plh() != d.plh());
    assert_eq!(a.plh() >> 126, 0);
    assert_eq!(d.plh() >> 126, 1);
}
