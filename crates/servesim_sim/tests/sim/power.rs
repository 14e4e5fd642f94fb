//! Modelled power (issue 30 item 4): a run timed by measured kernels reports the reference's
//! `power_coverage`, and `power_w` with energy per output token once 90 % of its active time
//! has measured power; every pass part is counted once; other timing says nothing of power.

use crate::common::{case_doc, case_file, repo};
use servesim_sim::report::events::{EventSink, SimEvent};
use std::cell::RefCell;
use std::rc::Rc;

#[derive(Default)]
struct PassTime {
    ms: f64,
    passes: u64,
}

impl EventSink for PassTime {
    fn record(&mut self, _t_ms: f64, event: &SimEvent<'_>) {
        if let SimEvent::Pass { duration_ms, .. } = event {
            self.ms += duration_ms;
            self.passes += 1;
        }
    }
}

/// Measured kernels: the evidence covers every pass (its latency is the passes' time), and the
/// committed data, whose tables carry no non-zero power for these ops (the package's own
/// estimator returns zero energy for them too), publishes a coverage of 0 and no power.
#[test]
fn measured_timing_counts_every_pass_and_publishes_power_only_past_the_gate() {
    let sink = Rc::new(RefCell::new(PassTime::default()));
    let report = case_file(&repo("tests/ais/cases/ais-vllm-b200-llama31-8b-tp1.json")).with_events(Box::new(sink.clone())).run();
    let p = report.collector.power.expect("every engine is timed by measured kernels");
    let t = sink.borrow();
    // Pass durations are the parts' times rounded to whole nanoseconds.
    assert!(
        (p.evidence.latency_ms - t.ms).abs() <= 2e-6 * t.passes as f64,
        "{} vs {} over {} passes",
        p.evidence.latency_ms,
        t.ms,
        t.passes
    );
    let s = report.summary();
    assert_eq!(s["power_coverage"], 0.0);
    assert!(s.get("power_w").is_none() && s.get("energy_per_output_token_j").is_none(), "never 0 W: withheld");
    println!("{} passes, {:.1} ms active, coverage {}", t.passes, t.ms, s["power_coverage"]);
}

/// Polynomial (and fixed, NPZ, roofline) timing supplies no energy: no power keys at all.
#[test]
fn other_timing_says_nothing_of_power() {
    let report = case_file(&repo("tests/conformance/cases/vllm-light.json")).run();
    assert!(report.collector.power.is_none());
    let s = report.summary();
    assert!(s.get("power_coverage").is_none() && s.get("power_w").is_none());
    // A speed-up ratio scales the evidence with the pass times.
    let path = repo("tests/ais/cases/ais-vllm-b200-llama31-8b-tp1.json");
    let mut doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let base = case_doc(&doc, &path).run().collector.power.unwrap().evidence.latency_ms;
    doc["replay"]["extra_engine_args"]["engine"]["speedup_ratio"] = 2.0.into();
    let fast = case_doc(&doc, &path).run().collector.power.unwrap().evidence.latency_ms;
    assert!(fast < base * 0.75, "{fast} vs {base}");
}
