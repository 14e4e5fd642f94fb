//! DynoSim's configuration files in the page: `servesim_sim::predict` through wasm, so the
//! page reads and writes the same YAML as `servesim predict` and searches as `servesim
//! recommend` does (the plan and the ranking are the same code; the runs are the page's, on
//! its Web Workers).
//!
//! - [`dynosim_to_scenario`]: a predict file (YAML) → the scenario it maps to.
//! - [`scenario_to_dynosim`]: a scenario → a predict file.
//! - [`Recommendation`]: a recommend file's search: `nextBatch` proposes candidates (each
//!   mapped to a scenario, or infeasible with the reason), `tell` records how each ran,
//!   `ranking` / `ledger` / `ledgerCsv` give the answer as the CLI writes it.
//! - [`CandidateRun`]: one candidate's scenario run in slices, stopped early once it cannot
//!   meet its objective (the CLI's rule).

use crate::{Uploads, js_err, read_file};
use js_sys::Object;
use serde_json::{Value, json};
use servesim_sim::predict::{self, Outcome, Search, search};
use servesim_sim::report::Slo;
use servesim_sim::{BuildOptions, Input, Scenario, build};
use wasm_bindgen::prelude::*;

/// How the page names a configuration in errors (the CLI names the file).
const SOURCE: &str = "config.yaml";

fn sets_of(sets_json: Option<String>) -> Result<Vec<String>, JsError> {
    match sets_json {
        None => Ok(Vec::new()),
        Some(s) => serde_json::from_str(&s).map_err(|e| JsError::new(&format!("sets: expected a JSON list of PATH=VALUE strings: {e}"))),
    }
}

fn mapped_json(m: &predict::Mapped) -> Value {
    json!({"scenario": m.scenario_json, "gpus": m.gpus, "derived": m.derived, "objective": m.objective})
}

/// A DynoSim predict file (YAML text, with `--set`-style overrides as a JSON list of
/// `PATH=VALUE` strings) as `{"scenario", "gpus", "derived", "objective"}` JSON text. `files`
/// holds what it names (a model directory's `NAME/config.json`, its trace) as `Uint8Array`s by
/// name. Errors name the line and the field, as the CLI's do.
#[wasm_bindgen(js_name = dynosimToScenario)]
pub fn dynosim_to_scenario(
    yaml: &str,
    sets_json: Option<String>,
    #[wasm_bindgen(unchecked_optional_param_type = "Record<string, Uint8Array>")] files: Option<Object>,
) -> Result<String, JsError> {
    let sets = sets_of(sets_json)?;
    let mut uploads = Uploads { trace: None, read: &mut |name| read_file(&files, name), kernels: None };
    let m = predict::predict(yaml, SOURCE, &sets, &mut uploads).map_err(js_err)?;
    Ok(mapped_json(&m).to_string())
}

/// A scenario (JSON text) as a DynoSim predict file (YAML text) for `model` on `hardware`;
/// a setting the DynoSim schema cannot say is an error naming it.
#[wasm_bindgen(js_name = scenarioToDynosim)]
pub fn scenario_to_dynosim(scenario_json: &str, model: &str, hardware: &str) -> Result<String, JsError> {
    let s = Scenario::from_json_str(scenario_json).map_err(js_err)?;
    let v = predict::from_scenario(&s, model, hardware).map_err(js_err)?;
    Ok(predict::yaml::emit(&v))
}

/// A recommend file's search, driven by the page.
#[wasm_bindgen]
pub struct Recommendation {
    search: Search,
    files: Option<Object>,
    /// Each candidate's objective (`evaluation.slo`), by id.
    objectives: Vec<Option<Slo>>,
}

#[wasm_bindgen]
impl Recommendation {
    /// A recommend file (YAML text) and overrides (JSON list of `PATH=VALUE`); `files` as for
    /// `dynosimToScenario`.
    #[wasm_bindgen(constructor)]
    pub fn new(
        yaml: &str,
        sets_json: Option<String>,
        #[wasm_bindgen(unchecked_optional_param_type = "Record<string, Uint8Array>")] files: Option<Object>,
    ) -> Result<Recommendation, JsError> {
        let rec = predict::recommend(yaml, SOURCE, &sets_of(sets_json)?).map_err(js_err)?;
        Ok(Recommendation { search: Search::new(rec), files, objectives: Vec::new() })
    }

