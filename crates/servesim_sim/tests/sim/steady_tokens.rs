//! Engines count their steady tokens (a request's third and later tokens, emitted pass after
//! pass) instead of listing each one, and the harness settles the records when a streak ends.
//! The records must come out exactly as when every token is listed: here on every
//! conformance and variant case (preemption, chunked prefill, disaggregation, DP ranks), and
//! for runs cut short mid-way, whose open streaks are settled at the end.

use serde_json::Value;
use servesim_sim::{RunReport, Simulation};
use std::path::{Path, PathBuf};

fn cases() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests");
    let mut out = Vec::new();
    for dir in ["conformance/cases", "variants"] {
        for e in std::fs::read_dir(root.join(dir)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "json") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn sim(path: &Path, steady: bool) -> Simulation {
    crate::common::case_file(path).with_steady_tokens(steady)
}

fn records(r: &RunReport) -> Value {
    serde_json::to_value(&r.collector.records).unwrap()
}

fn same_summary(name: &str, a: &RunReport, b: &RunReport) {
    let (a, b) = (a.summary(), b.summary());
    assert_eq!(a.len(), b.len());
    for (k, x) in &a {
        let y = &b[k];
        match (x.as_f64(), y.as_f64()) {
            // Gap sums may be added in another order: the last bits of a mean can move.
            (Some(x), Some(y)) => assert!((x - y).abs() <= 1e-9 * x.abs().max(1.0), "{name}: {k} {x} vs {y}"),
            _ => assert_eq!(x, y, "{name}: {k}"),
        }
    }
}

#[test]
fn counting_steady_tokens_leaves_every_record_as_listing_them() {
    let all = cases();
    assert!(all.len() >= 15, "conformance and variant cases found: {}", all.len());
    for path in all {
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        let listed = sim(&path, false).run();
        let counted = sim(&path, true).run();
        assert_eq!(records(&listed), records(&counted), "{name}");
        same_summary(&name, &listed, &counted);
    }
}

#[test]
fn a_run_cut_short_settles_its_open_streaks() {
    for name in ["conformance/cases/vllm-pressure-lifo.json", "conformance/cases/rr4-burst.json", "variants/rr2-dp2-pressure.json"] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests").join(name);
        for slices in [3, 40, 200] {
            let (mut a, mut b) = (sim(&path, false), sim(&path, true));
            for _ in 0..slices {
                a.advance(1);
                b.advance(1);
            }
            assert!(!a.is_done(), "{name}: cut after {slices} steps should leave work");
            let (a, b) = (a.finish(), b.finish());
            let (a, b) = (records(&a), records(&b));
            let a = a.as_array().unwrap();
            for (i, (x, y)) in a.iter().zip(b.as_array().unwrap()).enumerate() {
                assert_eq!(x, y, "{name} cut after {slices} timestamps: request {i}");
            }
        }
    }
}
