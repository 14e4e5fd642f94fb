// The engine's home: a dedicated Web Worker that owns the wasm module, so the page never
// freezes. Runs advance in ~25 ms slices; between slices the worker yields, which lets a
// `cancel` message in. Whatever is heavy about a result stays here: the per-request records
// (the page gets their CDFs), the series of every rank (the page gets the first few), and
// the exports, built on request.
//
// It starts on the engine's first module (web/pkg/first: no trace files, measured-kernel
// data, NPZ profiles), the smaller download; when a call needs a part that module leaves
// out (`needsFullEngine`), it loads the full one (web/pkg) once and calls again, and uses it
// from then on (docs/performance.md, "Size").

import * as first from '../../pkg/first/servesim_first.js';
import { recordEvents } from '../inspector/recorder';
import { recordsCsv, seriesCsv } from './exports';
import { INDEX_FILES, KernelFiles } from './kernel-data';
import { type EffectiveConfig, type ExportKind, MAX_RANKS, type Reply, type Request, type RunResult, type TimeSeries } from './protocol';

/** The engine module's exports both builds share (the full one has more). */
type EngineModule = typeof first;
let engine: EngineModule = first;
let ready: Promise<unknown> = first.default();
/** Measured-kernel files, fetched when a scenario first needs them. */
const kernels = new KernelFiles(engine, ready, true);
let full: Promise<void> | null = null;

/** Loads the full module once and makes it the engine (the kept runs stay where they are). */
function loadFull(): Promise<void> {
  full ??= (async () => {
    const m = await import('../../pkg/servesim_wasm.js');
    await m.default();
    engine = m;
    ready = Promise.resolve();
    // The files the first module was given (the index, the model configs), without fetching.
    kernels.switchTo(m);
  })();
  return full;
}

/**
 * Runs `call` on the engine, fetching the measured-kernel data it needs; when the first
 * module refuses it for a part it leaves out, loads the full module and runs it there.
 */
async function withEngine<T>(call: (e: EngineModule) => T): Promise<T> {
  // A refusal left over from a call that did not come through here must not count for this one.
  engine.needsFullEngine();
  try {
    return await kernels.with(() => call(engine));
  } catch (e) {
    if (!engine.needsFullEngine()) throw e;
    await loadFull();
    return kernels.with(() => call(engine));
  }
}
const cancelled = new Set<number>();
/** Finished runs kept for exports, newest last. */
const kept = new Map<number, first.Simulation>();
const KEEP = 4;
/** Points of each latency CDF handed to the page. */
const MAX_CDF_POINTS = 600;

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
  const text = trace ? await trace.text() : undefined;
  if (cancelled.has(id)) {
    cancelled.delete(id);
    throw new Error('cancelled before it started');
  }
  const sim = await withEngine((e) => new e.Simulation(json, text, interval, files));
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
      post({ type: 'progress', id, progress: sim.progress(), now_ms: sim.nowMs(), stopped: true });
      break;
    }
  }
  cancelled.delete(id);
  const full = sim.timeseries();
  const reasons = sim.reasons();
  const series: TimeSeries = { ...full, ranks: full.ranks.slice(0, MAX_RANKS), rank_count: full.ranks.length };
  const result: RunResult = {
    id,
    cancelled: sim.cancelled,
    requests: sim.numRequests(),
    summary: sim.summary(),
    config: sim.config(),
    series,
    cdfs: sim.latencyCdfs(MAX_CDF_POINTS),
    reasons: reasons.slice(0, 50),
    reason_count: reasons.length,
    now_ms: sim.nowMs(),
    elapsed_ms: performance.now() - t0,
    planner: sim.planner(),
    tiers: sim.tierSeries(),
  };
  kept.set(id, sim);
  while (kept.size > KEEP) {
    const oldest = kept.keys().next().value as number;
    kept.get(oldest)?.free();
    kept.delete(oldest);
  }
  const transfer: Transferable[] = [series.t_ms.buffer];
  for (const col of Object.values(series.cluster)) transfer.push(col.buffer);
  for (const r of series.ranks) for (const col of Object.values(r.columns)) transfer.push(col.buffer);
  for (const col of Object.values(result.tiers ?? {})) transfer.push(col.buffer);
  post({ type: 'result', id, result }, transfer);
}

