//! Reading a measured table at a point it may not hold: the rules of AIConfigurator's
//! `perf_interp` engine (as `aisimulate-core` 0.13 implements them), in servesim's code.
//!
//! 1. An exact hit returns the measured value.
//! 2. Inside the data, a nested per-axis bracket blend, linear in the coordinate (for the
//!    sequence axis of context attention, linear in √latency). Where one side of a bracket
//!    has no data below it (a ragged table), the survivor is rescaled along that axis by the
//!    speed-of-light (SOL) ratio.
//! 3. Beyond the data, the utilisation (SOL / latency) is held: multi-axis tables take it
//!    from the 4 nearest measured points in log₂ space with tapered inverse-distance
//!    weights, 1-D curves from the boundary point(s).
//! 4. GEMMs are per-(n, k) curves along m; an unmeasured (n, k) borrows utilisation from up
//!    to 4 measured sites within log₂ distance 2 whose curves cover m.
//!
//! Every value is computed in the same floating-point order as the reference, so results
//! are bit-identical; `log2` is libm's, natively and in wasm.

use super::nearest::NearIndex;
use super::sorted::SortedMap;

/// A measured point: latency (ms), power (W) and energy (W·ms).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LeafValue {
    pub latency: f64,
    pub power: f64,
    pub energy: f64,
}

impl LeafValue {
    pub fn with_power(latency: f64, power: f64) -> Self {
        LeafValue { latency, power, energy: power * latency }
    }

    /// Mean power of a point: energy / latency when both are positive, else its power.
    pub fn blend_power(self) -> f64 {
        if self.energy > 0.0 && self.latency > 0.0 { self.energy / self.latency } else { self.power }
    }
}

/// No data anchors the query (the reference's structured miss).
#[derive(Clone, Debug, PartialEq)]
pub struct Miss(pub String);

fn miss(axes: &[&str], coords: &[f64], reason: &str) -> Miss {
    let pairs: Vec<String> = axes.iter().zip(coords).map(|(a, c)| format!("{a}={c}")).collect();
    Miss(format!("no measured data anchors {{{}}} ({reason})", pairs.join(", ")))
}

fn log2(x: f64) -> f64 {
    libm::log2(x)
}

fn exact_key(c: f64) -> Option<u32> {
    if c >= 0.0 && c <= u32::MAX as f64 && c.fract() == 0.0 { Some(c as u32) } else { None }
}

/// (distance, index) order: a total order, so one unstable sort serves every ranking.
fn by_rank(a: &(f64, usize), b: &(f64, usize)) -> std::cmp::Ordering {
    a.0.total_cmp(&b.0).then(a.1.cmp(&b.1))
}

/// Sorts a short slice in place (an insertion sort: the page's engine carries one sort less).
pub fn sort_small<T: Copy>(v: &mut [T], less: impl Fn(&T, &T) -> bool) {
    for i in 1..v.len() {
        let x = v[i];
        let mut j = i;
        while j > 0 && less(&x, &v[j - 1]) {
            v[j] = v[j - 1];
            j -= 1;
        }
        v[j] = x;
    }
}

/// Indices `0..n` in the order `cmp` gives, equal ones in index order: a stable merge sort
/// by hand, over indices, so every table shares one sort and the page's engine carries no
/// further copy of the standard library's.
pub fn order_by(n: usize, cmp: &dyn Fn(usize, usize) -> std::cmp::Ordering) -> Vec<usize> {
    let mut a: Vec<usize> = (0..n).collect();
    let mut b = vec![0; n];
    let mut width = 1;
    while width < n {
        let mut lo = 0;
        while lo < n {
            let mid = (lo + width).min(n);
            let hi = (lo + 2 * width).min(n);
            let (mut i, mut j, mut k) = (lo, mid, lo);
            while i < mid && j < hi {
                // The left run wins ties: equal keys keep their order.
                if cmp(a[j], a[i]).is_lt() {
                    b[k] = a[j];
                    j += 1;
                } else {
                    b[k] = a[i];
                    i += 1;
                }
                k += 1;
            }
            b[k..k + (mid - i)].copy_from_slice(&a[i..mid]);
            k += mid - i;
            b[k..k + (hi - j)].copy_from_slice(&a[j..hi]);
            lo = hi;
        }
        std::mem::swap(&mut a, &mut b);
        width *= 2;
    }
    a
}

fn median(v: &mut [f64]) -> f64 {
    sort_small(v, |a, b| a.total_cmp(b).is_lt());
    let n = v.len();
    if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 }
}

