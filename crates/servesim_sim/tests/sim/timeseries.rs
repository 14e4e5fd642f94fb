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
