//! One way to build a run: a scenario or a replay case, plus the files it names, becomes a
//! [`Simulation`]. The CLI, the page, the tests and the fuzz targets all come through here;
//! they differ only in how files are read ([`Files`]): from a directory natively
//! ([`DirFiles`]), from uploaded bytes in the page ([`MemFiles`]).

use crate::replay::Case;
use crate::report::Column;
use crate::scenario::{Profiles, Scenario, WorkloadSpec};
use crate::workload::mooncake::TraceOptions;
use crate::workload::{Workload, formats};
use crate::{SimError, Simulation};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What to run.
#[derive(Clone, Debug)]
// Built once per run: boxing the scenario would only add noise at every caller.
#[allow(clippy::large_enum_variant)]
pub enum Input {
    /// servesim's own scenario format.
    Scenario(Scenario),
    /// A Dynamo replay case (`{"trace", "replay": {run_trace_replay arguments}}`).
    Case(Case),
}

/// Reads the files a scenario or case names (traces, NPZ profiles), by the names it gives them.
pub trait Files {
    /// The whole file.
    fn read(&mut self, name: &str) -> Result<Vec<u8>, SimError>;

    /// A trace, parsed line by line (errors name the file and line).
    fn trace(&mut self, name: &str, opts: TraceOptions) -> Result<Workload, SimError> {
        let bytes = self.read(name)?;
        parse_trace(&bytes, opts, name)
    }

    /// The name a trace workload without a `path` reads (an upload has one; a directory
    /// has none to offer).
    fn unnamed_trace(&self) -> Option<&str> {
        None
    }

    /// A measured-kernel file (`index.json`, `models.json`, a data file) by its name in the
    /// data's index.
    fn kernel_file(&mut self, name: &str) -> Result<Vec<u8>, SimError> {
        Err(SimError::new(format!("measured-kernel data `{name}` is not available here")))
    }
}

/// Where a clone keeps the measured-kernel data (`data/ais/`).
pub fn default_kernel_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/ais")
}

/// Files relative to a directory (the scenario's or the case's), as Dynamo's replay resolves
/// them. Traces stream from disk, never held whole.
pub struct DirFiles {
    base: PathBuf,
    /// The measured-kernel data's directory.
    kernels: PathBuf,
}

impl DirFiles {
    /// Files named relative to the directory holding `file`; measured-kernel data from the
    /// clone's `data/ais/`.
    pub fn beside(file: &Path) -> Self {
        DirFiles { base: file.parent().unwrap_or(Path::new(".")).to_path_buf(), kernels: default_kernel_dir() }
    }

    /// Measured-kernel data from `dir` instead.
    pub fn with_kernels(mut self, dir: PathBuf) -> Self {
        self.kernels = dir;
        self
    }

    fn path(&self, name: &str) -> PathBuf {
        self.base.join(name)
    }
}

impl Files for DirFiles {
    fn read(&mut self, name: &str) -> Result<Vec<u8>, SimError> {
        let path = self.path(name);
        std::fs::read(&path).map_err(|e| SimError::new(format!("{}: {e}", path.display())))
    }

    fn trace(&mut self, name: &str, opts: TraceOptions) -> Result<Workload, SimError> {
        let path = self.path(name);
        let file = std::fs::File::open(&path).map_err(|e| SimError::new(format!("{}: {e}", path.display())))?;
        formats::read_reader(std::io::BufReader::new(file), opts, &path.display().to_string())
    }

    fn kernel_file(&mut self, name: &str) -> Result<Vec<u8>, SimError> {
        let path = self.kernels.join(name);
        std::fs::read(&path).map_err(|e| SimError::new(format!("measured-kernel data {}: {e}", path.display())))
    }
}

