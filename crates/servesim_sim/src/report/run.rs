//! The finished run and how it is written: the case-file answer `{"summary", "per_request",
//! "not_completed"?}`, streamed row by row.

use super::timeseries::TimeSeries;
use super::{Collector, RequestRecord, Status};
use serde_json::{Value, json};

/// A per-request column of the answer, by the name the reference's case files give it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Column {
    FirstTokenMs,
    EndMs,
    OutputTokens,
    ReusedInputTokens,
    Readmissions,
    ArrivalMs,
    /// Prompt tokens the router believed its chosen worker cached (KV-aware routing), at the
    /// request's first routing decision.
    RouterOverlapTokens,
    InputLength,
    Worker,
    /// Prompt tokens the first admission took from the host tier (native offload; null
    /// without it).
    HostReusedInputTokens,
    /// The data-parallel rank of the worker that served it (0 without DP ranks).
    DpRank,
}

impl Column {
    /// The conformance cases' five columns.
    pub const DEFAULT: [Column; 5] =
        [Column::FirstTokenMs, Column::EndMs, Column::OutputTokens, Column::ReusedInputTokens, Column::Readmissions];

    const NAMES: [(&'static str, Column); 11] = [
        ("first_token_ms", Column::FirstTokenMs),
        ("end_ms", Column::EndMs),
        ("output_tokens", Column::OutputTokens),
        ("reused_input_tokens", Column::ReusedInputTokens),
        ("readmissions", Column::Readmissions),
        ("arrival_ms", Column::ArrivalMs),
        ("router_overlap_tokens", Column::RouterOverlapTokens),
        ("input_length", Column::InputLength),
        ("worker", Column::Worker),
        ("host_reused_input_tokens", Column::HostReusedInputTokens),
        ("dp_rank", Column::DpRank),
    ];

    pub fn parse(name: &str) -> Result<Column, String> {
        Self::NAMES.iter().find(|(n, _)| *n == name).map(|(_, c)| *c).ok_or_else(|| {
            let known: Vec<&str> = Self::NAMES.iter().map(|(n, _)| *n).collect();
            format!("unknown per-request column `{name}`, expected one of {}", known.join(", "))
        })
    }

    fn value(self, r: &RequestRecord, block_size: u32) -> Value {
        match self {
            Column::FirstTokenMs => json!(r.first_token_ms),
            Column::EndMs => json!(r.end_ms),
            Column::OutputTokens => json!(r.output_tokens),
            Column::ReusedInputTokens => json!(r.reused_input_tokens),
            Column::Readmissions => json!(r.readmissions),
            Column::ArrivalMs => json!(r.arrival_ms),
            Column::RouterOverlapTokens => json!(r.router_overlap_blocks * block_size),
            Column::InputLength => json!(r.input_length),
            Column::Worker => json!(r.worker),
            Column::HostReusedInputTokens => json!(r.host_reused_input_tokens),
            Column::DpRank => json!(r.dp_rank),
        }
    }
}

/// The finished run: summary, per-request records, time series; and for a scenario, its
/// effective configuration (`config`, see [`super::config`]), written first.
#[derive(Debug)]
pub struct RunReport {
    pub collector: Collector,
    pub timeseries: TimeSeries,
    /// The per-request columns written (the conformance cases' five by default).
    pub columns: Vec<Column>,
    /// Tokens per KV block of the routed pool (to turn the router's overlap into tokens).
    pub block_size: u32,
    /// Scaling during the run (planner ticks, events, lifecycle operations), if any.
    pub scaling: Option<crate::planner::ScalingRecord>,
    /// What the engines ran with (a scenario's effective configuration), printed first.
    pub config: Option<serde_json::Value>,
}

impl RunReport {
    pub fn summary(&self) -> serde_json::Map<String, Value> {
        self.collector.summary()
    }

    pub fn timeseries(&self) -> &TimeSeries {
        &self.timeseries
    }

    /// One row per request, in trace order: the chosen columns, or nulls for a request that
    /// did not end (a run cut off by `max_sim_time_ms`, or cancelled).
    fn row(&self, r: &RequestRecord) -> Value {
        if r.status == Status::Pending {
            return Value::Array(vec![Value::Null; self.columns.len()]);
        }
        Value::Array(self.columns.iter().map(|c| c.value(r, self.block_size)).collect())
    }

    pub fn per_request_rows(&self) -> Vec<Value> {
        self.collector.records.iter().map(|r| self.row(r)).collect()
    }

    /// Writes the same answer as [`RunReport::to_json`], row by row, without building it in
    /// memory (a million-request run stays small).
    pub fn write_json<W: std::io::Write + ?Sized>(&self, w: &mut W) -> std::io::Result<()> {
        w.write_all(b"{")?;
        if let Some(config) = &self.config {
            write!(w, "\"config\":")?;
            serde_json::to_writer(&mut *w, config)?;
            w.write_all(b",")?;
        }
        write!(w, "\"summary\":")?;
        serde_json::to_writer(&mut *w, &self.summary())?;
        write!(w, ",\"per_request\":[")?;
        let default = self.columns == Column::DEFAULT;
        for (k, r) in self.collector.records.iter().enumerate() {
            if k > 0 {
                w.write_all(b",")?;
            }
            if default && r.status != Status::Pending {
                // The common case, written without building a JSON value per row.
                let row = (r.first_token_ms, r.end_ms, r.output_tokens, r.reused_input_tokens, r.readmissions);
                serde_json::to_writer(&mut *w, &row)?;
            } else {
                serde_json::to_writer(&mut *w, &self.row(r))?;
            }
        }
        w.write_all(b"]")?;
        if let Some(list) = self.to_json_not_completed() {
            write!(w, ",\"not_completed\":")?;
            serde_json::to_writer(&mut *w, &list)?;
        }
        if let Some(s) = &self.scaling {
            write!(w, ",\"planner\":")?;
            serde_json::to_writer(&mut *w, &s.to_json())?;
        }
        w.write_all(b"}\n")
    }

    fn to_json_not_completed(&self) -> Option<Value> {
        if self.collector.reasons.is_empty() {
            return None;
        }
        let list: Vec<_> = self
            .collector
            .reasons
            .iter()
            .map(|(i, why)| json!({"request": i, "trace_line": i + 1, "status": self.collector.records[*i as usize].status, "reason": why}))
            .collect();
        Some(list.into())
    }

    /// The case-file answer: `{"summary": ..., "per_request": ...}`, plus the reasons of any
    /// request that could not run.
    pub fn to_json(&self) -> Value {
        let mut v = json!({
            "summary": self.summary(),
            "per_request": self.per_request_rows(),
        });
        if let Some(config) = &self.config {
            v["config"] = config.clone();
        }
        if let Some(list) = self.to_json_not_completed() {
            v["not_completed"] = list;
        }
        if let Some(s) = &self.scaling {
            v["planner"] = s.to_json();
        }
        v
    }
}
