// The scaling and offload views' data: the wasm module's planner record and tier series for
// the conformance cases (whose figures are the reference's), and the page's derivations
// from them (replica counts over time, tier totals), plus the form's new fields.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { initSync, normalizeScenario, Simulation } from '../../pkg/servesim_wasm.js';
import { cliRun } from '../../tests/cli';
import type { Columns, EffectiveConfig, PlannerRecord } from '../engine/protocol';
import { parseField } from '../form/fields';
import { LOAD_FIELDS, OFFLOAD, SCALING, SERVICE } from '../form/harness-fields';
import { parseStep, scriptPools } from '../form/script-editor';
import { EXAMPLES } from '../playground/examples';
import { type JsonObject, setPath } from '../scenario/json';
import { counterRows, tierTimes, tierTotals } from './offload-view';
import { replicaSteps } from './planner-view';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const CASES = join(ROOT, 'tests', 'conformance', 'dynosim');

beforeAll(() => {
  initSync({ module: readFileSync(join(import.meta.dirname, '..', '..', 'pkg', 'servesim_wasm_bg.wasm')) });
});

interface Case {
  trace: string;
  replay: { trace_block_size: number; planner_config?: JsonObject; extra_engine_args: { engine: JsonObject; startup_time?: number } };
  per_request: (number | null)[][];
  per_request_columns: string[];
  expected_planner?: PlannerRecord;
}

function loadCase(name: string): { c: Case; trace: string } {
  const c = JSON.parse(readFileSync(join(CASES, `${name}.json`), 'utf8')) as Case;
  return { c, trace: readFileSync(join(CASES, c.trace), 'utf8') };
}

/** The case as a scenario file (a trace workload), the way the page runs an uploaded trace. */
function asScenario(c: Case): JsonObject {
  const s: JsonObject = {
    engine: c.replay.extra_engine_args.engine,
    workload: { type: 'trace', path: 'trace.jsonl', trace_block_size: c.replay.trace_block_size },
  };
  if (c.replay.planner_config) s.planner = c.replay.planner_config;
  if (c.replay.extra_engine_args.startup_time !== undefined) s.startup_time = c.replay.extra_engine_args.startup_time;
  return s;
}

function run(json: string, trace?: string): Simulation {
  const sim = new Simulation(json, trace, 0);
  let guard = 0;
  while (!sim.advance(1000)) if (++guard > 1e6) throw new Error('no end');
  return sim;
}

describe('planner record', () => {
  it("is the reference's for the planner case, and the replica steps follow its scaling events", { timeout: 60_000 }, () => {
    const { c, trace } = loadCase('planner-agg-load');
    const sim = run(JSON.stringify(asScenario(c)), trace);
    const record = sim.planner() as PlannerRecord;
    expect(record).toEqual(c.expected_planner);
    const config = sim.config() as EffectiveConfig;
    const end = Number(sim.summary().duration_ms);
    const steps = replicaSteps(record, config, end);
    expect(steps.pools.map((p) => p.pool)).toEqual(['agg']);
    const agg = steps.pools[0] as (typeof steps.pools)[0];
    expect(steps.t_s[0]).toBe(0);
    expect(agg.active[0]).toBe(1);
    expect(steps.t_s.at(-1)).toBeCloseTo(end / 1000, 9);
    // After each scaling event, active + starting (the workers not draining) is its target.
    for (const e of record.scaling_events) {
      const i = steps.t_s.indexOf(e.at_s);
      expect(i, `step at ${e.at_s} s`).toBeGreaterThan(0);
      expect((agg.active[i] ?? 0) + (agg.starting[i] ?? 0)).toBe(e.to_count);
    }
    expect(Math.max(...agg.active)).toBe(3);
    expect(agg.starting.some((n) => n > 0)).toBe(true);
  });

  it('is null without scaling', () => {
    expect(run('{"workload": {"num_requests": 5}}').planner()).toBeNull();
  });
});

describe('tier series', () => {
  it("counts the reference's host reuse of the offload case, window by window", { timeout: 60_000 }, () => {
    const { c, trace } = loadCase('offload-g2-basic');
    const sim = run(JSON.stringify(asScenario(c)), trace);
    const tiers = sim.tierSeries() as unknown as Columns;
    const series = sim.timeseries() as unknown as { t_ms: Float64Array; interval_ms: number };
    const n = (tiers.host_hit_tokens as Float64Array).length;
    expect(n).toBeGreaterThanOrEqual(series.t_ms.length);
    const col = c.per_request_columns.indexOf('host_reused_input_tokens');
    const first = c.per_request_columns.indexOf('first_token_ms');
    const hostRef = c.per_request.reduce((a, r) => a + Number(r[col] ?? 0), 0);
    const totals = tierTotals(tiers);
    expect(hostRef).toBeGreaterThan(0);
    expect(totals.host).toBe(hostRef);
    expect(totals.loads).toBe(c.per_request.filter((r) => Number(r[col]) > 0).length);
    // Each request in the window of its (reference) first token.
    const perWindow = new Array<number>(n).fill(0);
    for (const r of c.per_request) {
      const k = Math.floor(Number(r[first]) / series.interval_ms);
      perWindow[k] = (perWindow[k] ?? 0) + Number(r[col] ?? 0);
    }
    expect(Array.from(tiers.host_hit_tokens as Float64Array)).toEqual(perWindow);
    // GPU + host hits over all tokens of first admissions: the summary's first-admission reuse.
    const s = sim.summary();
    expect((totals.gpu + totals.host) / (totals.gpu + totals.host + totals.computed)).toBeCloseTo(Number(s.first_admission_prefix_cache_reused_ratio), 12);
    const t = tierTimes(series.t_ms, series.interval_ms, n);
    expect(t.length).toBe(n);
    expect(t.at(-1)).toBe(n * series.interval_ms);
  });

  it('has no host hits without offload', () => {
    const tiers = run('{"workload": {"num_requests": 20, "num_prefix_groups": 2, "shared_prefix_ratio": 0.5}}').tierSeries() as unknown as Columns;
    const t = tierTotals(tiers);
    expect([t.host, t.loads]).toEqual([0, 0]);
    expect(t.gpu).toBeGreaterThan(0);
  });
});

