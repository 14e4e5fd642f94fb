// Example scenarios for the harness's features, offered as links above the form: each opens
// like a shared link (and `servesim run` gives the same numbers for the same JSON).

import type { JsonObject } from '../scenario/json';
import { encodeLink } from '../scenario/link';

export interface Example {
  id: string;
  label: string;
  title: string;
  scenario: JsonObject;
}

export const EXAMPLES: Example[] = [
  {
    id: 'closed-loop',
    label: 'closed loop: 32 users, 3-turn sessions',
    title: '32 users, each holding a 3-turn conversation with 2 s think time; an SLA sets goodput',
    scenario: {
      name: 'closed loop: 32 users, 3-turn sessions',
      engine: { block_size: 16, num_gpu_blocks: 8192 },
      cluster: { num_workers: 2 },
      workload: {
        type: 'synthetic',
        num_requests: 288,
        concurrency: 32,
        turns_per_session: 3,
        think_time_ms: 2000,
        input_tokens: { mean: 512, stddev: 128 },
        output_tokens: { mean: 128, stddev: 32 },
      },
      slo: { ttft_ms: 500, itl_ms: 40 },
    },
  },
  {
    id: 'planner',
    label: 'load planner under a ramp',
    title: 'One worker and a load it cannot hold: the load planner adds workers (10 s start-up) while KV use is high, then drains them',
    scenario: {
      name: 'load planner under a ramp',
      engine: { block_size: 16, num_gpu_blocks: 2048 },
      startup_time: 10,
      planner: { mode: 'agg', optimization_target: 'load', decode_scale_up_kv_rate: 60, decode_scale_down_kv_rate: 20, load_adjustment_interval_seconds: 5 },
      workload: {
        type: 'synthetic',
        num_requests: 600,
        arrival: 'poisson',
        rate_rps: 4,
        input_tokens: { mean: 1024, stddev: 256 },
        output_tokens: { mean: 256, stddev: 64 },
      },
    },
  },
  {
    id: 'offload',
    label: 'host offload: prefixes back from G2',
    title: 'A small GPU pool and shared prefixes: evicted prefixes come back from the host tier',
    scenario: {
      name: 'host offload: prefixes back from G2',
      engine: { block_size: 16, num_gpu_blocks: 512, kv_cache_bytes_per_token: 131072, native_host_offload: { num_host_blocks: 8192 } },
      workload: {
        type: 'synthetic',
        num_requests: 240,
        rate_rps: 1,
        input_tokens: { mean: 2048, stddev: 0 },
        output_tokens: { mean: 64, stddev: 16 },
        num_prefix_groups: 12,
        shared_prefix_ratio: 0.75,
        block_tokens: 16,
      },
    },
  },
  {
    id: 'deepseek-r1',
    label: 'DeepSeek-R1 · 8×H200 · SGLang · EP 8 · attention DP 8',
    title:
      'A mixture of experts with latent attention, FP8 weights, on one 8-GPU node: eight attention-DP ranks, the experts over all eight GPUs. Timed by the roofline estimate (the measured-kernel data has no MoE timing in this engine yet)',
    scenario: {
      name: 'DeepSeek-R1 · 8×H200 · SGLang · EP 8 · attention DP 8 (roofline estimate)',
      engine: { backend: 'sglang', timing_model: { type: 'roofline', model: 'deepseek-r1', gpu: 'h200', tp: 1, attention_dp: 8, weight_dtype: 'fp8' } },
      workload: {
        type: 'synthetic',
        num_requests: 400,
        rate_rps: 8,
        input_tokens: { mean: 1024, stddev: 0 },
        output_tokens: { mean: 1024, stddev: 0 },
      },
    },
  },
];

/** A line of example links, each a share link of its scenario. */
export async function exampleLinks(): Promise<HTMLElement> {
  const nav = document.createElement('nav');
  nav.className = 'examples';
  nav.id = 'examples';
  nav.setAttribute('aria-label', 'Examples');
  nav.append('Examples: ');
  for (const [i, ex] of EXAMPLES.entries()) {
    const a = document.createElement('a');
    a.href = await encodeLink(ex.scenario);
    a.textContent = ex.label;
    a.title = ex.title;
    a.dataset.example = ex.id;
    if (i > 0) nav.append(' · ');
    nav.append(a);
  }
  return nav;
}
