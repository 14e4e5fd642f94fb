//! The vLLM core pass by pass with exact block counts: what each admission, reservation,
//! preemption and decode step takes from the pool and makes cache-visible, and the pass
//! output's counters (scheduled and committed prefill tokens, prefix hits, durations).
//! Each test pins a behaviour that only the slow end-to-end suite, or nothing, used to check
//! (see docs/testing.md, mutation testing).

use serde_json::json;
use servesim_engine::perf::{PassTimer, PerfModel, Polynomial};
use servesim_engine::{Engine, EngineArgs, HandOff, Outcome, RankSetup, Request, Reservation, Scheduler};
use std::time::Duration;

fn engine(args: serde_json::Value) -> Engine {
    Engine::new(&EngineArgs::from_json(&args).unwrap().resolve().unwrap(), &RankSetup::single(true)).unwrap()
}

/// Distinct content per request.
fn req(id: u64, len: u32, out: u32) -> Request {
    Request { id, prompt: (0..len).map(|t| (id as u32) * 100_000 + t).collect::<Vec<_>>().into(), max_output: out }
}

/// The same tokens for every request: prompts share their longest common prefix.
fn shared(id: u64, len: u32, out: u32) -> Request {
    Request { id, prompt: (0..len).collect::<Vec<_>>().into(), max_output: out }
}

/// One pass's output, and the pool as the pass left it.
#[derive(Debug)]
struct Pass {
    /// (id, reused tokens, readmission)
    admitted: Vec<(u64, u32, bool)>,
    tokens: Vec<u64>,
    finished: Vec<(u64, Outcome)>,
    preempted: Vec<u64>,
    scheduled: u64,
    committed: u64,
    /// The pass's prefix-cache counters.
    hit: u64,
    query: u64,
    duration: Duration,
    /// Blocks held by requests after the pass.
    active: u64,
    available: u32,
    /// Cache-visible blocks after the pass.
    cached: usize,
}

fn step(e: &mut Engine) -> Pass {
    let o = e.step();
    let mut p = Pass {
        admitted: o.admissions.iter().map(|a| (a.id, a.reused_tokens, a.readmission)).collect(),
        tokens: o.tokens.clone(),
        finished: o.finished.iter().map(|f| (f.id, f.outcome.clone())).collect(),
        preempted: o.preempted.clone(),
        scheduled: o.scheduled_tokens,
        committed: o.committed_prefill_tokens,
        hit: o.metrics.cache_hit_tokens,
        query: o.metrics.cache_query_tokens,
        duration: o.duration,
        active: o.metrics.active_decode_blocks,
        available: 0,
        cached: 0,
    };
    assert_eq!(e.metrics().active_decode_blocks, p.active, "the pass's metrics are the pool's");
    p.available = e.available_blocks();
    p.cached = e.cached_hashes().unwrap().len();
    e.check().unwrap();
    p
}

/// (scheduled, committed prefill, active blocks, available blocks) of a pass.
fn counts(p: &Pass) -> (u64, u64, u64, u32) {
    (p.scheduled, p.committed, p.active, p.available)
}

fn rejected(id: u64, reason: &str) -> (u64, Outcome) {
    (id, Outcome::Rejected(reason.to_string()))
}

// ---- max_model_len ----

/// A prompt is refused when it reaches the limit: one token below it runs; at it, or over
/// it, the request is rejected with the prompt's length in the reason.
#[test]
fn max_model_len_rejects_a_prompt_that_reaches_it() {
    let mut e = engine(json!({"block_size": 4, "num_gpu_blocks": 64, "max_model_len": 10}));
    e.submit(req(1, 9, 5));
    e.submit(req(2, 10, 5));
    e.submit(req(3, 11, 5));
    let p = step(&mut e);
    assert_eq!(p.admitted, vec![(1, 0, false)]);
    // Request 1's first token brings it to 10 tokens: it ends there, with 1 of its 5 tokens.
    assert_eq!(p.tokens, vec![1]);
    assert_eq!(
        p.finished,
        vec![
            rejected(2, "prompt of 10 tokens reaches max_model_len 10"),
            rejected(3, "prompt of 11 tokens reaches max_model_len 10"),
            (1, Outcome::Completed),
        ]
    );
    assert_eq!(counts(&p), (9, 9, 0, 64));
    assert!(!e.has_work());
}

/// Without a limit the same prompts all run.
#[test]
fn without_max_model_len_long_prompts_run() {
    let mut e = engine(json!({"block_size": 4, "num_gpu_blocks": 64}));
    for (id, len) in [(1, 9), (2, 10), (3, 11)] {
        e.submit(req(id, len, 1));
    }
    let p = step(&mut e);
    assert_eq!(p.admitted, vec![(1, 0, false), (2, 0, false), (3, 0, false)]);
    assert_eq!(p.finished, vec![(1, Outcome::Completed), (2, Outcome::Completed), (3, Outcome::Completed)]);
}

/// Generation stops when prompt plus output reach the limit, before `max_output`.
#[test]
fn max_model_len_ends_generation_at_the_limit() {
    let mut e = engine(json!({"block_size": 4, "num_gpu_blocks": 64, "max_model_len": 10}));
    e.submit(req(1, 6, 100));
    e.submit(req(2, 6, 2));
    let mut tokens = Vec::new();
    for pass in 1..=3 {
        let p = step(&mut e);
        tokens.extend(p.tokens);
        let done: Vec<(u64, Outcome)> = if pass == 2 { vec![(2, Outcome::Completed)] } else { vec![] };
        assert_eq!(p.finished, done, "pass {pass}");
    }
    // The fourth token makes request 1 10 tokens long: it completes with it.
    let p = step(&mut e);
    assert_eq!((p.tokens.clone(), p.finished.clone()), (vec![1], vec![(1, Outcome::Completed)]));
    tokens.extend(p.tokens);
    assert_eq!(tokens, vec![1, 2, 1, 2, 1, 1]);
    assert_eq!((p.active, e.has_work()), (0, false));
}

