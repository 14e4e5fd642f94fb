//! `servesim`: replay Dynamo cases, run servesim scenarios, benchmark.

use clap::{Parser, Subcommand};
use servesim_sim::replay::Case;
use servesim_sim::report::events::JsonLines;
use servesim_sim::scenario::Scenario;
use servesim_sim::sweep::Sweep;
use servesim_sim::{BuildOptions, DirFiles, Input, RunReport, SimError, build};
use std::cell::RefCell;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::rc::Rc;

mod predict;
mod recommend;

#[derive(Parser)]
#[command(name = "servesim", version, about = "Simulates an LLM serving cluster (Dynamo mocker semantics) on a virtual clock")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Replays a Dynamo replay case ({"trace", "replay": {run_trace_replay arguments}}) and
    /// prints {"summary", "per_request"} as JSON.
    Replay {
        case: PathBuf,
        /// Also write the time series (per rank and cluster, in windows) to this file.
        #[arg(long, value_name = "OUT.json")]
        timeseries: Option<PathBuf>,
        /// Also write every event of the run (KV events, request lifecycle, passes), one JSON
        /// object a line, in time order.
        #[arg(long, value_name = "OUT.jsonl")]
        events: Option<PathBuf>,
    },
    /// Replays a case several times and reports wall time, simulated requests per second and
    /// peak memory (a benchmark: compare runs side by side, not against remembered numbers).
    Bench {
        case: PathBuf,
        #[arg(long, default_value_t = 3)]
        runs: u32,
    },
    /// Runs every point of a sweep (a base scenario or replay case, fields to vary, an
    /// optional SLO) and prints one JSON line per point, in point order:
    /// {"point", "set", "summary", "meets_slo"}.
    Sweep {
        sweep: PathBuf,
        /// Points run at once (threads).
        #[arg(long, default_value_t = 1)]
        jobs: usize,
        /// Run only every N-th point from I (`I/N`, I from 0): N machines split a sweep.
        #[arg(long, value_name = "I/N")]
        shard: Option<String>,
    },
    /// Runs a DynoSim predict file (`aisimulate predict` YAML) as a servesim scenario and
    /// prints the report `run` prints, with `prediction` (GPUs, derived values) first.
    Predict {
        config: PathBuf,
        /// Overrides a field before validation (`traffic.load.concurrency=8`; the value is YAML).
        #[arg(long = "set", value_name = "PATH=VALUE")]
        set: Vec<String>,
        /// `json` (the report) or `table` (its headline figures).
        #[arg(long, default_value = "json", value_parser = ["json", "table"])]
        format: String,
        /// Print the scenario the file maps to instead of running it.
        #[arg(long)]
        scenario: bool,
    },
    /// Searches a DynoSim recommend file's domains under its constraints and target; writes
    /// recommendations/0001.yaml... (concrete predict files, best first), recommendation.json
    /// and recommendation.csv (every candidate) to --output-dir, and prints the ranking.
    Recommend {
        config: PathBuf,
        #[arg(long = "set", value_name = "PATH=VALUE")]
        set: Vec<String>,
        /// Candidates run at once (threads; default: the file's optimizer.parallelism, at most
        /// the machine's cores).
        #[arg(long)]
        jobs: Option<usize>,
        /// Run only every N-th candidate from I (`I/N`): an exhaustive or random search split
        /// across machines.
        #[arg(long, value_name = "I/N")]
        shard: Option<String>,
        #[arg(long, value_name = "DIR", default_value = "servesim-recommend")]
        output_dir: PathBuf,
        /// Replace the known output files of an existing output directory.
        #[arg(long)]
        overwrite: bool,
        #[arg(long, default_value = "table", value_parser = ["json", "table"])]
        format: String,
    },
    /// Prices single passes with a measured-kernel timing model, as the reference's
    /// `estimate.py --mocker` does: each input line is {"prefill": [batch, new tokens per
    /// request, prefix per request]} or {"decode": [batch, context per request (the token
    /// made counts)]}; each output line is {"query", "ms"} (with --ops, the per-op list).
    Estimate {
        /// The engine arguments: `{"backend": ..., "timing_model": {"type": "ais", ...}}`, as
        /// JSON or a file holding it.
        engine: String,
        /// Queries, one JSON object a line (default: standard input).
        queries: Option<PathBuf>,
        #[arg(long)]
        ops: bool,
    },
    /// Runs a servesim scenario file and prints {"config", "summary", "per_request"} as JSON
    /// (`config`: what the engines ran with, derived values included).
    Run {
        scenario: PathBuf,
        /// Also write the time series (per rank and cluster, in windows) to this file.
        #[arg(long, value_name = "OUT.json")]
        timeseries: Option<PathBuf>,
        /// Also write every event of the run (KV events, request lifecycle, passes), one JSON
        /// object a line, in time order.
        #[arg(long, value_name = "OUT.jsonl")]
        events: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Replay { case, timeseries, events } => {
            simulate(&case, false, timeseries.is_some(), events.as_deref()).and_then(|r| output(r, timeseries.as_deref()))
        }
        Command::Run { scenario, timeseries, events } => {
            simulate(&scenario, true, timeseries.is_some(), events.as_deref()).and_then(|r| output(r, timeseries.as_deref()))
        }
        Command::Bench { case, runs } => bench(&case, runs).and_then(|json| print(|w| writeln!(w, "{json}"))),
        Command::Sweep { sweep, jobs, shard } => run_sweep(&sweep, jobs, shard.as_deref()),
        Command::Predict { config, set, format, scenario } => predict::run(&config, &set, &format, scenario),
        Command::Recommend { config, set, jobs, shard, output_dir, overwrite, format } => {
            let shard = shard.as_deref().map(parse_shard).transpose();
            shard.and_then(|shard| recommend::run(&config, &set, jobs, shard, &output_dir, overwrite, &format))
        }
        Command::Estimate { engine, queries, ops } => estimate(&engine, queries.as_deref(), ops),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("servesim: {e}");
            ExitCode::from(2)
        }
    }
}

