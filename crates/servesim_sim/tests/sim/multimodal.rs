//! Multimodal workloads end to end: images cost TTFT over the same number of text tokens, a
//! repeated image hits the encoder cache (and the prefix cache) and costs less than distinct
//! ones, impossible image settings are errors naming the field, and a text-only run has no
//! image keys.

use serde_json::{Map, Value};
use servesim_sim::scenario::Scenario;
use servesim_sim::{BuildOptions, Input, MemFiles, build};

fn run(json: &str) -> Map<String, Value> {
    let s = Scenario::from_json_str(json).unwrap();
    build(&Input::Scenario(s), &mut MemFiles::new(), &BuildOptions::default()).unwrap().with_checks(true).run().summary()
}

fn scenario(engine: &str, input: u32, images: &str) -> String {
    format!(
        r#"{{"engine": {{"block_size": 64 {engine}}},
            "workload": {{"num_requests": 60, "rate_rps": 4, "seed": 3,
                          "input_tokens": {{"mean": {input}}}, "output_tokens": {{"mean": 32}} {images}}}}}"#
    )
}

fn f(m: &Map<String, Value>, k: &str) -> f64 {
    m[k].as_f64().unwrap_or_else(|| panic!("{k} missing"))
}

#[test]
fn a_repeated_image_costs_less_than_distinct_ones() {
    for engine in ["", r#", "enable_prefix_caching": false"#] {
        let img = |distinct| format!(r#", "images": {{"per_request": 1, "tokens_per_image": 1024, "distinct": {distinct}}}"#);
        let repeated = run(&scenario(engine, 512, &img(1)));
        let distinct = run(&scenario(engine, 512, &img(0)));
        assert_eq!(f(&repeated, "num_images"), 60.0);
        assert!(f(&repeated, "mean_ttft_ms") < f(&distinct, "mean_ttft_ms"), "{engine}: {repeated:?} vs {distinct:?}");
        assert!(f(&repeated, "mean_encoder_time_ms") < f(&distinct, "mean_encoder_time_ms"));
        assert_eq!(f(&distinct, "encoder_cache_hit_ratio"), 0.0);
        if !engine.is_empty() {
            // Without prefix caching every request looks its image up; all but the first hit.
            assert!((f(&repeated, "encoder_cache_hit_ratio") - 59.0 / 60.0).abs() < 1e-9, "{repeated:?}");
        }
    }
}

#[test]
fn the_pass_time_series_shows_the_encoder() {
    let json = scenario("", 512, r#", "images": {"per_request": 1, "tokens_per_image": 1024, "distinct": 0}"#);
    let s = Scenario::from_json_str(&json).unwrap();
    let report = build(&Input::Scenario(s), &mut MemFiles::new(), &BuildOptions::default()).unwrap().run();
    let ts = report.timeseries();
    let r = &ts.ranks[0];
    assert_eq!(r.encoder_ms.len(), ts.t_ms.len());
    assert!(r.encoder_ms.iter().any(|&e| e > 0.0));
    // The encoder's time is part of the pass's.
    for (e, p) in r.encoder_ms.iter().zip(&r.pass_ms) {
        assert!(e.is_nan() == p.is_nan() && (e.is_nan() || e <= p), "{e} of {p}");
    }
}

#[test]
fn images_cost_more_than_as_many_text_tokens() {
    let image = run(&scenario("", 512, r#", "images": {"per_request": 1, "tokens_per_image": 1024, "distinct": 0}"#));
    let text = run(&scenario("", 1536, ""));
    assert_eq!(f(&image, "total_input_tokens"), f(&text, "total_input_tokens"));
    assert!(f(&image, "mean_ttft_ms") > f(&text, "mean_ttft_ms") + 5.0, "{} vs {}", f(&image, "mean_ttft_ms"), f(&text, "mean_ttft_ms"));
}

#[test]
fn text_only_runs_have_no_image_keys_and_an_empty_images_block_changes_nothing() {
    let text = run(&scenario("", 512, ""));
    for k in ["num_images", "mean_encoder_time_ms", "encoder_cache_hit_ratio", "encoder_cache_lookups"] {
        assert!(!text.contains_key(k), "{k}");
    }
    let none = run(&scenario("", 512, r#", "images": {"per_request": 0, "tokens_per_image": 576}"#));
    assert_eq!(text, none);
}

#[test]
fn impossible_image_settings_name_the_field() {
    let err = |engine: &str, tokens: u32| {
        let images = format!(r#", "images": {{"per_request": 1, "tokens_per_image": {tokens}}}"#);
        Scenario::from_json_str(&scenario(engine, 512, &images)).unwrap_err().to_string()
    };
    let e = err(r#", "encoder_cache_size": 500"#, 576);
    assert!(e.contains("workload.images.tokens_per_image: 576 is more than engine.encoder_cache_size 500"), "{e}");
    let e = err(r#", "max_num_encoder_input_tokens": 256"#, 576);
    assert!(e.contains("engine.max_num_encoder_input_tokens 256"), "{e}");
    let e = err(r#", "backend": "sglang""#, 576);
    assert!(e.contains("the sglang backend does not model multimodal requests"), "{e}");
    let e = err(r#", "timing_model": {"type": "roofline", "model": "llama-3.1-8b", "gpu": "h100"}"#, 576);
    assert!(e.contains("no vision tower"), "{e}");
    let e = Scenario::from_json_str(&scenario("", 512, r#", "images": {"per_request": 1, "tokens": 5}"#)).unwrap_err().to_string();
    assert!(e.contains("unknown field `tokens`, expected one of `per_request`, `tokens_per_image`, `distinct`"), "{e}");
}

#[test]
fn a_vision_roofline_runs_an_image_workload() {
    let engine = r#", "timing_model": {"type": "roofline", "model": "qwen2.5-vl-7b", "gpu": "h100"}"#;
    let m = run(&scenario(engine, 512, r#", "images": {"per_request": 2, "tokens_per_image": 576, "distinct": 0}"#));
    assert_eq!(f(&m, "num_images"), 120.0);
    assert!(f(&m, "mean_encoder_time_ms") > 1.0, "{m:?}");
}

/// One rule, one answer: a prompt whose images cannot run in one pass (chunked prefill off,
/// 3 × 576 image tokens over an encoder budget of 1024) is rejected whether or not the rank
/// offloads KV to the host: native offload enters the same admission loop through its
/// connector (it used to run a loop of its own that never applied the image rule, and
/// ended all five as stuck).
#[test]
fn an_image_rejection_is_the_same_with_native_offload() {
    let base = r#""block_size": 64, "enable_chunked_prefill": false, "max_num_encoder_input_tokens": 1024"#;
    let offload = format!(r#"{base}, "kv_cache_bytes_per_token": 131072, "native_host_offload": {{"num_host_blocks": 64}}"#);
    for engine in [base.to_string(), offload] {
        let json = format!(
            r#"{{"engine": {{{engine}}},
                "workload": {{"num_requests": 5, "rate_rps": 4, "seed": 3, "input_tokens": {{"mean": 256}},
                              "output_tokens": {{"mean": 8}},
                              "images": {{"per_request": 3, "tokens_per_image": 576, "distinct": 0}}}}}}"#
        );
        let s = Scenario::from_json_str(&json).unwrap();
        let report = build(&Input::Scenario(s), &mut MemFiles::new(), &BuildOptions::default()).unwrap().with_checks(true).run();
        let m = report.summary();
        assert_eq!((f(&m, "rejected_requests"), f(&m, "unschedulable_requests")), (5.0, 0.0), "{engine}: {m:?}");
    }
}
