//! Sweeps in the page: `servesim_sim::sweep` through wasm, so the page expands a sweep file and
//! writes each point's line with the very code `servesim sweep` uses (the two cannot disagree).
//!
//! The page expands once ([`expand_sweep`]: every point's values and merged scenario, each
//! validated, so a bad field is reported before anything runs), then runs points in parallel
//! Web Workers, one [`SweepPoint`] handle per point, advanced in slices like [`Simulation`]
//! so a worker can report progress.
//!
//! [`Simulation`]: crate::Simulation

use crate::columns::{KERNELS, Uploads};
use crate::{js_err, read_file, to_js};
use js_sys::Object;
use servesim_sim::sweep::{Point, Sweep};
use servesim_sim::{BuildOptions, RunReport, Scenario, build};
use wasm_bindgen::prelude::*;

/// How the page names itself where the CLI names the sweep file (it appears in no line: a
/// scenario sweep's points read no file by path).
const SOURCE: &str = "sweep.json";

/// Parses a sweep file and checks it is one the page can run (a scenario sweep).
fn parse(json: &str) -> Result<Sweep, JsError> {
    let sweep = Sweep::from_json_str(json).map_err(js_err)?;
    if !matches!(sweep.base, servesim_sim::sweep::Base::Scenario(_)) {
        return Err(JsError::new("case: the page sweeps scenarios (`base`); run a replay-case sweep with `servesim sweep`"));
    }
    Ok(sweep)
}

/// Expands a sweep file (`{"version": 1, "base": SCENARIO, "vary": [...], "slo": {...}}`, as
/// `servesim sweep` reads it) into its points, in the CLI's order: `{"count", "fields",
/// "points": [{"point", "set": {field: value}, "scenario": merged scenario}]}` as JSON text.
/// Every point's scenario is validated; the error names the point and the field. More than
/// `max_points` points is an error (a page runs what a person can read).
#[wasm_bindgen(js_name = expandSweep)]
pub fn expand_sweep(json: &str, max_points: usize) -> Result<String, JsError> {
    let sweep = parse(json)?;
    let n = sweep.len();
    if n > max_points {
        return Err(JsError::new(&format!(
            "vary: the sweep has {n} points; the page runs at most {max_points} (use `servesim sweep` for more)"
        )));
    }
    let mut points = Vec::with_capacity(n);
    for i in 0..n {
        let p = sweep.point(i);
        let merged = sweep.merged_scenario(&p).map_err(js_err)?;
        // Validated here so a bad value stops the sweep before it starts, naming the point.
        Scenario::from_json_str(&merged.to_string()).map_err(|e| JsError::new(&format!("point {i} ({}): {e}", describe(&p))))?;
        let set: serde_json::Map<String, serde_json::Value> = p.set.into_iter().collect();
        points.push(serde_json::json!({"point": i, "set": set, "scenario": merged}));
    }
    let fields: Vec<&str> = sweep.axes.iter().map(|a| a.field.as_str()).collect();
    serde_json::to_string(&serde_json::json!({"count": n, "fields": fields, "points": points})).map_err(js_err)
}

/// `field = value, ...` of a point, for messages.
fn describe(p: &Point) -> String {
    p.set.iter().map(|(f, v)| format!("{f} = {v}")).collect::<Vec<_>>().join(", ")
}

enum State {
    Running(Box<servesim_sim::Simulation>),
    Finished(Box<RunReport>),
    Taken,
}

/// One point of a sweep, run to the end in slices.
#[wasm_bindgen]
pub struct SweepPoint {
    sweep: Sweep,
    point: Point,
    state: State,
}

#[wasm_bindgen]
impl SweepPoint {
    /// Point `index` of the sweep file `sweep_json`. `trace` and `files` are the uploads a
    /// scenario names, as for `Simulation`. Built as `servesim sweep` builds a point (no time
    /// series: a line has none).
    #[wasm_bindgen(constructor)]
    pub fn new(
        sweep_json: &str,
        index: usize,
        #[wasm_bindgen(unchecked_optional_param_type = "string")] trace: Option<String>,
        #[wasm_bindgen(unchecked_optional_param_type = "Record<string, Uint8Array>")] files: Option<Object>,
    ) -> Result<SweepPoint, JsError> {
        let sweep = parse(sweep_json)?;
        if index >= sweep.len() {
            return Err(JsError::new(&format!("point {index}: the sweep has {} points", sweep.len())));
        }
        let point = sweep.point(index);
        let input = sweep.input(&point, SOURCE).map_err(js_err)?;
        let mut uploads =
            Uploads { trace: trace.as_deref().map(str::as_bytes), read: &mut |name| read_file(&files, name), kernels: KERNELS };
        let opts = BuildOptions { timeseries: false, ..BuildOptions::default() };
        let sim = build(&input, &mut uploads, &opts).map_err(|e| JsError::new(&format!("point {index}: {e}")))?;
        Ok(SweepPoint { sweep, point, state: State::Running(Box::new(sim)) })
    }

    /// Processes up to `max_timestamps` distinct virtual timestamps; `true` once it is over.
    pub fn advance(&mut self, max_timestamps: u32) -> bool {
        let State::Running(sim) = &mut self.state else { return true };
        if !sim.advance(max_timestamps.max(1) as usize) {
            return false;
        }
        if let State::Running(sim) = std::mem::replace(&mut self.state, State::Taken) {
            self.state = State::Finished(Box::new(sim.finish()));
        }
        true
    }

    /// Fraction of the point's work done, in [0, 1].
    pub fn progress(&self) -> f64 {
        match &self.state {
            State::Running(sim) => sim.progress(),
            _ => 1.0,
        }
    }

    fn report(&self) -> Result<&RunReport, JsError> {
        match &self.state {
            State::Finished(r) => Ok(r),
            _ => Err(JsError::new("the point is still running: advance it until it returns true")),
        }
    }

    /// The point's line, byte for byte what `servesim sweep` prints for it (less the newline).
    pub fn line(&self) -> Result<String, JsError> {
        Ok(self.sweep.line(&self.point, self.report()?.summary()))
    }

    /// The point's summary (the line's `summary`), as an object.
    #[wasm_bindgen(unchecked_return_type = "Summary")]
    pub fn summary(&self) -> Result<JsValue, JsError> {
        to_js(&self.report()?.summary())
    }
}
