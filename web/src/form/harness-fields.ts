// Form fields for the harness around the engines: closed-loop and session workloads,
// service levels (goodput), run limits, worker start-up, the planner or a scaling script,
// and KV offload tiers. Every one is optional in a scenario: left at its default it is not
// written, so links made before these fields existed open unchanged.

import { getPath, isObject, type Json, type JsonObject, setPath } from '../scenario/json';
import type { Field, Section } from './fields';
import { scriptEditor } from './script-editor';

const opts = (...values: [string, string][]) => values.map(([value, label]) => ({ value, label }));
const synthetic = (s: JsonObject) => getPath(s, 'workload.type') === 'synthetic';
const trace = (s: JsonObject) => getPath(s, 'workload.type') === 'trace';
const disagg = (s: JsonObject) => Number(getPath(s, 'cluster.num_prefill_workers') ?? 0) > 0 || Number(getPath(s, 'cluster.num_decode_workers') ?? 0) > 0;
const planner = (s: JsonObject) => isObject(s.planner);
const loadTarget = (s: JsonObject) => planner(s) && getPath(s, 'planner.optimization_target') === 'load';
/** A planner of prefill and decode pools: the prefill pool's thresholds apply. */
const prefillPlanner = (s: JsonObject) => disagg(s) || getPath(s, 'planner.mode') === 'disagg';
const hostTier = (s: JsonObject) => isObject(getPath(s, 'engine.native_host_offload'));
const g3Tier = (s: JsonObject) => isObject(getPath(s, 'engine.g3_offload'));

/** Workload fields added to the workload section. */
export const LOAD_FIELDS: Section = {
  id: 'workload',
  title: 'Workload',
  fields: [
    {
      path: 'workload.concurrency',
      advanced: true,
      label: 'Users (closed loop)',
      kind: 'int',
      min: 1,
      max: 1_000_000,
      nullable: 'open loop',
      fallback: null,
      optional: true,
      help: 'At most this many sessions in flight, each starting when one ends; empty: arrivals as configured',
    },
    {
      path: 'workload.turns_per_session',
      advanced: true,
      label: 'Turns per session',
      kind: 'int',
      min: 1,
      max: 10_000,
      fallback: 1,
      optional: true,
      when: synthetic,
    },
    {
      path: 'workload.think_time_ms',
      advanced: true,
      label: 'Think time',
      kind: 'float',
      unit: 'ms',
      min: 0,
      fallback: 0,
      optional: true,
      help: 'Between a turn’s end and the next turn',
      when: (s) => synthetic(s) && Number(getPath(s, 'workload.turns_per_session') ?? 1) > 1,
    },
    {
      path: 'workload.format',
      label: 'Trace format',
      kind: 'enum',
      options: opts(
        ['mooncake', 'Mooncake JSONL'],
        ['mooncake-delta', 'Mooncake, delta timestamps'],
        ['applied_compute_agentic', 'Applied Compute agentic'],
        ['dynamo', 'Dynamo request trace v1 (agent_context: a request graph)'],
        ['agentic_mooncake', 'Agentic Mooncake v2 (a request graph)'],
      ),
      fallback: 'mooncake',
      optional: true,
      when: trace,
      help: 'Sessions (session_id) are honoured in every format; request graphs replay on their own times and dependencies',
    },
  ],
};

export const SERVICE: Section = {
  id: 'slo',
  title: 'Service levels and limits',
  collapsed: true,
  fields: [
    ...(['ttft', 'itl', 'e2e'] as const).map(
      (k): Field => ({
        path: `slo.${k}_ms`,
        label: `SLA ${k === 'e2e' ? 'E2E' : k.toUpperCase()}`,
        kind: 'float',
        unit: 'ms',
        min: 0,
        minExclusive: true,
        nullable: 'none',
        fallback: null,
        optional: true,
        help: k === 'ttft' ? 'A request is good when it meets every SLA set: goodput counts those' : undefined,
      }),
    ),
    {
      path: 'max_sim_time_ms',
      label: 'Stop at',
      kind: 'float',
      unit: 'ms',
      min: 0,
      minExclusive: true,
      nullable: 'the end',
      fallback: null,
      optional: true,
      help: 'Virtual time at which the run stops; only requests finished by then are reported',
    },
    {
      path: 'cluster.kv_event_lag_ms',
      label: 'KV event lag',
      kind: 'float',
      unit: 'ms',
      min: 0,
      fallback: null,
      nullable: 'none',
      optional: true,
      help: "The KV router's indexer sees stored and removed blocks this much later",
      when: (s) => getPath(s, 'cluster.router_mode') === 'kv_router',
    },
  ],
};

