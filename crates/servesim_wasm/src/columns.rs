//! Plain-Rust conversions behind the JS handle: the page's uploads as the files a run reads,
//! per-request records as columns, and the harness's time series as columns.

pub use servesim_sim::build::no_files;
use servesim_sim::report::timeseries::TimeSeries;
use servesim_sim::report::{RequestRecord, Status};

pub use servesim_sim::Uploads;

/// Where this module's runs read measured-kernel files: its own store ([`crate::kernels`]).
pub const KERNELS: Option<servesim_sim::build::ReadFile> = Some(crate::kernels::get);

/// Named columns of equal length.
pub type Columns = Vec<(&'static str, Vec<f64>)>;

fn opt(x: Option<f64>) -> f64 {
    x.unwrap_or(f64::NAN)
}

pub fn status_code(s: Status) -> f64 {
    match s {
        Status::Pending => 0.0,
        Status::Completed => 1.0,
        Status::Rejected => 2.0,
        Status::Unschedulable => 3.0,
    }
}

pub fn record_columns(records: &[RequestRecord]) -> Columns {
    let col = |f: &dyn Fn(&RequestRecord) -> f64| records.iter().map(f).collect::<Vec<f64>>();
    vec![
        ("arrival_ms", col(&|r| r.arrival_ms)),
        ("input_length", col(&|r| r.input_length as f64)),
        ("first_token_ms", col(&|r| opt(r.first_token_ms))),
        ("last_token_ms", col(&|r| opt(r.last_token_ms))),
        ("end_ms", col(&|r| opt(r.end_ms))),
        ("output_tokens", col(&|r| r.output_tokens as f64)),
        ("reused_input_tokens", col(&|r| r.reused_input_tokens as f64)),
        ("admissions", col(&|r| r.admissions as f64)),
        ("status", col(&|r| status_code(r.status))),
        ("worker", col(&|r| r.worker as f64)),
        ("ttst_ms", col(&|r| opt(r.ttst_ms))),
    ]
}

/// A CDF: x values (ascending, distinct) and their percentiles.
pub type Cdf = (Vec<f64>, Vec<f64>);

/// A CDF of at most about `max_points` points, the largest value at 100.
pub fn cdf(mut values: Vec<f64>, max_points: usize) -> Cdf {
    values.retain(|v| v.is_finite());
    values.sort_by(f64::total_cmp);
    let n = values.len();
    let Some(&largest) = values.last() else { return (Vec::new(), Vec::new()) };
    let step = n.div_ceil(max_points.max(1)).max(1);
    let mut points: Vec<(f64, f64)> =
        values.iter().enumerate().step_by(step).map(|(i, &x)| (x, (i + 1) as f64 / n as f64 * 100.0)).collect();
    if points.last().map(|p| p.0) != Some(largest) {
        points.push((largest, 100.0));
    }
    // Strictly increasing x (a chart's requirement): the last percentile of equal values.
    let (mut xs, mut ys): (Vec<f64>, Vec<f64>) = (Vec::with_capacity(points.len()), Vec::with_capacity(points.len()));
    for (x, y) in points {
        if xs.last() == Some(&x) {
            *ys.last_mut().expect("ys follows xs") = y;
        } else {
            xs.push(x);
            ys.push(y);
        }
    }
    (xs, ys)
}

/// TTFT, TPOT and E2E latency CDFs of the completed requests (the page's distribution charts:
/// a few hundred points, not a million records).
pub fn latency_cdfs(records: &[RequestRecord], max_points: usize) -> [(&'static str, Cdf); 3] {
    let (mut ttft, mut tpot, mut e2e) = (Vec::new(), Vec::new(), Vec::new());
    for r in records.iter().filter(|r| r.status == Status::Completed) {
        let Some(first) = r.first_token_ms.filter(|f| f.is_finite()) else { continue };
        ttft.push(first - r.arrival_ms);
        e2e.push(r.end_ms.unwrap_or(f64::NAN) - r.arrival_ms);
        if r.output_tokens >= 2 {
            tpot.push((r.last_token_ms.unwrap_or(f64::NAN) - first) / (r.output_tokens - 1) as f64);
        }
    }
    [("ttft", cdf(ttft, max_points)), ("tpot", cdf(tpot, max_points)), ("e2e", cdf(e2e, max_points))]
}

pub struct RankSeries {
    /// The pool the rank serves in (aggregated, prefill or decode), as the harness names it.
    pub pool: &'static str,
    pub worker: u32,
    pub dp_rank: u32,
    pub columns: Columns,
}

pub struct Series {
    pub interval_ms: f64,
    /// Where the figures come from (`"engine"`: the harness's per-pass metrics).
    pub source: &'static str,
    /// Window ends.
    pub t_ms: Vec<f64>,
    pub cluster: Columns,
    pub ranks: Vec<RankSeries>,
}

/// The harness's time series as named columns.
pub fn engine_series(ts: &TimeSeries) -> Series {
    let c = &ts.cluster;
    let cluster: Columns = vec![
        ("requests_completed", c.requests_completed.clone()),
        ("input_tok_s", c.input_tok_s.clone()),
        ("output_tok_s", c.output_tok_s.clone()),
        ("ttft_p50_ms", c.ttft_p50_ms.clone()),
        ("ttft_p99_ms", c.ttft_p99_ms.clone()),
        ("itl_p50_ms", c.itl_p50_ms.clone()),
        ("itl_p99_ms", c.itl_p99_ms.clone()),
    ];
    let ranks = ts
        .ranks
        .iter()
        .map(|r| {
            let mut columns = vec![
                ("running", r.running.clone()),
                ("waiting", r.waiting.clone()),
                ("kv_usage", r.kv_usage.clone()),
                ("prefix_hit_rate", r.prefix_hit_rate.clone()),
                ("preemptions", r.preemptions.clone()),
                ("pass_ms", r.pass_ms.clone()),
            ];
            if !r.encoder_ms.is_empty() {
                columns.push(("encoder_ms", r.encoder_ms.clone()));
            }
            RankSeries { pool: r.pool, worker: r.worker, dp_rank: r.dp_rank, columns }
        })
        .collect();
    Series { interval_ms: ts.interval_ms, source: "engine", t_ms: ts.t_ms.clone(), cluster, ranks }
}

#[cfg(test)]
mod tests {
    use super::*;
    use servesim_sim::{BuildOptions, Input, Interval, Scenario, SimError, Simulation, build};

    type Read<'a> = &'a mut dyn FnMut(&str) -> Result<Vec<u8>, SimError>;

    fn build_with(s: &Scenario, trace: Option<&str>, interval: Interval, read: Read) -> Result<Simulation, SimError> {
        let mut files = Uploads { trace: trace.map(str::as_bytes), read, kernels: KERNELS };
        build(&Input::Scenario(s.clone()), &mut files, &BuildOptions { interval, timeseries: true })
    }

    fn run(json: &str) -> servesim_sim::RunReport {
        let s = Scenario::from_json_str(json).unwrap();
        build_with(&s, None, Interval::Configured, &mut no_files).unwrap().run()
    }

    #[test]
    fn series_conserve_tokens_and_requests() {
        let s =
            Scenario::from_json_str(r#"{"cluster": {"num_workers": 2}, "workload": {"type": "synthetic", "num_requests": 120}}"#).unwrap();
        let report = build_with(&s, None, Interval::Auto, &mut no_files).unwrap().run();
        let sum = report.summary();
        let series = engine_series(report.timeseries());
        let n = series.t_ms.len();
        // 35 to 80 round windows over the arrivals, and a margin for the tail.
        assert!((35..=130).contains(&n), "{n}");
        assert_eq!(series.source, "engine");
        let col = |name: &str| &series.cluster.iter().find(|(k, _)| *k == name).unwrap().1;
        let secs = series.interval_ms / 1000.0;
        let out: f64 = col("output_tok_s").iter().map(|x| x * secs).sum();
        assert!((out - sum["total_output_tokens"].as_f64().unwrap()).abs() < 1e-6 * out, "{out}");
        let done: f64 = col("requests_completed").iter().sum();
        for (_, v) in &series.cluster {
            assert_eq!(v.len(), n);
        }
        assert_eq!(done, sum["completed_requests"].as_f64().unwrap());
        assert_eq!(series.ranks.len(), 2);
        for rank in &series.ranks {
            for (name, v) in &rank.columns {
                assert_eq!(v.len(), n, "{name}");
            }
        }
    }

    #[test]
    fn cdfs_are_increasing_and_end_at_100() {
        let (x, y) = cdf(vec![3.0, 1.0, 2.0, 2.0, f64::NAN], 600);
        assert_eq!((x, y), (vec![1.0, 2.0, 3.0], vec![25.0, 75.0, 100.0]));
        let (x, y) = cdf((0..10_000).map(|i| (i % 977) as f64).collect(), 100);
        assert!(x.len() <= 102 && x.windows(2).all(|w| w[0] < w[1]), "{}", x.len());
        assert_eq!((x.last(), y.last()), (Some(&976.0), Some(&100.0)));
        assert_eq!(cdf(Vec::new(), 10), (Vec::new(), Vec::new()));
    }

    #[test]
    fn latency_cdfs_cover_the_completed_requests() {
        let report = run(r#"{"workload": {"type": "synthetic", "num_requests": 50}}"#);
        let [(_, ttft), (_, tpot), (_, e2e)] = latency_cdfs(&report.collector.records, 600);
        let sum = report.summary();
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9 * b.abs().max(1.0);
        assert!(close(*ttft.0.last().unwrap(), sum["max_ttft_ms"].as_f64().unwrap()));
        assert!(close(*e2e.0.last().unwrap(), sum["max_e2e_latency_ms"].as_f64().unwrap()));
        assert!(close(tpot.0[0], sum["min_tpot_ms"].as_f64().unwrap()));
    }

    #[test]
    fn record_columns_line_up() {
        let report = run(r#"{"workload": {"type": "synthetic", "num_requests": 30}}"#);
        let cols = record_columns(&report.collector.records);
        assert!(cols.iter().all(|(_, v)| v.len() == 30));
        assert!(cols.iter().find(|(k, _)| *k == "status").unwrap().1.iter().all(|s| *s == 1.0));
    }

    #[test]
    fn trace_workloads_need_the_text_and_name_the_line() {
        let s = Scenario::from_json_str(r#"{"workload": {"type": "trace", "path": "up.jsonl", "trace_block_size": 16}}"#).unwrap();
        let e = build_with(&s, None, Interval::Configured, &mut no_files).err().unwrap();
        assert!(e.0.contains("up.jsonl"), "{e}");
        let e = build_with(
            &s,
            Some("{\"timestamp\": 0, \"input_length\": 4, \"output_length\": 2, \"hash_ids\": [1]}\nnope\n"),
            Interval::Configured,
            &mut no_files,
        )
        .err()
        .unwrap();
        assert!(e.0.starts_with("up.jsonl:2:"), "{e}");
        let ok = build_with(
            &s,
            Some("{\"timestamp\": 0, \"input_length\": 4, \"output_length\": 2, \"hash_ids\": [1]}\n"),
            Interval::Configured,
            &mut no_files,
        )
        .unwrap()
        .run();
        assert_eq!(ok.collector.records.len(), 1);
    }

    #[test]
    fn npz_profiles_come_from_uploads() {
        let s = Scenario::from_json_str(r#"{"engine": {"timing_model": {"type": "external", "provider": "dynamo_profile", "config": {"path": "p.npz"}}}, "workload": {"type": "synthetic", "num_requests": 5}}"#).unwrap();
        let e = build_with(&s, None, Interval::Configured, &mut no_files).err().unwrap();
        assert!(e.0.contains("p.npz") && e.0.contains("upload"), "{e}");
        let e = build_with(&s, None, Interval::Configured, &mut |_| Ok(b"not a zip".to_vec())).err().unwrap();
        assert!(e.0.starts_with("p.npz: "), "{e}");
        let bytes = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/conformance/profiles/profile-a.npz")).unwrap();
        let polynomial = run(r#"{"workload": {"type": "synthetic", "num_requests": 5}}"#).summary();
        let profiled = build_with(&s, None, Interval::Configured, &mut |name| {
            assert_eq!(name, "p.npz");
            Ok(bytes.clone())
        })
        .unwrap()
        .run()
        .summary();
        assert_eq!(profiled["completed_requests"], 5);
        assert_ne!(profiled["mean_ttft_ms"], polynomial["mean_ttft_ms"]);
    }
}
