//! A DDSketch with 0.1 % relative accuracy: the reference reports ITL and per-user throughput
//! percentiles from one, so servesim does too (bins of ratio γ = 1.001 / 0.999, the value of
//! bin i reported as 2γ^i / (γ + 1)).

/// Counts per bin. A run's two whole-run sketches (ITL, per-user throughput) take one value
/// per decode pass, so they keep a dense array over the bins seen so far: adding is an index,
/// not a search (measured: the search was 4 % of a four-worker replay). Time-series windows
/// keep a short sparse list, sorted by bin, since there may be thousands of them.
#[derive(Clone, Debug)]
enum Bins {
    Sparse(Vec<(i32, u64)>),
    /// `counts[k]` is bin `offset + k`.
    Dense {
        offset: i32,
        counts: Vec<u64>,
    },
}

#[derive(Clone, Debug)]
pub struct DdSketch {
    bins: Bins,
    count: u64,
    /// The last value added and its bin: the requests of one pass share their gap, so most
    /// additions repeat a recent value and skip the logarithm.
    memo: Option<(f64, i32)>,
}

impl Default for DdSketch {
    fn default() -> Self {
        DdSketch { bins: Bins::Sparse(Vec::new()), count: 0, memo: None }
    }
}

const ALPHA: f64 = 0.001;

fn gamma() -> f64 {
    (1.0 + ALPHA) / (1.0 - ALPHA)
}

impl DdSketch {
    /// A sketch for many values over a run: dense bins.
    pub fn dense() -> Self {
        DdSketch { bins: Bins::Dense { offset: 0, counts: Vec::new() }, count: 0, memo: None }
    }

    pub fn add(&mut self, x: f64) {
        self.add_n(x, 1);
    }

    /// Adds `n` copies of `x`.
    pub fn add_n(&mut self, x: f64, n: u64) {
        if x.is_nan() || x <= 0.0 || !x.is_finite() || n == 0 {
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
        self.add_bin(i, n);
    }

    /// Adds every value of `other` (the sketch of both sets of values).
    pub fn merge(&mut self, other: &DdSketch) {
        for (i, c) in other.bins() {
            if c > 0 {
                self.add_bin(i, c);
            }
        }
    }

    fn add_bin(&mut self, i: i32, n: u64) {
        match &mut self.bins {
            Bins::Sparse(bins) => match bins.binary_search_by_key(&i, |b| b.0) {
                Ok(k) => bins[k].1 += n,
                Err(k) => bins.insert(k, (i, n)),
            },
            Bins::Dense { offset, counts } => {
                if counts.is_empty() {
                    *offset = i;
                }
                if i < *offset {
                    // Grow downwards with slack, so a slowly falling minimum shifts rarely.
                    let grow = ((*offset - i) as usize).max(counts.len() / 2);
                    counts.splice(0..0, std::iter::repeat_n(0, grow));
                    *offset -= grow as i32;
                }
                let k = (i - *offset) as usize;
                if k >= counts.len() {
                    counts.resize(k + 1, 0);
                }
                counts[k] += n;
            }
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
        for (i, c) in self.bins() {
            seen += c;
            if seen > rank {
                let g = gamma();
                return Some(2.0 * g.powi(i) / (g + 1.0));
            }
        }
        None
    }

    /// (bin, count) in bin order, whichever the storage.
    fn bins(&self) -> impl Iterator<Item = (i32, u64)> + '_ {
        let (sparse, dense) = match &self.bins {
            Bins::Sparse(bins) => (Some(bins.iter().copied()), None),
            Bins::Dense { offset, counts } => (None, Some(counts.iter().enumerate().map(move |(k, &c)| (offset + k as i32, c)))),
        };
        sparse.into_iter().flatten().chain(dense.into_iter().flatten())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dense_and_sparse_bins_agree() {
        let (mut d, mut s) = (DdSketch::dense(), DdSketch::default());
        // Values falling and rising, so the dense array grows both ways.
        for k in 0..2000u32 {
            let x = 50.0 * (1.0 + ((k * 7919) % 1000) as f64 / 100.0) / (1.0 + (k % 13) as f64);
            d.add_n(x, 1 + (k % 3) as u64);
            s.add_n(x, 1 + (k % 3) as u64);
        }
        for q in [0.0, 0.01, 0.5, 0.9, 0.99, 1.0] {
            assert_eq!(d.quantile(q), s.quantile(q), "q = {q}");
        }
        assert_eq!(d.count(), s.count());
    }

    #[test]
    fn merged_sketches_equal_one_sketch_of_both() {
        let (mut a, mut b, mut both) = (DdSketch::default(), DdSketch::dense(), DdSketch::default());
        for k in 0..500u32 {
            let x = 1.0 + ((k * 7919) % 997) as f64;
            if k % 3 == 0 {
                a.add(x)
            } else {
                b.add(x)
            }
            both.add(x);
        }
        a.merge(&b);
        for q in [0.0, 0.5, 0.9, 0.99, 1.0] {
            assert_eq!(a.quantile(q), both.quantile(q), "q = {q}");
        }
        assert_eq!(a.count(), both.count());
    }

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