function exported(run: number, kind: ExportKind): string {
  const sim = kept.get(run);
  if (!sim) throw new Error('that run is no longer kept; run it again');
  if (kind === 'json') return sim.reportJson();
  if (kind === 'requests') return recordsCsv(sim.records());
  return seriesCsv(sim.timeseries());
}

/**
 * The catalog of measured-kernel data (`kernelCatalog`), once the page says where the data
 * is: the index and the bundled model configs are fetched alongside the engine's download;
 * null when the site has no data (the page then offers the roofline only).
 */
let catalog: Promise<string | null> = Promise.resolve(null);

function startCatalog(base: string): void {
  kernels.base = base;
  catalog = Promise.all(INDEX_FILES.map((f) => kernels.load(f)))
    .then(() => engine.kernelCatalog())
    .catch((e: unknown) => {
      console.warn(`servesim: no measured-kernel data (${messageOf(e)}); the roofline remains`);
      return null;
    });
}

/** TP sizes the measured-kernel memory model knows, smallest first. */
const MEASURED_TPS = [1, 2, 4, 8];

/**
 * The smallest tensor-parallel size that leaves room for the KV cache: the roofline's
 * answer from the engine; for measured kernels, the first TP at which the engine's memory
 * model leaves at least a tenth of the GPU's memory to the KV cache, as the roofline's rule
 * does (null: none does, or the data is missing).
 */
async function smallestTp(json: string): Promise<number | null> {
  const tm = JSON.parse(json) as { type?: string; tp?: number };
  if (tm.type !== 'ais') return engine.smallestTensorParallel(json) ?? null;
  for (const tp of MEASURED_TPS) {
    const scenario = JSON.stringify({ engine: { timing_model: { ...tm, tp } } });
    try {
      const { config } = JSON.parse(await withEngine((e) => e.inspectScenario(scenario))) as { config: EffectiveConfig };
      const pool = config.pools[0]?.kv_pool;
      if (!pool || pool.kv_budget_bytes >= pool.gpu_memory_bytes / 10) return tp;
    } catch {
      // This TP leaves no room (or is refused): try the next.
    }
  }
  return null;
}

self.onmessage = async (ev: MessageEvent<Request>) => {
  const msg = ev.data;
  if (msg.type === 'cancel') {
    cancelled.add(msg.id);
    return;
  }
  // Before any await: a run sent right after hello must find the data's location set.
  if (msg.type === 'hello' && msg.data_url && kernels.base === null) startCatalog(msg.data_url);
  try {
    await ready;
    switch (msg.type) {
      case 'hello':
        post({
          type: 'hello',
          id: msg.id,
          defaults: engine.defaultScenario(),
          version: engine.version(),
          presets: engine.presets(),
          kernels: await catalog,
        });
        break;
      case 'normalize':
        post({ type: 'normalized', id: msg.id, json: engine.normalizeScenario(msg.json) });
        break;
      case 'inspect':
        post({ type: 'inspected', id: msg.id, json: await withEngine((e) => e.inspectScenario(msg.json)) });
        break;
      case 'smallest-tp':
        post({ type: 'smallest-tp', id: msg.id, tp: await smallestTp(msg.json) });
        break;
      case 'random-seed':
        post({ type: 'random-seed', id: msg.id, seed: engine.randomSeed() });
        break;
      case 'run':
        await run(msg.id, msg.json, msg.trace, msg.interval_ms, msg.files);
        break;
      case 'record-events': {
        const { id, type: _t, ...args } = msg;
        const stop = () => cancelled.delete(id);
        try {
          const recording = await recordEvents(
            args,
            (p, now) => post({ type: 'progress', id, progress: p, now_ms: now }),
            () => cancelled.has(id),
            yieldNow,
            withEngine,
          );
          post({ type: 'events', id, recording }, [recording.bytes.buffer]);
        } finally {
          stop();
        }
        break;
      }
      case 'panic':
        engine.panicForTesting();
        break;
      case 'export':
        post({ type: 'export', id: msg.id, text: exported(msg.run, msg.kind) });
        break;
    }
  } catch (e) {
    // A wasm trap (a panic; its message went to the console through the panic hook) leaves
    // the module unusable: the page restarts the worker.
    const fatal = e instanceof WebAssembly.RuntimeError;
    const message = fatal ? `the engine crashed: ${messageOf(e)} (the engine was restarted)` : messageOf(e);
    post({ type: 'error', id: msg.id, message, fatal });
  }
};
