// The lessons' texts quote what their runs show (prefix reuse, TTFT, preemption victims'
// effects): each figure is checked here against the engine, so a change to the engine that
// moves one fails until the text says what the page will show.

import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { initSync, normalizeScenario, Simulation } from '../../pkg/servesim_wasm.js';
import { LESSONS, lessonVariant } from './lessons';

beforeAll(() => {
  initSync({ module: readFileSync(fileURLToPath(new URL('../../pkg/servesim_wasm_bg.wasm', import.meta.url))) });
});

function summary(partial: Record<string, unknown>): Record<string, number> {
  const sim = new Simulation(normalizeScenario(JSON.stringify(partial)));
  let guard = 0;
  while (!sim.advance(5000)) if (++guard > 1e6) throw new Error('no end');
  const s = sim.summary() as unknown as Record<string, number>;
  sim.free();
  return s;
}

const lesson = (id: string) => {
  const l = LESSONS.find((x) => x.id === id);
  if (!l) throw new Error(`no lesson ${id}`);
  return l;
};
const runs = (id: string) =>
  [0, ...lesson(id).compare.map((_, i) => i + 1)].map((i) => ({ ...lessonVariant(lesson(id), i), s: summary(lessonVariant(lesson(id), i).scenario) }));
const r2 = (x: number | undefined) => (x ?? Number.NaN).toFixed(2);

describe('each lesson compares one setting, and its text quotes the runs', () => {
  it('every variant changes only what its patch says, and names itself', () => {
    for (const l of LESSONS) {
      expect(l.compare.length).toBeGreaterThan(0);
      for (let i = 1; i <= l.compare.length; i++) {
        const v = lessonVariant(l, i);
        expect(v.scenario.name).toBe(`${String(l.scenario.name)} (${v.label})`);
        expect(v.scenario.workload).toEqual(l.scenario.workload);
      }
    }
  });

  it('prefix caching on vs off', () => {
    const [on, off] = runs('prefix-reuse');
    expect(off?.s.prefix_cache_reused_ratio).toBe(0);
    expect(off?.look).toContain(`${((on?.s.mean_ttft_ms ?? 0) / 1000).toFixed(2)} s → ${((off?.s.mean_ttft_ms ?? 0) / 1000).toFixed(2)} s`);
  });

  it('LIFO vs FIFO preemption', () => {
    const [lifo, fifo] = runs('preemption');
    expect(lifo?.s.num_preemptions).toBeGreaterThan(0);
    expect(fifo?.s.num_preemptions).toBeGreaterThan(0);
    expect(fifo?.look).toContain(`${r2(lifo?.s.prefix_cache_reused_ratio)} → ${r2(fifo?.s.prefix_cache_reused_ratio)}`);
    const p99 = (x: number | undefined) => Math.round((x ?? 0) / 1000);
    expect(fifo?.look).toContain(`p99 TTFT ${p99(lifo?.s.p99_ttft_ms)} s → ${p99(fifo?.s.p99_ttft_ms)} s`);
  });

  it('native LRU = kvbm LRU, and multi-LRU keeps more prefixes', () => {
    const [native, lru, multi] = runs('eviction');
    expect(lru?.s).toEqual(native?.s);
    expect(lru?.look).toContain(`prefix reuse ${r2(native?.s.prefix_cache_reused_ratio)} both`);
    expect(multi?.look).toContain(`${r2(lru?.s.prefix_cache_reused_ratio)} → ${r2(multi?.s.prefix_cache_reused_ratio)}`);
    expect(multi?.s.prefix_cache_reused_ratio).toBeGreaterThan(lru?.s.prefix_cache_reused_ratio ?? 1);
  });

  it('KV-aware routing vs round robin', () => {
    const [kv, rr] = runs('kv-routing');
    expect(rr?.look).toContain(`from ${r2(kv?.s.prefix_cache_reused_ratio)} to ${r2(rr?.s.prefix_cache_reused_ratio)}`);
    expect(kv?.s.committed_prefill_tokens).toBeLessThan(rr?.s.committed_prefill_tokens ?? 0);
  });
});
