// The Sweep panel: pick one or two fields and their values (or a one-click preset), an SLO,
// and run every point on a pool of Web Workers; then the answer in words, the charts, the
// table, and exports that equal `servesim sweep`'s output. The panel builds its own markup
// inside `<details id="sweep">`, so the page's markup changes by one element.

import './sweep.css';
import { fmt } from '../results/summary';
import { clone, type Json, type JsonObject, setPath } from '../scenario/json';
import { el } from '../ui/dom';
import { button, PanelStatus, Throttled } from '../ui/panel';
import { SweepCharts } from './charts';
import { defaultPoolSize, type SweepJob, SweepPool, type SweepUploads } from './pool';
import {
  type AxisText,
  axisText,
  describeSet,
  knee,
  loadPreset,
  type PointLine,
  parseAxis,
  parseLine,
  parseSlo,
  SLO_KEYS,
  type SloKey,
  type SweepSpec,
  sweepCsv,
  sweepFile,
  sweepJsonLines,
  tokPerGpu,
  tokPerUser,
  verdict,
  workersPreset,
} from './spec';

/** The most points the page runs (a grid a person reads; the CLI takes up to 10,000). */
export const MAX_PAGE_POINTS = 1000;

/** What the panel needs from the page. */
export interface SweepHost {
  /** The scenario's non-default fields (the sweep's base). */
  base(): JsonObject;
  /** The full scenario on screen (presets read its current rate and worker count). */
  scenario(): JsonObject;
  uploads(): SweepUploads;
  /** Why the settings on screen cannot run, or null. */
  refusal(): string | null;
  /** Opens a point's scenario as a normal run. */
  openPoint(scenario: JsonObject): void;
  /** The sweep in the link changed (run or cleared). */
  linkChanged(): void;
  download(name: string, text: string, type: string): void;
}

interface Expanded {
  count: number;
  fields: string[];
  points: { point: number; set: Record<string, Json>; scenario: JsonObject }[];
}

/** Suggested fields (any dotted path of the scenario works). */
const FIELDS = [
  'workload.rate_rps',
  'cluster.num_workers',
  'workload.arrival_speedup_ratio',
  'workload.num_requests',
  'engine.max_num_seqs',
  'engine.max_num_batched_tokens',
  'engine.num_gpu_blocks',
  'engine.block_size',
  'engine.timing_model.tp',
  'engine.timing_model.gpu',
  'cluster.router_mode',
  'cluster.num_prefill_workers',
  'cluster.num_decode_workers',
];

const SLO_LABELS: Record<SloKey, [string, string]> = {
  p99_ttft_ms: ['p99 TTFT ≤', 'ms'],
  p99_itl_ms: ['p99 ITL ≤', 'ms'],
  p99_tpot_ms: ['p99 TPOT ≤', 'ms'],
  p99_e2e_latency_ms: ['p99 E2E ≤', 'ms'],
  ttft_ms: ['each TTFT ≤', 'ms'],
  itl_ms: ['each ITL ≤', 'ms'],
  e2e_ms: ['each E2E ≤', 'ms'],
  min_goodput_ratio: ['good share ≥', '(0.99)'],
};

function input(id: string, placeholder: string, label: string): HTMLInputElement {
  return el('input', { id, type: 'text', placeholder, autocomplete: 'off', spellcheck: false, ariaLabel: label });
}

/** A latency with its unit: "683 ms", "11.3 s". */
function msText(v: number | undefined): string {
  if (typeof v !== 'number' || !Number.isFinite(v)) return '—';
  return v >= 10_000 ? `${fmt(v / 1000)} s` : `${fmt(v)} ms`;
}