// ---- the pool's size: rejected, unschedulable ----

/// A prompt of exactly the pool's blocks is admitted; one token more is rejected on arrival.
#[test]
fn a_prompt_of_exactly_the_pool_is_admitted() {
    let mut e = engine(json!({"block_size": 4, "num_gpu_blocks": 4}));
    e.submit(req(1, 16, 1));
    e.submit(req(2, 17, 1));
    let p = step(&mut e);
    assert_eq!(p.admitted, vec![(1, 0, false)]);
    assert_eq!(p.finished, vec![rejected(2, "needs 5 KV blocks; the pool has 4"), (1, Outcome::Completed)]);
}

/// A request that outgrows the pool, alone, can never run again: it is unschedulable, and
/// the reason says how far it grew. One whose prompt fills the pool exactly but exceeds the
/// budget with chunked prefill off is unschedulable for the budget.
#[test]
fn unschedulable_requests_say_why() {
    let mut e = engine(json!({"block_size": 4, "num_gpu_blocks": 4}));
    e.submit(req(1, 12, 10));
    let mut finished = Vec::new();
    for _ in 0..8 {
        finished.extend(step(&mut e).finished);
    }
    let reason = "grew to 17 tokens (5 KV blocks) and no longer fits the pool of 4 blocks";
    assert_eq!(finished, vec![(1, Outcome::Unschedulable(reason.into()))]);

    let mut e = engine(json!({"block_size": 4, "num_gpu_blocks": 4, "enable_chunked_prefill": false, "max_num_batched_tokens": 10}));
    e.submit(req(1, 16, 1));
    let reason = "prompt of 16 tokens exceeds max_num_batched_tokens 10 with chunked prefill off";
    assert_eq!(step(&mut e).finished, vec![(1, Outcome::Unschedulable(reason.into()))]);
}

/// Block sizes that are not powers of two (the shift is for those that are): 3-token blocks
/// taken and made visible as they fill.
#[test]
fn a_block_size_that_is_not_a_power_of_two() {
    let mut e = engine(json!({"block_size": 3, "num_gpu_blocks": 64}));
    e.submit(req(1, 7, 5));
    let mut seen = Vec::new();
    for _ in 0..5 {
        let p = step(&mut e);
        seen.push((p.active, p.cached));
    }
    // 7 tokens: 3 blocks, 2 full. Positions 7 and 8 fill the third; 9 takes a fourth; the
    // fifth token ends the request.
    assert_eq!(seen, vec![(3, 2), (3, 2), (3, 3), (4, 3), (0, 3)]);
    e.submit(req(2, 12, 1));
    e.submit(shared(3, 9, 1));
    e.submit(shared(4, 9, 1));
    let p = step(&mut e);
    // Request 4 reuses request 3's first 2 blocks (the third is recomputed).
    assert_eq!(p.admitted, vec![(2, 0, false), (3, 0, false), (4, 6, false)]);
}

// ---- prefix hits on admission ----

/// An admission that hits blocks a running request holds pins them (one copy each) and
/// allocates only the rest; the pass reports the hit and the query.
#[test]
fn a_prefix_hit_admission_pins_the_held_blocks_and_allocates_the_rest() {
    let mut e = engine(json!({"block_size": 4, "num_gpu_blocks": 16}));
    e.submit(shared(1, 16, 3));
    e.submit(shared(2, 16, 3));
    let p = step(&mut e);
    // Request 1's 4 blocks are visible as soon as computed: request 2, admitted in the same
    // pass, reuses 3 (its last block is recomputed) and takes 1 block of its own.
    assert_eq!(p.admitted, vec![(1, 0, false), (2, 12, false)]);
    assert_eq!((p.hit, p.query), (12, 32));
    assert_eq!(counts(&p), (20, 20, 5, 11));
    // Request 2's recomputed last block is a second copy of request 1's: still 4 hashes.
    assert_eq!(p.cached, 4);
    // Both decode into a 5th block each.
    let p = step(&mut e);
    assert_eq!(p.tokens, vec![1, 2]);
    assert_eq!(counts(&p), (2, 0, 7, 9));
    // The counters are per pass: a pass that admits nothing looks nothing up.
    assert_eq!((p.hit, p.query), (0, 0));
    let p = step(&mut e);
    assert_eq!(p.finished, vec![(1, Outcome::Completed), (2, Outcome::Completed)]);
    assert_eq!((p.active, p.available), (0, 16));
}

/// A hit on blocks nobody holds (cached, inactive) pins them too: they leave the evictable
/// set, and only the recomputed last block is new.
#[test]
fn a_prefix_hit_on_inactive_blocks_pins_them() {
    let mut e = engine(json!({"block_size": 4, "num_gpu_blocks": 6}));
    e.submit(shared(1, 16, 1));
    let p = step(&mut e);
    assert_eq!(p.finished, vec![(1, Outcome::Completed)]);
    assert_eq!((p.active, p.available, p.cached), (0, 6, 4));
    e.submit(shared(2, 16, 3));
    let p = step(&mut e);
    assert_eq!(p.admitted, vec![(2, 12, false)]);
    assert_eq!(counts(&p), (4, 4, 4, 2));
    // Request 2 decodes into a 5th block: 1 is left. Request 3 (6 blocks) hits 4: request 2
    // holds 3 of them, so it needs 3. Blocked.
    e.submit(shared(3, 24, 1));
    let p = step(&mut e);
    assert!(p.admitted.is_empty());
    assert_eq!(counts(&p), (1, 0, 5, 1));
}

