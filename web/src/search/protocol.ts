// Messages between the page's search (run.ts) and its workers (worker.ts). One worker plans
// (it holds the engine's `Recommendation`: the same search as `servesim recommend`); the
// others run candidates (`CandidateRun`), one at a time each, as `servesim recommend --jobs N`
// runs them on threads. Every worker loads the search module (web/pkg/search), which the
// playground's first download does not carry.

export type SearchRequest =
  /** Starts a search of a recommend file (JSON is YAML too); replies `info`. */
  | { type: 'plan'; id: number; yaml: string }
  /** Up to `n` new candidates; replies `batch`. */
  | { type: 'next'; id: number; n: number }
  /** How candidate `candidate` ran (a `CandidateRun`'s outcome, as JSON text); replies `told`. */
  | { type: 'tell'; id: number; candidate: number; outcome: string }
  /** The answer so far; replies `ranking`. */
  | { type: 'ranking'; id: number }
  /** Runs one candidate's scenario; replies `outcome` (progress on the way). */
  | { type: 'run'; id: number; scenario: string; objective: string | null; gpus: number; files?: Record<string, Uint8Array> };

export interface SearchInfo {
  target: string;
  space_points: number | null;
  exhaustive: boolean;
  max_trials: number;
  parallelism: number;
  dims: ({ path: string; preset?: boolean; values: unknown[] } | { path: string; range: { min: number; max: number; log: boolean; integer: boolean } })[];
}

/** A candidate as `nextBatch` proposes it. */
export interface Proposed {
  id: number;
  set: Record<string, unknown>;
  yaml: string;
  gpus?: number;
  scenario?: Record<string, unknown>;
  objective?: Record<string, number> | null;
  /** Why it cannot run (it was told already). */
  infeasible?: string;
}

export interface Ranked {
  rank: number;
  id: number;
  score: number;
  gpus: number | null;
  set: Record<string, unknown>;
  yaml: string;
}

export type SearchReply =
  | { type: 'info'; id: number; info: SearchInfo }
  | { type: 'batch'; id: number; candidates: Proposed[] }
  | { type: 'told'; id: number; done: boolean }
  | { type: 'ranking'; id: number; ranking: Ranked[]; ledger: string; ledgerCsv: string; done: boolean }
  | { type: 'progress'; id: number; progress: number }
  | { type: 'outcome'; id: number; outcome: string; elapsed_ms: number }
  | { type: 'error'; id: number; message: string; fatal?: boolean };
