//! A DDSketch with 0.1 % relative accuracy: the reference reports ITL and per-user throughput
//! percentiles from one, so servesim does too (bins of ratio γ = 1.001 / 0.999, the value of
//! bin i reported as 2γ^i / (γ + 1)).

/// Counts per bin, sparse and sorted by bin: a time-series window holds a handful of
/// distinct gaps, the whole run a few thousand at most.
#[derive(Clone, Debug, Default)]
pub struct DdSketch {
    bins: Vec<(i32, u64)>,
    count: u64,
    /// The last value added and its bin: the requests of one pass share their gap, so most
    /// additions repeat a recent value and skip the logarithm.
    memo: Option<(f64, i32)>,
}

const ALPHA: f64 = 0.001;

fn gamma() -> f64 {
    (1.0 + ALPHA) / (1.0 - ALPHA)
}

impl DdSketch {
    pub fn add(&mut self, x: f64) {
        self.add_n(x, 1);
    }

    /// Adds `n` copies of `x`.
    pub fn add_n(&mut self, x: f64, n: u64) {
        if !(x > 0.0) || !x.is_finite() || n == 0 {
            return;
        }
        let i = match self.memo {
            Some((v, i)) if v == x => i,
            _ => {
                let i = (x.ln() / gamma().ln()).ceil() as i32;
                self.memo = Some((x, i));
                i
            }
        };
        match self.bins.binary_search_by_key(&i, |b| b.0) {
            Ok(k) => self.bins[k].1 += n,
            Err(k) => self.bins.insert(k, (i, n)),
        }
        self.count += n;
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
        for &(i, c) in &self.bins {
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