const PLANNER_DEFAULTS = { optimization_target: 'load', decode_scale_up_kv_rate: 60, decode_scale_down_kv_rate: 20 };

function scalingMode(s: JsonObject): Json {
  return isObject(s.planner) ? 'planner' : Array.isArray(s.scaling) ? 'script' : 'off';
}

function setScalingMode(s: JsonObject, v: Json): void {
  delete s.planner;
  delete s.scaling;
  if (v === 'planner') {
    const p: JsonObject = { mode: disagg(s) ? 'disagg' : 'agg', ...PLANNER_DEFAULTS };
    if (disagg(s)) Object.assign(p, { prefill_scale_up_queue_tokens: 8192, prefill_scale_down_queue_tokens: 1024 });
    s.planner = p;
  } else if (v === 'script') {
    s.scaling = [{ at_s: 10, pool: disagg(s) ? 'decode' : 'agg', count: 2 }];
  }
}

export const SCALING: Section = {
  id: 'scaling',
  title: 'Scaling',
  collapsed: true,
  fields: [
    {
      path: 'scaling-mode',
      label: 'Pools',
      kind: 'enum',
      options: opts(['off', 'fixed size'], ['planner', 'planner in the loop'], ['script', 'scripted sizes']),
      fallback: 'off',
      get: scalingMode,
      set: setScalingMode,
    },
    {
      path: 'startup_time',
      label: 'Worker start-up',
      kind: 'float',
      unit: 's',
      min: 0,
      nullable: 'instant',
      fallback: null,
      optional: true,
      help: 'A worker added during the run takes this long to become routable',
    },
    {
      path: 'planner.mode',
      label: 'Planner mode',
      kind: 'enum',
      options: opts(['agg', 'aggregated'], ['disagg', 'prefill and decode pools']),
      optional: true,
      when: planner,
    },
    {
      path: 'planner.optimization_target',
      label: 'Target',
      kind: 'enum',
      options: opts(['load', 'load (your thresholds)'], ['throughput', 'throughput (KV 100 % / 60 %)'], ['latency', 'latency (KV 40 % / 10 %)']),
      fallback: 'throughput',
      optional: true,
      when: planner,
    },
    {
      path: 'planner.load_adjustment_interval_seconds',
      label: 'Decision interval',
      kind: 'int',
      unit: 's',
      min: 1,
      max: 86_400,
      fallback: 5,
      optional: true,
      when: planner,
    },
    {
      path: 'planner.decode_scale_up_kv_rate',
      label: 'Grow at KV use',
      kind: 'float',
      unit: '%',
      min: 0,
      max: 100,
      optional: true,
      help: 'Required by the load target; on any worker',
      when: loadTarget,
    },
    {
      path: 'planner.decode_scale_down_kv_rate',
      label: 'Shrink at KV use',
      kind: 'float',
      unit: '%',
      min: 0,
      max: 100,
      optional: true,
      help: 'Required by the load target; on every worker',
      when: loadTarget,
    },
    {
      path: 'planner.prefill_scale_up_queue_tokens',
      label: 'Grow prefill at queue',
      kind: 'int',
      unit: 'tokens',
      min: 0,
      optional: true,
      when: (s) => loadTarget(s) && prefillPlanner(s),
    },
    {
      path: 'planner.prefill_scale_down_queue_tokens',
      label: 'Shrink prefill at queue',
      kind: 'int',
      unit: 'tokens',
      min: 0,
      optional: true,
      when: (s) => loadTarget(s) && prefillPlanner(s),
    },
    { path: 'planner.min_endpoint', label: 'Workers at least', kind: 'int', min: 0, max: 4096, fallback: 1, optional: true, when: planner },
    {
      path: 'planner.max_gpu_budget',
      label: 'GPU budget',
      kind: 'int',
      unit: 'GPUs',
      min: -1,
      max: 1_000_000,
      fallback: 8,
      optional: true,
      help: '−1: no limit',
      when: planner,
    },
  ],
  widgets: [scriptEditor],
};

