//! `servesim`: replay Dynamo cases, run servesim scenarios, benchmark.

use clap::{Parser, Subcommand};
use servesim_sim::replay::Case;
use servesim_sim::scenario::Scenario;
use servesim_sim::{BuildOptions, DirFiles, Input, RunReport, SimError, build};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

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
    },
    /// Replays a case several times and reports wall time, simulated requests per second and
    /// peak memory (a benchmark: compare runs side by side, not against remembered numbers).
    Bench {
        case: PathBuf,
        #[arg(long, default_value_t = 3)]
        runs: u32,
    },
    /// Runs a servesim scenario file and prints {"config", "summary", "per_request"} as JSON
    /// (`config`: what the engines ran with, derived values included).
    Run {
        scenario: PathBuf,
        /// Also write the time series (per rank and cluster, in windows) to this file.
        #[arg(long, value_name = "OUT.json")]
        timeseries: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Replay { case, timeseries } => replay(&case, timeseries.is_some()).and_then(|r| output(r, timeseries.as_deref())),
        Command::Run { scenario, timeseries } => run(&scenario, timeseries.is_some()).and_then(|r| output(r, timeseries.as_deref())),
        Command::Bench { case, runs } => bench(&case, runs).and_then(|json| print(|w| writeln!(w, "{json}"))),
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
fn print(f: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> Result<(), SimError> {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    match f(&mut out).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(SimError::new(format!("writing the result: {e}"))),
        _ => Ok(()),
    }
}

fn read(path: &Path) -> Result<String, SimError> {
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
    simulate(case_path, false, timeseries)
}

fn run(path: &Path, timeseries: bool) -> Result<RunReport, SimError> {
    simulate(path, true, timeseries)
}

fn simulate(path: &Path, scenario: bool, timeseries: bool) -> Result<RunReport, SimError> {
    let input = input(path, scenario)?;
    let opts = BuildOptions { timeseries, ..BuildOptions::default() };
    let mut report = build(&input, &mut DirFiles::beside(path), &opts)?.run();
    // A scenario's answer states what the engines ran with (`config`); a replay case's
    // answer keeps the reference's form.
    if let Input::Scenario(s) = &input {
        report.config = Some(servesim_sim::report::config::effective(s)?);
    }
    Ok(report)
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
