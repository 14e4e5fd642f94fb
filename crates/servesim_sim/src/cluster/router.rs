//! Request placement over routing targets (each a worker's data-parallel rank).
//!
//! The KV-aware router follows Dynamo's cost, in block units, lowest wins:
//! `prefill_load_scale × max(0, (active prefill tokens + prompt)/block − credit × overlap) +
//! active blocks + request blocks not already active`. It knows what each target caches
//! only from the KV events engines publish at pass end (the [`Indexer`]), and tracks load from
//! request lifecycle edges: routing adds, first token drops the prefill charge, the end frees.
//! With native offload, blocks a target's host tier holds right after its device overlap
//! count too, at `host_cache_hit_weight` each (credit and reported overlap alike).

use super::indexer::Indexer;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use servesim_engine::hash::mix64;
use servesim_engine::kv::{KvEvent, KvEventData, KvTier};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RouterMode {
    /// The k-th arrival goes to target k mod n.
    RoundRobin,
    /// A uniformly random target, from the scenario's seed.
    Random,
    /// Lowest KV-aware cost; exact ties broken by the seeded generator.
    KvRouter,
}

/// The KV router's knobs, named as in Dynamo's `KvRouterConfig`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RouterConfig {
    pub overlap_score_credit: f64,
    pub prefill_load_scale: f64,
    /// 0: argmin; > 0: softmax over normalised costs.
    pub router_temperature: f64,
    pub use_kv_events: bool,
    pub router_track_active_blocks: bool,
    pub router_assume_kv_reuse: bool,
    pub router_track_prefill_tokens: bool,
    /// Queue requests while every target's active prefill tokens exceed this fraction of
    /// `max_num_batched_tokens`; None disables the queue.
    pub router_queue_threshold: Option<f64>,
    /// The weight of a block only a target's host tier holds (native offload).
    pub host_cache_hit_weight: f64,
}

impl Default for RouterConfig {
    fn default() -> Self {
        RouterConfig {
            overlap_score_credit: 1.0,
            prefill_load_scale: 1.0,
            router_temperature: 0.0,
            use_kv_events: true,
            router_track_active_blocks: true,
            router_assume_kv_reuse: true,
            router_track_prefill_tokens: true,
            router_queue_threshold: None,
            host_cache_hit_weight: 0.75,
        }
    }
}

impl RouterConfig {
    pub fn validate(&self) -> Result<(), String> {
        for (name, v) in [
            ("overlap_score_credit", self.overlap_score_credit),
            ("prefill_load_scale", self.prefill_load_scale),
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

    /// The decode pool's router in disaggregated serving: load only.
    pub fn decode_pool(&self) -> Self {
        RouterConfig {
            overlap_score_credit: 0.0,
            router_assume_kv_reuse: false,
            router_track_prefill_tokens: false,
            use_kv_events: false,
            ..self.clone()
        }
    }

    /// The prefill pool's router in disaggregated serving: no active-block tracking.
    pub fn prefill_pool(&self) -> Self {
        RouterConfig { router_track_active_blocks: false, ..self.clone() }
    }
}

/// What the router needs to know about an arriving request.
pub struct RouteQuery<'a> {
    pub id: u64,
    /// When the request is routed: KV events reach the router's indexer only `kv_event_lag_ms`
    /// after they were published.
    pub now_ms: f64,
    pub prompt_tokens: u32,
    /// Sequence hashes of the prompt's blocks (the last may be a partial block's unique id).
    pub block_hashes: &'a [u64],
    /// How many of `block_hashes` are full blocks (only those can overlap a cache).
    pub full_blocks: u32,
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
    prefill_tokens: u64,
}

#[derive(Clone, Debug)]
struct Tracked {
    target: usize,
    blocks: Vec<u64>,
    prefill_charge: u64,
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
    /// How long KV events take to reach the indexer (Dynamo's `kv_event_lag_ms`), and those on
    /// their way: (published at, target, event), in publication order.
    event_lag_ms: f64,
    in_transit: std::collections::VecDeque<(f64, u32, KvTier, KvEventData)>,
    /// Prompt tokens the last KV-aware choice counted as cached, host blocks at their weight
    /// (its prefill charge leaves them out).
    weighted_cached_tokens: u64,
}

impl Router {
    pub fn new(mode: RouterMode, cfg: RouterConfig, targets: usize, block_size: u32, seed: u64) -> Self {
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
            event_lag_ms: 0.0,
            in_transit: Default::default(),
            weighted_cached_tokens: 0,
        }
    }

