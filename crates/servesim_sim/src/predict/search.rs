//! `recommend`: a search over a recommend file's space under its constraints and target. Pure:
//! [`Search`] proposes candidates (each a concrete predict document) and is told how each
//! ran; running them — on threads in the CLI, on Web Workers in the page — is the caller's.
//!
//! - Every point when the space has no more points than `max_trials`, in point order.
//! - Otherwise `random` draws `max_trials` distinct points; `bayesian` draws a quarter of them
//!   (at least 8) at random, then proposes from a tree-structured Parzen estimator
//!   ([`super::tpe`]) fitted to the results so far.
//! - A candidate outside the GPU constraints is infeasible without running; under the
//!   `gpus` target one needing more GPUs than the cheapest feasible one found is skipped.

use super::domain::{Domain, Pick, Space};
use super::fields::{Obj, error_at};
use super::tpe::Tpe;
use super::yaml::Node;
use crate::SimError;
use crate::report::Slo;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Map, Value, json};

/// What a recommendation maximises (or minimises).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    Throughput,
    ThroughputPerGpu,
    ThroughputPerUser,
    Goodput,
    GoodputPerGpu,
    Ttft,
    E2eLatency,
    /// The front of tokens/s per GPU against tokens/s per user.
    Pareto,
    /// servesim's: the fewest GPUs (ties: more output tokens/s per GPU).
    Gpus,
}

impl Target {
    pub const NAMES: &'static [&'static str] =
        &["throughput", "throughput_per_gpu", "throughput_per_user", "goodput", "goodput_per_gpu", "ttft", "e2e_latency", "pareto", "gpus"];

    fn parse(s: &str) -> Target {
        match s {
            "throughput_per_gpu" => Target::ThroughputPerGpu,
            "throughput_per_user" => Target::ThroughputPerUser,
            "goodput" => Target::Goodput,
            "goodput_per_gpu" => Target::GoodputPerGpu,
            "ttft" => Target::Ttft,
            "e2e_latency" => Target::E2eLatency,
            "pareto" => Target::Pareto,
            "gpus" => Target::Gpus,
            _ => Target::Throughput,
        }
    }

    pub fn name(self) -> &'static str {
        Target::NAMES[self as usize]
    }

    /// The planner target the reference derives from the recommendation's.
    pub fn planner_target(self) -> &'static str {
        match self {
            Target::Ttft | Target::E2eLatency => "latency",
            Target::Goodput | Target::GoodputPerGpu => "sla",
            _ => "throughput",
        }
    }
}

/// `optimization` and `optimizer`.
#[derive(Clone, Debug)]
pub struct Settings {
    pub target: Target,
    pub min_gpus: Option<u32>,
    pub max_gpus: u32,
    pub random: bool,
    pub max_trials: usize,
    /// Candidates in flight at once (the reference's `parallelism`; `--jobs` overrides it).
    pub parallelism: usize,
    pub candidate_timeout_s: f64,
    pub seed: u64,
}

/// A recommend file: its settings and its space.
#[derive(Clone, Debug)]
pub struct Recommend {
    pub settings: Settings,
    pub space: Space,
    pub src: String,
}

