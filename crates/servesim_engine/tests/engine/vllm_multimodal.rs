//! Multimodal requests in the vLLM scheduler: the per-pass encoder budget, the encoder cache
//! (a hit skips the encoder; unreferenced entries are evicted when room is needed), and the
//! refusals of what is not modelled.

use serde_json::json;
use servesim_engine::sequence::Image;
use servesim_engine::{Engine, EngineArgs, Outcome, Prompt, RankSetup, Request, Scheduler};

fn engine(args: serde_json::Value) -> Engine {
    Engine::new(&EngineArgs::from_json(&args).unwrap().resolve().unwrap(), &RankSetup::single(true)).unwrap()
}

/// `text` distinct text tokens with `images` (tokens, hash) placed at `offset`.
fn req(id: u64, text: u32, offset: u32, images: &[(u32, u64)], out: u32) -> Request {
    let runs = (0..text).map(|t| ((id as u32) * 100_000 + t, 1));
    let images: Vec<Image> = images.iter().map(|&(tokens, hash)| Image { offset, tokens, hash }).collect();
    Request { id, prompt: Prompt::with_images(runs, &images), max_output: out }
}

struct Pass {
    tokens: Vec<u64>,
    scheduled: u64,
    encoded: Vec<u64>,
    encoder_ms: f64,
    lookups: u32,
    hits: u32,
    finished: Vec<(u64, Outcome)>,
}

fn step(e: &mut Engine) -> Pass {
    let o = e.step();
    let p = Pass {
        tokens: o.tokens.clone(),
        scheduled: o.scheduled_tokens,
        encoded: o.encoded.clone(),
        encoder_ms: o.encoder_duration.as_secs_f64() * 1000.0,
        lookups: o.encoder_lookups,
        hits: o.encoder_hits,
        finished: o.finished.iter().map(|f| (f.id, f.outcome.clone())).collect(),
    };
    e.check().unwrap();
    p
}

#[test]
fn the_encoder_runs_before_the_image_and_is_timed() {
    let mut e = engine(json!({"block_size": 4, "num_gpu_blocks": 64, "encoder_ms_per_token": 0.5,
        "timing_model": {"type": "fixed", "prefill_ms": 10, "decode_ms": 2}}));
    e.submit(req(1, 8, 4, &[(8, 77)], 2));
    let p = step(&mut e);
    assert_eq!(p.scheduled, 16);
    assert_eq!((p.encoded, p.lookups, p.hits), (vec![1], 1, 0));
    assert!((p.encoder_ms - 4.0).abs() < 1e-9, "8 image tokens at 0.5 ms: {}", p.encoder_ms);
    let p = step(&mut e);
    assert_eq!((p.encoder_ms, p.lookups), (0.0, 0), "decode needs no encoder");
}

#[test]
fn the_encoder_budget_splits_a_pass() {
    // Two requests with a 6-token image each; the encoder takes 8 tokens per pass: the second
    // request's chunk stops before its image.
    let mut e = engine(json!({"block_size": 4, "num_gpu_blocks": 64, "max_num_encoder_input_tokens": 8, "encoder_cache_size": 64}));
    e.submit(req(1, 4, 2, &[(6, 1)], 3));
    e.submit(req(2, 4, 2, &[(6, 2)], 3));
    let p = step(&mut e);
    assert_eq!(p.encoded, vec![1]);
    assert_eq!(p.scheduled, 10 + 2, "r1 whole; r2 only its 2 text tokens before the image");
    assert_eq!(p.tokens, vec![1]);
    let p = step(&mut e);
    assert_eq!(p.encoded, vec![2], "r2's image is encoded in the next pass");
    assert_eq!(p.scheduled, 1 + 8);
}

#[test]
fn a_cached_image_skips_the_encoder() {
    let mut e = engine(json!({"block_size": 4, "num_gpu_blocks": 64, "enable_prefix_caching": false}));
    e.submit(req(1, 4, 4, &[(8, 5)], 1));
    let p = step(&mut e);
    assert_eq!((p.encoded, p.lookups, p.hits), (vec![1], 1, 0));
    // Same image, other text: the encoder output is still cached (unreferenced, not evicted).
    e.submit(req(2, 4, 4, &[(8, 5)], 1));
    let p = step(&mut e);
    assert!(p.encoded.is_empty());
    assert_eq!((p.lookups, p.hits, p.encoder_ms), (1, 1, 0.0));
}

#[test]
fn unreferenced_outputs_are_evicted_when_the_cache_is_full() {
    // Room for one 8-token image: a second image evicts the first once it is consumed, so the
    // first image must be encoded again.
    let mut e = engine(json!({"block_size": 4, "num_gpu_blocks": 64, "enable_prefix_caching": false, "encoder_cache_size": 8}));
    e.submit(req(1, 4, 0, &[(8, 5)], 1));
    assert_eq!(step(&mut e).encoded, vec![1]);
    e.submit(req(2, 4, 0, &[(8, 6)], 1));
    assert_eq!(step(&mut e).encoded, vec![2]);
    e.submit(req(3, 4, 0, &[(8, 5)], 1));
    let p = step(&mut e);
    assert_eq!((p.encoded, p.hits), (vec![3], 0));
}