/// A request with nothing to generate needs no logits, so its last block is not recomputed:
/// a block-aligned prompt fully in the cache is admitted with nothing to compute and
/// completes at once.
#[test]
fn a_fully_cached_prompt_with_no_output_computes_nothing() {
    let mut e = engine(json!({"block_size": 4, "num_gpu_blocks": 8}));
    e.submit(shared(1, 8, 1));
    assert_eq!(step(&mut e).finished, vec![(1, Outcome::Completed)]);
    e.submit(shared(2, 8, 0));
    let p = step(&mut e);
    assert_eq!((p.admitted.clone(), p.tokens.clone(), p.finished.clone()), (vec![(2, 8, false)], vec![], vec![(2, Outcome::Completed)]));
    assert_eq!(counts(&p), (0, 0, 0, 8));
}

/// The admission check counts only the blocks the request would take: hit blocks another
/// request holds are not counted again. Here request 2 fits exactly thanks to that.
#[test]
fn the_admission_check_discounts_hit_blocks_others_hold() {
    let mut e = engine(json!({"block_size": 4, "num_gpu_blocks": 6}));
    e.submit(shared(1, 16, 10));
    let p = step(&mut e);
    assert_eq!(counts(&p), (16, 16, 4, 2));
    e.submit(shared(2, 16, 10));
    // Request 1 decodes into a 5th block; 1 is left. Request 2 needs 4 blocks, 3 of which
    // request 1 holds: it needs 1, exactly what is left.
    let p = step(&mut e);
    assert_eq!(p.admitted, vec![(2, 12, false)]);
    assert_eq!(p.tokens, vec![1, 2]);
    assert_eq!(counts(&p), (5, 4, 6, 0));
    // Request 2 needs a 5th block and is the newest: it preempts itself, dropping its own
    // block (a cached copy). It would fit again at once (its 4 prompt blocks are request 1's),
    // but a pass that preempted admits nobody.
    let p = step(&mut e);
    assert_eq!((p.preempted.clone(), p.tokens.clone(), p.admitted.clone()), (vec![2], vec![1], vec![]));
    assert_eq!(counts(&p), (1, 0, 5, 1));
    // Readmitted at the next pass: 16 tokens reused, 1 computed.
    let p = step(&mut e);
    assert_eq!((p.admitted.clone(), p.tokens.clone()), (vec![(2, 16, true)], vec![1, 2]));
    assert_eq!(counts(&p), (2, 0, 6, 0));
}

/// Without the discount's counterpart (the hits held by nobody), a request needs its whole
/// sequence free: a pool one block short blocks it.
#[test]
fn the_admission_check_needs_the_whole_sequence_when_nothing_is_shared() {
    let mut e = engine(json!({"block_size": 4, "num_gpu_blocks": 6}));
    e.submit(req(1, 16, 10));
    step(&mut e);
    e.submit(req(2, 8, 10));
    let p = step(&mut e);
    // Request 1 took a 5th block: 1 is left and request 2 needs 2.
    assert!(p.admitted.is_empty());
    assert_eq!(counts(&p), (1, 0, 5, 1));
}

// ---- preemption and readmission ----

/// A preempted request is readmitted with the readmission flag, reusing its own cached blocks;
/// a first admission never has the flag.
#[test]
fn a_preempted_request_is_readmitted_with_the_flag() {
    let mut e = engine(json!({"block_size": 4, "num_gpu_blocks": 4}));
    e.submit(req(1, 8, 3));
    e.submit(req(2, 8, 4));
    let p = step(&mut e);
    assert_eq!(p.admitted, vec![(1, 0, false), (2, 0, false)]);
    assert_eq!(counts(&p), (16, 16, 4, 0));
    // Request 1 needs a 3rd block: request 2 (LIFO) drops its 2, which stay cached.
    let p = step(&mut e);
    assert_eq!((p.preempted.clone(), p.tokens.clone()), (vec![2], vec![1]));
    assert_eq!(counts(&p), (1, 0, 3, 1));
    let p = step(&mut e);
    assert_eq!(p.finished, vec![(1, Outcome::Completed)]);
    assert_eq!(counts(&p), (1, 0, 0, 4));
    // Request 2 (9 tokens: 8 of prompt, 1 generated) reuses 1 cached block: the other was
    // evicted for request 1's third block.
    let p = step(&mut e);
    assert_eq!(p.admitted, vec![(2, 4, true)]);
    assert_eq!(p.tokens, vec![2]);
    assert_eq!(counts(&p), (5, 5, 3, 1));
}

/// A readmitted request recomputes its prompt and its generated tokens, in budget-sized
/// chunks; the generated ones are not prefill, and the request emits again only once all are
/// computed.
#[test]
fn a_readmitted_request_recomputes_its_generated_tokens_in_chunks() {
    let mut e = engine(json!({"block_size": 4, "num_gpu_blocks": 8, "max_num_batched_tokens": 17, "enable_prefix_caching": false}));
    e.submit(req(1, 8, 6));
    e.submit(req(2, 16, 6));
    let p = step(&mut e);
    assert_eq!((p.admitted.clone(), p.tokens.clone()), (vec![(1, 0, false), (2, 0, false)], vec![1]));
    assert_eq!(counts(&p), (17, 17, 5, 3));
    let p = step(&mut e);
    assert_eq!((p.tokens.clone(), counts(&p)), (vec![1, 2], (8, 7, 7, 1)));
    for _ in 0..3 {
        let p = step(&mut e);
        assert_eq!((p.tokens.clone(), counts(&p)), (vec![1, 2], (2, 0, 8, 0)));
    }
    // Request 2 (20 tokens) needs a 6th block: it preempts itself. Request 1 completes.
    let p = step(&mut e);
    assert_eq!((p.preempted.clone(), p.tokens.clone(), p.finished.clone()), (vec![2], vec![1], vec![(1, Outcome::Completed)]));
    // Readmitted: 17 of its 20 tokens (its 16 of prompt are prefill), then the other 3.
    let p = step(&mut e);
    assert_eq!((p.admitted.clone(), p.tokens.clone(), counts(&p)), (vec![(2, 0, true)], vec![], (17, 17, 5, 3)));
    let p = step(&mut e);
    assert_eq!((p.tokens.clone(), counts(&p)), (vec![2], (3, 0, 5, 3)));
    let p = step(&mut e);
    assert_eq!((p.tokens.clone(), p.finished.clone(), counts(&p)), (vec![2], vec![(2, Outcome::Completed)], (1, 0, 0, 8)));
}

