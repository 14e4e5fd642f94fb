//! The reference mocker's own vLLM scheduler scenarios (dynamo-mocker-core §8), pass by pass.

use serde_json::json;
use servesim_engine::{Engine, EngineArgs, Outcome, RankSetup, Request, Scheduler};

fn engine(args: serde_json::Value) -> Engine {
    Engine::new(&EngineArgs::from_json(&args).unwrap().resolve().unwrap(), &RankSetup::single(true)).unwrap()
}

fn req(id: u64, len: u32, out: u32) -> Request {
    // Distinct content per request unless a test shares it on purpose.
    Request { id, prompt: (0..len).map(|t| (id as u32) * 100_000 + t).collect::<Vec<_>>().into(), max_output: out }
}

struct Pass {
    tokens: Vec<u64>,
    finished: Vec<(u64, Outcome)>,
    admitted: Vec<(u64, u32)>,
    preempted: Vec<u64>,
    scheduled: u64,
}

fn step(e: &mut Engine) -> Pass {
    let o = e.step();
    let p = Pass {
        tokens: o.tokens.clone(),
        finished: o.finished.iter().map(|f| (f.id, f.outcome.clone())).collect(),
        admitted: o.admissions.iter().map(|a| (a.id, a.reused_tokens)).collect(),
        preempted: o.preempted.clone(),
        scheduled: o.scheduled_tokens,
    };
    e.check().unwrap();
    p
}

#[test]
fn partial_prefill_stays_running() {
    let mut e = engine(json!({"block_size": 4, "num_gpu_blocks": 6, "max_num_batched_tokens": 12}));
    e.submit(req(1, 8, 4));
    e.submit(req(2, 8, 4));
    let p = step(&mut e);
    assert_eq!(p.tokens, vec![1], "r1 fully prefilled emits its first token; r2 got 4 tokens");
    let m = e.metrics();
    assert_eq!((m.running_requests, m.waiting_requests, m.active_decode_blocks), (2, 0, 3));
}

#[test]
fn running_requests_spend_the_budget_before_waiting_ones() {
    let mut e = engine(json!({"block_size": 4, "num_gpu_blocks": 16, "max_num_batched_tokens": 4}));
    e.submit(req(1, 8, 2));
    let p = step(&mut e);
    assert_eq!((p.scheduled, p.admitted.len()), (4, 1));
    e.submit(req(2, 4, 2));
    let p = step(&mut e);
    assert!(p.admitted.is_empty(), "r1's remaining prompt takes the whole budget");
    assert_eq!(p.tokens, vec![1]);
    let p = step(&mut e);
    assert_eq!(p.admitted, vec![(2, 0)], "r1 decodes (1 token), r2 gets the other 3");
    assert_eq!(p.scheduled, 4);
}

#[test]
fn a_fifo_head_that_does_not_fit_blocks_its_followers() {
    let mut e = engine(json!({"block_size": 4, "num_gpu_blocks": 9}));
    e.submit(req(1, 12, 3)); // 3 blocks; its first decode takes a 4th
    step(&mut e);
    e.submit(req(2, 12, 5)); // needs 3 of the 5 left: fits
    e.submit(req(3, 16, 1)); // needs 4 of the 2 left: blocked
    e.submit(req(4, 4, 1)); // needs 1: would fit, but must not skip the head
    let p = step(&mut e);
    assert_eq!(p.admitted.iter().map(|a| a.0).collect::<Vec<_>>(), vec![2], "the 16-token head blocks the 4-token follower");
    assert_eq!(e.metrics().waiting_requests, 2);
}

#[test]
fn an_oversized_request_is_rejected_and_its_follower_runs() {
    let mut e = engine(json!({"block_size": 4, "num_gpu_blocks": 4}));
    e.submit(req(1, 20, 2));
    e.submit(req(2, 8, 1));
    let p = step(&mut e);
    assert!(matches!(&p.finished[0], (1, Outcome::Rejected(_))));
    assert_eq!(p.admitted, vec![(2, 0)]);
    assert_eq!(p.tokens, vec![2]);
}

#[test]
fn zero_output_completes_after_prefill_without_a_token() {
    let mut e = engine(json!({"block_size": 4, "num_gpu_blocks": 8}));
    e.submit(req(1, 10, 0));
    let p = step(&mut e);
    assert!(p.tokens.is_empty());
    assert_eq!(p.finished, vec![(1, Outcome::Completed)]);
    assert_eq!(e.metrics().active_decode_blocks, 0);
    assert!(!e.has_work());
}

