// The real engine module (web/pkg, built by scripts/build-wasm.sh) loaded in Node.

import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { defaultScenario, initSync, inspectScenario, normalizeScenario, presets, Simulation, smallestTensorParallel } from '../../pkg/servesim_wasm.js';
import { cliRun } from '../../tests/cli';
import { diff, type JsonObject, merge } from '../scenario/json';
import { recordsCsv, seriesCsv } from './exports';
import { CLUSTER_COLUMNS, type EffectiveConfig, type Presets, RECORD_COLUMNS, type RecordColumns, type TimeSeries } from './protocol';

beforeAll(() => {
  const wasm = readFileSync(fileURLToPath(new URL('../../pkg/servesim_wasm_bg.wasm', import.meta.url)));
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
    // Unset: Dynamo's 16384, or what a roofline's GPUs hold (the engine's config says which).
    expect(d.engine.num_gpu_blocks).toBeNull();
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
    ] as const) {
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
    const ts = sim.timeseries() as unknown as TimeSeries;
    expect(ts.t_ms.length).toBeGreaterThan(10);
    expect(ts.ranks).toHaveLength(2);
    expect(Object.keys(ts.cluster).sort()).toEqual([...CLUSTER_COLUMNS].sort());
    expect(ts.cluster.output_tok_s.length).toBe(ts.t_ms.length);
    const summary = sim.summary();
    const tokens = ts.cluster.output_tok_s.reduce((s, x) => s + (x * ts.interval_ms) / 1000, 0);
    expect(tokens).toBeCloseTo(summary.total_output_tokens, 3);
    expect(recordsCsv(rec).trim().split('\n')).toHaveLength(81);
    expect(seriesCsv(ts as unknown as TimeSeries).split('\n')[0]).toContain('w1_dp0_kv_usage');
  });

  it('cancels, leaving unfinished requests out', () => {
    const sim = new Simulation('{"workload": {"type": "synthetic", "num_requests": 5000, "rate_rps": 100}}');
    sim.advance(200);
    sim.cancel();
    expect(sim.done).toBe(true);
    expect(sim.cancelled).toBe(true);
    expect(sim.advance(10)).toBe(true);
    const s = sim.summary();
    // The workload has 5000 requests; the summary counts those that arrived before the cancel.
    expect(sim.numRequests()).toBe(5000);
    expect(s.num_requests).toBeGreaterThan(0);
    expect(s.num_requests).toBeLessThan(5000);
    expect(s.completed_requests).toBeLessThan(s.num_requests);
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
    const npz = readFileSync(fileURLToPath(new URL('../../../tests/conformance/profiles/profile-a.npz', import.meta.url)));
    const scenario = JSON.stringify({
      engine: { timing_model: { type: 'external', provider: 'dynamo_profile', config: { path: 'a.npz' } } },
      workload: { type: 'synthetic', num_requests: 20 },
    });
    expect(() => new Simulation(scenario)).toThrow(/a\.npz.*upload/);
    expect(() => new Simulation(scenario, undefined, undefined, { 'a.npz': new Uint8Array([1, 2, 3]) })).toThrow(/^a\.npz: /);
    const sim = new Simulation(scenario, undefined, 0, { 'a.npz': new Uint8Array(npz) });
    while (!sim.advance(1000));
    expect(sim.summary().completed_requests).toBe(20);
    // The profile's numbers: exactly what `servesim run` gives for the same scenario and file.
    const native = cliRun(scenario, { 'a.npz': new Uint8Array(npz) });
    expect(sim.summary()).toEqual(native.summary);
    expect(JSON.parse(sim.reportJson())).toEqual(native);
  });
});

describe('latency CDFs', () => {
  it('come from the engine, ascending, ending at 100, at the summary’s extremes', () => {
    const sim = runToEnd('{"workload": {"type": "synthetic", "num_requests": 80}}');
    const c = sim.latencyCdfs(600) as { ttft: [number[], number[]]; e2e: [number[], number[]] };
    const s = sim.summary();
    expect(c.ttft[0].at(-1)).toBeCloseTo(s.max_ttft_ms, 6);
    expect(c.ttft[1].at(-1)).toBe(100);
    expect(c.e2e[0][0]).toBeCloseTo(s.min_e2e_latency_ms, 6);
    expect(c.ttft[0].every((x, i, a) => i === 0 || x > (a[i - 1] ?? -Infinity))).toBe(true);
  });
});

