//! The page's inspector: a run recorded into the event stream, by the same `SimEvent` /
//! `EventSink` code and the same JSON-lines writer as `servesim run --events`, so what the
//! inspector shows and what its download holds are the CLI's bytes for the same scenario.
//!
//! A large run is recorded over a time window only, and to at most a number of bytes: the
//! recording says which, so the page can say so.

use crate::columns::{KERNELS, Uploads};
use crate::{js_err, read_file};
use js_sys::Object;
use servesim_sim::report::events::{EventSink, JsonLines, SimEvent};
use servesim_sim::{BuildOptions, Input, Scenario, build};
use std::cell::RefCell;
use std::rc::Rc;
use wasm_bindgen::prelude::*;

/// JSON lines of the events whose time is in `[from_ms, to_ms]`, up to `max_bytes`.
struct Windowed {
    out: JsonLines<Vec<u8>>,
    from_ms: f64,
    to_ms: f64,
    max_bytes: usize,
    /// Events outside the window, and events in it left out past `max_bytes`.
    outside: u64,
    dropped: u64,
    /// Time of the last event kept.
    last_ms: f64,
}

impl EventSink for Windowed {
    fn record(&mut self, t_ms: f64, event: &SimEvent<'_>) {
        if t_ms < self.from_ms || t_ms > self.to_ms {
            self.outside += 1;
            return;
        }
        if self.dropped > 0 || self.out.out_mut().len() >= self.max_bytes {
            // Once full, nothing later is kept either: the recording stays a time prefix.
            self.dropped += 1;
            return;
        }
        self.out.record(t_ms, event);
        self.last_ms = t_ms;
    }
}

/// A run being recorded, advanced in slices like [`crate::Simulation`].
#[wasm_bindgen]
pub struct EventRecording {
    sim: Option<Box<servesim_sim::Simulation>>,
    sink: Rc<RefCell<Windowed>>,
    requests: usize,
    done: bool,
    now_ms: f64,
}

#[wasm_bindgen]
impl EventRecording {
    /// Builds the run of a scenario (as [`crate::Simulation::new`] takes it) with its event
    /// stream recorded: every event with `t_ms` in `[from_ms, to_ms]` (`to_ms` may be
    /// `Infinity`), until the lines reach `max_bytes`.
    #[wasm_bindgen(constructor)]
    pub fn new(
        scenario_json: &str,
        trace: Option<String>,
        #[wasm_bindgen(unchecked_param_type = "Record<string, Uint8Array> | null | undefined")] files: Option<Object>,
        from_ms: f64,
        to_ms: f64,
        max_bytes: usize,
    ) -> Result<EventRecording, JsError> {
        if from_ms.is_nan() || to_ms.is_nan() || from_ms > to_ms {
            return Err(JsError::new("the recording window must have from_ms <= to_ms"));
        }
        let scenario = Scenario::from_json_str(scenario_json).map_err(js_err)?;
        let mut uploads =
            Uploads { trace: trace.as_deref().map(str::as_bytes), read: &mut |name| read_file(&files, name), kernels: KERNELS };
        // As `servesim run --events` builds it (no time series: they change no event).
        let opts = BuildOptions { timeseries: false, ..BuildOptions::default() };
        let sim = build(&Input::Scenario(scenario), &mut uploads, &opts).map_err(js_err)?;
        let requests = sim.num_requests();
        let sink = Rc::new(RefCell::new(Windowed {
            out: JsonLines::new(Vec::new()),
            from_ms,
            to_ms,
            max_bytes,
            outside: 0,
            dropped: 0,
            last_ms: f64::NAN,
        }));
        let sim = sim.with_events(Box::new(sink.clone()));
        Ok(EventRecording { sim: Some(Box::new(sim)), sink, requests, done: false, now_ms: 0.0 })
    }

    /// Processes up to `max_timestamps` virtual timestamps; `true` once the run is over. A
    /// run that has passed the window stops there (nothing later would be kept).
    pub fn advance(&mut self, max_timestamps: u32) -> bool {
        let Some(sim) = self.sim.as_mut() else { return true };
        let done = sim.advance(max_timestamps.max(1) as usize);
        self.now_ms = sim.now_ms();
        let full = self.sink.borrow().dropped > 0;
        if done || self.now_ms > self.sink.borrow().to_ms || full {
            self.done = done;
            // Finishing records the run's last lines (KV events and blocks let go after the
            // last pass), as `servesim run` does; the sink keeps them, the report is dropped.
            if let Some(sim) = self.sim.take() {
                drop(sim.finish());
            }
            return true;
        }
        false
    }

    pub fn progress(&self) -> f64 {
        self.sim.as_ref().map_or(1.0, |s| s.progress())
    }

    /// Virtual time reached, ms.
    #[wasm_bindgen(js_name = nowMs)]
    pub fn now_ms(&self) -> f64 {
        self.now_ms
    }

    /// Requests in the workload.
    #[wasm_bindgen(getter)]
    pub fn requests(&self) -> usize {
        self.requests
    }

    /// Whether the whole run was recorded: it ran to its end, no event fell outside the
    /// window and none was left out. Then the lines are exactly `servesim run --events`'s file.
    #[wasm_bindgen(getter)]
    pub fn complete(&self) -> bool {
        let s = self.sink.borrow();
        self.done && s.outside == 0 && s.dropped == 0
    }

    /// Events left out past the byte limit (the run stopped recording there).
    #[wasm_bindgen(getter)]
    pub fn dropped(&self) -> f64 {
        self.sink.borrow().dropped as f64
    }

    /// Events recorded.
    #[wasm_bindgen(getter)]
    pub fn lines(&self) -> f64 {
        self.sink.borrow().out.written as f64
    }

    /// Time of the last event kept (`NaN`: none).
    #[wasm_bindgen(getter, js_name = lastMs)]
    pub fn last_ms(&self) -> f64 {
        self.sink.borrow().last_ms
    }

    /// The recorded lines, newline-terminated UTF-8 (the `--events` file's bytes), moved out.
    #[wasm_bindgen(js_name = takeBytes)]
    pub fn take_bytes(&mut self) -> Result<Vec<u8>, JsError> {
        let mut s = self.sink.borrow_mut();
        if let Some(e) = s.out.error.take() {
            return Err(js_err(e));
        }
        Ok(std::mem::take(s.out.out_mut()))
    }
}
