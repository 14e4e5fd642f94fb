//! The collector: per-request timelines, folded into Dynamo's replay summary (same keys, same
//! definitions) and per-request records.

pub mod config;
pub mod events;
pub mod power;
mod run;
mod sketch;
mod slo;
mod stats;
pub mod timeseries;

pub use run::{Column, RunReport};
use rustc_hash::FxHashMap;
use serde::Serialize;
use serde_json::{Map, Value};
pub use sketch::DdSketch;
pub use slo::Slo;
use stats::{Samples, Sketched, num};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Not finished when the run ended (a cancelled run).
    Pending,
    Completed,
    Rejected,
    Unschedulable,
}

/// One request's life, indexed by its trace line. Every emitted token reads and writes the
/// first three fields, so they lead (`repr(C)`; not aligned to a cache line, which would add
/// 16 bytes to each of a million-request run's records).
#[derive(Clone, Debug, Serialize)]
#[repr(C)]
pub struct RequestRecord {
    pub last_token_ms: Option<f64>,
    pub output_tokens: u32,
    pub arrival_ms: f64,
    pub first_token_ms: Option<f64>,
    /// Second token − first token.
    pub ttst_ms: Option<f64>,
    pub end_ms: Option<f64>,
    pub input_length: u32,
    /// Best reuse over all admissions that computed the prompt (can exceed the prompt
    /// after a preemption). Disaggregated, those are the prefill side's.
    pub reused_input_tokens: u32,
    pub first_admission_reused_tokens: Option<u32>,
    /// Disaggregated: best reuse over the decode side's re-admissions after a preemption
    /// (the summary's reuse ratio counts them; the per-request figure does not).
    pub decode_reused_tokens: u32,
    pub admissions: u32,
    /// Admissions after a preemption or retraction.
    pub readmissions: u32,
    pub status: Status,
    pub worker: u32,
    /// The data-parallel rank of `worker` it ran on.
    pub dp_rank: u32,
    /// Leading prompt blocks the router believed its chosen worker cached (KV-aware routing),
    /// at the request's first routing decision.
    pub router_overlap_blocks: u32,
    /// With native offload: prompt tokens its first admission took from the host tier (part
    /// of `reused_input_tokens`).
    pub host_reused_input_tokens: Option<u32>,
}

impl RequestRecord {
    /// Whether the request has arrived (a cut-off run may end before some do).
    pub fn arrived(&self) -> bool {
        !self.arrival_ms.is_nan()
    }
}

/// What the offload tiers report (the reference's `g3_offload` and, for a cluster-shared host
/// pool, `g2_domains`).
#[derive(Clone, Debug, Default)]
pub struct OffloadReport {
    pub g3: Option<servesim_engine::kv::offload::G3Stats>,
    pub g2: Vec<servesim_engine::kv::offload::G2Domain>,
}

/// What the report says about the cluster's hardware: provisioned worker-seconds and GPUs per
/// worker, by pool (aggregated workers count as decode workers, as in the reference).
#[derive(Clone, Copy, Debug, Default)]
pub struct Fleet {
    pub prefill_worker_seconds: f64,
    pub decode_worker_seconds: f64,
    pub prefill_gpus_per_worker: u32,
    pub decode_gpus_per_worker: u32,
    /// GPUs of the cluster as it starts.
    pub total_gpus: u32,
}

#[derive(Clone, Debug, Default)]
pub struct Collector {
    pub records: Vec<RequestRecord>,
    /// Why each unschedulable or rejected request stopped, by trace index.
    pub reasons: Vec<(u32, String)>,
    itl: Sketched,
    per_user_tps: Sketched,
    pub committed_prefill_tokens: u64,
    /// Requests that have arrived.
    pub arrived: usize,
    /// The objective: per-request thresholds (the goodput) and percentile bounds.
    pub slo: Slo,
    pub fleet: Fleet,
    /// A run that may be cut off: inter-token gaps count only once their request completes
    /// (held here until then), as the reference's distributions cover completed requests only.
    deferred_gaps: Option<FxHashMap<u32, Vec<f64>>>,
    /// Native offload's tier figures, set when the run ends.
    pub offload: Option<OffloadReport>,
    /// Running requests the vLLM scheduler preempted (their blocks freed; recomputed later).
    pub preemptions: u64,
    /// Running requests the SGLang scheduler retracted under decode memory pressure.
    pub retractions: u64,
    /// Multimodal figures, only for a workload with images (a text-only summary has none of
    /// their keys).
    pub images: Option<Box<ImageStats>>,
    /// Price of one GPU-hour (USD), when the scenario sets one: the summary adds the cost.
    pub gpu_hour_usd: Option<f64>,
    /// Modelled power, set when the run ends if every engine is timed by measured kernels.
    pub power: Option<power::PowerReport>,
    /// An agentic run's plays (trajectories), set when the run ends. Its duration counts
    /// from the clock's start, as the reference's does (its first request may start late).
    pub trajectories: Option<crate::workload::agentic::run::Trajectories>,
}

