// Preset lessons: small scenarios, each built so one mechanism shows at a glance in the
// inspector, with what to look for. They are partial scenarios (the defaults fill the rest),
// applied through the form like any link.

export interface Lesson {
  id: string;
  title: string;
  /** What to look for, shown beside the inspector. */
  look: string;
  scenario: Record<string, unknown>;
  /** Where the inspector opens: a time (ms) and a rank. */
  open?: { t_ms?: number; rank?: string };
}

const synthetic = (over: Record<string, unknown>) => ({
  type: 'synthetic',
  arrival: 'poisson',
  seed: 7,
  ...over,
});

export const LESSONS: Lesson[] = [
  {
    id: 'prefix-reuse',
    title: 'Prefix cache reuse',
    look: 'Eight requests share one 1,024-token system prompt. The first computes it; the next ones are admitted with those blocks already cached: purple cells are blocks held by several requests at once, and each admission in the log says how many prompt tokens it reused.',
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
    look: 'A pool of 256 blocks cannot hold every running request as their outputs grow. When a running request needs a block and none is free, vLLM preempts the most recently admitted one (LIFO): its blocks turn free or cached, its chip goes back to the head of the queue, and it recomputes later. Step until a "preempted" line appears in the log.',
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
    look: 'Six prompt families take turns on a pool too small to cache them all. Finished requests leave their blocks cached (green); a new family needs room, so the least recently used cached blocks are evicted (red for the pass they go) and "removed" lines tell the router.',
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
    look: "Four workers and four prompt families. Select a request: the router table lists each worker's cost and the prefix blocks it believed that worker cached; the request goes to the cheapest, usually the worker that already holds its family's prefix. Switch the router to round robin to compare the prefix hit rate.",
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
