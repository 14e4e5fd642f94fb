// The page's side of the engine worker: promises for requests, progress callbacks, cancel,
// and a restart when the engine crashes. Each request type is answered by one reply type
// (`ReplyTo` in protocol.ts), checked once where replies arrive.

import { siteDataUrl } from './kernel-data';
import {
  type Answered,
  type EventsRecording,
  type ExportKind,
  REPLY_TO,
  type RecordEventsArgs,
  type Reply,
  type ReplyOf,
  type ReplyTo,
  type Request,
  type RequestOf,
  type RunResult,
  type Unnumbered,
} from './protocol';

type Pending = {
  /** Settles the request with its reply (rejecting a reply of another type). */
  resolve: (r: Reply) => void;
  reject: (e: Error) => void;
  /** `stopped`: a cancelled run has stopped advancing (its results follow). */
  onProgress?: (progress: number, nowMs: number, stopped: boolean) => void;
};

export class EngineError extends Error {}

/** A job the page can cancel: its id, its answer, and the cancel message. */
export interface Job<T> {
  id: number;
  result: Promise<T>;
  cancel: () => void;
}

/** Whether `r` is the reply that answers a request of type `T`. */
function answers<T extends Answered>(r: Reply, expect: ReplyTo[T]): r is ReplyOf<T> {
  return r.type === expect;
}

export class Engine {
  private worker!: Worker;
  private nextId = 1;
  private pending = new Map<number, Pending>();

  constructor() {
    this.spawn();
  }

  private spawn(): void {
    this.worker = new Worker(new URL('./worker.ts', import.meta.url), { type: 'module', name: 'servesim-engine' });
    this.worker.onmessage = (ev: MessageEvent<Reply>) => this.receive(ev.data);
    this.worker.onerror = (ev: ErrorEvent) => {
      ev.preventDefault();
      this.failAll(`the engine worker failed to start: ${ev.message || 'unknown error'}`);
    };
  }

  private failAll(message: string): void {
    for (const p of this.pending.values()) p.reject(new EngineError(message));
    this.pending.clear();
  }

  private receive(msg: Reply): void {
    const p = this.pending.get(msg.id);
    if (!p) return;
    if (msg.type === 'progress') {
      p.onProgress?.(msg.progress, msg.now_ms, msg.stopped === true);
      return;
    }
    this.pending.delete(msg.id);
    if (msg.type === 'error') {
      p.reject(new EngineError(msg.message));
      if (msg.fatal) this.restart();
    } else {
      p.resolve(msg);
    }
  }

  /** Replaces the worker (after a crash); requests in flight fail. */
  restart(): void {
    this.worker.terminate();
    this.failAll('the engine was restarted');
    this.spawn();
  }

  /** Sends a request; resolves with the reply that answers it (rejects on an error reply). */
  private request<T extends Answered>(msg: Unnumbered<RequestOf<T>> & { type: T }, onProgress?: Pending['onProgress']): Job<ReplyOf<T>> {
    const id = this.nextId++;
    const expect: ReplyTo[T] = REPLY_TO[msg.type];
    const result = new Promise<ReplyOf<T>>((resolve, reject) => {
      const settle = (r: Reply) => (answers<T>(r, expect) ? resolve(r) : reject(new EngineError(`the engine answered "${msg.type}" with "${r.type}"`)));
      this.pending.set(id, { resolve: settle, reject, onProgress });
    });
    this.worker.postMessage({ ...msg, id });
    return { id, result, cancel: () => this.worker.postMessage({ type: 'cancel', id } satisfies Request) };
  }

  /** The engine's defaults and presets, and the catalog of the measured-kernel data beside the page. */
  async hello(): Promise<{ defaults: string; version: string; presets: string; kernels: string | null }> {
    const r = await this.request({ type: 'hello', data_url: siteDataUrl() }).result;
    return { defaults: r.defaults, version: r.version, presets: r.presets, kernels: r.kernels };
  }

  /** The scenario with defaults filled in; rejects with the engine's message (naming the field). */
  async normalize(json: string): Promise<string> {
    return (await this.request({ type: 'normalize', json }).result).json;
  }

  /**
   * `{"scenario", "config"}`: the scenario as the engine reads it (unset values left unset)
   * and what it would run with (`servesim run`'s `config`); rejects with the engine's message.
   */
  async inspect(json: string): Promise<string> {
    return (await this.request({ type: 'inspect', json }).result).json;
  }

  /** The smallest tensor-parallel size at which a roofline timing model leaves room for KV. */
  async smallestTp(timingModel: object): Promise<number | null> {
    return (await this.request({ type: 'smallest-tp', json: JSON.stringify(timingModel) }).result).tp;
  }

  /** A fresh scenario seed, an integer in [0, 2^53), from the engine's random source. */
  async randomSeed(): Promise<number> {
    return (await this.request({ type: 'random-seed' }).result).seed;
  }

  /** `intervalMs`: time-series window; 0 picks one, undefined keeps the scenario's. */
  run(
    json: string,
    trace: Blob | undefined,
    intervalMs: number | undefined,
    onProgress: (p: number, nowMs: number, stopped: boolean) => void,
    files?: Record<string, Uint8Array>,
  ): Job<RunResult> {
    const job = this.request({ type: 'run', json, trace, interval_ms: intervalMs, files }, onProgress);
    return { ...job, result: job.result.then((r) => r.result) };
  }

  /** Records a scenario's event stream for the inspector (see `RecordEventsArgs`). */
  recordEvents(args: RecordEventsArgs, onProgress: (p: number, nowMs: number) => void): Job<EventsRecording> {
    const job = this.request({ type: 'record-events', ...args }, onProgress);
    return { ...job, result: job.result.then((r) => r.recording) };
  }

  /** Test hook: makes the engine panic; rejects with the crash report. */
  async crashForTesting(): Promise<void> {
    await this.request({ type: 'panic' }).result;
  }

  /**
   * An export of a finished run, built in the worker: `json` is what `servesim run` prints;
   * `requests` and `series` are CSV.
   */
  async exportText(run: number, kind: ExportKind): Promise<string> {
    return (await this.request({ type: 'export', run, kind }).result).text;
  }
}
