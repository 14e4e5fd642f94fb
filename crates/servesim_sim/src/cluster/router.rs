//! Request placement over routing targets (each a worker's data-parallel rank).
//!
//! # The KV-aware router
//!
//! As Dynamo 1.6.1's offline replay runs it (`dynamo-kv-router`'s default worker selector over
//! its active-sequence tracker, driven by the mocker's replay router). Every target costs, in
//! blocks, and the lowest wins:
//!
//! ```text
//! prefill_load_scale × max(0, (active prefill tokens + prompt tokens) / block − credit × overlap)
//!   + active blocks + prompt blocks not already active
//!   + decode_active_request_weight × active requests
//! ```
//!
//! - A prompt's *blocks* are its full blocks, by sequence hash: a partial tail block is neither
//!   matched nor tracked (the reference tracks a request by its complete blocks, and its cost
//!   leaves the untracked tail out).
//! - *overlap*: the leading prompt blocks the target is known to cache, from the KV events its
//!   engine publishes at each pass end (the [`Indexer`]), `kv_event_lag_ms` late. The replay
//!   indexes them whatever `use_kv_events` says; only the decode pool of disaggregated serving
//!   sees none. The overlap is looked up whatever the credit: with `overlap_score_credit` 0 it
//!   still lowers the request's prefill charge and is still reported.
//! - *credit*: `overlap_score_credit`, times `1 / (1 + overlap_score_credit_decay × excess)`
//!   when that decay is set, `excess` being the target's active prefill tokens above the least
//!   loaded target's, in blocks, per block of the prompt (rounded up).
//! - *active prefill tokens*: per routed request whose first token has not come, its prompt
//!   less the overlap it was routed with, fixed then. Without `router_track_prefill_tokens`
//!   there are none and the whole prefill term is 0, the prompt's own tokens included. With
//!   `router_prefill_load_model: ais` they decay with the measured kernels' expected prefill
//!   time ([`super::prefill_load`]), here, in the queue threshold and in the credit decay.
//! - *active blocks*: the distinct blocks of the target's routed requests until they end (none
//!   without `router_track_active_blocks`; without `router_assume_kv_reuse` every request's
//!   blocks are its own). *Active requests*: routed and not ended.
//!
//! Load follows request lifecycle edges: routing adds, the first token drops the prefill
//! charge, the end frees everything. With `router_queue_threshold` set, an arrival waits in an
//! FCFS queue while every target's active prefill tokens exceed threshold ×
//! `max_num_batched_tokens` (or others wait before it); when it leaves, its cost uses current
//! loads but the overlaps looked up at its arrival (the reference scores a queued request with
//! the cache state it saw on arrival). Exact ties are broken by a generator seeded from the
//! scenario's seed (the reference's are random); `router_temperature` > 0 samples a softmax
//! over normalised costs instead.
//!
//! With native offload, blocks a target's host tier holds right after its device overlap count
//! too, at `host_cache_hit_weight` each (not decayed): in the credit, in the prefill charge
//! (the weighted cached tokens, rounded) and in the reported overlap (whole blocks of it).

use super::indexer::Indexer;
use super::prefill_load::{PrefillLoad, clock_ns};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use servesim_engine::hash::mix64;
use servesim_engine::kv::{KvEvent, KvEventData, KvTier};
use std::sync::Arc;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RouterMode {
    /// Ready workers in turn (by id), each cycling through its DP ranks.
    RoundRobin,
    /// A uniformly random target, from the scenario's seed.
    Random,
    /// Lowest KV-aware cost; exact ties broken by the seeded generator.
    KvRouter,
}

/// How the router's prompt-side load falls while a prompt is computed (Dynamo's
/// `router_prefill_load_model`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PrefillLoadModel {
    /// Whole until the first token.
    #[default]
    None,
    /// Decays with the measured kernels' expected prefill time (the scenario's
    /// `ais_perf_config`); `aic` is the reference's older spelling.
    #[serde(alias = "aic")]
    Ais,
}

