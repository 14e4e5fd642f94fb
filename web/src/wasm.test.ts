// The real engine module (web/pkg, built by scripts/build-wasm.sh) loaded in Node.

import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { defaultScenario, initSync, normalizeScenario, Simulation } from '../pkg/servesim_wasm.js';
import { cdf } from './charts-math';
import { CLUSTER_COLUMNS, RECORD_COLUMNS, type RecordColumns, type RunResult } from './protocol';
import { recordsCsv, seriesCsv } from './results';

beforeAll(() => {
  const wasm = readFileSync(fileURLToPath(new URL('../pkg/servesim_wasm_bg.wasm', import.meta.url)));
  initSync({ module: wasm });
});

function runToEnd(json: string, trace?: string): Simulation {
  const sim = new Simulation(json, trace, 0);
  let guard = 0;
  while (!sim.advance(1000)) if (++guard > 1e6) throw new Error('no end');
  return sim;
}

describe('the engine module', () => {
  it('fills defaults and names bad fields', () => {
    const d = JSON.parse(defaultScenario());
    expect(d.engine.num_gpu_blocks).toBe(16384);
    const n = JSON.parse(normalizeScenario('{"engine": {"num_gpu_blocks": 12345, "block_size": 32}}'));
    expect([n.engine.num_gpu_blocks, n.engine.block_size, n.engine.max_num_seqs]).toEqual([12345, 32, 256]);
    expect(() => normalizeScenario('{"engine": {"num_gpu_blockz": 1}}')).toThrow(/engine\.num_gpu_blockz: unknown field/);
    expect(() => new Simulation('{"cluster": {"num_workers": 0}}')).toThrow(/num_workers/);
  });

  it('runs the default scenario deterministically, with progress', () => {
    const sim = new Simulation('{}');
    expect(sim.progress()).toBe(0);
    expect(sim.advance(50)).toBe(false);
    const p = sim.progress();
    expect(p).toBeGreaterThan(0);
    expect(p).toBeLessThan(1);
    while (!sim.advance(1000));
    expect(sim.progress()).toBe(1);
    const a = sim.summary();
    const b = runToEnd('{}').summary();
    expect(a).toEqual(b);
    expect(a.num_requests).toBe(200);
    expect(a.completed_requests).toBe(200);
    for (const key of [
      'mean_ttft_ms',
      'p99_ttft_ms',
      'mean_tpot_ms',
      'mean_itl_ms',
      'mean_e2e_latency_ms',
      'duration_ms',
      'prefix_cache_reused_ratio',
      'output_throughput_tok_s',
    ]) {
      expect(typeof a[key], key).toBe('number');
    }
    const report = JSON.parse(sim.reportJson());
    expect(report.summary).toEqual(a);
    expect(report.per_request).toHaveLength(200);
  });

  it('hands over records and time series as typed-array columns', () => {
    const sim = runToEnd('{"cluster": {"num_workers": 2}, "workload": {"type": "synthetic", "num_requests": 80}}');
    const rec = sim.records() as RecordColumns;
    // The columns the page's types name, and no others.
    expect(Object.keys(rec).sort()).toEqual([...RECORD_COLUMNS].sort());
    expect(rec.arrival_ms).toBeInstanceOf(Float64Array);
    expect(rec.end_ms.length).toBe(80);
    expect(new Set(rec.worker)).toEqual(new Set([0, 1]));
    const ts = sim.timeseries() as RunResult['series'];
    expect(ts.t_ms.length).toBeGreaterThan(10);
    expect(ts.ranks).toHaveLength(2);
    expect(Object.keys(ts.cluster).sort()).toEqual([...CLUSTER_COLUMNS].sort());
    expect(ts.cluster.output_tok_s.length).toBe(ts.t_ms.length);
    const summary = sim.summary();
    const tokens = ts.cluster.output_tok_s.reduce((s, x) => s + (x * ts.interval_ms) / 1000, 0);
    expect(tokens).toBeCloseTo(summary.total_output_tokens, 3);
    const result = { records: rec, series: ts } as unknown as RunResult;
    expect(recordsCsv(result).trim().split('\n')).toHaveLength(81);
    expect(seriesCsv(ts).split('\n')[0]).toContain('w1_dp0_kv_usage');
  });

  it('cancels, leaving unfinished requests out', () => {
    const sim = new Simulation('{"workload": {"type": "synthetic", "num_requests": 5000, "rate_rps": 100}}');
    sim.advance(200);
    sim.cancel();
    expect(sim.done).toBe(true);
    expect(sim.cancelled).toBe(true);
    expect(sim.advance(10)).toBe(true);
    const s = sim.summary();
    expect(s.num_requests).toBe(5000);
    expect(s.completed_requests).toBeLessThan(5000);
  });

  it('runs an uploaded trace and names a bad line', () => {
    const line = (t: number) => JSON.stringify({ timestamp: t, input_length: 600, output_length: 20, hash_ids: [1, 2] });
    const scenario = '{"workload": {"type": "trace", "path": "t.jsonl"}}';
    const sim = runToEnd(scenario, [line(0), line(10), line(20)].join('\n'));
    expect(sim.summary().completed_requests).toBe(3);
    expect(sim.summary().prefix_cache_reused_ratio).toBeGreaterThan(0);
    expect(() => new Simulation(scenario, `${line(0)}\n{"timestamp": 1}\n`)).toThrow(/^t\.jsonl:2: /);
    expect(() => new Simulation(scenario)).toThrow(/t\.jsonl.*upload/);
  });

  it('reading results before the end is an error, not a crash', () => {
    const sim = new Simulation('{}');
    expect(() => sim.summary()).toThrow(/still going/);
  });
});

describe('an uploaded NPZ profile', () => {
  it('times the passes, and a missing or bad one is named', () => {
    const npz = readFileSync(fileURLToPath(new URL('../../tests/conformance/profiles/profile-a.npz', import.meta.url)));
    const scenario = JSON.stringify({
      engine: { timing_model: { type: 'external', provider: 'dynamo_profile', config: { path: 'a.npz' } } },
      workload: { type: 'synthetic', num_requests: 20 },
    });
    expect(() => new Simulation(scenario)).toThrow(/a\.npz.*upload/);
    expect(() => new Simulation(scenario, undefined, undefined, { 'a.npz': new Uint8Array([1, 2, 3]) })).toThrow(/^a\.npz: /);
    const sim = new Simulation(scenario, undefined, 0, { 'a.npz': new Uint8Array(npz) });
    while (!sim.advance(1000));
    const poly = runToEnd(JSON.stringify({ workload: { type: 'synthetic', num_requests: 20 } })).summary();
    expect(sim.summary().completed_requests).toBe(20);
    expect(sim.summary().mean_ttft_ms).not.toBe(poly.mean_ttft_ms);
  });
});

describe('distribution helper', () => {
  it('cdf is increasing and ends at 100', () => {
    const [x, y] = cdf([3, 1, 2, 2, NaN]);
    expect(x).toEqual([1, 2, 3]);
    expect(y).toEqual([25, 75, 100]);
  });
});
