//! A tree-structured Parzen estimator (Bergstra et al., 2011), small and deterministic: the
//! runs so far split at their best quarter into good and bad; each dimension gets a density
//! for each side (a smoothed histogram over a dimension's values — neighbours share weight
//! when the values are numbers — or Gaussian kernels over a range, on its log scale for a log
//! range); candidates drawn from the good densities are ranked by good/bad likelihood ratio.
//!
//! Why not a library: `parzen` (the maintained Rust TPE) takes one pending trial at a time,
//! while candidates here are proposed in batches for threads and Web Workers, and it calls the
//! platform's `ln`/`exp`, so the CLI and the page could propose different candidates from the
//! same seed; this one draws from ChaCha8 and computes with `libm`, like the rest of servesim.

use super::domain::{Domain, Pick, Space};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// Share of the runs counted as good.
const GAMMA: f64 = 0.25;
/// Draws from the good densities per proposal; the best ratio wins.
const DRAWS: usize = 32;
/// Weight of the uniform prior in each density (in observations).
const PRIOR: f64 = 1.0;

pub struct Tpe {
    /// Per dimension: the good and the bad observations (index or coordinate).
    good: Vec<Vec<f64>>,
    bad: Vec<Vec<f64>>,
}

/// A pick as a coordinate: an index, or a range value on its scale.
fn coord(d: &Domain, p: Pick) -> f64 {
    match (d, p) {
        (Domain::Range { log: true, .. }, Pick::Real(x)) => libm::log(x.max(f64::MIN_POSITIVE)),
        (_, Pick::Real(x)) => x,
        (_, Pick::Index(i)) => i as f64,
    }
}

fn bounds(d: &Domain) -> (f64, f64) {
    match d {
        Domain::Values(v) => (0.0, (v.len() - 1) as f64),
        Domain::Range { min, max, log: true, .. } => (libm::log(*min), libm::log(*max)),
        Domain::Range { min, max, .. } => (*min, *max),
    }
}

/// Whether a dimension's values are ordered numbers (neighbouring indices are alike).
fn ordinal(d: &Domain) -> bool {
    matches!(d, Domain::Values(v) if v.iter().all(|n| n.to_json().is_number()))
}

impl Tpe {
    /// A model of `observed` (picks and score, higher better; −∞ for an infeasible run).
    pub fn new(space: &Space, observed: &[(&[Pick], f64)]) -> Tpe {
        let mut order: Vec<usize> = (0..observed.len()).collect();
        order.sort_by(|&a, &b| observed[b].1.partial_cmp(&observed[a].1).unwrap_or(std::cmp::Ordering::Equal).then(a.cmp(&b)));
        let feasible = observed.iter().filter(|o| o.1.is_finite()).count();
        let n_good = ((observed.len() as f64 * GAMMA).ceil() as usize).clamp(1, feasible.max(1));
        let dims = space.dims.len();
        let (mut good, mut bad) = (vec![Vec::new(); dims], vec![Vec::new(); dims]);
        for (rank, &i) in order.iter().enumerate() {
            let side = if rank < n_good && observed[i].1.is_finite() { &mut good } else { &mut bad };
            for (k, d) in space.dims.iter().enumerate() {
                side[k].push(coord(&d.domain, observed[i].0[k]));
            }
        }
        Tpe { good, bad }
    }

