//! Time series for charts, in fixed windows of virtual time: per rank (running, waiting, KV
//! use, prefix hit rate, preemptions) and for the cluster (completions, token throughput,
//! latency percentiles). Window k covers [k·Δ, (k+1)·Δ) and is stamped with its end.

use super::sketch::DdSketch;
use serde::Serialize;
use servesim_engine::RankMetrics;

#[derive(Clone, Debug, Default, Serialize)]
pub struct ClusterSeries {
    /// Requests completed in the window.
    pub requests_completed: Vec<f64>,
    /// Prompt tokens of the requests completed in the window, per second.
    pub input_tok_s: Vec<f64>,
    /// Output tokens emitted in the window, per second.
    pub output_tok_s: Vec<f64>,
    pub ttft_p50_ms: Vec<f64>,
    pub ttft_p99_ms: Vec<f64>,
    pub itl_p50_ms: Vec<f64>,
    pub itl_p99_ms: Vec<f64>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct RankSeries {
    pub pool: &'static str,
    pub worker: u32,
    pub dp_rank: u32,
    /// Gauges as of the last pass ending in the window (carried forward when idle).
    pub running: Vec<f64>,
    pub waiting: Vec<f64>,
    pub kv_usage: Vec<f64>,
    /// Reused / queried prompt tokens of the window's admissions (NaN without admissions).
    pub prefix_hit_rate: Vec<f64>,
    /// Preemptions in the window.
    pub preemptions: Vec<f64>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct TimeSeries {
    pub interval_ms: f64,
    /// Window end times.
    pub t_ms: Vec<f64>,
    pub cluster: ClusterSeries,
    pub ranks: Vec<RankSeries>,
}

#[derive(Clone, Debug, Default)]
struct ClusterWindow {
    completed: u64,
    input_tokens: u64,
    output_tokens: u64,
    ttft: DdSketch,
    itl: DdSketch,
}

#[derive(Clone, Copy, Debug, Default)]
struct RankWindow {
    last: Option<RankMetrics>,
    hit_tokens: u64,
    query_tokens: u64,
}

/// Folds run events into windows as they happen.
#[derive(Clone, Debug)]
pub struct Recorder {
    /// Off when nobody reads the series (a replay without `--timeseries`): every method
    /// returns at once, and the run skips the per-pass window bookkeeping.
    on: bool,
    interval_ms: f64,
    cluster: Vec<ClusterWindow>,
    ranks: Vec<(RankSeries, Vec<RankWindow>)>,
}

impl Recorder {
    pub fn new(interval_ms: f64) -> Self {
        Recorder { on: true, interval_ms, cluster: Vec::new(), ranks: Vec::new() }
    }

    pub fn set_enabled(&mut self, on: bool) {
        self.on = on;
    }

    pub fn add_rank(&mut self, pool: &'static str, worker: u32, dp_rank: u32) {
        self.ranks.push((RankSeries { pool, worker, dp_rank, ..Default::default() }, Vec::new()));
    }

    fn window(&self, t_ms: f64) -> usize {
        (t_ms / self.interval_ms).floor().max(0.0) as usize
    }

    fn cluster_at(&mut self, t_ms: f64) -> &mut ClusterWindow {
        let k = self.window(t_ms);
        if self.cluster.len() <= k {
            self.cluster.resize_with(k + 1, Default::default);
        }
        &mut self.cluster[k]
    }

    /// A pass end at `t_ms` emitted `tokens` tokens.
    pub fn tokens(&mut self, t_ms: f64, tokens: u64) {
        if !self.on {
            return;
        }
        self.cluster_at(t_ms).output_tokens += tokens;
    }

    pub fn gaps(&mut self, t_ms: f64, gap_ms: f64, n: u64) {
        if !self.on {
            return;
        }
        self.cluster_at(t_ms).itl.add_n(gap_ms, n);
    }

    pub fn first_token(&mut self, t_ms: f64, ttft_ms: f64) {
        if !self.on {
            return;
        }
        self.cluster_at(t_ms).ttft.add(ttft_ms);
    }

    pub fn completed(&mut self, t_ms: f64, input_tokens: u32) {
        if !self.on {
            return;
        }
        let w = self.cluster_at(t_ms);
        w.completed += 1;
        w.input_tokens += input_tokens as u64;
    }

    pub fn rank_metrics(&mut self, rank: usize, t_ms: f64, m: &RankMetrics) {
        if !self.on {
            return;
        }
        let k = self.window(t_ms);
        let windows = &mut self.ranks[rank].1;
        if windows.len() <= k {
            windows.resize_with(k + 1, Default::default);
        }
        let w = &mut windows[k];
        w.last = Some(*m);
        w.hit_tokens += m.cache_hit_tokens;
        w.query_tokens += m.cache_query_tokens;
    }

    pub fn finish(self) -> TimeSeries {
        let n = self.cluster.len().max(self.ranks.iter().map(|r| r.1.len()).max().unwrap_or(0));
        let secs = self.interval_ms / 1000.0;
        let mut ts = TimeSeries { interval_ms: self.interval_ms, ..Default::default() };
        ts.t_ms = (1..=n).map(|k| k as f64 * self.interval_ms).collect();
        let empty = ClusterWindow::default();
        for k in 0..n {
            let w = self.cluster.get(k).unwrap_or(&empty);
            let c = &mut ts.cluster;
            c.requests_completed.push(w.completed as f64);
            c.input_tok_s.push(w.input_tokens as f64 / secs);
            c.output_tok_s.push(w.output_tokens as f64 / secs);
            c.ttft_p50_ms.push(w.ttft.quantile(0.5).unwrap_or(f64::NAN));
            c.ttft_p99_ms.push(w.ttft.quantile(0.99).unwrap_or(f64::NAN));
            c.itl_p50_ms.push(w.itl.quantile(0.5).unwrap_or(f64::NAN));
            c.itl_p99_ms.push(w.itl.quantile(0.99).unwrap_or(f64::NAN));
        }
        for (mut series, windows) in self.ranks {
            let mut last = RankMetrics::default();
            let mut preempted_before = 0;
            for k in 0..n {
                let w = windows.get(k).copied().unwrap_or_default();
                if let Some(m) = w.last {
                    last = m;
                }
                series.running.push(last.running_requests as f64);
                series.waiting.push(last.waiting_requests as f64);
                series.kv_usage.push(last.gpu_cache_usage_perc);
                series.prefix_hit_rate.push(if w.query_tokens > 0 { w.hit_tokens as f64 / w.query_tokens as f64 } else { f64::NAN });
                series.preemptions.push((last.preemptions_total - preempted_before) as f64);
                preempted_before = last.preemptions_total;
            }
            ts.ranks.push(series);
        }
        ts
    }
}