impl Recommend {
    /// Reads `optimization` / `optimizer` and the search space of a recommend document.
    pub fn new(doc: &Node, src: &str) -> Result<Recommend, SimError> {
        let mut top = Obj::new(src, "", Some(doc))?;
        let mut o = top.obj("optimization")?;
        if !top.has("optimization") {
            return Err(top.fail("optimization", "is required in a recommend file (its target and constraints)"));
        }
        let target = Target::parse(o.choice("target", Target::NAMES)?.unwrap_or("throughput"));
        if o.has("hardware") {
            return Err(o.refuse("hardware", "a hardware inventory (`engine.hardware: auto`); name one system in engine.hardware"));
        }
        o.allow(&["hardware"]);
        let mut c = o.obj("constraints")?;
        let min_gpus = c.positive_int("min_candidate_gpus")?.map(|g| g as u32);
        let max_gpus = c.positive_int("max_candidate_gpus")?.unwrap_or(32) as u32;
        if min_gpus.is_some_and(|m| m > max_gpus) {
            return Err(c.fail("min_candidate_gpus", "min_candidate_gpus cannot exceed max_candidate_gpus"));
        }
        c.finish()?;
        o.finish()?;
        let mut z = top.obj("optimizer")?;
        let random = z.choice("algorithm", &["bayesian", "random"])?.unwrap_or("bayesian") == "random";
        let max_trials = z.positive_int("max_trials")?.unwrap_or(320) as usize;
        let parallelism = z.positive_int("parallelism")?.unwrap_or(16) as usize;
        let candidate_timeout_s = z.positive("candidate_timeout_seconds")?.unwrap_or(600.0);
        let seed = z.non_negative_int("seed")?.unwrap_or(42);
        z.finish()?;
        top.allow(super::mapping::SECTIONS);
        top.finish()?;
        if matches!(target, Target::Goodput | Target::GoodputPerGpu) && doc.at("evaluation.sla").is_none() {
            return Err(error_at(
                src,
                0,
                "optimization.target",
                format!("`{}` needs evaluation.sla (the per-request thresholds a good request meets)", target.name()),
            ));
        }
        if max_trials > 100_000 {
            return Err(error_at(src, 0, "optimizer.max_trials", "at most 100000"));
        }
        let mut base = doc.clone();
        base.remove("optimization");
        base.remove("optimizer");
        // The planner's target follows the recommendation's (the reference derives it).
        if base.get("planner").is_some() && base.at("planner.target").is_none() {
            base.set("planner.target", Node::new(super::yaml::Value::Str(target.planner_target().into())));
        }
        let space = Space::new(base, src)?;
        Ok(Recommend {
            settings: Settings { target, min_gpus, max_gpus, random, max_trials, parallelism, candidate_timeout_s, seed },
            space,
            src: src.into(),
        })
    }

    /// Whether the search is every point of the space.
    pub fn is_exhaustive(&self) -> bool {
        self.space.size().is_some_and(|n| n <= self.settings.max_trials as u128)
    }
}

/// A proposed candidate.
#[derive(Clone, Debug)]
pub struct Candidate {
    /// Its number in the ledger (0, 1, ... in the order proposed).
    pub id: usize,
    pub picks: Vec<Pick>,
    /// The concrete predict document.
    pub doc: Node,
    /// The values it set (path → value).
    pub set: Vec<(String, Value)>,
}

/// How a candidate ended.
#[derive(Clone, Debug)]
pub enum Outcome {
    /// It ran: its summary, its GPUs, and whether it met `evaluation.slo` (with why not).
    Ran { summary: Map<String, Value>, gpus: u32, missed: Option<String> },
    /// Stopped early: certain to miss the objective (the reason), with its GPUs.
    Stopped { gpus: u32, reason: String },
    /// Could not run: the mapping refused it, a constraint excluded it, it failed.
    Infeasible { gpus: Option<u32>, reason: String },
    /// Not run: it could not beat what was found (the reason).
    Skipped { gpus: u32, reason: String },
}

/// A candidate and its outcome: one ledger entry.
#[derive(Clone, Debug)]
pub struct Trial {
    pub candidate: Candidate,
    pub outcome: Outcome,
    /// The target's score (higher is better) of a feasible run.
    pub score: Option<f64>,
}

impl Trial {
    pub fn feasible(&self) -> bool {
        self.score.is_some()
    }

    fn gpus(&self) -> Option<u32> {
        match &self.outcome {
            Outcome::Ran { gpus, .. } | Outcome::Stopped { gpus, .. } | Outcome::Skipped { gpus, .. } => Some(*gpus),
            Outcome::Infeasible { gpus, .. } => *gpus,
        }
    }

    fn status(&self) -> &'static str {
        match &self.outcome {
            Outcome::Ran { missed: None, .. } => "ok",
            Outcome::Ran { .. } => "infeasible",
            Outcome::Stopped { .. } => "stopped",
            Outcome::Infeasible { .. } => "infeasible",
            Outcome::Skipped { .. } => "skipped",
        }
    }

    fn reason(&self) -> Option<&str> {
        match &self.outcome {
            Outcome::Ran { missed, .. } => missed.as_deref(),
            Outcome::Stopped { reason, .. } | Outcome::Infeasible { reason, .. } | Outcome::Skipped { reason, .. } => Some(reason),
        }
    }
}

