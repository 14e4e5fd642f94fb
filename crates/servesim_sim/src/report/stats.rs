//! Distribution summaries: mean, min, max, percentiles (rank round((n − 1)·q), halves away
//! from zero) and the population standard deviation.

use super::sketch::DdSketch;
use serde_json::{Map, Value};

pub const QUANTILES: [(&str, f64); 5] = [("median", 0.5), ("p75", 0.75), ("p90", 0.9), ("p95", 0.95), ("p99", 0.99)];

/// Exact samples: percentiles are sample values.
#[derive(Clone, Debug, Default)]
pub struct Samples(pub Vec<f64>);

/// Streaming moments plus a sketch for percentiles (used where the sample count is large,
/// one per inter-token gap).
#[derive(Clone, Debug)]
pub struct Sketched {
    n: u64,
    sum: f64,
    /// Sums of (x − shift) and its square, `shift` being the first value: no division per
    /// value (Welford's update had two, and one group is added per pass), and no cancellation
    /// worth the name, since the values stay near the first.
    shift: f64,
    sum_shifted: f64,
    sum_sq_shifted: f64,
    min: f64,
    max: f64,
    sketch: DdSketch,
}

impl Default for Sketched {
    fn default() -> Self {
        Sketched { n: 0, sum: 0.0, shift: 0.0, sum_shifted: 0.0, sum_sq_shifted: 0.0, min: 0.0, max: 0.0, sketch: DdSketch::dense() }
    }
}

impl Sketched {
    /// Adds `n` copies of `x` (the tokens of one pass mostly share their gap).
    pub fn add_n(&mut self, x: f64, n: u64) {
        if n == 0 {
            return;
        }
        if self.n == 0 {
            self.min = x;
            self.max = x;
            self.shift = x;
        }
        let d = x - self.shift;
        let w = n as f64;
        self.n += n;
        self.sum += x * w;
        self.sum_shifted += d * w;
        self.sum_sq_shifted += d * d * w;
        self.min = self.min.min(x);
        self.max = self.max.max(x);
        self.sketch.add_n(x, n);
    }

    /// Population variance.
    fn variance(&self) -> f64 {
        let n = self.n as f64;
        ((self.sum_sq_shifted - self.sum_shifted * self.sum_shifted / n) / n).max(0.0)
    }

    pub fn write(&self, out: &mut Map<String, Value>, name: &str) {
        if self.n == 0 {
            return write_empty(out, name);
        }
        out.insert(format!("mean_{name}"), num(self.sum / self.n as f64));
        out.insert(format!("min_{name}"), num(self.min));
        out.insert(format!("max_{name}"), num(self.max));
        for (label, q) in QUANTILES {
            out.insert(format!("{label}_{name}"), num(self.sketch.quantile(q).unwrap_or(0.0)));
        }
        out.insert(format!("std_{name}"), num(self.variance().sqrt()));
    }
}

impl Samples {
    pub fn write(&mut self, out: &mut Map<String, Value>, name: &str) {
        let v = &mut self.0;
        if v.is_empty() {
            return write_empty(out, name);
        }
        let n = v.len() as f64;
        let mean = v.iter().sum::<f64>() / n;
        let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n;
        out.insert(format!("mean_{name}"), num(mean));
        out.insert(format!("min_{name}"), num(v.iter().copied().min_by(f64::total_cmp).expect("non-empty")));
        out.insert(format!("max_{name}"), num(v.iter().copied().max_by(f64::total_cmp).expect("non-empty")));
        // Each rank's value by selection, not a full sort: the ranks ascend, so each search
        // runs over what lies above the previous one.
        let mut lo = 0;
        for (label, q) in QUANTILES {
            let rank = ((v.len() - 1) as f64 * q).round() as usize;
            if rank >= lo {
                v[lo..].select_nth_unstable_by(rank - lo, f64::total_cmp);
                lo = rank;
            }
            out.insert(format!("{label}_{name}"), num(v[rank]));
        }
        out.insert(format!("std_{name}"), num(var.sqrt()));
    }
}

