// The page's side of the engine worker: promises for requests, progress callbacks, cancel,
// and a restart when the engine crashes.

import type { EventsRecording, ExportKind, RecordEventsArgs, Reply, Request, RunResult } from './protocol';

type Pending = {
  resolve: (r: Reply) => void;
  reject: (e: Error) => void;
  /** `stopped`: a cancelled run has stopped advancing (its results follow). */
  onProgress?: (progress: number, nowMs: number, stopped: boolean) => void;
};

export class EngineError extends Error {}

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

  private request(msg: Omit<Request, 'id'>, onProgress?: Pending['onProgress']): { id: number; reply: Promise<Reply> } {
    const id = this.nextId++;
    const reply = new Promise<Reply>((resolve, reject) => {
      this.pending.set(id, { resolve, reject, onProgress });
    });
    this.worker.postMessage({ ...msg, id } as Request);
    return { id, reply };
  }

  async hello(): Promise<{ defaults: string; version: string; presets: string }> {
    const r = await this.request({ type: 'hello' }).reply;
    if (r.type !== 'hello') throw new EngineError('unexpected reply');
    return { defaults: r.defaults, version: r.version, presets: r.presets };
  }

  /** The scenario with defaults filled in; rejects with the engine's message (naming the field). */
  async normalize(json: string): Promise<string> {
    const r = await this.request({ type: 'normalize', json } as Omit<Request, 'id'>).reply;
    if (r.type !== 'normalized') throw new EngineError('unexpected reply');
    return r.json;
  }

  /**
   * `{"scenario", "config"}`: the scenario as the engine reads it (unset values left unset)
   * and what it would run with (`servesim run`'s `config`); rejects with the engine's message.
   */
  async inspect(json: string): Promise<string> {
    const r = await this.request({ type: 'inspect', json } as Omit<Request, 'id'>).reply;
    if (r.type !== 'inspected') throw new EngineError('unexpected reply');
    return r.json;
  }

  /** The smallest tensor-parallel size at which a roofline timing model leaves room for KV. */
  async smallestTp(timingModel: object): Promise<number | null> {
    const r = await this.request({ type: 'smallest-tp', json: JSON.stringify(timingModel) } as Omit<Request, 'id'>).reply;
    if (r.type !== 'smallest-tp') throw new EngineError('unexpected reply');
    return r.tp;
  }

  /** A fresh scenario seed, an integer in [0, 2^53), from the engine's random source. */
  async randomSeed(): Promise<number> {
    const r = await this.request({ type: 'random-seed' }).reply;
    if (r.type !== 'random-seed') throw new EngineError('unexpected reply');
    return r.seed;
  }

  /** `intervalMs`: time-series window; 0 picks one, undefined keeps the scenario's. */
  run(
    json: string,
    trace: Blob | undefined,
    intervalMs: number | undefined,
    onProgress: (p: number, nowMs: number, stopped: boolean) => void,
    files?: Record<string, Uint8Array>,
  ): { id: number; result: Promise<RunResult>; cancel: () => void } {
    const { id, reply } = this.request({ type: 'run', json, trace, interval_ms: intervalMs, files } as Omit<Request, 'id'>, onProgress);
    const result = reply.then((r) => {
      if (r.type !== 'result') throw new EngineError('unexpected reply');
      return r.result;
    });
    return { id, result, cancel: () => this.worker.postMessage({ type: 'cancel', id } satisfies Request) };
  }

  /** Records a scenario's event stream for the inspector (see `RecordEventsArgs`). */
  recordEvents(args: RecordEventsArgs, onProgress: (p: number, nowMs: number) => void): { result: Promise<EventsRecording>; cancel: () => void } {
    const { id, reply } = this.request({ type: 'record-events', ...args } as Omit<Request, 'id'>, onProgress);
    const result = reply.then((r) => {
      if (r.type !== 'events') throw new EngineError('unexpected reply');
      return r.recording;
    });
    return { result, cancel: () => this.worker.postMessage({ type: 'cancel', id } satisfies Request) };
  }

  /** Test hook: makes the engine panic; rejects with the crash report. */
  async crashForTesting(): Promise<void> {
    await this.request({ type: 'panic' } as Omit<Request, 'id'>).reply;
  }

  /**
   * An export of a finished run, built in the worker: `json` is what `servesim run` prints;
   * `requests` and `series` are CSV.
   */
  async exportText(run: number, kind: ExportKind): Promise<string> {
    const r = await this.request({ type: 'export', run, kind } as Omit<Request, 'id'>).reply;
    if (r.type !== 'export') throw new EngineError('unexpected reply');
    return r.text;
  }
}
