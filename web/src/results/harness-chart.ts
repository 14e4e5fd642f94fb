// A small uPlot chart for the scaling and offload views: stepped or plain lines, optional
// shaded bands between series, resized with its container.

import uPlot from 'uplot';
import { ChartTable } from '../ui/chart-table';
import { compact } from './charts';

export interface Line {
  label: string;
  color: string;
  /** Fill under the line (to zero), a CSS colour. */
  fill?: string;
  dash?: number[];
  stepped?: boolean;
  scale?: string;
}

export interface ChartSpec {
  x: number[];
  ys: (number | null)[][];
  lines: Line[];
  /** Shade between two series (1-based indices into `lines`, upper first). */
  bands?: { series: [number, number]; fill: string }[];
  xLabel: string;
  yLabel: string;
  y2Label?: string;
  /** Counts: from 0, at least 0..1. */
  counts?: boolean;
}

const stepped = uPlot.paths.stepped?.({ align: 1 });

export class HarnessChart {
  private plot: uPlot | null = null;
  private observer: ResizeObserver;

  constructor(
    private host: HTMLElement,
    private height = 220,
  ) {
    this.observer = new ResizeObserver(() => this.plot?.setSize({ width: this.width(), height: this.height }));
    this.observer.observe(host);
    this.table = new ChartTable(host.closest('figure') ?? host);
  }

  private table: ChartTable;

  private width(): number {
    return Math.max(240, Math.floor(this.host.clientWidth - 4));
  }

  draw(spec: ChartSpec): void {
    this.plot?.destroy();
    const values = (_u: uPlot, splits: number[]) => splits.map(compact);
    const axes: uPlot.Axis[] = [
      { label: spec.xLabel, labelSize: 16, size: 32, values },
      { label: spec.yLabel, labelSize: 16, size: 52, values },
    ];
    const scales: uPlot.Scales = { x: { time: false } };
    if (spec.counts) scales.y = { range: (_u, _min, max) => [0, Math.max(1, Math.ceil(max * 1.15))] };
    if (spec.y2Label) {
      axes.push({ label: spec.y2Label, scale: 'y2', side: 1, grid: { show: false }, labelSize: 16, size: 52, values });
      scales.y2 = { range: (_u, _min, max) => [0, Math.max(1, max * 1.1)] };
    }
    const series: uPlot.Series[] = [
      { label: spec.xLabel },
      ...spec.lines.map((l) => ({
        label: l.label,
        stroke: l.color,
        fill: l.fill,
        width: 1.5,
        dash: l.dash,
        scale: l.scale ?? 'y',
        spanGaps: true,
        points: { show: false },
        paths: l.stepped ? stepped : undefined,
      })),
    ];
    this.plot = new uPlot(
      { width: this.width(), height: this.height, series, axes, scales, bands: spec.bands, legend: { live: true } },
      [spec.x, ...spec.ys] as uPlot.AlignedData,
      this.host,
    );
    this.table.set(
      [spec.x, ...spec.ys],
      series.map((s) => String(s.label ?? '')),
      this.plot.ctx.canvas,
    );
  }

  destroy(): void {
    this.plot?.destroy();
    this.plot = null;
    this.observer.disconnect();
  }
}
