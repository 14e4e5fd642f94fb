//! Workloads: what arrives, when, with which prompt. A workload is a list of [`TraceRow`]s
//! (Mooncake's shape: a prompt is a chain of hash ids, each standing for `block_tokens`
//! identical tokens), read from a trace or generated from a seeded synthetic spec.

pub mod mooncake;
pub mod synthetic;

use servesim_engine::{Prompt, Request};

/// One request of a workload. Hash ids live in the workload's shared id pool.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceRow {
    /// Arrival in ms, as given (normalised later).
    pub timestamp: f64,
    pub input_length: u32,
    pub output_length: u32,
    ids_start: u32,
    ids_len: u32,
}

/// Rows plus the flat pool of their hash ids (one allocation for the whole trace).
#[derive(Clone, Debug, Default)]
pub struct Workload {
    pub rows: Vec<TraceRow>,
    /// Each id becomes a u32 token, so only its low 32 bits matter (as in the reference).
    ids: Vec<u32>,
    /// Tokens each hash id stands for.
    pub block_tokens: u32,
}

impl Workload {
    pub fn new(block_tokens: u32) -> Self {
        Workload { rows: Vec::new(), ids: Vec::new(), block_tokens }
    }

    pub fn push(&mut self, timestamp: f64, input_length: u32, output_length: u32, hash_ids: &[u64]) {
        let ids_start = self.ids.len() as u32;
        self.ids.extend(hash_ids.iter().map(|&h| h as u32));
        self.rows.push(TraceRow { timestamp, input_length, output_length, ids_start, ids_len: hash_ids.len() as u32 });
    }

    pub fn len(&self) -> usize {
        self.rows.len()
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

    /// The engine request for row `i`: each hash id becomes `block_tokens` copies of itself
    /// (as a u32 token), truncated to the input length.
    pub fn request(&self, i: usize, id: u64) -> Request {
        let row = &self.rows[i];
        let mut left = row.input_length;
        let runs = self.hash_ids(row).iter().map(|&h| {
            let n = self.block_tokens.min(left);
            left -= n;
            (h, n)
        });
        Request { id, prompt: Prompt::from_runs(runs), max_output: row.output_length }
    }
}
