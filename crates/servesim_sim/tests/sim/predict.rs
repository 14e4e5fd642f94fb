//! DynoSim's configuration files: every `predict` file of the 1.6.1 release runs (against the
//! reference's figures for the same load, `tests/dynosim-unified-cli/reference.py`) or is
//! refused by field name; `recommend` runs on the shipped files; `--set`, `range_ratio`,
//! `evaluation.slo` and errors naming file, line and field.

use serde_json::{Value, json};
use servesim_sim::predict::{self, Outcome, PathFiles, Search, Target};
use servesim_sim::{BuildOptions, Input, build};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/dynosim-unified-cli")
}

const PREFIX: &str = "components/src/dynamo/replay/tests/e2e/configs/unified_cli";

fn files_for(path: &Path) -> PathFiles {
    PathFiles { bases: vec![path.parent().unwrap().to_path_buf(), root()], kernels: servesim_sim::default_kernel_dir() }
}

fn shipped(kind: &str) -> Vec<PathBuf> {
    let dir = root().join(PREFIX).join(kind).join("dynamo");
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    v.sort();
    v
}

fn predict_file(path: &Path, sets: &[&str]) -> Result<(predict::Mapped, servesim_sim::RunReport), servesim_sim::SimError> {
    let text = std::fs::read_to_string(path).unwrap();
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let name = path.file_name().unwrap().to_string_lossy().to_string();
    let mut files = files_for(path);
    let m = predict::predict(&text, &name, &sets, &mut files)?;
    let report = build(&Input::Scenario(m.scenario.clone()), &mut files, &BuildOptions { timeseries: false, ..Default::default() })?.run();
    Ok((m, report))
}

/// Files servesim refuses, and the field each refusal names (docs/predict.md lists them).
const REFUSED: &[(&str, &str)] = &[("08-synthetic-throughput-planner.yaml", "planner.target: not simulated by servesim")];

/// Files whose reference runs differ from run to run: the reference's KV router picks among
/// equal-cost workers at random and samples with its temperature (0.2 in 06), with or without
/// the planner. `reference.py` stores the spread of each figure over its runs; servesim's
/// (deterministic, seeded) run must lie inside it, and its counts must be equal.
const STOCHASTIC: &[&str] = &["06-synthetic-disagg-router-planner.yaml"];

/// The completed requests the reference's own e2e test expects of the trace files.
const EXPECTED_COMPLETED: &[(&str, u64)] = &[
    ("05-trace-standard-round-robin.yaml", 2),
    ("09-trace-mooncake-speedup.yaml", 2),
    ("10-trace-mooncake-delta-concurrency.yaml", 2),
    ("11-trace-agentic-mooncake.yaml", 3),
    ("12-trace-applied-compute-agentic.yaml", 3),
    ("13-trace-dynamo-agentic.yaml", 4),
];