/// How a grid blends along its axes.
#[derive(Clone, Copy)]
pub struct GridRule<'a> {
    pub axes: &'a [&'a str],
    /// Blend √latency along this axis (context attention's sequence axis); raw elsewhere.
    pub sqrt_axis: Option<usize>,
    /// The table's speed of light at a point (ms), in axis order.
    pub sol: &'a dyn Fn(&[f64]) -> f64,
}

#[derive(Clone, Debug)]
enum Node {
    Branch(Vec<(u32, Node)>),
    Leaf(LeafValue),
}

impl Node {
    fn insert(&mut self, path: &[u32], v: LeafValue) {
        let Node::Branch(map) = self else { unreachable!("paths have one length") };
        let i = match map.binary_search_by_key(&path[0], |(k, _)| *k) {
            Ok(i) => i,
            Err(i) => {
                map.insert(i, (path[0], if path.len() == 1 { Node::Leaf(v) } else { Node::Branch(Vec::new()) }));
                i
            }
        };
        if path.len() > 1 {
            map[i].1.insert(&path[1..], v);
        }
    }

    fn child(&self, key: u32) -> Option<&Node> {
        match self {
            Node::Branch(map) => map.binary_search_by_key(&key, |(k, _)| *k).ok().map(|i| &map[i].1),
            Node::Leaf(_) => None,
        }
    }
}

/// A nested table (attention, the fp8 scale tables): points keyed by integer coordinates.
#[derive(Clone, Debug)]
pub struct Grid {
    root: Node,
    dims: usize,
    /// Every point in coordinate order, with its log₂ coordinates, for the hold.
    flat: Vec<(Vec<u32>, Vec<f64>, LeafValue)>,
    /// The hold's nearest-point search over `flat`.
    near: NearIndex,
}

enum GridErr {
    OutOfRange,
    Miss(Miss),
}

impl Grid {
    /// A grid of `dims` axes from points (coordinates, value); a repeated point keeps its first value.
    pub fn new(points: &[(&[u32], LeafValue)], dims: usize) -> Grid {
        let mut root = Node::Branch(Vec::new());
        // In coordinate order; of a repeated point the first (ties keep their input order).
        let mut order = order_by(points.len(), &|a, b| points[a].0.cmp(points[b].0));
        order.dedup_by(|b, a| points[*a].0 == points[*b].0);
        let mut flat = Vec::with_capacity(order.len());
        for i in order {
            let (c, v) = points[i];
            root.insert(c, v);
            flat.push((c.to_vec(), c.iter().map(|&x| log2((x as f64).max(1e-12))).collect::<Vec<f64>>(), v));
        }
        let near = NearIndex::new(&flat.iter().map(|(_, l, _)| l.as_slice()).collect::<Vec<_>>());
        Grid { root, dims, flat, near }
    }

    pub fn is_empty(&self) -> bool {
        self.flat.is_empty()
    }

    /// The leaves' coordinates and values (for tests and the hold).
    pub fn points(&self) -> impl Iterator<Item = (&[u32], LeafValue)> {
        self.flat.iter().map(|(c, _, v)| (c.as_slice(), *v))
    }

    /// Replaces each value by `f(coords, value)` (the load-time SOL clamp).
    pub fn map_values(&mut self, f: impl Fn(&[u32], LeafValue) -> LeafValue) {
        let pts: Vec<(Vec<u32>, LeafValue)> = self.flat.iter().map(|(c, _, v)| (c.clone(), f(c, *v))).collect();
        let refs: Vec<(&[u32], LeafValue)> = pts.iter().map(|(c, v)| (c.as_slice(), *v)).collect();
        *self = Grid::new(&refs, self.dims);
    }

    /// The table's value at `coords`.
    pub fn query(&self, rule: &GridRule, coords: &[f64]) -> Result<LeafValue, Miss> {
        debug_assert_eq!(coords.len(), self.dims);
        if self.flat.is_empty() {
            return Err(miss(rule.axes, coords, "empty table"));
        }
        if let Some(v) = self.exact(coords) {
            return Ok(v);
        }
        let (latency, power) = match self.interior(rule, &self.root, coords, 0) {
            Ok(p) => p,
            Err(GridErr::Miss(m)) => return Err(m),
            Err(GridErr::OutOfRange) => self.hold(rule, coords)?,
        };
        Ok(LeafValue { latency, power, energy: power * latency })
    }