function tierSwitch(path: string, fresh: () => JsonObject): Pick<Field, 'get' | 'set'> {
  return {
    get: (s) => isObject(getPath(s, path)),
    set: (s, v) => {
      if (v && !isObject(getPath(s, path))) setPath(s, path, fresh());
      if (!v) setPath(s, path, undefined);
      if (path.endsWith('native_host_offload') && !v) setPath(s, 'engine.g3_offload', undefined);
      // A block moves block_size × this many bytes; Llama 3.1 8B's 128 KiB per token by default.
      if (v && getPath(s, 'engine.kv_cache_bytes_per_token') == null) setPath(s, 'engine.kv_cache_bytes_per_token', 131072);
    },
  };
}

export const OFFLOAD: Section = {
  id: 'offload',
  title: 'KV offload tiers',
  collapsed: true,
  fields: [
    {
      path: 'offload-g2',
      label: 'Host tier (G2)',
      kind: 'bool',
      help: 'vLLM, native KV manager: prompts are stored to host memory and loaded back on a hit',
      fallback: false,
      ...tierSwitch('engine.native_host_offload', () => ({ num_host_blocks: 16384 })),
    },
    { path: 'engine.native_host_offload.num_host_blocks', label: 'Host blocks', kind: 'int', unit: 'blocks', min: 1, optional: true, when: hostTier },
    {
      path: 'engine.native_host_offload.scope',
      label: 'Host pool',
      kind: 'enum',
      options: opts(['dp_rank_local', 'one per DP rank'], ['cluster_shared', 'one shared by all workers']),
      fallback: 'dp_rank_local',
      optional: true,
      when: hostTier,
    },
    {
      path: 'engine.native_host_offload.kv_layout_id',
      label: 'KV layout id',
      kind: 'text',
      max: 120,
      nullable: 'none',
      optional: true,
      help: 'Required by a shared pool',
      when: (s) => hostTier(s) && getPath(s, 'engine.native_host_offload.scope') === 'cluster_shared',
    },
    {
      path: 'engine.native_host_offload.d2h_bandwidth_gbps',
      label: 'GPU → host',
      kind: 'float',
      unit: 'GB/s',
      min: 0,
      fallback: 32,
      optional: true,
      help: '0 = unlimited',
      when: hostTier,
    },
    {
      path: 'engine.native_host_offload.h2d_bandwidth_gbps',
      label: 'Host → GPU',
      kind: 'float',
      unit: 'GB/s',
      min: 0,
      fallback: 32,
      optional: true,
      when: hostTier,
    },
    {
      path: 'engine.native_host_offload.latency_to_first_byte_ms',
      label: 'Host first byte',
      kind: 'float',
      unit: 'ms',
      min: 0,
      fallback: 0,
      optional: true,
      when: hostTier,
    },
    {
      path: 'engine.kv_cache_bytes_per_token',
      label: 'KV bytes moved per token',
      kind: 'int',
      unit: 'B',
      min: 1,
      nullable: 'not set',
      optional: true,
      when: hostTier,
    },
    {
      path: 'offload-g3',
      label: 'Disk tier (G3)',
      kind: 'bool',
      help: 'Behind the host tier',
      fallback: false,
      when: hostTier,
      ...tierSwitch('engine.g3_offload', () => ({ scope: 'worker_local', num_g3_blocks: 65536 })),
    },
    {
      path: 'engine.g3_offload.scope',
      label: 'G3 store',
      kind: 'enum',
      options: opts(['worker_local', 'one per worker'], ['cluster_shared', 'one shared by all workers']),
      optional: true,
      when: g3Tier,
    },
    { path: 'engine.g3_offload.num_g3_blocks', label: 'G3 blocks', kind: 'int', unit: 'blocks', min: 1, optional: true, when: g3Tier },
    { path: 'engine.g3_offload.read_bandwidth_gbps', label: 'G3 read', kind: 'float', unit: 'GB/s', min: 0, fallback: 10, optional: true, when: g3Tier },
    { path: 'engine.g3_offload.write_bandwidth_gbps', label: 'G3 write', kind: 'float', unit: 'GB/s', min: 0, fallback: 10, optional: true, when: g3Tier },
    {
      path: 'engine.g3_offload.latency_to_first_byte_ms',
      label: 'G3 first byte',
      kind: 'float',
      unit: 'ms',
      min: 0,
      fallback: 0.1,
      optional: true,
      when: g3Tier,
    },
  ],
};