/// The page's files as a run reads them, without copying them in (both wasm modules use it):
/// the uploaded trace (whatever the scenario calls it), other uploads by name through `read`
/// (NPZ profiles, model configs), and measured-kernel files through `kernels` (the engine
/// module's own store), or through `read` when there is none.
pub struct Uploads<'a> {
    pub trace: Option<&'a [u8]>,
    pub read: &'a mut dyn FnMut(&str) -> Result<Vec<u8>, SimError>,
    pub kernels: Option<ReadFile>,
}

/// Reads a file by name.
pub type ReadFile = fn(&str) -> Result<Vec<u8>, SimError>;

/// A `read` for runs with no uploaded files.
pub fn no_files(name: &str) -> Result<Vec<u8>, SimError> {
    Err(SimError::new(format!("`{name}` is not loaded (upload the file)")))
}

impl Files for Uploads<'_> {
    fn read(&mut self, name: &str) -> Result<Vec<u8>, SimError> {
        (self.read)(name)
    }

    fn trace(&mut self, name: &str, opts: TraceOptions) -> Result<Workload, SimError> {
        let Some(bytes) = self.trace else {
            return Err(SimError::new(format!("workload.path: the trace `{name}` is not loaded (upload the file)")));
        };
        parse_trace(bytes, opts, name)
    }

    fn unnamed_trace(&self) -> Option<&str> {
        Some("trace.jsonl")
    }

    fn kernel_file(&mut self, name: &str) -> Result<Vec<u8>, SimError> {
        match self.kernels {
            Some(kernels) => kernels(name),
            None => (self.read)(name),
        }
    }
}

/// Files handed over in memory (uploads in the page), by name.
#[derive(Clone, Debug, Default)]
pub struct MemFiles {
    files: BTreeMap<String, Vec<u8>>,
    /// The name of the uploaded trace, for a trace workload that names none.
    trace_name: Option<String>,
}

impl MemFiles {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn insert(&mut self, name: impl Into<String>, bytes: Vec<u8>) {
        self.files.insert(name.into(), bytes);
    }

    /// The uploaded trace: read under `name`, and by a trace workload that names no file.
    pub fn insert_trace(&mut self, name: impl Into<String>, bytes: Vec<u8>) {
        let name = name.into();
        self.trace_name = Some(name.clone());
        self.files.insert(name, bytes);
    }
}

impl Files for MemFiles {
    fn read(&mut self, name: &str) -> Result<Vec<u8>, SimError> {
        self.files.get(name).cloned().ok_or_else(|| SimError::new(format!("`{name}` is not loaded (upload the file)")))
    }

    fn trace(&mut self, name: &str, opts: TraceOptions) -> Result<Workload, SimError> {
        let Some(bytes) = self.files.get(name) else {
            return Err(SimError::new(format!("workload.path: the trace `{name}` is not loaded (upload the file)")));
        };
        parse_trace(bytes, opts, name)
    }

    fn unnamed_trace(&self) -> Option<&str> {
        Some(self.trace_name.as_deref().unwrap_or("trace.jsonl"))
    }

    fn kernel_file(&mut self, name: &str) -> Result<Vec<u8>, SimError> {
        self.files
            .get(&format!("{KERNEL_PREFIX}{name}"))
            .cloned()
            .ok_or_else(|| SimError::new(format!("measured-kernel data `{name}` is not loaded (fetch it and pass its bytes in)")))
    }
}

/// Measured-kernel files among in-memory files are named `kernels/NAME`.
pub const KERNEL_PREFIX: &str = "kernels/";

/// Without the trace readers (the page's first module): refused with the words that make the
/// page load the full one.
#[cfg(not(feature = "trace-files"))]
pub fn parse_trace(_bytes: &[u8], _opts: TraceOptions, name: &str) -> Result<Workload, SimError> {
    Err(SimError::left_out(&format!("{name}: the trace reader")))
}