    fn exact(&self, coords: &[f64]) -> Option<LeafValue> {
        let mut node = &self.root;
        for &c in coords {
            node = node.child(exact_key(c)?)?;
        }
        match node {
            Node::Leaf(v) => Some(*v),
            Node::Branch(_) => None,
        }
    }

    fn interior(&self, rule: &GridRule, node: &Node, coords: &[f64], depth: usize) -> Result<(f64, f64), GridErr> {
        let map = match node {
            Node::Leaf(v) => return Ok((v.latency, v.blend_power())),
            Node::Branch(map) => map,
        };
        if map.is_empty() {
            return Err(GridErr::Miss(miss(rule.axes, coords, "empty branch")));
        }
        let c = coords[depth];
        if let Some(k) = exact_key(c)
            && let Ok(i) = map.binary_search_by_key(&k, |(k, _)| *k)
        {
            return self.interior(rule, &map[i].1, coords, depth + 1);
        }
        let (lo, hi) = (map[0].0 as f64, map[map.len() - 1].0 as f64);
        if c < lo || c > hi {
            return Err(GridErr::OutOfRange);
        }
        let idx = map.partition_point(|(k, _)| (*k as f64) < c);
        let mut results: Vec<(u32, (f64, f64))> = Vec::with_capacity(2);
        let mut out_of_range = false;
        for (k, child) in [&map[idx - 1], &map[idx]] {
            match self.interior(rule, child, coords, depth + 1) {
                Ok(p) => results.push((*k, p)),
                Err(GridErr::OutOfRange) => out_of_range = true,
                Err(GridErr::Miss(_)) => {}
            }
        }
        match results.len() {
            0 if out_of_range => Err(GridErr::OutOfRange),
            0 => Err(GridErr::Miss(miss(rule.axes, coords, &format!("no usable branch at axis '{}'", rule.axes[depth])))),
            1 => {
                // A ragged table: hold the survivor's utilisation along this axis.
                let (k, (lat, p)) = results[0];
                let mut snapped = coords.to_vec();
                snapped[depth] = k as f64;
                let (sq, ss) = ((rule.sol)(coords), (rule.sol)(&snapped));
                if sq.is_finite() && ss.is_finite() && sq > 0.0 && ss > 0.0 { Ok((lat * (sq / ss), p)) } else { Ok((lat, p)) }
            }
            _ => {
                let (k_lo, (lat_lo, p_lo)) = results[0];
                let (k_hi, (lat_hi, p_hi)) = results[1];
                let w = (c - k_lo as f64) / (k_hi as f64 - k_lo as f64);
                let lat = if rule.sqrt_axis == Some(depth) {
                    let (a, b) = (sqrt_space(lat_lo), sqrt_space(lat_hi));
                    let v = a + (b - a) * w;
                    v * v
                } else {
                    lat_lo + (lat_hi - lat_lo) * w
                };
                Ok((lat, p_lo + (p_hi - p_lo) * w))
            }
        }
    }

