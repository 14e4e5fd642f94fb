// Loaded first (a separate, tiny entry): starts the engine worker and its wasm download while
// the page's main script is still loading. When the page opens on the default scenario (no
// link, nothing stored), it also starts that run at once; the page adopts the result if its
// scenario is still the default one when it is ready to run (see `takeSpeculative`).

import { Engine } from './client';
import type { RunResult } from './protocol';

export const STORAGE_KEY = 'servesim.scenario.v1';

export interface Speculative {
  result: Promise<RunResult>;
  cancel: () => void;
  id: number;
  onProgress: ((p: number, nowMs: number, stopped: boolean) => void) | null;
}

export interface Early {
  engine: Engine;
  hello: ReturnType<Engine['hello']>;
  speculative: Speculative | null;
}

function opensOnDefaults(): boolean {
  if (location.hash !== '' && location.hash !== '#') return false;
  try {
    return localStorage.getItem(STORAGE_KEY) === null;
  } catch {
    return true;
  }
}

const engine = new Engine();
const early: Early = { engine, hello: engine.hello(), speculative: null };
if (opensOnDefaults()) {
  // `{}` is the default scenario; 0 asks for automatic time-series windows, as the page does.
  const spec: Speculative = { result: undefined as never, cancel: () => {}, id: 0, onProgress: null };
  const job = engine.run('{}', undefined, 0, (p, now, stopped) => spec.onProgress?.(p, now, stopped));
  Object.assign(spec, { result: job.result, cancel: job.cancel, id: job.id });
  // Unclaimed results are simply dropped; errors surface when the page claims the run.
  job.result.catch(() => {});
  early.speculative = spec;
}
(globalThis as { __servesimEarly?: Early }).__servesimEarly = early;

/** The early default-scenario run, once: the caller must only use it for the default scenario. */
export function takeSpeculative(): Speculative | null {
  const e = (globalThis as { __servesimEarly?: Early }).__servesimEarly;
  const s = e?.speculative ?? null;
  if (e) e.speculative = null;
  return s;
}