#[test]
fn a_referenced_output_is_not_evicted_and_the_next_image_waits() {
    // r1's image is still being prefilled (chunked) and holds the whole cache: r2's image waits.
    let mut e = engine(
        json!({"block_size": 4, "num_gpu_blocks": 64, "max_num_batched_tokens": 6, "max_num_encoder_input_tokens": 8, "encoder_cache_size": 8}),
    );
    e.submit(req(1, 0, 0, &[(8, 5)], 1));
    e.submit(req(2, 0, 0, &[(8, 6)], 1));
    let p = step(&mut e);
    assert_eq!((p.encoded, p.scheduled), (vec![1], 6));
    let p = step(&mut e);
    assert!(p.encoded.is_empty(), "r2 cannot get room while r1 needs its output");
    assert_eq!(p.scheduled, 2);
    let p = step(&mut e);
    assert_eq!(p.encoded, vec![2], "r1's output was released at the previous pass end");
}

#[test]
fn prefix_caching_covers_image_tokens_by_content() {
    let mut e = engine(json!({"block_size": 4, "num_gpu_blocks": 64}));
    let shared = |id| Request { id, prompt: Prompt::with_images([(9, 4)], &[Image { offset: 4, tokens: 8, hash: 42 }]), max_output: 1 };
    e.submit(shared(1));
    step(&mut e);
    e.submit(shared(2));
    let o = e.step();
    assert_eq!(o.admissions[0].reused_tokens, 8, "text block and first image block reused (the last block is recomputed)");
    assert!(o.encoded.is_empty(), "the image's tail is recomputed from the encoder cache");
    assert_eq!(o.encoder_hits, 1);
    // A different image at the same place shares only the text.
    e.submit(Request { id: 3, prompt: Prompt::with_images([(9, 4)], &[Image { offset: 4, tokens: 8, hash: 43 }]), max_output: 1 });
    let o = e.step();
    assert_eq!(o.admissions[0].reused_tokens, 4);
}

#[test]
fn images_that_cannot_run_are_refused_with_a_reason() {
    let mut e = engine(json!({"block_size": 4, "num_gpu_blocks": 64, "encoder_cache_size": 4}));
    e.submit(req(1, 4, 0, &[(8, 5)], 1));
    let p = step(&mut e);
    assert!(
        matches!(&p.finished[0].1, Outcome::Rejected(r) if r.contains("more than the encoder cache (encoder_cache_size 4)")),
        "{:?}",
        p.finished
    );
    for backend in ["sglang", "trtllm"] {
        let mut e = engine(json!({"backend": backend, "num_gpu_blocks": 64}));
        e.submit(req(1, 4, 0, &[(8, 5)], 1));
        let mut reason = None;
        for _ in 0..3 {
            if let Some((_, Outcome::Rejected(r) | Outcome::Unschedulable(r))) = step(&mut e).finished.first() {
                reason = Some(r.clone());
            }
        }
        assert!(
            reason.as_deref().is_some_and(|r| r.contains(&format!("the {backend} backend does not model multimodal requests"))),
            "{reason:?}"
        );
    }
    let mut e = engine(json!({"timing_model": {"type": "roofline", "model": "qwen2.5-7b", "gpu": "h100"}}));
    e.submit(req(1, 4, 0, &[(8, 5)], 1));
    assert!(matches!(&step(&mut e).finished[0].1, Outcome::Rejected(r) if r.contains("no vision tower")));
}

#[test]
fn the_roofline_times_a_vision_tower() {
    let mut e = engine(json!({"timing_model": {"type": "roofline", "model": "qwen2.5-vl-7b", "gpu": "h100"}}));
    e.submit(req(1, 100, 0, &[(1024, 5)], 1));
    let p = step(&mut e);
    // ~0.67 B parameters × 4 patches per token × 1024 tokens × 2 FLOPs plus attention, at 60 % of 989 TFLOPS.
    assert!(p.encoder_ms > 5.0 && p.encoder_ms < 40.0, "{}", p.encoder_ms);
}

#[test]
fn text_only_requests_do_not_touch_the_encoder() {
    let mut e = engine(json!({"block_size": 4, "num_gpu_blocks": 64}));
    e.submit(req(1, 12, 0, &[], 3));
    for _ in 0..3 {
        let p = step(&mut e);
        assert_eq!((p.encoder_ms, p.lookups, p.encoded.len()), (0.0, 0, 0));
    }
}
