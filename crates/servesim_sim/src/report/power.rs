//! Modelled power and energy of a run timed by measured kernels (the reference's
//! `power_w` / `power_coverage`, plus energy per output token).
//!
//! Every engine core's passes carry power evidence (`servesim_engine::perf::ais::energy`);
//! a run whose every core is timed by measured kernels reports the coverage, and with 90 %
//! of the active time covered, one GPU's mean power while computing and the energy of all
//! GPUs' passes per output token. Idle GPUs, hosts, networks and cooling are not in it.

use serde_json::{Map, Value};
use servesim_engine::perf::ais::energy::{COVERAGE_GATE, PowerEvidence};

use crate::cluster::fleet::Fleet;

/// What the report says about power.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PowerReport {
    /// Summed over every core's pass parts (per GPU: one pass's ops run on each of its GPUs).
    pub evidence: PowerEvidence,
    /// The covered ops' energy on all the GPUs of the engines (J).
    pub energy_j: f64,
}

impl PowerReport {
    /// The fleet's report: `None` when any core's timing supplies no energy.
    pub(crate) fn of(fleet: &Fleet) -> Option<PowerReport> {
        let mut r = PowerReport::default();
        for rank in &fleet.ranks {
            let e = rank.engine.power_evidence()?;
            let pool = &fleet.pools[rank.pool];
            let gpus = pool.launch.gpus_per_worker() as f64 / pool.dp_size.max(1) as f64;
            r.evidence.add(e);
            r.energy_j += e.energy_wms * gpus / 1000.0;
        }
        (!fleet.ranks.is_empty()).then_some(r)
    }

    /// `power_coverage` as the reference reports it (clamped to the gate's side it falls on),
    /// `power_w` when published, and `energy_per_output_token_j` with it.
    pub fn write(&self, m: &mut Map<String, Value>, output_tokens: u64) {
        let power = self.evidence.power_w();
        let ratio = self.evidence.coverage();
        let coverage = if power.is_some() { ratio.max(COVERAGE_GATE) } else { ratio.min(COVERAGE_GATE.next_down()) };
        m.insert("power_coverage".into(), Value::from(coverage));
        if let Some(p) = power {
            m.insert("power_w".into(), Value::from(p));
            if output_tokens > 0 {
                m.insert("energy_per_output_token_j".into(), Value::from(self.energy_j / output_tokens as f64));
            }
        }
    }
}
