// The scenario on screen in one sentence, for a newcomer: the load, the lengths, the workers
// and their scheduler, the hardware and model where the timing model knows them, and what
// times the passes. Figures the engine derives (workers per pool, GPUs, TP) come from its
// effective config; only what the scenario states is read from the scenario.

import type { EffectiveConfig, PoolConfig } from '../engine/protocol';
import { FRAMEWORK_LABELS, GPU_LABELS, MEASURED_MODEL_LABELS, MODEL_LABELS, SYSTEM_LABELS } from '../form/presets';
import { getPath, isObject, type JsonObject } from './json';

const n = (v: unknown) => (typeof v === 'number' ? v.toLocaleString('en-US', { maximumFractionDigits: 1 }) : String(v));
const WORDS = ['no', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine'];
const count = (k: number, what: string) => `${k < WORDS.length ? WORDS[k] : n(k)} ${what}${k === 1 ? '' : 's'}`;
const BACKENDS: Record<string, string> = { vllm: 'vLLM', sglang: 'SGLang', trtllm: 'TRT-LLM' };
const ROUTERS: Record<string, string> = { round_robin: 'round robin', random: 'random routing', kv_router: 'the KV-aware router' };

/** What a timing model is called in the sentence, by its type (an unknown one by its type). */
const TIMING: Record<string, string> = {
  polynomial: "Dynamo's polynomial pass time (fitted on an H200)",
  roofline: 'roofline timing (an estimate)',
  ais: 'measured kernels',
  fixed: 'a fixed time per pass',
  external: 'a measured profile',
  interpolated: 'a measured profile',
};

function workload(s: JsonObject): string {
  const w = getPath(s, 'workload');
  if (!isObject(w)) return 'a workload';
  if (w.type === 'trace') {
    const name = String(w.path ?? 'a trace')
      .split('/')
      .at(-1);
    const speed = typeof w.arrival_speedup_ratio === 'number' && w.arrival_speedup_ratio !== 1 ? ` at ${n(w.arrival_speedup_ratio)}× speed` : '';
    return `the requests of the trace ${name}${speed}`;
  }
  const parts: string[] = [];
  const users = w.concurrency;
  if (typeof users === 'number') parts.push(`${n(w.num_requests)} requests from ${n(users)} users in a closed loop`);
  else if (w.arrival === 'burst') parts.push(`${n(w.num_requests)} requests, all at once`);
  else parts.push(`${n(w.num_requests)} requests at ${n(w.rate_rps)} req/s`);
  const mean = (k: string) => getPath(w, `${k}.mean`);
  if (mean('input_tokens') !== undefined) parts.push(`${n(mean('input_tokens'))} → ${n(mean('output_tokens'))} tokens`);
  const groups = Number(w.num_prefix_groups ?? 0);
  const ratio = Number(w.shared_prefix_ratio ?? 0);
  if (groups > 0 && ratio > 0) parts.push(`${n(ratio * 100)} % of each prompt shared in ${count(groups, 'prefix group')}`);
  const images = Number(getPath(w, 'images.per_request') ?? 0);
  if (images > 0) parts.push(`${count(images, 'image')} per request`);
  return parts.join(', ');
}

function pools(s: JsonObject, config: EffectiveConfig | null): string {
  const list = config?.pools ?? [];
  const first = list[0];
  const backend = BACKENDS[String(first?.backend ?? getPath(s, 'engine.backend'))] ?? String(getPath(s, 'engine.backend'));
  if (list.length > 1) return `${list.map((p) => `${n(p.workers)} ${p.pool}`).join(' + ')} ${backend} workers`;
  const k = first?.workers ?? Number(getPath(s, 'cluster.num_workers') ?? 1);
  const mode = getPath(s, 'cluster.router_mode');
  const router = k > 1 && typeof mode === 'string' ? ` behind ${ROUTERS[mode] ?? mode}` : '';
  return `${count(k, `${backend} worker`)}${router}`;
}

/** The hardware, model and timing of the first pool, as far as its timing model knows them. */
function timing(p: PoolConfig | undefined, s: JsonObject): string {
  const t = p?.timing ?? { type: String(getPath(s, 'engine.timing_model.type') ?? 'polynomial') };
  const parts: string[] = [];
  const gpu = t.gpu ? (GPU_LABELS[t.gpu] ?? t.gpu) : t.system ? (SYSTEM_LABELS[t.system] ?? t.system) : null;
  if (gpu) {
    const gpus = p?.gpus_per_worker ?? 1;
    parts.push(`${gpus > 1 ? `${gpus} × ` : ''}${gpu} per worker`);
  }
  if (t.model) parts.push(MODEL_LABELS[t.model] ?? MEASURED_MODEL_LABELS[t.model] ?? t.model);
  const framework = t.type === 'ais' && t.backend_version ? ` (${FRAMEWORK_LABELS[String(t.backend)] ?? t.backend} ${t.backend_version})` : '';
  parts.push(`${TIMING[t.type] ?? `${t.type} timing`}${framework}`);
  return parts.join(', ');
}

/** One sentence: "200 requests at 10 req/s, 2,048 → 256 tokens, on one vLLM worker; …". */
export function describeScenario(s: JsonObject, config: EffectiveConfig | null): string {
  const first = config?.pools[0];
  const gpus = config && config.total_gpus > 1 ? ` (${n(config.total_gpus)} GPUs)` : '';
  return `Simulating ${workload(s)}, on ${pools(s, config)}${gpus}; ${timing(first, s)}.`;
}
