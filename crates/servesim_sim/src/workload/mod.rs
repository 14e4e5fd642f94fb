//! Workloads: what arrives, when, with which prompt. A workload is a list of [`TraceRow`]s
//! (Mooncake's shape: a prompt is a chain of hash ids, each standing for `block_tokens`
//! identical tokens), read from a trace or generated from a seeded synthetic spec, plus, when
//! rows are turns of multi-turn sessions, their [`Sessions`]. The [`driver`] decides when each
//! row arrives (open or closed loop).

pub mod agentic;
pub mod driver;
pub mod formats;
pub mod mooncake;
pub mod synthetic;

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use servesim_engine::sequence::Image;
use servesim_engine::{Prompt, Request};

/// A trace's format (`trace_format`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum TraceFormat {
    #[default]
    #[serde(rename = "mooncake")]
    Mooncake,
    #[serde(rename = "mooncake-delta", alias = "mooncake_delta")]
    MooncakeDelta,
    #[serde(rename = "applied_compute_agentic")]
    AppliedComputeAgentic,
    #[serde(rename = "dynamo")]
    Dynamo,
    /// Request graphs (`workload::agentic`).
    #[serde(rename = "agentic_mooncake", alias = "agentic-mooncake")]
    AgenticMooncake,
}

impl TraceFormat {
    pub fn parse(name: &str) -> Result<TraceFormat, String> {
        match name {
            "mooncake" => Ok(TraceFormat::Mooncake),
            "mooncake-delta" | "mooncake_delta" => Ok(TraceFormat::MooncakeDelta),
            "applied_compute_agentic" => Ok(TraceFormat::AppliedComputeAgentic),
            "dynamo" => Ok(TraceFormat::Dynamo),
            "agentic_mooncake" | "agentic-mooncake" => Ok(TraceFormat::AgenticMooncake),
            "weka" => Err("`weka` (Weka/AgentX agent traces) is not read by servesim yet; convert it to agentic_mooncake".into()),
            other => {
                Err(format!("unknown `{other}`, expected mooncake, mooncake-delta, applied_compute_agentic, dynamo or agentic_mooncake"))
            }
        }
    }

    /// Whether replaying it needs a closed loop (its sessions carry no start times).
    pub fn needs_closed_loop(self) -> bool {
        self == TraceFormat::AppliedComputeAgentic
    }
}

/// One request of a workload. Hash ids live in the workload's shared id pool.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceRow {
    /// Arrival in ms, as given (normalised later); NaN when the row has none (a later turn,
    /// or a closed-loop trace).
    pub timestamp: f64,
    pub input_length: u32,
    pub output_length: u32,
    ids_start: u32,
    ids_len: u32,
}

/// Rows that are turns of sessions: a later turn arrives when the previous one ends, plus its
/// think time. Absent when every row is a request of its own.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sessions {
    /// Per session, in order of first appearance: its name (`session_id`, or `request_<line>`).
    pub names: Vec<String>,
    /// Per session: its first row.
    pub first: Vec<u32>,
    /// Per row: its session.
    pub session: Vec<u32>,
    /// Per row: its turn, from 0.
    pub turn: Vec<u32>,
    /// Per row: the next turn's row, or `u32::MAX` for a session's last.
    pub next: Vec<u32>,
    /// Per row: think time before it, in ms, after the previous turn ends (0 for first turns).
    pub delay_ms: Vec<f64>,
    /// Per session: its latest row so far (while rows are added).
    last: Vec<u32>,
}

impl Sessions {
    /// Adds `row` (the next row of the workload) as the next turn of session `s`, a new
    /// session named `name` when `s` is the number of sessions so far; `delay_ms` is its
    /// think time (0 for a first turn).
    pub fn push(&mut self, s: u32, name: impl FnOnce() -> String, row: u32, delay_ms: f64) {
        debug_assert_eq!(row as usize, self.session.len(), "rows are added in order");
        let turn = if s as usize == self.names.len() {
            self.names.push(name());
            self.first.push(row);
            self.last.push(row);
            0
        } else {
            let prev = std::mem::replace(&mut self.last[s as usize], row);
            self.next[prev as usize] = row;
            self.turn[prev as usize] + 1
        };
        self.session.push(s);
        self.turn.push(turn);
        self.next.push(u32::MAX);
        self.delay_ms.push(delay_ms);
    }

    /// Whether some session has more than one turn.
    pub fn multi_turn(&self) -> bool {
        self.next.iter().any(|&n| n != u32::MAX)
    }
}