/// The metrics a target reads, from a summary and the GPU count.
pub fn metrics(summary: &Map<String, Value>, gpus: u32) -> Map<String, Value> {
    let num = |k: &str| summary.get(k).and_then(Value::as_f64);
    let g = gpus.max(1) as f64;
    let mut m = Map::new();
    let mut put = |k: &str, v: Option<f64>| {
        if let Some(x) = v.filter(|x| x.is_finite()) {
            m.insert(k.into(), json!(x));
        }
    };
    put("throughput", num("output_throughput_tok_s"));
    put("throughput_per_gpu", num("output_throughput_tok_s").map(|t| t / g));
    put("throughput_per_user", num("mean_output_token_throughput_per_user"));
    put("goodput", num("goodput_output_throughput_tok_s"));
    put("goodput_per_gpu", num("goodput_output_throughput_tok_s").map(|t| t / g));
    put("ttft", num("mean_ttft_ms"));
    put("e2e_latency", num("mean_e2e_latency_ms"));
    put("p99_ttft_ms", num("p99_ttft_ms"));
    put("p99_itl_ms", num("p99_itl_ms"));
    put("gpus", Some(g));
    m
}

/// The target's score of a run (higher is better); `None` if the run has no such figure.
pub fn score(target: Target, m: &Map<String, Value>) -> Option<f64> {
    let get = |k: &str| m.get(k).and_then(Value::as_f64);
    match target {
        Target::Ttft => get("ttft").map(|x| -x),
        Target::E2eLatency => get("e2e_latency").map(|x| -x),
        // Fewest GPUs first; among equals, more tokens/s per GPU (kept below one GPU's worth).
        Target::Gpus => get("gpus").map(|g| -g + get("throughput_per_gpu").unwrap_or(0.0).atan() / std::f64::consts::PI),
        Target::Pareto => get("throughput_per_gpu"),
        t => get(t.name()),
    }
}

/// The search in progress.
pub struct Search {
    pub rec: Recommend,
    rng: ChaCha8Rng,
    /// Every proposal, in order.
    pub trials: Vec<Option<Trial>>,
    proposed: Vec<Candidate>,
    /// The random points still to propose (exhaustive or random searches: all of them).
    queue: std::collections::VecDeque<Vec<Pick>>,
    startup: usize,
    seen: std::collections::BTreeSet<String>,
    /// No new candidate can be found.
    exhausted: bool,
}

impl Search {
    pub fn new(rec: Recommend) -> Search {
        let mut rng = ChaCha8Rng::seed_from_u64(rec.settings.seed);
        let trials = rec.settings.max_trials;
        let mut queue = std::collections::VecDeque::new();
        let startup;
        match rec.space.size() {
            Some(n) if n <= trials as u128 => {
                queue.extend((0..n).map(|i| rec.space.point(i)));
                startup = n as usize;
            }
            size => {
                startup = if rec.settings.random { trials } else { (trials / 4).max(8).min(trials) };
                let mut drawn = std::collections::BTreeSet::new();
                while queue.len() < startup {
                    let picks = match size {
                        // Distinct points of a finite space.
                        Some(n) => {
                            let i = rng.random_range(0..n);
                            if !drawn.insert(i) {
                                continue;
                            }
                            rec.space.point(i)
                        }
                        None => random_point(&rec.space, &mut rng),
                    };
                    queue.push_back(picks);
                }
            }
        }
        Search { rec, rng, trials: Vec::new(), proposed: Vec::new(), queue, startup, seen: Default::default(), exhausted: false }
    }

    /// Whether every candidate was proposed and told.
    pub fn is_done(&self) -> bool {
        (self.exhausted || self.proposed.len() >= self.budget()) && self.trials.iter().all(Option::is_some)
    }

    fn budget(&self) -> usize {
        match self.rec.space.size() {
            Some(n) => (n.min(self.rec.settings.max_trials as u128)) as usize,
            None => self.rec.settings.max_trials,
        }
    }

