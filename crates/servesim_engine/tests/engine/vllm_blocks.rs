//! The vLLM core pass by pass with exact block counts: what each admission, reservation,
//! preemption and decode step takes from the pool and makes cache-visible, and the pass
//! output's counters (scheduled and committed prefill tokens, prefix hits, durations).
//! Each test pins a behaviour that only the slow end-to-end suite, or nothing, used to check
//! (see docs/testing.md, mutation testing).

use serde_json::json;
use servesim_engine::perf::{PassTimer, PerfModel, Polynomial};
use servesim_engine::{Engine, EngineArgs, Outcome, RankSetup, Request, Reservation};
use std::time::Duration;

fn engine(args: serde_json::Value) -> Engine {
    Engine::new(&EngineArgs::from_json(&args).unwrap(), &RankSetup::single(true)).unwrap()
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