/// FIFO preemption takes the oldest running request, which the walk already scheduled this
/// pass: its tokens go back to the budget and out of the pass's counts, and the request the
/// walk reaches next gets them.
#[test]
fn a_fifo_victim_scheduled_earlier_in_the_pass_gives_its_budget_back() {
    let mut e = engine(json!({"block_size": 4, "num_gpu_blocks": 8, "max_num_batched_tokens": 4, "preemption_mode": "fifo"}));
    for (id, len) in [(1, 1), (2, 4), (3, 1), (4, 16)] {
        e.submit(req(id, len, 30));
    }
    let p = step(&mut e);
    assert_eq!(p.admitted, vec![(1, 0, false), (2, 0, false)]);
    assert_eq!(counts(&p), (4, 4, 2, 6));
    let p = step(&mut e);
    assert_eq!(p.admitted, vec![(3, 0, false), (4, 0, false)]);
    assert_eq!(p.tokens, vec![1, 2, 3]);
    assert_eq!(counts(&p), (4, 3, 4, 4));
    // Requests 1–3 decode, request 4 prefills one token a pass, until the pool is full.
    for active in [5, 5, 6, 8] {
        let p = step(&mut e);
        assert_eq!((p.tokens.clone(), counts(&p)), (vec![1, 2, 3], (4, 1, active, 8 - active as u32)));
    }
    // Request 1 decodes (1 token); request 2 needs a 3rd block and preempts request 1, whose
    // token goes back: 4 left. Request 2 takes 1; request 3 sits the pass out (the walk moves
    // on by one past a victim before it); request 4 gets the other 3 for its prompt.
    let p = step(&mut e);
    assert_eq!(p.preempted, vec![1]);
    assert_eq!(p.tokens, vec![2]);
    assert_eq!(counts(&p), (4, 3, 7, 1));
    let p = step(&mut e);
    assert_eq!((p.tokens.clone(), p.admitted.clone()), (vec![2, 3], vec![]));
    assert_eq!(counts(&p), (4, 2, 8, 0));
}

/// On a decode rank a preempted request recomputes its prompt; a transferred request can join
/// behind its partial chunk (joining takes no budget). When the FIFO victim is that request,
/// its prompt chunk of the pass comes out of the committed prefill tokens too.
#[test]
fn a_fifo_victim_with_a_prompt_chunk_leaves_the_committed_count() {
    let mut e = engine(json!({"worker_type": "decode", "block_size": 4, "num_gpu_blocks": 4, "max_num_batched_tokens": 6,
        "preemption_mode": "fifo", "enable_prefix_caching": false}));
    for (id, out) in [(1, 20), (3, 4)] {
        assert!(matches!(e.reserve_destination(req(id, 8, out)), Reservation::Reserved { .. }));
        assert!(e.activate(id));
    }
    let p = step(&mut e);
    assert_eq!((p.admitted.clone(), p.tokens.clone(), p.active), (vec![(1, 0, false), (3, 0, false)], vec![1, 3], 4));
    // Request 1 needs a third block and is the oldest: it preempts itself (9 tokens).
    let p = step(&mut e);
    assert_eq!((p.preempted.clone(), p.tokens.clone()), (vec![1], vec![3]));
    // Request 2 (4 tokens) takes the last free block; it queues behind request 1.
    assert_eq!(e.reserve_destination(req(2, 4, 5)), Reservation::Reserved { resident_blocks: 0 });
    assert!(e.activate(2));
    let p = step(&mut e);
    assert_eq!((p.tokens.clone(), p.admitted.clone()), (vec![3], vec![]));
    let p = step(&mut e);
    assert_eq!(p.finished, vec![(3, Outcome::Completed)]);
    // Request 1 is readmitted and recomputes 6 of its 9 tokens (the budget); request 2, whose
    // KV is in place, joins behind it with no budget left.
    let p = step(&mut e);
    assert_eq!((p.admitted.clone(), p.tokens.clone()), (vec![(1, 0, true), (2, 0, false)], vec![2]));
    assert_eq!(counts(&p), (6, 6, 3, 1));
    // Request 1's last 3 (2 of them prompt) take the free block; request 2 needs a second one:
    // request 1 goes again, and its 3 tokens, committed prefill included, are taken back.
    let p = step(&mut e);
    assert_eq!((p.preempted.clone(), p.tokens.clone()), (vec![1], vec![2]));
    assert_eq!(counts(&p), (1, 0, 2, 2));
}

