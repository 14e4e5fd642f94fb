// The page's side of a sweep: the panel's text as a sweep file, the presets, and reading the
// lines back (the answer in words, the knee, the Pareto front, the CSV).

import { describe, expect, it } from 'vitest';
import {
  axisText,
  broken,
  knee,
  loadPreset,
  type PointLine,
  paretoFront,
  parseAxis,
  parseSlo,
  SweepInputError,
  specFromLink,
  sweepCsv,
  sweepFile,
  sweepJsonLines,
  type Vary,
  verdict,
  workersPreset,
} from './spec';

function line(point: number, set: PointLine['set'], summary: Record<string, number>, meets?: boolean): PointLine {
  const o: Omit<PointLine, 'text'> = { point, set, summary };
  if (meets !== undefined) o.meets_slo = meets;
  return { ...o, text: JSON.stringify(o) };
}

const full = { num_requests: 10, completed_requests: 10 };

describe('the sweep panel text', () => {
  it('reads lists, ranges and words, and names the field when it cannot', () => {
    expect(parseAxis({ field: ' cluster.num_workers ', values: '1, 2,4' })).toEqual({ field: 'cluster.num_workers', values: [1, 2, 4] });
    expect(parseAxis({ field: 'workload.rate_rps', values: '5..20 step 5' })).toEqual({ field: 'workload.rate_rps', from: 5, to: 20, step: 5 });
    expect(parseAxis({ field: 'cluster.num_workers', values: '4 .. 10' })).toEqual({ field: 'cluster.num_workers', from: 4, to: 10 });
    expect(parseAxis({ field: 'cluster.router.mode', values: 'round_robin, kv' })).toEqual({ field: 'cluster.router.mode', values: ['round_robin', 'kv'] });
    expect(parseAxis({ field: 'engine.enable_prefix_caching', values: 'true,false' })).toEqual({
      field: 'engine.enable_prefix_caching',
      values: [true, false],
    });
    expect(() => parseAxis({ field: 'cluster..x', values: '1' })).toThrow(/cluster\.\.x.*dotted path/);
    expect(() => parseAxis({ field: 'workload.rate_rps', values: ' ' })).toThrow(SweepInputError);
    expect(() => parseAxis({ field: 'workload.rate_rps', values: ' , ,' })).toThrow(/workload\.rate_rps: no values/);
    for (const v of [
      { field: 'a.b', values: [1, 'x', true] },
      { field: 'a', from: 1, to: 3 },
      { field: 'a', from: 0.5, to: 2, step: 0.5 },
    ] satisfies Vary[]) {
      expect(parseAxis(axisText(v))).toEqual(v);
    }
  });

  it('reads the SLO fields and names a bad one', () => {
    expect(parseSlo({ p99_ttft_ms: '2000', itl_ms: ' ', min_goodput_ratio: '0.95' })).toEqual({ p99_ttft_ms: 2000, min_goodput_ratio: 0.95 });
    expect(parseSlo({})).toBeUndefined();
    expect(() => parseSlo({ p99_itl_ms: 'fast' })).toThrow(/SLO p99_itl_ms: "fast"/);
    expect(() => parseSlo({ p99_itl_ms: '-1' })).toThrow(/p99_itl_ms/);
  });

  it("writes the CLI's sweep file and reads a link's sweep", () => {
    const spec = { vary: [{ field: 'cluster.num_workers', values: [1, 2] }], slo: { p99_ttft_ms: 2000 } };
    expect(sweepFile({ workload: { rate_rps: 20 } }, spec)).toEqual({ version: 1, base: { workload: { rate_rps: 20 } }, ...spec });
    expect(Object.keys(sweepFile({}, { vary: spec.vary }))).toEqual(['version', 'base', 'vary']);
    expect(specFromLink(spec)).toEqual(spec);
    expect(() => specFromLink({ vary: [] })).toThrow(/one or two fields/);
    expect(() => specFromLink({ vary: [{ values: [1] }] })).toThrow(/vary\[0\] needs a "field"/);
    expect(() => specFromLink('x')).toThrow(/must be an object/);
  });

  it('presets sweep around the scenario', () => {
    expect(loadPreset({ workload: { type: 'synthetic', rate_rps: 20 } })).toEqual({ field: 'workload.rate_rps', values: '5, 10, 15, 20, 25, 30, 35, 40' });
    expect(loadPreset({ workload: { type: 'trace', arrival_speedup_ratio: 1 } }).field).toBe('workload.arrival_speedup_ratio');
    expect(workersPreset({ cluster: { num_workers: 3 } })).toEqual({ field: 'cluster.num_workers', values: '1..8' });
    expect(workersPreset({ cluster: { num_workers: 7 } }).values).toBe('1..14');
  });
});