export class SweepPanel {
  private pool: SweepPool;
  private job: SweepJob | null = null;
  /** The engine is expanding a sweep about to run (cold workers take a moment to load it). */
  private expanding = false;
  private lines: PointLine[] = [];
  private expanded: Expanded | null = null;
  /** The sweep last run (it travels in the link until cleared). */
  private active: SweepSpec | null = null;
  /** The sweep file last run, as text (exported as sweep.json). */
  private fileText = '';
  private baseText = '';
  private charts: SweepCharts;
  /** The answer, table and charts, redrawn at most once a second while results come in. */
  private redraw = new Throttled(() => this.render());
  /** Redraws so far (the tests hold them to once a second), and the latest one's number. */
  private renders = 0;
  private drawSeq = 0;
  private seq = 0;

  private fields: HTMLInputElement[] = [];
  private values: HTMLInputElement[] = [];
  private slo = {} as Record<SloKey, HTMLInputElement>;
  private runBtn: HTMLButtonElement;
  private cancelBtn: HTMLButtonElement;
  private clearBtn: HTMLButtonElement;
  private progress: HTMLProgressElement;
  private status: HTMLElement;
  private message: HTMLElement;
  private line: PanelStatus;
  private results: HTMLElement;
  private answer: HTMLElement;
  private kneeNote: HTMLElement;
  private table: HTMLTableElement;
  private exportBtns: HTMLButtonElement[];
  private cli: HTMLElement;

