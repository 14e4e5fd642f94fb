//! Bad input through the `servesim` binary: each gives exit code 2 and a message on stderr
//! that names the file, line or field at fault; input that is merely hard (a request larger
//! than the pool) runs to the end and reports it.

use serde_json::{Value, json};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_servesim");

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A fresh directory for one test's files, removed when the test ends.
struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = PathBuf;
    fn deref(&self) -> &PathBuf {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn scratch(name: &str) -> Scratch {
    let d = std::env::temp_dir().join(format!("servesim-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    Scratch(d)
}

fn servesim(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().expect("the servesim binary runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn line(ts: u32, input: u32, output: u32, first_id: u64) -> String {
    let ids: Vec<u64> = (0..input.div_ceil(16) as u64).map(|b| first_id + b).collect();
    json!({"timestamp": ts, "input_length": input, "output_length": output, "hash_ids": ids}).to_string() + "\n"
}

/// Writes `t.jsonl` and `case.json` (trace block size 16) and returns the case path.
fn case(dir: &Path, trace: &str, engine: Value) -> PathBuf {
    std::fs::write(dir.join("t.jsonl"), trace).unwrap();
    let case = json!({"trace": "t.jsonl", "replay": {"trace_block_size": 16, "extra_engine_args": {"engine": engine}}});
    let p = dir.join("case.json");
    std::fs::write(&p, case.to_string()).unwrap();
    p
}

fn expect_error(o: &Output, needles: &[&str]) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "exit code 2 expected; stderr: {err}");
    assert!(o.stdout.is_empty(), "no result on stdout after an error");
    for n in needles {
        assert!(err.contains(n), "stderr should mention {n:?}: {err}");
    }
}

#[test]
fn a_malformed_trace_line_names_the_file_and_line() {
    let d = scratch("malformed");
    let trace = line(0, 32, 2, 1) + "{\"timestamp\": 5, \"input_length\": 32, \"hash_ids\": [1, 2]}\n" + &line(9, 32, 2, 1);
    let c = case(&d, &trace, json!({"block_size": 16}));
    let o = servesim(&["replay", c.to_str().unwrap()]);
    expect_error(&o, &["t.jsonl:2:", "output_length"]);

    // Not JSON at all, on line 3.
    let trace = line(0, 32, 2, 1) + &line(1, 32, 2, 1) + "timestamp=5\n";
    let c = case(&d, &trace, json!({"block_size": 16}));
    expect_error(&servesim(&["replay", c.to_str().unwrap()]), &["t.jsonl:3:"]);
}

#[test]
fn an_unknown_engine_field_is_named() {
    let d = scratch("unknown-field");
    let c = case(&d, &line(0, 32, 2, 1), json!({"block_size": 16, "num_gpu_blockz": 100}));
    expect_error(&servesim(&["replay", c.to_str().unwrap()]), &["engine.num_gpu_blockz", "unknown field"]);
}

#[test]
fn a_request_larger_than_the_pool_is_rejected_and_the_run_finishes() {
    let d = scratch("too-large");
    // 200 prompt tokens need 13 blocks of 16; the pool has 8. The second request fits.
    let trace = line(0, 200, 4, 1) + &line(1, 48, 3, 100);
    let c = case(&d, &trace, json!({"block_size": 16, "num_gpu_blocks": 8}));
    let o = servesim(&["replay", c.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out: Value = serde_json::from_slice(&o.stdout).unwrap();
    let s = &out["summary"];
    assert_eq!(s["completed_requests"], 1, "{s}");
    assert_eq!(s["rejected_requests"].as_u64().unwrap() + s["unschedulable_requests"].as_u64().unwrap(), 1, "{s}");
    let nc = &out["not_completed"][0];
    assert_eq!(nc["trace_line"], 1, "{nc}");
    assert!(nc["reason"].as_str().is_some_and(|r| r.contains("8")), "the reason gives the pool size: {nc}");
    assert_eq!(out["per_request"][1][2], 3, "the second request generates all its tokens");
}

#[test]
fn an_empty_trace_is_an_error() {
    let d = scratch("empty");
    let c = case(&d, "", json!({"block_size": 16}));
    expect_error(&servesim(&["replay", c.to_str().unwrap()]), &["t.jsonl", "no requests"]);
    // Blank lines only: still empty.
    let c = case(&d, "\n\n", json!({"block_size": 16}));
    expect_error(&servesim(&["replay", c.to_str().unwrap()]), &["t.jsonl", "no requests"]);
}

/// Copies the conformance profile without one of its arrays.
fn npz_without(src: &Path, dst: &Path, drop: &str) {
    let mut zin = zip::ZipArchive::new(std::fs::File::open(src).unwrap()).unwrap();
    let mut zout = zip::ZipWriter::new(std::fs::File::create(dst).unwrap());
    let opts = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    let mut kept = 0;
    for i in 0..zin.len() {
        let mut m = zin.by_index(i).unwrap();
        if m.name() == format!("{drop}.npy") {
            continue;
        }
        let mut buf = Vec::new();
        m.read_to_end(&mut buf).unwrap();
        zout.start_file(m.name().to_string(), opts).unwrap();
        zout.write_all(&buf).unwrap();
        kept += 1;
    }
    zout.finish().unwrap();
    assert_eq!(kept + 1, zin.len(), "the profile had {drop}");
}

#[test]
fn an_npz_missing_an_array_names_it() {
    let d = scratch("npz");
    let profile = repo().join("tests/conformance/profiles/profile-a.npz");
    let engine =
        |p: &str| json!({"block_size": 16, "timing_model": {"type": "external", "provider": "dynamo_profile", "config": {"path": p}}});
    // The intact profile runs.
    std::fs::copy(&profile, d.join("ok.npz")).unwrap();
    let c = case(&d, &line(0, 32, 2, 1), engine("ok.npz"));
    let o = servesim(&["replay", c.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    for array in ["decode_itl", "prefill_isl"] {
        npz_without(&profile, &d.join("cut.npz"), array);
        let c = case(&d, &line(0, 32, 2, 1), engine("cut.npz"));
        expect_error(&servesim(&["replay", c.to_str().unwrap()]), &["cut.npz", &format!("missing array `{array}`")]);
    }
    // Not an archive at all.
    std::fs::write(d.join("cut.npz"), b"not a zip").unwrap();
    expect_error(&servesim(&["replay", c.to_str().unwrap()]), &["cut.npz", "not an NPZ archive"]);
}

#[test]
fn a_scenario_with_a_bad_field_names_the_file_and_field() {
    let d = scratch("scenario");
    let p = d.join("s.json");
    std::fs::write(&p, json!({"cluster": {"num_workers": "two"}}).to_string()).unwrap();
    expect_error(&servesim(&["run", p.to_str().unwrap()]), &["s.json", "cluster.num_workers"]);
    std::fs::write(&p, json!({"engine": {"block_size": 16, "max_num_seq": 4}}).to_string()).unwrap();
    expect_error(&servesim(&["run", p.to_str().unwrap()]), &["s.json", "max_num_seq"]);
    std::fs::write(&p, json!({"workload": {"type": "synthetic", "num_requests": 3, "arival": "poisson"}}).to_string()).unwrap();
    expect_error(&servesim(&["run", p.to_str().unwrap()]), &["s.json", "arival"]);
}

#[test]
fn a_nonexistent_file_is_named() {
    let d = scratch("missing");
    let gone = d.join("no-such-case.json");
    expect_error(&servesim(&["replay", gone.to_str().unwrap()]), &["no-such-case.json"]);
    expect_error(&servesim(&["run", gone.to_str().unwrap()]), &["no-such-case.json"]);
    // A case whose trace is missing names the trace.
    let c = d.join("case.json");
    std::fs::write(&c, json!({"trace": "nowhere.jsonl", "replay": {}}).to_string()).unwrap();
    expect_error(&servesim(&["replay", c.to_str().unwrap()]), &["nowhere.jsonl"]);
}

#[test]
fn the_example_scenario_runs_and_prints_the_summary() {
    let o = servesim(&["run", repo().join("examples/scenario.json").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out: Value = serde_json::from_slice(&o.stdout).expect("stdout is one JSON object");
    let s = &out["summary"];
    assert_eq!(s["completed_requests"], 500, "{s}");
    assert!(s["mean_ttft_ms"].as_f64().is_some_and(|t| t > 0.0), "{s}");
    assert_eq!(out["per_request"].as_array().map(Vec::len), Some(500));
    assert!(out.get("not_completed").is_none(), "every request completed");
}

/// A sweep's lines are its points in order, each summary byte for byte what `servesim run`
/// prints for the merged scenario; shards split the points without loss; `--jobs` changes
/// nothing but the wall time; a replay case sweeps too.
#[test]
fn sweep_rows_equal_single_runs_and_shards_add_up() {
    let d = scratch("sweep");
    let base = json!({"engine": {"block_size": 16, "num_gpu_blocks": 1500},
        "workload": {"type": "synthetic", "num_requests": 120, "rate_rps": 20,
                     "input_tokens": {"mean": 800, "stddev": 100}, "output_tokens": {"mean": 60, "stddev": 10}}});
    let sweep = json!({"version": 1, "base": base,
        "vary": [{"field": "cluster.num_workers", "values": [1, 2]}, {"field": "workload.rate_rps", "from": 10, "to": 30, "step": 10}],
        "slo": {"p99_ttft_ms": 500}});
    let p = d.join("sweep.json");
    std::fs::write(&p, sweep.to_string()).unwrap();
    let lines = |args: &[&str]| -> Vec<Value> {
        let o = servesim(args);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        String::from_utf8(o.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    };
    let all = lines(&["sweep", p.to_str().unwrap(), "--jobs", "2"]);
    assert_eq!(all.iter().map(|l| l["point"].as_u64().unwrap()).collect::<Vec<_>>(), vec![0, 1, 2, 3, 4, 5]);
    assert_eq!(all, lines(&["sweep", p.to_str().unwrap()]), "--jobs changes nothing but the wall time");
    for line in &all {
        let mut scenario = base.clone();
        scenario["cluster"] = json!({"num_workers": line["set"]["cluster.num_workers"]});
        scenario["workload"]["rate_rps"] = line["set"]["workload.rate_rps"].clone();
        scenario["slo"] = json!({"p99_ttft_ms": 500});
        let s = d.join(format!("point{}.json", line["point"]));
        std::fs::write(&s, scenario.to_string()).unwrap();
        let o = servesim(&["run", s.to_str().unwrap()]);
        let run: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(line["summary"].to_string(), run["summary"].to_string(), "point {}", line["point"]);
        let p99 = run["summary"]["p99_ttft_ms"].as_f64().unwrap();
        assert_eq!(line["meets_slo"], json!(p99 <= 500.0 && run["summary"]["completed_requests"] == 120));
    }
    let mut sharded: Vec<Value> = (0..3).flat_map(|i| lines(&["sweep", p.to_str().unwrap(), "--shard", &format!("{i}/3")])).collect();
    sharded.sort_by_key(|l| l["point"].as_u64());
    assert_eq!(sharded, all);
    expect_error(&servesim(&["sweep", p.to_str().unwrap(), "--shard", "3/3"]), &["--shard 3/3"]);
    // A replay case sweeps by paths into the case.
    let case = json!({"version": 1, "case": {"trace": repo().join("tests/conformance/traces/light.jsonl"), "replay": {"trace_block_size": 512}},
        "vary": [{"field": "replay.num_workers", "values": [1, 2]}]});
    std::fs::write(d.join("case-sweep.json"), case.to_string()).unwrap();
    let rows = lines(&["sweep", d.join("case-sweep.json").to_str().unwrap()]);
    assert_eq!(rows.len(), 2);
    assert!(rows[1]["summary"]["mean_ttft_ms"].as_f64() < rows[0]["summary"]["mean_ttft_ms"].as_f64(), "two workers wait less");
}

/// `--events` writes the stream beside an unchanged answer; an unwritable path is named.
#[test]
fn events_are_written_and_change_nothing() {
    let d = scratch("events");
    let case = repo().join("tests/conformance/cases/vllm-light.json");
    let case = case.to_str().unwrap();
    let out = d.join("events.jsonl");
    let plain = servesim(&["replay", case]);
    let with = servesim(&["replay", case, "--events", out.to_str().unwrap()]);
    assert_eq!(with.status.code(), Some(0), "{}", stderr(&with));
    assert_eq!(plain.stdout, with.stdout, "recording events changed the answer");
    let text = std::fs::read_to_string(&out).unwrap();
    let events: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let finished = events.iter().filter(|e| e["kind"] == "finished").count();
    assert_eq!(finished, 300, "one end per request");
    assert!(events.iter().all(|e| e["t_ms"].is_f64()), "every line has its time");
    let bad = d.join("no-such-dir/events.jsonl");
    expect_error(&servesim(&["replay", case, "--events", bad.to_str().unwrap()]), &["no-such-dir/events.jsonl"]);
}

/// The harness examples of docs/harness.md show what it says they show.
#[test]
fn the_harness_examples_show_their_feature() {
    let run = |name: &str| -> Value {
        let o = servesim(&["run", repo().join("examples").join(name).to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(0), "{name}: {}", stderr(&o));
        serde_json::from_slice(&o.stdout).unwrap()
    };
    // Closed loop with sessions: later turns reuse their history; the SLO's goodput is counted.
    let s = &run("closed-loop-sessions.json")["summary"];
    assert_eq!(s["completed_requests"], 400, "{s}");
    assert!(s["prefix_cache_reused_ratio"].as_f64().unwrap() > 0.3, "{s}");
    assert!(s["goodput_completed_requests"].as_u64().unwrap() < 400 && s["meets_slo"].is_boolean(), "{s}");
    // The load planner grows the pool, then shrinks it.
    let p = &run("planner-load.json")["planner"];
    let events = p["scaling_events"].as_array().unwrap();
    assert!(
        events.iter().any(|e| e["reason"] == "scale_up") && events.iter().any(|e| e["to_count"].as_u64() < e["from_count"].as_u64()),
        "{p}"
    );
    // The script starts a worker in each pool at 10 s; it is ready after startup_time.
    let p = &run("scripted-scaling.json")["planner"];
    let causes: Vec<&str> = p["lifecycle"].as_array().unwrap().iter().map(|l| l["cause"].as_str().unwrap()).collect();
    assert!(causes.contains(&"manual_scale") && causes.contains(&"worker_ready_event"), "{causes:?}");
    // Host offload: prompts come back from the host instead of being recomputed.
    let with = run("offload.json");
    let mut scenario: Value = serde_json::from_str(&std::fs::read_to_string(repo().join("examples/offload.json")).unwrap()).unwrap();
    scenario["engine"].as_object_mut().unwrap().remove("native_host_offload");
    let d = scratch("offload-example");
    let plain = d.join("plain.json");
    std::fs::write(&plain, scenario.to_string()).unwrap();
    let o = servesim(&["run", plain.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let without: Value = serde_json::from_slice(&o.stdout).unwrap();
    let reuse = |v: &Value| v["summary"]["prefix_cache_reused_ratio"].as_f64().unwrap();
    assert!(reuse(&with) > reuse(&without) + 0.2, "with {} without {}", reuse(&with), reuse(&without));
}

/// `servesim predict` and `servesim recommend` on the shipped DynoSim files, run from the
/// directory their paths are relative to (the Dynamo repository's root, laid out under
/// tests/dynosim-unified-cli).
#[test]
fn predict_and_recommend_run_the_shipped_dynosim_files() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/dynosim-unified-cli");
    let dir = "components/src/dynamo/replay/tests/e2e/configs/unified_cli";
    let run = |args: &[&str]| Command::new(BIN).args(args).current_dir(&root).output().unwrap();
    let o = run(&["predict", &format!("{dir}/predict/dynamo/02-synthetic-kv-router.yaml")]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!((v["prediction"]["gpus"].clone(), v["summary"]["completed_requests"].clone()), (json!(2), json!(6)));
    assert!(v["config"].is_object() && v["per_request"].as_array().unwrap().len() == 6);
    let o = run(&[
        "predict",
        &format!("{dir}/predict/dynamo/01-synthetic-no-adapters.yaml"),
        "--format",
        "table",
        "--set",
        "traffic.stop.requests=10",
    ]);
    let table = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(table.lines().any(|l| l.starts_with("requests") && l.trim_end().ends_with(" 10")), "{table}");
    let o = run(&["predict", &format!("{dir}/predict/dynamo/08-synthetic-throughput-planner.yaml")]);
    expect_error(&o, &["08-synthetic-throughput-planner.yaml:22: planner.target: not simulated by servesim"]);

    let out = scratch("recommend");
    let out_s = out.to_str().unwrap();
    let o = run(&[
        "recommend",
        &format!("{dir}/recommend/dynamo/02-router-ranges-throughput.yaml"),
        "--output-dir",
        out_s,
        "--overwrite",
        "--jobs",
        "2",
        "--format",
        "json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rows: Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = rows.as_array().unwrap();
    assert!(!rows.is_empty());
    let ledger: Value = serde_json::from_str(&std::fs::read_to_string(out.join("recommendation.json")).unwrap()).unwrap();
    assert_eq!(ledger["candidates"].as_array().unwrap().len(), 4);
    let csv = std::fs::read_to_string(out.join("recommendation.csv")).unwrap();
    assert_eq!(csv.lines().count(), 5, "{csv}");
    // Each recommendation predicts again as a file of its own.
    let first = out.join("recommendations/0001.yaml");
    let o = run(&["predict", first.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let again: Value = serde_json::from_slice(&o.stdout).unwrap();
    let score = rows[0]["score"].as_f64().unwrap();
    assert!((again["summary"]["output_throughput_tok_s"].as_f64().unwrap() - score).abs() < 1e-9 * score);
    // Not over an earlier answer without --overwrite; a shard of a random search.
    let o = run(&["recommend", &format!("{dir}/recommend/dynamo/02-router-ranges-throughput.yaml"), "--output-dir", out_s]);
    expect_error(&o, &["not empty", "--overwrite"]);
    let o = run(&[
        "recommend",
        &format!("{dir}/recommend/dynamo/02-router-ranges-throughput.yaml"),
        "--output-dir",
        out_s,
        "--overwrite",
        "--shard",
        "1/2",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let ledger: Value = serde_json::from_str(&std::fs::read_to_string(out.join("recommendation.json")).unwrap()).unwrap();
    let ids: Vec<u64> = ledger["candidates"].as_array().unwrap().iter().map(|c| c["id"].as_u64().unwrap()).collect();
    assert_eq!(ids, vec![1, 3]);
}
