// Every chart's text alternative: the canvas is named (role "img" and a label saying what it
// plots), and a "Data table" button under it shows the numbers drawn, as a table. The table is
// built when opened (and rebuilt while open), from the data the chart last drew.

import { el } from './dom';

export type Column = ArrayLike<number | null | undefined>;

/** At most this many rows: longer series are shown every k-th point (the note says so). */
const MAX_ROWS = 200;

let serial = 0;

function cell(v: number | null | undefined): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return '—';
  return v.toLocaleString('en-US', { maximumFractionDigits: Math.abs(v) >= 100 ? 1 : 4 });
}

export class ChartTable {
  private button: HTMLButtonElement;
  private box: HTMLElement;
  private data: Column[] = [];
  private labels: string[] = [];

  /** `fig`: the chart's figure (its caption names the chart). */
  constructor(private fig: HTMLElement) {
    const id = `chart-table-${++serial}`;
    // A scrolling region: focusable, so the keyboard can scroll it.
    this.box = el('div', { className: 'chart-table', id, hidden: true, tabIndex: 0 });
    this.box.setAttribute('role', 'region');
    this.button = el('button', { type: 'button', className: 'table-toggle', textContent: 'Data table' });
    this.button.setAttribute('aria-expanded', 'false');
    this.button.setAttribute('aria-controls', id);
    this.button.addEventListener('click', () => {
      this.box.hidden = !this.box.hidden;
      this.button.setAttribute('aria-expanded', String(!this.box.hidden));
      if (!this.box.hidden) this.build();
    });
    this.box.setAttribute('aria-label', 'Data table');
    fig.append(this.button, this.box);
  }

  private caption(): string {
    const c = this.fig.querySelector('figcaption');
    return (c?.textContent ?? 'Chart').replace(/\s+/g, ' ').trim();
  }

  /** What the chart drew: `data[0]` the x values, then one column per series, named by `labels`. */
  set(data: Column[], labels: string[], canvas: HTMLCanvasElement | null | undefined): void {
    this.data = data;
    this.labels = labels;
    const points = data[0]?.length ?? 0;
    if (canvas) {
      canvas.setAttribute('role', 'img');
      canvas.setAttribute(
        'aria-label',
        `${this.caption()}: ${labels.length - 1} line${labels.length === 2 ? '' : 's'} over ${points} points (the data table below lists them)`,
      );
    }
    this.button.hidden = points === 0;
    if (!this.box.hidden) this.build();
  }

  /** No data (a chart cleared). */
  clear(): void {
    this.data = [];
    this.button.hidden = true;
    this.box.hidden = true;
    this.button.setAttribute('aria-expanded', 'false');
  }

  private build(): void {
    const n = this.data[0]?.length ?? 0;
    const every = Math.max(1, Math.ceil(n / MAX_ROWS));
    const table = el('table', { className: 'data' });
    table.append(el('caption', { textContent: `${this.caption()}${every > 1 ? ` (every ${every}th of ${n} points)` : ''}` }));
    const head = el('tr');
    for (const l of this.labels) head.append(el('th', { scope: 'col', textContent: l }));
    table.append(el('thead', {}, head));
    const body = el('tbody');
    for (let i = 0; i < n; i += every) {
      const tr = el('tr');
      for (const [k, col] of this.data.entries()) tr.append(el(k === 0 ? 'th' : 'td', { textContent: cell(col[i]) }));
      body.append(tr);
    }
    table.append(body);
    this.box.replaceChildren(table);
  }
}
