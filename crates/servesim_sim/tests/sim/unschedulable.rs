//! Where the reference gives up (it aborts the whole replay when a request can never be
//! scheduled), servesim finishes the run and names the request and the reason.

use serde_json::json;

fn run(rows: &[(f64, u32, u32)], engine: serde_json::Value) -> serde_json::Value {
    let case = json!({"trace": "t.jsonl", "replay": {"trace_block_size": 16, "extra_engine_args": {"engine": engine}}});
    let mut text = String::new();
    for (i, (ts, input, output)) in rows.iter().enumerate() {
        let ids: Vec<u64> = (0..input.div_ceil(16) as u64).map(|b| 1000 * (i as u64 + 1) + b).collect();
        text += &json!({"timestamp": ts, "input_length": input, "output_length": output, "hash_ids": ids}).to_string();
        text += "\n";
    }
    crate::common::case_with_trace(&case, &text).run().to_json()
}

#[test]
fn a_request_that_outgrows_the_pool_is_reported_and_the_rest_finish() {
    // 160 prompt tokens on 10 blocks of 16: its second token needs an 11th block.
    let out = run(&[(0.0, 160, 2), (1.0, 32, 3)], json!({"block_size": 16, "num_gpu_blocks": 10}));
    let s = &out["summary"];
    assert_eq!((s["completed_requests"].as_u64(), s["unschedulable_requests"].as_u64()), (Some(1), Some(1)));
    let why = &out["not_completed"][0];
    assert_eq!(why["trace_line"], 1);
    assert!(why["reason"].as_str().unwrap().contains("no longer fits the pool of 10 blocks"), "{why}");
    assert_eq!(out["per_request"][1][2], 3, "the follower completes all its tokens");
}

#[test]
fn a_prompt_over_the_budget_with_chunking_off_is_reported() {
    let engine = json!({"block_size": 16, "max_num_batched_tokens": 100, "enable_chunked_prefill": false});
    let out = run(&[(0.0, 101, 2), (0.0, 100, 2)], engine);
    let why = &out["not_completed"][0];
    assert_eq!(why["status"], "unschedulable");
    assert!(why["reason"].as_str().unwrap().contains("exceeds max_num_batched_tokens 100"), "{why}");
    // The follower then runs alone: TTFT = P(100) = 18.023974 ms.
    let ttft = out["per_request"][1][0].as_f64().unwrap();
    assert!((ttft - 18.023974).abs() < 1e-6, "{ttft}");
}

#[test]
fn rejections_end_at_the_pass_in_which_they_reach_the_head() {
    // {0,100,5} + {5,200,3} on 10 blocks: rejected at 47.601, the end of pass 18.023974 → 47.601.
    let out = run(&[(0.0, 100, 5), (5.0, 200, 3)], json!({"block_size": 16, "num_gpu_blocks": 10}));
    let row = &out["per_request"][1];
    assert!(row[0].is_null());
    assert!((row[1].as_f64().unwrap() - 47.601).abs() < 1e-6, "{row}");
    assert_eq!(out["summary"]["rejected_requests"], 1);
}

#[test]
fn a_decode_queue_that_can_never_move_ends_its_requests_with_the_reason() {
    // The 16-token request decodes first, outgrows its share and preempts itself; the
    // 300-token one, whose reserved blocks fill the pool, queues behind it. Nothing runs and
    // nothing will change (the reference aborts its replay on the neighbouring cases): both
    // end as unschedulable and the run finishes.
    let engine = |role: &str, blocks: u32| {
        json!({"engine": {"worker_type": role, "block_size": 16, "num_gpu_blocks": blocks,
            "kv_transfer_bandwidth": 1.0, "kv_bytes_per_token": 1000000,
            "timing_model": {"type": "fixed", "prefill_ms": 10.0, "decode_ms": 5.0}}})
    };
    let case = json!({"trace": "t.jsonl", "replay": {"trace_block_size": 16, "num_prefill_workers": 1,
        "num_decode_workers": 1, "prefill_engine_args": engine("prefill", 200), "decode_engine_args": engine("decode", 20)}});
    let text = [(0.0, 16, 60), (5.0, 300, 10)]
        .iter()
        .enumerate()
        .map(|(i, &(ts, input, output)): (usize, &(f64, u32, u32))| {
            let ids: Vec<u64> = (0..input.div_ceil(16) as u64).map(|b| 1000 * (i as u64 + 1) + b).collect();
            json!({"timestamp": ts, "input_length": input, "output_length": output, "hash_ids": ids}).to_string() + "\n"
        })
        .collect::<String>();
    let out = crate::common::case_with_trace(&case, &text).run().to_json();
    assert_eq!(out["summary"]["unschedulable_requests"], 2, "{out}");
    for why in out["not_completed"].as_array().unwrap() {
        assert!(why["reason"].as_str().unwrap().starts_with("stuck: nothing runs"), "{why}");
    }
    assert_eq!(out["per_request"][0][2], 1, "the first request had emitted one token");
}
