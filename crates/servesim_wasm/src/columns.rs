//! Plain-Rust conversions behind the JS handle: building a run from a scenario, per-request
//! records as columns, and time series.
//!
//! Until the harness publishes its own time series, [`derived_timeseries`] bins the
//! per-request records: throughput and latency per window are exact functions of the records
//! (output tokens after the first are spread evenly between first and last token); per-worker
//! queue depth, running count and KV use are reconstructed from request lifetimes, so they
//! are labelled `source: "records"`.

use servesim_sim::report::{RequestRecord, Status};
use servesim_sim::scenario::WorkloadSpec;
use servesim_sim::workload::mooncake;
use servesim_sim::{Scenario, SimError, Simulation};

/// Named columns of equal length.
pub type Columns = Vec<(&'static str, Vec<f64>)>;

/// Builds the run: generates the synthetic workload, or parses the uploaded trace text.
pub fn build(scenario: &Scenario, trace: Option<&str>) -> Result<Simulation, SimError> {
    let cfg = scenario.config()?;
    let workload = match &scenario.workload {
        WorkloadSpec::Synthetic(spec) => spec.generate()?,
        WorkloadSpec::Trace { path, trace_block_size, .. } => {
            let name = path.as_deref().unwrap_or("trace.jsonl");
            let text = trace.ok_or_else(|| {
                SimError::new(format!("workload.path: the trace `{name}` is not loaded (upload the file)"))
            })?;
            mooncake::parse(text, *trace_block_size, name)?
        }
    };
    Simulation::new(&cfg, workload)
}

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

pub struct RankSeries {
    pub worker: u32,
    pub dp_rank: u32,
    pub columns: Columns,
}

pub struct Series {
    pub interval_ms: f64,
    /// `"records"` (derived here from per-request records) or `"engine"` (the harness's own).
    pub source: &'static str,
    /// Window ends.
    pub t_ms: Vec<f64>,
    pub cluster: Columns,
    pub ranks: Vec<RankSeries>,
}

/// A round window width giving about `target` windows over `span_ms`.
pub fn nice_interval(span_ms: f64, target: f64) -> f64 {
    if !(span_ms.is_finite() && span_ms > 0.0) {
        return 1.0;
    }
    let raw = span_ms / target;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0].into_iter().find(|m| m * mag >= raw).unwrap_or(10.0);
    (step * mag).max(1e-3)
}

fn quantile(v: &mut [f64], q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    v[(((v.len() - 1) as f64) * q).round() as usize]
}

const MAX_WINDOWS: usize = 4000;