  constructor(
    private root: HTMLDetailsElement,
    private host: SweepHost,
  ) {
    const params = new URLSearchParams(location.search);
    // `?sweep-workers=N` pins the pool size (to measure the speed-up of more workers).
    const pinned = Number(params.get('sweep-workers'));
    this.pool = new SweepPool(Number.isInteger(pinned) && pinned >= 1 ? pinned : defaultPoolSize());

    const list = el('datalist', { id: 'sweep-fields' }, ...FIELDS.map((f) => el('option', { value: f })));
    const axisRow = (k: number, what: string) => {
      const f = input(`sweep-field-${k}`, k === 0 ? 'workload.rate_rps' : '(optional) a second field', `${what} field`);
      f.setAttribute('list', 'sweep-fields');
      const v = input(`sweep-values-${k}`, '1, 2, 4   or   4..10 step 2', `${what} values`);
      this.fields.push(f);
      this.values.push(v);
      return el('div', { className: 'sweep-axis' }, el('span', { className: 'sweep-k' }, what), f, v);
    };
    const presets = el(
      'div',
      { className: 'sweep-presets' },
      el('span', { className: 'note' }, 'One click:'),
      button('sweep-preset-load', 'Load sweep (arrival rate)', () => this.preset('load')),
      button('sweep-preset-workers', 'Worker-count sweep', () => this.preset('workers')),
    );
    const sloBox = el('fieldset', { className: 'sweep-slo' }, el('legend', {}, 'SLO (leave empty what does not matter)'));
    for (const key of SLO_KEYS) {
      const [label, unit] = SLO_LABELS[key];
      const i = input(`slo-${key}`, '', `SLO ${key}`);
      i.inputMode = 'decimal';
      this.slo[key] = i;
      sloBox.append(el('label', { className: 'sweep-slo-field', title: key }, el('span', {}, label), i, el('small', {}, unit)));
    }
    this.runBtn = button('sweep-run', 'Run sweep', () => void this.run());
    this.runBtn.className = 'primary';
    this.cancelBtn = button('sweep-cancel', 'Cancel sweep', () => this.cancel());
    this.cancelBtn.hidden = true;
    this.clearBtn = button('sweep-clear', 'Clear sweep', () => this.clear());
    this.clearBtn.hidden = true;
    this.progress = el('progress', { id: 'sweep-progress', max: 1, value: 0, hidden: true, ariaLabel: 'Sweep progress' });
    this.status = el('span', { id: 'sweep-status', role: 'status' });
    this.message = el('p', { id: 'sweep-message', role: 'alert', hidden: true });
    this.line = new PanelStatus(this.status, this.message);
    this.answer = el('p', { id: 'sweep-answer' });
    this.kneeNote = el('p', { id: 'sweep-knee', className: 'note', hidden: true });
    const figure = (id: string, caption: string) => {
      const f = el('figure', { className: 'chart sweep-chart', id: `sweep-chart-${id}` }, el('figcaption', {}, caption));
      f.dataset.chart = id;
      return f;
    };
    const charts = el(
      'div',
      { className: 'charts' },
      figure('ttft', 'TTFT against the swept field (ms, p50 dashed, p99 solid)'),
      figure('itl', 'ITL against the swept field (ms)'),
      figure('e2e', 'E2E latency against the swept field (ms)'),
      figure('pareto', 'Output tokens/s per GPU against tokens/s per user'),
    );
    this.table = el('table', { id: 'sweep-table' }, el('thead'), el('tbody'));
    this.exportBtns = [
      button('export-sweep', 'Sweep JSON lines', () => this.exportLines()),
      button('export-sweep-csv', 'Sweep CSV', () => host.download('servesim-sweep.csv', sweepCsv(this.sorted(), this.expanded?.fields ?? []), 'text/csv')),
      button('export-sweep-file', 'sweep.json', () => host.download('sweep.json', this.fileText, 'application/json')),
    ];
    this.cli = el('pre', { id: 'sweep-cli' });
    this.results = el(
      'div',
      { id: 'sweep-results', hidden: true },
      el('p', { id: 'sweep-stale', className: 'stale-note', hidden: true }, 'These sweep results are for earlier settings: Run sweep to update them.'),
      this.answer,
      this.kneeNote,
      charts,
      el('p', { className: 'note' }, 'Click a point in a chart, or Open in the table, to see it as a normal run.'),
      el('div', { className: 'sweep-table-wrap' }, this.table),
      el('div', { className: 'buttons sweep-exports' }, ...this.exportBtns),
      el('p', { className: 'note' }, 'The same sweep from the command line (the JSON lines are byte for byte these):'),
      this.cli,
    );
    root.append(
      el('summary', {}, 'Sweep: vary one or two fields, check an SLO, find the smallest configuration'),
      list,
      presets,
      el('div', { className: 'sweep-axes' }, axisRow(0, 'Vary'), axisRow(1, 'and')),
      sloBox,
      el('div', { className: 'sweep-actions' }, this.runBtn, this.cancelBtn, this.progress, this.status, this.clearBtn),
      this.message,
      this.results,
    );
    this.charts = new SweepCharts(root, (p) => this.open(p));
    root.addEventListener('toggle', () => {
      if (root.open) this.pool.warm();
    });
    for (const b of this.exportBtns) b.disabled = true;
    for (const i of [...this.fields, ...this.values, ...Object.values(this.slo)])
      i.addEventListener('keydown', (e) => {
        if (e.key === 'Enter') void this.run();
      });
  }

  /** A one-click sweep: the load or the worker count around the scenario on screen, with an SLO. */
  preset(kind: 'load' | 'workers'): void {
    this.root.open = true;
    const s = this.host.scenario();
    const axis = kind === 'load' ? loadPreset(s) : workersPreset(s);
    this.fill([axis]);
    // The capacity question's usual objective, when none is set yet.
    if (Object.values(this.slo).every((i) => i.value.trim() === '')) this.slo.p99_ttft_ms.value = '2000';
    void this.run();
  }

  private fill(axes: AxisText[]): void {
    this.fields.forEach((f, k) => {
      f.value = axes[k]?.field ?? '';
    });
    this.values.forEach((v, k) => {
      v.value = axes[k]?.values ?? '';
    });
  }