/// Writes to stdout; a closed pipe (`| head`) is the reader's choice, not an error.
pub(crate) fn print(f: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> Result<(), SimError> {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    match f(&mut out).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(SimError::new(format!("writing the result: {e}"))),
        _ => Ok(()),
    }
}

pub(crate) fn read(path: &Path) -> Result<String, SimError> {
    std::fs::read_to_string(path).map_err(|e| SimError::new(format!("{}: {e}", path.display())))
}

/// The answer goes to stdout; the time series, if asked for, to its file.
fn output(report: RunReport, timeseries: Option<&Path>) -> Result<(), SimError> {
    if let Some(path) = timeseries {
        let json = serde_json::to_string(report.timeseries()).map_err(|e| SimError::new(e.to_string()))?;
        std::fs::write(path, json).map_err(|e| SimError::new(format!("{}: {e}", path.display())))?;
    }
    print(|w| report.write_json(&mut *w))
}

/// Reads a scenario or replay case file: what to run, and where its files are.
fn input(path: &Path, scenario: bool) -> Result<Input, SimError> {
    let text = read(path)?;
    Ok(if scenario {
        Input::Scenario(Scenario::from_json_str(&text).map_err(|e| SimError::new(format!("{}: {e}", path.display())))?)
    } else {
        Input::Case(Case::from_json_str(&text, &path.display().to_string())?)
    })
}

fn replay(case_path: &Path, timeseries: bool) -> Result<RunReport, SimError> {
    simulate(case_path, false, timeseries, None)
}

fn simulate(path: &Path, scenario: bool, timeseries: bool, events: Option<&Path>) -> Result<RunReport, SimError> {
    let input = input(path, scenario)?;
    let opts = BuildOptions { timeseries, ..BuildOptions::default() };
    let sim = build(&input, &mut DirFiles::beside(path).with_kernels(kernel_dir()), &opts)?;
    let kernels = sim.kernels().clone();
    let mut report = match events {
        None => sim.run(),
        Some(events) => {
            let file = std::fs::File::create(events).map_err(|e| SimError::new(format!("{}: {e}", events.display())))?;
            let sink = Rc::new(RefCell::new(JsonLines::new(std::io::BufWriter::new(file))));
            let report = sim.with_events(Box::new(sink.clone())).run();
            let mut sink = sink.borrow_mut();
            if let Some(e) = sink.error.take().or_else(|| sink.out_mut().flush().err()) {
                return Err(SimError::new(format!("{}: {e}", events.display())));
            }
            report
        }
    };
    // A scenario's answer states what the engines ran with (`config`); a replay case's
    // answer keeps the reference's form.
    if let Input::Scenario(s) = &input {
        report.config = Some(servesim_sim::report::config::effective_with(s, Some(&kernels))?);
    }
    Ok(report)
}

/// Where measured-kernel data is read from: `$SERVESIM_AIS_DATA`, else the clone's `data/ais/`.
pub(crate) fn kernel_dir() -> PathBuf {
    std::env::var_os("SERVESIM_AIS_DATA").map(PathBuf::from).unwrap_or_else(servesim_sim::default_kernel_dir)
}

