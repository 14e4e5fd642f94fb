//! TRT-LLM's scheduler shape (`backend: "trtllm"`, guaranteed no evict), pass by pass: the
//! vLLM core under TRT-LLM's capacity policy.

use serde_json::json;
use servesim_engine::{Engine, EngineArgs, Outcome, RankSetup, Request, Scheduler};

fn engine(args: serde_json::Value) -> Engine {
    let mut args = args;
    args["backend"] = json!("trtllm");
    Engine::new(&EngineArgs::from_json(&args).unwrap().resolve().unwrap(), &RankSetup::single(true)).unwrap()
}

fn req(id: u64, len: u32, out: u32) -> Request {
    Request { id, prompt: (0..len).map(|t| (id as u32) * 100_000 + t).collect::<Vec<_>>().into(), max_output: out }
}

/// Runs passes until `id` is admitted; returns how many passes that took.
fn passes_until_admitted(e: &mut Engine, id: u64) -> u32 {
    for n in 1..100_000 {
        let o = e.step();
        let admitted = o.admissions.iter().any(|a| a.id == id);
        e.check().unwrap();
        if admitted {
            return n;
        }
    }
    panic!("request {id} never admitted");
}

/// Runs passes until `id` is admitted; returns the requests that finished meanwhile.
fn finished_before_admitted(e: &mut Engine, id: u64) -> Vec<u64> {
    let mut finished = Vec::new();
    loop {
        let o = e.step();
        finished.extend(o.finished.iter().map(|f| f.id));
        if o.admissions.iter().any(|a| a.id == id) {
            e.check().unwrap();
            return finished;
        }
        e.check().unwrap();
        assert!(e.has_work(), "request {id} never admitted");
    }
}

fn drain(e: &mut Engine) -> (u64, Vec<(u64, Outcome)>) {
    let (mut tokens, mut finished) = (0, Vec::new());
    while e.has_work() {
        let o = e.step();
        tokens += o.tokens.len() as u64;
        finished.extend(o.finished.iter().map(|f| (f.id, f.outcome.clone())));
        assert!(o.preempted.is_empty(), "guaranteed_no_evict preempts nobody");
        e.check().unwrap();
    }
    (tokens, finished)
}

#[test]
fn the_default_block_is_32_tokens() {
    let a = EngineArgs::from_json(&json!({"backend": "trtllm"})).unwrap();
    assert_eq!(a.block_size(), 32);
}

/// The reference notes' experiment: 60 blocks of 32; requests of 1000/50, 1000/400 and 600/10
/// tokens. Request 2 reserves its prompt and whole output (44 blocks), so request 3 (20
/// blocks) waits until request 2 is done, not only request 1. With 90 blocks request 2 joins
/// request 1 at once (33 + 44 ≤ 90) and request 3 waits for request 1.
#[test]
fn a_request_is_admitted_only_with_room_for_its_whole_output() {
    let mut e = engine(json!({"num_gpu_blocks": 60}));
    for (id, len, out) in [(1, 1000, 50), (2, 1000, 400), (3, 600, 10)] {
        e.submit(req(id, len, out));
    }
    assert_eq!(finished_before_admitted(&mut e, 3), vec![1, 2], "request 3 waits for request 2 to finish");

    let mut e = engine(json!({"num_gpu_blocks": 90}));
    for (id, len, out) in [(1, 1000, 50), (2, 1000, 400), (3, 600, 10)] {
        e.submit(req(id, len, out));
    }
    assert_eq!(passes_until_admitted(&mut e, 2), 1, "33 + 44 blocks fit in 90");
    assert_eq!(finished_before_admitted(&mut e, 3), vec![1], "request 3 (20 blocks) waits for request 1 to end");
}

#[test]
fn outputs_are_clamped_to_the_pool_and_a_prompt_that_fills_it_is_rejected() {
    // 33 blocks of 32 = 1056 tokens: a 1000-token prompt can emit 56 tokens at most.
    let mut e = engine(json!({"num_gpu_blocks": 33}));
    e.submit(req(1, 1000, 400));
    let (tokens, finished) = drain(&mut e);
    assert_eq!((tokens, finished), (56, vec![(1, Outcome::Completed)]));
    // 31 blocks = 992 tokens: the prompt alone does not fit.
    let mut e = engine(json!({"num_gpu_blocks": 31}));
    e.submit(req(1, 1000, 50));
    e.submit(req(2, 600, 10));
    let (tokens, finished) = drain(&mut e);
    assert!(matches!(&finished[0], (1, Outcome::Rejected(_))));
    assert_eq!(tokens, 10);
}

#[test]
fn max_model_len_caps_the_output_on_arrival() {
    let mut e = engine(json!({"num_gpu_blocks": 100, "max_model_len": 1020}));
    e.submit(req(1, 1000, 50));
    e.submit(req(2, 1020, 5));
    let (tokens, finished) = drain(&mut e);
    assert_eq!(tokens, 20);
    assert!(finished.iter().any(|f| matches!(f, (2, Outcome::Rejected(_)))));
}

#[test]
fn a_wholly_cached_prompt_is_reused_whole_and_decodes_at_once() {
    let mut e = engine(json!({"block_size": 4, "num_gpu_blocks": 16}));
    let shared: Vec<u32> = (0..12).collect();
    e.submit(Request { id: 1, prompt: shared.clone().into(), max_output: 1 });
    e.step();
    // No block is given back for recomputation: all 12 tokens reused, nothing to prefill.
    e.submit(Request { id: 2, prompt: shared.into(), max_output: 2 });
    let o = e.step();
    assert_eq!(o.admissions.iter().map(|a| (a.id, a.reused_tokens)).collect::<Vec<_>>(), vec![(2, 12)]);
    assert_eq!((o.scheduled_tokens, o.tokens.clone()), (0, vec![2]));
    e.check().unwrap();
}

/// The vLLM stress test under TRT-LLM: every token emitted, nothing preempted or left held.
#[test]
fn stress_never_preempts_and_frees_every_block() {
    for shared in [false, true] {
        for caching in [false, true] {
            for chunked in [false, true] {
                let mut e = engine(json!({
                    "block_size": 16, "num_gpu_blocks": 500,
                    "enable_prefix_caching": caching, "enable_chunked_prefill": chunked,
                }));
                for id in 0..200u64 {
                    let prompt: Vec<u32> = (0..1000u32).map(|t| if shared && t < 800 { t } else { id as u32 * 10_000 + t }).collect();
                    e.submit(Request { id, prompt: prompt.into(), max_output: 100 });
                }
                let (tokens, finished) = drain(&mut e);
                let label = format!("shared {shared}, caching {caching}, chunked {chunked}");
                assert_eq!(tokens, 200 * 100, "{label}");
                assert_eq!(finished.iter().filter(|f| f.1 == Outcome::Completed).count(), 200, "{label}");
                assert_eq!(e.metrics().active_decode_blocks, 0, "{label}");
                assert_eq!(e.metrics().preemptions_total, 0, "{label}");
            }
        }
    }
}