/// No samples: zeros, as the reference reports them (not nulls).
fn write_empty(out: &mut Map<String, Value>, name: &str) {
    for stat in ["mean", "min", "max", "median", "p75", "p90", "p95", "p99", "std"] {
        out.insert(format!("{stat}_{name}"), num(0.0));
    }
}

pub fn num(x: f64) -> Value {
    serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_rounds_half_away_from_zero() {
        let mut s = Samples(vec![2.0, 1.0]);
        let mut m = Map::new();
        s.write(&mut m, "x");
        assert_eq!(m["median_x"], 2.0, "n = 2: the median is the larger sample");
        let mut s = Samples((1..=6).map(f64::from).collect());
        let mut m = Map::new();
        s.write(&mut m, "x");
        assert_eq!((m["median_x"].as_f64(), m["p90_x"].as_f64()), (Some(4.0), Some(6.0)));
        assert_eq!(m["std_x"].as_f64().unwrap(), (35.0f64 / 12.0).sqrt());
    }

    #[test]
    fn no_samples_reads_as_zeros_like_the_reference() {
        // A run whose requests all failed: the reference reports 0.0, not null.
        let (mut a, mut b) = (Map::new(), Map::new());
        Samples(Vec::new()).write(&mut a, "x");
        Sketched::default().write(&mut b, "x");
        for m in [a, b] {
            assert_eq!(m.len(), 9);
            assert!(m.values().all(|v| v.as_f64() == Some(0.0)), "{m:?}");
        }
    }

    #[test]
    fn streaming_moments_agree_with_the_samples() {
        // Gaps as a replay adds them: groups of equal values, drifting, over a wide range.
        let groups: Vec<(f64, u64)> = (0..5000u64).map(|k| (20.0 + (k % 97) as f64 * 0.37 + k as f64 * 1e-3, 1 + k % 40)).collect();
        let mut sk = Sketched::default();
        let mut all = Vec::new();
        for &(x, n) in &groups {
            sk.add_n(x, n);
            all.extend(std::iter::repeat_n(x, n as usize));
        }
        let (mut a, mut b) = (Map::new(), Map::new());
        sk.write(&mut a, "x");
        Samples(all).write(&mut b, "x");
        for k in ["mean_x", "std_x", "min_x", "max_x"] {
            let (got, want) = (a[k].as_f64().unwrap(), b[k].as_f64().unwrap());
            assert!((got - want).abs() <= 1e-9 * want, "{k}: {got} vs {want}");
        }
        // The sketch's percentiles are within its 0.1 % relative accuracy.
        for k in ["median_x", "p90_x", "p99_x"] {
            let (got, want) = (a[k].as_f64().unwrap(), b[k].as_f64().unwrap());
            assert!((got - want).abs() <= 1e-3 * want, "{k}: {got} vs {want}");
        }
    }

    #[test]
    fn selected_ranks_equal_the_sorted_samples() {
        for n in [1usize, 2, 3, 7, 100, 1001] {
            // Ties and a spread of values, in scrambled order.
            let vals: Vec<f64> = (0..n).map(|i| ((i * 7919) % 97) as f64 * 0.5 + (i % 3) as f64).collect();
            let mut sorted = vals.clone();
            sorted.sort_by(f64::total_cmp);
            let mut m = Map::new();
            Samples(vals).write(&mut m, "x");
            for (label, q) in QUANTILES {
                let rank = ((n - 1) as f64 * q).round() as usize;
                assert_eq!(m[&format!("{label}_x")].as_f64(), Some(sorted[rank]), "n = {n}, {label}");
            }
            assert_eq!((m["min_x"].as_f64(), m["max_x"].as_f64()), (Some(sorted[0]), Some(sorted[n - 1])));
        }
    }
}
