// Every field of the form's tables walked against the engine (web/pkg in Node): the value the
// engine fills in for a field passes the form's own check and is of the field's kind, the
// default the form shows for a field the defaults leave out is the engine's, every option of
// a list is one the engine accepts, and every setting of the default scenario has a field (or
// is named below as one the form leaves to links and scenario files).

import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { defaultScenario, initSync, normalizeScenario } from '../../pkg/servesim_wasm.js';
import { getPath, isObject, type Json, type JsonObject, merge, setPath } from '../scenario/json';
import { CLUSTER, ENGINE, type Field, formatValue, IMAGES, PERF, parseField, SCENARIO, type Section, WORKLOAD } from './fields';
import { LOAD_FIELDS, OFFLOAD, SCALING, SERVICE } from './harness-fields';

const SECTIONS: Section[] = [SCENARIO, ENGINE, CLUSTER, WORKLOAD, PERF, LOAD_FIELDS, IMAGES, SERVICE, SCALING, OFFLOAD];
const FIELDS: Field[] = SECTIONS.flatMap((s) => s.fields);

/** Settings under which the fields that apply only somewhere (`when`) show: the first that fits is used. */
const host = { kv_cache_bytes_per_token: 131072, native_host_offload: { num_host_blocks: 16384 } };
const disagg = { num_prefill_workers: 1, num_decode_workers: 1 };
const loadPlanner = { mode: 'agg', optimization_target: 'load', decode_scale_up_kv_rate: 60, decode_scale_down_kv_rate: 20 };
const CONTEXTS: JsonObject[] = [
  {},
  { engine: { backend: 'sglang' } },
  { engine: { kv_manager: 'kvbm' } },
  { cluster: { router_mode: 'kv_router' } },
  { workload: { type: 'trace', path: 'trace.jsonl' } },
  { workload: { arrival: 'gamma' } },
  { workload: { turns_per_session: 3 } },
  { cluster: disagg },
  { planner: loadPlanner },
  {
    cluster: disagg,
    planner: { ...loadPlanner, mode: 'disagg', prefill_scale_up_queue_tokens: 8192, prefill_scale_down_queue_tokens: 1024 },
  },
  { engine: host },
  { engine: { ...host, native_host_offload: { num_host_blocks: 16384, scope: 'cluster_shared', kv_layout_id: 'a' } } },
  { engine: { ...host, g3_offload: { scope: 'worker_local', num_g3_blocks: 65536 } } },
  { workload: { images: { per_request: 1, tokens_per_image: 576 } } },
  { engine: { timing_model: { type: 'roofline', model: 'llama-3.1-8b', gpu: 'h100' } } },
  { engine: { timing_model: { type: 'fixed', prefill_ms: 20, decode_ms: 8 } } },
];

/**
 * Settings of the default scenario the form's tables leave out, and why: the pickers' own
 * rows (form/pickers/), and what only a link or a scenario file sets.
 */
const NOT_IN_TABLES: Record<string, string> = {
  version: 'the scenario format, not a setting',
  'engine.num_gpu_blocks': 'a table field',
  'engine.worker_type': 'set by the cluster (aggregated, or the pools of disaggregated serving)',
  'engine.kv_bytes_per_token': 'the model picker (a custom KV size)',
  'engine.timing_model.type': 'the timing picker',
  'workload.type': 'the workload picker (synthetic or an uploaded trace)',
  'engine.sglang': "an object the engine fills in under SGLang (its fields are the table's)",
  'engine.planner_profile_data': 'a planner profile: scenario files',
  'cluster.router_config.overlap_score_credit_decay': 'KV router tuning: scenario files',
  'cluster.router_config.prefill_load_scale': 'KV router tuning: scenario files',
  'cluster.router_config.decode_active_request_weight': 'KV router tuning: scenario files',
  'cluster.router_config.use_kv_events': 'KV router tuning: scenario files',
  'cluster.router_config.router_track_active_blocks': 'KV router tuning: scenario files',
  'cluster.router_config.router_assume_kv_reuse': 'KV router tuning: scenario files',
  'cluster.router_config.router_track_prefill_tokens': 'KV router tuning: scenario files',
  'cluster.router_config.router_queue_threshold': 'KV router tuning: scenario files',
  'cluster.router_config.host_cache_hit_weight': 'KV router tuning: scenario files',
  'cluster.prefill_engine': 'per-pool engine overrides: scenario files',
  'cluster.decode_engine': 'per-pool engine overrides: scenario files',
  timeseries_interval_ms: 'the page picks the window (about 80 windows) unless a link sets one',
};

/** Settings an option of a list needs with it (the form shows their fields once it is chosen). */
const NEEDS: Record<string, [string, Json][]> = {
  'planner.mode=disagg': [
    ['cluster.num_prefill_workers', 1],
    ['cluster.num_decode_workers', 1],
    ['planner.prefill_scale_up_queue_tokens', 8192],
    ['planner.prefill_scale_down_queue_tokens', 1024],
  ],
  'engine.native_host_offload.scope=cluster_shared': [['engine.native_host_offload.kv_layout_id', 'layout-a']],
};

function leaves(v: Json, prefix: string, out: string[]): string[] {
  if (isObject(v) && Object.keys(v).length > 0) for (const [k, x] of Object.entries(v)) leaves(x, prefix ? `${prefix}.${k}` : k, out);
  else out.push(prefix);
  return out;
}

