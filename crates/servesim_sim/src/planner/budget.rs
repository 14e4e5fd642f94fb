//! The GPU budget a planner's proposal must fit (`min_gpu_budget`, `max_gpu_budget`; −1
//! disables a bound): a proposal is clamped into the band but never turned around; when the
//! current allocation is outside the band it is brought back instead ("reconcile").

/// Whether `total` GPUs fit `[min − tolerance, max]`; the tolerance (one replica's GPUs) only
/// relaxes the floor, which integer replica steps cannot always hit.
fn in_band(total: i64, min: i64, max: i64, tolerance: i64) -> bool {
    let over = max >= 0 && total > max;
    let under = min >= 0 && total < min - tolerance;
    !(over || under)
}

/// One pool's replica count clamped into the band: down to what fits under the ceiling (0
/// if not even `min_endpoint` replicas fit), up to what reaches the floor.
pub fn clamp_single(desired: i64, gpu: i64, min: i64, max: i64, min_endpoint: i64) -> i64 {
    if (min < 0 && max < 0) || gpu <= 0 {
        return desired;
    }
    let tolerance = if min >= 0 && max >= 0 { gpu } else { 0 };
    let total = desired * gpu;
    if in_band(total, min, max, tolerance) {
        return desired;
    }
    if max >= 0 && total > max {
        if max < min_endpoint * gpu {
            return 0;
        }
        return min_endpoint.max(max / gpu);
    }
    min_endpoint.max((min + gpu - 1) / gpu)
}

/// A single pool's proposal under the budget: (replicas, the reason if the budget decided).
pub fn guard_single(current: i64, proposed: i64, gpu: i64, min: i64, max: i64, min_endpoint: i64) -> (i64, Option<&'static str>) {
    if gpu <= 0 {
        return (proposed, None);
    }
    let tolerance = if min >= 0 && max >= 0 { gpu } else { 0 };
    let total = current * gpu;
    if !in_band(total, min, max, tolerance) {
        return (clamp_single(current, gpu, min, max, min_endpoint), Some("gpu_budget_reconcile"));
    }
    if min >= 0 && total <= min && proposed < current {
        return (current, Some("gpu_budget_guard_hold"));
    }
    if max >= 0 && total >= max && proposed > current {
        return (current, Some("gpu_budget_guard_hold"));
    }
    let fin = clamp_single(proposed, gpu, min, max, min_endpoint);
    if !(current.min(proposed) <= fin && fin <= current.max(proposed)) {
        return (current, Some("gpu_budget_guard_hold"));
    }
    (fin, None)
}

/// Both pools' counts clamped into the band, proportionally.
#[allow(clippy::too_many_arguments)]
pub fn clamp_pair(p: i64, d: i64, pg: i64, dg: i64, min: i64, max: i64, pmin: i64, dmin: i64) -> (i64, i64) {
    if (min < 0 && max < 0) || pg <= 0 || dg <= 0 {
        return (p, d);
    }
    let total = p * pg + d * dg;
    let tolerance = if min >= 0 && max >= 0 { pg.max(dg) } else { 0 };
    if in_band(total, min, max, tolerance) {
        return (p, d);
    }
    if max >= 0 && total > max {
        if max < pmin * pg + dmin * dg {
            return (0, 0);
        }
        let scale = max as f64 / total as f64;
        let max_p = (max - dmin * dg).div_euclid(pg);
        let new_p = pmin.max(max_p.min((p as f64 * scale).floor() as i64));
        let new_d = dmin.max((max - new_p * pg).div_euclid(dg));
        return (new_p, new_d);
    }
    let (new_p, mut new_d) = if total <= 0 {
        let new_p = pmin.max(((min as f64) / 2.0 / pg as f64).ceil() as i64);
        let remaining = (min - new_p * pg).max(0);
        (new_p, dmin.max((remaining as f64 / dg as f64).ceil() as i64))
    } else {
        let scale = min as f64 / total as f64;
        let new_p = pmin.max((p as f64 * scale).ceil() as i64);
        let remaining = (min - new_p * pg).max(0);
        (new_p, dmin.max((remaining as f64 / dg as f64).ceil() as i64))
    };
    new_d = new_d.max(d);
    if max >= 0 && new_p * pg + new_d * dg > max {
        // Growing prefill toward the floor would break the ceiling: keep the pair (the
        // reference then fits the growth with decode fixed; servesim holds).
        return (p, d);
    }
    (new_p, new_d)
}