/// The same correction with no request after the preempting one: the victim's decode token
/// is taken out of the pass's scheduled tokens.
#[test]
fn a_fifo_victim_scheduled_earlier_leaves_the_scheduled_count() {
    let mut e = engine(json!({"block_size": 4, "num_gpu_blocks": 6, "max_num_batched_tokens": 12, "preemption_mode": "fifo"}));
    e.submit(req(1, 8, 10));
    e.submit(req(2, 16, 10));
    let p = step(&mut e);
    assert_eq!(p.admitted, vec![(1, 0, false), (2, 0, false)]);
    assert_eq!(counts(&p), (12, 12, 3, 3));
    // Request 1 decodes into a 3rd block; request 2's 11 remaining prompt tokens need 3 more
    // blocks, 2 are left: request 1 (the oldest) goes, and only request 2's 11 tokens count.
    let p = step(&mut e);
    assert_eq!((p.preempted.clone(), p.tokens.clone()), (vec![1], vec![]));
    assert_eq!(counts(&p), (11, 11, 4, 2));
}

// ---- the decode fast path ----

/// A decode step that needs no new block still spends one token of the budget: the waiting
/// request admitted after it gets the rest.
#[test]
fn a_decode_without_a_new_block_spends_one_token_of_budget() {
    let mut e = engine(json!({"block_size": 4, "num_gpu_blocks": 64, "max_num_batched_tokens": 4}));
    e.submit(req(1, 6, 10));
    e.submit(req(2, 8, 10));
    let p = step(&mut e);
    assert_eq!((p.admitted.clone(), counts(&p)), (vec![(1, 0, false)], (4, 4, 1, 63)));
    let p = step(&mut e);
    assert_eq!((p.admitted.clone(), p.tokens.clone()), (vec![(2, 0, false)], vec![1]));
    assert_eq!(counts(&p), (4, 4, 3, 61));
    // Request 1's 7th token fits its 2nd block: 1 token; request 2 gets 3 of its 6 left.
    let p = step(&mut e);
    assert_eq!(p.tokens, vec![1]);
    assert_eq!(counts(&p), (4, 3, 4, 60));
    let p = step(&mut e);
    assert_eq!(p.tokens, vec![1, 2]);
    assert_eq!(counts(&p), (4, 3, 4, 60));
    // Both decode: 1 token each.
    let p = step(&mut e);
    assert_eq!(p.tokens, vec![1, 2]);
    assert_eq!(counts(&p), (2, 0, 6, 58));
}

/// A prompt's last token, scheduled alone in a block the request already holds, is still
/// prefill: it counts as committed prefill and is timed as a prefill chunk, not a decode step.
#[test]
fn a_prompts_last_token_alone_is_prefill() {
    let timer = PassTimer::new(PerfModel::Polynomial(Polynomial), 1.0, 1.0);
    let mut e = engine(json!({"block_size": 4, "num_gpu_blocks": 64, "max_num_batched_tokens": 6}));
    e.submit(req(1, 7, 2));
    let p = step(&mut e);
    assert_eq!((p.scheduled, p.committed, p.active, p.duration), (6, 6, 2, timer.prefill(1, 6, 0)));
    let p = step(&mut e);
    assert_eq!((p.tokens.clone(), p.scheduled, p.committed, p.active), (vec![1], 1, 1, 2));
    assert_eq!(p.duration, timer.prefill(1, 7, 6));
}

/// A decoding request's blocks become cache-visible as they fill, generated tokens included:
/// one more visible block every 4 tokens, and one more held block every 4 tokens.
#[test]
fn decode_blocks_become_cache_visible_as_they_fill() {
    let mut e = engine(json!({"block_size": 4, "num_gpu_blocks": 64}));
    e.submit(req(1, 4, 10));
    let mut seen = Vec::new();
    for _ in 0..10 {
        let p = step(&mut e);
        seen.push((p.tokens.len(), p.scheduled, p.active, p.cached));
    }
    // Pass 0 computes the prompt (positions 0–3); pass k then computes position k + 3. The
    // second block is taken for position 4 and visible once position 7 is computed; the third
    // taken for position 8, visible with position 11. The last pass frees them all.
    let want = [(1, 4, 1, 1), (1, 1, 2, 1), (1, 1, 2, 1), (1, 1, 2, 1), (1, 1, 2, 2)];
    let want = want.into_iter().chain([(1, 1, 3, 2), (1, 1, 3, 2), (1, 1, 3, 2), (1, 1, 3, 3), (1, 1, 0, 3)]).collect::<Vec<_>>();
    assert_eq!(seen, want);
}

/// With prefix caching off nothing becomes cache-visible, and identical prompts share nothing:
/// with either block manager (kvbm would merge a block computed twice into one copy).
#[test]
fn with_prefix_caching_off_nothing_is_cached_or_shared() {
    for manager in ["native", "kvbm"] {
        let mut e = engine(json!({"block_size": 4, "num_gpu_blocks": 16, "enable_prefix_caching": false, "kv_manager": manager}));
        e.submit(shared(1, 16, 3));
        e.submit(shared(2, 16, 3));
        let p = step(&mut e);
        assert_eq!((p.admitted.clone(), p.active, p.cached), (vec![(1, 0, false), (2, 0, false)], 8, 0), "{manager}");
        let p = step(&mut e);
        assert_eq!((p.active, p.cached), (10, 0), "{manager}");
    }
}

// ---- chunked prefill off ----

/// With chunked prefill off, a prompt runs only if its uncomputed part fits the budget: the
/// cached prefix does not count. A prompt over the budget with nothing cached can never run.
#[test]
fn with_chunking_off_only_the_uncached_prompt_counts_against_the_budget() {
    let mut e = engine(json!({"block_size": 4, "num_gpu_blocks": 64, "enable_chunked_prefill": false, "max_num_batched_tokens": 10}));
    e.submit(shared(1, 8, 1));
    let p = step(&mut e);
    assert_eq!(p.finished, vec![(1, Outcome::Completed)]);
    // 18 tokens, 8 of them cached: the 10 others are exactly the budget.
    e.submit(shared(2, 18, 1));
    e.submit(req(3, 11, 1));
    let p = step(&mut e);
    assert_eq!(p.admitted, vec![(2, 8, false)]);
    assert_eq!(p.finished, vec![(2, Outcome::Completed)]);
    assert_eq!((p.scheduled, p.committed), (10, 10));
    let p = step(&mut e);
    let reason = "prompt of 11 tokens exceeds max_num_batched_tokens 10 with chunked prefill off";
    assert_eq!(p.finished, vec![(3, Outcome::Unschedulable(reason.into()))]);
}