    /// Past the data: the utilisation of the 4 nearest points (log₂ space), tapered weights.
    fn hold(&self, rule: &GridRule, coords: &[f64]) -> Result<(f64, f64), Miss> {
        if self.dims == 1 {
            return self.hold_1d(rule, coords);
        }
        const NN: usize = 4;
        let q: Vec<f64> = coords.iter().map(|&v| log2(v.max(1e-12))).collect();
        let dist = |lc: &[f64]| {
            let mut d = 0.0;
            for (a, b) in lc.iter().zip(&q) {
                let delta = a - b;
                d += delta * delta;
            }
            d
        };
        // The nearest few by (distance, index), then the first NN valid of them and the next
        // valid one's distance (the taper's radius); when too few of them are valid, every point.
        const SLACK: usize = 8;
        let near = self.near.nearest(&q, NN + SLACK, &|i| dist(&self.flat[i].1));
        let pick = |ranked: &[(f64, usize)]| {
            let mut picked: Vec<(f64, f64, f64, f64)> = Vec::with_capacity(NN); // (distance, latency, power, sol)
            let mut radius = None;
            for &(d2, i) in ranked {
                let (c, _, v) = &self.flat[i];
                let anchor: Vec<f64> = c.iter().map(|&x| x as f64).collect();
                let sol = (rule.sol)(&anchor);
                if !(v.latency.is_finite() && v.latency > 0.0 && sol.is_finite() && sol > 0.0) {
                    continue;
                }
                let d = d2.sqrt();
                if picked.len() < NN {
                    picked.push((d, v.latency, v.blend_power(), sol));
                } else {
                    radius = Some(d);
                    break;
                }
            }
            (picked, radius)
        };
        let (mut picked, mut radius) = pick(&near);
        if radius.is_none() && self.flat.len() > near.len() {
            let mut ranked: Vec<(f64, usize)> = self.flat.iter().enumerate().map(|(i, (_, lc, _))| (dist(lc), i)).collect();
            ranked.sort_unstable_by(by_rank);
            (picked, radius) = pick(&ranked);
        }
        let radius = radius.unwrap_or(f64::INFINITY);
        if picked.is_empty() {
            return Err(miss(rule.axes, coords, "no positive-util boundary anchor"));
        }
        let taper = |d: f64| {
            if radius.is_infinite() {
                1.0 / (d * d + 1e-12)
            } else {
                let t = (radius - d).max(0.0) / (radius * d + 1e-12);
                t * t
            }
        };
        let mut weights: Vec<f64> = picked.iter().map(|p| taper(p.0)).collect();
        let mut total = 0.0;
        for w in &weights {
            total += w;
        }
        if total <= 0.0 {
            weights.iter_mut().for_each(|w| *w = 1.0);
        }
        let wsum: f64 = weights.iter().sum();
        if wsum <= 0.0 {
            return Err(miss(rule.axes, coords, "no positive-util boundary anchor"));
        }
        let util: f64 = picked.iter().zip(&weights).map(|(p, w)| w * (p.3 / p.1)).sum();
        let power: f64 = picked.iter().zip(&weights).map(|(p, w)| w * p.2).sum();
        let sq = (rule.sol)(coords);
        if !(sq.is_finite() && sq > 0.0) {
            return Err(miss(rule.axes, coords, "non-positive SOL at query"));
        }
        Ok((sq / (util / wsum), power / wsum))
    }

    fn hold_1d(&self, rule: &GridRule, coords: &[f64]) -> Result<(f64, f64), Miss> {
        let c = coords[0];
        let last = self.flat.len() - 1;
        let (k, v) =
            if c > self.flat[last].0[0] as f64 { (&self.flat[last].0, self.flat[last].2) } else { (&self.flat[0].0, self.flat[0].2) };
        let sol = (rule.sol)(&[k[0] as f64]);
        if !(v.latency > 0.0 && sol > 0.0) {
            return Err(miss(rule.axes, coords, "no positive-util boundary anchor"));
        }
        let sq = (rule.sol)(coords);
        if !(sq.is_finite() && sq > 0.0) {
            return Err(miss(rule.axes, coords, "non-positive SOL at query"));
        }
        let mut u = [sol / v.latency];
        let mut p = [v.blend_power()];
        Ok((sq / median(&mut u), median(&mut p)))
    }
}

fn sqrt_space(lat: f64) -> f64 {
    if lat > 0.0 { lat.sqrt() } else { 0.0 }
}

/// A 1-D curve (the all-reduce table: message elements → latency): exact hits, linear
/// blends, and beyond its ends the end point's utilisation (SOL ∝ the coordinate).
#[derive(Clone, Debug)]
pub struct Curve {
    points: Vec<(f64, LeafValue)>,
}

impl Curve {
    pub fn new(mut points: Vec<(f64, LeafValue)>) -> Curve {
        // The file stores them sorted; a repeated coordinate keeps its first value.
        if !points.windows(2).all(|w| w[0].0 < w[1].0) {
            let mut keyed: Vec<(f64, usize)> = points.iter().enumerate().map(|(i, p)| (p.0, i)).collect();
            keyed.sort_unstable_by(by_rank);
            points = keyed.iter().map(|&(_, i)| points[i]).collect();
            points.dedup_by(|b, a| a.0 == b.0);
        }
        Curve { points }
    }

    pub fn query(&self, x: f64) -> Result<LeafValue, Miss> {
        self.query_sol(x, "message_size", &|x| x)
    }