  /** The sweep the panel describes; throws SweepInputError naming the field. */
  private spec(): SweepSpec {
    const vary = this.fields
      .map((f, k) => ({ field: f.value, values: this.values[k]?.value ?? '' }))
      .filter((a, k) => k === 0 || a.field.trim() !== '' || a.values.trim() !== '')
      .map(parseAxis);
    const sloText: Partial<Record<SloKey, string>> = {};
    for (const key of SLO_KEYS) sloText[key] = this.slo[key].value;
    const slo = parseSlo(sloText);
    return slo ? { vary, slo } : { vary };
  }

  /** The sweep for the share link (the one last run), or null. */
  linkSpec(): SweepSpec | null {
    return this.active;
  }

  /**
   * The scenario less what the sweep sets (its fields and `slo`): a point opened as a run
   * leaves the sweep current; any other edit makes it stale.
   */
  private unswept(scenario: JsonObject): string {
    const s = clone(scenario);
    for (const f of [...(this.expanded?.fields ?? []), 'slo']) setPath(s, f, undefined);
    return JSON.stringify(s);
  }

  /** Marks the results stale when the settings on screen are no longer the ones they ran. */
  baseChanged(scenario: JsonObject): void {
    const stale = this.lines.length > 0 && this.unswept(scenario) !== this.baseText;
    this.results.dataset.stale = String(stale);
    (this.root.querySelector('#sweep-stale') as HTMLElement).hidden = !stale;
  }

  /** Opens a sweep from a link: fills the panel and runs it. */
  openFromLink(spec: SweepSpec): void {
    this.root.open = true;
    this.fill(spec.vary.map(axisText));
    for (const key of SLO_KEYS) {
      const v = spec.slo?.[key];
      this.slo[key].value = v === undefined ? '' : String(v);
    }
    void this.run(spec);
  }

  async run(given?: SweepSpec): Promise<void> {
    const seq = ++this.seq;
    this.job?.cancel();
    this.job = null;
    this.line.say(null);
    let spec: SweepSpec;
    try {
      spec = given ?? this.spec();
    } catch (e) {
      this.line.say((e as Error).message);
      this.line.set('refused', 'Fix the sweep before running it');
      return;
    }
    const refusal = this.host.refusal();
    if (refusal) {
      this.line.say(`The settings on screen cannot run, so neither can a sweep of them: ${refusal}`);
      this.line.set('refused', 'Fix the settings before sweeping');
      return;
    }
    const base = this.host.base();
    const file = sweepFile(base, spec);
    const text = `${JSON.stringify(file, null, 2)}\n`;
    this.line.set('running', 'Expanding the sweep…');
    this.expanding = true;
    this.cancelBtn.hidden = false;
    let expanded: Expanded;
    try {
      expanded = JSON.parse(await this.pool.expand(JSON.stringify(file), MAX_PAGE_POINTS)) as Expanded;
    } catch (e) {
      if (seq !== this.seq) return;
      this.expanding = false;
      this.cancelBtn.hidden = true;
      this.line.say(`The sweep cannot run: ${(e as Error).message}`);
      this.line.set('refused', 'Refused: fix the sweep');
      return;
    }
    if (seq !== this.seq) return;
    this.expanding = false;
    this.active = spec;
    this.fileText = text;
    this.expanded = expanded;
    this.baseText = this.unswept(this.host.scenario());
    this.lines = [];
    this.host.linkChanged();
    this.clearBtn.hidden = false;
    this.results.hidden = false;
    this.baseChanged(this.host.scenario());
    this.render();
    const t0 = performance.now();
    const job = this.pool.run(JSON.stringify(file), expanded.count, this.host.uploads(), {
      onLine: (_i, line) => {
        this.lines.push(parseLine(line));
        this.redraw.schedule();
      },
      onProgress: (done, fraction) => {
        this.progress.value = fraction;
        this.line.set('running', `${done} of ${expanded.count} points done on ${job.workers} workers…`);
      },
    });
    this.job = job;
    this.progress.value = 0;
    this.progress.hidden = false;
    this.cancelBtn.hidden = false;
    this.runBtn.disabled = true;
    this.line.set('running', `0 of ${expanded.count} points done on ${job.workers} workers…`);
    this.status.dataset.workers = String(job.workers);
    try {
      await job.done;
      if (this.job !== job) return;
      const secs = (performance.now() - t0) / 1000;
      this.status.dataset.elapsedMs = String(Math.round(secs * 1000));
      this.line.set('done', `Done: ${expanded.count} points in ${secs.toFixed(2)} s on ${job.workers} workers (${fmt(expanded.count / secs)} points/s)`);
    } catch (e) {
      if (this.job !== job) return;
      const msg = (e as Error).message;
      if (msg === 'cancelled') this.line.set('cancelled', `Cancelled: ${this.lines.length} of ${expanded.count} points done`);
      else {
        this.line.say(`The sweep stopped: ${msg}`);
        this.line.set('error', 'The sweep stopped on an error');
      }
    } finally {
      if (this.job === job) {
        this.job = null;
        this.progress.hidden = true;
        this.cancelBtn.hidden = true;
        this.runBtn.disabled = false;
        this.render();
      }
    }
  }