// ---- pass durations ----

/// A pass is timed by its prefill chunks (their count, mean prompt length after the chunk and
/// mean prompt present before it) plus its decode batch (requests that had a token before
/// the pass, and their context).
#[test]
fn a_pass_is_timed_by_its_chunks_and_its_decode_batch() {
    let timer = PassTimer::new(PerfModel::Polynomial(Polynomial), 1.0, 1.0);
    let total = 64 * 4;
    let mut e = engine(json!({"block_size": 4, "num_gpu_blocks": 64, "max_num_batched_tokens": 4}));
    e.submit(req(1, 11, 2));
    e.submit(req(2, 6, 2));
    let want = [
        // Request 1's prompt, 4 tokens at a time.
        timer.prefill(1, 4, 0),
        timer.prefill(1, 8, 4),
        // Its last 3, and request 2's first: 2 chunks, mean prompt after (11 + 1) / 2, before 8 / 2.
        timer.prefill(2, 6, 4),
        // Request 1 decodes at 12 tokens of context; request 2 prefills 1..4.
        timer.prefill(1, 4, 1) + timer.decode(1, 12, total),
        // Request 2's last 2 prompt tokens.
        timer.prefill(1, 6, 4),
        // Request 2 decodes at 7 tokens.
        timer.decode(1, 7, total),
    ];
    for (pass, want) in want.into_iter().enumerate() {
        assert_eq!(step(&mut e).duration, want, "pass {pass}");
    }
    assert!(!e.has_work());
}

// ---- disaggregated serving: the decode side ----

/// A reservation takes the prompt's blocks at once; a prompt of exactly the pool's blocks
/// fits, one token more never does.
#[test]
fn a_reservation_of_exactly_the_pool_fits() {
    let mut e = engine(json!({"worker_type": "decode", "block_size": 4, "num_gpu_blocks": 8}));
    assert_eq!(e.reservation_capacity(), 8);
    assert_eq!(e.reserve_destination(req(1, 32, 1)), Reservation::Reserved { resident_blocks: 0 });
    assert_eq!((e.metrics().active_decode_blocks, e.available_blocks(), e.reservation_capacity()), (8, 0, 0));
    assert_eq!(e.reserve_destination(req(2, 1, 1)), Reservation::NoRoom);
    assert!(e.activate(1));
    let p = step(&mut e);
    assert_eq!((p.tokens.clone(), p.finished.clone()), (vec![1], vec![(1, Outcome::Completed)]));
    assert_eq!((p.active, p.available), (0, 8));

    let mut e = engine(json!({"worker_type": "decode", "block_size": 4, "num_gpu_blocks": 8}));
    assert_eq!(e.reserve_destination(req(3, 33, 1)), Reservation::NeverFits);
    assert_eq!((e.metrics().active_decode_blocks, e.in_flight()), (0, 0));
}

/// A reservation shares the resident blocks of its prefix (those of a request whose KV has
/// arrived) and takes fresh blocks for the rest only; it fits if those fresh blocks do.
#[test]
fn a_reservation_shares_resident_prefix_blocks() {
    let mut e = engine(json!({"worker_type": "decode", "block_size": 4, "num_gpu_blocks": 8}));
    assert_eq!(e.reserve_destination(shared(1, 16, 10)), Reservation::Reserved { resident_blocks: 0 });
    assert_eq!(e.available_blocks(), 4);
    assert!(e.activate(1));
    // 32 tokens whose first 16 are request 1's: 4 resident blocks, 4 fresh ones.
    assert_eq!(e.reserve_destination(shared(2, 32, 10)), Reservation::Reserved { resident_blocks: 4 });
    assert_eq!((e.metrics().active_decode_blocks, e.available_blocks()), (8, 0));
    // Fully resident: nothing fresh is needed (and nothing is left).
    assert_eq!(e.reserve_destination(shared(3, 16, 10)), Reservation::Reserved { resident_blocks: 4 });
    assert_eq!(e.metrics().active_decode_blocks, 8);
}

/// Activation makes a reservation's prompt blocks cache-visible (not before), and an unknown
/// or already activated id is refused.
#[test]
fn activation_makes_the_prompt_blocks_visible_once() {
    let mut e = engine(json!({"worker_type": "decode", "block_size": 4, "num_gpu_blocks": 8}));
    assert_eq!(e.reserve_destination(shared(1, 10, 3)), Reservation::Reserved { resident_blocks: 0 });
    assert_eq!(e.cached_hashes().unwrap().len(), 0);
    assert!(!e.activate(2));
    assert!(e.activate(1));
    assert_eq!(e.cached_hashes().unwrap().len(), 2, "2 full blocks of 10 tokens");
    assert!(!e.activate(1));
    assert_eq!(e.reserve_destination(shared(2, 12, 3)), Reservation::Reserved { resident_blocks: 2 });
    assert_eq!((e.metrics().active_decode_blocks, e.available_blocks()), (4, 4));
}

// ---- steady tokens and streaks ----