    /// Log density of `x` in dimension `k` given `obs`.
    fn log_density(d: &Domain, obs: &[f64], x: f64) -> f64 {
        let (lo, hi) = bounds(d);
        let n = obs.len() as f64;
        match d {
            Domain::Values(v) => {
                let m = v.len() as f64;
                let sigma = if ordinal(d) { (m / 10.0).max(0.5) } else { 0.0 };
                let mass: f64 = obs
                    .iter()
                    .map(|&o| {
                        if sigma > 0.0 {
                            libm::exp(-(o - x) * (o - x) / (2.0 * sigma * sigma))
                        } else if o == x {
                            1.0
                        } else {
                            0.0
                        }
                    })
                    .sum();
                let norm: f64 = if sigma > 0.0 {
                    // Each observation's kernel summed over the indices, so a density sums to 1.
                    obs.iter()
                        .map(|&o| (0..v.len()).map(|j| libm::exp(-(o - j as f64) * (o - j as f64) / (2.0 * sigma * sigma))).sum::<f64>())
                        .sum()
                } else {
                    n
                };
                let p = (PRIOR / m + if norm > 0.0 { mass / norm * n } else { 0.0 }) / (PRIOR + n);
                libm::log(p.max(1e-300))
            }
            Domain::Range { .. } => {
                let width = (hi - lo).max(1e-12);
                // Scott-like bandwidth, never narrower than a twentieth of the range.
                let bw = (width / libm::pow(n.max(1.0), 0.2) / 4.0).max(width / 20.0);
                let gauss: f64 = obs
                    .iter()
                    .map(|&o| libm::exp(-(o - x) * (o - x) / (2.0 * bw * bw)) / (bw * libm::sqrt(2.0 * std::f64::consts::PI)))
                    .sum();
                let p = (PRIOR / width + gauss) / (PRIOR + n);
                libm::log(p.max(1e-300))
            }
        }
    }

    /// A draw from the good density of dimension `k`.
    fn draw(&self, d: &Domain, k: usize, rng: &mut ChaCha8Rng) -> f64 {
        let (lo, hi) = bounds(d);
        let obs = &self.good[k];
        // The prior's share: a uniform draw.
        if obs.is_empty() || rng.random::<f64>() < PRIOR / (PRIOR + obs.len() as f64) {
            return match d {
                Domain::Values(v) => rng.random_range(0..v.len()) as f64,
                _ => lo + rng.random::<f64>() * (hi - lo),
            };
        }
        let o = obs[rng.random_range(0..obs.len())];
        match d {
            Domain::Values(v) => {
                if !ordinal(d) {
                    return o;
                }
                let sigma = (v.len() as f64 / 10.0).max(0.5);
                (o + normal(rng) * sigma).round().clamp(0.0, (v.len() - 1) as f64)
            }
            _ => {
                let width = (hi - lo).max(1e-12);
                let bw = (width / libm::pow(obs.len() as f64, 0.2) / 4.0).max(width / 20.0);
                (o + normal(rng) * bw).clamp(lo, hi)
            }
        }
    }

    /// The draw with the best good/bad likelihood ratio.
    pub fn propose(&self, space: &Space, rng: &mut ChaCha8Rng) -> Vec<Pick> {
        let mut best: Option<(f64, Vec<f64>)> = None;
        for _ in 0..DRAWS {
            let xs: Vec<f64> = space.dims.iter().enumerate().map(|(k, d)| self.draw(&d.domain, k, rng)).collect();
            let ratio: f64 = space
                .dims
                .iter()
                .enumerate()
                .map(|(k, d)| Self::log_density(&d.domain, &self.good[k], xs[k]) - Self::log_density(&d.domain, &self.bad[k], xs[k]))
                .sum();
            if best.as_ref().is_none_or(|(r, _)| ratio > *r) {
                best = Some((ratio, xs));
            }
        }
        let xs = best.map(|b| b.1).unwrap_or_default();
        space
            .dims
            .iter()
            .zip(xs)
            .map(|(d, x)| match &d.domain {
                Domain::Values(_) => Pick::Index(x as usize),
                Domain::Range { log: true, .. } => Pick::Real(libm::exp(x)),
                Domain::Range { .. } => Pick::Real(x),
            })
            .collect()
    }
}

/// A standard normal draw (Box–Muller, with `libm`).
fn normal(rng: &mut ChaCha8Rng) -> f64 {
    let u1: f64 = 1.0 - rng.random::<f64>();
    let u2: f64 = rng.random();
    libm::sqrt(-2.0 * libm::log(u1)) * libm::cos(2.0 * std::f64::consts::PI * u2)
}
