// Chart data that needs no DOM: CDFs and latency samples of the per-request records.

import { entry, type RunResult } from './protocol';

const MAX_CDF_POINTS = 600;

export function cdf(values: number[]): [number[], number[]] {
  const v = values.filter(Number.isFinite).sort((a, b) => a - b);
  const largest = v.at(-1);
  if (largest === undefined) return [[], []];
  const n = v.length;
  const step = Math.max(1, Math.ceil(n / MAX_CDF_POINTS));
  // Every step-th value with its percentile, and the largest at 100.
  const points: [number, number][] = [];
  v.forEach((x, i) => {
    if (i % step === 0) points.push([x, ((i + 1) / n) * 100]);
  });
  if (points.at(-1)?.[0] !== largest) points.push([largest, 100]);
  // uPlot needs strictly increasing x within one table: keep the last y of equal xs.
  const ox: number[] = [];
  const oy: number[] = [];
  for (const [x, y] of points) {
    if (ox.at(-1) === x) oy[oy.length - 1] = y;
    else {
      ox.push(x);
      oy.push(y);
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
  for (const [i, status] of c.status.entries()) {
    if (status !== 1) continue;
    const first = entry(c.first_token_ms, i);
    if (!Number.isFinite(first)) continue;
    const arrival = entry(c.arrival_ms, i);
    ttft.push(first - arrival);
    e2e.push(entry(c.end_ms, i) - arrival);
    const tokens = entry(c.output_tokens, i);
    if (tokens >= 2) tpot.push((entry(c.last_token_ms, i) - first) / (tokens - 1));
  }
  return { ttft, tpot, e2e };
}