    /// Up to `n` new candidates (fewer at the end, or while a model-based search waits for
    /// its random start to come back). Duplicates of earlier candidates are not proposed.
    pub fn next_batch(&mut self, n: usize) -> Vec<Candidate> {
        let mut out = Vec::new();
        let mut duplicates = 0;
        let exhaustive = self.rec.is_exhaustive();
        while out.len() < n && self.proposed.len() < self.budget() && !self.exhausted {
            let picks = if let Some(p) = self.queue.pop_front() {
                p
            } else if exhaustive {
                // Every point was proposed (some were the same configuration as another).
                self.exhausted = true;
                break;
            } else if self.proposed.len() < self.startup {
                // A random point stood in for one that duplicated an earlier candidate.
                match self.rec.space.size() {
                    Some(size) => self.rec.space.point(self.rng.random_range(0..size)),
                    None => random_point(&self.rec.space, &mut self.rng),
                }
            } else {
                // The model needs the random start's results first.
                let told = self.trials.iter().flatten().count();
                if told < self.startup.min(self.proposed.len()) {
                    break;
                }
                if duplicates > 0 {
                    // The model proposed what was run: a random point instead.
                    match self.rec.space.size() {
                        Some(size) => self.rec.space.point(self.rng.random_range(0..size)),
                        None => random_point(&self.rec.space, &mut self.rng),
                    }
                } else {
                    self.propose()
                }
            };
            let (doc, set) = self.rec.space.materialize(&picks);
            let key = doc.to_json().to_string();
            if !self.seen.insert(key) {
                // Many draws in a row that were all run already: the space (as its
                // candidates differ) is used up.
                duplicates += 1;
                if duplicates > 1000 {
                    self.exhausted = true;
                }
                continue;
            }
            duplicates = 0;
            let c = Candidate { id: self.proposed.len(), picks, doc, set };
            self.proposed.push(c.clone());
            self.trials.push(None);
            out.push(c);
        }
        out
    }

    /// A model-based proposal from the results so far.
    fn propose(&mut self) -> Vec<Pick> {
        let observed: Vec<(&[Pick], f64)> =
            self.trials.iter().flatten().map(|t| (t.candidate.picks.as_slice(), t.score.unwrap_or(f64::NEG_INFINITY))).collect();
        let tpe = Tpe::new(&self.rec.space, &observed);
        tpe.propose(&self.rec.space, &mut self.rng)
    }

    /// Checks a candidate before running it: the GPU constraints, and under the `gpus`
    /// target whether it can still beat the cheapest feasible one. `Some` is its outcome.
    pub fn precheck(&self, gpus: u32) -> Option<Outcome> {
        let s = &self.rec.settings;
        if gpus > s.max_gpus {
            return Some(Outcome::Infeasible {
                gpus: Some(gpus),
                reason: format!("{gpus} GPUs is above optimization.constraints.max_candidate_gpus {}", s.max_gpus),
            });
        }
        if let Some(min) = s.min_gpus
            && gpus < min
        {
            return Some(Outcome::Infeasible {
                gpus: Some(gpus),
                reason: format!("{gpus} GPUs is below optimization.constraints.min_candidate_gpus {min}"),
            });
        }
        if s.target == Target::Gpus
            && let Some(best) = self.trials.iter().flatten().filter(|t| t.feasible()).filter_map(Trial::gpus).min()
            && gpus > best
        {
            return Some(Outcome::Skipped { gpus, reason: format!("needs {gpus} GPUs; a feasible candidate needs {best}") });
        }
        None
    }

    /// Records how candidate `id` ended.
    pub fn tell(&mut self, id: usize, outcome: Outcome) {
        let Some(c) = self.proposed.get(id).cloned() else { return };
        let score = match &outcome {
            Outcome::Ran { summary, gpus, missed: None } => score(self.rec.settings.target, &metrics(summary, *gpus)),
            _ => None,
        };
        self.trials[id] = Some(Trial { candidate: c, outcome, score });
    }

    /// The recommendations, best first: every feasible candidate by score (ties: fewer GPUs,
    /// then the earlier one); for `pareto`, the front by tokens/s per GPU.
    pub fn ranking(&self) -> Vec<&Trial> {
        let mut feasible: Vec<&Trial> = self.trials.iter().flatten().filter(|t| t.feasible()).collect();
        if self.rec.settings.target == Target::Pareto {
            let point = |t: &Trial| -> (f64, f64) {
                let Outcome::Ran { summary, gpus, .. } = &t.outcome else { return (0.0, 0.0) };
                let m = metrics(summary, *gpus);
                let get = |k: &str| m.get(k).and_then(Value::as_f64).unwrap_or(0.0);
                (get("throughput_per_gpu"), get("throughput_per_user"))
            };
            let pts: Vec<(f64, f64)> = feasible.iter().map(|t| point(t)).collect();
            let front: Vec<&Trial> = feasible
                .iter()
                .enumerate()
                .filter(|(i, _)| !pts.iter().any(|q| q.0 >= pts[*i].0 && q.1 >= pts[*i].1 && (q.0 > pts[*i].0 || q.1 > pts[*i].1)))
                .map(|(_, t)| *t)
                .collect();
            feasible = front;
        }
        feasible.sort_by(|a, b| {
            b.score
                .partial_cmp(&a.score)
                .unwrap_or(std::cmp::Ordering::Equal)
                .then(a.gpus().cmp(&b.gpus()))
                .then(a.candidate.id.cmp(&b.candidate.id))
        });
        // One recommendation per concrete configuration.
        let mut seen = std::collections::BTreeSet::new();
        feasible.retain(|t| seen.insert(t.candidate.doc.to_json().to_string()));
        feasible
    }

