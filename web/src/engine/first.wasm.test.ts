// The engine's first module (web/pkg/first: the playground's first download, built without
// trace files, measured-kernel data, NPZ profiles, sweeps and the replay case) in Node: it
// runs what the full module runs the same, and refuses the parts it leaves out with the flag
// that makes the page's worker load the full module (worker.ts).

import { readFileSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import * as first from '../../pkg/first/servesim_first.js';
import * as full from '../../pkg/servesim_wasm.js';

const file = (rel: string) => fileURLToPath(new URL(rel, import.meta.url));

beforeAll(() => {
  first.initSync({ module: readFileSync(file('../../pkg/first/servesim_first_bg.wasm')) });
  full.initSync({ module: readFileSync(file('../../pkg/servesim_wasm_bg.wasm')) });
});

function summaryOf(m: typeof first, json: string): string {
  const sim = new m.Simulation(json, undefined, 0);
  while (!sim.advance(100_000)) {}
  const out = sim.reportJson();
  sim.free();
  return out;
}

describe('the first module', () => {
  it('is under 1.2 MB and smaller than the full one', () => {
    const size = statSync(file('../../pkg/first/servesim_first_bg.wasm')).size;
    const whole = statSync(file('../../pkg/servesim_wasm_bg.wasm')).size;
    console.log(`engine modules: first ${size} bytes, full ${whole} bytes`);
    expect(size).toBeLessThan(1_200_000);
    expect(size).toBeLessThan(whole);
    expect(first.isFullEngine()).toBe(false);
    expect(full.isFullEngine()).toBe(true);
  });

  it('gives the full module’s answer on the scenarios it runs', () => {
    for (const json of [
      '{}',
      '{"engine": {"backend": "sglang"}, "workload": {"num_requests": 80}}',
      '{"cluster": {"num_workers": 3, "router_mode": "kv_router"}, "workload": {"num_requests": 120}}',
      '{"engine": {"timing_model": {"type": "roofline", "model": "llama-3.1-70b", "gpu": "h100", "tp": 4}}, "workload": {"num_requests": 60}}',
    ]) {
      expect(summaryOf(first, json)).toBe(summaryOf(full, json));
    }
    expect(first.defaultScenario()).toBe(full.defaultScenario());
    expect(first.presets()).toBe(full.presets());
  });

  it('refuses a trace, an NPZ profile and measured kernels with the flag set, once', () => {
    const trace = '{"timestamp": 0, "input_length": 64, "output_length": 4, "hash_ids": [1]}\n';
    const refusals: [string, string | undefined, RegExp][] = [
      ['{"workload": {"type": "trace"}}', trace, /the trace reader is not in this build of the engine/],
      [
        '{"engine": {"timing_model": {"type": "external", "provider": "dynamo_profile", "config": {"path": "p.npz"}}}}',
        undefined,
        /NPZ profile reader is not in this build/,
      ],
    ];
    for (const [json, text, why] of refusals) {
      const files = { 'p.npz': new Uint8Array([80, 75, 5, 6]) };
      expect(() => new first.Simulation(json, text, 0, files)).toThrow(why);
      expect(first.needsFullEngine()).toBe(true);
      expect(first.needsFullEngine()).toBe(false);
    }
    // Measured kernels: the index is read (the page hands it over at start), the data is not.
    first.loadKernelData('index.json', readFileSync(file('../../../data/ais/index.json')));
    const measured = JSON.stringify({ engine: { timing_model: { type: 'ais', model: 'meta-llama/Meta-Llama-3.1-8B', system: 'h200_sxm', backend: 'vllm' } } });
    expect(() => new first.Simulation(measured)).toThrow(/measured-kernel timing is not in this build/);
    expect(first.needsFullEngine()).toBe(true);
    expect(() => first.inspectScenario(measured)).toThrow(/not in this build/);
    expect(first.needsFullEngine()).toBe(true);
    // Another failure does not ask for the full module.
    expect(() => new first.Simulation('{"cluster": {"num_workers": 0}}')).toThrow(/num_workers/);
    expect(first.needsFullEngine()).toBe(false);
    // The full module runs the trace.
    const sim = new full.Simulation('{"workload": {"type": "trace"}}', trace, 0);
    while (!sim.advance(1000)) {}
    expect(sim.numRequests()).toBe(1);
    expect(full.needsFullEngine()).toBe(false);
  });
});
