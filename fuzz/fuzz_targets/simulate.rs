//! A whole tiny simulation from fuzzed settings and trace: built as every caller builds a run
//! (through the real case and trace parsers), then run with the harness's invariant checks on
//! (blocks balance, the clock never goes backwards, every request ends exactly once). It must
//! finish within a small budget of timestamps, and every trace line must end exactly once in
//! the report.
#![no_main]
use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use serde_json::json;
use servesim_sim::replay::Case;
use servesim_sim::{BuildOptions, MemFiles, build};

#[derive(Arbitrary, Debug)]
struct Row {
    gap_ms: u8,
    input: u16,
    output: u8,
    shared_blocks: u8,
}

#[derive(Arbitrary, Debug)]
struct Input {
    rows: Vec<Row>,
    sglang: bool,
    block_size: u8,
    num_gpu_blocks: u8,
    budget: Option<u8>,
    max_num_seqs: Option<u8>,
    no_prefix_caching: bool,
    no_chunked_prefill: bool,
    fifo: bool,
    kvbm: bool,
    lpm: bool,
    chunked_prefill_size: Option<u8>,
    max_prefill_tokens: Option<u8>,
    conservativeness: u8,
    workers: u8,
    router: u8,
    speedup: u8,
}

const BUDGET: usize = 100_000;

fuzz_target!(|inp: Input| {
    let n = inp.rows.len().min(10);
    if n == 0 {
        return;
    }
    let tbs = 16u32;
    let mut text = String::new();
    let mut t = 0u64;
    for (i, r) in inp.rows[..n].iter().enumerate() {
        t += r.gap_ms as u64;
        let input = 1 + r.input as u32 % 400;
        let blocks = input.div_ceil(tbs) as u64;
        let shared = (r.shared_blocks as u64 % 4).min(blocks);
        let ids: Vec<u64> = (0..blocks).map(|b| if b < shared { b + 1 } else { 1000 * (i as u64 + 1) + b }).collect();
        let row = json!({"timestamp": t, "input_length": input, "output_length": 1 + r.output as u32 % 48, "hash_ids": ids});
        text += &row.to_string();
        text += "\n";
    }
    let bs = if inp.sglang { [1u32, 4, 16][inp.block_size as usize % 3] } else { [8u32, 16, 32, 64][inp.block_size as usize % 4] };
    let mut eng = json!({
        "backend": if inp.sglang { "sglang" } else { "vllm" },
        "block_size": bs,
        "num_gpu_blocks": 1 + (inp.num_gpu_blocks as u32 % 48) * 16 / bs,
        "enable_prefix_caching": !inp.no_prefix_caching,
        "speedup_ratio": ([1.0, 0.5, 2.0, 3.0][inp.speedup as usize % 4]),
    });
    if let Some(b) = inp.budget {
        eng["max_num_batched_tokens"] = json!([16, 32, 64, 256, 8192][b as usize % 5]);
    }
    if let Some(s) = inp.max_num_seqs {
        eng["max_num_seqs"] = json!(1 + s as u32 % 4);
    }
    if inp.sglang {
        let mut sg = json!({"schedule_policy": if inp.lpm { "lpm" } else { "fifo" }});
        if let Some(c) = inp.chunked_prefill_size {
            sg["chunked_prefill_size"] = json!([16, 32, 64][c as usize % 3]);
        }
        if let Some(m) = inp.max_prefill_tokens {
            sg["max_prefill_tokens"] = json!([32, 64, 128][m as usize % 3]);
        }
        sg["schedule_conservativeness"] = json!([1.0, 0.3, 0.7][inp.conservativeness as usize % 3]);
        eng["sglang"] = sg;
    } else {
        eng["enable_chunked_prefill"] = json!(!inp.no_chunked_prefill);
        eng["preemption_mode"] = json!(if inp.fifo { "fifo" } else { "lifo" });
        if inp.kvbm {
            eng["kv_manager"] = json!("kvbm");
        }
    }
    let workers = 1 + inp.workers as u32 % 2;
    let router = ["round_robin", "kv_router", "random"][inp.router as usize % 3];
    let case = json!({"trace": "t.jsonl", "replay": {
        "trace_block_size": tbs, "num_workers": workers, "router_mode": router,
        "extra_engine_args": {"engine": eng}}});
    let Ok(case) = Case::from_json_str(&case.to_string(), "case.json") else { return };
    let mut files = MemFiles::new();
    files.insert("t.jsonl", text.into_bytes());
    let Ok(sim) = build(&servesim_sim::Input::Case(case), &mut files, &BuildOptions::default()) else { return };
    let mut sim = sim.with_checks(true);
    let mut done = false;
    for _ in 0..BUDGET {
        if sim.advance(1) {
            done = true;
            break;
        }
    }
    assert!(done, "the run did not end within {BUDGET} timestamps (virtual time {} ms)", sim.now_ms());
    let out = sim.finish().to_json();
    let rows = out["per_request"].as_array().expect("per_request rows");
    assert_eq!(rows.len(), n, "one row per trace line");
    let s = &out["summary"];
    let ended =
        ["completed_requests", "rejected_requests", "unschedulable_requests"].iter().map(|k| s[*k].as_u64().unwrap_or(0)).sum::<u64>();
    assert_eq!(ended, n as u64, "every request ends exactly once: {s}");
});