/// With steady tokens on, a token is counted (not listed) when its request also emitted at the
/// previous pass and had two tokens already. A streak ends when its request is preempted or
/// sits a pass out, and is reported with its length; the harness takes the open ones.
#[test]
fn steady_token_streaks_end_at_a_preemption_or_a_skipped_pass() {
    // The FIFO scenario of `a_fifo_victim_scheduled_earlier_in_the_pass_gives_its_budget_back`.
    let mut e = engine(json!({"block_size": 4, "num_gpu_blocks": 8, "max_num_batched_tokens": 4, "preemption_mode": "fifo"}));
    e.set_steady_tokens(true);
    for (id, len) in [(1, 1), (2, 4), (3, 1), (4, 16)] {
        e.submit(req(id, len, 30));
    }
    let mut seen = Vec::new();
    for _ in 0..8 {
        let o = e.step();
        seen.push((o.tokens.clone(), o.steady_tokens, o.streak_ends.clone(), o.preempted.clone()));
    }
    /// (tokens listed, steady tokens, streak ends, preempted) of a pass.
    type Steady = (Vec<u64>, u64, Vec<(u64, u32)>, Vec<u64>);
    let want: Vec<Steady> = vec![
        (vec![1], 0, vec![], vec![]),
        (vec![1, 2, 3], 0, vec![], vec![]),
        // Request 1's third token is its first steady one.
        (vec![2, 3], 1, vec![], vec![]),
        (vec![], 3, vec![], vec![]),
        (vec![], 3, vec![], vec![]),
        (vec![], 3, vec![], vec![]),
        // Request 1 is preempted after 4 steady tokens; request 3 sits the pass out after 3.
        (vec![], 1, vec![(1, 4), (3, 3)], vec![1]),
        // Request 3's next token follows a gap: listed again.
        (vec![3], 1, vec![], vec![]),
    ];
    assert_eq!(seen, want);
    // Request 2's streak (passes 3 to 7) is still open; taking it closes it.
    assert_eq!(e.take_open_streaks(), vec![(2, 5)]);
    assert_eq!(e.take_open_streaks(), vec![]);
    let o = e.step();
    assert_eq!((o.tokens.clone(), o.steady_tokens, o.streak_ends.clone()), (vec![], 2, vec![]));
    assert_eq!(e.take_open_streaks(), vec![(2, 1), (3, 1)]);

    // A request preempted with no streak (one token so far) ends none.
    let mut e = engine(json!({"block_size": 4, "num_gpu_blocks": 4}));
    e.set_steady_tokens(true);
    e.submit(req(1, 8, 3));
    e.submit(req(2, 8, 4));
    e.step();
    let o = e.step();
    assert_eq!((o.preempted.clone(), o.tokens.clone(), o.streak_ends.clone()), (vec![2], vec![1], vec![]));
}

/// A request that completes reports the steady tokens of its last streak; without steady
/// tokens every token is listed.
#[test]
fn a_completed_request_reports_its_open_streak() {
    for steady in [true, false] {
        let mut e = engine(json!({"block_size": 4, "num_gpu_blocks": 64}));
        e.set_steady_tokens(steady);
        e.submit(req(1, 4, 6));
        let (mut listed, mut counted) = (0, 0);
        let finished = loop {
            let o = e.step();
            listed += o.tokens.len();
            counted += o.steady_tokens;
            if !o.finished.is_empty() {
                break o.finished.clone();
            }
        };
        let streak = if steady { 4 } else { 0 };
        assert_eq!((listed, counted), (6 - streak as usize, streak as u64), "steady {steady}");
        assert_eq!(finished, vec![servesim_engine::Finished { id: 1, outcome: Outcome::Completed, steady_tokens: streak }]);
    }
}

// ---- abandoning a rank, and what the harness asks of an idle one ----

/// `abandon` ends every request held, running ones first, as unschedulable for the reason
/// given (with their open streaks), and frees every block.
#[test]
fn abandon_ends_every_request_and_frees_every_block() {
    let mut e = engine(json!({"block_size": 4, "num_gpu_blocks": 4}));
    e.set_steady_tokens(true);
    e.submit(req(1, 4, 20));
    e.submit(req(2, 16, 20));
    for _ in 0..4 {
        step(&mut e);
    }
    assert_eq!((e.in_flight(), e.metrics().running_requests, e.metrics().active_decode_blocks), (2, 1, 2));
    let stuck = |id, steady_tokens| servesim_engine::Finished { id, outcome: Outcome::Unschedulable("stuck".into()), steady_tokens };
    assert_eq!(e.abandon("stuck"), vec![stuck(1, 2), stuck(2, 0)]);
    assert_eq!((e.in_flight(), e.metrics().active_decode_blocks, e.has_work()), (0, 0, false));
    e.check().unwrap();
}

/// A decode rank abandoned with a reservation still waiting for its KV forgets it.
#[test]
fn abandon_forgets_reservations() {
    let mut e = engine(json!({"worker_type": "decode", "block_size": 4, "num_gpu_blocks": 8}));
    assert!(matches!(e.reserve_destination(req(1, 8, 2)), Reservation::Reserved { .. }));
    assert_eq!((e.in_flight(), e.has_work(), e.idle_with_queue()), (1, false, false));
    let out = e.abandon("gone");
    assert_eq!(out.iter().map(|f| (f.id, f.outcome.clone())).collect::<Vec<_>>(), vec![(1, Outcome::Unschedulable("gone".into()))]);
    assert!(!e.activate(1));
    assert_eq!((e.in_flight(), e.metrics().active_decode_blocks), (0, 0));
    // A new request runs as usual.
    e.submit(req(2, 4, 1));
    assert!(e.has_work());
    e.check().unwrap();
}

