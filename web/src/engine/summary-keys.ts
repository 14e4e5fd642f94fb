// Every key of the engine's summary, as the package declares them (`Summary` in
// crates/servesim_wasm/src/bindings.d.ts): tsc holds this table to the type, and
// summary.wasm.test.ts holds real summaries to the table, so a renamed or new key fails a
// test instead of hiding behind a string index.

import type { Summary, SummaryMeasure, SummaryStat } from '../../pkg/servesim_wasm.js';

type Need = 'required' | 'optional';
type StatKey = `${SummaryStat}_${SummaryMeasure}`;
type TrajectoryStatKey = `${SummaryStat}_trajectory_e2e_latency_ms`;

/** Both ways: a list that leaves out a member, or names one the union lacks, fails to compile. */
type Exactly<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;

export const SUMMARY_STATS = ['mean', 'min', 'max', 'median', 'p75', 'p90', 'p95', 'p99', 'std'] as const;
export const SUMMARY_MEASURES = ['ttft_ms', 'ttst_ms', 'tpot_ms', 'itl_ms', 'e2e_latency_ms', 'output_token_throughput_per_user'] as const;
const statsExact: Exactly<(typeof SUMMARY_STATS)[number], SummaryStat> = true;
const measuresExact: Exactly<(typeof SUMMARY_MEASURES)[number], SummaryMeasure> = true;

const FIXED: { [K in Exclude<keyof Summary, StatKey | TrajectoryStatKey>]-?: Need } = {
  num_requests: 'required',
  completed_requests: 'required',
  rejected_requests: 'required',
  unschedulable_requests: 'required',
  num_preemptions: 'required',
  num_retractions: 'required',
  total_input_tokens: 'required',
  total_output_tokens: 'required',
  committed_prefill_tokens: 'required',
  duration_ms: 'required',
  request_throughput_rps: 'required',
  input_throughput_tok_s: 'required',
  output_throughput_tok_s: 'required',
  total_throughput_tok_s: 'required',
  prefill_worker_seconds: 'required',
  decode_worker_seconds: 'required',
  prefill_gpus_per_worker: 'required',
  decode_gpus_per_worker: 'required',
  gpu_hours: 'required',
  total_gpus: 'required',
  gpu_seconds: 'required',
  gpu_hour_usd: 'optional',
  cost_usd: 'optional',
  cost_per_million_output_tokens_usd: 'optional',
  power_coverage: 'optional',
  power_w: 'optional',
  energy_per_output_token_j: 'optional',
  goodput_completed_requests: 'optional',
  goodput_request_throughput_rps: 'optional',
  goodput_output_throughput_tok_s: 'optional',
  processed_tokens: 'required',
  prefix_cache_reused_ratio: 'required',
  first_admission_prefix_cache_reused_ratio: 'required',
  num_ttft_samples: 'required',
  num_tpot_samples: 'required',
  num_e2e_latency_samples: 'required',
  g3_offload: 'optional',
  g2_domains: 'optional',
  num_images: 'optional',
  mean_encoder_time_ms: 'optional',
  encoder_cache_hit_ratio: 'optional',
  encoder_cache_lookups: 'optional',
  meets_slo: 'optional',
  total_trajectories: 'optional',
  completed_trajectories: 'optional',
  incomplete_trajectories: 'optional',
  p50_trajectory_e2e_latency_ms: 'optional',
};

/** Every summary key and whether every run has it. */
export const SUMMARY_FIELDS: ReadonlyMap<keyof Summary, Need> = new Map<keyof Summary, Need>([
  ...(Object.keys(FIXED) as (keyof typeof FIXED)[]).map((k): [keyof Summary, Need] => [k, FIXED[k]]),
  ...SUMMARY_STATS.flatMap((s) => SUMMARY_MEASURES.map((m): [StatKey, Need] => [`${s}_${m}`, 'required'])),
  ...SUMMARY_STATS.map((s): [TrajectoryStatKey, Need] => [`${s}_trajectory_e2e_latency_ms`, 'optional']),
]);
void statsExact;
void measuresExact;

export function isSummaryKey(k: string): k is keyof Summary {
  return SUMMARY_FIELDS.has(k as keyof Summary);
}

/** A summary's keys in the engine's order (the table shows them as the report writes them). */
export function summaryKeys(s: Summary): (keyof Summary)[] {
  return Object.keys(s).filter(isSummaryKey);
}
