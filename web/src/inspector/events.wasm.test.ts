// The event stream's types against the engine's real lines: every line the writer of
// `servesim run --events` produces (here through servesim_wasm's `EventRecording`, the same
// `SimEvent` serializer) has exactly the fields the package's `ServesimEvent` declares for its
// kind, and the scenarios below make every kind and every optional field appear, so a field the
// writer gains or loses, or a new kind, fails here until bindings.d.ts says so.

import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { EventRecording, initSync } from '../../pkg/servesim_wasm.js';
import { EVENT_FIELDS, parseEvents } from './model';

beforeAll(() => {
  const wasm = readFileSync(fileURLToPath(new URL('../../pkg/servesim_wasm_bg.wasm', import.meta.url)));
  initSync({ module: wasm });
});

function record(scenario: object): string {
  const rec = new EventRecording(JSON.stringify(scenario), undefined, undefined, 0, Number.POSITIVE_INFINITY, 1 << 30);
  let guard = 0;
  while (!rec.advance(1000)) if (++guard > 1e6) throw new Error('no end');
  expect(rec.complete).toBe(true);
  const text = new TextDecoder().decode(rec.takeBytes());
  rec.free();
  return text;
}

const workload = (n: number, extra: object = {}) => ({
  num_requests: n,
  rate_rps: 40,
  input_tokens: { mean: 900, stddev: 500 },
  output_tokens: { mean: 64, stddev: 16 },
  shared_prefix_ratio: 0.6,
  num_prefix_groups: 4,
  seed: 3,
  ...extra,
});

// Small pools under load: preemption, eviction, a host tier overflowing, prompts over the
// batch budget with chunking off (unschedulable, with a reason), KV routing, disaggregation.
const SCENARIOS = {
  'vLLM, KV-routed, host offload': {
    engine: {
      num_gpu_blocks: 160,
      block_size: 16,
      enable_chunked_prefill: false,
      max_num_batched_tokens: 1600,
      kv_cache_bytes_per_token: 131072,
      native_host_offload: { num_host_blocks: 120 },
    },
    cluster: { num_workers: 2, router_mode: 'kv_router' },
    workload: workload(60),
  },
  'SGLang, disaggregated': {
    engine: { backend: 'sglang', num_gpu_blocks: 2400, block_size: 1 },
    cluster: { num_prefill_workers: 1, num_decode_workers: 1 },
    workload: workload(40),
  },
};

const streams = new Map<string, string>();
/** A scenario's stream, recorded once for all the tests. */
function stream(name: keyof typeof SCENARIOS): string {
  let text = streams.get(name);
  if (text === undefined) {
    text = record(SCENARIOS[name]);
    streams.set(name, text);
  }
  return text;
}

describe('the event stream against its declared types', () => {
  for (const name of Object.keys(SCENARIOS) as (keyof typeof SCENARIOS)[]) {
    it(`${name}: every line has exactly its kind's fields`, () => {
      const text = stream(name);
      const lines = text.trimEnd().split('\n');
      expect(lines.length).toBeGreaterThan(100);
      // Problems collected and compared once (an expect per field of 3,000 lines is slow).
      const problems: string[] = [];
      lines.forEach((raw, i) => {
        const line = JSON.parse(raw) as Record<string, unknown>;
        const kind = String(line.kind);
        const at = `line ${i + 1} (${kind})`;
        if (!Object.hasOwn(EVENT_FIELDS, kind)) {
          problems.push(`${at}: the kind is not declared`);
          return;
        }
        const spec = EVENT_FIELDS[kind as keyof typeof EVENT_FIELDS] as Record<string, 'required' | 'optional'>;
        for (const key of Object.keys(line)) if (!(key in spec)) problems.push(`${at}: ${key} is not declared`);
        for (const [key, need] of Object.entries(spec)) if (need === 'required' && !(key in line)) problems.push(`${at}: ${key} is missing`);
        // The literal types the declarations promise.
        if ('pool' in line && !['aggregated', 'prefill', 'decode'].includes(String(line.pool))) problems.push(`${at}: pool ${line.pool}`);
        if ('tier' in line && line.tier !== 'host') problems.push(`${at}: tier ${line.tier}`);
        if (kind === 'finished' && !['completed', 'rejected', 'unschedulable'].includes(String(line.status))) problems.push(`${at}: status ${line.status}`);
      });
      expect(problems.slice(0, 20)).toEqual([]);
      // And the page reads it all (nothing skipped as unknown).
      expect(parseEvents(text)).toHaveLength(lines.length);
    });
  }

  it('the scenarios show every kind with every field, optional ones included', () => {
    const seen = new Map<string, Set<string>>();
    for (const name of Object.keys(SCENARIOS) as (keyof typeof SCENARIOS)[]) {
      for (const raw of stream(name).trimEnd().split('\n')) {
        const line = JSON.parse(raw) as Record<string, unknown>;
        const keys = seen.get(String(line.kind)) ?? new Set<string>();
        for (const key of Object.keys(line)) keys.add(key);
        seen.set(String(line.kind), keys);
      }
    }
    for (const [kind, spec] of Object.entries(EVENT_FIELDS)) {
      expect([...(seen.get(kind) ?? [])].sort(), kind).toEqual(Object.keys(spec).sort());
    }
  });
});
