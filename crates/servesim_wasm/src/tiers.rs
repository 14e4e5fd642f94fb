//! Where prompts came from, over time, by KV tier: the page's per-tier hit and onboard charts.
//!
//! Built from the per-request records after a run (nothing is recorded during it, so runs
//! without offload, and every existing output, are unchanged). A request counts in the
//! window of its first token, with its first admission's prompt split into tokens found in
//! the GPU's prefix cache, tokens loaded from the host tier (G2; they include what G2 first
//! promoted from G3), and tokens computed.

use crate::columns::Columns;
use servesim_sim::report::RequestRecord;

/// Per window of `interval_ms` (window k is [k·Δ, (k+1)·Δ), like the time series'):
/// `gpu_hit_tokens`, `host_hit_tokens`, `computed_tokens` (prompt tokens of the requests
/// whose first token came in the window), `host_onboard_tok_s` (host tokens per second) and
/// `host_onboard_requests` (requests whose first admission waited for a host load). Columns
/// have `windows` entries, or more when a first token lies past them.
pub fn tier_series(records: &[RequestRecord], interval_ms: f64, windows: usize) -> Columns {
    let mut gpu = vec![0.0; windows];
    let mut host = vec![0.0; windows];
    let mut computed = vec![0.0; windows];
    let mut loads = vec![0.0; windows];
    if !(interval_ms.is_finite() && interval_ms > 0.0) {
        return columns(gpu, host, computed, loads, 1.0);
    }
    for r in records {
        let (Some(first), Some(reused)) = (r.first_token_ms.filter(|t| t.is_finite()), r.first_admission_reused_tokens) else {
            continue;
        };
        let k = (first / interval_ms).floor().max(0.0) as usize;
        if k >= gpu.len() {
            for v in [&mut gpu, &mut host, &mut computed, &mut loads] {
                v.resize(k + 1, 0.0);
            }
        }
        let from_host = r.host_reused_input_tokens.unwrap_or(0).min(reused);
        gpu[k] += f64::from(reused - from_host);
        host[k] += f64::from(from_host);
        computed[k] += f64::from(r.input_length.saturating_sub(reused));
        if from_host > 0 {
            loads[k] += 1.0;
        }
    }
    columns(gpu, host, computed, loads, interval_ms / 1000.0)
}

fn columns(gpu: Vec<f64>, host: Vec<f64>, computed: Vec<f64>, loads: Vec<f64>, secs: f64) -> Columns {
    let rate = host.iter().map(|x| x / secs).collect();
    vec![
        ("gpu_hit_tokens", gpu),
        ("host_hit_tokens", host),
        ("computed_tokens", computed),
        ("host_onboard_tok_s", rate),
        ("host_onboard_requests", loads),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use servesim_sim::report::Status;

    fn rec(first: Option<f64>, input: u32, reused: Option<u32>, host: Option<u32>) -> RequestRecord {
        RequestRecord {
            last_token_ms: first,
            output_tokens: 1,
            arrival_ms: 0.0,
            first_token_ms: first,
            ttst_ms: None,
            end_ms: first,
            input_length: input,
            reused_input_tokens: reused.unwrap_or(0),
            first_admission_reused_tokens: reused,
            decode_reused_tokens: 0,
            admissions: 1,
            readmissions: 0,
            status: Status::Completed,
            worker: 0,
            dp_rank: 0,
            router_overlap_blocks: 0,
            host_reused_input_tokens: host,
        }
    }

    fn col<'a>(c: &'a Columns, name: &str) -> &'a [f64] {
        &c.iter().find(|(n, _)| *n == name).expect("column").1
    }

    #[test]
    fn splits_each_prompt_by_tier_in_its_first_token_window() {
        let records = [
            rec(Some(100.0), 1000, Some(0), None),
            rec(Some(900.0), 1000, Some(512), Some(512)),
            rec(Some(1500.0), 2048, Some(1024), Some(256)),
            rec(None, 4096, None, None),
        ];
        let c = tier_series(&records, 1000.0, 2);
        assert_eq!(col(&c, "gpu_hit_tokens"), [0.0, 768.0]);
        assert_eq!(col(&c, "host_hit_tokens"), [512.0, 256.0]);
        assert_eq!(col(&c, "computed_tokens"), [1488.0, 1024.0]);
        assert_eq!(col(&c, "host_onboard_tok_s"), [512.0, 256.0]);
        assert_eq!(col(&c, "host_onboard_requests"), [1.0, 1.0]);
        // Half-second windows: rates double; a first token past the windows extends them.
        let c = tier_series(&records, 500.0, 1);
        assert_eq!(col(&c, "host_onboard_tok_s"), [0.0, 1024.0, 0.0, 512.0]);
        assert!(c.iter().all(|(_, v)| v.len() == 4));
    }

    #[test]
    fn no_interval_gives_empty_columns() {
        let c = tier_series(&[rec(Some(1.0), 10, Some(0), None)], 0.0, 0);
        assert!(c.iter().all(|(_, v)| v.is_empty()));
    }
}