#[test]
fn every_shipped_predict_file_runs_as_the_reference_does_or_is_refused_by_field() {
    let figures: Value = serde_json::from_str(&std::fs::read_to_string(root().join("reference-figures.json")).unwrap()).unwrap();
    let files = shipped("predict");
    assert_eq!(files.len(), 13);
    let (mut ran, mut refused) = (0, 0);
    for path in files {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if let Some((_, field)) = REFUSED.iter().find(|(f, _)| *f == name) {
            let e = predict_file(&path, &[]).err().unwrap_or_else(|| panic!("{name} ran; expected a refusal"));
            assert!(e.0.starts_with(&name) && e.0.contains(field), "{name}: {e}");
            refused += 1;
            continue;
        }
        let (_, report) = predict_file(&path, &[]).unwrap_or_else(|e| panic!("{name}: {e}"));
        let s = report.summary();
        if let Some((_, n)) = EXPECTED_COMPLETED.iter().find(|(f, _)| *f == name) {
            assert_eq!(s["completed_requests"], json!(n), "{name}");
        }
        let theirs = &figures["files"][&name];
        assert!(theirs.is_object(), "{name}: no reference figures (run reference.py --write)");
        let stochastic = STOCHASTIC.contains(&name.as_str());
        if stochastic {
            let spread = theirs["spread"].as_object().unwrap_or_else(|| panic!("{name}: no spread stored (reference.py --write)"));
            assert!(theirs["runs"].as_u64().unwrap() >= 10, "{name}");
            for (k, range) in spread {
                let (a, lo, hi) = (s[k].as_f64().unwrap_or(f64::NAN), range[0].as_f64().unwrap(), range[1].as_f64().unwrap());
                let tol = |x: f64| 1e-3 * x.abs().max(1.0);
                assert!(a >= lo - tol(lo) && a <= hi + tol(hi), "{name}: {k} {a} outside the reference's runs [{lo}, {hi}]");
            }
        }
        for (k, v) in theirs["summary"].as_object().unwrap() {
            if stochastic && !["num_requests", "completed_requests", "total_input_tokens", "total_output_tokens"].contains(&k.as_str()) {
                continue;
            }
            let (a, b) = (s[k].as_f64().unwrap_or(f64::NAN), v.as_f64().unwrap());
            assert!((a - b).abs() <= 1e-3 * b.abs().max(1.0), "{name}: {k} {a} vs the reference's {b}");
        }
        if !stochastic {
            // Each request's first-token and end times, as a multiset (rows of one instant
            // may come in either order).
            assert_rows_match(&name, &report, theirs);
        }
        ran += 1;
    }
    println!("predict files: {ran} run, {refused} refused");
    assert_eq!((ran, refused), (12, 1));
}

/// servesim's variants of the shipped files (`tests/dynosim-unified-cli/variants/`), where the
/// measured prefill-load model decides routes: each request as the reference's, once its
/// figures are stored (`reference.py --write` with the AIS oracle).
#[test]
fn the_variants_run_as_the_reference_does() {
    let figures: Value = serde_json::from_str(&std::fs::read_to_string(root().join("reference-figures.json")).unwrap()).unwrap();
    let dir = root().join("variants");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    paths.sort();
    let mut checked = 0;
    for path in paths {
        let name = format!("variants/{}", path.file_name().unwrap().to_string_lossy());
        let text = std::fs::read_to_string(&path).unwrap();
        let mut files = PathFiles { bases: vec![root()], kernels: servesim_sim::default_kernel_dir() };
        let m = predict::predict(&text, &name, &[], &mut files).unwrap_or_else(|e| panic!("{e}"));
        let report =
            build(&Input::Scenario(m.scenario), &mut files, &BuildOptions { timeseries: false, ..Default::default() }).unwrap().run();
        let s = report.summary();
        assert_eq!(s["completed_requests"], s["num_requests"], "{name}");
        let theirs = &figures["files"][&name];
        if !theirs.is_object() {
            continue;
        }
        assert_rows_match(&name, &report, theirs);
        checked += 1;
    }
    println!("variants checked against the reference: {checked}");
}

