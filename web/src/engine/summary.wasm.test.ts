// Real summaries against the declared keys (summary-keys.ts): every key a run writes is
// declared, with a value of its declared kind, and every required key is in every run.

import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { initSync, loadKernelData, Simulation } from '../../pkg/servesim_wasm.js';
import { SUMMARY_FIELDS } from './summary-keys';

beforeAll(() => {
  initSync({ module: readFileSync(fileURLToPath(new URL('../../pkg/servesim_wasm_bg.wasm', import.meta.url))) });
  // The measured-kernel files a run on H200 with vLLM reads, as the page hands them over.
  for (const name of ['index.json', 'models.json', 'h200_sxm/vllm-0.24.0.zip']) {
    loadKernelData(name, readFileSync(fileURLToPath(new URL(`../../../data/ais/${name}`, import.meta.url))));
  }
});

/** Keys written only when the measured data has power for most of the run's time (the
 * reference's 90 % gate, tested in servesim_sim's report/power.rs): no shipped data set has. */
const NEEDS_POWER_DATA = ['power_w', 'energy_per_output_token_j'];

/** An agentic Mooncake v2 trace (a request graph: the trajectory figures). */
const graph = readFileSync(fileURLToPath(new URL('../../../tests/variants/agentic/am-growing-context.jsonl', import.meta.url)), 'utf8');

function summaryOf(scenario: object): Record<string, unknown> {
  const trace = (scenario as { workload?: { type?: string } }).workload?.type === 'trace' ? graph : undefined;
  const sim = new Simulation(JSON.stringify(scenario), trace, 0);
  while (!sim.advance(100_000)) {}
  const s = sim.summary() as unknown as Record<string, unknown>;
  sim.free();
  return s;
}

const small = { type: 'synthetic', num_requests: 30, rate_rps: 20 };
const host = { kv_cache_bytes_per_token: 131072, native_host_offload: { num_host_blocks: 2048 } };
const SCENARIOS: [string, object][] = [
  ['the defaults', {}],
  ['an SLA and an SLO', { workload: small, slo: { ttft_ms: 500 } }],
  ['images', { workload: { ...small, images: { per_request: 1, tokens_per_image: 64 } } }],
  ['host and disk tiers', { engine: { ...host, g3_offload: { scope: 'worker_local', num_g3_blocks: 4096 } }, workload: small }],
  [
    'a host pool shared by the cluster',
    {
      engine: { ...host, native_host_offload: { num_host_blocks: 2048, scope: 'cluster_shared', kv_layout_id: 'a' } },
      cluster: { num_workers: 2 },
      workload: small,
    },
  ],
  ['a price per GPU-hour', { gpu_hour_usd: 2.5, workload: small }],
  [
    'measured kernels',
    {
      engine: { timing_model: { type: 'ais', model: 'Qwen/Qwen3-32B', system: 'h200_sxm', backend: 'vllm', tp: 1 } },
      workload: small,
    },
  ],
  ['a request graph', { workload: { type: 'trace', format: 'agentic_mooncake' } }],
  ['SGLang, disaggregated', { engine: { backend: 'sglang' }, cluster: { num_prefill_workers: 1, num_decode_workers: 1 }, workload: small }],
];

describe('the summary', () => {
  it('writes only declared keys, and every required one, in every kind of run', () => {
    const seen = new Set<string>();
    for (const [name, scenario] of SCENARIOS) {
      const s = summaryOf(JSON.parse(JSON.stringify(scenario)));
      const undeclared = Object.keys(s).filter((k) => !SUMMARY_FIELDS.has(k as never));
      expect(undeclared, name).toEqual([]);
      const missing = [...SUMMARY_FIELDS].filter(([k, need]) => need === 'required' && !(k in s)).map(([k]) => k);
      expect(missing, name).toEqual([]);
      for (const [k, v] of Object.entries(s)) {
        seen.add(k);
        const kind = k === 'meets_slo' ? 'boolean' : k === 'g3_offload' || k === 'g2_domains' ? 'object' : 'number';
        expect(v === null || typeof v === kind, `${name}: ${k} is ${typeof v}`).toBe(true);
      }
    }
    // Every declared key is written by one of these runs: none is stale.
    expect([...SUMMARY_FIELDS.keys()].filter((k) => !seen.has(k) && !NEEDS_POWER_DATA.includes(k))).toEqual([]);
  });
});
