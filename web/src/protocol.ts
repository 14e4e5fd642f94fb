// Messages between the page and the engine worker (worker.ts).

export type Columns = Record<string, Float64Array>;

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
  cluster: Columns;
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
  records: Columns;
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
