// The worker's half of the inspector: runs a scenario with its event stream recorded by the
// engine's own recorder (servesim_wasm's `EventRecording`, the writer `servesim run --events`
// uses), in slices so a cancel gets in, and hands the bytes over without copying.

import type { EventRecording } from '../../pkg/first/servesim_first.js';
import type { EventsRecording, RecordEventsArgs } from '../engine/protocol';

/** The engine module's recorder (either build's). */
export interface Recorder {
  EventRecording: typeof EventRecording;
}

export async function recordEvents(
  args: RecordEventsArgs,
  progress: (p: number, nowMs: number) => void,
  cancelled: () => boolean,
  yieldNow: () => Promise<void>,
  /**
   * Builds a recording on the worker's engine module, fetching the measured-kernel data (or
   * the full module) it needs first (worker.ts).
   */
  build: <T>(make: (engine: Recorder) => T) => Promise<T>,
): Promise<EventsRecording> {
  const t0 = performance.now();
  const text = args.trace ? await args.trace.text() : undefined;
  let rec = await build((e) => new e.EventRecording(args.json, text, args.files, args.from_ms, args.to_ms, args.max_bytes));
  let { from_ms, to_ms } = args;
  // A large run is recorded over a window only: a few thousand requests make tens of MB.
  const windowed = rec.requests > args.max_requests && !Number.isFinite(to_ms);
  if (windowed) {
    rec.free();
    to_ms = from_ms + args.window_ms;
    rec = await build((e) => new e.EventRecording(args.json, text, args.files, from_ms, to_ms, args.max_bytes));
  }
  try {
    for (;;) {
      const slice = performance.now();
      let done = false;
      while (!done && performance.now() - slice < 25) done = rec.advance(256);
      if (done) break;
      progress(rec.progress(), rec.nowMs());
      await yieldNow();
      if (cancelled()) throw new Error('the recording was cancelled');
    }
    const bytes = rec.takeBytes();
    return {
      bytes,
      complete: rec.complete,
      windowed: windowed || Number.isFinite(args.to_ms) || args.from_ms > 0,
      from_ms,
      to_ms,
      requests: rec.requests,
      lines: rec.lines,
      dropped: rec.dropped,
      elapsed_ms: performance.now() - t0,
    };
  } finally {
    rec.free();
  }
}
