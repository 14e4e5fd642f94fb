//! The event stream of a run (`--events`, the page's inspector): every event in time order,
//! recorded from what the engines and the event bus really emit — KV events as the engines
//! publish them to the router, request lifecycle edges, and one `pass` per engine pass.
//!
//! Each line is one JSON object: `{"t_ms": ..., "kind": ..., ...}`. Recording is off unless a
//! sink is attached (`Simulation::with_events`); off, it costs one branch per hook.

use serde::Serialize;
use servesim_engine::KvBlocks;
use std::io::Write;

/// Where something happened: a pool (`aggregated`, `prefill`, `decode`), a worker in it (ids
/// are per pool) and its DP rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Place {
    pub pool: &'static str,
    pub worker: u32,
    pub dp_rank: u32,
}

/// One event; `kind` names it in the stream.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SimEvent<'a> {
    /// A request arrived (its prompt length includes a session's history).
    Arrived { request: u32, input_tokens: u32, output_tokens: u32 },
    /// The router sent it to a worker's rank: with KV-aware routing, the cost of every
    /// target (a worker's rank; lowest wins) and the prefix blocks it believed each cached.
    Routed {
        request: u32,
        #[serde(flatten)]
        at: Place,
        #[serde(skip_serializing_if = "Option::is_none")]
        costs: Option<&'a [f64]>,
        #[serde(skip_serializing_if = "Option::is_none")]
        overlap_blocks: Option<&'a [u32]>,
    },
    /// A pass admitted it, reusing `cached_tokens` prompt tokens from the prefix cache (told at
    /// the pass end, like everything the pass did; the pass says when it started).
    Admitted {
        request: u32,
        #[serde(flatten)]
        at: Place,
        cached_tokens: u32,
        readmission: bool,
    },
    /// vLLM took its blocks away to make room (it recomputes later).
    Preempted {
        request: u32,
        #[serde(flatten)]
        at: Place,
    },
    /// SGLang sent it back to the queue under decode memory pressure.
    Retracted {
        request: u32,
        #[serde(flatten)]
        at: Place,
    },
    /// Disaggregated: its prompt's KV starts moving to a decode rank, arriving after `ms`.
    TransferStart {
        request: u32,
        #[serde(flatten)]
        at: Place,
        ms: f64,
    },
    TransferEnd {
        request: u32,
        #[serde(flatten)]
        at: Place,
    },
    FirstToken {
        request: u32,
        #[serde(flatten)]
        at: Place,
        ttft_ms: f64,
    },
    /// It ended: completed, rejected or unschedulable (with the reason).
    Finished {
        request: u32,
        status: &'static str,
        output_tokens: u32,
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<&'a str>,
    },
    /// Blocks became cache-visible on a rank (sequence hashes, chained from `parent`).
    Stored {
        #[serde(flatten)]
        at: Place,
        parent: Option<u64>,
        hashes: Vec<u64>,
        /// `"host"` for the host tier of native offload; absent for the GPU's pool.
        #[serde(skip_serializing_if = "Option::is_none")]
        tier: Option<&'static str>,
    },
    /// The last copy of each block was evicted.
    Removed {
        #[serde(flatten)]
        at: Place,
        hashes: &'a [u64],
        #[serde(skip_serializing_if = "Option::is_none")]
        tier: Option<&'static str>,
    },
    /// A rank's pass: when it started, how long it took, what it computed, and its KV pool at
    /// its end.
    Pass {
        #[serde(flatten)]
        at: Place,
        start_ms: f64,
        duration_ms: f64,
        prefill_tokens: u64,
        decode_tokens: u64,
        batch: u32,
        waiting: u32,
        blocks: KvBlocks,
    },
}

#[derive(Serialize)]
struct Line<'a> {
    t_ms: f64,
    #[serde(flatten)]
    event: &'a SimEvent<'a>,
}

/// Where recorded events go.
pub trait EventSink {
    fn record(&mut self, t_ms: f64, event: &SimEvent<'_>);
}

/// Writes events as JSON lines; the first write error is kept (and later events dropped).
pub struct JsonLines<W: Write> {
    out: W,
    pub error: Option<std::io::Error>,
    pub written: u64,
}

impl<W: Write> JsonLines<W> {
    pub fn new(out: W) -> Self {
        JsonLines { out, error: None, written: 0 }
    }

    pub fn into_inner(self) -> (W, Option<std::io::Error>) {
        (self.out, self.error)
    }

    pub fn out_mut(&mut self) -> &mut W {
        &mut self.out
    }
}

/// One event as its line (without the newline).
pub fn line(t_ms: f64, event: &SimEvent<'_>) -> String {
    serde_json::to_string(&Line { t_ms, event }).expect("events serialize")
}

impl<W: Write> EventSink for JsonLines<W> {
    fn record(&mut self, t_ms: f64, event: &SimEvent<'_>) {
        if self.error.is_some() {
            return;
        }
        let result = serde_json::to_writer(&mut self.out, &Line { t_ms, event })
            .map_err(std::io::Error::from)
            .and_then(|()| self.out.write_all(b"\n"));
        match result {
            Ok(()) => self.written += 1,
            Err(e) => self.error = Some(e),
        }
    }
}

/// Keeps the events of a time window in memory (the page's inspector records a window of a
/// large run), at most `max` of them.
pub struct Window {
    pub from_ms: f64,
    pub to_ms: f64,
    pub max: usize,
    pub lines: Vec<String>,
    /// Events in the window left out past `max`.
    pub dropped: u64,
}

impl EventSink for Window {
    fn record(&mut self, t_ms: f64, event: &SimEvent<'_>) {
        if t_ms < self.from_ms || t_ms > self.to_ms {
            return;
        }
        if self.lines.len() >= self.max {
            self.dropped += 1;
            return;
        }
        self.lines.push(line(t_ms, event));
    }
}

/// A sink shared with the caller, who reads it back after the run (its writer, its error).
impl<S: EventSink> EventSink for std::rc::Rc<std::cell::RefCell<S>> {
    fn record(&mut self, t_ms: f64, event: &SimEvent<'_>) {
        self.borrow_mut().record(t_ms, event);
    }
}