    /// The curve at `x`, holding the end point's utilisation against `sol` beyond the ends
    /// (the MoE table along tokens: `sol` is the experts' speed of light).
    pub fn query_sol(&self, x: f64, axis: &str, sol: &dyn Fn(f64) -> f64) -> Result<LeafValue, Miss> {
        let axes = [axis];
        if self.points.is_empty() {
            return Err(miss(&axes, &[x], "empty table"));
        }
        if let Ok(i) = self.points.binary_search_by(|p| p.0.total_cmp(&x)) {
            return Ok(self.points[i].1);
        }
        let upper = self.points.partition_point(|p| p.0 < x);
        if upper == 0 || upper == self.points.len() {
            let (ax, av) = if upper == 0 { self.points[0] } else { self.points[self.points.len() - 1] };
            let anchor_sol = sol(ax);
            if av.latency.is_nan() || av.latency <= 0.0 || anchor_sol.is_nan() || anchor_sol <= 0.0 {
                return Err(miss(&axes, &[x], "no positive-util boundary anchor"));
            }
            let query_sol = sol(x);
            if query_sol.is_nan() || query_sol <= 0.0 {
                return Err(miss(&axes, &[x], "non-positive SOL at query"));
            }
            let latency = query_sol / (anchor_sol / av.latency);
            let power = av.blend_power();
            return Ok(LeafValue { latency, power, energy: power * latency });
        }
        let (lx, lv) = self.points[upper - 1];
        let (ux, uv) = self.points[upper];
        let w = (x - lx) / (ux - lx);
        let latency = lv.latency + (uv.latency - lv.latency) * w;
        let lp = lv.blend_power();
        let power = lp + (uv.blend_power() - lp) * w;
        Ok(LeafValue { latency, power, energy: power * latency })
    }
}

/// The GEMM table of one quant: measured (n, k) sites, each with its curve along m.
#[derive(Debug)]
pub struct SiteCurves {
    /// Sites in the reference's enumeration order (its tie-break), with their curves sorted by m.
    sites: Vec<Site>,
    index: SortedMap<(u32, u32), usize>,
    /// For an unmeasured (n, k): every site by (distance, enumeration index), computed once.
    neighbours: std::sync::Mutex<rustc_hash::FxHashMap<(u32, u32), Ranked>>,
}

#[derive(Clone, Debug)]
struct Site {
    n: u32,
    k: u32,
    log_n: f64,
    log_k: f64,
    curve: Vec<(u32, LeafValue)>,
}

/// A GEMM site (n, k) and its points along m.
type Site2 = (u32, u32);
type Curve1 = Vec<(u32, LeafValue)>;

/// Sites by (log₂ distance, enumeration index) from one (n, k).
type Ranked = std::sync::Arc<Vec<(f64, usize)>>;

/// How far (log₂ units over n and k) a site may be to lend its utilisation.
const MAX_SITE_DISTANCE: f64 = 2.0;
const NN_SITES: usize = 4;
/// Points at a curve's end whose median utilisation is held beyond it.
const K_TAIL: usize = 3;

impl SiteCurves {
    /// Points are (m, n, k) → value; `order` lists the sites in enumeration order (sites it
    /// misses follow in (n, k) order).
    pub fn new(points: &[(&[u32], LeafValue)], order: &[[u32; 2]]) -> SiteCurves {
        // Points by (n, k, m); of a repeated point the first.
        let at = |i: usize| {
            let c = points[i].0;
            (c[1], c[2], c[0])
        };
        let mut sorted = order_by(points.len(), &|a, b| at(a).cmp(&at(b)));
        sorted.dedup_by(|b, a| at(*a) == at(*b));
        // Each site's curve along m, the sites in (n, k) order.
        let mut by_site: Vec<(Site2, Curve1)> = Vec::new();
        for i in sorted {
            let (n, k, m) = at(i);
            match by_site.last_mut() {
                Some((key, curve)) if *key == (n, k) => curve.push((m, points[i].1)),
                _ => by_site.push(((n, k), vec![(m, points[i].1)])),
            }
        }
        let rank: SortedMap<(u32, u32), usize> = order.iter().enumerate().map(|(i, s)| ((s[0], s[1]), i)).collect();
        let mut ranked: Vec<(f64, usize)> =
            by_site.iter().enumerate().map(|(i, (key, _))| (rank.get(key).copied().unwrap_or(usize::MAX) as f64, i)).collect();
        ranked.sort_unstable_by(by_rank);
        let sites: Vec<Site> = ranked
            .iter()
            .map(|&(_, i)| {
                let ((n, k), curve) = &by_site[i];
                Site { n: *n, k: *k, log_n: log2((*n as f64).max(1e-12)), log_k: log2((*k as f64).max(1e-12)), curve: curve.clone() }
            })
            .collect();
        let index = sites.iter().enumerate().map(|(i, s)| ((s.n, s.k), i)).collect();
        SiteCurves { sites, index, neighbours: Default::default() }
    }

    /// Replaces each value by `f(m, n, k, value)` (the load-time SOL clamp).
    pub fn map_values(&mut self, f: impl Fn(u32, u32, u32, LeafValue) -> LeafValue) {
        for s in &mut self.sites {
            for (m, v) in &mut s.curve {
                *v = f(*m, s.n, s.k, *v);
            }
        }
    }

