// Messages between the page and the engine worker (worker.ts).

// The engine's result types are the package's own (crates/servesim_wasm/src/bindings.d.ts,
// copied into web/pkg/servesim_wasm.d.ts by wasm-bindgen); they are re-exported here under
// the names the page has always used.
export type {
  Cdf,
  ClusterColumns,
  Columns,
  EffectiveConfig,
  KernelCatalog,
  KvPoolArithmetic,
  LatencyCdfs,
  PlannerRecord,
  PoolConfig,
  Presets,
  RankSeries,
  Reason,
  RecordColumns,
  Summary,
  SummaryNumberKey,
  TierSeries,
  Topology,
} from '../../pkg/servesim_wasm.js';

import type {
  ClusterColumnName,
  Columns,
  EffectiveConfig,
  EngineTimeSeries,
  LatencyCdfs,
  PlannerRecord,
  Reason,
  RecordColumnName,
  Summary,
} from '../../pkg/servesim_wasm.js';

/**
 * The per-request record columns servesim_wasm's `records()` hands over: one entry per
 * request in each, `NaN` where a time is absent; status 0 pending, 1 completed, 2 rejected,
 * 3 unschedulable.
 */
export const RECORD_COLUMNS = [
  'arrival_ms',
  'input_length',
  'first_token_ms',
  'last_token_ms',
  'end_ms',
  'output_tokens',
  'reused_input_tokens',
  'admissions',
  'status',
  'worker',
  'ttst_ms',
] as const satisfies readonly RecordColumnName[];

/** The cluster-wide time-series columns (`timeseries().cluster`), one entry per window. */
export const CLUSTER_COLUMNS = [
  'requests_completed',
  'input_tok_s',
  'output_tok_s',
  'ttft_p50_ms',
  'ttft_p99_ms',
  'itl_p50_ms',
  'itl_p99_ms',
] as const satisfies readonly ClusterColumnName[];

/**
 * Entry `i` of a column, for an `i` within a sibling column of the same table. The engine's
 * columns have equal length, so a missing entry is a bug: it throws rather than reading as
 * `undefined`.
 */
export function entry(column: Float64Array, i: number): number {
  const v = column[i];
  if (v === undefined) throw new RangeError(`row ${i} is past the end of a column of ${column.length}`);
  return v;
}

/** The engine's time series, with the first ranks only (the charts show up to `MAX_RANKS`). */
export interface TimeSeries extends EngineTimeSeries {
  /** Ranks in the run (the CSV export has them all). */
  rank_count: number;
}

/** Ranks whose series the worker hands over (and the charts draw). */
export const MAX_RANKS = 8;

export interface RunResult {
  id: number;
  cancelled: boolean;
  /** Requests in the workload (a cancelled run's `num_requests` counts only those that arrived). */
  requests: number;
  summary: Summary;
  config: EffectiveConfig;
  series: TimeSeries;
  /** TTFT, TPOT and E2E of the completed requests, computed in the worker. */
  cdfs: LatencyCdfs;
  /** The first reasons (up to 50) of requests that could not complete. */
  reasons: Reason[];
  reason_count: number;
  /** Virtual time reached, ms. */
  now_ms: number;
  /** Wall-clock ms the worker spent building and running the simulation. */
  elapsed_ms: number;
  /** A run with a planner or a scaling script: its record (`servesim run`'s `planner`). */
  planner?: PlannerRecord | null;
  /** Prompt tokens by KV tier per time-series window (`TIER_COLUMNS`). */
  tiers?: Columns;
}

/** The per-tier columns (servesim_wasm's `tierSeries()`), aligned with the time series' windows. */
export const TIER_COLUMNS = ['gpu_hit_tokens', 'host_hit_tokens', 'computed_tokens', 'host_onboard_tok_s', 'host_onboard_requests'] as const;

export type ExportKind = 'json' | 'requests' | 'series';

