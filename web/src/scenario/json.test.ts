import { describe, expect, it } from 'vitest';
import { CLUSTER, ENGINE, parseField, WORKLOAD } from '../form/fields';
import { diff, getPath, merge, setPath } from './json';

const defaults = {
  version: 1,
  seed: 42,
  engine: { backend: 'vllm', num_gpu_blocks: 16384, block_size: 0, max_num_seqs: 256, timing_model: { type: 'polynomial' }, sglang: null },
  dp_size: 1,
  cluster: { num_workers: 1, router_mode: 'round_robin' },
  workload: { type: 'synthetic', num_requests: 200, rate_rps: 10, input_tokens: { mean: 2048, stddev: 512 } },
};

describe('scenario diff', () => {
  it('keeps only the fields that differ', () => {
    const cur = merge(defaults, { engine: { num_gpu_blocks: 12345, block_size: 32 } });
    expect(diff(cur, defaults)).toEqual({ engine: { num_gpu_blocks: 12345, block_size: 32 } });
    expect(diff(defaults, defaults)).toEqual({});
  });

  it('keeps the tag of tagged objects, and carries them whole when the tag changes', () => {
    const cur = merge(defaults, { workload: { type: 'synthetic', rate_rps: 20 } });
    expect(diff(cur, defaults)).toEqual({ workload: { type: 'synthetic', rate_rps: 20 } });
    const tr = merge(defaults, { workload: { type: 'trace', path: 't.jsonl', trace_block_size: 512 } });
    expect(diff(tr, defaults)).toEqual({ workload: { type: 'trace', path: 't.jsonl', trace_block_size: 512 } });
    const fixed = merge(defaults, { engine: { timing_model: { type: 'fixed', prefill_ms: 1, decode_ms: 2 } } });
    expect(diff(fixed, defaults)).toEqual({ engine: { timing_model: { type: 'fixed', prefill_ms: 1, decode_ms: 2 } } });
  });

  it("carries an object of plain values whole, so the engine's field defaults never fill it in", () => {
    const cur = merge(defaults, { workload: { type: 'synthetic', input_tokens: { mean: 4096, stddev: 512 } } });
    // {"mean": 4096} alone would mean a fixed length to the engine, not the 512 on screen.
    expect(diff(cur, defaults)).toEqual({ workload: { type: 'synthetic', input_tokens: { mean: 4096, stddev: 512 } } });
  });

  it('null and nested values', () => {
    const cur = merge(defaults, { engine: { max_num_seqs: null, sglang: { schedule_policy: 'lpm' } } });
    expect(diff(cur, defaults)).toEqual({ engine: { max_num_seqs: null, sglang: { schedule_policy: 'lpm' } } });
    expect(merge(defaults, diff(cur, defaults))).toEqual(cur);
  });

  it('paths', () => {
    const o = structuredClone(defaults) as Record<string, unknown> as never;
    setPath(o, 'engine.eviction_backend', 'lru');
    expect(getPath(o, 'engine.eviction_backend')).toBe('lru');
    setPath(o, 'engine.eviction_backend', undefined);
    expect(getPath(o, 'engine.eviction_backend')).toBeUndefined();
    expect(getPath(o, 'nope.deeper')).toBeUndefined();
  });
});

describe('field checks', () => {
  const field = (path: string) => {
    const found = [...ENGINE.fields, ...CLUSTER.fields, ...WORKLOAD.fields].find((f) => f.path === path);
    if (!found) throw new Error(`no field ${path}`);
    return found;
  };
  it('flag bad numbers with a reason', () => {
    expect(parseField(field('engine.num_gpu_blocks'), '-5')).toEqual({ error: 'at least 1' });
    expect(parseField(field('engine.num_gpu_blocks'), '1.5')).toEqual({ error: 'a whole number' });
    // Empty: unset (the engine's default, or what a roofline's GPUs hold).
    expect(parseField(field('engine.num_gpu_blocks'), '')).toEqual({ value: null });
    expect(parseField(field('workload.num_requests'), '')).toEqual({ error: 'required' });
    expect(parseField(field('engine.num_gpu_blocks'), ' 2048 ')).toEqual({ value: 2048 });
    expect(parseField(field('workload.rate_rps'), '0')).toEqual({ error: 'must be more than 0' });
    expect(parseField(field('workload.rate_rps'), '1e2')).toEqual({ value: 100 });
    expect(parseField(field('workload.rate_rps'), '12abc')).toEqual({ error: 'a number' });
    expect(parseField(field('workload.shared_prefix_ratio'), '1.5')).toEqual({ error: 'at most 1' });
    expect(parseField(field('engine.max_num_seqs'), '')).toEqual({ value: null });
    expect(parseField(field('engine.preemption_mode'), 'LIFO')).toEqual({ error: 'choose one of the listed values' });
  });
  it('every field has a label, and numbers have a range', () => {
    for (const f of [...ENGINE.fields, ...CLUSTER.fields, ...WORKLOAD.fields]) {
      expect(f.label.length).toBeGreaterThan(0);
      if (f.kind === 'int' || f.kind === 'float') expect(f.min, f.path).toBeDefined();
    }
  });
});