    pub fn len(&self) -> usize {
        self.sites.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sites.is_empty()
    }

    /// The value at (m, n, k); `sol(m, n, k)` is the GEMM's speed of light.
    pub fn query(&self, m: f64, n: u32, k: u32, sol: &dyn Fn(f64, f64, f64) -> f64) -> Result<LeafValue, Miss> {
        let (lat, p) = self.resolve(m, n, k, sol)?;
        Ok(LeafValue { latency: lat, power: p, energy: p * lat })
    }

    fn resolve(&self, q: f64, n: u32, k: u32, sol: &dyn Fn(f64, f64, f64) -> f64) -> Result<(f64, f64), Miss> {
        let axes = ["m", "n", "k"];
        let coords = [q, n as f64, k as f64];
        if let Some(&i) = self.index.get(&(n, k)) {
            return self.eval_curve(&self.sites[i], q, &coords, sol);
        }
        if self.sites.is_empty() {
            return Err(miss(&axes, &coords, "no sites collected"));
        }
        let (qn, qk) = (log2((n as f64).max(1e-12)), log2((k as f64).max(1e-12)));
        let all = self.neighbours_of(n, k, qn, qk);
        let covers = |s: &Site| (s.curve[0].0 as f64) <= q && q <= (s.curve[s.curve.len() - 1].0 as f64);
        // Already in (distance, index) order: filtering keeps it.
        let mut ranked: Vec<(f64, usize)> = all.iter().copied().filter(|&(_, i)| covers(&self.sites[i])).collect();
        if ranked.is_empty() {
            ranked = all.to_vec();
        }
        if ranked.iter().any(|&(d, _)| d <= MAX_SITE_DISTANCE) {
            ranked.retain(|&(d, _)| d <= MAX_SITE_DISTANCE);
        } else {
            ranked =
                self.frontier_anchors(&ranked, n, k, qn, qk).ok_or_else(|| miss(&axes, &coords, "no site within max_site_distance"))?;
        }
        ranked.sort_unstable_by(by_rank);
        let (mut wsum, mut u_acc, mut p_acc) = (0.0_f64, 0.0_f64, 0.0_f64);
        for &(d, i) in ranked.iter().take(NN_SITES) {
            let s = &self.sites[i];
            let Ok((lat, p)) = self.eval_curve(s, q, &[q, s.n as f64, s.k as f64], sol) else { continue };
            let sol_i = sol(q, s.n as f64, s.k as f64);
            if !(lat.is_finite() && lat > 0.0 && sol_i.is_finite() && sol_i > 0.0) {
                continue;
            }
            let w = 1.0 / (d * d + 1e-12);
            u_acc += w * (sol_i / lat);
            p_acc += w * p;
            wsum += w;
        }
        if wsum <= 0.0 {
            return Err(miss(&axes, &coords, "no usable neighbour site"));
        }
        let sq = sol(q, n as f64, k as f64);
        if !(sq.is_finite() && sq > 0.0) {
            return Err(miss(&axes, &coords, "non-positive SOL at query"));
        }
        Ok((sq / (u_acc / wsum), p_acc / wsum))
    }

    fn neighbours_of(&self, n: u32, k: u32, qn: f64, qk: f64) -> std::sync::Arc<Vec<(f64, usize)>> {
        let mut cache = self.neighbours.lock().expect("neighbour cache");
        cache
            .entry((n, k))
            .or_insert_with(|| {
                let dist = |s: &Site| ((s.log_n - qn) * (s.log_n - qn) + (s.log_k - qk) * (s.log_k - qk)).sqrt();
                let mut all: Vec<(f64, usize)> = self.sites.iter().enumerate().map(|(i, s)| (dist(s), i)).collect();
                all.sort_unstable_by(by_rank);
                std::sync::Arc::new(all)
            })
            .clone()
    }