export type Request =
  /** `data_url`: the site's measured-kernel data (`data/ais/`, absolute), fetched as needed. */
  | { type: 'hello'; id: number; data_url?: string }
  | { type: 'normalize'; id: number; json: string }
  | { type: 'inspect'; id: number; json: string }
  | { type: 'smallest-tp'; id: number; json: string }
  /** A fresh scenario seed (the "new random seed" buttons). */
  | { type: 'random-seed'; id: number }
  | {
      type: 'run';
      id: number;
      json: string;
      /** An uploaded Mooncake trace file. */
      trace?: Blob;
      /** 0: automatic; absent: the scenario's. */
      interval_ms?: number;
      /** Uploaded files by the name the scenario uses (NPZ profiles). */
      files?: Record<string, Uint8Array>;
    }
  /** Records a run's event stream for the inspector (inspector/recorder.ts). */
  | ({ type: 'record-events'; id: number } & RecordEventsArgs)
  | { type: 'cancel'; id: number }
  | { type: 'export'; id: number; run: number; kind: ExportKind }
  /** Test hook: makes the engine panic. */
  | { type: 'panic'; id: number };

/** A request before the client numbers it (the `Omit` distributed over the union's members). */
export type Unnumbered<T> = T extends unknown ? Omit<T, 'id'> : never;

/** The reply each request is answered with (besides `progress` and `error`); `cancel` has none. */
export interface ReplyTo {
  hello: 'hello';
  normalize: 'normalized';
  inspect: 'inspected';
  'smallest-tp': 'smallest-tp';
  'random-seed': 'random-seed';
  run: 'result';
  'record-events': 'events';
  export: 'export';
  /** A panic is answered by an error (the crash report). */
  panic: 'error';
}
export type Answered = Exclude<Request['type'], 'cancel'>;
export const REPLY_TO: ReplyTo = {
  hello: 'hello',
  normalize: 'normalized',
  inspect: 'inspected',
  'smallest-tp': 'smallest-tp',
  'random-seed': 'random-seed',
  run: 'result',
  'record-events': 'events',
  export: 'export',
  panic: 'error',
};
export type RequestOf<T extends Request['type']> = Extract<Request, { type: T }>;
export type ReplyOf<T extends Answered> = Extract<Reply, { type: ReplyTo[T] }>;

export type Reply =
  /** `kernels`: `kernelCatalog()`'s JSON, or null when the site has no measured-kernel data. */
  | { type: 'hello'; id: number; defaults: string; version: string; presets: string; kernels: string | null }
  | { type: 'normalized'; id: number; json: string }
  | { type: 'inspected'; id: number; json: string }
  | { type: 'smallest-tp'; id: number; tp: number | null }
  | { type: 'random-seed'; id: number; seed: number }
  /** `stopped`: a cancelled run has stopped (the result, with what ran, follows). */
  | { type: 'progress'; id: number; progress: number; now_ms: number; stopped?: boolean }
  | { type: 'result'; id: number; result: RunResult }
  | { type: 'export'; id: number; text: string }
  | { type: 'events'; id: number; recording: EventsRecording }
  | { type: 'error'; id: number; message: string; fatal?: boolean };

/** What the inspector asks the worker to record. */
export interface RecordEventsArgs {
  json: string;
  trace?: Blob;
  files?: Record<string, Uint8Array>;
  /** The window of virtual time to record (`to_ms` may be `Infinity`: to the end). */
  from_ms: number;
  to_ms: number;
  /** Runs of more requests are recorded over a window of `window_ms` only. */
  max_requests: number;
  window_ms: number;
  /** The recording stops past this many bytes of lines. */
  max_bytes: number;
}

/** A recorded event stream: `bytes` are the lines `servesim run --events` writes. */
export interface EventsRecording {
  bytes: Uint8Array;
  /** The whole run, nothing left out: then `bytes` equal the CLI's file. */
  complete: boolean;
  /** Recorded over a window only (a large run), as `from_ms`..`to_ms` says. */
  windowed: boolean;
  from_ms: number;
  to_ms: number;
  requests: number;
  lines: number;
  /** Events left out past `max_bytes`. */
  dropped: number;
  /** Wall-clock ms the worker took to run and record. */
  elapsed_ms: number;
}
