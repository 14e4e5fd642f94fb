// Charts with uPlot: time series come from the worker as typed-array columns; distributions
// are CDFs of the per-request records. With a pinned run, each chart overlays run A (dashed)
// and run B.

import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import type { Cdf, RunResult } from '../engine/protocol';
import { ChartTable, type Column } from '../ui/chart-table';
import { TERMS } from '../ui/glossary';

export interface Run {
  label: string;
  result: RunResult;
  /** Drawn dashed and lighter (the pinned baseline). */
  baseline?: boolean;
  /** A pinned run's own colour (distributions) and dash (every chart), when several are pinned. */
  color?: string;
  dash?: number[];
}

export const PALETTE = ['#2563eb', '#dc2626', '#059669', '#d97706', '#7c3aed', '#db2777', '#0891b2', '#65a30d'];

type Table = [Float64Array | number[], ...(Float64Array | number[] | (number | null)[])[]];

interface SeriesSpec {
  label: string;
  color: string;
  dash?: number[];
  scale?: string;
}

function nulls(v: Float64Array | number[]): (number | null)[] {
  return Array.from(v, (x) => (Number.isFinite(x) ? x : null));
}

function seconds(t: Float64Array): number[] {
  return Array.from(t, (x) => x / 1000);
}

class Chart {
  private plot: uPlot | null = null;
  private observer: ResizeObserver;
  private table: ChartTable;

  constructor(
    private host: HTMLElement,
    private height: number,
  ) {
    this.observer = new ResizeObserver(() => {
      if (this.plot) this.plot.setSize({ width: this.width(), height: this.height });
    });
    this.observer.observe(host);
    this.table = new ChartTable(host.closest('figure') ?? host);
  }

  private width(): number {
    return Math.max(240, Math.floor(this.host.clientWidth - 4));
  }

  draw(
    data: uPlot.AlignedData,
    series: SeriesSpec[],
    opts: { xLabel: string; yLabel: string; y2Label?: string; yRange?: [number, number]; counts?: boolean },
  ): void {
    this.plot?.destroy();
    const values = (_u: uPlot, splits: number[]) => splits.map(compact);
    const axes: uPlot.Axis[] = [
      { label: opts.xLabel, labelSize: 16, size: 32, values },
      { label: opts.yLabel, labelSize: 16, size: 52, values },
    ];
    const scales: uPlot.Scales = { x: { time: false } };
    if (opts.yRange) scales.y = { range: opts.yRange };
    // Counts start at 0 and show at least 0..1 even when flat.
    else if (opts.counts) scales.y = { range: (_u, _min, max) => [0, Math.max(1, Math.ceil(max * 1.1))] };
    if (opts.y2Label) {
      axes.push({ label: opts.y2Label, scale: 'y2', side: 1, grid: { show: false }, labelSize: 16, size: 52, values });
      scales.y2 = {};
    }
    const useSeries: uPlot.Series[] = [
      { label: opts.xLabel },
      ...series.map((s) => ({
        label: s.label,
        stroke: s.color,
        width: 1.5,
        dash: s.dash,
        spanGaps: true,
        scale: s.scale ?? 'y',
        points: { show: false },
      })),
    ];
    this.plot = new uPlot(
      { width: this.width(), height: this.height, series: useSeries, axes, scales, legend: { live: true }, cursor: { drag: { x: true, y: false } } },
      data,
      this.host,
    );
    this.table.set(
      data as Column[],
      useSeries.map((s) => String(s.label ?? '')),
      this.plot.ctx.canvas,
    );
    // Legend entries name metrics: each says what it is on hover.
    for (const th of this.host.querySelectorAll<HTMLElement>('.u-legend .u-series th')) {
      const label = th.textContent ?? '';
      const name = Object.keys(TERMS).find((t) => label.includes(t));
      if (name) th.title = TERMS[name] ?? '';
    }
  }

  clear(): void {
    this.plot?.destroy();
    this.plot = null;
    this.table.clear();
  }
}

/** Axis labels: 1.5k, 150k, 2.5M; small numbers as they are. */
export function compact(v: number): string {
  if (v == null || !Number.isFinite(v)) return '';
  const a = Math.abs(v);
  if (a >= 1e6) return `${+(v / 1e6).toFixed(1)}M`;
  if (a >= 1e4) return `${+(v / 1e3).toFixed(0)}k`;
  if (a >= 1e3) return `${+(v / 1e3).toFixed(1)}k`;
  return String(+v.toPrecision(4));
}

function join(tables: Table[]): uPlot.AlignedData {
  if (tables.length === 1) return tables[0] as unknown as uPlot.AlignedData;
  return uPlot.join(tables as unknown as uPlot.AlignedData[]);
}

/** The palette's colour for series `i` (a non-negative index), cycling. */
function color(i: number): string {
  // biome-ignore lint/style/noNonNullAssertion: i % PALETTE.length is within the non-empty palette for any index i >= 0
  return PALETTE[i % PALETTE.length]!;
}

export class Charts {
  private charts = new Map<string, Chart>();

  constructor(
    root: ParentNode,
    private height = 220,
  ) {
    for (const fig of root.querySelectorAll<HTMLElement>('figure.chart')) {
      const host = document.createElement('div');
      host.className = 'plot';
      fig.append(host);
      this.charts.set(fig.id.replace(/^chart-/, ''), new Chart(host, this.height));
    }
  }