describe('reading the lines', () => {
  const slo = { p99_ttft_ms: 2000 };
  const workers = [4, 6, 7, 8].map((w, i) =>
    line(i, { 'cluster.num_workers': w }, { ...full, total_gpus: w * 4, p99_ttft_ms: [66_700, 14_400, 838, 443][i] as number }, i >= 2),
  );

  it('names the smallest configuration that meets the SLO, and the next smaller that does not', () => {
    const v = verdict(workers, ['cluster.num_workers'], slo);
    expect(v.point).toBe(2);
    expect(v.text).toBe(
      'The smallest configuration that meets the SLO: 7 workers (28 GPUs), with p99 TTFT 838 ms. 6 workers (24 GPUs) does not: p99 TTFT 14.4 s > 2 s.',
    );
    // Out of order (as workers finish) the answer is the same.
    expect(verdict([...workers].reverse(), ['cluster.num_workers'], slo)).toEqual(v);
  });

  it('says when none meets it, with the nearest miss', () => {
    const v = verdict(
      workers.slice(0, 2).map((l) => ({ ...l, meets_slo: false })),
      ['cluster.num_workers'],
      slo,
    );
    expect(v.text).toMatch(/^No configuration in this sweep meets the SLO\. The nearest, 6 workers \(24 GPUs\): p99 TTFT 14\.4 s > 2 s\.$/);
    expect(verdict(workers, ['cluster.num_workers'], undefined).text).toMatch(/No SLO is set/);
  });

  it('on the same hardware, names how far the load can go, and the knee', () => {
    const rates = [5, 10, 15, 20, 25].map((r, i) =>
      line(
        i,
        { 'workload.rate_rps': r },
        { ...full, total_gpus: 4, output_throughput_tok_s: Math.min(r, 16) * 300, p99_ttft_ms: r <= 15 ? 500 : 9000 },
        r <= 15,
      ),
    );
    expect(verdict(rates, ['workload.rate_rps'], slo).text).toMatch(
      /^The SLO holds up to 15 req\/s \(4 GPUs\), with p99 TTFT 500 ms\. At 20 req\/s it does not/,
    );
    const k = knee(rates, 'workload.rate_rps');
    expect(k?.value).toBe(15);
    expect(k?.next.set['workload.rate_rps']).toBe(20);
    expect(knee(rates, 'cluster.num_workers')).toBeNull();
  });

  it('lists the broken bounds, completions and per-request share', () => {
    expect(broken({ p99_itl_ms: 10, ttft_ms: 100 }, { num_requests: 10, completed_requests: 8, p99_itl_ms: 12, goodput_completed_requests: 4 })).toEqual([
      '8 of 10 requests completed',
      'p99 ITL 12 ms > 10 ms',
      '50.0 % of requests within the per-request thresholds (< 99.0 %)',
    ]);
  });

  it('finds the Pareto front of tokens/s per GPU against tokens/s per user', () => {
    const pts = [
      [100, 50],
      [80, 60],
      [60, 40], // dominated by both above
      [40, 90],
      [40, 80], // dominated by the one above
    ].map(([user, gpu], i) =>
      line(i, { x: i }, { total_gpus: 2, output_throughput_tok_s: (gpu as number) * 2, mean_output_token_throughput_per_user: user as number }),
    );
    expect(paretoFront(pts)).toEqual([3, 1, 0]);
  });

  it('exports CSV with the fields by their paths and JSON lines in point order', () => {
    const ls = [line(1, { 'a.b': 'x,y' }, { k: 2 }, false), line(0, { 'a.b': 1 }, { k: 1, z: 3 }, true)];
    expect(
      sweepCsv(
        [...ls].sort((a, b) => a.point - b.point),
        ['a.b'],
      ),
    ).toBe('point,a.b,meets_slo,k,z\n0,1,true,1,3\n1,"x,y",false,2,\n');
    expect(sweepJsonLines(ls)).toBe(`${ls[1]?.text}\n${ls[0]?.text}\n`);
  });
});
