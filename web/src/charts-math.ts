// Chart data that needs no DOM: CDFs and latency samples of the per-request records.

import type { RunResult } from './protocol';

const MAX_CDF_POINTS = 600;

export function cdf(values: number[]): [number[], number[]] {
  const v = values.filter(Number.isFinite).sort((a, b) => a - b);
  const n = v.length;
  if (n === 0) return [[], []];
  const step = Math.max(1, Math.ceil(n / MAX_CDF_POINTS));
  const xs: number[] = [];
  const ys: number[] = [];
  for (let i = 0; i < n; i += step) {
    xs.push(v[i]);
    ys.push(((i + 1) / n) * 100);
  }
  if (xs[xs.length - 1] !== v[n - 1]) {
    xs.push(v[n - 1]);
    ys.push(100);
  }
  // uPlot needs strictly increasing x within one table: keep the last y of equal xs.
  const ox: number[] = [];
  const oy: number[] = [];
  for (let i = 0; i < xs.length; i++) {
    if (ox.length && ox[ox.length - 1] === xs[i]) oy[oy.length - 1] = ys[i];
    else {
      ox.push(xs[i]);
      oy.push(ys[i]);
    }
  }
  return [ox, oy];
}

/** TTFT, TPOT and E2E samples of the completed requests. */
export function latencies(r: RunResult): { ttft: number[]; tpot: number[]; e2e: number[] } {
  const c = r.records;
  const ttft: number[] = [];
  const tpot: number[] = [];
  const e2e: number[] = [];
  for (let i = 0; i < c.status.length; i++) {
    if (c.status[i] !== 1) continue;
    const first = c.first_token_ms[i];
    if (!Number.isFinite(first)) continue;
    ttft.push(first - c.arrival_ms[i]);
    e2e.push(c.end_ms[i] - c.arrival_ms[i]);
    if (c.output_tokens[i] >= 2) tpot.push((c.last_token_ms[i] - first) / (c.output_tokens[i] - 1));
  }
  return { ttft, tpot, e2e };
}