let defaults: JsonObject;
const normalize = (s: JsonObject): JsonObject => JSON.parse(normalizeScenario(JSON.stringify(s))) as JsonObject;

/** The defaults with the first context under which `f` shows, as the engine fills it in. */
function contextFor(f: Field): JsonObject {
  for (const c of CONTEXTS) {
    const s = merge(defaults, c);
    if (!f.when || f.when(s)) return normalize(s);
  }
  throw new Error(`${f.path}: no context shows this field (add one to CONTEXTS)`);
}

function kindOf(f: Field, v: Json): string | null {
  switch (f.kind) {
    case 'int':
      return Number.isInteger(v) ? null : `an integer, not ${JSON.stringify(v)}`;
    case 'float':
      return typeof v === 'number' ? null : `a number, not ${JSON.stringify(v)}`;
    case 'bool':
      return typeof v === 'boolean' ? null : `a boolean, not ${JSON.stringify(v)}`;
    case 'enum':
      return f.options?.some((o) => o.value === v) ? null : `one of ${f.options?.map((o) => o.value).join(', ')}, not ${JSON.stringify(v)}`;
    case 'text':
      return typeof v === 'string' ? null : `text, not ${JSON.stringify(v)}`;
  }
}

beforeAll(() => {
  initSync({ module: readFileSync(fileURLToPath(new URL('../../pkg/servesim_wasm_bg.wasm', import.meta.url))) });
  defaults = JSON.parse(defaultScenario()) as JsonObject;
});

describe('the form against the engine', () => {
  it('the engine fills in every field with a value of its kind that the form accepts', () => {
    const problems: string[] = [];
    for (const f of FIELDS) {
      const s = contextFor(f);
      const v = f.get ? f.get(s) : getPath(s, f.path);
      if (v === undefined || v === null) {
        // Unset in the engine's answer: the form must say what empty means, or show a fallback.
        if (v === null && !f.nullable && f.kind !== 'text' && f.fallback === undefined)
          problems.push(`${f.path}: the engine leaves it null; the form requires a value`);
        if (v === undefined && f.fallback === undefined && !f.optional)
          problems.push(`${f.path}: absent from the engine's scenario and neither optional nor with a fallback`);
        continue;
      }
      const kind = kindOf(f, v);
      if (kind) problems.push(`${f.path}: the engine's value must be ${kind}`);
      const parsed = parseField(f, f.kind === 'bool' ? Boolean(v) : formatValue(v));
      if ('error' in parsed) problems.push(`${f.path}: the engine's value ${JSON.stringify(v)} is refused by the form (${parsed.error})`);
      else if (parsed.value !== v) problems.push(`${f.path}: the form reads the engine's ${JSON.stringify(v)} back as ${JSON.stringify(parsed.value)}`);
    }
    expect(problems).toEqual([]);
  });

  it('the default the form shows for a field the defaults leave out is the one the engine fills in', () => {
    const problems: string[] = [];
    for (const f of FIELDS.filter((x) => x.fallback !== undefined && !x.get && getPath(defaults, x.path) === undefined)) {
      const s = contextFor(f);
      setPath(s, f.path, undefined);
      let filled: Json | undefined;
      try {
        filled = getPath(normalize(s), f.path);
      } catch {
        continue; // required where it applies (the engine's message names it)
      }
      // Left unset by the engine (an optional object's key it reads with its own default): nothing to compare.
      if (filled !== undefined && filled !== f.fallback)
        problems.push(`${f.path}: the form shows ${JSON.stringify(f.fallback)}, the engine fills in ${JSON.stringify(filled)}`);
    }
    expect(problems).toEqual([]);
  });

  it('every fallback is a value the form accepts', () => {
    const problems = FIELDS.filter((f) => f.fallback !== undefined && f.fallback !== null && f.kind !== 'bool')
      .map((f) => ({ f, parsed: parseField(f, formatValue(f.fallback)) }))
      .filter(({ parsed }) => 'error' in parsed)
      .map(({ f }) => f.path);
    expect(problems).toEqual([]);
  });

  it('every option of a list is one the engine accepts', () => {
    const refused: string[] = [];
    for (const f of FIELDS.filter((x) => x.kind === 'enum' && !x.set)) {
      const s = contextFor(f);
      for (const o of f.options ?? []) {
        const t = structuredClone(s);
        setPath(t, f.path, o.value);
        // What an option needs besides (the form shows those fields once it is chosen).
        for (const [path, v] of NEEDS[`${f.path}=${o.value}`] ?? []) setPath(t, path, v);
        try {
          normalize(t);
        } catch (e) {
          refused.push(`${f.path} = ${o.value}: ${(e as Error).message}`);
        }
      }
    }
    expect(refused).toEqual([]);
  });

  it('every setting of the default scenario has a field, or a reason it has none', () => {
    const covered = new Set(FIELDS.map((f) => f.path));
    const missing = leaves(defaults, '', []).filter((p) => !covered.has(p) && !(p in NOT_IN_TABLES));
    expect(missing).toEqual([]);
    // And the list names only settings that exist.
    const all = new Set(leaves(defaults, '', []));
    expect(Object.keys(NOT_IN_TABLES).filter((p) => !all.has(p))).toEqual([]);
  });
});