impl PrefillLoadModel {
    fn is_none(&self) -> bool {
        *self == PrefillLoadModel::None
    }
}

/// The expected time (ns) of prefilling `new` tokens after a cached prefix of `prefix`
/// tokens, one request alone: the load model's estimate.
pub type PrefillEstimate = Arc<dyn Fn(u64, u64) -> u64 + Send + Sync>;

/// The KV router's knobs, named as in Dynamo's `KvRouterConfig`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RouterConfig {
    pub overlap_score_credit: f64,
    /// How fast the overlap credit fades as a target's prefill backlog rises above the least
    /// loaded target's; 0 (default) keeps it whole.
    pub overlap_score_credit_decay: f64,
    pub prefill_load_scale: f64,
    /// Blocks of cost per active request on a target (0 by default).
    pub decode_active_request_weight: f64,
    /// 0: argmin; > 0: softmax over normalised costs.
    pub router_temperature: f64,
    /// Accepted and ignored: the reference's offline replay indexes the engines' KV events
    /// whatever it says (measured: a request still finds the prefix its predecessor cached).
    pub use_kv_events: bool,
    pub router_track_active_blocks: bool,
    pub router_assume_kv_reuse: bool,
    pub router_track_prefill_tokens: bool,
    /// Queue requests while every target's active prefill tokens exceed this fraction of
    /// `max_num_batched_tokens`; None disables the queue.
    pub router_queue_threshold: Option<f64>,
    /// The weight of a block only a target's host tier holds (native offload).
    pub host_cache_hit_weight: f64,
    /// `ais`: the prompt-side load decays with the expected prefill time.
    #[serde(skip_serializing_if = "PrefillLoadModel::is_none")]
    pub router_prefill_load_model: PrefillLoadModel,
}

impl Default for RouterConfig {
    fn default() -> Self {
        RouterConfig {
            overlap_score_credit: 1.0,
            overlap_score_credit_decay: 0.0,
            prefill_load_scale: 1.0,
            decode_active_request_weight: 0.0,
            router_temperature: 0.0,
            use_kv_events: true,
            router_track_active_blocks: true,
            router_assume_kv_reuse: true,
            router_track_prefill_tokens: true,
            router_queue_threshold: None,
            host_cache_hit_weight: 0.75,
            router_prefill_load_model: PrefillLoadModel::None,
        }
    }
}

impl RouterConfig {
    pub fn validate(&self) -> Result<(), String> {
        for (name, v) in [
            ("overlap_score_credit", self.overlap_score_credit),
            ("overlap_score_credit_decay", self.overlap_score_credit_decay),
            ("prefill_load_scale", self.prefill_load_scale),
            ("decode_active_request_weight", self.decode_active_request_weight),
            ("router_temperature", self.router_temperature),
            ("host_cache_hit_weight", self.host_cache_hit_weight),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(format!("router_config.{name} must be finite and non-negative"));
            }
        }
        if let Some(q) = self.router_queue_threshold
            && !(q.is_finite() && q >= 0.0)
        {
            return Err("router_config.router_queue_threshold must be finite and non-negative".into());
        }
        Ok(())
    }

    /// The decode pool's router in disaggregated serving: load only (its pool publishes no
    /// KV events to it either, see [`Router::without_kv_events`]).
    pub fn decode_pool(&self) -> Self {
        RouterConfig { overlap_score_credit: 0.0, router_assume_kv_reuse: false, router_track_prefill_tokens: false, ..self.clone() }
    }

    /// The prefill pool's router in disaggregated serving: no active-block tracking.
    pub fn prefill_pool(&self) -> Self {
        RouterConfig { router_track_active_blocks: false, ..self.clone() }
    }
}

/// The batch budget the router's queue threshold assumes for engines without one (the
/// reference's `DEFAULT_MAX_BATCHED_TOKENS`).
pub const UNBOUNDED_BATCH_TOKENS: u64 = 10_000_000;

