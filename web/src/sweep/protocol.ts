// Messages between the page's sweep pool (pool.ts) and its workers (point-worker.ts).
// Sweep workers are separate from the engine worker: they run nothing but points, so the
// engine worker stays free for the form's checks and single runs while a sweep goes on, and
// cancelling a sweep can simply terminate them.

export type SweepRequest =
  /** Expands a sweep file into its points (the engine's `expandSweep`). */
  | { type: 'expand'; id: number; sweep: string; max: number }
  /**
   * Runs point `index` of a sweep file; `trace` and `files` are the scenario's uploads (the
   * trace with a key that is the same for every point of one sweep, so it is read once).
   */
  | {
      type: 'point';
      id: number;
      sweep: string;
      index: number;
      trace?: { key: number; blob: Blob };
      files?: Record<string, Uint8Array>;
      /** The site's measured-kernel data (`data/ais/`, absolute): a point fetches what it needs. */
      data_url?: string;
    };

export type SweepReply =
  | { type: 'expanded'; id: number; json: string }
  /** Fraction of one point's work done. */
  | { type: 'progress'; id: number; progress: number }
  /** A point's line, byte for byte `servesim sweep`'s (without the newline). */
  | { type: 'line'; id: number; index: number; line: string; elapsed_ms: number }
  | { type: 'error'; id: number; message: string; fatal?: boolean };