    /// `{"target", "space_points" (null: infinite), "exhaustive", "max_trials", "parallelism",
    /// "dims": [{"path", "values"} | {"path", "range": {min, max, log, integer}}]}` as JSON text.
    pub fn info(&self) -> String {
        let rec = &self.search.rec;
        let dims: Vec<Value> = rec
            .space
            .dims
            .iter()
            .map(|d| match &d.domain {
                predict::domain::Domain::Values(v) => {
                    json!({"path": d.path, "preset": d.preset, "values": v.iter().map(|n| n.to_json()).collect::<Vec<_>>()})
                }
                predict::domain::Domain::Range { min, max, log, integer } => {
                    json!({"path": d.path, "range": {"min": min, "max": max, "log": log, "integer": integer}})
                }
            })
            .collect();
        json!({"target": rec.settings.target.name(), "space_points": rec.space.size().map(|n| n as f64), "exhaustive": rec.is_exhaustive(),
               "max_trials": rec.settings.max_trials, "parallelism": rec.settings.parallelism, "dims": dims})
        .to_string()
    }

    /// Up to `n` new candidates as JSON text: `[{"id", "set", "yaml", "gpus", "scenario",
    /// "objective"}]`, or `{"id", "set", "yaml", "infeasible": reason}` for one that cannot run
    /// (already told; nothing to run). Empty while the model waits for results, or at the end.
    #[wasm_bindgen(js_name = nextBatch)]
    pub fn next_batch(&mut self, n: usize) -> String {
        let batch = self.search.next_batch(n);
        let files = self.files.clone();
        let mut out = Vec::new();
        for c in batch {
            let mut uploads = Uploads { trace: None, read: &mut |name| read_file(&files, name), kernels: None };
            let mut entry = json!({"id": c.id, "set": c.set.iter().cloned().collect::<serde_json::Map<_, _>>(), "yaml": predict::yaml::emit(&c.doc.to_json())});
            let mapped = predict::map_candidate(&self.search, &c, &mut uploads);
            if self.objectives.len() <= c.id {
                self.objectives.resize(c.id + 1, None);
            }
            match mapped.map(|m| (self.search.precheck(m.gpus), m)) {
                Err(o) | Ok((Some(o), _)) => {
                    entry["infeasible"] = match &o {
                        Outcome::Infeasible { reason, .. } | Outcome::Skipped { reason, .. } | Outcome::Stopped { reason, .. } => {
                            reason.clone().into()
                        }
                        Outcome::Ran { .. } => Value::Null,
                    };
                    self.search.tell(c.id, o);
                }
                Ok((None, m)) => {
                    entry["gpus"] = m.gpus.into();
                    entry["scenario"] = m.scenario_json.clone();
                    entry["objective"] = serde_json::to_value(m.objective).unwrap_or(Value::Null);
                    self.objectives[c.id] = m.objective;
                }
            }
            out.push(entry);
        }
        Value::Array(out).to_string()
    }

    /// How candidate `id` ran, as JSON text: `{"summary": {...}, "gpus"}` (a `CandidateRun`'s
    /// `outcome`), `{"stopped": reason, "gpus"}` or `{"infeasible": reason}`.
    pub fn tell(&mut self, id: usize, outcome_json: &str) -> Result<(), JsError> {
        let v: Value = serde_json::from_str(outcome_json).map_err(js_err)?;
        let gpus = v["gpus"].as_u64().unwrap_or(0) as u32;
        let outcome = if let Some(s) = v["summary"].as_object() {
            let missed = self.objectives.get(id).copied().flatten().and_then(|o| search::missed(&o, s));
            Outcome::Ran { summary: s.clone(), gpus, missed }
        } else if let Some(r) = v["stopped"].as_str() {
            Outcome::Stopped { gpus, reason: r.into() }
        } else {
            Outcome::Infeasible { gpus: v["gpus"].as_u64().map(|g| g as u32), reason: v["infeasible"].as_str().unwrap_or("failed").into() }
        };
        self.search.tell(id, outcome);
        Ok(())
    }