/// What the router needs to know about an arriving request.
pub struct RouteQuery<'a> {
    pub id: u64,
    /// When the request is routed: KV events reach the router's indexer only `kv_event_lag_ms`
    /// after they were published.
    pub now_ms: f64,
    pub prompt_tokens: u32,
    /// Sequence hashes of the prompt's full blocks.
    pub block_hashes: &'a [u64],
}

/// A routing decision.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Placement {
    pub target: usize,
    /// Leading prompt blocks the chosen target was known to cache.
    pub overlap_blocks: u32,
}

/// The router's own view of one target's load.
#[derive(Clone, Debug, Default)]
struct Load {
    /// Request-block hashes held by routed requests, refcounted.
    active: FxHashMap<u64, u32>,
    prefill: PrefillLoad,
    /// Routed requests that have not ended.
    requests: u32,
}

#[derive(Clone, Debug)]
struct Tracked {
    target: usize,
    blocks: Vec<u64>,
}

pub struct Router {
    mode: RouterMode,
    cfg: RouterConfig,
    block_size: u32,
    targets: usize,
    next: usize,
    rng: ChaCha8Rng,
    indexer: Indexer,
    loads: Vec<Load>,
    tracked: FxHashMap<u64, Tracked>,
    /// Whether its pool's engines publish KV events to it (all but a disaggregated decode pool).
    indexes_events: bool,
    /// How long KV events take to reach the indexer (Dynamo's `kv_event_lag_ms`), and those on
    /// their way: (published at, target, event), in publication order.
    event_lag_ms: f64,
    in_transit: std::collections::VecDeque<(f64, u32, KvTier, KvEventData)>,
    /// Prompt tokens the last KV-aware choice counted as cached, host blocks at their weight
    /// (its prefill charge leaves them out).
    weighted_cached_tokens: u64,
    /// Workers as groups of targets (their DP ranks), in id order: whether each takes
    /// requests (ready, not draining), and its next rank for the round robin.
    groups: Vec<Group>,
    /// Per target: whether its worker takes requests.
    eligible: Vec<bool>,
    /// Keep the last KV-aware decision's costs and overlaps (an event recorder reads them).
    trace: bool,
    last_costs: Vec<f64>,
    last_overlaps: Vec<u32>,
    /// Round robin over every rank of the ready workers in turn (worker by worker), instead
    /// of over the workers (each cycling through its ranks): the reference's prefill and
    /// decode pools rotate so.
    rank_major_rotation: bool,
    /// The prefill-load model's duration estimate (`router_prefill_load_model: ais`).
    estimate: Option<PrefillEstimate>,
}

#[derive(Clone, Debug)]
struct Group {
    targets: Vec<usize>,
    ready: bool,
    next_rank: usize,
}

impl Router {
    /// A router over `workers` workers of `dp_size` ranks each: target `d × workers + w` is
    /// rank `d` of worker `w`.
    pub fn new(mode: RouterMode, cfg: RouterConfig, workers: usize, dp_size: usize, block_size: u32, seed: u64) -> Self {
        let targets = workers * dp_size;
        Router {
            mode,
            cfg,
            block_size,
            targets,
            next: 0,
            rng: ChaCha8Rng::seed_from_u64(seed),
            indexer: Indexer::default(),
            loads: vec![Load::default(); targets],
            tracked: FxHashMap::default(),
            indexes_events: true,
            event_lag_ms: 0.0,
            in_transit: Default::default(),
            weighted_cached_tokens: 0,
            groups: (0..workers)
                .map(|w| Group { targets: (0..dp_size).map(|d| d * workers + w).collect(), ready: true, next_rank: 0 })
                .collect(),
            eligible: vec![true; targets],
            rank_major_rotation: false,
            estimate: None,
            trace: false,
            last_costs: Vec::new(),
            last_overlaps: Vec::new(),
        }
    }

