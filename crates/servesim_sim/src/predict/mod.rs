//! DynoSim's configuration files (`aisimulate predict|recommend --stack dynamo`), read
//! unchanged: a `predict` file is mapped onto an ordinary scenario ([`mapping`]); a
//! `recommend` file is a search space ([`domain`]) searched under its constraints and target
//! ([`search`]), each candidate an ordinary run. Everything here is pure — files come
//! through [`Files`], runs are the caller's to schedule — so the CLI and the page share it.
//! What the mapping does and refuses, field by field: `docs/predict.md`.

pub mod domain;
mod fields;
pub mod mapping;
pub mod search;
mod tpe;
pub mod yaml;

pub use mapping::{Mapped, apply_overrides, from_scenario};
pub use search::{Candidate, Outcome, Recommend, Search, Target};

use crate::SimError;
use crate::build::{BuildOptions, Files, Input, build};
use crate::report::Slo;
use yaml::Node;

/// Parses a configuration file's text; `src` names it in errors (`FILE:LINE: field: ...`).
pub fn parse(text: &str, src: &str) -> Result<Node, SimError> {
    let doc = yaml::parse(text).map_err(|e| SimError::new(format!("{src}:{e}")))?;
    if doc.map().is_none() {
        return Err(SimError::new(format!("{src}: a configuration is one YAML mapping (traffic, engine, ...)")));
    }
    Ok(doc)
}

/// A predict file (with `--set` overrides applied) as a scenario.
pub fn predict(text: &str, src: &str, sets: &[String], files: &mut dyn Files) -> Result<Mapped, SimError> {
    let mut doc = parse(text, src)?;
    apply_overrides(&mut doc, sets)?;
    mapping::map(&doc, src, files)
}

/// A recommend file (with `--set` overrides applied): its settings and search space.
pub fn recommend(text: &str, src: &str, sets: &[String]) -> Result<Recommend, SimError> {
    let mut doc = parse(text, src)?;
    apply_overrides(&mut doc, sets)?;
    Recommend::new(&doc, src)
}

/// Maps a candidate, or says why it cannot run.
pub fn map_candidate(search: &Search, c: &Candidate, files: &mut dyn Files) -> Result<Mapped, Outcome> {
    mapping::map(&c.doc, &search.rec.src, files).map_err(|e| Outcome::Infeasible { gpus: None, reason: e.0 })
}

/// Runs a mapped candidate to its end, or stops it as soon as it cannot meet `objective`
/// (checked every `check_every` timestamps). `keep_going` is asked between slices (a caller's
/// timeout or cancel: false stops the run as infeasible with `interrupted` as the reason).
pub fn run_candidate(
    m: &Mapped,
    files: &mut dyn Files,
    check_every: usize,
    keep_going: &mut dyn FnMut() -> Result<(), String>,
) -> Result<Outcome, SimError> {
    let opts = BuildOptions { timeseries: false, ..BuildOptions::default() };
    let mut sim = build(&Input::Scenario(m.scenario.clone()), files, &opts)?;
    let n = sim.num_requests();
    loop {
        let done = sim.advance(check_every.max(1));
        if done {
            break;
        }
        if let Some(obj) = &m.objective
            && let Some(reason) = search::hopeless(obj, sim.records(), n)
        {
            return Ok(Outcome::Stopped { gpus: m.gpus, reason });
        }
        if let Err(reason) = keep_going() {
            return Ok(Outcome::Infeasible { gpus: Some(m.gpus), reason });
        }
    }
    let summary = sim.finish().summary();
    let missed = m.objective.as_ref().and_then(|o: &Slo| search::missed(o, &summary));
    Ok(Outcome::Ran { summary, gpus: m.gpus, missed })
}

/// Files named relative to any of several directories, tried in order (a DynoSim file names
/// its model and traces relative to the file or to the directory it is run from).
pub struct PathFiles {
    pub bases: Vec<std::path::PathBuf>,
    /// The measured-kernel data's directory (the clone's `data/ais/` by default).
    pub kernels: std::path::PathBuf,
}

impl PathFiles {
    /// Beside `file`, then the current directory.
    pub fn beside(file: &std::path::Path) -> PathFiles {
        let dir = file.parent().map(std::path::Path::to_path_buf).unwrap_or_default();
        PathFiles { bases: vec![dir, std::path::PathBuf::from(".")], kernels: crate::build::default_kernel_dir() }
    }

    /// Measured-kernel data from `dir` instead.
    pub fn with_kernels(mut self, dir: std::path::PathBuf) -> Self {
        self.kernels = dir;
        self
    }

    fn find(&self, name: &str) -> std::path::PathBuf {
        let candidates = self.bases.iter().map(|b| b.join(name));
        candidates.clone().find(|p| p.exists()).unwrap_or_else(|| self.bases[0].join(name))
    }
}

impl Files for PathFiles {
    fn read(&mut self, name: &str) -> Result<Vec<u8>, SimError> {
        let path = self.find(name);
        std::fs::read(&path).map_err(|e| SimError::new(format!("{}: {e}", path.display())))
    }

    fn trace(&mut self, name: &str, opts: crate::workload::mooncake::TraceOptions) -> Result<crate::Workload, SimError> {
        let path = self.find(name);
        let file = std::fs::File::open(&path).map_err(|e| SimError::new(format!("{}: {e}", path.display())))?;
        crate::workload::formats::read_reader(std::io::BufReader::new(file), opts, &path.display().to_string())
    }

    fn kernel_file(&mut self, name: &str) -> Result<Vec<u8>, SimError> {
        let path = self.kernels.join(name);
        std::fs::read(&path).map_err(|e| SimError::new(format!("measured-kernel data {}: {e}", path.display())))
    }
}