#[test]
fn the_last_cached_block_is_recomputed() {
    let mut e = engine(json!({"block_size": 4, "num_gpu_blocks": 16}));
    let shared: Vec<u32> = (0..12).collect();
    e.submit(Request { id: 1, prompt: shared[..8].to_vec().into(), max_output: 1 });
    step(&mut e);
    // 12 tokens sharing 8 cached: reuses 8, prefills 4.
    e.submit(Request { id: 2, prompt: shared.clone().into(), max_output: 1 });
    let p = step(&mut e);
    assert_eq!((p.admitted.clone(), p.scheduled), (vec![(2, 8)], 4));
    // A fully cached, block-aligned prompt recomputes its whole last block.
    e.submit(Request { id: 3, prompt: shared.clone().into(), max_output: 1 });
    let p = step(&mut e);
    assert_eq!((p.admitted, p.scheduled), (vec![(3, 8)], 4));
}

#[test]
fn lifo_preemption_requeues_the_newest_running_request() {
    let mut e = engine(json!({"block_size": 4, "num_gpu_blocks": 4}));
    e.submit(req(1, 8, 10));
    e.submit(req(2, 8, 10));
    let p = step(&mut e);
    assert_eq!(p.tokens, vec![1, 2]);
    // Both hold 2 full blocks; r1's first decode needs a 5th block: the newest (r2) goes.
    let p = step(&mut e);
    assert_eq!(p.preempted, vec![2]);
    assert_eq!(p.tokens, vec![1]);
    let m = e.metrics();
    assert_eq!((m.running_requests, m.waiting_requests, m.preemptions_total), (1, 1, 1));
}

/// 200 requests × 1000 tokens × 100 outputs on 500 blocks, every combination of shared
/// prefix, prefix caching and chunked prefill: every token is emitted, nothing stays held.
#[test]
fn stress_every_combination_emits_every_token_and_frees_every_block() {
    // Each block manager: the native pool, and kvbm with each eviction backend.
    let managers = [
        json!({}),
        json!({"kv_manager": "kvbm"}),
        json!({"kv_manager": "kvbm", "eviction_backend": "lru"}),
        json!({"kv_manager": "kvbm", "eviction_backend": "multi_lru"}),
    ];
    for manager in managers {
        for shared in [false, true] {
            for caching in [false, true] {
                for chunked in [false, true] {
                    let mut args = json!({
                        "block_size": 16, "num_gpu_blocks": 500,
                        "enable_prefix_caching": caching, "enable_chunked_prefill": chunked,
                    });
                    args.as_object_mut().unwrap().extend(manager.as_object().unwrap().clone());
                    let mut e = engine(args);
                    for id in 0..200u64 {
                        let prompt: Vec<u32> = (0..1000u32).map(|t| if shared && t < 800 { t } else { id as u32 * 10_000 + t }).collect();
                        e.submit(Request { id, prompt: prompt.into(), max_output: 100 });
                    }
                    let (mut tokens, mut completed) = (0u64, 0u32);
                    let mut passes = 0;
                    while e.has_work() {
                        let o = e.step();
                        tokens += o.tokens.len() as u64;
                        completed += o.finished.iter().filter(|f| f.outcome == Outcome::Completed).count() as u32;
                        e.check().unwrap();
                        passes += 1;
                        assert!(passes < 1_000_000, "no progress");
                    }
                    let label = format!("{manager}, shared {shared}, caching {caching}, chunked {chunked}");
                    assert_eq!(tokens, 200 * 100, "{label}");
                    assert_eq!(completed, 200, "{label}");
                    assert_eq!(e.metrics().active_decode_blocks, 0, "{label}");
                }
            }
        }
    }
}

#[test]
fn kvbm_merges_a_recomputed_block_into_its_existing_copy() {
    // B's prompt is A's; B reuses 3 of its 4 blocks and recomputes the last one. The native
    // pool keeps that recomputed block as a second physical copy; kvbm merges it.
    let active_after_b = |manager: serde_json::Value| {
        let mut args = json!({"block_size": 16, "num_gpu_blocks": 100});
        args.as_object_mut().unwrap().extend(manager.as_object().unwrap().clone());
        let mut e = engine(args);
        let prompt: Vec<u32> = (0..64).collect();
        e.submit(Request { id: 1, prompt: prompt.clone().into(), max_output: 50 });
        step(&mut e);
        e.submit(Request { id: 2, prompt: prompt.into(), max_output: 50 });
        let p = step(&mut e);
        assert_eq!(p.admitted, vec![(2, 48)]);
        e.metrics().active_decode_blocks
    };
    let native = active_after_b(json!({}));
    let kvbm = active_after_b(json!({"kv_manager": "kvbm"}));
    assert_eq!(native, kvbm + 1);
}