    /// A site past the measured frontier along exactly one of n, k (a large vocabulary's LM
    /// head at small TP): the sites close on the other axis lend their utilisation.
    fn frontier_anchors(&self, cands: &[(f64, usize)], n: u32, k: u32, qn: f64, qk: f64) -> Option<Vec<(f64, usize)>> {
        let q = [n, k];
        let mut overflow = Vec::new();
        for (a, &qa) in q.iter().enumerate() {
            let (mut lo, mut hi) = (u32::MAX, 0u32);
            for &(_, i) in cands {
                let v = if a == 0 { self.sites[i].n } else { self.sites[i].k };
                lo = lo.min(v);
                hi = hi.max(v);
            }
            if qa < lo {
                return None;
            }
            if qa > hi {
                overflow.push(a);
            }
        }
        if overflow.len() != 1 {
            return None;
        }
        let resid = |i: usize| {
            let s = &self.sites[i];
            if overflow[0] == 0 { ((s.log_k - qk) * (s.log_k - qk)).sqrt() } else { ((s.log_n - qn) * (s.log_n - qn)).sqrt() }
        };
        let ok: Vec<(f64, usize)> = cands.iter().copied().filter(|&(_, i)| resid(i) <= MAX_SITE_DISTANCE).collect();
        if ok.is_empty() { None } else { Some(ok) }
    }

