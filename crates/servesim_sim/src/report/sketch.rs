//! A DDSketch with 0.1 % relative accuracy: the reference reports ITL and per-user throughput
//! percentiles from one, so servesim does too (bins of ratio γ = 1.001 / 0.999, the value of
//! bin i reported as 2γ^i / (γ + 1)).

use std::collections::BTreeMap;

#[derive(Clone, Debug, Default)]
pub struct DdSketch {
    bins: BTreeMap<i32, u64>,
    count: u64,
}

const ALPHA: f64 = 0.001;

fn gamma() -> f64 {
    (1.0 + ALPHA) / (1.0 - ALPHA)
}

impl DdSketch {
    pub fn add(&mut self, x: f64) {
        if !(x > 0.0) || !x.is_finite() {
            return;
        }
        let i = (x.ln() / gamma().ln()).ceil() as i32;
        *self.bins.entry(i).or_insert(0) += 1;
        self.count += 1;
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    /// Value at quantile `q`, using the rank round((n − 1)·q).
    pub fn quantile(&self, q: f64) -> Option<f64> {
        if self.count == 0 {
            return None;
        }
        let rank = ((self.count - 1) as f64 * q).round() as u64;
        let mut seen = 0;
        for (&i, &c) in &self.bins {
            seen += c;
            if seen > rank {
                let g = gamma();
                return Some(2.0 * g.powi(i) / (g + 1.0));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn within_relative_accuracy_and_matching_the_reference() {
        let mut s = DdSketch::default();
        for x in [5.745202, 5.745254] {
            s.add(x);
        }
        // The reference reports 5.748851426827424 for this pair's median.
        assert!((s.quantile(0.5).unwrap() - 5.748851426827424).abs() < 1e-9);
        let mut s = DdSketch::default();
        for i in 1..=1000 {
            s.add(i as f64);
        }
        let p90 = s.quantile(0.9).unwrap();
        assert!((p90 - 900.0).abs() / 900.0 < 0.0011, "{p90}");
    }
}
