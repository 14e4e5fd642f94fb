//! The SGLang core against the reference's behaviour, pass by pass.

use serde_json::{Value, json};
use servesim_engine::perf::duration_ms;
use servesim_engine::{Engine, EngineArgs, RankSetup, Request, Scheduler};

fn engine(engine: Value) -> Engine {
    let mut args = json!({"backend": "sglang"});
    for (k, v) in engine.as_object().unwrap() {
        args[k] = v.clone();
    }
    Engine::new(&EngineArgs::from_json(&args).unwrap().resolve().unwrap(), &RankSetup::single(false)).unwrap()
}

/// A prompt of `len` tokens, distinct per `seed` (a shared seed shares the prefix).
fn req(id: u64, seed: u32, len: u32, out: u32) -> Request {
    Request { id, prompt: (0..len).map(|t| seed * 1_000_000 + t).collect::<Vec<_>>().into(), max_output: out }
}

fn p(tokens: f64) -> f64 {
    4.209989e-7 * tokens * tokens + 1.518344e-2 * tokens + 16.50142
}

fn d(kv: f64, total: f64) -> f64 {
    let u = kv / total;
    (-25.74 * (u * u) + 54.01 * u + 5.74).max(1.0)
}

struct Pass {
    ms: f64,
    tokens: Vec<u64>,
    admitted: Vec<(u64, u32)>,
    retracted: Vec<u64>,
}

fn step(e: &mut Engine) -> Pass {
    let o = e.step();
    Pass {
        ms: duration_ms(o.duration),
        tokens: o.tokens.clone(),
        admitted: o.admissions.iter().map(|a| (a.id, a.reused_tokens)).collect(),
        retracted: o.preempted.clone(),
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-5
}

#[test]
fn extend_pass_gives_the_first_token_and_running_requests_wait() {
    // §1.5: [0,100,3] then a 1000-token request: its extend pass does not decode the first.
    let mut e = engine(json!({"num_gpu_blocks": 16384}));
    e.submit(req(1, 1, 100, 3));
    let s = step(&mut e);
    assert!(close(s.ms, p(100.0)) && s.tokens == vec![1]);
    e.submit(req(2, 2, 1000, 1));
    let s = step(&mut e);
    assert!(close(s.ms, p(1000.0)), "an extend pass: {}", s.ms);
    assert_eq!(s.tokens, vec![2]);
    let s = step(&mut e);
    assert!(close(s.ms, d(101.0, 16384.0)) && s.tokens == vec![1]);
}

#[test]
fn chunk_budget_truncates_the_last_request_and_times_by_floored_means() {
    // §1.2a: three 3000-token prompts share 8192 tokens: 3000 + 3000 + 2192, timed P(8190).
    let mut e = engine(json!({}));
    for i in 0..3 {
        e.submit(req(i, i as u32 + 1, 3000, 2 + i as u32));
    }
    let s = step(&mut e);
    assert_eq!(s.admitted.len(), 3);
    assert_eq!(s.tokens, vec![0, 1]);
    assert!(close(s.ms, p(8190.0)), "{}", s.ms);
    let s = step(&mut e);
    assert!(close(s.ms, p(808.0)) && s.tokens == vec![2], "the remainder runs alone");
}

#[test]
fn output_reservation_holds_back_a_request() {
    // §1.3: pool 200 with [50, 100 out] running: x + y < 50 joins pass 1.
    for (x, y, joins) in [(40, 9, true), (40, 10, false), (45, 4, true), (45, 5, false)] {
        let mut e = engine(json!({"num_gpu_blocks": 200}));
        e.submit(req(1, 1, 50, 100));
        e.submit(req(2, 2, x, y));
        let s = step(&mut e);
        assert_eq!(s.admitted.len() == 2, joins, "({x}, {y})");
    }
}

#[test]
fn lpm_puts_the_longest_cached_match_first() {
    // §1.4: after a 64-token prompt is cached, LPM runs the request sharing it first.
    let mut e = engine(json!({"block_size": 16, "sglang": {"schedule_policy": "lpm", "max_prefill_tokens": 100}}));
    e.submit(req(1, 1, 64, 1));
    step(&mut e);
    e.submit(req(2, 2, 96, 1));
    // The same first 64 tokens as request 1, then its own.
    let tokens: Vec<u32> = (0..64).map(|t| 1_000_000 + t).chain((64..128).map(|t| 9_000_000 + t)).collect();
    e.submit(Request { id: 3, prompt: tokens.into(), max_output: 2 });
    let s = step(&mut e);
    assert_eq!(s.admitted, vec![(3, 64)]);
    assert!(close(s.ms, p(64.0)));
}

#[test]
fn decode_pressure_retracts_the_request_with_fewest_tokens() {
    // §1.6 E3: pool 200, clip 10: the later request (fewer generated tokens) is retracted,
    // the earlier never.
    let mut e = engine(json!({"num_gpu_blocks": 200, "sglang": {"clip_max_new_tokens": 10}}));
    e.submit(req(1, 1, 40, 100));
    let mut retracted = Vec::new();
    for pass in 0..400 {
        if pass == 5 {
            e.submit(req(2, 2, 40, 101));
        }
        if !e.has_work() {
            break;
        }
        retracted.extend(step(&mut e).retracted);
    }
    assert!(!retracted.is_empty());
    assert!(retracted.iter().all(|&id| id == 2), "{retracted:?}");
}

/// The prefix-cache counters are the pass's own: an extend pass reports its lookups, the
/// decode pass after it none.
#[test]
fn prefix_cache_counters_are_per_pass() {
    let mut e = engine(json!({"num_gpu_blocks": 16384}));
    e.submit(req(1, 1, 100, 3));
    e.step();
    e.submit(req(2, 1, 100, 3));
    let o = e.step();
    assert_eq!((o.metrics.cache_hit_tokens > 0, o.metrics.cache_query_tokens), (true, 100));
    let o = e.step();
    assert_eq!(o.admissions.len(), 0);
    assert_eq!((o.metrics.cache_hit_tokens, o.metrics.cache_query_tokens), (0, 0));
}
