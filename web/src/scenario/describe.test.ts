import { describe, expect, it } from 'vitest';
import type { EffectiveConfig, PoolConfig } from '../engine/protocol';
import { describeScenario } from './describe';

const pool = (over: Partial<PoolConfig>): PoolConfig => ({
  pool: 'aggregated',
  workers: 1,
  dp_size: 1,
  tensor_parallel_size: 1,
  gpus_per_worker: 1,
  gpus: 1,
  backend: 'vllm',
  block_size: 64,
  num_gpu_blocks: 16384,
  kv_tokens_per_rank: 1048576,
  kv_bytes_per_token: null,
  kv_gib_per_rank: null,
  timing: { type: 'polynomial' },
  ...over,
});
const config = (pools: PoolConfig[]): EffectiveConfig => ({ total_gpus: pools.reduce((n, p) => n + p.gpus, 0), pools, no_effect: [] });
const synthetic = { type: 'synthetic', num_requests: 200, rate_rps: 10, input_tokens: { mean: 2048, stddev: 512 }, output_tokens: { mean: 256, stddev: 64 } };

describe('the scenario in one sentence', () => {
  it('says the load, the lengths, the workers and what times them', () => {
    const s = { engine: { backend: 'vllm' }, cluster: { num_workers: 1, router_mode: 'round_robin' }, workload: synthetic };
    expect(describeScenario(s, config([pool({})]))).toBe(
      "Simulating 200 requests at 10 req/s, 2,048 → 256 tokens, on one vLLM worker; Dynamo's polynomial pass time (fitted on an H200).",
    );
  });

  it('names the GPUs and the model where the timing model knows them, from the engine’s figures', () => {
    const s = { engine: { backend: 'vllm' }, cluster: { num_workers: 3, router_mode: 'kv_router' }, workload: synthetic };
    const p = pool({ workers: 3, gpus_per_worker: 4, gpus: 12, timing: { type: 'roofline', model: 'llama-3.1-70b', gpu: 'h100', tp: 4 } });
    expect(describeScenario(s, config([p]))).toBe(
      'Simulating 200 requests at 10 req/s, 2,048 → 256 tokens, on three vLLM workers behind the KV-aware router (12 GPUs); 4 × H100 SXM per worker, Llama 3.1 70B, roofline timing (an estimate).',
    );
    // Measured kernels: the data's GPU and model names, and whose kernels.
    const ais = pool({
      gpus_per_worker: 4,
      timing: { type: 'ais', model: 'meta-llama/Meta-Llama-3.1-70B', system: 'h100_sxm', backend: 'trtllm', backend_version: '1.3.0rc20', tp: 4 },
    });
    expect(describeScenario(s, config([ais]))).toContain('4 × H100 SXM per worker, Llama 3.1 70B, measured kernels (TRT-LLM 1.3.0rc20).');
    // A timing model this page does not know yet is named by its type, with what it reports.
    const measured = pool({ timing: { type: 'measured', gpu: 'h200', model: 'qwen3-32b' } });
    expect(describeScenario(s, config([measured]))).toContain('H200 SXM per worker, Qwen3 32B, measured timing.');
  });

  it('says disaggregated pools, traces, closed loops, shared prefixes and images', () => {
    const pools = [pool({ pool: 'prefill', workers: 2 }), pool({ pool: 'decode', workers: 4, gpus: 4 })];
    const w = { ...synthetic, num_prefix_groups: 4, shared_prefix_ratio: 0.75, images: { per_request: 2, tokens_per_image: 576 } };
    expect(describeScenario({ engine: { backend: 'vllm' }, workload: w }, config(pools))).toBe(
      "Simulating 200 requests at 10 req/s, 2,048 → 256 tokens, 75 % of each prompt shared in four prefix groups, two images per request, on 2 prefill + 4 decode vLLM workers (5 GPUs); Dynamo's polynomial pass time (fitted on an H200).",
    );
    const trace = {
      engine: { backend: 'sglang' },
      cluster: { num_workers: 8 },
      workload: { type: 'trace', path: 'data/conv.jsonl', arrival_speedup_ratio: 2 },
    };
    expect(describeScenario(trace, null)).toBe(
      "Simulating the requests of the trace conv.jsonl at 2× speed, on eight SGLang workers; Dynamo's polynomial pass time (fitted on an H200).",
    );
    const closed = { engine: { backend: 'trtllm' }, workload: { ...synthetic, concurrency: 32 } };
    expect(describeScenario(closed, null)).toContain('200 requests from 32 users in a closed loop');
  });
});