fn estimate(engine: &str, queries: Option<&Path>, ops: bool) -> Result<(), SimError> {
    let text = if engine.trim_start().starts_with('{') { engine.to_string() } else { read(Path::new(engine))? };
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| SimError::new(format!("engine: {e}")))?;
    let args = servesim_engine::EngineArgs::from_json(&value).map_err(|e| SimError::new(e.to_string()))?;
    let model = servesim_sim::kernels::model_for(&args, &mut DirFiles::beside(Path::new(".")).with_kernels(kernel_dir()))?;
    let input = match queries {
        Some(p) => read(p)?,
        None => std::io::read_to_string(std::io::stdin()).map_err(|e| SimError::new(format!("stdin: {e}")))?,
    };
    let mut out = Vec::new();
    for (i, line) in input.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let bad = |m: &str| SimError::new(format!("line {}: {m}", i + 1));
        let q: serde_json::Value = serde_json::from_str(line).map_err(|e| bad(&e.to_string()))?;
        let nums = |k: &str| -> Option<Vec<u64>> { q.get(k)?.as_array()?.iter().map(|v| v.as_u64()).collect() };
        let result = if let Some(p) = nums("prefill").filter(|p| p.len() == 3) {
            model.prefill_ops(p[0], p[2] + p[1], p[2])
        } else if let Some(d) = nums("decode").filter(|d| d.len() == 2) {
            model.decode_ops(d[0], d[1])
        } else {
            return Err(bad("expected {\"prefill\": [batch, new, prefix]} or {\"decode\": [batch, context]}"));
        };
        let answer = match result {
            Ok(list) => {
                let ms = list.iter().fold(0.0, |t, (_, ms)| t + ms);
                if ops {
                    serde_json::json!({"query": q, "ms": ms, "ops": list.iter().map(|(n, v)| serde_json::json!([n, v])).collect::<Vec<_>>()})
                } else {
                    serde_json::json!({"query": q, "ms": ms})
                }
            }
            Err(e) => serde_json::json!({"query": q, "error": e}),
        };
        out.push(answer.to_string());
    }
    print(|w| out.iter().try_for_each(|l| writeln!(w, "{l}")))
}

/// `I/N` → (I, N).
fn parse_shard(s: &str) -> Result<(usize, usize), SimError> {
    let bad = || SimError::new(format!("--shard {s}: expected I/N with 0 <= I < N"));
    let (i, n) = s.split_once('/').ok_or_else(bad)?;
    let (i, n): (usize, usize) = (i.trim().parse().map_err(|_| bad())?, n.trim().parse().map_err(|_| bad())?);
    if n == 0 || i >= n {
        return Err(bad());
    }
    Ok((i, n))
}

/// Runs a sweep's points on `jobs` threads and prints their lines in point order, each as soon
/// as every earlier one is printed.
fn run_sweep(path: &Path, jobs: usize, shard: Option<&str>) -> Result<(), SimError> {
    use std::sync::{Mutex, mpsc};
    let sweep = Sweep::from_json_str(&read(path)?).map_err(|e| SimError::new(format!("{}: {e}", path.display())))?;
    let (shard, shards) = shard.map(parse_shard).transpose()?.unwrap_or((0, 1));
    let points: Vec<_> = sweep.shard(shard, shards).collect();
    let source = path.display().to_string();
    let line = |p: &servesim_sim::sweep::Point| -> Result<String, SimError> {
        let input = sweep.input(p, &source)?;
        let opts = BuildOptions { timeseries: false, ..BuildOptions::default() };
        let report = build(&input, &mut DirFiles::beside(path).with_kernels(kernel_dir()), &opts)
            .map_err(|e| SimError::new(format!("point {}: {e}", p.index)))?
            .run();
        Ok(sweep.line(p, report.summary()))
    };
    let next = Mutex::new(0usize);
    let (tx, rx) = mpsc::channel::<(usize, Result<String, SimError>)>();
    std::thread::scope(|scope| -> Result<(), SimError> {
        for _ in 0..jobs.clamp(1, points.len().max(1)) {
            let tx = tx.clone();
            let (next, points, line) = (&next, &points, &line);
            scope.spawn(move || {
                loop {
                    let k = {
                        let mut n = next.lock().expect("no thread panicked holding it");
                        let k = *n;
                        *n += 1;
                        k
                    };
                    let Some(p) = points.get(k) else { break };
                    if tx.send((k, line(p))).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        let mut done: std::collections::BTreeMap<usize, String> = Default::default();
        let mut printed = 0;
        let mut out = std::io::BufWriter::new(std::io::stdout().lock());
        for (k, result) in rx {
            done.insert(k, result?);
            while let Some(text) = done.remove(&printed) {
                match writeln!(out, "{text}").and_then(|()| out.flush()) {
                    Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(()),
                    Err(e) => return Err(SimError::new(format!("writing the result: {e}"))),
                    Ok(()) => printed += 1,
                }
            }
        }
        Ok(())
    })
}

fn bench(case_path: &Path, runs: u32) -> Result<String, SimError> {
    let mut walls = Vec::new();
    let mut requests = 0;
    for _ in 0..runs.max(1) {
        let start = std::time::Instant::now();
        let report = replay(case_path, false)?;
        walls.push(start.elapsed().as_secs_f64());
        requests = report.collector.records.len();
    }
    walls.sort_by(f64::total_cmp);
    let median = walls[walls.len() / 2];
    Ok(serde_json::json!({
        "case": case_path.display().to_string(),
        "requests": requests,
        "runs": walls.len(),
        "wall_s": walls,
        "median_wall_s": median,
        "requests_per_s": requests as f64 / median,
        "peak_rss_mb": peak_rss_mb(),
    })
    .to_string())
}

/// Peak resident memory of this process (Linux), in MB.
fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}