    /// The ledger as JSON: every candidate, infeasible ones with the reason.
    pub fn ledger(&self) -> Value {
        let rank: std::collections::BTreeMap<usize, usize> =
            self.ranking().iter().enumerate().map(|(r, t)| (t.candidate.id, r + 1)).collect();
        let candidates: Vec<Value> = self
            .trials
            .iter()
            .flatten()
            .map(|t| {
                let mut e =
                    json!({"id": t.candidate.id, "status": t.status(), "set": t.candidate.set.iter().cloned().collect::<Map<_, _>>()});
                if let Some(r) = rank.get(&t.candidate.id) {
                    e["rank"] = (*r).into();
                }
                if let Some(g) = t.gpus() {
                    e["gpus"] = g.into();
                }
                if let Some(s) = t.score {
                    e["score"] = json!(s);
                }
                if let Some(r) = t.reason() {
                    e["reason"] = r.into();
                }
                if let Outcome::Ran { summary, gpus, .. } = &t.outcome {
                    e["metrics"] = Value::Object(metrics(summary, *gpus));
                }
                e
            })
            .collect();
        let s = &self.rec.settings;
        json!({
            "target": s.target.name(),
            "algorithm": if self.rec.is_exhaustive() { "exhaustive" } else if s.random { "random" } else { "bayesian" },
            "space_points": self.rec.space.size().map_or(Value::Null, |n| json!(n as f64)),
            "max_trials": s.max_trials,
            "seed": s.seed,
            "candidates": candidates,
        })
    }

    /// The ledger as CSV: `id, status, rank, gpus, score`, one column per searched field,
    /// the target metrics, `reason`.
    pub fn ledger_csv(&self) -> String {
        let ledger = self.ledger();
        let rows = ledger["candidates"].as_array().cloned().unwrap_or_default();
        let fields: Vec<String> =
            self.rec.space.dims.iter().map(|d| if d.preset { format!("{}.preset", d.path) } else { d.path.clone() }).collect();
        let metric_keys = [
            "throughput",
            "throughput_per_gpu",
            "throughput_per_user",
            "goodput",
            "goodput_per_gpu",
            "ttft",
            "e2e_latency",
            "p99_ttft_ms",
            "p99_itl_ms",
        ];
        let mut out = String::from("id,status,rank,gpus,score");
        for f in fields.iter().map(String::as_str).chain(metric_keys) {
            out.push(',');
            out.push_str(&csv(f));
        }
        out.push_str(",reason\n");
        for r in rows {
            let cell = |v: &Value| match v {
                Value::Null => String::new(),
                Value::String(s) => csv(s),
                other => csv(&other.to_string()),
            };
            let mut line = [&r["id"], &r["status"], &r["rank"], &r["gpus"], &r["score"]].iter().map(|v| cell(v)).collect::<Vec<_>>();
            line.extend(fields.iter().map(|f| cell(&r["set"][f])));
            line.extend(metric_keys.iter().map(|k| cell(&r["metrics"][k])));
            line.push(cell(&r["reason"]));
            out.push_str(&line.join(","));
            out.push('\n');
        }
        out
    }
}

fn csv(s: &str) -> String {
    if s.contains([',', '"', '\n']) { format!("\"{}\"", s.replace('"', "\"\"")) } else { s.into() }
}

/// A point drawn uniformly (ranges on their scale).
pub fn random_point(space: &Space, rng: &mut ChaCha8Rng) -> Vec<Pick> {
    space
        .dims
        .iter()
        .map(|d| match &d.domain {
            Domain::Values(v) => Pick::Index(rng.random_range(0..v.len())),
            Domain::Range { min, max, log: true, .. } => {
                Pick::Real(libm::exp(libm::log(*min) + rng.random::<f64>() * (libm::log(*max) - libm::log(*min))))
            }
            Domain::Range { min, max, .. } => Pick::Real(min + rng.random::<f64>() * (max - min)),
        })
        .collect()
}

