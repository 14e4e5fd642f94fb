// Runs a recommend file's search on Web Workers: one worker plans (the engine's
// `Recommendation`: proposes candidates, is told how each ran, ranks them), the others run
// candidates, each taking the next one when it finishes, as `servesim recommend --jobs N`
// does on threads. Cancel terminates the workers. The main thread only passes messages:
// callbacks are batched by the caller (the panel redraws at most once a second).

import type { Unnumbered } from '../engine/protocol';
import type { Proposed, Ranked, SearchInfo, SearchReply, SearchRequest } from './protocol';

/** Candidate runners: one per core the browser reports, at least two. */
export function defaultRunners(): number {
  const cores = typeof navigator !== 'undefined' ? navigator.hardwareConcurrency : 0;
  return Math.max(2, cores || 2);
}

export class SearchError extends Error {
  /** The worker's module trapped (a panic in the engine): the worker must be replaced. */
  constructor(
    message: string,
    readonly fatal = false,
  ) {
    super(message);
  }
}

/** How a candidate ended, as the page reads it. */
export interface Tried {
  proposed: Proposed;
  /** `summary` of a run to the end, `stopped` (early, certain to miss), or `infeasible`. */
  summary?: Record<string, number>;
  stopped?: string;
  infeasible?: string;
  elapsedMs?: number;
}

export interface SearchResult {
  info: SearchInfo;
  ranking: Ranked[];
  ledger: string;
  ledgerCsv: string;
  tried: Map<number, Tried>;
  elapsedMs: number;
}

export interface SearchCallbacks {
  /** A candidate ended (or was ruled out without running). */
  onTried(t: Tried): void;
  /** Candidates ended, those running now, and the fraction of the budget done. */
  onProgress(done: number, running: number, fraction: number): void;
}

type Handler = (msg: SearchReply) => void;

class Channel {
  private handlers = new Map<number, Handler>();
  private nextId = 1;
  constructor(readonly worker: Worker) {
    worker.onmessage = (ev: MessageEvent<SearchReply>) => this.handlers.get(ev.data.id)?.(ev.data);
    worker.onerror = (ev: ErrorEvent) => {
      ev.preventDefault();
      for (const h of [...this.handlers.values()])
        h({ type: 'error', id: 0, message: `a search worker failed: ${ev.message || 'unknown error'}`, fatal: true });
    };
  }
  /** Sends a request; resolves with its final reply (`progress` replies go to `onProgress`). */
  ask(msg: Unnumbered<SearchRequest>, onProgress?: (p: number) => void): Promise<SearchReply> {
    return new Promise((resolve, reject) => {
      const id = this.nextId++;
      this.handlers.set(id, (reply) => {
        if (reply.type === 'progress') {
          onProgress?.(reply.progress);
          return;
        }
        this.handlers.delete(id);
        if (reply.type === 'error') reject(new SearchError(reply.message, reply.fatal === true));
        else resolve(reply);
      });
      this.worker.postMessage({ ...msg, id });
    });
  }
  fail(message: string): void {
    for (const h of [...this.handlers.values()]) h({ type: 'error', id: 0, message });
    this.handlers.clear();
  }
}

/** The search's workers; kept between searches (their modules are compiled), ended by `terminate`. */
export class SearchPool {
  private planner: Channel | null = null;
  private runners: Channel[] = [];

  constructor(readonly size = defaultRunners()) {}

  private spawn(name: string): Channel {
    return new Channel(new Worker(new URL('./worker.ts', import.meta.url), { type: 'module', name }));
  }

  plannerChannel(): Channel {
    this.planner ??= this.spawn('servesim-search-plan');
    return this.planner;
  }

  runner(k: number): Channel {
    let r = this.runners[k];
    if (!r) {
      r = this.spawn(`servesim-search-${k}`);
      this.runners[k] = r;
    }
    return r;
  }

  /** Starts the workers and their modules ahead of a search (the panel calls it when opened). */
  warm(): void {
    this.plannerChannel();
    for (let k = 0; k < this.size; k++) this.runner(k);
  }

  terminate(): void {
    for (const c of [this.planner, ...this.runners]) {
      if (!c) continue;
      c.worker.terminate();
      c.fail('cancelled');
    }
    this.planner = null;
    this.runners = [];
  }