/// Rows plus the flat pool of their hash ids (one allocation for the whole trace).
#[derive(Clone, Debug, Default)]
pub struct Workload {
    pub rows: Vec<TraceRow>,
    /// Each id becomes a u32 token, so only its low 32 bits matter (as in the reference).
    ids: Vec<u32>,
    /// Tokens each hash id stands for.
    pub block_tokens: u32,
    pub sessions: Option<Sessions>,
    /// A later turn's row holds only the new part of its prompt: the request's prompt is the
    /// session's history (earlier prompts and the outputs they generated) plus it
    /// (`mooncake-delta`).
    pub cumulative: bool,
    /// Prompts built when their request was dispatched (cumulative sessions), by row.
    prompts: FxHashMap<u32, Prompt>,
    /// Rows' images (multimodal requests), by row; empty for a text-only workload, which then
    /// builds its requests exactly as before.
    images: FxHashMap<u32, Vec<Image>>,
    /// Rows that are requests of an agentic graph (each waits for the requests its edges
    /// name); absent otherwise.
    pub graph: Option<Box<agentic::Graph>>,
}

impl Workload {
    pub fn new(block_tokens: u32) -> Self {
        Workload { block_tokens, ..Workload::default() }
    }

    pub fn push(&mut self, timestamp: f64, input_length: u32, output_length: u32, hash_ids: &[u64]) {
        let ids_start = self.ids.len() as u32;
        self.ids.extend(hash_ids.iter().map(|&h| h as u32));
        self.rows.push(TraceRow { timestamp, input_length, output_length, ids_start, ids_len: hash_ids.len() as u32 });
    }

    /// Renames the hash ids 0, 1, 2, … in order of first appearance in the file, as the
    /// reference's trace loader does before it makes tokens of them. Only what equals what
    /// matters to caching, so this changes no run but the block hashes' values; native
    /// offload's host tier breaks recency ties by those values, so offload runs need the
    /// reference's.
    pub fn intern_ids(&mut self) {
        let mut names: FxHashMap<u32, u32> = FxHashMap::default();
        for id in &mut self.ids {
            let next = names.len() as u32;
            *id = *names.entry(*id).or_insert(next);
        }
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Gives the latest row pushed its images (placed by their text offsets).
    pub fn set_images(&mut self, images: Vec<Image>) {
        if !images.is_empty() {
            self.images.insert(self.rows.len() as u32 - 1, images);
        }
    }

    /// Whether some request carries images.
    pub fn has_images(&self) -> bool {
        !self.images.is_empty()
    }

    /// Row `i`'s images (empty for text only).
    pub fn images(&self, i: usize) -> &[Image] {
        if self.images.is_empty() {
            return &[];
        }
        self.images.get(&(i as u32)).map_or(&[], Vec::as_slice)
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    pub fn hash_ids(&self, row: &TraceRow) -> &[u32] {
        &self.ids[row.ids_start as usize..(row.ids_start + row.ids_len) as usize]
    }

    /// Arrival times from the earliest arrival, divided by `speedup`, and the order requests
    /// arrive in (ties keep file order).
    pub fn arrivals(&self, speedup: f64) -> (Vec<f64>, Vec<u32>) {
        let t0 = self.rows.iter().map(|r| r.timestamp).fold(f64::INFINITY, f64::min);
        let times: Vec<f64> = self.rows.iter().map(|r| (r.timestamp - t0) / speedup).collect();
        let mut order: Vec<u32> = (0..self.rows.len() as u32).collect();
        order.sort_by(|&a, &b| times[a as usize].total_cmp(&times[b as usize]).then(a.cmp(&b)));
        (times, order)
    }

    /// The prompt runs row `i` itself describes: each hash id becomes `block_tokens` copies of
    /// itself (as a u32 token), truncated to the input length.
    pub fn own_runs(&self, i: usize) -> impl Iterator<Item = (u32, u32)> + '_ {
        let row = &self.rows[i];
        let mut left = row.input_length;
        self.hash_ids(row).iter().map(move |&h| {
            let n = self.block_tokens.min(left);
            left -= n;
            (h, n)
        })
    }

    /// The engine request for row `i`.
    pub fn request(&self, i: usize, id: u64) -> Request {
        let row = &self.rows[i];
        let prompt = match self.prompts.get(&(i as u32)) {
            Some(p) => p.clone(),
            None if self.images.is_empty() => Prompt::from_runs(self.own_runs(i)),
            None => Prompt::with_images(self.own_runs(i), self.images(i)),
        };
        Request { id, prompt, max_output: row.output_length }
    }

    /// Row `i`'s request takes `prompt` (its session's history and its own part).
    pub fn set_prompt(&mut self, i: u32, prompt: Prompt) {
        self.prompts.insert(i, prompt);
    }

    /// The prompt length of row `i`'s request (its history included, once dispatched; its
    /// image tokens included).
    pub fn input_length(&self, i: usize) -> u32 {
        match self.prompts.get(&(i as u32)) {
            Some(p) => p.len(),
            None => self.rows[i].input_length + self.images(i).iter().map(|m| m.tokens).sum::<u32>(),
        }
    }

    /// Row `i`'s request has ended: its built prompt is not needed any more.
    pub fn drop_prompt(&mut self, i: u32) {
        self.prompts.remove(&i);
    }
}
