//! The finished run and how it is written: the case-file answer `{"summary", "per_request",
//! "not_completed"?}`, streamed row by row.

use super::Collector;
use super::timeseries::TimeSeries;

/// The finished run: summary, per-request records, time series; and for a scenario, its
/// effective configuration (`config`, see [`super::config`]), written first.
#[derive(Debug)]
pub struct RunReport {
    pub collector: Collector,
    pub timeseries: TimeSeries,
    pub config: Option<serde_json::Value>,
}

impl RunReport {
    pub fn summary(&self) -> serde_json::Map<String, serde_json::Value> {
        self.collector.summary()
    }

    pub fn timeseries(&self) -> &TimeSeries {
        &self.timeseries
    }

    /// `[first_token_ms, end_ms, output_tokens, reused_input_tokens, readmissions]` per
    /// request, in trace order (the conformance cases' columns).
    pub fn per_request_rows(&self) -> Vec<serde_json::Value> {
        use serde_json::json;
        self.collector
            .records
            .iter()
            .map(|r| json!([r.first_token_ms, r.end_ms, r.output_tokens, r.reused_input_tokens, r.readmissions]))
            .collect()
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
        for (k, r) in self.collector.records.iter().enumerate() {
            if k > 0 {
                w.write_all(b",")?;
            }
            let row = (r.first_token_ms, r.end_ms, r.output_tokens, r.reused_input_tokens, r.readmissions);
            serde_json::to_writer(&mut *w, &row)?;
        }
        w.write_all(b"]")?;
        if let Some(list) = self.to_json_not_completed() {
            write!(w, ",\"not_completed\":")?;
            serde_json::to_writer(&mut *w, &list)?;
        }
        w.write_all(b"}\n")
    }

    fn to_json_not_completed(&self) -> Option<serde_json::Value> {
        if self.collector.reasons.is_empty() {
            return None;
        }
        let list: Vec<_> = self
            .collector
            .reasons
            .iter()
            .map(|(i, why)| serde_json::json!({"request": i, "trace_line": i + 1, "status": self.collector.records[*i as usize].status, "reason": why}))
            .collect();
        Some(list.into())
    }

    /// The case-file answer: `{"summary": ..., "per_request": ...}`, plus the reasons of any
    /// request that could not run.
    pub fn to_json(&self) -> serde_json::Value {
        let mut v = serde_json::json!({
            "summary": self.summary(),
            "per_request": self.per_request_rows(),
        });
        if let Some(config) = &self.config {
            v["config"] = config.clone();
        }
        if let Some(list) = self.to_json_not_completed() {
            v["not_completed"] = list;
        }
        v
    }
}