/// Time series binned from the records (see the module doc).
pub fn derived_timeseries(records: &[RequestRecord], scenario: &Scenario, interval_ms: f64) -> Series {
    let span = records.iter().filter_map(|r| r.end_ms.or(r.last_token_ms)).fold(0.0f64, f64::max);
    let span = span.max(records.iter().map(|r| r.arrival_ms).fold(0.0, f64::max));
    let mut dt = if interval_ms.is_finite() && interval_ms > 0.0 { interval_ms } else { nice_interval(span, 120.0) };
    if span / dt > MAX_WINDOWS as f64 {
        dt = nice_interval(span, MAX_WINDOWS as f64 / 2.0);
    }
    let n = ((span / dt).ceil() as usize).max(1);
    let t_ms: Vec<f64> = (0..n).map(|i| (i + 1) as f64 * dt).collect();
    let secs = dt / 1000.0;
    // Window of an event at time t: (i·dt, (i+1)·dt], t = 0 in the first.
    let bin = |t: f64| (((t / dt).ceil() as usize).max(1) - 1).min(n - 1);

    let mut completed = vec![0.0; n];
    let mut input = vec![0.0; n];
    let mut output = vec![0.0; n];
    let mut ttft: Vec<Vec<f64>> = vec![Vec::new(); n];
    let mut tpot: Vec<Vec<f64>> = vec![Vec::new(); n];
    for r in records {
        if r.status == Status::Completed {
            if let Some(end) = r.end_ms {
                completed[bin(end)] += 1.0;
            }
        }
        let (Some(first), Some(last)) = (r.first_token_ms, r.last_token_ms) else { continue };
        input[bin(first)] += r.input_length as f64;
        ttft[bin(first)].push(first - r.arrival_ms);
        output[bin(first)] += 1.0;
        if r.output_tokens >= 2 {
            spread(&mut output, dt, first, last, (r.output_tokens - 1) as f64);
            tpot[bin(last)].push((last - first) / (r.output_tokens - 1) as f64);
        }
    }
    let per_s = |v: Vec<f64>| v.into_iter().map(|x| x / secs).collect::<Vec<_>>();
    let q = |v: &mut [Vec<f64>], p: f64| v.iter_mut().map(|w| quantile(w, p)).collect::<Vec<_>>();
    let cluster: Columns = vec![
        ("requests_completed", completed),
        ("input_tok_s", per_s(input)),
        ("output_tok_s", per_s(output)),
        ("ttft_p50_ms", q(&mut ttft, 0.5)),
        ("ttft_p99_ms", q(&mut ttft, 0.99)),
        ("itl_p50_ms", q(&mut tpot, 0.5)),
        ("itl_p99_ms", q(&mut tpot, 0.99)),
    ];

    let workers = scenario.cluster.num_workers.max(1) as usize;
    let block = scenario.engine.block_size().max(1) as f64;
    let capacity = scenario.engine.num_gpu_blocks as f64 * scenario.dp_size.max(1) as f64;
    let mut ranks = Vec::with_capacity(workers);
    for w in 0..workers {
        let mut running = vec![0.0; n];
        let mut waiting = vec![0.0; n];
        let mut kv_blocks = vec![0.0; n];
        let mut hit = vec![0.0; n];
        let mut query = vec![0.0; n];
        let mut preempt = vec![0.0; n];
        for r in records.iter().filter(|r| r.worker as usize == w) {
            let end = r.end_ms.unwrap_or(f64::INFINITY);
            let first = r.first_token_ms.unwrap_or(end);
            // Sample i (time t_i) sees the request waiting if arrival <= t_i < first token,
            // running (holding KV) if first token <= t_i < end.
            for_samples(dt, n, r.arrival_ms, first, |i| waiting[i] += 1.0);
            let out = r.output_tokens.max(1) as f64;
            let (last, inp) = (r.last_token_ms.unwrap_or(first), r.input_length as f64);
            for_samples(dt, n, first, end, |i| {
                running[i] += 1.0;
                let t = t_ms[i];
                let made = if last > first { 1.0 + (out - 1.0) * ((t - first) / (last - first)).min(1.0) } else { out };
                kv_blocks[i] += ((inp + made) / block).ceil();
            });
            if let Some(first) = r.first_token_ms {
                hit[bin(first)] += r.reused_input_tokens.min(r.input_length) as f64;
                query[bin(first)] += r.input_length as f64;
            }
            if let Some(end) = r.end_ms {
                preempt[bin(end)] += r.admissions.saturating_sub(1) as f64;
            }
        }
        let kv_usage = kv_blocks.iter().map(|b| (b / capacity).min(1.0)).collect();
        let rate = hit.iter().zip(&query).map(|(h, q)| if *q > 0.0 { h / q } else { f64::NAN }).collect();
        ranks.push(RankSeries {
            worker: w as u32,
            dp_rank: 0,
            columns: vec![
                ("running", running),
                ("waiting", waiting),
                ("kv_usage", kv_usage),
                ("prefix_hit_rate", rate),
                ("preemptions", preempt),
            ],
        });
    }
    Series { interval_ms: dt, source: "records", t_ms, cluster, ranks }
}

