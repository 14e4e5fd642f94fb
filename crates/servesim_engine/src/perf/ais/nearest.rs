//! The nearest points of a grid to a query beyond its data, found without scanning them all.
//!
//! A query past a grid's measured range holds the utilisation of its nearest points in log₂
//! space (`interp`), ranked by (squared distance, point index). Scanning every point made
//! each such query cost the table's size (tens of thousands of points for attention), and
//! decode passes at long contexts or large batches ask one per pass. This index keeps the
//! points sorted along one axis and searches outward from the query: a point whose distance
//! along that axis alone exceeds the worst of the ones kept cannot enter, nor can any point
//! further out. The answer is the scan's, bit for bit: the distance is summed in the same
//! order, a float sum of non-negative terms is never below any of its terms, and a tie at the
//! bound is still visited (it may win on its index).

/// Points of a grid ordered along its most varied axis.
#[derive(Clone, Debug, Default)]
pub struct NearIndex {
    /// The axis the points are ordered on.
    axis: usize,
    /// Point indices, by their log₂ coordinate on `axis` (then by index).
    order: Vec<u32>,
    /// That coordinate, in `order`'s order.
    keys: Vec<f64>,
}

/// (squared distance, point index), the scan's total order.
fn less(a: &(f64, usize), b: &(f64, usize)) -> bool {
    a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).is_lt()
}

impl NearIndex {
    /// The index of points given by their log₂ coordinates (`logs[i]` for point `i`).
    pub fn new(logs: &[&[f64]]) -> NearIndex {
        let Some(first) = logs.first() else { return NearIndex::default() };
        let dims = first.len();
        // The axis with the most distinct values prunes best.
        let distinct = |a: usize| {
            let mut v: Vec<u64> = logs.iter().map(|l| l[a].to_bits()).collect();
            v.sort_unstable();
            v.dedup();
            v.len()
        };
        let axis = (0..dims).max_by_key(|&a| (distinct(a), usize::MAX - a)).unwrap_or(0);
        let mut order: Vec<u32> = (0..logs.len() as u32).collect();
        order.sort_unstable_by(|&a, &b| logs[a as usize][axis].total_cmp(&logs[b as usize][axis]).then(a.cmp(&b)));
        let keys = order.iter().map(|&i| logs[i as usize][axis]).collect();
        NearIndex { axis, order, keys }
    }

    /// The `k` nearest points to `q` (log₂ coordinates) by (squared distance, index), in that
    /// order, with `dist(i)` the squared distance of point `i` as the scan computes it.
    pub fn nearest(&self, q: &[f64], k: usize, dist: &dyn Fn(usize) -> f64) -> Vec<(f64, usize)> {
        let mut near: Vec<(f64, usize)> = Vec::with_capacity(k + 1);
        if k == 0 || self.order.is_empty() {
            return near;
        }
        let x = q[self.axis];
        let start = self.keys.partition_point(|&key| key < x);
        let (mut lo, mut hi) = (start, start); // next to visit: lo - 1 downwards, hi upwards
        let worst = |near: &Vec<(f64, usize)>| if near.len() < k { f64::INFINITY } else { near[k - 1].0 };
        let offer = |near: &mut Vec<(f64, usize)>, i: usize| {
            let c = (dist(i), i);
            if near.len() == k {
                if !less(&c, &near[k - 1]) {
                    return;
                }
                near.pop();
            }
            let at = near.partition_point(|e| less(e, &c));
            near.insert(at, c);
        };
        loop {
            let bound = worst(&near);
            // The gap along the axis, squared as the distance's own term is.
            let gap = |key: f64| {
                let d = key - x;
                d * d
            };
            let down = lo > 0 && gap(self.keys[lo - 1]) <= bound;
            let up = hi < self.keys.len() && gap(self.keys[hi]) <= bound;
            if !down && !up {
                break;
            }
            // Visit the side whose next point is closer along the axis.
            if down && (!up || gap(self.keys[lo - 1]) <= gap(self.keys[hi])) {
                lo -= 1;
                offer(&mut near, self.order[lo] as usize);
            } else {
                offer(&mut near, self.order[hi] as usize);
                hi += 1;
            }
        }
        near
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The index answers as the full scan does, ties and all, on grids with repeated and
    /// equidistant coordinates.
    #[test]
    fn the_index_finds_what_the_scan_finds() {
        let mut seed = 7u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for round in 0..200 {
            let dims = 1 + round % 3;
            let n = 1 + (next() % 300) as usize;
            let pts: Vec<Vec<f64>> = (0..n)
                .map(|_| (0..dims).map(|_| libm::log2(1.0 + (next() % 64) as f64 * if round % 2 == 0 { 1.0 } else { 16.0 })).collect())
                .collect();
            let logs: Vec<&[f64]> = pts.iter().map(|p| p.as_slice()).collect();
            let idx = NearIndex::new(&logs);
            for _ in 0..20 {
                let q: Vec<f64> = (0..dims).map(|_| libm::log2(1.0 + (next() % 200) as f64)).collect();
                let dist = |i: usize| {
                    let mut d = 0.0;
                    for (a, b) in pts[i].iter().zip(&q) {
                        let delta = a - b;
                        d += delta * delta;
                    }
                    d
                };
                let k = 1 + (next() % 14) as usize;
                let mut all: Vec<(f64, usize)> = (0..n).map(|i| (dist(i), i)).collect();
                all.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
                all.truncate(k);
                assert_eq!(idx.nearest(&q, k, &dist), all, "round {round}");
            }
        }
    }
}