/// Each request's first-token and end times against the reference's stored rows, as a
/// multiset (rows of one instant may come in either order), from the first arrival, within
/// 1e-2 ms.
fn assert_rows_match(name: &str, report: &servesim_sim::RunReport, theirs: &Value) {
    let first = report.collector.records.iter().map(|r| r.arrival_ms).fold(f64::INFINITY, f64::min);
    let shift = (first * 1e4).round() as i64;
    let mut ours: Vec<(i64, i64)> = report
        .collector
        .records
        .iter()
        .filter_map(|r| Some(((r.first_token_ms? * 1e4).round() as i64 - shift, (r.end_ms? * 1e4).round() as i64 - shift)))
        .collect();
    let mut ref_rows: Vec<(i64, i64)> = theirs["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| !r[1].is_null())
        .map(|r| ((r[1].as_f64().unwrap() * 1e4).round() as i64, (r[2].as_f64().unwrap() * 1e4).round() as i64))
        .collect();
    ours.sort();
    ref_rows.sort();
    assert_eq!(ours.len(), ref_rows.len(), "{name}");
    for (a, b) in ours.iter().zip(&ref_rows) {
        assert!((a.0 - b.0).abs() <= 100 && (a.1 - b.1).abs() <= 100, "{name}: {a:?} vs the reference's {b:?} (1e-4 ms)");
    }
}

/// Runs a recommend file's search to its end on one thread, as the CLI does.
fn recommend(path: &Path, sets: &[&str]) -> Search {
    let text = std::fs::read_to_string(path).unwrap();
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let name = path.file_name().unwrap().to_string_lossy().to_string();
    let rec = predict::recommend(&text, &name, &sets).unwrap_or_else(|e| panic!("{e}"));
    let mut search = Search::new(rec);
    loop {
        let batch = search.next_batch(3);
        if batch.is_empty() {
            break;
        }
        for c in batch {
            let mut files = files_for(path);
            let outcome = match predict::map_candidate(&search, &c, &mut files) {
                Err(o) => o,
                Ok(m) => search.precheck(m.gpus).unwrap_or_else(|| predict::run_candidate(&m, &mut files, 512, &mut || Ok(())).unwrap()),
            };
            search.tell(c.id, outcome);
        }
    }
    assert!(search.is_done(), "{}: {} proposed", path.display(), search.trials.len());
    search
}

#[test]
fn recommend_runs_the_shipped_files() {
    let files = shipped("recommend");
    assert_eq!(files.len(), 6);
    // 01: one point, one trial, the file's own configuration.
    let s = recommend(&files[0], &[]);
    let ranking = s.ranking();
    assert_eq!(ranking.len(), 1);
    assert_eq!(ranking[0].candidate.doc.at("engine.workers.aggregated.parallelism.replicas").unwrap().to_json(), json!(1));
    assert!(ranking[0].score.unwrap() > 0.0);
    // 02: router policy, credit and load scale on continuous ranges (one log): 4 random trials.
    let s = recommend(&files[1], &[]);
    assert_eq!(s.trials.iter().flatten().count(), 4);
    let ledger = s.ledger();
    assert_eq!(ledger["algorithm"], "random");
    for c in ledger["candidates"].as_array().unwrap() {
        let set = &c["set"];
        if set["router.policy"] == "round_robin" {
            // A round-robin candidate has no KV-router knobs.
            assert!(set.get("router.overlap_score_credit").is_none(), "{set}");
            continue;
        }
        let credit = set["router.overlap_score_credit"].as_f64().unwrap();
        let scale = set["router.prefill_load_scale"].as_f64().unwrap();
        assert!((0.1..=1.0).contains(&credit) && (0.25..=32.0).contains(&scale), "{set}");
    }
    let best = s.ranking()[0];
    let scores: Vec<f64> = s.ranking().iter().map(|t| t.score.unwrap()).collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");
    // The recommendation is a concrete predict file: no domains left, and it predicts the
    // same figures again.
    let text = predict::yaml::emit(&best.candidate.doc.to_json());
    assert!(!text.contains("choices") && !text.contains("range:"), "{text}");
    let mut dir = files_for(&files[1]);
    let m = predict::predict(&text, "0001.yaml", &[], &mut dir).unwrap();
    let again = build(&Input::Scenario(m.scenario), &mut dir, &BuildOptions { timeseries: false, ..Default::default() }).unwrap().run();
    let Outcome::Ran { summary, .. } = &best.outcome else { panic!() };
    assert_eq!(again.summary()["output_throughput_tok_s"], summary["output_throughput_tok_s"]);
    // 03: with and without a planner; under goodput the planner's target is `sla`, which
    // servesim's planner refuses: that candidate is infeasible, by name, in the ledger.
    let s = recommend(&files[2], &[]);
    let ledger = s.ledger();
    let statuses: Vec<&str> = ledger["candidates"].as_array().unwrap().iter().map(|c| c["status"].as_str().unwrap()).collect();
    assert!(statuses.contains(&"ok") && statuses.contains(&"infeasible"), "{ledger}");
    assert!(ledger.to_string().contains("planner.target: not simulated by servesim"), "{ledger}");
    // 05 and 06 route with the AIS prefill-load model: their candidates run (06's goodput
    // target gives its planner the `sla` target, which servesim refuses).
    let s = recommend(&files[4], &[]);
    assert!(!s.ranking().is_empty(), "{}", s.ledger());
    let s = recommend(&files[5], &[]);
    assert!(!s.ledger().to_string().contains("router.prefill_load_model"), "{}", s.ledger());
}

/// A small capacity question: the fewest GPUs meeting a p99 TTFT bound, the space small
/// enough to run whole, the answer the cheapest a brute-force run of every point finds.
#[test]
fn the_gpus_target_finds_the_cheapest_feasible_configuration_and_skips_dearer_ones() {
    let path = root().join(PREFIX).join("recommend/dynamo/01-no-adapters-throughput.yaml");
    let sets = [
        "optimization={target: gpus, constraints: {max_candidate_gpus: 8}}",
        "optimizer={algorithm: random, max_trials: 50, seed: 3}",
        "traffic={source: {type: synthetic, input_tokens: 512, output_tokens: 16}, load: {type: constant_rate, requests_per_second: 400}, stop: {requests: 200}}",
        "engine.workers.aggregated.parallelism={replicas: {choices: [1, 2, 3, 4, 6, 8]}, tensor: {choices: [1, 2]}}",
        "engine.workers.aggregated.timing={type: fixed, prefill_ms: 6, decode_ms: 1}",
        "evaluation={slo: {p99_ttft_ms: 30}}",
    ];
    let s = recommend(&path, &sets);
    let best = s.ranking()[0];
    let Outcome::Ran { gpus, .. } = best.outcome else { panic!() };
    // Brute force over the same points: the cheapest feasible one.
    let mut cheapest = u32::MAX;
    for t in s.trials.iter().flatten() {
        if let Outcome::Ran { gpus, missed: None, .. } = t.outcome {
            cheapest = cheapest.min(gpus);
        }
    }
    assert_eq!(gpus, cheapest);
    let ledger = s.ledger().to_string();
    assert!(ledger.contains("\"skipped\"") || ledger.contains("\"stopped\""), "no candidate was cut short: {ledger}");
    assert_eq!(s.rec.settings.target, Target::Gpus);
    println!("cheapest: {gpus} GPUs ({})", best.candidate.set.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" "));
}

