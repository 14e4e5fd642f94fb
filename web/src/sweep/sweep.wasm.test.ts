// Sweeps through the real engine module in Node: the page's expansion and its lines are the
// CLI's, byte for byte.

import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { expandSweep, initSync, SweepPoint } from '../../pkg/servesim_wasm.js';
import { cliSweep } from '../../tests/cli-sweep';

beforeAll(() => {
  const wasm = readFileSync(fileURLToPath(new URL('../../pkg/servesim_wasm_bg.wasm', import.meta.url)));
  initSync({ module: wasm });
});

function runPoint(sweep: string, i: number): string {
  const p = new SweepPoint(sweep, i);
  let guard = 0;
  while (!p.advance(500)) if (++guard > 1e6) throw new Error('no end');
  const line = p.line();
  p.free();
  return line;
}

describe('sweeps in the engine module', () => {
  const sweep = JSON.stringify({
    version: 1,
    base: { workload: { num_requests: 60 } },
    vary: [
      { field: 'cluster.num_workers', values: [1, 2] },
      { field: 'workload.rate_rps', from: 10, to: 30, step: 10 },
    ],
    slo: { p99_ttft_ms: 150, ttft_ms: 200 },
  });

  it("expands as the CLI does: the cartesian product, first field slowest, with each point's scenario", () => {
    const ex = JSON.parse(expandSweep(sweep, 100));
    expect(ex.count).toBe(6);
    expect(ex.fields).toEqual(['cluster.num_workers', 'workload.rate_rps']);
    expect(ex.points.map((p: { set: object }) => p.set)).toEqual([
      { 'cluster.num_workers': 1, 'workload.rate_rps': 10 },
      { 'cluster.num_workers': 1, 'workload.rate_rps': 20 },
      { 'cluster.num_workers': 1, 'workload.rate_rps': 30 },
      { 'cluster.num_workers': 2, 'workload.rate_rps': 10 },
      { 'cluster.num_workers': 2, 'workload.rate_rps': 20 },
      { 'cluster.num_workers': 2, 'workload.rate_rps': 30 },
    ]);
    expect(ex.points[4].scenario).toEqual({
      workload: { num_requests: 60, rate_rps: 20 },
      cluster: { num_workers: 2 },
      slo: { ttft_ms: 200, p99_ttft_ms: 150 },
    });
  });

  it("writes every point's line as servesim sweep prints it", () => {
    const count = JSON.parse(expandSweep(sweep, 100)).count as number;
    const page = Array.from({ length: count }, (_, i) => `${runPoint(sweep, i)}\n`).join('');
    expect(page).toBe(cliSweep(sweep));
    expect(page.split('\n')[0]).toMatch(/"meets_slo":(true|false)\}$/);
  });

  it('names the field and the point for bad input, and caps the points', () => {
    const bad =
      (vary: object[], base: object = {}) =>
      () =>
        expandSweep(JSON.stringify({ version: 1, base, vary }), 100);
    expect(bad([{ field: 'cluster.num_workerz', values: [2] }])).toThrow(/point 0 \(cluster\.num_workerz = 2\): cluster\.num_workerz: unknown field/);
    expect(bad([{ field: 'cluster.num_workers', values: [1, 0] }])).toThrow(/point 1 \(cluster\.num_workers = 0\): .*num_workers/);
    expect(bad([{ field: 'workload.rate_rps', values: [] }])).toThrow(/vary\[0\]: no values/);
    expect(bad([{ field: 'cluster.num_workers', from: 1, to: 200 }])).toThrow(/200 points; the page runs at most 100/);
    expect(() => expandSweep('{"version": 1, "case": {}, "vary": []}', 100)).toThrow(/case: the page sweeps scenarios/);
    expect(() => new SweepPoint(sweep, 6)).toThrow(/point 6: the sweep has 6 points/);
  });
});
