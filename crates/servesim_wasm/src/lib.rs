//! servesim in the browser: a thin wasm-bindgen adapter over `servesim_sim`.
//!
//! JS gets one handle, [`Simulation`]: create it from a scenario (and, for a trace workload,
//! the uploaded trace's text), call `advance` in slices until it returns `true` (reading
//! `progress` in between), or `cancel` it; then read the summary, the per-request records and
//! the time series, the last two as typed-array columns. Every error is a JS `Error` whose
//! message is the simulator's own (it names the field or the trace line).
//!
//! The conversion logic that is not wasm-specific lives in [`columns`], so it is tested
//! natively as well as in Node.

pub mod columns;
pub mod events;
pub mod kernels;
#[cfg(feature = "full")]
pub mod sweep;
pub mod tiers;
mod types;

use columns::{Columns, KERNELS, Series, Uploads};
use js_sys::{Array, Float64Array, Object, Reflect, Uint8Array};
use serde::Serialize;
use servesim_sim::report::Status;
use servesim_sim::{BuildOptions, Input, Interval, RunReport, Scenario, SimError, build};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;

#[wasm_bindgen(start)]
pub fn start() {
    console_error_panic_hook::set_once();
}

thread_local! {
    /// The last error named a part this build leaves out ([`servesim_sim::LEFT_OUT`]).
    static LEFT_OUT: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn js_err(e: impl std::fmt::Display) -> JsError {
    let msg = e.to_string();
    if msg.contains(servesim_sim::LEFT_OUT) {
        LEFT_OUT.with(|l| l.set(true));
    }
    JsError::new(&msg)
}

/// Whether the last call that failed needs a part this build leaves out (once): the page's
/// first module is built without trace files, measured-kernel data and NPZ profiles; on
/// `true` its worker loads the full module and calls again. Always `false` in the full one.
#[wasm_bindgen(js_name = needsFullEngine)]
pub fn needs_full_engine() -> bool {
    LEFT_OUT.with(|l| l.replace(false))
}

/// Whether this is the full build (`false`: the page's first module).
#[wasm_bindgen(js_name = isFullEngine)]
pub fn is_full_engine() -> bool {
    cfg!(feature = "full")
}

fn to_js<T: Serialize + ?Sized>(v: &T) -> Result<JsValue, JsError> {
    v.serialize(&serde_wasm_bindgen::Serializer::json_compatible()).map_err(js_err)
}

fn set(obj: &Object, key: &str, value: &JsValue) {
    // Setting a property on a plain object we just created cannot fail.
    let _ = Reflect::set(obj, &JsValue::from_str(key), value);
}

fn columns_to_js(cols: &Columns) -> Object {
    let obj = Object::new();
    for (name, values) in cols {
        set(&obj, name, &Float64Array::from(&values[..]).into());
    }
    obj
}

/// Hands over a measured-kernel file the page fetched from `data/ais/` (`index.json`,
/// `models.json`, or a data file the catalog names), once: every later run reads it.
#[wasm_bindgen(js_name = loadKernelData)]
pub fn load_kernel_data(name: &str, bytes: &[u8]) {
    kernels::insert(name, bytes.to_vec());
}

/// The measured-kernel file (its name in the index) the last call that failed did not find
/// loaded, once: fetch it, `loadKernelData` it, and call again. `undefined` when the last
/// failure was of another kind.
#[wasm_bindgen(js_name = missingKernelData)]
pub fn missing_kernel_data() -> Option<String> {
    kernels::take_missing()
}

/// What measured-kernel data exists, as JSON: `{"sets": [{system, backend, version, file,
/// bytes, gpu_memory_bytes, power_w, loaded}], "systems": {GPU: {framework: [versions, newest
/// first]}}, "models": [{name, architecture, layers, ...}], "package", "package_version"}`.
/// Needs `index.json` (and `models.json` for the models) loaded.
#[wasm_bindgen(js_name = kernelCatalog)]
pub fn kernel_catalog() -> Result<String, JsError> {
    serde_json::to_string(&kernels::catalog().map_err(js_err)?).map_err(js_err)
}

/// The data file (its name in the index) for a GPU and framework, at `version` or the newest.
#[wasm_bindgen(js_name = kernelFileFor)]
pub fn kernel_file_for(
    system: &str,
    backend: &str,
    #[wasm_bindgen(unchecked_optional_param_type = "string")] version: Option<String>,
) -> Result<String, JsError> {
    let index: serde_json::Value =
        serde_json::from_str(&String::from_utf8_lossy(&kernels::get(servesim_sim::kernels::INDEX).map_err(js_err)?)).map_err(js_err)?;
    let set = servesim_sim::kernels::pick_set(&index, system, backend, version.as_deref()).map_err(js_err)?;
    Ok(set["file"].as_str().unwrap_or_default().to_string())
}

/// The adapter's version (the workspace version).
#[wasm_bindgen(js_name = version)]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}

/// A fresh scenario seed from the platform's random source (`crypto.getRandomValues`):
/// an integer in [0, 2^53), so it stays exact as a JS number and in a share link.
#[wasm_bindgen(js_name = randomSeed)]
pub fn random_seed() -> Result<f64, JsError> {
    let bits = getrandom::u64().map_err(|e| JsError::new(&format!("no random source: {e}")))?;
    Ok((bits >> 11) as f64)
}

/// The default scenario with every field spelled out, as JSON text.
#[wasm_bindgen(js_name = defaultScenario)]
pub fn default_scenario() -> Result<String, JsError> {
    serde_json::to_string(&Scenario::default()).map_err(js_err)
}

/// Parses and validates a scenario; returns it with every field spelled out (defaults filled),
/// as JSON text. The error names the field (`engine.num_gpu_blockz: unknown field ...`).
#[wasm_bindgen(js_name = normalizeScenario)]
pub fn normalize_scenario(json: &str) -> Result<String, JsError> {
    let s = Scenario::from_json_str(json).map_err(js_err)?;
    serde_json::to_string(&s).map_err(js_err)
}

/// A scenario as the engine reads it, and what it would run with: `{"scenario": ...,
/// "config": ...}` as JSON text. `scenario` has every field spelled out, values the user left
/// unset (a roofline's `num_gpu_blocks`, `kv_bytes_per_token`) still unset (`null`), so it
/// can be edited and sent back; `config` is what `servesim run` prints as `config` (the KV
/// pool per rank, KV bytes per token, GPUs per worker and in total, settings without
/// effect). The error names the field.
#[wasm_bindgen(js_name = inspectScenario)]
pub fn inspect_scenario(json: &str) -> Result<String, JsError> {
    let s = Scenario::from_json_str(json).map_err(js_err)?;
    let config = if s.engine.timing_model.ais().is_some() {
        let mut no_files = columns::no_files;
        let mut files = Uploads { trace: None, read: &mut no_files, kernels: KERNELS };
        servesim_sim::report::config::effective_loaded(&s, &mut files).map_err(js_err)?
    } else {
        servesim_sim::report::config::effective(&s).map_err(js_err)?
    };
    serde_json::to_string(&serde_json::json!({"scenario": s, "config": config})).map_err(js_err)
}

/// The smallest tensor-parallel size at which a roofline timing model (`{"type":
/// "roofline", ...}` or its arguments alone, as JSON text) leaves room for the KV cache (see
/// `servesim_engine::perf::roofline::smallest_tp_with_kv_room`); `undefined` if none does.
#[wasm_bindgen(js_name = smallestTensorParallel)]
pub fn smallest_tensor_parallel(timing_model_json: &str) -> Result<Option<u32>, JsError> {
    let v: serde_json::Value = serde_json::from_str(timing_model_json).map_err(js_err)?;
    servesim_sim::report::config::smallest_tp(&v).map_err(js_err)
}

/// The roofline's model and GPU presets with their figures, as JSON text: `{"models": [{id,
/// spec, params_billion, kv_bytes_per_token: {dtype: bytes}}], "gpus": [{id, spec}],
/// "kv_dtypes": [...], "weight_dtypes": [...]}`. The page looks figures up here rather than
/// computing them.
#[wasm_bindgen(js_name = presets)]
pub fn presets() -> Result<String, JsError> {
    serde_json::to_string(&servesim_sim::report::config::presets()).map_err(js_err)
}

/// Replays a Dynamo replay case (`{"trace", "replay": {run_trace_replay arguments}}`) to the
/// end and returns the bytes `servesim replay` prints (UTF-8 JSON, final newline included):
/// the same engine as the native command, for checking that wasm and native runs agree.
/// `trace` is the trace file's bytes, `files` maps NPZ profile paths (as the case writes them)
/// to their bytes. Bytes both ways, not strings: a 20k-request trace and its answer are
/// megabytes, and converting them to and from JS strings was 4 % of a replay.
#[cfg(feature = "full")]
#[wasm_bindgen(js_name = replayCase)]
pub fn replay_case(
    case_json: &str,
    source: &str,
    trace: &[u8],
    #[wasm_bindgen(unchecked_optional_param_type = "Record<string, Uint8Array>")] files: Option<Object>,
) -> Result<Vec<u8>, JsError> {
    let case = servesim_sim::replay::Case::from_json_str(case_json, source).map_err(js_err)?;
    let mut uploads = Uploads { trace: Some(trace), read: &mut |name| read_file(&files, name), kernels: KERNELS };
    // Its output has no time series: skip recording them, as the native replay does.
    let opts = BuildOptions { timeseries: false, ..BuildOptions::default() };
    let report = build(&Input::Case(case), &mut uploads, &opts).map_err(js_err)?.run();
    let mut out = Vec::new();
    report.write_json(&mut out).map_err(js_err)?;
    Ok(out)
}

/// The native CLI's writer, so the page's and `servesim`'s outputs are the same bytes (less
/// the final newline).
fn report_text(report: &RunReport) -> Result<String, JsError> {
    let mut out = Vec::new();
    report.write_json(&mut out).map_err(js_err)?;
    if out.last() == Some(&b'\n') {
        out.pop();
    }
    String::from_utf8(out).map_err(js_err)
}

fn read_file(files: &Option<Object>, name: &str) -> Result<Vec<u8>, SimError> {
    let value = match files {
        Some(obj) => Reflect::get(obj, &JsValue::from_str(name)).unwrap_or(JsValue::UNDEFINED),
        None => JsValue::UNDEFINED,
    };
    match value.dyn_into::<Uint8Array>() {
        Ok(bytes) => Ok(bytes.to_vec()),
        Err(_) => columns::no_files(name),
    }
}

/// Panics on purpose, so tests can check that a crash inside the engine is reported and the
/// page recovers (the worker calls it only when the page asks for `?test-crash`).
#[wasm_bindgen(js_name = panicForTesting)]
pub fn panic_for_testing() {
    panic!("a panic requested for testing");
}

// Finished holds the report inline: the handle is one per run and never moved in a loop.
#[allow(clippy::large_enum_variant)]
enum State {
    Running(Box<servesim_sim::Simulation>),
    Finished(RunReport),
    /// Only while moving from Running to Finished.
    Taken,
}

/// A simulation run, advanced in slices so a Web Worker can report progress and cancel.
#[wasm_bindgen]
pub struct Simulation {
    state: State,
    cancelled: bool,
    last_progress: f64,
    now_ms: f64,
    /// The scenario's effective configuration (`servesim run`'s `config`).
    config: serde_json::Value,
}

#[wasm_bindgen]
impl Simulation {
    /// Builds a run from scenario JSON. A `{"type": "trace"}` workload takes its Mooncake
    /// JSONL text from `trace` (errors name `path:line`). `interval_ms` sets the time-series
    /// window: absent keeps the scenario's `timeseries_interval_ms`, 0 picks about 80
    /// windows over the arrivals, a positive number is used as it is. `files` maps the names
    /// the scenario gives uploaded files (an NPZ profile's `path`) to their bytes
    /// (`Uint8Array`s).
    #[wasm_bindgen(constructor)]
    pub fn new(
        scenario_json: &str,
        #[wasm_bindgen(unchecked_optional_param_type = "string")] trace: Option<String>,
        #[wasm_bindgen(unchecked_optional_param_type = "number")] interval_ms: Option<f64>,
        #[wasm_bindgen(unchecked_optional_param_type = "Record<string, Uint8Array>")] files: Option<Object>,
    ) -> Result<Simulation, JsError> {
        let scenario = Scenario::from_json_str(scenario_json).map_err(js_err)?;
        let interval = match interval_ms {
            None => Interval::Configured,
            Some(0.0) => Interval::Auto,
            Some(ms) if ms.is_finite() && ms > 0.0 => Interval::Fixed(ms),
            Some(_) => return Err(JsError::new("interval_ms must be 0 (automatic) or a positive number")),
        };
        let mut uploads =
            Uploads { trace: trace.as_deref().map(str::as_bytes), read: &mut |name| read_file(&files, name), kernels: KERNELS };
        let opts = BuildOptions { interval, timeseries: true };
        let sim = build(&Input::Scenario(scenario.clone()), &mut uploads, &opts).map_err(js_err)?;
        let config = servesim_sim::report::config::effective_with(&scenario, Some(sim.kernels())).map_err(js_err)?;
        Ok(Simulation { state: State::Running(Box::new(sim)), cancelled: false, last_progress: 0.0, now_ms: 0.0, config })
    }

    /// Processes up to `max_timestamps` distinct virtual timestamps; `true` once the run is over
    /// (finished or cancelled).
    pub fn advance(&mut self, max_timestamps: u32) -> bool {
        let State::Running(sim) = &mut self.state else { return true };
        let done = sim.advance(max_timestamps.max(1) as usize);
        self.now_ms = sim.now_ms();
        self.last_progress = sim.progress();
        if done {
            self.finish();
        }
        done
    }

    /// Stops the run where it is: requests not finished stay `pending` and are left out of
    /// the summary.
    pub fn cancel(&mut self) {
        if matches!(self.state, State::Running(_)) {
            self.cancelled = true;
            self.finish();
        }
    }

    fn finish(&mut self) {
        self.state = match std::mem::replace(&mut self.state, State::Taken) {
            State::Running(sim) => {
                let mut report = sim.finish();
                report.config = Some(self.config.clone());
                State::Finished(report)
            }
            other => other,
        };
    }

    /// Fraction of the work done, in [0, 1].
    pub fn progress(&self) -> f64 {
        match &self.state {
            State::Running(sim) => sim.progress(),
            _ if self.cancelled => self.last_progress,
            _ => 1.0,
        }
    }

    /// Virtual time reached, in ms.
    #[wasm_bindgen(js_name = nowMs)]
    pub fn now_ms(&self) -> f64 {
        self.now_ms
    }

    #[wasm_bindgen(getter)]
    pub fn done(&self) -> bool {
        matches!(self.state, State::Finished(_))
    }

    #[wasm_bindgen(getter)]
    pub fn cancelled(&self) -> bool {
        self.cancelled
    }

    /// Number of requests in the workload.
    #[wasm_bindgen(js_name = numRequests)]
    pub fn num_requests(&self) -> usize {
        match &self.state {
            State::Finished(r) => r.collector.records.len(),
            _ => 0,
        }
    }

    fn report(&self) -> Result<&RunReport, JsError> {
        match &self.state {
            State::Finished(r) => Ok(r),
            _ => Err(JsError::new("the run is still going: advance it until it returns true, or cancel it")),
        }
    }

    /// The effective configuration (`servesim run`'s `config`): KV pool per rank, KV bytes
    /// per token, GPUs, settings without effect.
    #[wasm_bindgen(unchecked_return_type = "EffectiveConfig")]
    pub fn config(&self) -> Result<JsValue, JsError> {
        to_js(&self.config)
    }

    /// The summary: Dynamo's replay-summary keys (`mean_ttft_ms`, `p99_ttft_ms`, ...).
    #[wasm_bindgen(unchecked_return_type = "Summary")]
    pub fn summary(&self) -> Result<JsValue, JsError> {
        to_js(&self.report()?.summary())
    }

    /// What `servesim run` prints for this scenario: `{"config", "summary", "per_request",
    /// "not_completed"?}`, as JSON text.
    #[wasm_bindgen(js_name = reportJson)]
    pub fn report_json(&self) -> Result<String, JsError> {
        report_text(self.report()?)
    }

    /// Per-request records as columns of equal length (one `Float64Array` each, `NaN` where
    /// a time is absent): arrival_ms, input_length, first_token_ms, last_token_ms, end_ms,
    /// output_tokens, reused_input_tokens, admissions, status (0 pending, 1 completed,
    /// 2 rejected, 3 unschedulable), worker, ttst_ms.
    #[wasm_bindgen(unchecked_return_type = "RecordColumns")]
    pub fn records(&self) -> Result<Object, JsError> {
        Ok(columns_to_js(&columns::record_columns(&self.report()?.collector.records)))
    }

    /// CDFs of the completed requests' TTFT, TPOT and E2E latency, each `[xs, percentiles]`
    /// of at most about `max_points` points: `{ttft, tpot, e2e}`.
    #[wasm_bindgen(js_name = latencyCdfs, unchecked_return_type = "LatencyCdfs")]
    pub fn latency_cdfs(&self, max_points: usize) -> Result<Object, JsError> {
        let obj = Object::new();
        for (name, (xs, ys)) in columns::latency_cdfs(&self.report()?.collector.records, max_points) {
            let pair = Array::new();
            pair.push(&to_js(&xs)?);
            pair.push(&to_js(&ys)?);
            set(&obj, name, &pair.into());
        }
        Ok(obj)
    }

    /// Why each rejected or unschedulable request stopped: `[{request, status, reason}]`.
    #[wasm_bindgen(unchecked_return_type = "Reason[]")]
    pub fn reasons(&self) -> Result<JsValue, JsError> {
        let r = self.report()?;
        let list: Vec<_> = r
            .collector
            .reasons
            .iter()
            .map(|(i, why)| {
                let status = r.collector.records.get(*i as usize).map(|rec| rec.status).unwrap_or(Status::Pending);
                serde_json::json!({"request": i, "status": status, "reason": why})
            })
            .collect();
        to_js(&list)
    }

    /// The harness's time series: `{interval_ms, source, t_ms, cluster: {requests_completed,
    /// input_tok_s, output_tok_s, ttft_p50_ms, ttft_p99_ms, itl_p50_ms, itl_p99_ms}, ranks:
    /// [{pool, worker, dp_rank, columns: {running, waiting, kv_usage, prefix_hit_rate,
    /// preemptions}}]}`, every column a `Float64Array` aligned with `t_ms` (window ends; `NaN`
    /// where a window has no sample).
    #[wasm_bindgen(unchecked_return_type = "EngineTimeSeries")]
    pub fn timeseries(&self) -> Result<Object, JsError> {
        Ok(series_to_js(&columns::engine_series(self.report()?.timeseries())))
    }

    /// The scaling record of a run with `planner` or `scaling` (what `servesim run` prints as
    /// `planner`: ticks, scaling events, lifecycle), else `null`.
    #[wasm_bindgen(unchecked_return_type = "PlannerRecord | null")]
    pub fn planner(&self) -> Result<JsValue, JsError> {
        match &self.report()?.scaling {
            Some(s) => to_js(&s.to_json()),
            None => Ok(JsValue::NULL),
        }
    }

    /// Prompt tokens by KV tier per time-series window ([`tiers::tier_series`]), aligned
    /// with `timeseries().t_ms` (longer when a first token lies past its last window).
    #[wasm_bindgen(js_name = tierSeries, unchecked_return_type = "TierSeries")]
    pub fn tier_series(&self) -> Result<Object, JsError> {
        let r = self.report()?;
        let ts = r.timeseries();
        Ok(columns_to_js(&tiers::tier_series(&r.collector.records, ts.interval_ms, ts.t_ms.len())))
    }
}

fn series_to_js(s: &Series) -> Object {
    let obj = Object::new();
    set(&obj, "interval_ms", &JsValue::from_f64(s.interval_ms));
    set(&obj, "source", &JsValue::from_str(s.source));
    set(&obj, "t_ms", &Float64Array::from(&s.t_ms[..]).into());
    set(&obj, "cluster", &columns_to_js(&s.cluster).into());
    let ranks = Array::new();
    for rank in &s.ranks {
        let o = Object::new();
        set(&o, "pool", &JsValue::from_str(rank.pool));
        set(&o, "worker", &JsValue::from_f64(rank.worker as f64));
        set(&o, "dp_rank", &JsValue::from_f64(rank.dp_rank as f64));
        set(&o, "columns", &columns_to_js(&rank.columns).into());
        ranks.push(&o);
    }
    set(&obj, "ranks", &ranks.into());
    obj
}
