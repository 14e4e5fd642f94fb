//! Power evidence of measured-kernel passes, by the reference's modelled-power contract.
//!
//! Each op of a pass has a latency and, where its table carries power, an energy (W·ms, the
//! table's power × its latency, blended like the latency). An op is *covered* when its energy
//! is positive: a zero energy is "no power data", never zero watts. A run's `power_w` is
//! Σ energy / Σ latency over every pass part (prefill and decode) of every engine — one GPU's
//! mean power while it computes, not the cluster's — published only when the covered latency
//! is at least 90 % of the total (`covered / 9 ≥ uncovered`, the reference's exact gate).
//! Timing other than measured kernels supplies no evidence: the report then says nothing of
//! power.

/// Latency, energy and covered latency summed over ops (one pass part) or passes (a run).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PowerEvidence {
    pub latency_ms: f64,
    /// W·ms (= mJ), of the covered ops.
    pub energy_wms: f64,
    /// Latency of the ops with positive energy.
    pub covered_ms: f64,
}

/// The reference's coverage threshold for publishing power.
pub const COVERAGE_GATE: f64 = 0.9;

impl PowerEvidence {
    pub fn add(&mut self, o: PowerEvidence) {
        self.latency_ms += o.latency_ms;
        self.energy_wms += o.energy_wms;
        self.covered_ms += o.covered_ms;
    }

    /// A speed-up ratio divides a pass part's modelled time: its energy scales with it, so
    /// its mean power stays and its weight in the run shrinks.
    pub fn scaled(self, divisor: f64) -> PowerEvidence {
        if divisor == 1.0 {
            return self;
        }
        PowerEvidence {
            latency_ms: self.latency_ms / divisor,
            energy_wms: self.energy_wms / divisor,
            covered_ms: self.covered_ms / divisor,
        }
    }

    /// Adds one op: its latency is covered when its energy is positive (the pass's total
    /// latency is set by the caller, summed as the pass time is).
    pub fn count(&mut self, ms: f64, energy_wms: f64) {
        if energy_wms > 0.0 {
            self.energy_wms += energy_wms;
            self.covered_ms += ms;
        }
    }

    /// The covered share of the latency (0 without latency).
    pub fn coverage(&self) -> f64 {
        if self.latency_ms > 0.0 { (self.covered_ms / self.latency_ms).clamp(0.0, 1.0) } else { 0.0 }
    }

    /// Mean power (W) when the evidence passes the gate, else `None`.
    pub fn power_w(&self) -> Option<f64> {
        let uncovered = self.latency_ms - self.covered_ms;
        let qualifies = self.latency_ms > 0.0 && self.covered_ms > 0.0 && self.covered_ms / 9.0 >= uncovered;
        let p = self.energy_wms / self.latency_ms;
        (qualifies && p.is_finite() && p > 0.0).then_some(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(latency_ms: f64, energy_wms: f64, covered_ms: f64) -> PowerEvidence {
        PowerEvidence { latency_ms, energy_wms, covered_ms }
    }

    /// The gate publishes at exactly 90 % covered and withholds just below it.
    #[test]
    fn power_is_published_from_ninety_percent_coverage() {
        assert_eq!(ev(0.3, 0.27 * 700.0, 0.27).power_w(), Some(0.27 * 700.0 / 0.3));
        assert_eq!(ev(0.3, 0.2699 * 700.0, 0.2699).power_w(), None);
        assert_eq!(ev(10.0, 0.0, 0.0).power_w(), None, "no covered op: no power, never 0 W");
        assert_eq!(ev(0.0, 0.0, 0.0).power_w(), None);
        assert_eq!(ev(10.0, 5000.0, 10.0).power_w(), Some(500.0));
        assert_eq!(ev(10.0, 5000.0, 9.5).coverage(), 0.95);
    }

    /// A speed-up divides latency and energy alike: the mean power stays.
    #[test]
    fn a_speedup_keeps_the_power_and_shrinks_the_weight() {
        let e = ev(10.0, 5000.0, 10.0).scaled(2.0);
        assert_eq!((e.latency_ms, e.power_w()), (5.0, Some(500.0)));
        let mut run = e;
        run.add(ev(5.0, 1000.0, 5.0));
        assert_eq!(run.power_w(), Some(350.0));
    }
}
