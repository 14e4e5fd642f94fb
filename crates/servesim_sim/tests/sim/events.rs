//! The event stream (`--events`, the page's inspector) tells the same story as the report:
//! one arrival and one end per request, first tokens and pass token counts that add up to the
//! summary, KV events that account for every rank's cache-visible blocks at each pass end, and
//! recording changes nothing about the run.

use crate::common::{case_file, repo};
use serde_json::Value;
use servesim_sim::report::events::Window;
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

fn recorded(case: &str) -> (Value, Vec<Value>, Value) {
    let path = repo(&format!("{case}.json"));
    let plain = case_file(&path).run().to_json();
    let window = Rc::new(RefCell::new(Window { from_ms: 0.0, to_ms: f64::INFINITY, max: usize::MAX, lines: Vec::new(), dropped: 0 }));
    let with = case_file(&path).with_events(Box::new(window.clone())).run().to_json();
    let events = window.borrow().lines.iter().map(|l| serde_json::from_str(l).unwrap()).collect();
    (plain, events, with)
}

fn n(v: &Value) -> u64 {
    v.as_u64().unwrap()
}

fn place(e: &Value) -> (String, u64, u64) {
    (e["pool"].as_str().unwrap().to_string(), n(&e["worker"]), n(&e["dp_rank"]))
}

/// Records `case`, checks its stream, and returns it.
fn check(case: &str) -> Vec<Value> {
    let (plain, events, with) = recorded(case);
    assert_eq!(plain, with, "{case}: recording events changed the run");
    let s = &plain["summary"];
    let count = |kind: &str| events.iter().filter(|e| e["kind"] == kind).count() as u64;

    let times: Vec<f64> = events.iter().map(|e| e["t_ms"].as_f64().unwrap()).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{case}: events out of time order");

    // Every request arrives once and ends once, with the report's status.
    let mut arrived = HashSet::new();
    let mut ended: HashMap<u64, String> = HashMap::new();
    for e in &events {
        match e["kind"].as_str().unwrap() {
            "arrived" => assert!(arrived.insert(n(&e["request"])), "{case}: request {} arrived twice", e["request"]),
            "finished" => {
                let r = n(&e["request"]);
                assert!(arrived.contains(&r), "{case}: request {r} ended before it arrived");
                assert!(ended.insert(r, e["status"].as_str().unwrap().to_string()).is_none(), "{case}: request {r} ended twice");
            }
            _ => {}
        }
    }
    assert_eq!(arrived.len() as u64, n(&s["num_requests"]), "{case}: arrivals");
    let with_status = |st: &str| ended.values().filter(|v| *v == st).count() as u64;
    assert_eq!(with_status("completed"), n(&s["completed_requests"]), "{case}: completed");
    assert_eq!(with_status("rejected"), n(&s["rejected_requests"]), "{case}: rejected");
    assert_eq!(with_status("unschedulable"), n(&s["unschedulable_requests"]), "{case}: unschedulable");
    let routed: HashSet<u64> = events.iter().filter(|e| e["kind"] == "routed").map(|e| n(&e["request"])).collect();
    assert!(ended.iter().all(|(r, st)| st != "completed" || routed.contains(r)), "{case}: a completed request was never routed");
    assert_eq!(count("first_token"), n(&s["num_ttft_samples"]), "{case}: first tokens");

    // Passes carry the work the summary counts.
    let passes: Vec<&Value> = events.iter().filter(|e| e["kind"] == "pass").collect();
    let prefill: u64 = passes.iter().map(|p| n(&p["prefill_tokens"])).sum();
    assert_eq!(prefill, n(&s["committed_prefill_tokens"]), "{case}: prefill tokens");
    let decode: u64 = passes.iter().filter(|p| p["pool"] != "prefill").map(|p| n(&p["decode_tokens"])).sum();
    assert_eq!(decode, n(&s["total_output_tokens"]), "{case}: output tokens");
    for p in &passes {
        let d = p["duration_ms"].as_f64().unwrap();
        assert!(d > 0.0 && (p["start_ms"].as_f64().unwrap() + d - p["t_ms"].as_f64().unwrap()).abs() < 1e-6, "{case}: pass {p}");
    }

    // Stored minus removed is each rank's cache at every pass end, once the KV events of that
    // instant are in (a prompt released at the pass boundary publishes after the pass; decode
    // workers publish none, as in Dynamo); a rank's blocks always add up to its pool.
    let mut cache: HashMap<(String, u64, u64), HashSet<u64>> = HashMap::new();
    let mut pool_size: HashMap<(String, u64, u64), u64> = HashMap::new();
    let mut due: Vec<&Value> = Vec::new();
    let mut checked = 0;
    let mut settle = |due: &mut Vec<&Value>, cache: &HashMap<(String, u64, u64), HashSet<u64>>| {
        for p in due.drain(..) {
            let b = &p["blocks"];
            let cached = cache.get(&place(p)).map_or(0, |s| s.len()) as u64;
            assert_eq!(cached, n(&b["cached"]), "{case}: {:?} at {}: KV events say {cached} cached, the pool {b}", place(p), p["t_ms"]);
            checked += 1;
        }
    };
    for e in &events {
        if due.first().is_some_and(|p| p["t_ms"] != e["t_ms"]) {
            settle(&mut due, &cache);
        }
        let k = || place(e);
        match e["kind"].as_str().unwrap() {
            "stored" => cache.entry(k()).or_default().extend(e["hashes"].as_array().unwrap().iter().map(n)),
            "removed" => {
                let set = cache.entry(k()).or_default();
                for h in e["hashes"].as_array().unwrap() {
                    assert!(set.remove(&n(h)), "{case}: {:?} removed {h}, which it never stored", k());
                }
            }
            "pass" => {
                let b = &e["blocks"];
                let total = n(&b["in_use"]) + n(&b["idle"]) + n(&b["free"]);
                assert_eq!(*pool_size.entry(k()).or_insert(total), total, "{case}: {:?}: blocks {b}", k());
                if e["pool"] != "decode" {
                    due.push(e);
                }
            }
            _ => {}
        }
    }
    settle(&mut due, &cache);
    assert!(checked > 0, "{case}: no pass checked");
    events
}

#[test]
fn events_agree_with_the_report_vllm() {
    let events = check("tests/conformance/cases/vllm-pressure-lifo");
    assert!(events.iter().any(|e| e["kind"] == "preempted"), "the pressure case preempts");
}

#[test]
fn events_agree_with_the_report_sglang() {
    let events = check("tests/conformance/cases/sglang-pressure");
    assert!(events.iter().any(|e| e["kind"] == "retracted"), "the pressure case retracts");
}

#[test]
fn events_agree_with_the_report_disaggregated_and_kv_routed() {
    let transfers = check("tests/conformance/cases/disagg-2p2d").iter().filter(|e| e["kind"] == "transfer_end").count();
    assert_eq!(transfers, 1000, "every prompt's KV moves to a decode rank");
    // A KV-routed request names every candidate's cost, and the chosen one is the cheapest.
    let events = check("tests/conformance/cases/kv4-burst");
    let routed: Vec<&Value> = events.iter().filter(|e| e["kind"] == "routed").collect();
    for r in &routed {
        let costs: Vec<f64> = r["costs"].as_array().unwrap().iter().map(|c| c.as_f64().unwrap()).collect();
        assert_eq!(costs.len(), 4, "{r}");
        let chosen = costs[n(&r["worker"]) as usize];
        assert!(costs.iter().all(|&c| c >= chosen), "{r}: not the cheapest");
    }
}
