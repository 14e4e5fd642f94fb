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
    let mut mirrors: HashMap<(String, u64, u64), Mirror> = HashMap::new();
    let mut blocks_checked = 0;
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
            "blocks" => mirrors.entry(k()).or_default().apply(e),
            "pass" => {
                let b = &e["blocks"];
                if let Some(m) = mirrors.get_mut(&k()) {
                    m.check(b, &format!("{case}: {:?} at {}", k(), e["t_ms"]));
                    blocks_checked += 1;
                }
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
    let vllm = events.iter().any(|e| e["kind"] == "preempted") || !events.iter().any(|e| e["kind"] == "retracted");
    if vllm {
        assert!(blocks_checked > 0, "{case}: no `blocks` lines");
    }
    for (at, m) in &mirrors {
        assert!(m.held.is_empty(), "{case}: {at:?}: blocks still held at the end: {:?}", m.held);
    }
    events
}

/// A rank's pool as its `blocks` lines tell it: block → (hash, holders), request → blocks,
/// with running counts (checked at every pass; the holder lists at every 32nd, as walking
/// them is slow in a debug build).
#[derive(Default)]
struct Mirror {
    blocks: HashMap<u64, (Option<u64>, u64)>,
    held: HashMap<u64, Vec<u64>>,
    in_use: u64,
    idle: u64,
    hashes: HashMap<u64, u64>,
    passes: u64,
}

impl Mirror {
    fn count(&mut self, b: (Option<u64>, u64), sign: i64) {
        let add = |n: &mut u64| *n = (*n as i64 + sign) as u64;
        if b.1 > 0 {
            add(&mut self.in_use);
        } else if b.0.is_some() {
            add(&mut self.idle);
        }
        if let Some(h) = b.0 {
            let c = self.hashes.entry(h).or_default();
            add(c);
            if *c == 0 {
                self.hashes.remove(&h);
            }
        }
    }

    fn apply(&mut self, e: &Value) {
        for c in e["set"].as_array().unwrap() {
            let now = (c[1].as_u64(), n(&c[2]));
            if let Some(was) = self.blocks.insert(n(&c[0]), now) {
                self.count(was, -1);
            }
            self.count(now, 1);
        }
        for h in e["held"].as_array().unwrap() {
            let list = self.held.entry(n(&h[0])).or_default();
            list.truncate(n(&h[1]) as usize);
            list.extend(h[2].as_array().unwrap().iter().map(n));
            if list.is_empty() {
                self.held.remove(&n(&h[0]));
            }
        }
    }

    /// The lines add up to the `pass` line's pool: in use, idle and distinct cached hashes;
    /// each block's holders are the requests listing it.
    fn check(&mut self, b: &Value, at: &str) {
        let got = (self.in_use, self.idle, self.hashes.len() as u64);
        assert_eq!(got, (n(&b["in_use"]), n(&b["idle"]), n(&b["cached"])), "{at}: blocks lines vs the pass {b}");
        self.passes += 1;
        if self.passes % 32 != 1 {
            return;
        }
        let mut holders: HashMap<u64, u64> = HashMap::new();
        for list in self.held.values() {
            for &blk in list {
                *holders.entry(blk).or_default() += 1;
            }
        }
        for (blk, v) in &self.blocks {
            assert_eq!(holders.get(blk).copied().unwrap_or(0), v.1, "{at}: block {blk}'s holders");
        }
    }
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