  /** Runs one scenario on a runner (the steady-state check's shorter run). */
  async runOne(
    scenario: Record<string, unknown>,
    objective: Record<string, number> | null | undefined,
    gpus: number,
  ): Promise<Tried['summary'] | { stopped: string }> {
    const reply = await this.runner(0).ask({ type: 'run', scenario: JSON.stringify(scenario), objective: objective ? JSON.stringify(objective) : null, gpus });
    if (reply.type !== 'outcome') throw new SearchError('unexpected reply');
    const o = JSON.parse(reply.outcome) as { summary?: Record<string, number>; stopped?: string };
    return o.summary ?? { stopped: o.stopped ?? 'stopped' };
  }

  /** Searches a recommend file (YAML, or JSON: YAML reads it). */
  search(yaml: string, cb: SearchCallbacks): { done: Promise<SearchResult>; cancel: () => void; runners: number } {
    const t0 = performance.now();
    const planner = this.plannerChannel();
    const tried = new Map<number, Tried>();
    let cancelled = false;
    const done = (async (): Promise<SearchResult> => {
      const first = await planner.ask({ type: 'plan', yaml });
      if (first.type !== 'info') throw new SearchError('unexpected reply');
      const info = first.info;
      const budget = info.space_points === null ? info.max_trials : Math.min(info.space_points, info.max_trials);
      const partial = new Map<number, number>();
      let running = 0;
      let finished = false;
      const report = () => {
        let sum = tried.size;
        for (const p of partial.values()) sum += p;
        cb.onProgress(tried.size, running, budget === 0 ? 1 : Math.min(1, sum / budget));
      };
      const record = (t: Tried) => {
        tried.set(t.proposed.id, t);
        cb.onTried(t);
      };
      // Each runner loops: ask the planner for one candidate, run it, tell the planner.
      // A runner with nothing to do waits for another runner's result (the model-based
      // search proposes only once its random start has come back).
      let wake: (() => void) | null = null;
      const waitForNews = () =>
        new Promise<void>((r) => {
          const prev = wake;
          wake = () => {
            prev?.();
            r();
          };
        });
      const news = () => {
        const w = wake;
        wake = null;
        w?.();
      };
      const loop = async (k: number) => {
        let runner = this.runner(k);
        while (!finished && !cancelled) {
          const b = await planner.ask({ type: 'next', n: 1 });
          if (b.type !== 'batch') throw new SearchError('unexpected reply');
          if (b.candidates.length === 0) {
            if (running === 0) {
              // Nothing runs and nothing new: the search is over.
              finished = true;
              news();
              return;
            }
            await waitForNews();
            continue;
          }
          for (const c of b.candidates) {
            if (c.infeasible !== undefined) {
              record({ proposed: c, infeasible: c.infeasible });
              report();
              continue;
            }
            running++;
            partial.set(c.id, 0);
            try {
              const reply = await runner.ask(
                { type: 'run', scenario: JSON.stringify(c.scenario), objective: c.objective ? JSON.stringify(c.objective) : null, gpus: c.gpus ?? 0 },
                (p) => {
                  partial.set(c.id, p);
                },
              );
              if (reply.type !== 'outcome') throw new SearchError('unexpected reply');
              const o = JSON.parse(reply.outcome) as { summary?: Record<string, number>; stopped?: string; infeasible?: string };
              const told = await planner.ask({ type: 'tell', candidate: c.id, outcome: reply.outcome });
              record({ proposed: c, summary: o.summary, stopped: o.stopped, infeasible: o.infeasible, elapsedMs: reply.elapsed_ms });
              if (told.type === 'told' && told.done) finished = true;
            } catch (e) {
              if (cancelled) return;
              // A candidate that fails to build or crashes is infeasible with its reason; the
              // search goes on (a crashed worker is replaced).
              const message = (e as Error).message;
              if (e instanceof SearchError && e.fatal) {
                runner.worker.terminate();
                delete this.runners[k];
                runner = this.runner(k);
              }
              await planner.ask({ type: 'tell', candidate: c.id, outcome: JSON.stringify({ infeasible: message, gpus: c.gpus }) });
              record({ proposed: c, infeasible: message });
            } finally {
              running--;
              partial.delete(c.id);
              report();
              news();
            }
          }
        }
      };
      report();
      await Promise.all(Array.from({ length: this.size }, (_, k) => loop(k)));
      if (cancelled) throw new SearchError('cancelled');
      const r = await planner.ask({ type: 'ranking' });
      if (r.type !== 'ranking') throw new SearchError('unexpected reply');
      return { info, ranking: r.ranking, ledger: r.ledger, ledgerCsv: r.ledgerCsv, tried, elapsedMs: performance.now() - t0 };
    })();
    return {
      done,
      cancel: () => {
        cancelled = true;
        this.terminate();
      },
      runners: this.size,
    };
  }
}
