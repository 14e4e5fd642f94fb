//! The nearest points of a grid to a query beyond its data, found without scanning them all.
//!
//! A query past a grid's measured range holds the utilisation of its nearest points in log₂
//! space (`interp`), ranked by (squared distance, point index). Scanning every point made
//! each such query cost the table's size (tens of thousands of points for attention), and
//! decode passes at long contexts or large batches ask one per pass. This index (a k-d tree)
//! skips every branch whose gap to the query along its split axis alone exceeds the worst of
//! the points kept. The answer is the scan's, bit for bit: the distance is summed in the same
//! order, a float sum of non-negative terms is never below any of its terms, and a tie at the
//! bound is still visited (it may win on its index).

/// A k-d tree over a grid's points: each branch splits its points at the median of the axis
/// they spread most along; leaves hold a few points.
#[derive(Clone, Debug, Default)]
pub struct NearIndex {
    /// Point indices, in tree order: every node owns a contiguous run.
    order: Vec<u32>,
    /// The points' log₂ coordinates, `dims` a point, by point index.
    coords: Vec<f64>,
    dims: usize,
    nodes: Vec<KdNode>,
}

#[derive(Clone, Copy, Debug)]
enum KdNode {
    /// Points `order[start..end]`.
    Leaf { start: u32, end: u32 },
    /// Points left of the split have `coord[axis] <= split`, right ones `>= split`.
    Branch { axis: u8, split: f64, left: u32, right: u32 },
}

const LEAF: usize = 8;

/// (squared distance, point index), the scan's total order.
fn less(a: &(f64, usize), b: &(f64, usize)) -> bool {
    a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).is_lt()
}

impl NearIndex {
    /// The index of points given by their log₂ coordinates (`logs[i]` for point `i`).
    pub fn new(logs: &[&[f64]]) -> NearIndex {
        let dims = logs.first().map_or(0, |l| l.len());
        let coords: Vec<f64> = logs.iter().flat_map(|l| l.iter().copied()).collect();
        let mut ix = NearIndex { order: (0..logs.len() as u32).collect(), coords, dims, nodes: Vec::new() };
        if !logs.is_empty() {
            ix.build(0, logs.len());
        }
        ix
    }

    fn at(&self, point: u32, axis: usize) -> f64 {
        self.coords[point as usize * self.dims + axis]
    }

    /// Builds the node over `order[start..end]`; returns its number.
    fn build(&mut self, start: usize, end: usize) -> u32 {
        let id = self.nodes.len() as u32;
        self.nodes.push(KdNode::Leaf { start: start as u32, end: end as u32 });
        if end - start <= LEAF || self.dims == 0 {
            return id;
        }
        let spread = |ix: &NearIndex, a: usize| {
            let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
            for &p in &ix.order[start..end] {
                lo = lo.min(ix.at(p, a));
                hi = hi.max(ix.at(p, a));
            }
            hi - lo
        };
        let axis = (0..self.dims).map(|a| (spread(self, a), a)).fold((f64::NEG_INFINITY, 0), |b, c| if c.0 > b.0 { c } else { b }).1;
        if spread(self, axis) <= 0.0 {
            return id; // every point at one place: a leaf
        }
        let mut run: Vec<u32> = self.order[start..end].to_vec();
        run.sort_unstable_by(|&a, &b| self.at(a, axis).total_cmp(&self.at(b, axis)).then(a.cmp(&b)));
        self.order[start..end].copy_from_slice(&run);
        let mid = start + (end - start) / 2;
        let split = self.at(self.order[mid], axis);
        let left = self.build(start, mid);
        let right = self.build(mid, end);
        self.nodes[id as usize] = KdNode::Branch { axis: axis as u8, split, left, right };
        id
    }

    /// The `k` nearest points to `q` (log₂ coordinates) by (squared distance, index), in that
    /// order, with `dist(i)` the squared distance of point `i` as the scan computes it.
    pub fn nearest(&self, q: &[f64], k: usize, dist: &dyn Fn(usize) -> f64) -> Vec<(f64, usize)> {
        let mut near: Vec<(f64, usize)> = Vec::with_capacity(k + 1);
        if k > 0 && !self.nodes.is_empty() {
            self.visit(0, q, k, dist, &mut near);
        }
        near
    }

    fn visit(&self, node: u32, q: &[f64], k: usize, dist: &dyn Fn(usize) -> f64, near: &mut Vec<(f64, usize)>) {
        match self.nodes[node as usize] {
            KdNode::Leaf { start, end } => {
                for &p in &self.order[start as usize..end as usize] {
                    let c = (dist(p as usize), p as usize);
                    if near.len() == k {
                        if !less(&c, &near[k - 1]) {
                            continue;
                        }
                        near.pop();
                    }
                    let at = near.partition_point(|e| less(e, &c));
                    near.insert(at, c);
                }
            }
            KdNode::Branch { axis, split, left, right } => {
                let x = q[axis as usize];
                let (near_side, far_side) = if x <= split { (left, right) } else { (right, left) };
                self.visit(near_side, q, k, dist, near);
                // Every point beyond the split is at least this far along the axis alone, and
                // a float sum of non-negative terms is never below one of them; a tie at the
                // bound may still win on its index, so only a strictly larger gap prunes.
                let gap = {
                    let d = split - x;
                    d * d
                };
                if near.len() < k || gap <= near[k - 1].0 {
                    self.visit(far_side, q, k, dist, near);
                }
            }
        }
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