    /// KV events reach the indexer `lag_ms` after a pass publishes them (load tracking stays
    /// immediate). They are delivered when the router next routes, if their time has come.
    pub fn with_event_lag(mut self, lag_ms: f64) -> Self {
        self.event_lag_ms = lag_ms;
        self
    }

    /// Whether routing needs the request's block hashes and the engines' KV events.
    pub fn is_kv_aware(&self) -> bool {
        self.mode == RouterMode::KvRouter
    }

    pub fn wants_kv_events(&self) -> bool {
        self.is_kv_aware() && self.cfg.use_kv_events
    }

    /// True when every target's prefill load is over the queue threshold.
    pub fn all_busy(&self, max_num_batched_tokens: u64) -> bool {
        match self.cfg.router_queue_threshold {
            Some(q) if self.is_kv_aware() => {
                let limit = q * max_num_batched_tokens as f64;
                self.loads.iter().all(|l| l.prefill_tokens as f64 > limit)
            }
            _ => false,
        }
    }

    pub fn route(&mut self, q: &RouteQuery) -> Placement {
        while let Some(&(at, ..)) = self.in_transit.front() {
            if at + self.event_lag_ms > q.now_ms {
                break;
            }
            let (_, target, tier, data) = self.in_transit.pop_front().expect("peeked");
            self.index(target, tier, &data);
        }
        let placement = match self.mode {
            RouterMode::RoundRobin => {
                let t = self.next;
                self.next = (self.next + 1) % self.targets;
                Placement { target: t, overlap_blocks: 0 }
            }
            RouterMode::Random => Placement { target: self.rng.random_range(0..self.targets), overlap_blocks: 0 },
            RouterMode::KvRouter => self.route_kv(q),
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

    fn cost(&self, t: usize, q: &RouteQuery, overlap: u32, host: u32) -> f64 {
        let bs = self.block_size as f64;
        let load = &self.loads[t];
        let prefill_tokens = if self.cfg.router_track_prefill_tokens { load.prefill_tokens } else { 0 };
        let raw_prefill = (prefill_tokens + q.prompt_tokens as u64) as f64 / bs;
        let credit = self.cfg.overlap_score_credit * overlap as f64 + self.cfg.host_cache_hit_weight * host as f64;
        let adjusted = (raw_prefill - credit).max(0.0);
        let decode = if self.cfg.router_track_active_blocks {
            let incoming = if self.cfg.router_assume_kv_reuse {
                q.block_hashes.iter().filter(|h| !load.active.contains_key(h)).count()
            } else {
                q.block_hashes.len()
            };
            (load.active.len() + incoming) as f64
        } else {
            0.0
        };
        self.cfg.prefill_load_scale * adjusted + decode
    }

    fn route_kv(&mut self, q: &RouteQuery) -> Placement {
        let full = &q.block_hashes[..q.full_blocks as usize];
        let overlaps: Vec<u32> =
            (0..self.targets).map(|t| if self.cfg.overlap_score_credit > 0.0 { self.indexer.overlap(t as u32, full) } else { 0 }).collect();
        let hosts: Vec<u32> = (0..self.targets).map(|t| self.indexer.host_overlap(t as u32, full, overlaps[t])).collect();
        let costs: Vec<f64> = (0..self.targets).map(|t| self.cost(t, q, overlaps[t], hosts[t])).collect();
        let target = if self.cfg.router_temperature > 0.0 {
            self.sample_softmax(&costs)
        } else {
            let best = costs.iter().copied().fold(f64::INFINITY, f64::min);
            let tied: Vec<usize> = (0..self.targets).filter(|&t| costs[t] == best).collect();
            tied[self.rng.random_range(0..tied.len())]
        };
        // Host blocks count at their weight: the overlap reported is the whole blocks of it,
        // the prefill charge leaves out its tokens, rounded.
        let weighted = overlaps[target] as f64 + self.cfg.host_cache_hit_weight * hosts[target] as f64;
        self.weighted_cached_tokens = (weighted * self.block_size as f64).round() as u64;
        Placement { target, overlap_blocks: weighted.floor() as u32 }
    }

    fn sample_softmax(&mut self, costs: &[f64]) -> usize {
        let (lo, hi) = costs.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &c| (a.min(c), b.max(c)));
        if hi == lo {
            return self.rng.random_range(0..costs.len());
        }
        let weights: Vec<f64> = costs.iter().map(|c| (-(c - lo) / ((hi - lo) * self.cfg.router_temperature)).exp()).collect();
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
        let uncached = (q.prompt_tokens as u64).saturating_sub(self.weighted_cached_tokens);
        let prefill_charge = if self.cfg.router_track_prefill_tokens { uncached } else { 0 };
        load.prefill_tokens += prefill_charge;
        // Without assumed reuse the router gives every request its own block identities.
        let blocks = match (self.cfg.router_track_active_blocks, self.cfg.router_assume_kv_reuse) {
            (false, _) => Vec::new(),
            (true, true) => q.block_hashes.to_vec(),
            (true, false) => q.block_hashes.iter().map(|&h| mix64(h ^ mix64(q.id))).collect(),
        };
        for &h in &blocks {
            *load.active.entry(h).or_insert(0) += 1;
        }
        self.tracked.insert(q.id, Tracked { target: p.target, blocks, prefill_charge });
    }

    /// The request's first token: its prompt no longer loads the target's prefill.
    pub fn prefill_done(&mut self, id: u64) {
        if let Some(t) = self.tracked.get_mut(&id) {
            self.loads[t.target].prefill_tokens -= t.prefill_charge;
            t.prefill_charge = 0;
        }
    }

    /// The request ended (completed, rejected or unschedulable).
    pub fn free(&mut self, id: u64) {
        if let Some(t) = self.tracked.remove(&id) {
            let load = &mut self.loads[t.target];
            load.prefill_tokens -= t.prefill_charge;
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
        let mut r = Router::new(RouterMode::KvRouter, RouterConfig::default(), 2, 16, 1);
        let hashes = [11, 12, 13, 14];
        let q = |id| RouteQuery { id, now_ms: 0.0, prompt_tokens: 64, block_hashes: &hashes, full_blocks: 4 };
        // Cold: both cost the same; no cache anywhere.
        let stored = KvEventData::Stored {
            parent_hash: None,
            blocks: [11, 12, 13].iter().map(|&h| StoredBlock { block_hash: h, tokens_hash: h }).collect(),
        };
        r.apply_events(1, &[ev(stored)], 0.0);
        for id in 0..5 {
            let p = r.route(&q(id));
            assert_eq!(p, Placement { target: 1, overlap_blocks: 3 }, "the cached prefix wins");
            r.free(id);
        }
        r.apply_events(1, &[ev(KvEventData::Removed { block_hashes: vec![11] })], 0.0);
        let mut seen = [0; 2];
        for id in 10..60 {
            let p = r.route(&q(id));
            assert_eq!(p.overlap_blocks, 0, "a removed root hides its descendants");
            seen[p.target] += 1;
            r.free(id);
        }
        assert!(seen[0] > 0 && seen[1] > 0, "ties are broken at random: {seen:?}");
    }

    #[test]
    fn load_moves_requests_away_and_is_released_on_lifecycle_edges() {
        let mut r = Router::new(RouterMode::KvRouter, RouterConfig::default(), 2, 16, 7);
        let a = [1u64, 2, 3, 4];
        let p0 = r.route(&RouteQuery { id: 1, now_ms: 0.0, prompt_tokens: 64, block_hashes: &a, full_blocks: 4 });
        let b = [5u64, 6, 7, 8];
        let p1 = r.route(&RouteQuery { id: 2, now_ms: 0.0, prompt_tokens: 64, block_hashes: &b, full_blocks: 4 });
        assert_ne!(p0.target, p1.target, "the loaded target costs more");
        r.prefill_done(1);
        r.free(1);
        r.free(2);
        assert!(r.loads.iter().all(|l| l.prefill_tokens == 0 && l.active.is_empty()));
    }

    #[test]
    fn round_robin_and_random_are_deterministic() {
        let q = RouteQuery { id: 0, now_ms: 0.0, prompt_tokens: 1, block_hashes: &[], full_blocks: 0 };
        let mut rr = Router::new(RouterMode::RoundRobin, RouterConfig::default(), 3, 16, 0);
        assert_eq!((0..6).map(|_| rr.route(&q).target).collect::<Vec<_>>(), vec![0, 1, 2, 0, 1, 2]);
        let pick = |seed| {
            let mut r = Router::new(RouterMode::Random, RouterConfig::default(), 4, 16, seed);
            (0..20).map(|_| r.route(&q).target).collect::<Vec<_>>()
        };
        assert_eq!(pick(3), pick(3));
        assert_ne!(pick(3), pick(4));
    }
}
