// Messages between the page and the engine worker (worker.ts).

/** Named columns of equal length, one `Float64Array` each. */
export type Columns = Record<string, Float64Array>;

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
] as const;
export type RecordColumns = Record<(typeof RECORD_COLUMNS)[number], Float64Array>;

/** The cluster-wide time-series columns (`timeseries().cluster`), one entry per window. */
export const CLUSTER_COLUMNS = ['requests_completed', 'input_tok_s', 'output_tok_s', 'ttft_p50_ms', 'ttft_p99_ms', 'itl_p50_ms', 'itl_p99_ms'] as const;
export type ClusterColumns = Record<(typeof CLUSTER_COLUMNS)[number], Float64Array>;

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

export interface RankSeries {
  /** The pool the rank serves in, as the harness names it. */
  pool: string;
  worker: number;
  dp_rank: number;
  columns: Columns;
}

export interface TimeSeries {
  interval_ms: number;
  /** "engine": the harness's per-pass metrics. */
  source: string;
  t_ms: Float64Array;
  cluster: ClusterColumns;
  ranks: RankSeries[];
}

export interface Reason {
  request: number;
  status: string;
  reason: string;
}

export interface RunResult {
  id: number;
  cancelled: boolean;
  summary: Record<string, number>;
  records: RecordColumns;
  series: TimeSeries;
  reasons: Reason[];
  /** Wall-clock ms the worker spent building and running the simulation. */
  elapsed_ms: number;
}

export type Request =
  | { type: 'hello'; id: number }
  | { type: 'normalize'; id: number; json: string }
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
  | { type: 'cancel'; id: number }
  | { type: 'report'; id: number; run: number }
  /** Test hook: makes the engine panic. */
  | { type: 'panic'; id: number };

export type Reply =
  | { type: 'hello'; id: number; defaults: string; version: string }
  | { type: 'normalized'; id: number; json: string }
  | { type: 'progress'; id: number; progress: number; now_ms: number }
  | { type: 'result'; id: number; result: RunResult }
  | { type: 'report'; id: number; json: string }
  | { type: 'error'; id: number; message: string; fatal?: boolean };