describe('example scenarios', () => {
  it('are valid and run as `servesim run` does', { timeout: 120_000 }, () => {
    for (const ex of EXAMPLES) {
      expect(() => normalizeScenario(JSON.stringify(ex.scenario)), ex.id).not.toThrow();
      const sim = run(JSON.stringify(ex.scenario));
      expect(sim.summary(), ex.id).toEqual(cliRun(ex.scenario).summary);
    }
  });

  it('show what they are for', { timeout: 60_000 }, () => {
    const byId = Object.fromEntries(EXAMPLES.map((e) => [e.id, run(JSON.stringify(e.scenario))]));
    const summary = (id: string) => {
      const s = byId[id]?.summary();
      if (!s) throw new Error(`no example ${id}`);
      return s;
    };
    expect(summary('closed-loop').goodput_completed_requests).toBeGreaterThan(0);
    const planner = byId.planner?.planner() as PlannerRecord;
    expect(planner.scaling_events.some((e) => e.reason === 'scale_up')).toBe(true);
    const offload = tierTotals(byId.offload?.tierSeries() as unknown as Columns);
    expect(offload.host).toBeGreaterThan(0);
    // DeepSeek-R1 on 8 H200s: one engine of eight attention-DP ranks, the experts over all eight.
    const ds = byId['deepseek-r1']?.config() as EffectiveConfig;
    expect(ds.total_gpus).toBe(8);
    expect(ds.pools[0]?.gpus_per_worker).toBe(8);
    expect(summary('deepseek-r1').completed_requests).toBe(400);
  });
});

describe('form fields', () => {
  const field = (path: string) => [...LOAD_FIELDS.fields, ...SERVICE.fields, ...SCALING.fields, ...OFFLOAD.fields].find((f) => f.path === path);

  it('parse and refuse with a reason', () => {
    const users = field('workload.concurrency');
    expect(users && parseField(users, '32')).toEqual({ value: 32 });
    expect(users && parseField(users, '')).toEqual({ value: null });
    expect(users && parseField(users, '0')).toEqual({ error: 'at least 1' });
    const sla = field('slo.ttft_ms');
    expect(sla && parseField(sla, '0')).toEqual({ error: 'must be more than 0' });
    const rate = field('planner.decode_scale_up_kv_rate');
    expect(rate && parseField(rate, '120')).toEqual({ error: 'at most 100' });
  });

  it('switch the planner, the script and the tiers on and off', () => {
    const s: JsonObject = { cluster: { num_workers: 1 }, engine: {} };
    const mode = field('scaling-mode');
    mode?.set?.(s, 'planner');
    expect(mode?.get?.(s)).toBe('planner');
    expect(s.planner).toMatchObject({ mode: 'agg', optimization_target: 'load' });
    mode?.set?.(s, 'script');
    expect(s.planner).toBeUndefined();
    expect(s.scaling).toEqual([{ at_s: 10, pool: 'agg', count: 2 }]);
    setPath(s, 'cluster.num_prefill_workers', 1);
    setPath(s, 'cluster.num_decode_workers', 1);
    expect(scriptPools(s)).toEqual(['prefill', 'decode']);
    mode?.set?.(s, 'planner');
    expect(s.planner).toMatchObject({ mode: 'disagg', prefill_scale_up_queue_tokens: 8192 });
    mode?.set?.(s, 'off');
    expect([s.planner, s.scaling]).toEqual([undefined, undefined]);
    const g2 = field('offload-g2');
    g2?.set?.(s, true);
    expect(s.engine).toMatchObject({ native_host_offload: { num_host_blocks: 16384 }, kv_cache_bytes_per_token: 131072 });
    field('offload-g3')?.set?.(s, true);
    expect((s.engine as JsonObject).g3_offload).toMatchObject({ scope: 'worker_local' });
    g2?.set?.(s, false);
    expect([(s.engine as JsonObject).native_host_offload, (s.engine as JsonObject).g3_offload]).toEqual([undefined, undefined]);
  });

  it("check a script step's inputs", () => {
    expect(parseStep('12.5', '3')).toEqual({ at_s: 12.5, count: 3 });
    expect(parseStep('-1', '3')).toMatchObject({ which: 'at_s' });
    expect(parseStep('5', '0')).toMatchObject({ which: 'count' });
    expect(parseStep('5', '2.5')).toMatchObject({ which: 'count' });
  });

  it('flatten tier counters for the table', () => {
    expect(counterRows({ lookup_hits: 3, read: { completed_bytes: 10 } })).toEqual([
      ['lookup_hits', '3'],
      ['read.completed_bytes', '10'],
    ]);
  });
});
