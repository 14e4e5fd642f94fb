// The sweep's charts (uPlot, as the run charts): p50 and p99 of TTFT, ITL and E2E against the
// first varied field (one line per value of the second, if any) with the SLO's bound as a
// red line, on a log scale (past the knee latencies grow by orders of magnitude); and the
// Pareto chart of output tokens/s per GPU against tokens/s per user. Clicking a point of a
// chart opens it as a normal run.

import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { compact } from '../results/charts';
import type { Json } from '../scenario/json';
import { ChartTable, type Column } from '../ui/chart-table';
import { type PointLine, paretoFront, type Slo, tokPerGpu, tokPerUser } from './spec';

const GROUP_COLORS = ['#2563eb', '#059669', '#d97706', '#7c3aed', '#db2777', '#0891b2', '#65a30d', '#475569'];
const SLO_COLOR = '#dc2626';

function groupColor(i: number): string {
  return GROUP_COLORS[i % GROUP_COLORS.length] as string;
}

function label(v: Json | undefined): string {
  return typeof v === 'string' ? v : JSON.stringify(v ?? null);
}

/** Positive finite values only: the latency axes are logarithmic. */
function pos(v: number | undefined): number | null {
  return typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : null;
}

/** One uPlot chart in a host element, resized with it; `onPick` gets the point clicked. */
class Plot {
  private plot: uPlot | null = null;
  /** Point index of each x position (null where an x has more than one point). */
  private points: (number | null)[] = [];
  private table: ChartTable;

  constructor(
    private host: HTMLElement,
    private onPick: (point: number) => void,
    private height = 240,
  ) {
    new ResizeObserver(() => this.plot?.setSize({ width: this.width(), height: this.height })).observe(host);
    this.table = new ChartTable(host.closest('figure') ?? host);
  }

  private width(): number {
    return Math.max(240, Math.floor(this.host.clientWidth - 4));
  }

  draw(opts: uPlot.Options, data: uPlot.AlignedData, points: (number | null)[]): void {
    this.plot?.destroy();
    this.points = points;
    this.plot = new uPlot({ ...opts, width: this.width(), height: this.height }, data, this.host);
    this.table.set(
      data as Column[],
      opts.series.map((s) => String(s.label ?? '')),
      this.plot.ctx.canvas,
    );
    this.plot.over.style.cursor = 'pointer';
    this.plot.over.addEventListener('click', () => {
      const idx = this.plot?.cursor.idx;
      const p = idx == null ? null : this.points[idx];
      if (p != null) this.onPick(p);
    });
  }

  clear(): void {
    this.plot?.destroy();
    this.plot = null;
    this.table.clear();
  }
}

export interface SweepChartInput {
  lines: PointLine[];
  fields: string[];
  slo: Slo | undefined;
  /** The point the answer names (ringed in the Pareto chart). */
  chosen: number | null;
}

const METRICS = [
  ['ttft', 'TTFT', 'median_ttft_ms', 'p99_ttft_ms', 'p99_ttft_ms', 'ttft_ms'],
  ['itl', 'ITL', 'median_itl_ms', 'p99_itl_ms', 'p99_itl_ms', 'itl_ms'],
  ['e2e', 'E2E', 'median_e2e_latency_ms', 'p99_e2e_latency_ms', 'p99_e2e_latency_ms', 'e2e_ms'],
] as const;

export class SweepCharts {
  private plots = new Map<string, Plot>();

  constructor(root: ParentNode, onPick: (point: number) => void) {
    for (const fig of root.querySelectorAll<HTMLElement>('figure.sweep-chart')) {
      const host = document.createElement('div');
      host.className = 'plot';
      fig.append(host);
      this.plots.set(fig.dataset.chart ?? '', new Plot(host, onPick));
    }
  }

  clear(): void {
    for (const p of this.plots.values()) p.clear();
  }

  draw(input: SweepChartInput): void {
    for (const d of this.drawers(input)) d();
  }

