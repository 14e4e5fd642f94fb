// The offload view of a run with KV offload tiers: where each window's prompt tokens came
// from (the GPU's prefix cache, the host tier, or computed), how much the host tier loaded
// back (tokens per second, requests that waited for a load), and the report's tier counters
// (`g3_offload`, `g2_domains`).

import type { Columns } from '../engine/protocol';
import type { ChartSpec } from './harness-chart';
import { fmt } from './summary';

const secs = (t: Float64Array | number[]) => Array.from(t, (x) => x / 1000);
const col = (c: Columns, k: string, n: number) => Array.from(c[k] ?? new Float64Array(n), (x) => (Number.isFinite(x) ? x : null));

/** Window end times for the tier columns (they may run past the time series). */
export function tierTimes(t_ms: Float64Array, interval_ms: number, n: number): number[] {
  return Array.from({ length: n }, (_, k) => (k < t_ms.length ? (t_ms[k] as number) : (k + 1) * interval_ms));
}

export function hitChart(tiers: Columns, t_ms: number[]): ChartSpec {
  const n = t_ms.length;
  return {
    x: secs(t_ms),
    ys: [col(tiers, 'gpu_hit_tokens', n), col(tiers, 'host_hit_tokens', n), col(tiers, 'computed_tokens', n)],
    lines: [
      { label: 'GPU prefix cache', color: '#2563eb' },
      { label: 'host tier (G2)', color: '#d97706', fill: '#d9770622' },
      { label: 'computed', color: '#6b7280', dash: [4, 3] },
    ],
    xLabel: 'time (s)',
    yLabel: 'prompt tokens',
    counts: true,
  };
}

export function onboardChart(tiers: Columns, t_ms: number[]): ChartSpec {
  const n = t_ms.length;
  return {
    x: secs(t_ms),
    ys: [col(tiers, 'host_onboard_tok_s', n), col(tiers, 'host_onboard_requests', n)],
    lines: [
      { label: 'host → GPU tok/s', color: '#d97706', fill: '#d9770622' },
      { label: 'requests loaded', color: '#7c3aed', scale: 'y2', dash: [4, 3] },
    ],
    xLabel: 'time (s)',
    yLabel: 'tokens/s',
    y2Label: 'requests',
    counts: true,
  };
}

/** Flattens a counter object ({read: {completed_bytes}}) into rows: "read.completed_bytes". */
export function counterRows(v: unknown, prefix = ''): [string, string][] {
  if (typeof v !== 'object' || v === null) return [[prefix, fmt(v)]];
  return Object.entries(v as Record<string, unknown>).flatMap(([k, x]) => counterRows(x, prefix ? `${prefix}.${k}` : k));
}

/** Totals over the run, from the per-window columns. */
export function tierTotals(tiers: Columns): { gpu: number; host: number; computed: number; loads: number } {
  const sum = (k: string) => Array.from(tiers[k] ?? []).reduce((a, b) => a + (Number.isFinite(b) ? b : 0), 0);
  return { gpu: sum('gpu_hit_tokens'), host: sum('host_hit_tokens'), computed: sum('computed_tokens'), loads: sum('host_onboard_requests') };
}
