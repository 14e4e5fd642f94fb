//! `servesim`: replay Dynamo cases, run servesim scenarios, benchmark.

use clap::{Parser, Subcommand};
use servesim_sim::replay::{load_profiles, Case};
use servesim_sim::scenario::{Scenario, WorkloadSpec};
use servesim_sim::workload::mooncake;
use servesim_sim::{RunReport, SimError, Simulation};
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
    /// Runs a servesim scenario file and prints {"summary", "per_request"} as JSON.
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
        Command::Replay { case, timeseries } => replay(&case).and_then(|r| output(r, timeseries.as_deref())),
        Command::Run { scenario, timeseries } => run(&scenario).and_then(|r| output(r, timeseries.as_deref())),
    };
    match result {
        Ok(json) => {
            // A closed pipe (`| head`) is the reader's choice, not an error.
            let mut out = std::io::stdout().lock();
            match writeln!(out, "{json}") {
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
                    eprintln!("servesim: writing the result: {e}");
                    ExitCode::from(1)
                }
                _ => ExitCode::SUCCESS,
            }
        }
        Err(e) => {
            eprintln!("servesim: {e}");
            ExitCode::from(2)
        }
    }
}

fn read(path: &Path) -> Result<String, SimError> {
    std::fs::read_to_string(path).map_err(|e| SimError::new(format!("{}: {e}", path.display())))
}

fn read_bytes(path: &Path) -> Result<Vec<u8>, SimError> {
    std::fs::read(path).map_err(|e| SimError::new(format!("{}: {e}", path.display())))
}

fn relative(base: &Path, p: &str) -> PathBuf {
    base.parent().unwrap_or(Path::new(".")).join(p)
}

/// The answer for stdout; the time series, if asked for, goes to its file.
fn output(report: RunReport, timeseries: Option<&Path>) -> Result<String, SimError> {
    if let Some(path) = timeseries {
        let json = serde_json::to_string(report.timeseries()).map_err(|e| SimError::new(e.to_string()))?;
        std::fs::write(path, json).map_err(|e| SimError::new(format!("{}: {e}", path.display())))?;
    }
    Ok(report.to_json().to_string())
}

fn replay(case_path: &Path) -> Result<RunReport, SimError> {
    let case = Case::from_json_str(&read(case_path)?, &case_path.display().to_string())?;
    let mut cfg = case.config()?;
    load_profiles(&mut cfg, &mut |p| read_bytes(&relative(case_path, p)))?;
    let trace_path = relative(case_path, &case.trace);
    let workload = mooncake::parse(&read(&trace_path)?, case.trace_block_size(), &trace_path.display().to_string())?;
    Ok(Simulation::new(&cfg, workload)?.run())
}

fn run(path: &Path) -> Result<RunReport, SimError> {
    let scenario = Scenario::from_json_str(&read(path)?).map_err(|e| SimError::new(format!("{}: {e}", path.display())))?;
    let mut cfg = scenario.config()?;
    load_profiles(&mut cfg, &mut |p| read_bytes(&relative(path, p)))?;
    let workload = match &scenario.workload {
        WorkloadSpec::Synthetic(spec) => spec.generate()?,
        WorkloadSpec::Trace { path: Some(p), trace_block_size, .. } => {
            let trace_path = relative(path, p);
            mooncake::parse(&read(&trace_path)?, *trace_block_size, &trace_path.display().to_string())?
        }
        WorkloadSpec::Trace { path: None, .. } => {
            return Err(SimError::new("workload.path: a trace workload needs a path"));
        }
    };
    Ok(Simulation::new(&cfg, workload)?.run())
}