/// Parses a trace held in memory; `name` names it in errors.
#[cfg(feature = "trace-files")]
pub fn parse_trace(bytes: &[u8], opts: TraceOptions, name: &str) -> Result<Workload, SimError> {
    match std::str::from_utf8(bytes) {
        Ok(text) => formats::read_text(text, opts, name),
        // Line by line, so the error names the line that is not UTF-8.
        Err(_) => formats::read_reader(bytes, opts, name),
    }
}

/// How the time-series window is chosen.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Interval {
    /// The scenario's or case's `timeseries_interval_ms`.
    Configured,
    /// About 80 windows over the arrivals (plus a margin for the tail).
    Auto,
    Fixed(f64),
}

/// Choices of the caller, not of the scenario.
#[derive(Clone, Copy, Debug)]
pub struct BuildOptions {
    pub interval: Interval,
    /// Record the time series (a replay whose series nobody reads saves the bookkeeping).
    pub timeseries: bool,
}

impl Default for BuildOptions {
    fn default() -> Self {
        BuildOptions { interval: Interval::Configured, timeseries: true }
    }
}

/// Builds the run `input` describes, reading what it names through `files`.
pub fn build(input: &Input, files: &mut dyn Files, opts: &BuildOptions) -> Result<Simulation, SimError> {
    let mut cfg = match input {
        Input::Scenario(s) => s.config()?,
        Input::Case(c) => c.config()?,
    };
    cfg.profiles = Profiles::load(&cfg, |path| files.read(path))?;
    cfg.kernels = crate::kernels::KernelSets::load(&mut cfg, files)?;
    let workload = match input {
        Input::Case(c) => files.trace(&c.trace, c.trace_options()?)?,
        Input::Scenario(s) => match &s.workload {
            WorkloadSpec::Synthetic(spec) => spec.generate()?,
            WorkloadSpec::Trace { path, trace_block_size, format, concurrency, .. } => {
                let name = match path.as_deref().or(files.unnamed_trace()) {
                    Some(name) => name.to_string(),
                    None => return Err(SimError::new("workload.path: a trace workload needs a path")),
                };
                if format.needs_closed_loop() && concurrency.is_none() {
                    return Err(SimError::new("workload.concurrency: an applied_compute_agentic trace needs a closed loop"));
                }
                let opts = TraceOptions { block_tokens: *trace_block_size, format: *format, closed_loop: concurrency.is_some() };
                files.trace(&name, opts)?
            }
        },
    };
    let columns = match input {
        Input::Case(c) => c.columns()?,
        Input::Scenario(_) => Column::DEFAULT.to_vec(),
    };
    let mut auto = None;
    match opts.interval {
        Interval::Configured => {}
        Interval::Fixed(ms) => cfg.timeseries_interval_ms = ms,
        Interval::Auto => {
            let (lo, hi) =
                workload.rows.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), r| (lo.min(r.timestamp), hi.max(r.timestamp)));
            let span = (hi - lo) / cfg.arrival_speedup_ratio;
            auto = Some(fine_interval(span));
        }
    }
    let sim = Simulation::new(&cfg, workload)?.with_timeseries(opts.timeseries).with_columns(columns);
    Ok(match auto {
        Some(fine) => sim.with_auto_windows(fine, AUTO_WINDOWS),
        None => sim,
    })
}

/// Automatic time series end with at most this many windows over what ran.
pub const AUTO_WINDOWS: usize = 100;

/// The fine window automatic time series record in: a power of ten ms giving about ten
/// times [`AUTO_WINDOWS`] windows over the arrivals (at least 1 µs; 1 ms when every request
/// arrives at once). The end of the run, whenever it comes, merges them.
pub fn fine_interval(arrival_span_ms: f64) -> f64 {
    if !(arrival_span_ms.is_finite() && arrival_span_ms > 0.0) {
        return 1.0;
    }
    let raw = arrival_span_ms * 1.2 / (10 * AUTO_WINDOWS) as f64;
    10f64.powf(raw.log10().floor()).max(1e-3)
}