    #[wasm_bindgen(js_name = isDone)]
    pub fn is_done(&self) -> bool {
        self.search.is_done()
    }

    /// The recommendations, best first, as JSON text: `[{"rank", "id", "score", "gpus",
    /// "set", "yaml"}]` (each `yaml` a concrete predict file, as `recommendations/NNNN.yaml`).
    pub fn ranking(&self) -> String {
        let rows: Vec<Value> = self
            .search
            .ranking()
            .iter()
            .enumerate()
            .map(|(r, t)| {
                let gpus = match &t.outcome {
                    Outcome::Ran { gpus, .. } => Some(*gpus),
                    _ => None,
                };
                json!({"rank": r + 1, "id": t.candidate.id, "score": t.score, "gpus": gpus,
                       "set": t.candidate.set.iter().cloned().collect::<serde_json::Map<_, _>>(), "yaml": predict::yaml::emit(&t.candidate.doc.to_json())})
            })
            .collect();
        Value::Array(rows).to_string()
    }

    /// Every candidate (`recommendation.json`), as JSON text.
    pub fn ledger(&self) -> String {
        self.search.ledger().to_string()
    }

    /// The same as CSV (`recommendation.csv`).
    #[wasm_bindgen(js_name = ledgerCsv)]
    pub fn ledger_csv(&self) -> String {
        self.search.ledger_csv()
    }
}

/// One candidate's run, advanced in slices (as `SweepPoint`), stopped as soon as it cannot
/// meet its objective.
#[wasm_bindgen]
pub struct CandidateRun {
    sim: Option<servesim_sim::Simulation>,
    objective: Option<Slo>,
    gpus: u32,
    n: usize,
    outcome: Option<Value>,
}

#[wasm_bindgen]
impl CandidateRun {
    /// A candidate's `scenario` and `objective` (from `nextBatch`), its GPUs, and the
    /// uploads it names.
    #[wasm_bindgen(constructor)]
    pub fn new(
        scenario_json: &str,
        objective_json: Option<String>,
        gpus: u32,
        trace: Option<String>,
        #[wasm_bindgen(unchecked_optional_param_type = "Record<string, Uint8Array>")] files: Option<Object>,
    ) -> Result<CandidateRun, JsError> {
        let s = Scenario::from_json_str(scenario_json).map_err(js_err)?;
        let objective: Option<Slo> = match objective_json.as_deref() {
            None | Some("null") => None,
            Some(o) => Some(serde_json::from_str(o).map_err(js_err)?),
        };
        let mut uploads = Uploads { trace: trace.as_deref().map(str::as_bytes), read: &mut |name| read_file(&files, name), kernels: None };
        let sim =
            build(&Input::Scenario(s), &mut uploads, &BuildOptions { timeseries: false, ..BuildOptions::default() }).map_err(js_err)?;
        let n = sim.num_requests();
        Ok(CandidateRun { sim: Some(sim), objective, gpus, n, outcome: None })
    }

    /// Processes up to `max_timestamps` timestamps; `true` once the run is over (finished,
    /// or stopped early).
    pub fn advance(&mut self, max_timestamps: u32) -> bool {
        let Some(sim) = &mut self.sim else { return true };
        let done = sim.advance(max_timestamps.max(1) as usize);
        if !done {
            if let Some(reason) = self.objective.as_ref().and_then(|o| search::hopeless(o, sim.records(), self.n)) {
                self.outcome = Some(json!({"stopped": reason, "gpus": self.gpus}));
                self.sim = None;
                return true;
            }
            return false;
        }
        let report = self.sim.take().expect("running").finish();
        self.outcome = Some(json!({"summary": report.summary(), "gpus": self.gpus}));
        true
    }

    pub fn progress(&self) -> f64 {
        self.sim.as_ref().map_or(1.0, |s| s.progress())
    }

    /// What to `tell` the `Recommendation`, as JSON text.
    pub fn outcome(&self) -> Result<String, JsError> {
        self.outcome
            .as_ref()
            .map(Value::to_string)
            .ok_or_else(|| JsError::new("the candidate is still running: advance it until it returns true"))
    }
}