/// Calls `f(i)` for every sample time t_i = (i+1)·dt with from <= t_i < to.
fn for_samples(dt: f64, n: usize, from: f64, to: f64, mut f: impl FnMut(usize)) {
    if !(to > from) {
        return;
    }
    let start = ((from / dt).ceil() as i64 - 1).max(0) as usize;
    for i in start..n {
        let t = (i + 1) as f64 * dt;
        if t < from {
            continue;
        }
        if t >= to {
            break;
        }
        f(i);
    }
}

/// Adds `amount` spread evenly over (from, to] into the windows it overlaps.
fn spread(bins: &mut [f64], dt: f64, from: f64, to: f64, amount: f64) {
    let n = bins.len();
    if !(to > from) {
        let i = (((to / dt).ceil() as usize).max(1) - 1).min(n - 1);
        bins[i] += amount;
        return;
    }
    let density = amount / (to - from);
    let mut i = ((from / dt).floor() as usize).min(n - 1);
    loop {
        let lo = (i as f64 * dt).max(from);
        let hi = if i == n - 1 { to } else { ((i + 1) as f64 * dt).min(to) };
        if hi > lo {
            bins[i] += (hi - lo) * density;
        }
        if hi >= to || i == n - 1 {
            break;
        }
        i += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(json: &str) -> servesim_sim::RunReport {
        let s = Scenario::from_json_str(json).unwrap();
        build(&s, None).unwrap().run()
    }

    #[test]
    fn intervals_are_round() {
        assert_eq!(nice_interval(12_000.0, 120.0), 100.0);
        assert_eq!(nice_interval(25_000.0, 120.0), 500.0);
        assert_eq!(nice_interval(0.0, 120.0), 1.0);
    }

    #[test]
    fn series_conserve_tokens_and_requests() {
        let s = Scenario::from_json_str(r#"{"cluster": {"num_workers": 2}, "workload": {"type": "synthetic", "num_requests": 120}}"#).unwrap();
        let report = build(&s, None).unwrap().run();
        let sum = report.summary();
        let series = derived_timeseries(&report.collector.records, &s, 0.0);
        let n = series.t_ms.len();
        assert!(n > 10 && n <= MAX_WINDOWS);
        let col = |name: &str| &series.cluster.iter().find(|(k, _)| *k == name).unwrap().1;
        let secs = series.interval_ms / 1000.0;
        let out: f64 = col("output_tok_s").iter().map(|x| x * secs).sum();
        assert!((out - sum["total_output_tokens"].as_f64().unwrap()).abs() < 1e-6 * out, "{out}");
        let done: f64 = col("requests_completed").iter().sum();
        assert_eq!(done, sum["completed_requests"].as_f64().unwrap());
        assert_eq!(series.ranks.len(), 2);
        for rank in &series.ranks {
            for (name, v) in &rank.columns {
                assert_eq!(v.len(), n, "{name}");
            }
        }
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
        let e = build(&s, None).err().unwrap();
        assert!(e.0.contains("up.jsonl"), "{e}");
        let e = build(&s, Some("{\"timestamp\": 0, \"input_length\": 4, \"output_length\": 2, \"hash_ids\": [1]}\nnope\n")).err().unwrap();
        assert!(e.0.starts_with("up.jsonl:2:"), "{e}");
        let ok = build(&s, Some("{\"timestamp\": 0, \"input_length\": 4, \"output_length\": 2, \"hash_ids\": [1]}\n")).unwrap().run();
        assert_eq!(ok.collector.records.len(), 1);
    }

    #[test]
    fn spread_conserves_amounts() {
        let mut bins = vec![0.0; 5];
        spread(&mut bins, 10.0, 5.0, 35.0, 30.0);
        assert_eq!(bins, vec![5.0, 10.0, 10.0, 5.0, 0.0]);
        let mut bins = vec![0.0; 2];
        spread(&mut bins, 10.0, 15.0, 15.0, 2.0);
        assert_eq!(bins, vec![0.0, 2.0]);
    }
}