/// A round window (1, 2 or 5 times a power of ten ms, at least 1 µs) giving about `target`
/// windows over `span_ms`.
pub fn nice_interval(span_ms: f64, target: f64) -> f64 {
    if !(span_ms.is_finite() && span_ms > 0.0) {
        return 1.0;
    }
    let raw = span_ms / target;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0].into_iter().find(|m| m * mag >= raw).unwrap_or(10.0);
    (step * mag).max(1e-3)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_intervals() {
        assert_eq!(nice_interval(12_000.0, 120.0), 100.0);
        assert_eq!(nice_interval(25_000.0, 120.0), 500.0);
        assert_eq!(nice_interval(0.0, 120.0), 1.0);
        assert_eq!(fine_interval(20_000.0), 10.0);
        assert_eq!(fine_interval(0.02), 1e-3);
        assert_eq!(fine_interval(0.0), 1.0);
    }

    fn scenario_run(json: &str, interval: Interval) -> crate::RunReport {
        let s = Scenario::from_json_str(json).unwrap();
        build(&Input::Scenario(s), &mut MemFiles::new(), &BuildOptions { interval, timeseries: true }).unwrap().run()
    }

    /// 10⁷ requests per second: every arrival within 0.02 ms, a run of seconds. The windows
    /// stay few (they used to be 1 µs each over the whole run: millions of windows).
    #[test]
    fn extreme_rates_keep_the_series_small() {
        for rate in [1e7, 1e12] {
            let json = format!(r#"{{"workload": {{"num_requests": 200, "rate_rps": {rate}}}}}"#);
            let r = scenario_run(&json, Interval::Auto);
            let ts = r.timeseries();
            assert!((10..=AUTO_WINDOWS).contains(&ts.t_ms.len()), "{rate}: {} windows", ts.t_ms.len());
            let done: f64 = ts.cluster.requests_completed.iter().sum();
            assert_eq!(done, 200.0);
            let last = *ts.t_ms.last().unwrap();
            let end = r.summary()["duration_ms"].as_f64().unwrap();
            assert!(last >= end && last - ts.interval_ms < end, "the windows cover the run: {last} vs {end}");
        }
        // A run of thousands of years in 1 s windows: widened, not billions of windows.
        let r = scenario_run(r#"{"workload": {"num_requests": 20, "rate_rps": 1e-9}}"#, Interval::Configured);
        let ts = r.timeseries();
        assert!(ts.t_ms.len() <= 100_000 && ts.interval_ms > 1000.0, "{} windows of {} ms", ts.t_ms.len(), ts.interval_ms);
        let out: f64 = ts.cluster.output_tok_s.iter().map(|x| x * ts.interval_ms / 1000.0).sum();
        assert!((out - r.summary()["total_output_tokens"].as_f64().unwrap()).abs() < 1e-6 * out);
    }

    /// Automatic windows are round and cover what ran, also when the run is cut short.
    #[test]
    fn automatic_windows_cover_what_ran() {
        let s = Scenario::from_json_str(r#"{"workload": {"num_requests": 5000, "rate_rps": 100}}"#).unwrap();
        let mut sim =
            build(&Input::Scenario(s), &mut MemFiles::new(), &BuildOptions { interval: Interval::Auto, timeseries: true }).unwrap();
        sim.advance(3000);
        let ran = sim.now_ms();
        let r = sim.finish();
        let ts = r.timeseries();
        let n = ts.t_ms.len();
        assert!((20..=AUTO_WINDOWS).contains(&n), "{n} windows of {} ms over {ran} ms", ts.interval_ms);
        let mantissa = ts.interval_ms / 10f64.powf(ts.interval_ms.log10().floor());
        assert!([1.0, 2.0, 5.0].iter().any(|m| (m - mantissa).abs() < 1e-9), "{}", ts.interval_ms);
        assert!(ts.t_ms[n - 1] - ts.interval_ms <= ran, "no window past the cut");
    }
}
