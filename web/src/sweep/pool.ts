// Runs a sweep's points on several Web Workers at once, as `servesim sweep --jobs N` runs them
// on threads: each worker takes the next point when it finishes one. Cancel terminates the
// workers (a point in the middle of a pass stops at once; nothing to wait for), and the next
// sweep starts fresh ones. Workers are kept between sweeps otherwise: their engine module is
// compiled already.

import { siteDataUrl } from '../engine/kernel-data';
import type { Unnumbered } from '../engine/protocol';
import type { SweepReply, SweepRequest } from './protocol';

/** Workers for a sweep: one per core the browser reports, at least two. */
export function defaultPoolSize(): number {
  const cores = typeof navigator !== 'undefined' ? navigator.hardwareConcurrency : 0;
  return Math.max(2, cores || 2);
}

export class SweepError extends Error {}

export interface SweepCallbacks {
  /** A point's line, as soon as it is done (points finish out of order). */
  onLine(index: number, line: string, elapsedMs: number): void;
  /** Points done and the fraction of all the work done (running points count partly). */
  onProgress(done: number, fraction: number): void;
}

export interface SweepUploads {
  trace?: Blob;
  files?: Record<string, Uint8Array>;
}

export interface SweepJob {
  /** Resolves when every point is done; rejects with the first error (naming the point) or on cancel. */
  done: Promise<void>;
  cancel(): void;
  /** Workers this sweep runs on. */
  workers: number;
}

type Handler = (msg: SweepReply) => void;

export class SweepPool {
  private workers: Worker[] = [];
  private handlers = new Map<number, Handler>();
  private nextId = 1;
  private generation = 0;

  constructor(readonly size = defaultPoolSize()) {}

  private worker(k: number): Worker {
    let w = this.workers[k];
    if (!w) {
      w = new Worker(new URL('./point-worker.ts', import.meta.url), { type: 'module', name: `servesim-sweep-${k}` });
      w.onmessage = (ev: MessageEvent<SweepReply>) => this.handlers.get(ev.data.id)?.(ev.data);
      w.onerror = (ev: ErrorEvent) => {
        ev.preventDefault();
        for (const h of [...this.handlers.values()])
          h({ type: 'error', id: 0, message: `a sweep worker failed: ${ev.message || 'unknown error'}`, fatal: true });
      };
      this.workers[k] = w;
    }
    return w;
  }

  private send(k: number, msg: Unnumbered<SweepRequest>, handler: Handler): number {
    const id = this.nextId++;
    this.handlers.set(id, handler);
    this.worker(k).postMessage(msg.type === 'point' ? { ...msg, id, data_url: siteDataUrl() } : { ...msg, id });
    return id;
  }

  /**
   * Starts the workers and their engine modules ahead of a sweep (the panel calls this when it
   * opens), so the first sweep does not wait for them.
   */
  warm(): void {
    for (let k = 0; k < this.size; k++) this.worker(k);
  }

  /** Stops every worker now; the next request starts new ones. */
  terminate(): void {
    for (const w of this.workers) w?.terminate();
    this.workers = [];
    this.generation++;
    const pending = [...this.handlers.values()];
    this.handlers.clear();
    for (const h of pending) h({ type: 'error', id: 0, message: 'cancelled' });
  }

  /** The engine's expansion of a sweep file (`expandSweep`, as JSON text). */
  expand(sweep: string, max: number): Promise<string> {
    return new Promise((resolve, reject) => {
      const id = this.send(0, { type: 'expand', sweep, max }, (msg) => {
        this.handlers.delete(id);
        if (msg.type === 'expanded') resolve(msg.json);
        else if (msg.type === 'error') {
          if (msg.fatal) this.terminate();
          reject(new SweepError(msg.message));
        }
      });
    });
  }

  /** Runs points `0..count` of a sweep file. */
  run(sweep: string, count: number, uploads: SweepUploads, cb: SweepCallbacks): SweepJob {
    const n = Math.max(1, Math.min(this.size, count));
    const generation = this.generation;
    const traceKey = this.nextId;
    const trace = uploads.trace ? { key: traceKey, blob: uploads.trace } : undefined;
    const partial = new Map<number, number>();
    let next = 0;
    let done = 0;
    let failed = false;
    const report = () => {
      let sum = done;
      for (const p of partial.values()) sum += p;
      cb.onProgress(done, count === 0 ? 1 : sum / count);
    };
    const finished = new Promise<void>((resolve, reject) => {
      if (count === 0) {
        resolve();
        return;
      }
      const fail = (message: string) => {
        if (failed) return;
        failed = true;
        // The other points are of no use once one has failed (the CLI stops too).
        if (this.generation === generation) this.terminate();
        reject(new SweepError(message));
      };
      const take = (k: number) => {
        if (failed || this.generation !== generation) return;
        if (next >= count) return;
        const index = next++;
        partial.set(k, 0);
        const id = this.send(k, { type: 'point', sweep, index, trace, files: uploads.files }, (msg) => {
          if (msg.type === 'progress') {
            partial.set(k, msg.progress);
            report();
            return;
          }
          this.handlers.delete(id);
          partial.delete(k);
          if (msg.type === 'line') {
            done++;
            cb.onLine(msg.index, msg.line, msg.elapsed_ms);
            report();
            if (done === count) resolve();
            else take(k);
          } else if (msg.type === 'error') {
            fail(msg.message === 'cancelled' ? 'cancelled' : msg.message);
          }
        });
      };
      for (let k = 0; k < n; k++) take(k);
    });
    return { done: finished, cancel: () => this.terminate(), workers: n };
  }
}