    /// Prompt-side loads decay with this expected prefill time (the `ais` load model).
    pub fn with_prefill_estimate(mut self, estimate: PrefillEstimate) -> Self {
        self.estimate = Some(estimate);
        self
    }

    /// Keeps each KV-aware decision's per-target costs and overlaps for `last_decision`.
    pub fn set_trace(&mut self, on: bool) {
        self.trace = on;
    }

    /// The last KV-aware decision: every target's cost and believed prefix overlap (blocks).
    pub fn last_decision(&self) -> Option<(&[f64], &[u32])> {
        (self.trace && self.is_kv_aware()).then_some((&self.last_costs[..], &self.last_overlaps[..]))
    }

    /// The round robin visits every rank of each ready worker in turn (disaggregated pools).
    pub fn rotating_ranks(mut self) -> Self {
        self.rank_major_rotation = true;
        self
    }

    /// A new worker of `dp_size` ranks (not ready yet): its targets, numbered after the others.
    pub fn add_worker(&mut self, dp_size: usize) -> Vec<usize> {
        let targets: Vec<usize> = (self.targets..self.targets + dp_size).collect();
        self.targets += dp_size;
        self.loads.resize_with(self.targets, Load::default);
        self.eligible.resize(self.targets, false);
        self.groups.push(Group { targets: targets.clone(), ready: false, next_rank: 0 });
        targets
    }

    /// Worker `w` (by its place among the workers) starts or stops taking requests (it became
    /// ready; it drains or is gone). A worker that leaves forgets its round-robin rank.
    pub fn set_ready(&mut self, w: usize, ready: bool) {
        let g = &mut self.groups[w];
        g.ready = ready;
        if !ready {
            g.next_rank = 0;
        }
        for &t in &g.targets {
            self.eligible[t] = ready;
        }
    }

    /// KV events reach the indexer `lag_ms` after a pass publishes them (load tracking stays
    /// immediate). They are delivered when the router next routes, if their time has come.
    pub fn with_event_lag(mut self, lag_ms: f64) -> Self {
        self.event_lag_ms = lag_ms;
        self
    }

    /// A router whose pool publishes it no KV events: the reference's disaggregated decode
    /// pool, which places by load only.
    pub fn without_kv_events(mut self) -> Self {
        self.indexes_events = false;
        self
    }

    /// Whether routing needs the request's block hashes and the engines' KV events.
    pub fn is_kv_aware(&self) -> bool {
        self.mode == RouterMode::KvRouter
    }

    pub fn wants_kv_events(&self) -> bool {
        self.is_kv_aware() && self.indexes_events
    }

    /// True when every target's prefill load is over the queue threshold at `now_ms`.
    pub fn all_busy(&self, max_num_batched_tokens: u64, now_ms: f64) -> bool {
        match self.cfg.router_queue_threshold {
            Some(q) if self.is_kv_aware() => {
                let (limit, now) = (q * max_num_batched_tokens as f64, clock_ns(now_ms));
                self.loads.iter().zip(&self.eligible).all(|(l, &e)| !e || l.prefill.tokens_at(now) as f64 > limit)
            }
            _ => false,
        }
    }

    /// Places an arriving request.
    pub fn route(&mut self, q: &RouteQuery) -> Placement {
        let overlaps = if self.is_kv_aware() { self.overlaps(q) } else { Vec::new() };
        self.route_with(q, &overlaps)
    }

    /// Each target's cached overlap with `q` now, after the KV events due by `q.now_ms`: what
    /// a request entering the router's queue will be scored with when it leaves.
    pub fn overlaps(&mut self, q: &RouteQuery) -> Vec<u32> {
        while let Some(&(at, ..)) = self.in_transit.front() {
            if at + self.event_lag_ms > q.now_ms {
                break;
            }
            let (_, target, tier, data) = self.in_transit.pop_front().expect("peeked");
            self.index(target, tier, &data);
        }
        (0..self.targets).map(|t| self.indexer.overlap(t as u32, q.block_hashes)).collect()
    }