/// A disaggregated proposal under the budget: (prefill, decode, the reason if the budget
/// decided). Opposing moves at the floor or the ceiling (one pool up, the other down) are
/// held: the reference fits a sub-pair there, which servesim does not reproduce.
#[allow(clippy::too_many_arguments)]
pub fn guard_pair(
    cur: (i64, i64),
    prop: (i64, i64),
    gpus: (i64, i64),
    min: i64,
    max: i64,
    mins: (i64, i64),
) -> (i64, i64, Option<&'static str>) {
    let ((cp, cd), (pp, pd), (pg, dg), (pmin, dmin)) = (cur, prop, gpus, mins);
    if pg <= 0 || dg <= 0 {
        let (p, d) = clamp_pair(pp, pd, pg, dg, min, max, pmin, dmin);
        return (p, d, None);
    }
    if cp < pmin || cd < dmin {
        // A pool under its endpoint floor is repaired first, whatever the load proposed.
        let (p, d) = clamp_pair(pp.max(pmin), pd.max(dmin), pg, dg, min, max, pmin, dmin);
        return (p, d, Some("gpu_budget_reconcile"));
    }
    let tolerance = if max >= 0 { pg.max(dg) } else { 0 };
    let total = cp * pg + cd * dg;
    if !in_band(total, min, max, tolerance) {
        let (p, d) = clamp_pair(cp, cd, pg, dg, min, max, pmin, dmin);
        return (p, d, Some("gpu_budget_reconcile"));
    }
    let (p_down, p_up, d_down, d_up) = (pp < cp, pp > cp, pd < cd, pd > cd);
    let (any_down, any_up) = (p_down || d_down, p_up || d_up);
    if min >= 0 && total <= min && any_down {
        return (cp, cd, Some("gpu_budget_guard_hold"));
    }
    if max >= 0 && total >= max && any_up {
        return (cp, cd, Some("gpu_budget_guard_hold"));
    }
    let (np, nd) = clamp_pair(pp, pd, pg, dg, min, max, pmin, dmin);
    let within = |c: i64, p: i64, f: i64| c.min(p) <= f && f <= c.max(p);
    if !within(cp, pp, np) || !within(cd, pd, nd) || !in_band(np * pg + nd * dg, min, max, tolerance) {
        return (cp, cd, Some("gpu_budget_guard_hold"));
    }
    (np, nd, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_pool_budget() {
        // At the ceiling (8 GPUs of 2 each = 4 workers) a scale-up is held.
        assert_eq!(guard_single(4, 5, 2, -1, 8, 1), (4, Some("gpu_budget_guard_hold")));
        assert_eq!(guard_single(3, 4, 2, -1, 8, 1), (4, None));
        // A proposal past the ceiling from below is clamped to it.
        assert_eq!(guard_single(2, 6, 2, -1, 8, 1), (4, None));
        // Above the ceiling already: brought back.
        assert_eq!(guard_single(6, 6, 2, -1, 8, 1), (4, Some("gpu_budget_reconcile")));
        assert_eq!(guard_single(3, 2, 1, -1, -1, 1), (2, None));
    }

    #[test]
    fn pair_budget() {
        assert_eq!(guard_pair((2, 2), (3, 2), (1, 1), -1, 8, (1, 1)), (3, 2, None));
        assert_eq!(guard_pair((4, 4), (5, 4), (1, 1), -1, 8, (1, 1)), (4, 4, Some("gpu_budget_guard_hold")));
        // Under a floor: repaired from the proposal, and the budget names the reason.
        assert_eq!(guard_pair((1, 1), (2, 2), (1, 2), -1, -1, (2, 2)), (2, 2, Some("gpu_budget_reconcile")));
    }
}
