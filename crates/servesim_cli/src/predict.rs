//! `servesim predict CONFIG.yaml`: a DynoSim predict file run as a scenario.

use crate::{print, read};
use servesim_sim::predict::{self, PathFiles};
use servesim_sim::{BuildOptions, Input, SimError, build};
use std::io::Write;
use std::path::Path;

pub fn run(config: &Path, sets: &[String], format: &str, scenario_only: bool) -> Result<(), SimError> {
    let text = read(config)?;
    let src = config.display().to_string();
    let mut files = PathFiles::beside(config).with_kernels(crate::kernel_dir());
    let m = predict::predict(&text, &src, sets, &mut files)?;
    if scenario_only {
        return print(|w| writeln!(w, "{}", serde_json::to_string_pretty(&m.scenario_json).unwrap_or_default()));
    }
    let opts = BuildOptions { timeseries: false, ..BuildOptions::default() };
    let mut report =
        build(&Input::Scenario(m.scenario.clone()), &mut files, &opts).map_err(|e| SimError::new(format!("{src}: {e}")))?.run();
    report.config = Some(servesim_sim::report::config::effective(&m.scenario)?);
    let summary = report.summary();
    let mut prediction = serde_json::json!({"gpus": m.gpus});
    if !m.derived.is_empty() {
        prediction["derived"] = serde_json::Value::Object(m.derived.clone());
    }
    if let Some(o) = &m.objective {
        prediction["objective"] = serde_json::to_value(o).unwrap_or_default();
        let missed = predict::search::missed(o, &summary);
        prediction["meets_objective"] = missed.is_none().into();
        if let Some(why) = missed {
            prediction["missed"] = why.into();
        }
    }
    if format == "table" {
        return print(|w| table(w, &prediction, &summary));
    }
    let mut body = Vec::new();
    report.write_json(&mut body).map_err(|e| SimError::new(e.to_string()))?;
    print(|w| {
        write!(w, "{{\"prediction\":{prediction},")?;
        w.write_all(&body[1..])
    })
}

/// The headline figures, one a line.
fn table(w: &mut dyn Write, prediction: &serde_json::Value, s: &serde_json::Map<String, serde_json::Value>) -> std::io::Result<()> {
    let rows: [(&str, &str, &str); 14] = [
        ("GPUs", "", "gpus"),
        ("requests", "num_requests", ""),
        ("completed", "completed_requests", ""),
        ("duration", "duration_ms", "ms"),
        ("output throughput", "output_throughput_tok_s", "tok/s"),
        ("request throughput", "request_throughput_rps", "req/s"),
        ("mean TTFT", "mean_ttft_ms", "ms"),
        ("p99 TTFT", "p99_ttft_ms", "ms"),
        ("mean ITL", "mean_itl_ms", "ms"),
        ("p99 ITL", "p99_itl_ms", "ms"),
        ("mean E2E", "mean_e2e_latency_ms", "ms"),
        ("p99 E2E", "p99_e2e_latency_ms", "ms"),
        ("prefix reuse", "prefix_cache_reused_ratio", ""),
        ("goodput", "goodput_output_throughput_tok_s", "tok/s"),
    ];
    for (label, key, unit) in rows {
        let v = if key.is_empty() { prediction.get(unit).cloned() } else { s.get(key).cloned() };
        let Some(v) = v.filter(|v| !v.is_null()) else { continue };
        let text = match v.as_f64() {
            Some(x) if x.fract() != 0.0 => format!("{x:.3}"),
            _ => v.to_string(),
        };
        let unit = if key.is_empty() { "" } else { unit };
        writeln!(w, "{label:<20} {text:>14} {unit}")?;
    }
    if let Some(m) = prediction.get("meets_objective") {
        writeln!(w, "{:<20} {:>14}", "meets objective", m.to_string())?;
    }
    if let Some(why) = prediction.get("missed").and_then(|v| v.as_str()) {
        writeln!(w, "{:<20} {why}", "missed")?;
    }
    Ok(())
}
