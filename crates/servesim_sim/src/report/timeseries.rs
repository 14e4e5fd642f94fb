//! Time series for charts, in fixed windows of virtual time: per rank (running, waiting, KV
//! use, prefix hit rate, preemptions, pass time) and for the cluster (completions, token throughput,
//! latency percentiles). Window k covers [k·Δ, (k+1)·Δ) and is stamped with its end.
//!
//! The number of windows is bounded whatever the run: when a run outgrows
//! [`Recorder::max_windows`] windows (a cell budget shared by the ranks), Δ grows tenfold
//! and neighbouring windows merge, so a burst of 10⁷ req/s with microsecond windows, or a
//! ten-thousand-year run with one-second windows, stays small. Ordinary runs never reach it.
//! With automatic windows ([`Recorder::set_auto`]) the run is recorded finely and merged at
//! the end into round windows (1, 2 or 5 × 10ⁿ ms) over what actually ran, cancelled or not.

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
    /// Mean duration of the passes ending in the window, ms (NaN without a pass).
    pub pass_ms: Vec<f64>,
    /// The vision-encoder part of `pass_ms` (mean over the same passes); only in runs that
    /// encoded an image, so text-only series are unchanged.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub encoder_ms: Vec<f64>,
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

impl ClusterWindow {
    fn absorb(&mut self, o: &ClusterWindow) {
        self.completed += o.completed;
        self.input_tokens += o.input_tokens;
        self.output_tokens += o.output_tokens;
        self.ttft.merge(&o.ttft);
        self.itl.merge(&o.itl);
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct RankWindow {
    last: Option<RankMetrics>,
    hit_tokens: u64,
    query_tokens: u64,
    passes: u64,
    pass_ms: f64,
    encoder_ms: f64,
}

impl RankWindow {
    /// Folds in the window that follows this one.
    fn absorb(&mut self, o: &RankWindow) {
        if o.last.is_some() {
            self.last = o.last;
        }
        self.hit_tokens += o.hit_tokens;
        self.query_tokens += o.query_tokens;
        self.passes += o.passes;
        self.pass_ms += o.pass_ms;
        self.encoder_ms += o.encoder_ms;
    }
}

/// Window cells (windows × (ranks + 1)) a recorder may hold before it widens its windows.
const CELL_BUDGET: usize = 4_000_000;

/// Merges every `factor` neighbouring windows into one.
fn merge_windows<W: Default>(windows: &mut Vec<W>, factor: usize, absorb: impl Fn(&mut W, &W)) {
    if factor <= 1 || windows.is_empty() {
        return;
    }
    let old = std::mem::take(windows);
    let mut merged: Vec<W> = Vec::with_capacity(old.len().div_ceil(factor));
    for (k, w) in old.into_iter().enumerate() {
        if k % factor == 0 {
            merged.push(w);
        } else {
            absorb(merged.last_mut().expect("the group's first window was pushed"), &w);
        }
    }
    *windows = merged;
}

/// Folds run events into windows as they happen.
#[derive(Clone, Debug)]
pub struct Recorder {
    /// Off when nobody reads the series (a replay without `--timeseries`): every method
    /// returns at once, and the run skips the per-pass window bookkeeping.
    on: bool,
    interval_ms: f64,
    /// Automatic windows: at the end, merge into at most this many round windows.
    auto_target: Option<usize>,
    cluster: Vec<ClusterWindow>,
    ranks: Vec<(RankSeries, Vec<RankWindow>)>,
}

impl Recorder {
    pub fn new(interval_ms: f64) -> Self {
        Recorder { on: true, interval_ms, auto_target: None, cluster: Vec::new(), ranks: Vec::new() }
    }

    pub fn set_enabled(&mut self, on: bool) {
        self.on = on;
    }

    /// Automatic windows: record in windows of `fine_ms` (a power of ten), and at the end
    /// merge them into the smallest round window (1, 2 or 5 × 10ⁿ ms) giving at most
    /// `target` windows over the run.
    pub fn set_auto(&mut self, fine_ms: f64, target: usize) {
        self.interval_ms = fine_ms;
        self.auto_target = Some(target.max(1));
    }

    pub fn add_rank(&mut self, pool: &'static str, worker: u32, dp_rank: u32) {
        self.ranks.push((RankSeries { pool, worker, dp_rank, ..Default::default() }, Vec::new()));
    }

    /// Windows the recorder holds at most before it widens them tenfold.
    pub fn max_windows(&self) -> usize {
        (CELL_BUDGET / (self.ranks.len() + 1)).clamp(1_000, 100_000)
    }

    /// The window of `t_ms`, widening the windows first if it lies beyond the budget.
    fn window(&mut self, t_ms: f64) -> usize {
        let k = (t_ms / self.interval_ms).floor().max(0.0);
        let max = self.max_windows() as f64;
        if k < max {
            return k as usize;
        }
        let mut factor = 1usize;
        while k / factor as f64 >= max {
            factor *= 10;
        }
        self.widen(factor);
        (t_ms / self.interval_ms).floor().max(0.0) as usize
    }

    /// Merges every `factor` windows into one (Δ × factor).
    fn widen(&mut self, factor: usize) {
        merge_windows(&mut self.cluster, factor, ClusterWindow::absorb);
        for (_, windows) in &mut self.ranks {
            merge_windows(windows, factor, RankWindow::absorb);
        }
        self.interval_ms *= factor as f64;
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

    /// A pass of `rank` ended at `t_ms`: its gauges, and how long it took (the encoder part
    /// included in `pass_ms`).
    pub fn rank_pass(&mut self, rank: usize, t_ms: f64, m: &RankMetrics, pass_ms: f64, encoder_ms: f64) {
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
        w.passes += 1;
        w.pass_ms += pass_ms;
        w.encoder_ms += encoder_ms;
    }

    /// Windows recorded so far.
    fn len(&self) -> usize {
        self.cluster.len().max(self.ranks.iter().map(|r| r.1.len()).max().unwrap_or(0))
    }

    pub fn finish(mut self) -> TimeSeries {
        if let Some(target) = self.auto_target {
            // The smallest round multiple of the fine window that gives at most `target`.
            let n = self.len();
            let mut factor = 1usize;
            for mult in [1usize, 2, 5].into_iter().cycle().scan(1usize, |pow, m| {
                let f = m * *pow;
                if m == 5 {
                    *pow *= 10;
                }
                Some(f)
            }) {
                factor = mult;
                if n.div_ceil(mult) <= target {
                    break;
                }
            }
            self.widen(factor);
        }
        let n = self.len();
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
            let encoded = windows.iter().any(|w| w.encoder_ms > 0.0);
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
                let per_pass = |ms: f64| if w.passes > 0 { ms / w.passes as f64 } else { f64::NAN };
                series.pass_ms.push(per_pass(w.pass_ms));
                if encoded {
                    series.encoder_ms.push(per_pass(w.encoder_ms));
                }
            }
            ts.ranks.push(series);
        }
        ts
    }
}