  /** One function per chart (the panel calls one per task). */
  drawers(input: SweepChartInput): (() => void)[] {
    const out: (() => void)[] = [];
    const { lines, fields } = input;
    const xField = fields[0] ?? '';
    const gField = fields[1];
    // x positions: the first field's values in point order; numbers as they are, anything
    // else (a router mode) at 0, 1, 2, ... with the value as the tick label.
    const xs: Json[] = [];
    for (const l of [...lines].sort((a, b) => a.point - b.point)) {
      const v = l.set[xField] as Json;
      if (!xs.some((x) => label(x) === label(v))) xs.push(v);
    }
    const numeric = xs.every((v) => typeof v === 'number');
    const order = numeric ? [...xs].sort((a, b) => (a as number) - (b as number)) : xs;
    const xOf = (v: Json | undefined) => (numeric ? (v as number) : order.findIndex((x) => label(x) === label(v)));
    const groups: (Json | undefined)[] = gField === undefined ? [undefined] : [];
    if (gField !== undefined) for (const l of lines) if (!groups.some((g) => label(g) === label(l.set[gField]))) groups.push(l.set[gField]);
    const xAxis: uPlot.Axis = {
      label: xField,
      labelSize: 16,
      size: 34,
      values: (_u, splits) => splits.map((s) => (numeric ? compact(s) : Number.isInteger(s) ? label(order[s]) : '')),
    };
    if (!numeric) xAxis.splits = () => order.map((_, i) => i);
    const xVals = order.map(xOf);
    const pointAt = (x: number, g: Json | undefined) =>
      lines.find((l) => xOf(l.set[xField]) === x && (gField === undefined || label(l.set[gField]) === label(g)))?.point ?? null;
    // A click opens the point at that x: exact with one field, the first group's with two.
    const picks = xVals.map((x) => pointAt(x, groups[0]));

    for (const [id, name, p50, p99, bound, perRequest] of METRICS) {
      const series: uPlot.Series[] = [{ label: xField }];
      const data: (number | null)[][] = [];
      groups.forEach((g, gi) => {
        const tag = gField === undefined ? '' : `${gField} = ${label(g)}: `;
        const find = (x: number) => lines.find((l) => xOf(l.set[xField]) === x && (gField === undefined || label(l.set[gField]) === label(g)));
        data.push(xVals.map((x) => pos(find(x)?.summary[p99])));
        data.push(xVals.map((x) => pos(find(x)?.summary[p50])));
        const color = groupColor(gi);
        series.push({ label: `${tag}p99 ${name}`, stroke: color, width: 2, points: { show: true, size: 6 }, spanGaps: true });
        series.push({ label: `${tag}p50 ${name}`, stroke: color, width: 1.5, dash: [5, 4], points: { show: true, size: 4 }, spanGaps: true });
      });
      const b = input.slo?.[bound];
      if (b !== undefined) {
        data.push(xVals.map(() => b));
        series.push({ label: `SLO: p99 ≤ ${compact(b)} ms`, stroke: SLO_COLOR, width: 2, points: { show: false } });
      }
      const r = input.slo?.[perRequest];
      if (r !== undefined) {
        data.push(xVals.map(() => r));
        series.push({ label: `per-request threshold ${compact(r)} ms`, stroke: SLO_COLOR, width: 1, dash: [2, 3], points: { show: false } });
      }
      const opts: uPlot.Options = {
        width: 0,
        height: 0,
        series,
        scales: { x: { time: false }, y: { distr: 3 } },
        axes: [xAxis, { label: `${name} (ms)`, labelSize: 16, size: 56, values: (_u, s) => s.map(compact) }],
        legend: { live: true },
      };
      out.push(() => this.plots.get(id)?.draw(opts, [xVals, ...data] as uPlot.AlignedData, picks));
    }
    out.push(() => this.drawPareto(lines, input.chosen));
    return out;
  }

  /** Output tokens/s per GPU against tokens/s per user; the front as a line. */
  private drawPareto(lines: PointLine[], chosen: number | null): void {
    const pts = lines
      .map((l) => ({ l, x: tokPerUser(l.summary), y: tokPerGpu(l.summary) }))
      .filter((p): p is { l: PointLine; x: number; y: number } => p.x !== null && p.y !== null)
      .sort((a, b) => a.x - b.x || a.l.point - b.l.point);
    const front = new Set(paretoFront(lines).map((i) => lines[i]?.point));
    const xs = pts.map((p) => p.x);
    const meets = pts.map((p) => (p.l.meets_slo === false ? null : p.y));
    const misses = pts.map((p) => (p.l.meets_slo === false ? p.y : null));
    const frontier = pts.map((p) => (front.has(p.l.point) ? p.y : null));
    const answer = pts.map((p) => (p.l.point === chosen ? p.y : null));
    const anySlo = lines.some((l) => l.meets_slo !== undefined);
    const opts: uPlot.Options = {
      width: 0,
      height: 0,
      series: [
        { label: 'tok/s per user' },
        { label: anySlo ? 'meets the SLO' : 'point', stroke: '#059669', fill: '#059669', width: 0, paths: () => null, points: { show: true, size: 9 } },
        { label: 'misses the SLO', stroke: SLO_COLOR, width: 0, paths: () => null, points: { show: true, size: 9 }, show: anySlo },
        { label: 'Pareto front', stroke: '#2563eb', width: 1.5, spanGaps: true, points: { show: false } },
        { label: 'named above', stroke: '#111827', width: 0, paths: () => null, points: { show: true, size: 16, width: 2 }, show: chosen !== null },
      ],
      scales: { x: { time: false } },
      axes: [
        { label: 'output tok/s per user (mean)', labelSize: 16, size: 34, values: (_u, s) => s.map(compact) },
        { label: 'output tok/s per GPU', labelSize: 16, size: 56, values: (_u, s) => s.map(compact) },
      ],
      legend: { live: true },
    };
    this.plots.get('pareto')?.draw(
      opts,
      [xs, meets, misses, frontier, answer] as uPlot.AlignedData,
      pts.map((p) => p.l.point),
    );
  }
}