/// What the vision encoder did for a workload with images.
#[derive(Clone, Debug, Default)]
pub struct ImageStats {
    /// Images of the requests that arrived.
    pub num_images: u64,
    /// Per request: its images, and the encoder time of the passes that encoded them (the
    /// encoder runs before the pass's prefill, so all of it delays the request).
    pub images_of: Vec<u32>,
    pub encoder_ms: Vec<f64>,
    /// Images first needed by a request, and those found in the encoder cache.
    pub lookups: u64,
    pub hits: u64,
}

impl ImageStats {
    pub fn new(n: usize) -> Self {
        ImageStats { images_of: vec![0; n], encoder_ms: vec![0.0; n], ..ImageStats::default() }
    }
}

impl Collector {
    /// A collector for `n` requests, none arrived yet.
    pub fn new(n: usize) -> Self {
        let mut c = Collector::default();
        c.records.reserve_exact(n);
        for _ in 0..n {
            c.push_record();
        }
        c
    }

    /// Inter-token gaps wait for their request to complete before they count (a run that may
    /// be cut off with requests in flight).
    pub fn defer_gaps(&mut self) {
        self.deferred_gaps = Some(FxHashMap::default());
    }

    /// Request `i` arrives at `arrival_ms` with a prompt of `input_length` tokens.
    pub fn arrive(&mut self, i: u32, arrival_ms: f64, input_length: u32) {
        let r = &mut self.records[i as usize];
        r.arrival_ms = arrival_ms;
        r.input_length = input_length;
        self.arrived += 1;
    }

    fn push_record(&mut self) {
        self.records.push(RequestRecord {
            arrival_ms: f64::NAN,
            input_length: 0,
            first_token_ms: None,
            last_token_ms: None,
            end_ms: None,
            output_tokens: 0,
            reused_input_tokens: 0,
            first_admission_reused_tokens: None,
            decode_reused_tokens: 0,
            admissions: 0,
            readmissions: 0,
            status: Status::Pending,
            worker: 0,
            dp_rank: 0,
            ttst_ms: None,
            router_overlap_blocks: 0,
            host_reused_input_tokens: None,
        });
    }

    /// An admission reusing `reused` cached tokens, on a decode worker (`decode_side`: the
    /// prompt's reuse is the prefill worker's) or on a worker that computes prompts.
    pub fn admit(&mut self, i: u32, reused: u32, decode_side: bool, readmission: bool) {
        let r = &mut self.records[i as usize];
        r.admissions += 1;
        r.readmissions += readmission as u32;
        if decode_side {
            r.decode_reused_tokens = r.decode_reused_tokens.max(reused);
            return;
        }
        r.reused_input_tokens = r.reused_input_tokens.max(reused);
        r.first_admission_reused_tokens.get_or_insert(reused);
    }

    /// A token at `t`; returns (gap since the previous token, TTFT if it is the first). The
    /// caller folds gaps into the ITL distributions with [`Collector::gaps`].
    pub fn token(&mut self, i: u32, t: f64) -> (Option<f64>, Option<f64>) {
        let r = &mut self.records[i as usize];
        let mut out = (None, None);
        if let Some(prev) = r.last_token_ms {
            out.0 = Some(t - prev);
            if r.output_tokens == 1 {
                r.ttst_ms = Some(t - prev);
            }
        } else {
            r.first_token_ms = Some(t);
            out.1 = Some(t - r.arrival_ms);
        }
        r.last_token_ms = Some(t);
        r.output_tokens += 1;
        out
    }

    /// `n` steady tokens of request `i`, the last at `last_ms`: their gaps were folded as
    /// they came (the engine counts them rather than listing them), so only the record's
    /// count and last token are behind.
    pub fn steady_tokens(&mut self, i: u32, n: u32, last_ms: f64) {
        let r = &mut self.records[i as usize];
        debug_assert!(r.output_tokens >= 2, "a steady token follows at least two others");
        r.output_tokens += n;
        r.last_token_ms = Some(last_ms);
    }

