// A search worker (see protocol.ts): plans with the engine's `Recommendation` or runs one
// candidate at a time with `CandidateRun`, which stops a run as soon as it cannot meet its
// objective (the CLI's rule). A run never yields between slices (the search cancels by
// terminating the worker); progress goes out about every 100 ms.

import init, { CandidateRun, Recommendation } from '../../pkg/search/servesim_search.js';
import type { Proposed, SearchInfo, SearchReply, SearchRequest } from './protocol';

const ready = init();
let plan: Recommendation | null = null;

function post(msg: SearchReply): void {
  (self as unknown as Worker).postMessage(msg);
}

function messageOf(e: unknown): string {
  return e instanceof Error ? e.message.replace(/^Error: /, '') : String(e);
}

function planned(): Recommendation {
  if (!plan) throw new Error('no search was started');
  return plan;
}

function run(msg: Extract<SearchRequest, { type: 'run' }>): void {
  const t0 = performance.now();
  const c = new CandidateRun(msg.scenario, msg.objective ?? undefined, msg.gpus, undefined, msg.files);
  try {
    let chunk = 256;
    let lastPost = t0;
    for (;;) {
      const c0 = performance.now();
      if (c.advance(chunk)) break;
      const took = performance.now() - c0;
      // Slices of a few ms: progress stays fresh, and the early-stop check (which reads the
      // requests so far) runs often enough to stop a hopeless run soon.
      if (took < 4) chunk = Math.min(chunk * 2, 1 << 16);
      else if (took > 20 && chunk > 1) chunk >>= 1;
      if (c0 - lastPost > 100) {
        lastPost = c0;
        post({ type: 'progress', id: msg.id, progress: c.progress() });
      }
    }
    post({ type: 'outcome', id: msg.id, outcome: c.outcome(), elapsed_ms: performance.now() - t0 });
  } finally {
    c.free();
  }
}

self.onmessage = async (ev: MessageEvent<SearchRequest>) => {
  const msg = ev.data;
  try {
    await ready;
    switch (msg.type) {
      case 'plan':
        plan?.free();
        plan = null;
        plan = new Recommendation(msg.yaml, undefined);
        post({ type: 'info', id: msg.id, info: JSON.parse(plan.info()) as SearchInfo });
        break;
      case 'next':
        post({ type: 'batch', id: msg.id, candidates: JSON.parse(planned().nextBatch(msg.n)) as Proposed[] });
        break;
      case 'tell':
        planned().tell(msg.candidate, msg.outcome);
        post({ type: 'told', id: msg.id, done: planned().isDone() });
        break;
      case 'ranking': {
        const p = planned();
        post({ type: 'ranking', id: msg.id, ranking: JSON.parse(p.ranking()), ledger: p.ledger(), ledgerCsv: p.ledgerCsv(), done: p.isDone() });
        break;
      }
      case 'run':
        run(msg);
        break;
    }
  } catch (e) {
    // A trap (a panic inside the engine) leaves this worker's module unusable.
    const fatal = e instanceof WebAssembly.RuntimeError;
    post({ type: 'error', id: msg.id, message: fatal ? `the engine crashed: ${messageOf(e)}` : messageOf(e), fatal });
  }
};