    /// Places a request given each target's overlap (KV-aware routing only; those of
    /// [`Router::overlaps`], at its arrival).
    pub fn route_with(&mut self, q: &RouteQuery, overlaps: &[u32]) -> Placement {
        let placement = match self.mode {
            RouterMode::RoundRobin => self.round_robin(),
            RouterMode::Random => {
                let target = if self.eligible.iter().all(|&e| e) {
                    self.rng.random_range(0..self.targets)
                } else {
                    let open: Vec<usize> = (0..self.targets).filter(|&t| self.eligible[t]).collect();
                    open[self.rng.random_range(0..open.len())]
                };
                Placement { target, overlap_blocks: 0 }
            }
            RouterMode::KvRouter => self.route_kv(q, overlaps),
        };
        if self.is_kv_aware() {
            self.track(q, placement);
        }
        placement
    }

    fn index(&mut self, target: u32, tier: KvTier, data: &KvEventData) {
        match tier {
            KvTier::Device => self.indexer.apply(target, data),
            KvTier::HostPinned => self.indexer.apply_host(target, data),
        }
    }

    /// Target `t`'s cost for `q`, with `overlap` cached blocks there (`host` more in its host
    /// tier), `prefill` its active prefill load now and `min_prefill` the least over all
    /// targets. Summed in the reference's order, so that exact ties are ties here too.
    fn cost(&self, t: usize, q: &RouteQuery, overlap: u32, host: u32, prefill_tokens: u64, min_prefill: u64) -> f64 {
        let (cfg, load, bs) = (&self.cfg, &self.loads[t], self.block_size as f64);
        let prefill = if cfg.router_track_prefill_tokens {
            let decay = if cfg.overlap_score_credit_decay > 0.0 {
                let excess_blocks = (prefill_tokens - min_prefill) as f64 / bs;
                let prompt_blocks = q.prompt_tokens.div_ceil(self.block_size).max(1) as f64;
                1.0 / (1.0 + cfg.overlap_score_credit_decay * (excess_blocks / prompt_blocks))
            } else {
                1.0
            };
            let raw = (prefill_tokens + q.prompt_tokens as u64) as f64 / bs;
            let credit = cfg.overlap_score_credit * decay * overlap as f64 + cfg.host_cache_hit_weight * host as f64;
            cfg.prefill_load_scale * (raw - credit).max(0.0)
        } else {
            0.0
        };
        let decode = if cfg.router_track_active_blocks {
            let incoming = if cfg.router_assume_kv_reuse {
                q.block_hashes.iter().filter(|h| !load.active.contains_key(h)).count()
            } else {
                q.block_hashes.len()
            };
            (load.active.len() + incoming) as f64
        } else {
            0.0
        };
        prefill + decode + cfg.decode_active_request_weight * load.requests as f64
    }

    /// The next ready worker after the last one chosen (by position among the ready ones),
    /// on its next DP rank.
    fn round_robin(&mut self) -> Placement {
        if self.rank_major_rotation {
            let ranks: Vec<usize> = self.groups.iter().filter(|g| g.ready).flat_map(|g| g.targets.iter().copied()).collect();
            let i = self.next % ranks.len();
            self.next = i + 1;
            return Placement { target: ranks[i], overlap_blocks: 0 };
        }
        let ready: Vec<usize> = (0..self.groups.len()).filter(|&g| self.groups[g].ready).collect();
        let i = self.next % ready.len();
        self.next = i + 1;
        let g = &mut self.groups[ready[i]];
        let target = g.targets[g.next_rank % g.targets.len()];
        g.next_rank += 1;
        Placement { target, overlap_blocks: 0 }
    }

