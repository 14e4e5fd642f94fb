// Preset lessons: small scenarios, each built so one mechanism shows at a glance in the
// inspector, with what to look for, and the setting it turns on set the other way (caching
// off, FIFO, round robin, another eviction policy) to compare. They are partial scenarios
// (the defaults fill the rest), applied through the form like any link.

import { type JsonObject, merge } from '../scenario/json';
import type { MomentKind } from './model';

/** The lesson's scenario with one setting changed, and what changes to look for. */
export interface Variant {
  label: string;
  look: string;
  /** Merged into the lesson's scenario (objects key by key). */
  patch: JsonObject;
}

export interface Lesson {
  id: string;
  title: string;
  /** What to look for, shown beside the inspector. */
  look: string;
  scenario: JsonObject;
  /** The lesson's own setting first (its label), then the ones to compare it with. */
  label: string;
  compare: Variant[];
  /** The moment the inspector opens at: the first event of this kind (moments in model.ts). */
  at: MomentKind;
}

/** Variant `i` of a lesson (0: the lesson itself), as a partial scenario and its text. */
export function lessonVariant(l: Lesson, i: number): { label: string; look: string; scenario: JsonObject } {
  const v = i > 0 ? l.compare[i - 1] : undefined;
  if (!v) return { label: l.label, look: l.look, scenario: l.scenario };
  const scenario = merge(l.scenario, v.patch);
  scenario.name = `${String(l.scenario.name)} (${v.label})`;
  return { label: v.label, look: v.look, scenario };
}

const synthetic = (over: JsonObject): JsonObject => ({
  type: 'synthetic',
  arrival: 'poisson',
  seed: 7,
  ...over,
});

export const LESSONS: Lesson[] = [
  {
    id: 'prefix-reuse',
    title: 'Prefix cache reuse',
    at: 'reuse',
    look: 'Eight requests share one 1,024-token system prompt. The first computes it; the next ones are admitted with those blocks already cached: purple cells are blocks held by several requests at once, and each admission in the log says how many prompt tokens it reused.',
    label: 'caching on',
    compare: [
      {
        label: 'caching off',
        look: 'The same requests with prefix caching off: every admission computes the whole prompt (cached 0 in the log), no block is ever held by two requests, and the mean TTFT nearly doubles (about 1.05 s → 1.96 s).',
        patch: { engine: { enable_prefix_caching: false } },
      },
    ],
    scenario: {
      name: 'lesson: prefix cache reuse',
      engine: { block_size: 16, num_gpu_blocks: 512, max_num_seqs: 8, enable_prefix_caching: true },
      workload: synthetic({
        num_requests: 24,
        rate_rps: 8,
        input_tokens: { mean: 1280, stddev: 0 },
        output_tokens: { mean: 48, stddev: 0 },
        shared_prefix_ratio: 0.8,
        num_prefix_groups: 1,
        block_tokens: 64,
      }),
    },
  },
  {
    id: 'preemption',
    title: 'Preemption under KV pressure',
    at: 'preempted',
    look: 'A pool of 256 blocks cannot hold every running request as their outputs grow. When a running request needs a block and none is free, vLLM preempts the most recently admitted one (LIFO): its blocks turn free or cached, its chip goes back to the head of the queue, and it recomputes later. The inspector opens at the first preemption; "next" finds the others.',
    label: 'LIFO',
    compare: [
      {
        label: 'FIFO',
        look: 'The same pressure with FIFO preemption: the victim is the oldest running request, which has the most computed tokens to lose. Its blocks stay cached until evicted, so when it is readmitted it often finds them again (prefix reuse 0.26 → 0.39 here), but the oldest requests wait longest (p99 TTFT 98 s → 102 s).',
        patch: { engine: { preemption_mode: 'fifo' } },
      },
    ],
    scenario: {
      name: 'lesson: preemption under KV pressure',
      engine: { block_size: 16, num_gpu_blocks: 256, max_num_seqs: 16, enable_prefix_caching: true },
      workload: synthetic({
        num_requests: 40,
        rate_rps: 40,
        input_tokens: { mean: 600, stddev: 150 },
        output_tokens: { mean: 400, stddev: 100 },
        shared_prefix_ratio: 0,
        num_prefix_groups: 0,
      }),
    },
  },
  {
    id: 'eviction',
    title: 'Eviction of cached prefixes',
    at: 'evicted',
    look: 'Six prompt families take turns on a pool too small to cache them all. Finished requests leave their blocks cached (green); a new family needs room, so the least recently used cached blocks are evicted (red for the pass they go) and "removed" lines tell the router.',
    label: 'native pool',
    compare: [
      {
        label: 'kvbm, LRU',
        look: 'The kvbm block manager with LRU eviction: the panel shows its pool counts and the radix tree of cached blocks (the router’s view) instead of numbered blocks. It evicts exactly what the native pool evicts (prefix reuse 0.50 both), and so does Lineage, its default: under vLLM a request releases its blocks leaf first, so the least recently released block is always a leaf (the form says so next to the setting).',
        patch: { engine: { kv_manager: 'kvbm', eviction_backend: 'lru' } },
      },
      {
        label: 'kvbm, multi-LRU',
        look: 'The same kvbm run with multi-LRU + TinyLFU: blocks reused often (the families’ shared prefixes) sit in higher-frequency queues and outlive one-off prompt tails, so more prefix blocks survive in the radix tree (prefix reuse 0.50 → 0.52 against LRU).',
        patch: { engine: { kv_manager: 'kvbm', eviction_backend: 'multi_lru' } },
      },
    ],
    scenario: {
      name: 'lesson: eviction of cached prefixes',
      engine: { block_size: 16, num_gpu_blocks: 320, max_num_seqs: 4, enable_prefix_caching: true },
      workload: synthetic({
        num_requests: 36,
        rate_rps: 6,
        input_tokens: { mean: 1024, stddev: 0 },
        output_tokens: { mean: 32, stddev: 0 },
        shared_prefix_ratio: 0.75,
        num_prefix_groups: 6,
        block_tokens: 64,
      }),
    },
  },
  {
    id: 'kv-routing',
    title: 'KV-aware routing',
    at: 'routing',
    look: "Four workers and four prompt families. Select a request: the router table lists each worker's cost and the prefix blocks it believed that worker cached; the request goes to the cheapest, usually the worker that already holds its family's prefix. Compare with round robin.",
    label: 'KV-aware',
    compare: [
      {
        label: 'round robin',
        look: 'The same requests sent round robin: each worker sees every family, so each caches all four prefixes at a quarter of the hits; prefix reuse falls from 0.65 to 0.56 and the prefill work grows (the router table now just says where each request went).',
        patch: { cluster: { router_mode: 'round_robin' } },
      },
    ],
    scenario: {
      name: 'lesson: KV-aware routing',
      engine: { block_size: 16, num_gpu_blocks: 1024, max_num_seqs: 16, enable_prefix_caching: true },
      cluster: { num_workers: 4, router_mode: 'kv_router' },
      workload: synthetic({
        num_requests: 80,
        rate_rps: 20,
        input_tokens: { mean: 1536, stddev: 128 },
        output_tokens: { mean: 64, stddev: 16 },
        shared_prefix_ratio: 0.7,
        num_prefix_groups: 4,
        block_tokens: 64,
      }),
    },
  },
];