  cancel(): void {
    if (this.expanding) {
      // Not started yet: the expansion's answer is dropped (the run sees a newer sequence).
      this.seq++;
      this.expanding = false;
      this.pool.terminate();
      this.cancelBtn.hidden = true;
      this.line.set('cancelled', 'Cancelled before any point ran');
      return;
    }
    // Terminating the workers stops every point at once.
    this.job?.cancel();
  }

  /** Whether a sweep is running or about to (Escape cancels it, as it does a run). */
  get running(): boolean {
    return this.expanding || this.job !== null;
  }

  /** Clears the sweep and its results (a link without a sweep was opened, or Clear sweep). */
  clear(): void {
    this.cancel();
    this.seq++;
    this.redraw.cancel();
    this.drawSeq++;
    this.active = null;
    this.lines = [];
    this.expanded = null;
    this.results.hidden = true;
    this.clearBtn.hidden = true;
    this.charts.clear();
    this.line.say(null);
    this.line.set('idle', '');
    this.host.linkChanged();
  }

  private open(point: number): void {
    const p = this.expanded?.points[point];
    if (p) this.host.openPoint(p.scenario);
  }

  private exportLines(): void {
    this.host.download('servesim-sweep.jsonl', sweepJsonLines(this.lines), 'application/x-ndjson');
  }

  private sorted(): PointLine[] {
    return [...this.lines].sort((a, b) => a.point - b.point);
  }

  /** Redraws now (a sweep started or ended), dropping a redraw that was scheduled. */
  private render(): void {
    this.redraw.cancel();
    this.renders += 1;
    this.results.dataset.renders = String(this.renders);
    this.drawSeq += 1;
    const seq = this.drawSeq;
    // The text and table now, then each chart in a task of its own (no task holds the page long).
    const charts = this.drawText();
    const step = () => {
      const draw = charts.shift();
      if (!draw || seq !== this.drawSeq) return;
      draw();
      setTimeout(step, 0);
    };
    setTimeout(step, 0);
  }

