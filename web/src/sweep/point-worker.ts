// A sweep worker: runs one point at a time through the engine's `SweepPoint`, which writes
// the point's line with the CLI's own code. It never yields between slices (the pool cancels
// by terminating it), so a point runs at full speed; it posts progress about every 100 ms.

import init, { expandSweep, loadKernelData, missingKernelData, SweepPoint } from '../../pkg/servesim_wasm.js';
import { KernelFiles } from '../engine/kernel-data';
import type { SweepReply, SweepRequest } from './protocol';

const ready = init();
/** Measured-kernel files, fetched once when a point first needs them. */
const kernels = new KernelFiles({ loadKernelData, missingKernelData }, ready);
/** The last trace read, by its key: every point of a sweep shares one trace. */
let traceCache: { key: number; text: string } | null = null;

function post(msg: SweepReply): void {
  (self as unknown as Worker).postMessage(msg);
}

function messageOf(e: unknown): string {
  return e instanceof Error ? e.message.replace(/^Error: /, '') : String(e);
}

async function traceText(trace: { key: number; blob: Blob } | undefined): Promise<string | undefined> {
  if (!trace) return undefined;
  if (traceCache?.key === trace.key) return traceCache.text;
  const text = await trace.blob.text();
  traceCache = { key: trace.key, text };
  return text;
}

async function runPoint(msg: Extract<SweepRequest, { type: 'point' }>): Promise<void> {
  const t0 = performance.now();
  const text = await traceText(msg.trace);
  if (msg.data_url) kernels.base ??= msg.data_url;
  const point = await kernels.with(() => new SweepPoint(msg.sweep, msg.index, text, msg.files));
  try {
    let chunk = 256;
    let lastPost = performance.now();
    for (;;) {
      const c0 = performance.now();
      if (point.advance(chunk)) break;
      // Slices of a few ms keep progress fresh without paying for many calls.
      const took = performance.now() - c0;
      if (took < 4) chunk = Math.min(chunk * 2, 1 << 20);
      else if (took > 20 && chunk > 1) chunk >>= 1;
      if (c0 - lastPost > 100) {
        lastPost = c0;
        post({ type: 'progress', id: msg.id, progress: point.progress() });
      }
    }
    post({ type: 'line', id: msg.id, index: msg.index, line: point.line(), elapsed_ms: performance.now() - t0 });
  } finally {
    point.free();
  }
}

self.onmessage = async (ev: MessageEvent<SweepRequest>) => {
  const msg = ev.data;
  try {
    await ready;
    if (msg.type === 'expand') post({ type: 'expanded', id: msg.id, json: expandSweep(msg.sweep, msg.max) });
    else await runPoint(msg);
  } catch (e) {
    // A trap (a panic inside the engine) leaves this worker's module unusable.
    const fatal = e instanceof WebAssembly.RuntimeError;
    post({ type: 'error', id: msg.id, message: fatal ? `the engine crashed: ${messageOf(e)}` : messageOf(e), fatal });
  }
};
