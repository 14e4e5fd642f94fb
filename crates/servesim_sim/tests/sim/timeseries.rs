//! The time series add up to the summary's totals, per window and per rank.

use servesim_sim::scenario::Scenario;
use servesim_sim::{BuildOptions, Input, MemFiles, build};

#[test]
fn windows_add_up_to_the_summary() {
    let s = Scenario::from_json_str(
        r#"{"engine": {"block_size": 16, "num_gpu_blocks": 600},
            "cluster": {"num_workers": 2, "router_mode": "kv_router"},
            "workload": {"type": "synthetic", "num_requests": 300, "rate_rps": 30,
                         "input_tokens": {"mean": 1500, "stddev": 400},
                         "output_tokens": {"mean": 120, "stddev": 40},
                         "shared_prefix_ratio": 0.5, "num_prefix_groups": 3},
            "timeseries_interval_ms": 250}"#,
    )
    .unwrap();
    let report = build(&Input::Scenario(s), &mut MemFiles::new(), &BuildOptions::default()).unwrap().with_checks(true).run();
    let summary = report.summary();
    let ts = report.timeseries();
    let secs = ts.interval_ms / 1000.0;
    let total = |v: &[f64]| v.iter().sum::<f64>();
    assert_eq!(total(&ts.cluster.requests_completed), summary["completed_requests"].as_f64().unwrap());
    let out = total(&ts.cluster.output_tok_s) * secs;
    assert!((out - summary["total_output_tokens"].as_f64().unwrap()).abs() < 1e-6, "{out}");
    let input = total(&ts.cluster.input_tok_s) * secs;
    assert!((input - summary["total_input_tokens"].as_f64().unwrap()).abs() < 1e-6, "{input}");
    // The windows cover the run: the last ends at or after the last completion.
    assert!(*ts.t_ms.last().unwrap() >= summary["duration_ms"].as_f64().unwrap());
    assert_eq!(ts.ranks.len(), 2);
    for r in &ts.ranks {
        assert_eq!(r.running.len(), ts.t_ms.len());
        assert!(r.kv_usage.iter().all(|u| (0.0..=1.0).contains(u)));
        assert!(r.running.iter().any(|&n| n > 0.0), "both workers got work");
    }
    // The shared prefixes show up as prefix hits somewhere.
    assert!(ts.ranks.iter().any(|r| r.prefix_hit_rate.iter().any(|h| *h > 0.0)));
}

#[test]
fn pass_times_are_the_timing_models() {
    // Fixed timing: a decode-only pass takes 5 ms, one with prefill 20 ms (plus 5 with decodes
    // beside it), so every window's mean lies between, and a run of long prompts shows both.
    let s = Scenario::from_json_str(
        r#"{"engine": {"block_size": 16, "timing_model": {"type": "fixed", "prefill_ms": 20, "decode_ms": 5}},
            "workload": {"num_requests": 40, "rate_rps": 5, "input_tokens": {"mean": 2000}, "output_tokens": {"mean": 200}},
            "timeseries_interval_ms": 100}"#,
    )
    .unwrap();
    let report = build(&Input::Scenario(s), &mut MemFiles::new(), &BuildOptions::default()).unwrap().run();
    let ts = report.timeseries();
    let r = &ts.ranks[0];
    assert_eq!(r.pass_ms.len(), ts.t_ms.len());
    let seen: Vec<f64> = r.pass_ms.iter().copied().filter(|p| p.is_finite()).collect();
    assert!(seen.iter().all(|p| (5.0..=25.0).contains(p)), "{seen:?}");
    assert!(seen.contains(&5.0), "decode-only windows");
    assert!(seen.iter().any(|&p| p > 5.0), "windows with prefill");
    // Windows where the rank was idle have no pass.
    assert!(r.pass_ms.iter().zip(&r.running).all(|(p, &n)| p.is_finite() || n == 0.0));
    assert!(r.encoder_ms.is_empty(), "a text-only run has no encoder series");
    let json = serde_json::to_value(ts).unwrap();
    assert!(json["ranks"][0].get("encoder_ms").is_none());
}