  /** The answer, knee and table; returns the chart drawers. */
  private drawText(): (() => void)[] {
    const ex = this.expanded;
    if (!ex) return [];
    const lines = this.sorted();
    const slo = this.active?.slo;
    const complete = lines.length === ex.count;
    const v = verdict(lines, ex.fields, slo);
    this.answer.textContent = lines.length === 0 ? '' : complete ? v.text : `So far (${lines.length} of ${ex.count} points): ${v.text}`;
    this.answer.dataset.point = v.point === null ? '' : String(v.point);
    const k = ex.fields.length === 1 ? knee(lines, ex.fields[0] as string) : null;
    this.kneeNote.hidden = k === null;
    if (k)
      this.kneeNote.textContent = `The knee: output throughput follows the load up to ${describeSet({ [ex.fields[0] as string]: k.value })} (${fmt(k.throughput)} tok/s); at ${describeSet({ [ex.fields[0] as string]: k.next.set[ex.fields[0] as string] as number })} it falls behind the load (${fmt(k.next.summary.output_throughput_tok_s)} tok/s, p99 TTFT ${msText(k.next.summary.p99_ttft_ms)}).`;
    this.renderTable(lines, ex.fields, v.point);
    for (const b of this.exportBtns) b.disabled = lines.length === 0;
    (this.exportBtns[2] as HTMLButtonElement).disabled = this.fileText === '';
    const jobs = this.status.dataset.workers ?? '2';
    this.cli.textContent = [
      '# save the sweep file (the sweep.json button); put any trace or profile it names next to it',
      `./target/release/servesim sweep sweep.json --jobs ${jobs} > sweep.jsonl`,
    ].join('\n');
    if (lines.length) return this.charts.drawers({ lines, fields: ex.fields, slo, chosen: v.point });
    this.charts.clear();
    return [];
  }

  private renderTable(lines: PointLine[], fields: string[], chosen: number | null): void {
    const head = this.table.tHead as HTMLTableSectionElement;
    const body = this.table.tBodies[0] as HTMLTableSectionElement;
    const cols: [string, (l: PointLine) => string | number | null][] = [
      ['p50 TTFT ms', (l) => l.summary.median_ttft_ms ?? null],
      ['p99 TTFT ms', (l) => l.summary.p99_ttft_ms ?? null],
      ['p50 ITL ms', (l) => l.summary.median_itl_ms ?? null],
      ['p99 ITL ms', (l) => l.summary.p99_itl_ms ?? null],
      ['p50 E2E ms', (l) => l.summary.median_e2e_latency_ms ?? null],
      ['p99 E2E ms', (l) => l.summary.p99_e2e_latency_ms ?? null],
      ['output tok/s', (l) => l.summary.output_throughput_tok_s ?? null],
      ['GPUs', (l) => l.summary.total_gpus ?? null],
      ['tok/s per GPU', (l) => tokPerGpu(l.summary)],
      ['tok/s per user', (l) => tokPerUser(l.summary)],
      ['completed', (l) => `${fmt(l.summary.completed_requests)} / ${fmt(l.summary.num_requests)}`],
    ];
    const hr = el(
      'tr',
      {},
      el('th', { className: 'num' }, 'point'),
      ...fields.map((f) => el('th', {}, f)),
      ...cols.map(([n]) => el('th', { className: 'num' }, n)),
      el('th', {}, 'SLO'),
      el('th', {}, 'Open'),
    );
    head.replaceChildren(hr);
    body.replaceChildren(
      ...lines.map((l) => {
        const tr = el('tr');
        tr.dataset.point = String(l.point);
        tr.dataset.meets = String(l.meets_slo ?? '');
        if (l.point === chosen) tr.className = 'chosen';
        tr.append(el('td', { className: 'num' }, String(l.point)));
        for (const f of fields) tr.append(el('td', {}, typeof l.set[f] === 'string' ? (l.set[f] as string) : JSON.stringify(l.set[f])));
        for (const [, get] of cols) {
          const v = get(l);
          const td = el('td', { className: 'num' }, typeof v === 'number' ? fmt(v) : (v ?? '—'));
          if (typeof v === 'number') td.dataset.value = String(v);
          tr.append(td);
        }
        tr.append(
          el(
            'td',
            { className: `slo ${l.meets_slo === true ? 'ok' : l.meets_slo === false ? 'bad' : ''}` },
            l.meets_slo === undefined ? '—' : l.meets_slo ? 'meets' : 'misses',
          ),
        );
        const open = button(`sweep-open-${l.point}`, 'Open', () => this.open(l.point));
        open.title = `Open ${describeSet(l.set)} as a normal run`;
        tr.append(el('td', {}, open));
        return tr;
      }),
    );
  }
}