#[test]
fn set_overrides_range_ratio_and_the_objective() {
    let path = root().join(PREFIX).join("predict/dynamo/01-synthetic-no-adapters.yaml");
    let (m, r) = predict_file(&path, &["traffic.load.concurrency=4", "traffic.stop.requests=40"]).unwrap();
    assert_eq!(m.scenario_json["workload"]["concurrency"], json!(4));
    assert_eq!(r.summary()["num_requests"], json!(40));
    let (m, r) =
        predict_file(&path, &["traffic.source.range_ratio=0.5", "traffic.source.input_tokens=1000", "traffic.stop.requests=400"]).unwrap();
    assert_eq!(m.scenario_json["workload"]["range_ratio"], json!(0.5));
    let isl: Vec<u32> = r.collector.records.iter().map(|x| x.input_length).collect();
    assert!(isl.iter().all(|&l| (500..=1000).contains(&l)) && isl.iter().min() < Some(&600) && isl.iter().max() > Some(&900), "{isl:?}");
    // evaluation.slo: the scenario's slo keys; a run that misses it says why.
    let (m, r) = predict_file(&path, &["evaluation={slo: {p99_ttft_ms: 0.5}, sla: {ttft_ms: 10, itl_ms: 5}}"]).unwrap();
    assert_eq!(m.scenario_json["slo"], json!({"ttft_ms": 10.0, "itl_ms": 5.0, "p99_ttft_ms": 0.5}));
    let why = predict::search::missed(m.objective.as_ref().unwrap(), &r.summary()).unwrap();
    assert!(why.starts_with("p99_ttft_ms 1.0 > 0.5"), "{why}");
    assert!(r.summary()["goodput_completed_requests"].is_number());
    // The planner's predictor knobs pass to Dynamo's planner configuration by name.
    let path = root().join(PREFIX).join("predict/dynamo/04-synthetic-router-planner.yaml");
    let (m, _) =
        predict_file(&path, &["planner.load_predictor=kalman", "planner.load_predictor_log1p=true", "planner.kalman_r=5.0"]).unwrap();
    assert_eq!(
        (m.scenario_json["planner"]["load_predictor"].clone(), m.scenario_json["planner"]["load_predictor_log1p"].clone()),
        (json!("kalman"), json!(true))
    );
}

