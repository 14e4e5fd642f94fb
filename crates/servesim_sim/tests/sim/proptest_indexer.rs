//! The KV router's indexer, rebuilt only from the KV events of a run, holds exactly the
//! blocks the engines' pools hold as cache-visible — after every pass, under random small
//! traces with shared prefixes, small pools (so blocks are evicted) and two ranks.
//!
//! The engines are driven directly (`Engine` with `emit_events = true`); each pass's
//! `kv_events` go to an `Indexer` (target = rank), as the harness's KV router does. Alongside,
//! a plain per-rank set checks the stream itself: every `Removed` hash was `Stored` on that rank
//! before, and no hash is stored twice without a removal between.

use proptest::prelude::*;
use servesim_engine::kv::KvEventData;
use servesim_engine::{Engine, EngineArgs, Prompt, RankSetup, Request, Scheduler};
use servesim_sim::cluster::Indexer;
use std::collections::BTreeSet;

#[derive(Clone, Debug)]
struct Row {
    /// Blocks shared with prefix group `group` (trace-block ids), then private blocks.
    group: u8,
    shared: u8,
    private: u8,
    output: u8,
    /// Passes to wait before submitting.
    delay: u8,
    rank: bool,
}

fn row() -> impl Strategy<Value = Row> {
    (0u8..3, 0u8..5, 0u8..4, 1u8..24, 0u8..4, any::<bool>()).prop_map(|(group, shared, private, output, delay, rank)| Row {
        group,
        shared,
        private,
        output,
        delay,
        rank,
    })
}

const BLOCK: u32 = 16;

fn request(i: usize, r: &Row) -> Request {
    // Each id is one block of identical tokens; the last block may be partial.
    let mut runs: Vec<(u32, u32)> = (0..r.shared as u32).map(|b| (100 * (r.group as u32 + 1) + b, BLOCK)).collect();
    runs.extend((0..r.private as u32).map(|b| (10_000 * (i as u32 + 1) + b, BLOCK)));
    runs.push((7, (i as u32 * 5) % BLOCK + 1));
    Request { id: i as u64, prompt: Prompt::from_runs(runs), max_output: r.output as u32 }
}

fn run(num_gpu_blocks: u32, preemption_fifo: bool, rows: Vec<Row>) -> Result<(), TestCaseError> {
    let args = EngineArgs::from_json(&serde_json::json!({
        "block_size": BLOCK,
        "num_gpu_blocks": num_gpu_blocks,
        "max_num_batched_tokens": 64,
        "preemption_mode": if preemption_fifo { "fifo" } else { "lifo" },
    }))
    .unwrap()
    .resolve()
    .unwrap();
    let mut engines: Vec<Engine> =
        (0..2).map(|r| Engine::new(&args, &RankSetup { dp_rank: r, ..RankSetup::single(true) }).unwrap()).collect();
    let mut indexer = Indexer::default();
    let mut announced: Vec<BTreeSet<u64>> = vec![BTreeSet::new(); 2];
    let mut ended = vec![0u32; rows.len()];
    let mut pending: Vec<(u32, usize)> = Vec::new();
    let mut at = 0u32;
    for (i, r) in rows.iter().enumerate() {
        at += r.delay as u32;
        pending.push((at, i));
    }
    let mut pass = 0u32;
    let mut events_seen = 0usize;
    while pass < 5_000 {
        for &(when, i) in &pending {
            if when == pass {
                engines[rows[i].rank as usize].submit(request(i, &rows[i]));
            }
        }
        let idle = engines.iter().all(|e| !e.has_work());
        if idle && pending.iter().all(|&(w, _)| w <= pass) {
            break;
        }
        for (rank, e) in engines.iter_mut().enumerate() {
            if !e.has_work() {
                continue;
            }
            let out = e.step();
            for f in &out.finished {
                ended[f.id as usize] += 1;
            }
            for ev in &out.kv_events {
                events_seen += 1;
                prop_assert_eq!(ev.dp_rank, rank as u32);
                match &ev.data {
                    KvEventData::Stored { blocks, .. } => {
                        for b in blocks {
                            prop_assert!(announced[rank].insert(b.block_hash), "rank {}: {:x} stored twice", rank, b.block_hash);
                        }
                    }
                    KvEventData::Removed { block_hashes } => {
                        for h in block_hashes {
                            prop_assert!(announced[rank].remove(h), "rank {}: {:x} removed before it was stored", rank, h);
                        }
                    }
                }
                indexer.apply(rank as u32, &ev.data);
            }
            e.check().map_err(TestCaseError::fail)?;
            let cached = e.cached_hashes().expect("a vLLM core");
            let indexed: Vec<u64> = indexer.entries().into_iter().filter(|&(t, _)| t == rank as u32).map(|(_, h)| h).collect();
            prop_assert_eq!(&indexed, &cached, "rank {} after pass {}: indexer != cache-visible blocks", rank, pass);
            prop_assert_eq!(announced[rank].iter().copied().collect::<Vec<_>>(), cached);
        }
        pass += 1;
    }
    prop_assert!(pass < 5_000, "the engines did not drain");
    prop_assert!(ended.iter().all(|&n| n == 1), "every request ends exactly once: {:?}", ended);
    // Requests with a full prompt block that fits the pool publish it.
    if rows.iter().any(|r| r.shared + r.private > 0) && num_gpu_blocks >= 12 {
        prop_assert!(events_seen > 0, "full blocks were computed but no event was emitted");
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn indexer_rebuilt_from_events_equals_the_cached_blocks(
        num_gpu_blocks in 4u32..24,
        fifo in any::<bool>(),
        rows in prop::collection::vec(row(), 1..10),
    ) {
        run(num_gpu_blocks, fifo, rows)?;
    }
}

/// A request larger than the pool is refused; the indexer still matches what the others cached.
#[test]
fn oversized_requests_leave_the_indexer_consistent() {
    let big = Row { group: 0, shared: 4, private: 3, output: 4, delay: 0, rank: false };
    let small = Row { group: 0, shared: 2, private: 0, output: 3, delay: 1, rank: false };
    run(5, false, vec![big, small.clone(), Row { rank: true, ..small }]).unwrap();
}