    fn eval_curve(&self, s: &Site, q: f64, coords: &[f64], sol: &dyn Fn(f64, f64, f64) -> f64) -> Result<(f64, f64), Miss> {
        let curve = &s.curve;
        let idx = curve.partition_point(|&(c, _)| (c as f64) < q);
        if idx < curve.len() && curve[idx].0 as f64 == q {
            let v = curve[idx].1;
            return Ok((v.latency, v.blend_power()));
        }
        let (first, last) = (curve[0].0 as f64, curve[curve.len() - 1].0 as f64);
        if q < first || q > last || curve.len() < 2 {
            let tail = if q < first { &curve[..K_TAIL.min(curve.len())] } else { &curve[curve.len().saturating_sub(K_TAIL)..] };
            let mut utils = Vec::with_capacity(tail.len());
            let mut powers = Vec::with_capacity(tail.len());
            for &(m, v) in tail {
                let so = sol(m as f64, s.n as f64, s.k as f64);
                if v.latency > 0.0 && so > 0.0 {
                    utils.push(so / v.latency);
                    powers.push(v.blend_power());
                }
            }
            if utils.is_empty() {
                return Err(miss(&["m", "n", "k"], coords, "no positive-util boundary anchor"));
            }
            let sq = sol(q, s.n as f64, s.k as f64);
            if !(sq.is_finite() && sq > 0.0) {
                return Err(miss(&["m", "n", "k"], coords, "non-positive SOL at query"));
            }
            return Ok((sq / median(&mut utils), median(&mut powers)));
        }
        let (c_lo, lo) = curve[idx - 1];
        let (c_hi, hi) = curve[idx];
        let w = (q - c_lo as f64) / (c_hi as f64 - c_lo as f64);
        let (p_lo, p_hi) = (lo.blend_power(), hi.blend_power());
        Ok((lo.latency + (hi.latency - lo.latency) * w, p_lo + (p_hi - p_lo) * w))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaf(l: f64) -> LeafValue {
        LeafValue::with_power(l, 0.0)
    }

    /// Latency ∝ heads × seq² × batch, the attention-like SOL of the tests.
    fn attn_sol(c: &[f64]) -> f64 {
        1e-6 * c[0] * c[1] * c[1] * c[2]
    }

    fn grid(points: &[([u32; 3], f64)]) -> Grid {
        let pts: Vec<(&[u32], LeafValue)> = points.iter().map(|(c, v)| (c.as_slice(), leaf(*v))).collect();
        Grid::new(&pts, 3)
    }

    fn rule<'a>(sol: &'a dyn Fn(&[f64]) -> f64, sqrt_axis: Option<usize>) -> GridRule<'a> {
        GridRule { axes: &["n", "s", "b"], sqrt_axis, sol }
    }

    #[test]
    fn order_by_is_a_stable_sort() {
        let keys = [5, 3, 9, 3, 1, 5, 5, 0, 9, 2, 3];
        for n in 0..=keys.len() {
            let got = order_by(n, &|a, b| keys[a].cmp(&keys[b]));
            let mut want: Vec<usize> = (0..n).collect();
            want.sort_by_key(|&i| keys[i]);
            assert_eq!(got, want, "n = {n}");
        }
    }

    #[test]
    fn exact_hit_returns_the_measured_value() {
        let g = grid(&[([8, 100, 1], 3.25), ([8, 200, 1], 7.0)]);
        assert_eq!(g.query(&rule(&attn_sol, Some(1)), &[8.0, 100.0, 1.0]).unwrap().latency, 3.25);
    }

    #[test]
    fn bracket_blend_is_linear_or_in_sqrt_space() {
        let g = grid(&[([8, 100, 1], 4.0), ([8, 200, 1], 16.0)]);
        // Raw: halfway between 4 and 16.
        assert_eq!(g.query(&rule(&attn_sol, None), &[8.0, 150.0, 1.0]).unwrap().latency, 10.0);
        // √-space along the sequence axis: (2 + 4)/2 = 3, squared.
        assert_eq!(g.query(&rule(&attn_sol, Some(1)), &[8.0, 150.0, 1.0]).unwrap().latency, 9.0);
    }

    #[test]
    fn a_one_sided_bracket_is_rescaled_by_the_sol_ratio() {
        // b = 4 exists only under s = 100: the s = 200 branch is dropped at s = 150, b = 4.
        let g = grid(&[([8, 100, 1], 4.0), ([8, 100, 4], 10.0), ([8, 200, 1], 16.0)]);
        let v = g.query(&rule(&attn_sol, Some(1)), &[8.0, 150.0, 4.0]).unwrap().latency;
        assert_eq!(v, 10.0 * (attn_sol(&[8.0, 150.0, 4.0]) / attn_sol(&[8.0, 100.0, 4.0])));
    }

    #[test]
    fn out_of_range_holds_the_utilisation() {
        // Every point at the same utilisation (latency = 2 × SOL): beyond the data, too.
        let pts: Vec<([u32; 3], f64)> = [[8, 100, 1], [8, 200, 1], [8, 100, 2], [8, 200, 2], [16, 100, 1]]
            .iter()
            .map(|c| (*c, 2.0 * attn_sol(&[c[0] as f64, c[1] as f64, c[2] as f64])))
            .collect();
        let g = grid(&pts);
        let q = [8.0, 1000.0, 8.0];
        let v = g.query(&rule(&attn_sol, Some(1)), &q).unwrap().latency;
        assert!((v - 2.0 * attn_sol(&q)).abs() < 1e-9 * v, "{v}");
    }

    #[test]
    fn curves_hold_their_end_utilisation() {
        let c = Curve::new(vec![(10.0, leaf(1.0)), (20.0, leaf(3.0))]);
        assert_eq!(c.query(10.0).unwrap().latency, 1.0);
        assert_eq!(c.query(15.0).unwrap().latency, 2.0);
        assert_eq!(c.query(40.0).unwrap().latency, 6.0);
        assert_eq!(c.query(5.0).unwrap().latency, 0.5);
    }

    fn gemm_sol(m: f64, n: f64, k: f64) -> f64 {
        2.0 * m * n * k / 1e12
    }

    #[test]
    fn an_unknown_gemm_site_borrows_utilisation_and_a_far_one_misses() {
        // Two measured sites at utilisation 0.5 and 0.25 (latency = SOL / util).
        let mut pts = Vec::new();
        for m in [1u32, 16, 256] {
            pts.push(([m, 1024, 1024], 2.0 * gemm_sol(m as f64, 1024.0, 1024.0)));
            pts.push(([m, 4096, 1024], 4.0 * gemm_sol(m as f64, 4096.0, 1024.0)));
        }
        let refs: Vec<(&[u32], LeafValue)> = pts.iter().map(|(c, v)| (c.as_slice(), leaf(*v))).collect();
        let g = SiteCurves::new(&refs, &[[1024, 1024], [4096, 1024]]);
        // Exact site, between curve points: linear in m.
        let a = g.query(8.5, 1024, 1024, &gemm_sol).unwrap().latency;
        let (l1, l16) = (2.0 * gemm_sol(1.0, 1024.0, 1024.0), 2.0 * gemm_sol(16.0, 1024.0, 1024.0));
        assert_eq!(a, l1 + (l16 - l1) * (7.5 / 15.0));
        // n = 2048 is log₂-distance 1 from both: equal weights, utilisation (0.5 + 0.25) / 2.
        let b = g.query(16.0, 2048, 1024, &gemm_sol).unwrap().latency;
        let want = gemm_sol(16.0, 2048.0, 1024.0) / 0.375;
        assert!((b - want).abs() < 1e-12 * want, "{b} vs {want}");
        // Far below every site on both axes: a miss, never a made-up value.
        assert!(g.query(16.0, 16, 16, &gemm_sol).is_err());
        // Beyond the sweep: the median of the last three points' utilisation.
        let c = g.query(1024.0, 1024, 1024, &gemm_sol).unwrap().latency;
        assert!((c - 2.0 * gemm_sol(1024.0, 1024.0, 1024.0)).abs() < 1e-12);
    }
}
