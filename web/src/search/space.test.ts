import { describe, expect, it } from 'vitest';
import { bill, configOf, edges, extend, itlReason, parseList, parseRange, recommendFile, type SearchSpec, unsteady } from './space';

const SPEC: SearchSpec = {
  model: 'llama-3.1-70b',
  gpu: 'h100',
  backend: 'vllm',
  blockSize: 64,
  rate: 10,
  arrival: 'poisson',
  seed: 42,
  input: 2000,
  output: 300,
  requests: 2000,
  slo: { p99_ttft_ms: 2000, p99_itl_ms: 50 },
  tp: [4, 8],
  minTp: 1,
  workers: { min: 1, max: 8 },
  modes: ['aggregated', 'disaggregated'],
  prefillWorkers: { min: 1, max: 4 },
  decodeWorkers: { min: 1, max: 4 },
  tokenBudget: [256, 512, 1024, 2048, 8192],
  maxSeqs: [64, 256],
  chunked: [true, false],
  transferGbps: 50,
  maxGpus: 64,
  maxTrials: 100,
};

const AGG = {
  engine: { max_num_batched_tokens: 512, max_num_seqs: 256, timing_model: { type: 'roofline', tp: 4 } },
  tensor_parallel_size: 4,
  cluster: { num_workers: 3 },
};

describe('the recommend file', () => {
  it('declares a domain for each searched knob and a value for a single one', () => {
    // biome-ignore lint/suspicious/noExplicitAny: a nested JSON document, read by path
    const f = recommendFile(SPEC) as any;
    expect(f.engine.mode).toEqual({ choices: ['aggregated', 'disaggregated'] });
    expect(f.engine.workers.aggregated.parallelism).toEqual({ replicas: { range: { min: 1, max: 8 } }, tensor: { choices: [4, 8] } });
    expect(f.engine.workers.aggregated.scheduler.max_batched_tokens).toEqual({ choices: [256, 512, 1024, 2048, 8192] });
    expect(f.engine.kv_transfer.bandwidth_gb_per_second).toBe(50);
    expect(f.optimization).toEqual({ target: 'gpus', constraints: { max_candidate_gpus: 64 } });
    expect(f.evaluation.slo).toEqual({ p99_ttft_ms: 2000, p99_itl_ms: 50 });
    // biome-ignore lint/suspicious/noExplicitAny: as above
    const one = recommendFile({ ...SPEC, modes: ['aggregated'], tp: [4], chunked: [true] }) as any;
    expect(one.engine.mode).toBe('aggregated');
    expect(one.engine.workers.prefill).toBeUndefined();
    expect(one.engine.kv_transfer).toBeUndefined();
    expect(one.engine.workers.aggregated.parallelism.tensor).toBe(4);
  });

  it('reads lists and ranges, naming the field when they are wrong', () => {
    expect(parseList('TP', '8, 4 4')).toEqual([4, 8]);
    expect(parseRange('Workers', '2..6')).toEqual({ min: 2, max: 6 });
    expect(parseRange('Workers', '3')).toEqual({ min: 3, max: 3 });
    expect(() => parseList('TP', '4, x')).toThrow(/TP: "4, x"/);
    expect(() => parseRange('Workers', '6..2')).toThrow(/Workers/);
  });
});

describe('the answer in words', () => {
  it('states the bill', () => {
    const c = configOf(AGG, 12);
    expect(bill(c, 'H100')).toBe('TP 4 × 3 workers = 12 H100s, token budget 512 per pass, max 256 sequences per worker');
    const dis = configOf(
      {
        cluster: {
          num_prefill_workers: 1,
          num_decode_workers: 2,
          prefill_tensor_parallel_size: 4,
          decode_tensor_parallel_size: 8,
          decode_engine: { max_num_seqs: 64 },
        },
      },
      20,
    );
    expect(bill(dis, 'H100')).toBe('disaggregated: 1 prefill worker × TP 4 + 2 decode workers × TP 8 = 20 H100s, max 64 sequences per worker');
  });

  it('says where p99 ITL comes from', () => {
    const c = configOf(AGG, 12);
    expect(itlReason(c, { p99_itl_ms: 48.7, median_itl_ms: 15 })).toMatch(/^p99 ITL 48.7 ms comes from decode passes that share with prefills/);
    expect(itlReason(c, { p99_itl_ms: 18, median_itl_ms: 15 })).toMatch(/close to the median/);
  });
});

describe('edges of the ranges', () => {
  it('flags an answer at the top of the workers range or an end of a list, and extends them', () => {
    const top = configOf({ ...AGG, cluster: { num_workers: 8 } }, 32);
    const found = edges(SPEC, top);
    expect(found.map((e) => e.knob)).toEqual(['workers', 'tp']);
    const wider = extend(SPEC, found, top);
    expect(wider.workers).toEqual({ min: 1, max: 16 });
    expect(wider.tp).toEqual([2, 4, 8]);
    expect(wider.maxGpus).toBeGreaterThanOrEqual(16 * 8);
    // In the middle of every range: no edge.
    const mid = configOf({ ...AGG, tensor_parallel_size: 8, engine: { ...AGG.engine, max_num_batched_tokens: 1024, max_num_seqs: 128 } }, 24);
    expect(edges({ ...SPEC, tp: [4, 8, 16], maxSeqs: [64, 128, 256] }, mid)).toEqual([]);
    // TP 4 is the smallest that fits: not an edge.
    expect(edges({ ...SPEC, minTp: 4 }, top).map((e) => e.knob)).toEqual(['workers']);
    // No answer: the tops of the worker ranges are the edge.
    expect(edges(SPEC, null).map((e) => e.knob)).toEqual(['workers', 'decodeWorkers']);
  });
});

describe('steady state', () => {
  it('agrees when the first half matches the whole, and says how it differs otherwise', () => {
    const slo = { p99_ttft_ms: 2000, p99_itl_ms: 50 };
    expect(unsteady(slo, { p99_ttft_ms: 600, p99_itl_ms: 48 }, { p99_ttft_ms: 590, p99_itl_ms: 47 }, true, true)).toBeNull();
    expect(unsteady(slo, { p99_ttft_ms: 600, p99_itl_ms: 48 }, { p99_ttft_ms: 300, p99_itl_ms: 47 }, true, true)).toMatch(
      /p99 TTFT 300 ms in the first half against 600 ms/,
    );
    expect(unsteady(slo, { p99_ttft_ms: 600, p99_itl_ms: 48 }, { stopped: 'x' }, true, false)).toMatch(/first half/);
  });
});
