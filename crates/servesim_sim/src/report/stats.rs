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
    sum_sq_dev: f64,
    mean: f64,
    min: f64,
    max: f64,
    sketch: DdSketch,
}

impl Default for Sketched {
    fn default() -> Self {
        Sketched { n: 0, sum: 0.0, sum_sq_dev: 0.0, mean: 0.0, min: 0.0, max: 0.0, sketch: DdSketch::dense() }
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
        }
        // Welford, merging a group of n equal values.
        let total = self.n + n;
        let d = x - self.mean;
        self.mean += d * n as f64 / total as f64;
        self.sum_sq_dev += d * d * (self.n as f64 * n as f64) / total as f64;
        self.n = total;
        self.sum += x * n as f64;
        self.min = self.min.min(x);
        self.max = self.max.max(x);
        self.sketch.add_n(x, n);
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
        out.insert(format!("std_{name}"), num((self.sum_sq_dev / self.n as f64).sqrt()));
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
        v.sort_unstable_by(f64::total_cmp);
        out.insert(format!("mean_{name}"), num(mean));
        out.insert(format!("min_{name}"), num(v[0]));
        out.insert(format!("max_{name}"), num(v[v.len() - 1]));
        for (label, q) in QUANTILES {
            let rank = ((v.len() - 1) as f64 * q).round() as usize;
            out.insert(format!("{label}_{name}"), num(v[rank]));
        }
        out.insert(format!("std_{name}"), num(var.sqrt()));
    }
}

fn write_empty(out: &mut Map<String, Value>, name: &str) {
    for stat in ["mean", "min", "max", "median", "p75", "p90", "p95", "p99", "std"] {
        out.insert(format!("{stat}_{name}"), Value::Null);
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
}