/// Whether a run that has got this far is certain to miss `objective`, and why: some requests
/// already break a per-request threshold or a p99 bound so often that the finished run
/// cannot meet it. `records` are the run's requests so far, `n` how many it has.
pub fn hopeless(objective: &Slo, records: &[crate::report::RequestRecord], n: usize) -> Option<String> {
    if n == 0 {
        return None;
    }
    // p99 is the value at rank round((n − 1) · 0.99): it exceeds a bound once n − that rank
    // requests do. A margin keeps the sketch's 0.1 % accuracy on the safe side.
    let allowed_over = n - ((n - 1) as f64 * 0.99).round() as usize;
    let over = |f: &dyn Fn(&crate::report::RequestRecord) -> Option<f64>, bound: f64| {
        records.iter().filter(|r| f(r).is_some_and(|v| v > bound * 1.002)).count()
    };
    let ttft = |r: &crate::report::RequestRecord| r.first_token_ms.map(|t| t - r.arrival_ms);
    let e2e = |r: &crate::report::RequestRecord| r.end_ms.map(|t| t - r.arrival_ms);
    let tpot = |r: &crate::report::RequestRecord| match (r.first_token_ms, r.last_token_ms) {
        (Some(a), Some(b)) if r.end_ms.is_some() && r.output_tokens > 1 => Some((b - a) / (r.output_tokens - 1) as f64),
        _ => None,
    };
    for (name, f, bound) in [
        ("p99_ttft_ms", &ttft as &dyn Fn(&crate::report::RequestRecord) -> Option<f64>, objective.p99_ttft_ms),
        ("p99_e2e_latency_ms", &e2e, objective.p99_e2e_latency_ms),
        ("p99_tpot_ms", &tpot, objective.p99_tpot_ms),
    ] {
        if let Some(b) = bound {
            let k = over(f, b);
            if k >= allowed_over {
                return Some(format!("stopped early: {k} of {n} requests already exceed {name} {b}, so p99 cannot meet it"));
            }
        }
    }
    if objective.per_request() {
        let ratio = objective.min_goodput_ratio.unwrap_or(0.99);
        let sla = objective;
        let bad = records
            .iter()
            .filter(|r| {
                let Some(end) = r.end_ms else { return false };
                let t = r.first_token_ms.map(|f| f - r.arrival_ms);
                let e = end - r.arrival_ms;
                let itl = match (t, r.output_tokens) {
                    (Some(t), out) if out > 1 => Some((e - t) / (out - 1) as f64),
                    _ => None,
                };
                sla.ttft_ms.is_some_and(|b| t.is_none_or(|t| t > b))
                    || sla.e2e_ms.is_some_and(|b| e > b)
                    || sla.itl_ms.is_some_and(|b| itl.is_some_and(|i| i > b))
            })
            .count();
        if bad as f64 > (1.0 - ratio) * n as f64 + 1e-9 {
            return Some(format!(
                "stopped early: {bad} of {n} requests already miss the per-request SLO, so fewer than {ratio} can be good"
            ));
        }
    }
    None
}

/// Why a finished run misses `objective`, if it does.
pub fn missed(objective: &Slo, summary: &Map<String, Value>) -> Option<String> {
    if objective.met(summary) {
        return None;
    }
    let num = |k: &str| summary.get(k).and_then(Value::as_f64);
    let (n, done) = (num("num_requests").unwrap_or(0.0), num("completed_requests").unwrap_or(0.0));
    if done < n || done == 0.0 {
        return Some(format!("{done} of {n} requests completed"));
    }
    for (k, b) in [
        ("p99_ttft_ms", objective.p99_ttft_ms),
        ("p99_itl_ms", objective.p99_itl_ms),
        ("p99_tpot_ms", objective.p99_tpot_ms),
        ("p99_e2e_latency_ms", objective.p99_e2e_latency_ms),
    ] {
        if let Some(b) = b
            && !num(k).is_some_and(|v| v <= b)
        {
            return Some(format!("{k} {} > {b}", num(k).map_or("none".into(), |v| format!("{v:.1}"))));
        }
    }
    let good = num("goodput_completed_requests").unwrap_or(0.0);
    Some(format!("{good} of {done} requests meet the per-request SLO, below {}", objective.min_goodput_ratio.unwrap_or(0.99)))
}