/// `idle_with_queue`: nothing runs and some queued request is neither waiting for its KV nor
/// free to join (a blocked head). `in_flight` counts waiting and running requests.
#[test]
fn idle_with_queue_is_a_blocked_queue_with_nothing_running() {
    // A prefill rank holding a finished prompt's blocks: the next request waits for them.
    let mut e = engine(json!({"worker_type": "prefill", "block_size": 4, "num_gpu_blocks": 6}));
    e.submit(req(1, 16, 1));
    assert_eq!((e.in_flight(), e.idle_with_queue()), (1, true));
    e.step();
    e.submit(req(2, 12, 1));
    e.step();
    assert_eq!((e.in_flight(), e.idle_with_queue(), e.has_work(), e.stalled()), (1, true, false, true));
    // Saying again that no reservation waits changes nothing. A change of who may join makes
    // the queue worth another look, which stalls again.
    e.set_destinations_pending(false);
    assert!(!e.has_work());
    e.set_destinations_pending(true);
    e.set_destinations_pending(false);
    assert!(e.has_work());
    e.step();
    assert!(!e.has_work());
    e.release_source(1);
    assert_eq!((e.idle_with_queue(), e.has_work()), (true, true));

    // Something runs: not idle, even with a blocked queue.
    let mut e = engine(json!({"block_size": 4, "num_gpu_blocks": 4}));
    e.submit(req(1, 8, 10));
    e.submit(req(2, 12, 10));
    e.step();
    assert_eq!((e.in_flight(), e.metrics().running_requests, e.idle_with_queue()), (2, 1, false));

    // A decode rank: a reservation waiting for its KV is not a blocked queue; once its KV is in
    // place it is free to join.
    let mut e = engine(json!({"worker_type": "decode", "block_size": 4, "num_gpu_blocks": 8}));
    assert!(matches!(e.reserve_destination(req(1, 8, 2)), Reservation::Reserved { .. }));
    assert_eq!((e.in_flight(), e.idle_with_queue(), e.has_work()), (1, false, false));
    assert!(e.activate(1));
    assert_eq!((e.idle_with_queue(), e.has_work()), (false, true));
    // While reservations wait for room, only a request in place may join: it is one.
    e.set_destinations_pending(true);
    assert!(e.has_work());
    assert_eq!(e.step().tokens, vec![1]);
}

// ---- the decode side: transferred requests joining ----

/// Requests whose KV is in place join without spending budget, as many as can run; but once
/// the pass's budget is spent, one joins and the rest wait for the next pass. Running requests
/// past the spent budget sit the pass out, even a decode step that needs no new block.
#[test]
fn transferred_requests_join_until_the_budget_is_spent() {
    let mut e = engine(json!({"worker_type": "decode", "block_size": 4, "num_gpu_blocks": 64, "max_num_batched_tokens": 1}));
    for id in [1, 2] {
        assert!(matches!(e.reserve_destination(req(id, 6, 10)), Reservation::Reserved { .. }));
        assert!(e.activate(id));
    }
    let p = step(&mut e);
    assert_eq!((p.admitted.clone(), p.tokens.clone(), p.scheduled), (vec![(1, 0, false), (2, 0, false)], vec![1, 2], 0));
    for id in [3, 4] {
        assert!(matches!(e.reserve_destination(req(id, 6, 10)), Reservation::Reserved { .. }));
        assert!(e.activate(id));
    }
    // Request 1 takes the 1-token budget; request 2 gets nothing; request 3 joins, request 4 waits.
    let p = step(&mut e);
    assert_eq!((p.admitted.clone(), p.tokens.clone(), p.scheduled), (vec![(3, 0, false)], vec![1, 3], 1));
    assert_eq!(e.metrics().waiting_requests, 1);
}

/// A decode rank times a pass by its decode batch only: a transferred request decodes from
/// its first pass (its prompt is its context), and a recomputed prompt after a preemption
/// costs no prefill time there. A prefill rank times its prefill only.
#[test]
fn disaggregated_ranks_time_only_their_own_phase() {
    let timer = PassTimer::new(PerfModel::Polynomial(Polynomial), 1.0, 1.0);
    let mut e = engine(json!({"worker_type": "decode", "block_size": 4, "num_gpu_blocks": 64}));
    assert!(matches!(e.reserve_destination(req(1, 8, 3)), Reservation::Reserved { .. }));
    assert!(e.activate(1));
    assert_eq!(step(&mut e).duration, timer.decode(1, 8, 256));
    assert_eq!(step(&mut e).duration, timer.decode(1, 9, 256));

    // Two 6-token prompts on 4 blocks: request 2 is preempted, and readmitted once request 1
    // has completed (pass 12), recomputing its 6 + 3 tokens: committed prefill, but no
    // prefill time on a decode rank.
    let mut e = engine(json!({"worker_type": "decode", "block_size": 4, "num_gpu_blocks": 4}));
    for id in [1, 2] {
        assert!(matches!(e.reserve_destination(req(id, 6, 12)), Reservation::Reserved { .. }));
        assert!(e.activate(id));
    }
    let passes: Vec<Pass> = (0..13).map(|_| step(&mut e)).collect();
    let p = &passes[12];
    assert_eq!((p.admitted.clone(), p.tokens.clone(), p.scheduled, p.committed), (vec![(2, 0, true)], vec![2], 9, 9));
    assert_eq!(p.duration, timer.decode(1, 9, 16));
    assert!(passes[..12].iter().all(|p| p.committed == 0));

    // A prefill rank: request 1 prefills and, given more than one output token, decodes too.
    let mut e = engine(json!({"worker_type": "prefill", "block_size": 4, "num_gpu_blocks": 64}));
    e.submit(req(1, 8, 3));
    assert_eq!(step(&mut e).duration, timer.prefill(1, 8, 0));
    assert_eq!(step(&mut e).duration, Duration::ZERO);
}