    /// Request `i`'s inter-token gap (in a run whose gaps are deferred; see `defer_gaps`).
    pub fn request_gap(&mut self, i: u32, gap: f64) {
        if let Some(d) = &mut self.deferred_gaps {
            d.entry(i).or_default().push(gap);
        }
    }

    pub fn gaps_deferred(&self) -> bool {
        self.deferred_gaps.is_some()
    }

    /// `n` inter-token gaps of `gap` ms.
    pub fn gaps(&mut self, gap: f64, n: u64) {
        self.itl.add_n(gap, n);
        if gap > 0.0 {
            self.per_user_tps.add_n(1000.0 / gap, n);
        }
    }

    pub fn finish(&mut self, i: u32, t: f64, status: Status, reason: Option<String>) {
        let r = &mut self.records[i as usize];
        r.end_ms = Some(t);
        r.status = status;
        if let Some(reason) = reason {
            self.reasons.push((i, reason));
        }
        if let Some(gaps) = self.deferred_gaps.as_mut().and_then(|d| d.remove(&i))
            && status == Status::Completed
        {
            for gap in gaps {
                self.gaps(gap, 1);
            }
        }
    }

    /// The summary, with the reference replay's keys and definitions.
    pub fn summary(&self) -> Map<String, Value> {
        let (mut completed, mut input, mut output, mut reused, mut first_reused) = (0u64, 0u64, 0u64, 0u64, 0u64);
        let mut rejected = 0u64;
        let mut unschedulable = 0u64;
        let mut last_end: f64 = 0.0;
        let first_arrival = self.records.iter().filter(|r| r.arrived()).map(|r| r.arrival_ms).fold(f64::INFINITY, f64::min);
        let mut good = (0u64, 0u64);
        let sla = &self.slo;
        for r in &self.records {
            match r.status {
                Status::Completed => {}
                Status::Rejected => rejected += 1,
                Status::Unschedulable => unschedulable += 1,
                Status::Pending => {}
            }
            if r.status != Status::Completed {
                continue;
            }
            completed += 1;
            input += r.input_length as u64;
            output += r.output_tokens as u64;
            reused += r.reused_input_tokens.max(r.decode_reused_tokens) as u64;
            first_reused += r.first_admission_reused_tokens.unwrap_or(0) as u64;
            last_end = last_end.max(r.end_ms.unwrap_or(0.0));
            if sla.per_request() && sla.is_good(r) {
                good.0 += 1;
                good.1 += r.output_tokens as u64;
            }
        }
        let origin = if self.trajectories.is_some() { first_arrival.min(0.0) } else { first_arrival };
        let duration = if completed == 0 || !first_arrival.is_finite() { 0.0 } else { last_end - origin };
        let per_s = |x: u64| if duration > 0.0 { x as f64 / (duration / 1000.0) } else { 0.0 };
        let ratio = |x: u64| if input > 0 { x as f64 / input as f64 } else { 0.0 };

        let mut m = Map::new();
        m.insert("num_requests".into(), self.arrived.into());
        m.insert("completed_requests".into(), completed.into());
        m.insert("rejected_requests".into(), rejected.into());
        m.insert("unschedulable_requests".into(), unschedulable.into());
        m.insert("num_preemptions".into(), self.preemptions.into());
        m.insert("num_retractions".into(), self.retractions.into());
        m.insert("total_input_tokens".into(), input.into());
        m.insert("total_output_tokens".into(), output.into());
        m.insert("committed_prefill_tokens".into(), self.committed_prefill_tokens.into());
        m.insert("duration_ms".into(), num(duration));
        m.insert("request_throughput_rps".into(), num(per_s(completed)));
        m.insert("input_throughput_tok_s".into(), num(per_s(input)));
        m.insert("output_throughput_tok_s".into(), num(per_s(output)));
        m.insert("total_throughput_tok_s".into(), num(per_s(input + output)));
        let f = &self.fleet;
        m.insert("prefill_worker_seconds".into(), num(f.prefill_worker_seconds));
        m.insert("decode_worker_seconds".into(), num(f.decode_worker_seconds));
        m.insert("prefill_gpus_per_worker".into(), f.prefill_gpus_per_worker.into());
        m.insert("decode_gpus_per_worker".into(), f.decode_gpus_per_worker.into());
        let gpu_seconds =
            f.prefill_worker_seconds * f.prefill_gpus_per_worker as f64 + f.decode_worker_seconds * f.decode_gpus_per_worker as f64;
        m.insert("gpu_hours".into(), num(gpu_seconds / 3600.0));
        m.insert("total_gpus".into(), f.total_gpus.into());
        m.insert("gpu_seconds".into(), num(gpu_seconds));
        if let Some(price) = self.gpu_hour_usd {
            // Only with a price the user set: servesim knows no GPU prices.
            let cost = gpu_seconds / 3600.0 * price;
            m.insert("gpu_hour_usd".into(), num(price));
            m.insert("cost_usd".into(), num(cost));
            m.insert("cost_per_million_output_tokens_usd".into(), num(if output > 0 { cost / (output as f64 / 1e6) } else { f64::NAN }));
        }
        if let Some(p) = &self.power {
            p.write(&mut m, output);
        }
        if sla.per_request() {
            m.insert("goodput_completed_requests".into(), good.0.into());
            m.insert("goodput_request_throughput_rps".into(), num(per_s(good.0)));
            m.insert("goodput_output_throughput_tok_s".into(), num(per_s(good.1)));
        }
        m.insert("processed_tokens".into(), (input + output).into());
        m.insert("prefix_cache_reused_ratio".into(), num(ratio(reused)));
        m.insert("first_admission_prefix_cache_reused_ratio".into(), num(ratio(first_reused)));
        // Over completed requests with at least one token; one sample set at a time.
        let timed = || self.records.iter().filter(|r| r.status == Status::Completed && r.first_token_ms.is_some());
        let ttft = |r: &RequestRecord| r.first_token_ms.map(|f| f - r.arrival_ms);
        let e2e = |r: &RequestRecord| r.end_ms.map(|e| e - r.arrival_ms);
        let tpot = |r: &RequestRecord| match (r.first_token_ms, r.last_token_ms) {
            (Some(f), Some(l)) if r.output_tokens >= 2 => Some((l - f) / (r.output_tokens - 1) as f64),
            _ => None,
        };
        let samples = |f: &dyn Fn(&RequestRecord) -> Option<f64>| Samples(timed().filter_map(f).collect());
        let count = |f: &dyn Fn(&RequestRecord) -> Option<f64>| timed().filter_map(f).count();
        m.insert("num_ttft_samples".into(), count(&ttft).into());
        m.insert("num_tpot_samples".into(), count(&tpot).into());
        m.insert("num_e2e_latency_samples".into(), count(&e2e).into());
        samples(&ttft).write(&mut m, "ttft_ms");
        samples(&|r| r.ttst_ms).write(&mut m, "ttst_ms");
        samples(&tpot).write(&mut m, "tpot_ms");
        self.itl.write(&mut m, "itl_ms");
        samples(&e2e).write(&mut m, "e2e_latency_ms");
        self.per_user_tps.write(&mut m, "output_token_throughput_per_user");
        if let Some(t) = &self.trajectories {
            m.insert("total_trajectories".into(), t.total.into());
            m.insert("completed_trajectories".into(), t.e2e_ms.len().into());
            m.insert("incomplete_trajectories".into(), (t.total - t.e2e_ms.len()).into());
            Samples(t.e2e_ms.clone()).write(&mut m, "trajectory_e2e_latency_ms");
            let p50 = m.get("median_trajectory_e2e_latency_ms").cloned().unwrap_or(Value::Null);
            m.insert("p50_trajectory_e2e_latency_ms".into(), p50);
        }
        if let Some(o) = &self.offload {
            if let Some(g3) = &o.g3 {
                m.insert("g3_offload".into(), serde_json::to_value(g3).expect("serialisable"));
            }
            if !o.g2.is_empty() {
                m.insert("g2_domains".into(), serde_json::to_value(&o.g2).expect("serialisable"));
            }
        }
        if let Some(im) = &self.images {
            let with_images = || {
                self.records.iter().zip(&im.images_of).zip(&im.encoder_ms).filter(|((r, n), _)| **n > 0 && r.status == Status::Completed)
            };
            let (n, total) = with_images().fold((0u64, 0.0), |(n, t), (_, &ms)| (n + 1, t + ms));
            m.insert("num_images".into(), im.num_images.into());
            m.insert("mean_encoder_time_ms".into(), num(if n > 0 { total / n as f64 } else { 0.0 }));
            m.insert("encoder_cache_hit_ratio".into(), num(if im.lookups > 0 { im.hits as f64 / im.lookups as f64 } else { 0.0 }));
            m.insert("encoder_cache_lookups".into(), im.lookups.into());
        }
        if self.slo.is_set() {
            let met = self.slo.met(&m);
            m.insert("meets_slo".into(), met.into());
        }
        m
    }
}