  private chart(id: string): Chart | undefined {
    return this.charts.get(id);
  }

  /** Draws every chart at once. */
  render(runs: Run[]): void {
    for (const draw of this.drawers(runs)) draw();
  }

  /**
   * One function per chart, to be called in turn (the playground calls one per frame, so a
   * large result never holds the main thread for long).
   */
  drawers(runs: Run[]): (() => void)[] {
    const style = (run: Run): { dash?: number[]; tag: string } => ({
      dash: run.dash ?? (run.baseline ? [6, 4] : undefined),
      tag: runs.length > 1 ? `${run.label} ` : '',
    });
    const out: (() => void)[] = [];

    // Throughput: output and input tokens/s (input on the right axis).
    out.push(() =>
      this.chart('throughput')?.draw(
        join(runs.map((run) => [seconds(run.result.series.t_ms), nulls(run.result.series.cluster.output_tok_s), nulls(run.result.series.cluster.input_tok_s)])),
        runs.flatMap((run) => {
          const s = style(run);
          return [
            { label: `${s.tag}output tok/s`, color: color(0), dash: s.dash },
            { label: `${s.tag}input tok/s`, color: color(2), dash: s.dash, scale: 'y2' },
          ];
        }),
        { xLabel: 'time (s)', yLabel: 'output tok/s', y2Label: 'input tok/s' },
      ),
    );

    const lat = [
      ['ttft_p50_ms', 'TTFT p50'],
      ['ttft_p99_ms', 'TTFT p99'],
      ['itl_p50_ms', 'ITL p50'],
      ['itl_p99_ms', 'ITL p99'],
    ] as const;
    out.push(() =>
      this.chart('latency')?.draw(
        join(runs.map((run) => [seconds(run.result.series.t_ms), ...lat.map(([k]) => nulls(run.result.series.cluster[k]))])),
        runs.flatMap((run) =>
          lat.map(([, label], i) => ({
            label: style(run).tag + label,
            color: color(i === 0 || i === 1 ? i : i + 1),
            dash: style(run).dash,
            scale: i >= 2 ? 'y2' : 'y',
          })),
        ),
        { xLabel: 'time (s)', yLabel: 'TTFT (ms)', y2Label: 'ITL (ms)' },
      ),
    );

    for (const [id, key, name] of [
      ['dist-ttft', 'ttft', 'TTFT'],
      ['dist-tpot', 'tpot', 'TPOT'],
      ['dist-e2e', 'e2e', 'E2E'],
    ] as const) {
      out.push(() => {
        // The runs with samples, each with its CDF (computed in the worker).
        const shown = runs.map((run) => ({ run, table: run.result.cdfs[key] as Cdf as Table })).filter(({ table }) => table[0].length > 0);
        if (shown.length === 0) {
          this.chart(id)?.clear();
          return;
        }
        this.chart(id)?.draw(
          join(shown.map(({ table }) => table)),
          shown.map(({ run }, i) => ({ label: `${style(run).tag}${name}`, color: run.color ?? color(i === 0 ? 0 : 1), dash: style(run).dash })),
          { xLabel: `${name} (ms)`, yLabel: 'percentile', yRange: [0, 100] },
        );
      });
    }

    // One line per rank of each column; a second column (the encoder part of the pass time)
    // is drawn dotted in its rank's colour.
    const perRank = (id: string, column: string, yLabel: string, opts: { yRange?: [number, number]; part?: [string, string] } = {}) => {
      const tables: Table[] = [];
      const series: SeriesSpec[] = [];
      for (const run of runs) {
        const { t_ms, ranks } = run.result.series;
        const part = opts.part;
        const parts = part ? ranks.filter((r) => r.columns[part[0]] !== undefined) : [];
        const col = (r: (typeof ranks)[number], c: string) => nulls(r.columns[c] ?? new Float64Array(t_ms.length));
        tables.push([seconds(t_ms), ...ranks.map((r) => col(r, column)), ...(part ? parts.map((r) => col(r, part[0])) : [])]);
        const dps = ranks.some((x) => x.dp_rank > 0);
        const name = (r: (typeof ranks)[number]) => {
          const pool = r.pool && r.pool !== 'aggregated' && r.pool !== 'agg' ? `${r.pool} ` : 'worker ';
          return `${style(run).tag}${pool}${r.worker}${dps ? `.${r.dp_rank}` : ''}`;
        };
        ranks.forEach((r, i) => {
          series.push({ label: name(r), color: color(i), dash: style(run).dash });
        });
        for (const r of parts) {
          const dash = style(run).dash ? [6, 3, 1, 3] : [1, 3];
          series.push({ label: `${name(r)} ${part?.[1]}`, color: color(ranks.indexOf(r)), dash });
        }
      }
      this.chart(id)?.draw(join(tables), series, { xLabel: 'time (s)', yLabel, yRange: opts.yRange, counts: opts.yRange === undefined });
    };
    out.push(() => perRank('kv', 'kv_usage', 'KV use', { yRange: [0, 1] }));
    out.push(() => perRank('queue', 'waiting', 'waiting requests'));
    out.push(() => perRank('hit', 'prefix_hit_rate', 'hit rate', { yRange: [0, 1] }));
    out.push(() => perRank('preempt', 'preemptions', 'per window'));
    out.push(() => perRank('pass', 'pass_ms', 'ms', { part: ['encoder_ms', 'encoder'] }));
    return out;
  }
}
