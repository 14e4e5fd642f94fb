// The engine's home: a dedicated Web Worker that owns the wasm module, so the page never
// freezes. Runs advance in ~25 ms slices; between slices the worker yields, which lets a
// `cancel` message in.

import init, { defaultScenario, normalizeScenario, panicForTesting, Simulation, version } from '../pkg/servesim_wasm.js';
import type { Reply, Request, RunResult } from './protocol';

const ready = init();
const cancelled = new Set<number>();
/** Finished runs kept for exports, newest last. */
const kept = new Map<number, Simulation>();
const KEEP = 4;

function post(msg: Reply, transfer: Transferable[] = []): void {
  (self as unknown as Worker).postMessage(msg, transfer);
}

function messageOf(e: unknown): string {
  if (e instanceof Error) return e.message.replace(/^Error: /, '');
  return String(e);
}

/** Yields to the event loop without setTimeout's clamping. */
function yieldNow(): Promise<void> {
  return new Promise((resolve) => {
    const ch = new MessageChannel();
    ch.port1.onmessage = () => resolve();
    ch.port2.postMessage(null);
  });
}

async function run(
  id: number,
  json: string,
  trace: Blob | undefined,
  interval: number | undefined,
  files: Record<string, Uint8Array> | undefined,
): Promise<void> {
  const t0 = performance.now();
  // The trace file is read here, in the worker, at each run (the page never holds its text).
  const sim = new Simulation(json, trace ? await trace.text() : undefined, interval, files);
  let chunk = 64;
  for (;;) {
    const sliceStart = performance.now();
    let done = false;
    while (!done && performance.now() - sliceStart < 25) {
      const c0 = performance.now();
      done = sim.advance(chunk);
      const took = performance.now() - c0;
      if (took < 4) chunk = Math.min(chunk * 2, 1 << 20);
      else if (took > 12 && chunk > 1) chunk = Math.max(1, chunk >> 1);
    }
    if (done) break;
    post({ type: 'progress', id, progress: sim.progress(), now_ms: sim.nowMs() });
    await yieldNow();
    if (cancelled.has(id)) {
      sim.cancel();
      break;
    }
  }
  cancelled.delete(id);
  const records = sim.records() as unknown as RunResult['records'];
  const series = sim.timeseries() as unknown as RunResult['series'];
  const result: RunResult = {
    id,
    cancelled: sim.cancelled,
    summary: sim.summary(),
    records,
    series,
    reasons: sim.reasons(),
    elapsed_ms: performance.now() - t0,
  };
  kept.set(id, sim);
  while (kept.size > KEEP) {
    const oldest = kept.keys().next().value as number;
    kept.get(oldest)?.free();
    kept.delete(oldest);
  }
  const transfer: Transferable[] = [];
  for (const col of Object.values(records)) transfer.push(col.buffer);
  transfer.push(series.t_ms.buffer);
  for (const col of Object.values(series.cluster)) transfer.push(col.buffer);
  for (const r of series.ranks) for (const col of Object.values(r.columns)) transfer.push(col.buffer);
  post({ type: 'result', id, result }, transfer);
}

self.onmessage = async (ev: MessageEvent<Request>) => {
  const msg = ev.data;
  if (msg.type === 'cancel') {
    cancelled.add(msg.id);
    return;
  }
  try {
    await ready;
    switch (msg.type) {
      case 'hello':
        post({ type: 'hello', id: msg.id, defaults: defaultScenario(), version: version() });
        break;
      case 'normalize':
        post({ type: 'normalized', id: msg.id, json: normalizeScenario(msg.json) });
        break;
      case 'run':
        await run(msg.id, msg.json, msg.trace, msg.interval_ms, msg.files);
        break;
      case 'panic':
        panicForTesting();
        break;
      case 'report': {
        const sim = kept.get(msg.run);
        if (!sim) throw new Error('that run is no longer kept; run it again');
        post({ type: 'report', id: msg.id, json: sim.reportJson() });
        break;
      }
    }
  } catch (e) {
    // A wasm trap (a panic; its message went to the console through the panic hook) leaves
    // the module unusable: the page restarts the worker.
    const fatal = e instanceof WebAssembly.RuntimeError;
    const message = fatal ? `the engine crashed: ${messageOf(e)} (the engine was restarted)` : messageOf(e);
    post({ type: 'error', id: msg.id, message, fatal });
  }
};