#[test]
fn errors_name_the_file_the_line_and_the_field() {
    let path = root().join(PREFIX).join("predict/dynamo/01-synthetic-no-adapters.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut files = files_for(&path);
    let err = |t: &str, sets: &[&str]| {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        predict::predict(t, "f.yaml", &sets, &mut files_for(&path)).err().map(|e| e.0).unwrap_or_default()
    };
    assert_eq!(
        err(&text.replace("concurrency: 2}", "concurrency: 2, rate: 3}"), &[]),
        "f.yaml:6: traffic.load.rate: unknown field (known here: type, concurrency, requests_per_second, sessions_per_second, seed, fraction, speedup)"
    );
    assert_eq!(
        err(&text.replace("max_sequences: 256", "max_sequences: -1"), &[]),
        "f.yaml:17: engine.workers.aggregated.scheduler.max_sequences: must be greater than 0, got -1"
    );
    assert_eq!(
        err(&text.replace("moe_expert: 1", "moe_expert: 8"), &[]),
        "f.yaml:16: engine.workers.aggregated.parallelism.moe_expert: moe_tensor × moe_expert (1 × 8) must equal tensor × attention_data (1 × 1)"
    );
    assert!(err(&text, &["traffic.load.concurency=3"]).starts_with("f.yaml: traffic.load.concurency: unknown field"));
    assert!(err(&text, &["engine.workers.aggregated.parallelism.replicas={choices: [1, 2]}"]).contains("expected an integer"));
    assert!(err("traffic: [1\n", &[]).starts_with("f.yaml:"), "a YAML error names the line");
    assert!(err(&format!("{text}optimizer: {{max_trials: 3}}\n"), &[]).contains("optimizer: belongs in a recommend file"));
    let e = predict::recommend(&text.replace("model: ", "model: {choices: [a, b]} #"), "r.yaml", &[]).unwrap_err();
    assert!(e.0.starts_with("r.yaml:"), "{e}");
    let _ = &mut files;
}

/// A predict file's default timing is the measured-kernel (AIS) model, with the precision
/// its `timing` sets in AIConfigurator's names (no `type`).
#[test]
fn default_timing_maps_to_the_measured_kernels() {
    let path = root().join(PREFIX).join("predict/dynamo/01-synthetic-no-adapters.yaml");
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("timing: {type: fixed, prefill_ms: 1, decode_ms: 1}", "timing: {gemm_quant_mode: fp8_block, kvcache_quant_mode: fp8}");
    let doc = predict::parse(&text, "f.yaml").unwrap();
    let s = predict::mapping::scenario_json(&doc, "f.yaml", &mut files_for(&path)).unwrap().scenario_json;
    let t = &s["engine"]["timing_model"];
    assert_eq!(
        (t["type"].clone(), t["system"].clone(), t["backend"].clone(), t["tp"].clone(), t["pp"].clone()),
        (json!("ais"), json!("h200_sxm"), json!("vllm"), json!(1), json!(1))
    );
    assert_eq!((t["gemm_quant_mode"].clone(), t["kvcache_quant_mode"].clone()), (json!("fp8_block"), json!("fp8")));
    assert_eq!(t["model"]["num_hidden_layers"], json!(22), "a model directory gives its config.json's fields");
    let err = |timing: &str| {
        let t = text.replace("timing: {gemm_quant_mode: fp8_block, kvcache_quant_mode: fp8}", timing);
        let doc = predict::parse(&t, "f.yaml").unwrap();
        predict::mapping::scenario_json(&doc, "f.yaml", &mut files_for(&path)).err().map(|e| e.0).unwrap_or_default()
    };
    assert!(
        err("timing: {gemm_quant_mode: fp9}")
            .starts_with("f.yaml:19: engine.workers.aggregated.timing.gemm_quant_mode: unknown mode `fp9`"),
        "{}",
        err("timing: {gemm_quant_mode: fp9}")
    );
    assert!(err("timing: {type: fixed, prefill_ms: 1, decode_ms: 1, kvcache_quant_mode: fp8}").contains("fixed` timing has none"));
    // The reference's reading: `auto` is the model's own precision, `int4` is `int4_wo`.
    let doc = predict::parse(&text.replace("fp8_block, kvcache_quant_mode: fp8", "int4, kvcache_quant_mode: auto"), "f.yaml").unwrap();
    let s = predict::mapping::scenario_json(&doc, "f.yaml", &mut files_for(&path)).unwrap().scenario_json;
    assert_eq!(s["engine"]["timing_model"]["gemm_quant_mode"], json!("int4_wo"));
    assert!(s["engine"]["timing_model"].get("kvcache_quant_mode").is_none());
}

/// `timing: {type: roofline}` (servesim's): the roofline on the model the file names and its
/// hardware, TP from the parallelism, and the KV pool the roofline itself derives — the
/// scenario the page's search starts from (Llama 3.1 70B on H100s at TP 4: 7,004 blocks).
#[test]
fn roofline_timing_maps_to_the_scenario_roofline() {
    let file = |timing: &str| {
        format!(
            "traffic: {{source: {{type: synthetic, input_tokens: 2000, output_tokens: 300}}, load: {{type: poisson, requests_per_second: 10}}, stop: {{requests: 50}}}}\n\
             engine: {{model: meta-llama/Llama-3.1-70B-Instruct, hardware: h100_sxm, workers: {{aggregated: {{parallelism: {{replicas: 3, tensor: 4}}, timing: {timing}}}}}}}\n"
        )
    };
    let mut no_files = PathFiles { bases: vec![root()], kernels: servesim_sim::default_kernel_dir() };
    let m = predict::predict(&file("{type: roofline}"), "f.yaml", &[], &mut no_files).unwrap();
    let t = &m.scenario_json["engine"]["timing_model"];
    assert_eq!(t, &json!({"type": "roofline", "model": "llama-3.1-70b", "gpu": "h100", "tp": 4}));
    assert_eq!(m.gpus, 12);
    // The page's roofline scenario, its pool left to the roofline: the same blocks and run.
    let page = json!({"version": 1, "engine": {"timing_model": {"type": "roofline", "model": "llama-3.1-70b", "gpu": "h100", "tp": 4}}});
    let page = servesim_sim::Scenario::from_json_str(&page.to_string()).unwrap();
    let derived = page.config().unwrap().launch.engine.num_gpu_blocks();
    assert_eq!(m.scenario_json["engine"]["num_gpu_blocks"], json!(derived));
    let r = build(&Input::Scenario(m.scenario.clone()), &mut no_files, &BuildOptions::default()).unwrap().run();
    assert_eq!(r.summary()["completed_requests"], json!(50));
    assert_eq!(r.summary()["total_gpus"], json!(12));
    // Its efficiencies by name; a roofline figure under another timing is an error naming it.
    let m = predict::predict(&file("{type: roofline, overhead_ms: 3}"), "f.yaml", &[], &mut no_files).unwrap();
    assert_eq!(m.scenario_json["engine"]["timing_model"]["overhead_ms"], json!(3.0));
    let e = predict::predict(&file("{type: polynomial, overhead_ms: 3}"), "f.yaml", &[], &mut no_files).unwrap_err();
    assert!(e.0.contains("overhead_ms: is a roofline figure"), "{}", e.0);
    let e = predict::predict(&file("{type: roofline}").replace("h100_sxm", "tpu_v5"), "f.yaml", &[], &mut no_files).unwrap_err();
    assert!(e.0.contains("roofline: servesim has no figures for hardware `tpu_v5`"), "{}", e.0);
}

/// Measured timing with `capacity.type: default` sizes the pool with AIConfigurator's memory
/// model, and the prediction shows the arithmetic.
#[test]
fn default_timing_runs_with_the_measured_kernels() {
    let path = root().join(PREFIX).join("predict/dynamo/01-synthetic-no-adapters.yaml");
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace(
            "model: components/src/dynamo/replay/tests/e2e/configs/unified_cli/fixtures/tiny-model",
            "model: meta-llama/Meta-Llama-3.1-8B",
        )
        .replace("timing: {type: fixed, prefill_ms: 1, decode_ms: 1}", "timing: {type: default}");
    let m = predict::predict(&text, "f.yaml", &[], &mut files_for(&path)).unwrap();
    let r = build(&Input::Scenario(m.scenario), &mut files_for(&path), &BuildOptions::default()).unwrap().run();
    assert_eq!(r.summary()["completed_requests"], json!(6));
    assert!(r.summary()["mean_ttft_ms"].as_f64().unwrap() > 1.0);
    // Llama 3.1 8B on an H200 (vLLM, 0.9 of its memory): tens of thousands of 64-token blocks.
    let text = text.replace("capacity: {type: fixed, blocks: 256}", "capacity: {type: default}");
    let m = predict::predict(&text, "f.yaml", &[], &mut files_for(&path)).unwrap();
    let pool = &m.derived["aggregated.kv_pool"];
    let blocks = m.derived["aggregated.num_gpu_blocks"].as_u64().unwrap();
    assert_eq!(blocks, pool["kv_tokens"].as_u64().unwrap() / 64);
    assert!((10_000..40_000).contains(&blocks), "{blocks}");
    assert_eq!(pool["fraction"], json!(0.9));
}

/// A scenario written as a DynoSim file and read back is the same scenario.
#[test]
fn scenarios_round_trip_through_dynosim_yaml() {
    for path in shipped("predict") {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let Ok((m, _)) = predict_file(&path, &[]) else { continue };
        if m.scenario.planner.is_some() {
            continue;
        }
        let back = predict::from_scenario(&m.scenario, "tiny", "h200_sxm").unwrap_or_else(|e| panic!("{name}: {e}"));
        let text = predict::yaml::emit(&back);
        let again = predict::predict(&text, "back.yaml", &[], &mut files_for(&path)).unwrap_or_else(|e| panic!("{name}: {e}\n{text}"));
        let (mut a, mut b) = (m.scenario.clone(), again.scenario.clone());
        // The model's context length is the file's, not the name's; so is the model the
        // router's estimate times.
        a.engine.max_model_len = None;
        b.engine.max_model_len = None;
        for s in [&mut a, &mut b] {
            if let Some(c) = &mut s.cluster.ais_perf_config {
                c.remove("model");
            }
        }
        assert_eq!(a, b, "{name}\n{text}");
    }
    let e =
        predict::from_scenario(&servesim_sim::Scenario::from_json_str(r#"{"engine": {"kv_manager": "kvbm"}}"#).unwrap(), "m", "h200_sxm");
    let _ = e;
}