    fn route_kv(&mut self, q: &RouteQuery, overlaps: &[u32]) -> Placement {
        // Workers not (or no longer) ready take nothing and weigh in no minimum.
        let now = clock_ns(q.now_ms);
        let prefill: Vec<u64> = self.loads.iter().map(|l| l.prefill.tokens_at(now)).collect();
        let min_prefill = (0..self.targets).filter(|&t| self.eligible[t]).map(|t| prefill[t]).min().unwrap_or(0);
        let hosts: Vec<u32> = (0..self.targets).map(|t| self.indexer.host_overlap(t as u32, q.block_hashes, overlaps[t])).collect();
        let costs: Vec<f64> = (0..self.targets)
            .map(|t| if self.eligible[t] { self.cost(t, q, overlaps[t], hosts[t], prefill[t], min_prefill) } else { f64::INFINITY })
            .collect();
        if self.trace {
            self.last_costs.clone_from(&costs);
            self.last_overlaps.clear();
            self.last_overlaps.extend_from_slice(overlaps);
        }
        let target = if self.cfg.router_temperature > 0.0 {
            self.sample_softmax(&costs)
        } else {
            let best = costs.iter().copied().fold(f64::INFINITY, f64::min);
            let tied: Vec<usize> = (0..self.targets).filter(|&t| costs[t] == best).collect();
            tied[self.rng.random_range(0..tied.len())]
        };
        #[cfg(feature = "route-trace")]
        self.print_route(q, overlaps, &prefill, &costs, target);
        // Host blocks count at their weight: the overlap reported is the whole blocks of it,
        // the prefill charge leaves out its tokens, rounded.
        let weighted = overlaps[target] as f64 + self.cfg.host_cache_hit_weight * hosts[target] as f64;
        self.weighted_cached_tokens = (weighted * self.block_size as f64).round() as u64;
        Placement { target, overlap_blocks: weighted.floor() as u32 }
    }

    /// One line per decision: request, time, chosen target, how many tied at the lowest cost,
    /// then each target's overlap, prefill tokens, active blocks and cost.
    #[cfg(feature = "route-trace")]
    fn print_route(&self, q: &RouteQuery, overlaps: &[u32], prefill: &[u64], costs: &[f64], target: usize) {
        let best = costs.iter().copied().fold(f64::INFINITY, f64::min);
        let tied = costs.iter().filter(|&&c| c == best).count();
        let per_target: Vec<String> = (0..self.targets)
            .map(|t| {
                let l = &self.loads[t];
                format!("{t}:ov={},pf={},act={},cost={}", overlaps[t], prefill[t], l.active.len(), costs[t])
            })
            .collect();
        eprintln!("route id={} t={} isl={} -> {target} tied={tied} | {}", q.id, q.now_ms, q.prompt_tokens, per_target.join(" "));
    }