const inspect = (partial: object): { scenario: JsonObject; config: EffectiveConfig } => JSON.parse(inspectScenario(JSON.stringify(partial)));
const roofline70b = (gpu: string, tp = 4) => ({ engine: { timing_model: { type: 'roofline', model: 'llama-3.1-70b', gpu, tp } } });

describe('derived values come from the engine, for the settings given', () => {
  it('the default pool, and a roofline pool with its GPUs', () => {
    const d = inspect({}).config;
    expect(d.pools[0]).toMatchObject({ num_gpu_blocks: 16384, block_size: 64, kv_tokens_per_rank: 16384 * 64, kv_bytes_per_token: null, gpus_per_worker: 1 });
    expect(d.total_gpus).toBe(1);
    expect(d.no_effect.map((n) => n.field)).toEqual(['engine.timing_model']);

    const c = inspect({ ...roofline70b('h100'), dp_size: 2, cluster: { num_workers: 3 } }).config;
    const p = c.pools[0];
    // 4 × 80 GB × 0.9 − 141.1 GB of weights over 64 tokens × 320 KiB per block.
    expect([p?.num_gpu_blocks, p?.kv_bytes_per_token, p?.tensor_parallel_size, p?.gpus_per_worker, p?.gpus, c.total_gpus]).toEqual([
      7004, 327680, 4, 8, 24, 24,
    ]);
    expect(p?.kv_gib_per_rank).toBeCloseTo((7004 * 64 * 327680) / 2 ** 30, 9);
    expect(p?.timing.params_billion).toBeCloseTo(70.55, 1);
  });

  it('a scenario sent back edited derives its pool again (the path does not matter)', () => {
    const defaults = JSON.parse(defaultScenario()) as JsonObject;
    // What the page holds after opening an H100 link, then switches to an H200.
    const held = inspect(roofline70b('h100')).scenario;
    expect((held.engine as JsonObject).num_gpu_blocks).toBeNull();
    ((held.engine as JsonObject).timing_model as JsonObject).gpu = 'h200';
    const edited = inspect(diff(held, defaults)).config.pools[0];
    const fresh = inspect(roofline70b('h200')).config.pools[0];
    expect(edited?.num_gpu_blocks).toBe(17475);
    expect(edited).toEqual(fresh);
    // A value the user set stays set.
    expect(inspect({ engine: { ...roofline70b('h200').engine, num_gpu_blocks: 7004 } }).config.pools[0]?.num_gpu_blocks).toBe(7004);
  });

  it('the smallest tensor-parallel size that leaves room for the KV cache', () => {
    const tp = (model: string, gpu: string, extra = {}) => smallestTensorParallel(JSON.stringify({ type: 'roofline', model, gpu, ...extra }));
    expect([
      tp('llama-3.1-8b', 'h100'),
      tp('llama-3.1-70b', 'h100'),
      tp('llama-3.1-70b', 'h200'),
      tp('llama-3.1-70b', 'h100', { weight_dtype: 'fp8' }),
    ]).toEqual([1, 4, 2, 2]);
    // At that size the engine runs it; one below, it refuses, naming the size.
    expect(inspect(roofline70b('h100', 4)).config.pools[0]?.num_gpu_blocks).toBeGreaterThan(0);
    expect(() => inspect(roofline70b('h100', 1))).toThrow(/engine\.num_gpu_blocks: .*smallest tp that leaves room for the KV cache is 4/);
  });

  it('preset figures are the engine’s', () => {
    const p = JSON.parse(presets()) as Presets;
    const m70 = p.models.find((m) => m.id === 'llama-3.1-70b');
    expect(m70?.kv_bytes_per_token).toEqual({ auto: 327680, bfloat16: 327680, fp8: 163840, float32: 655360 });
    expect(p.gpus.find((g) => g.id === 'h200')?.spec.hbm_gb).toBe(141);
    // Each preset's KV size is what a roofline of it derives.
    for (const m of p.models) {
      const c = inspect({ engine: { timing_model: { type: 'roofline', model: m.id, gpu: 'b200', tp: 8 } } }).config;
      expect(c.pools[0]?.kv_bytes_per_token, m.id).toBe(m.kv_bytes_per_token.auto);
    }
  });

  it('a custom model shape is used as typed', () => {
    const spec = {
      num_hidden_layers: 40,
      hidden_size: 5120,
      num_attention_heads: 40,
      num_key_value_heads: 8,
      head_dim: 128,
      intermediate_size: 13824,
      vocab_size: 32000,
    };
    const c = inspect({ engine: { timing_model: { type: 'roofline', model: spec, gpu: 'h100' } } }).config.pools[0];
    expect(c?.kv_bytes_per_token).toBe(40 * 2 * 8 * 128 * 2);
    expect(c?.timing.model).toBe('custom');
    expect(c?.timing.params_billion).not.toBeCloseTo(8.03, 1);
  });

  it('partial nested objects take defaults, in normalisation and in runs', () => {
    const n = JSON.parse(normalizeScenario('{"workload": {"output_tokens": {"stddev": 100}}}'));
    expect(n.workload).toMatchObject({ type: 'synthetic', output_tokens: { mean: 256, stddev: 100 }, input_tokens: { mean: 2048, stddev: 512 } });
    const sim = runToEnd('{"workload": {"num_requests": 30, "output_tokens": {"stddev": 100}}}');
    expect(sim.summary().completed_requests).toBe(30);
  });

  it('a diff of the page parses back to the same scenario', () => {
    const defaults = JSON.parse(defaultScenario()) as JsonObject;
    for (const partial of [
      { workload: { type: 'synthetic', input_tokens: { mean: 4096, stddev: 512 } } },
      { workload: { type: 'synthetic', output_tokens: { mean: 300, stddev: 0 } } },
      { cluster: { router_mode: 'kv_router', router_config: { router_temperature: 0.5 } } },
      { engine: { backend: 'sglang', sglang: { schedule_policy: 'lpm' } } },
      roofline70b('h100'),
    ]) {
      const full = JSON.parse(normalizeScenario(JSON.stringify(partial))) as JsonObject;
      const back = JSON.parse(normalizeScenario(JSON.stringify(diff(full, defaults))));
      expect(back, JSON.stringify(partial)).toEqual(full);
      expect(merge(defaults, diff(full, defaults))).toEqual(full);
    }
  });

  it('a run states the config it ran with, as `servesim run` does', () => {
    const json = JSON.stringify({ ...roofline70b('h200'), workload: { num_requests: 40, rate_rps: 20 } });
    const sim = runToEnd(json);
    const report = JSON.parse(sim.reportJson());
    expect(Object.keys(report)[0]).toBe('config');
    expect(report.config).toEqual(sim.config());
    expect(report.config).toEqual(inspect(JSON.parse(json)).config);
    expect(report).toEqual(cliRun(json));
  });

  it('counts preemptions, and they add up to the per-rank series', () => {
    const json =
      '{"engine": {"num_gpu_blocks": 200}, "workload": {"num_requests": 100, "arrival": "burst", "input_tokens": {"mean": 1000, "stddev": 200}, "output_tokens": {"mean": 600, "stddev": 100}}}';
    const sim = runToEnd(json);
    const s = sim.summary();
    expect(s.num_preemptions).toBeGreaterThan(0);
    expect(s.num_retractions).toBe(0);
    const ts = sim.timeseries() as unknown as TimeSeries;
    const charted = ts.ranks.reduce((n, r) => n + (r.columns.preemptions ?? new Float64Array()).reduce((a, b) => a + b, 0), 0);
    expect(charted).toBe(s.num_preemptions);
    const readmitted = (sim.records() as RecordColumns).admissions.reduce((n, a) => n + Math.max(0, a - 1), 0);
    expect(readmitted).toBe(s.num_preemptions);
    // SGLang's pages are single tokens: the same 12,800 tokens of KV.
    const sg = runToEnd(json.replace('"engine": {"num_gpu_blocks": 200', '"engine": {"backend": "sglang", "num_gpu_blocks": 12800'));
    expect(sg.summary().num_retractions).toBeGreaterThan(0);
    expect(sg.summary().num_preemptions).toBe(0);
  });
});

describe('extreme inputs', () => {
  it('10^7 and 10^12 requests per second run, with a bounded series', () => {
    for (const rate of [1e7, 1e12]) {
      const t0 = performance.now();
      const sim = runToEnd(JSON.stringify({ workload: { num_requests: 200, rate_rps: rate } }));
      expect(performance.now() - t0, `rate ${rate}`).toBeLessThan(5000);
      expect(sim.summary().completed_requests).toBe(200);
      const ts = sim.timeseries() as unknown as TimeSeries;
      expect(ts.t_ms.length).toBeLessThanOrEqual(100);
      expect(ts.cluster.requests_completed.reduce((a, b) => a + b, 0)).toBe(200);
    }
  });
});