    fn sample_softmax(&mut self, costs: &[f64]) -> usize {
        if costs.iter().any(|c| c.is_infinite()) {
            // Some workers take no requests: sample among those that do.
            let open: Vec<usize> = (0..costs.len()).filter(|&t| costs[t].is_finite()).collect();
            let sub: Vec<f64> = open.iter().map(|&t| costs[t]).collect();
            return open[self.sample_softmax(&sub)];
        }
        let (lo, hi) = costs.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &c| (a.min(c), b.max(c)));
        if hi == lo {
            return self.rng.random_range(0..costs.len());
        }
        // libm, not the platform's exp: the same weights natively and in wasm.
        let weights: Vec<f64> = costs.iter().map(|c| libm::exp(-(c - lo) / ((hi - lo) * self.cfg.router_temperature))).collect();
        let mut x = self.rng.random::<f64>() * weights.iter().sum::<f64>();
        for (t, w) in weights.iter().enumerate() {
            if x < *w {
                return t;
            }
            x -= w;
        }
        costs.len() - 1
    }

    fn track(&mut self, q: &RouteQuery, p: Placement) {
        let load = &mut self.loads[p.target];
        load.requests += 1;
        let uncached = (q.prompt_tokens as u64).saturating_sub(self.weighted_cached_tokens);
        let prefill_charge = if self.cfg.router_track_prefill_tokens { uncached } else { 0 };
        // The load model's estimate: one request computing the charge after the cached rest.
        let expected_ns = match (&self.estimate, prefill_charge) {
            (Some(e), n) if n > 0 => Some(e(n, q.prompt_tokens as u64 - n)),
            _ => None,
        };
        load.prefill.add(q.id, prefill_charge, expected_ns, clock_ns(q.now_ms));
        // Without assumed reuse the router gives every request its own block identities.
        let blocks = match (self.cfg.router_track_active_blocks, self.cfg.router_assume_kv_reuse) {
            (false, _) => Vec::new(),
            (true, true) => q.block_hashes.to_vec(),
            (true, false) => q.block_hashes.iter().map(|&h| mix64(h ^ mix64(q.id))).collect(),
        };
        for &h in &blocks {
            *load.active.entry(h).or_insert(0) += 1;
        }
        self.tracked.insert(q.id, Tracked { target: p.target, blocks });
    }

    /// The request's first token, at `now_ms`: its prompt no longer loads the target's prefill.
    pub fn prefill_done(&mut self, id: u64, now_ms: f64) {
        if let Some(t) = self.tracked.get(&id) {
            self.loads[t.target].prefill.remove(id, clock_ns(now_ms));
        }
    }

    /// The request ended at `now_ms` (completed, rejected or unschedulable).
    pub fn free(&mut self, id: u64, now_ms: f64) {
        if let Some(t) = self.tracked.remove(&id) {
            let load = &mut self.loads[t.target];
            load.prefill.remove(id, clock_ns(now_ms));
            load.requests -= 1;
            for h in t.blocks {
                if let Some(c) = load.active.get_mut(&h) {
                    *c -= 1;
                    if *c == 0 {
                        load.active.remove(&h);
                    }
                }
            }
        }
    }

    /// KV events a target published at the end of a pass, at `now_ms`.
    pub fn apply_events(&mut self, target: usize, events: &[KvEvent], now_ms: f64) {
        if !self.wants_kv_events() {
            return;
        }
        for e in events {
            if self.event_lag_ms > 0.0 {
                self.in_transit.push_back((now_ms, target as u32, e.tier, e.data.clone()));
            } else {
                self.index(target as u32, e.tier, &e.data);
            }
        }
    }

    pub fn indexer(&self) -> &Indexer {
        &self.indexer
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use servesim_engine::kv::{KvEventData, StoredBlock};

    fn ev(data: KvEventData) -> KvEvent {
        KvEvent { event_id: 0, dp_rank: 0, tier: Default::default(), data }
    }

    #[test]
    fn a_stored_event_attracts_the_request_and_its_removal_releases_it() {
        let mut r = Router::new(RouterMode::KvRouter, RouterConfig::default(), 2, 1, 16, 1);
        let hashes = [11, 12, 13, 14];
        let q = |id| RouteQuery { id, now_ms: 0.0, prompt_tokens: 64, block_hashes: &hashes };
        // Cold: both cost the same; no cache anywhere.
        let stored = KvEventData::Stored {
            parent_hash: None,
            blocks: [11, 12, 13].iter().map(|&h| StoredBlock { block_hash: h, tokens_hash: h }).collect(),
        };
        r.apply_events(1, &[ev(stored)], 0.0);
        for id in 0..5 {
            let p = r.route(&q(id));
            assert_eq!(p, Placement { target: 1, overlap_blocks: 3 }, "the cached prefix wins");
            r.free(id, 0.0);
        }
        r.apply_events(1, &[ev(KvEventData::Removed { block_hashes: vec![11] })], 0.0);
        let mut seen = [0; 2];
        for id in 10..60 {
            let p = r.route(&q(id));
            assert_eq!(p.overlap_blocks, 0, "a removed root hides its descendants");
            seen[p.target] += 1;
            r.free(id, 0.0);
        }
        assert!(seen[0] > 0 && seen[1] > 0, "ties are broken at random: {seen:?}");
    }

    #[test]
    fn load_moves_requests_away_and_is_released_on_lifecycle_edges() {
        let mut r = Router::new(RouterMode::KvRouter, RouterConfig::default(), 2, 1, 16, 7);
        let a = [1u64, 2, 3, 4];
        let p0 = r.route(&RouteQuery { id: 1, now_ms: 0.0, prompt_tokens: 64, block_hashes: &a });
        let b = [5u64, 6, 7, 8];
        let p1 = r.route(&RouteQuery { id: 2, now_ms: 0.0, prompt_tokens: 64, block_hashes: &b });
        assert_ne!(p0.target, p1.target, "the loaded target costs more");
        r.prefill_done(1, 0.0);
        r.free(1, 0.0);
        r.free(2, 0.0);
        assert!(r.loads.iter().all(|l| l.prefill.tokens_at(0) == 0 && l.active.is_empty()));
    }

    #[test]
    fn a_measured_load_model_lets_a_computing_prompt_weigh_less_as_time_passes() {
        // Every prompt is expected to take 100 ms to compute.
        let estimate: PrefillEstimate = Arc::new(|_, _| 100_000_000);
        let cfg = RouterConfig { router_prefill_load_model: PrefillLoadModel::Ais, ..RouterConfig::default() };
        let (a, b, c) = ([1u64, 2, 3, 4, 5, 6, 7, 8], [11u64, 12, 13, 14, 15, 16], [21u64, 22, 23, 24]);
        let third = |at_ms: f64, measured: bool| {
            let mut r = Router::new(RouterMode::KvRouter, cfg.clone(), 2, 1, 16, 3);
            if measured {
                r = r.with_prefill_estimate(estimate.clone());
            }
            // A (8 blocks) has its first token; B (6 blocks) is computing since t = 0.
            let pa = r.route(&RouteQuery { id: 1, now_ms: 0.0, prompt_tokens: 128, block_hashes: &a });
            r.prefill_done(1, 0.0);
            let pb = r.route(&RouteQuery { id: 2, now_ms: 0.0, prompt_tokens: 96, block_hashes: &b });
            assert_ne!(pa.target, pb.target);
            let b_load = r.loads[pb.target].prefill.tokens_at(clock_ns(at_ms));
            let pc = r.route(&RouteQuery { id: 3, now_ms: at_ms, prompt_tokens: 64, block_hashes: &c });
            (pc.target == pb.target, b_load)
        };
        // Beside A: 4 blocks of prefill + 12 active = 16. Beside B, undecayed: (96 + 64) / 16
        // + 10 = 20.
        assert_eq!(third(90.0, false), (false, 96));
        // 90 ms into B's 100 ms, ⌊96 × 0.9⌋ = 86 tokens are done: (10 + 64) / 16 + 10 < 16.
        assert_eq!(third(90.0, true), (true, 10));
        assert_eq!(third(150.0, true).1, 0, "done after its expected time");
    }

    #[test]
    fn round_robin_and_random_are_deterministic() {
        let q = RouteQuery { id: 0, now_ms: 0.0, prompt_tokens: 1, block_hashes: &[] };
        let mut rr = Router::new(RouterMode::RoundRobin, RouterConfig::default(), 3, 1, 16, 0);
        assert_eq!((0..6).map(|_| rr.route(&q).target).collect::<Vec<_>>(), vec![0, 1, 2, 0, 1, 2]);
        let pick = |seed| {
            let mut r = Router::new(RouterMode::Random, RouterConfig::default(), 4, 1, 16, seed);
            (0..20).map(|_| r.route(&q).target).collect::<Vec<_>>()
        };
        assert_eq!(pick(3), pick(3));
        assert_ne!(pick(3), pick(4));
    }
}
