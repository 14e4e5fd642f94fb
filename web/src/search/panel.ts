// "Find the cheapest configuration": the user states the load and the SLO; the panel searches
// the knobs that decide the answer (TP, workers, aggregated or disaggregated with the P:D
// split, the token budget per pass, max sequences, chunked prefill) with the engine's own
// search (`servesim recommend`'s), on Web Workers, and says the answer in words with the
// bill, why its binding latency is what it is, and the runner-ups. It warns when the answer
// sits on the edge of a range (and offers to extend it), and checks that the run is long
// enough for a steady state (lengthening it and searching again when it is not).

import './search.css';
import type { Presets } from '../engine/protocol';
import type { JsonObject } from '../scenario/json';
import { getPath } from '../scenario/json';
import { broken } from '../sweep/spec';
import { el } from '../ui/dom';
import { button, PanelStatus, Throttled } from '../ui/panel';
import type { Ranked } from './protocol';
import { SearchPool, type SearchResult, type Tried } from './run';
import {
  bill,
  type Config,
  configOf,
  type Edge,
  edges,
  extend,
  figures,
  itlReason,
  maxGpusOf,
  parseList,
  parseRange,
  rangeText,
  recommendText,
  type SearchSpec,
  setWords,
  unsteady,
} from './space';

/** A run is lengthened (doubled) at most this many times for a steady state. */
const MAX_LENGTHENINGS = 2;
/** Nor beyond this many requests. */
const MAX_REQUESTS = 16_000;

export interface SearchHost {
  /** The full scenario on screen (the model, GPU and load the search starts from). */
  scenario(): JsonObject;
  presets: Presets;
  /** The smallest TP at which a roofline timing model leaves room for the KV cache. */
  smallestTp(timingModel: object): Promise<number | null>;
  /** Opens a candidate's scenario as a normal run. */
  openScenario(scenario: JsonObject): void;
  download(name: string, text: string, type: string): void;
}

function gpuName(id: string): string {
  return id.toUpperCase().replace(/-SXM$/, '');
}

/** The summary's verdict against the SLO (the engine's rule: every bound at most its value, every request done). */
function meets(slo: SearchSpec['slo'], s: Record<string, number>): boolean {
  if ((s.completed_requests ?? 0) < (s.num_requests ?? 0)) return false;
  for (const [k, b] of Object.entries(slo)) {
    if (!k.startsWith('p99_')) continue;
    const v = s[k];
    if (!(typeof v === 'number' && v <= (b as number))) return false;
  }
  return true;
}

export class SearchPanel {
  private pool = new SearchPool();
  private job: { cancel: () => void } | null = null;
  private seq = 0;
  private spec: SearchSpec | null = null;
  private tried: Tried[] = [];
  /** The answer, table and charts, redrawn at most once a second while results come in. */
  private redraw = new Throttled(() => this.render());
  private renders = 0;
  private lastResult: SearchResult | null = null;
  private lastText = '';
  /** The smallest TP that fits the model on screen (the engine's figure; 1 until known). */
  private minTp = 1;

  private inputs: Record<string, HTMLInputElement> = {};
  private modeAgg: HTMLInputElement;
  private modeDis: HTMLInputElement;
  private chunked: HTMLSelectElement;
  private runBtn: HTMLButtonElement;
  private cancelBtn: HTMLButtonElement;
  private fileBtn: HTMLButtonElement;
  private progress: HTMLProgressElement;
  private status: HTMLElement;
  private message: HTMLElement;
  private line: PanelStatus;
  private results: HTMLElement;
  private answer: HTMLElement;
  private why: HTMLElement;
  private warnings: HTMLElement;
  private runnerUps: HTMLOListElement;
  private runnerUpsNote: HTMLElement;
  private table: HTMLTableElement;
  private exports: HTMLButtonElement[];
  private context: HTMLElement;

  constructor(
    private root: HTMLDetailsElement,
    private host: SearchHost,
  ) {
    const field = (key: string, label: string, hint: string, unit = '') => {
      const i = el('input', { id: `search-${key}`, type: 'text', autocomplete: 'off', spellcheck: false });
      i.setAttribute('aria-label', label);
      this.inputs[key] = i;
      i.addEventListener('keydown', (e) => {
        if (e.key === 'Enter') void this.run();
      });
      return el('label', { className: 'search-field', title: hint }, el('span', {}, label), i, el('small', {}, unit));
    };
    const box = (legend: string, ...kids: Node[]) => el('fieldset', { className: 'search-box' }, el('legend', {}, legend), ...kids);
    this.modeAgg = el('input', { type: 'checkbox', id: 'search-mode-agg', checked: true });
    this.modeDis = el('input', { type: 'checkbox', id: 'search-mode-dis', checked: true });
    this.chunked = el(
      'select',
      { id: 'search-chunked' },
      el('option', { value: 'both', textContent: 'on and off' }),
      el('option', { value: 'on', textContent: 'on' }),
      el('option', { value: 'off', textContent: 'off' }),
    );
    this.chunked.setAttribute('aria-label', 'Chunked prefill');
    this.runBtn = button('search-run', 'Find the cheapest configuration', () => void this.run());
    this.runBtn.className = 'primary';
    this.cancelBtn = button('search-cancel', 'Cancel search', () => this.cancel());
    this.cancelBtn.hidden = true;
    // The search as the CLI reads it: the one last run, else the one the fields describe.
    this.fileBtn = button('export-search-file', 'Download as DynoSim recommend file', () => {
      let text = this.lastText;
      if (!text) {
        try {
          text = recommendText(this.read());
        } catch (e) {
          this.line.say((e as Error).message);
          return;
        }
      }
      host.download('search.yaml', text, 'application/yaml');
    });
    this.fileBtn.title = 'servesim recommend search.yaml runs the same search';
    this.progress = el('progress', { id: 'search-progress', max: 1, value: 0, hidden: true });
    this.progress.setAttribute('aria-label', 'Search progress');
    this.status = el('span', { id: 'search-status', role: 'status' });
    this.message = el('p', { id: 'search-message', role: 'alert', hidden: true });
    this.line = new PanelStatus(this.status, this.message);
    this.context = el('p', { id: 'search-context', className: 'note' });
    this.answer = el('p', { id: 'search-answer' });
    this.why = el('p', { id: 'search-why' });
    this.warnings = el('div', { id: 'search-warnings' });
    this.runnerUps = el('ol', { id: 'search-runnerups' });
    this.runnerUpsNote = el('p', { className: 'note', id: 'search-runnerups-note' });
    this.table = el('table', { id: 'search-table' }, el('caption', {}, 'Every candidate, cheapest first'), el('thead'), el('tbody'));
    this.exports = [
      button('search-open', 'Open the answer as a run', () => this.openBest()),
      button('export-search-best', 'The answer as a DynoSim predict file', () => this.exportBest()),
      button(
        'export-search-ledger',
        'Ledger JSON',
        () => this.lastResult && host.download('recommendation.json', `${this.lastResult.ledger}\n`, 'application/json'),
      ),
      button('export-search-csv', 'Ledger CSV', () => this.lastResult && host.download('recommendation.csv', this.lastResult.ledgerCsv, 'text/csv')),
    ];
    for (const b of this.exports) b.disabled = true;
    this.results = el(
      'div',
      { id: 'search-results', hidden: true },
      this.answer,
      this.why,
      this.warnings,
      this.runnerUpsNote,
      this.runnerUps,
      el('div', { className: 'search-table-wrap', tabIndex: 0, role: 'region', ariaLabel: 'Every candidate' }, this.table),
      el('div', { className: 'buttons search-exports' }, ...this.exports),
    );
    root.append(
      el('summary', {}, 'Find the cheapest configuration: the fewest GPUs that meet an SLO at your load'),
      this.context,
      box(
        'The load',
        field('rate', 'Requests per second', 'Poisson arrivals at this rate', 'req/s'),
        field('input', 'Prompt tokens', 'Each request’s prompt length', 'tokens'),
        field('output', 'Output tokens', 'Each request’s output length', 'tokens'),
        field('requests', 'Requests per run', 'How long each candidate runs (lengthened automatically when too short for a steady state)', 'requests'),
      ),
      box(
        'The SLO',
        field('ttft', 'p99 TTFT ≤', 'The 99th percentile of time to first token', 'ms'),
        field('itl', 'p99 ITL ≤', 'The 99th percentile of the time between two tokens', 'ms'),
      ),
      box(
        'What to search',
        field('tp', 'Tensor parallel (TP)', 'GPUs per worker, a list', 'e.g. 4, 8'),
        field('workers', 'Workers (aggregated)', 'A range of worker counts', 'e.g. 1..8'),
        el('label', { className: 'search-check' }, this.modeAgg, ' aggregated'),
        el('label', { className: 'search-check' }, this.modeDis, ' disaggregated'),
        field('prefill', 'Prefill workers', 'Disaggregated: a range', 'e.g. 1..4'),
        field('decode', 'Decode workers', 'Disaggregated: a range', 'e.g. 1..4'),
        field('budget', 'Token budget per pass', 'max_num_batched_tokens, a list', 'tokens'),
        field('seqs', 'Max sequences', 'max_num_seqs per worker, a list', ''),
        el('label', { className: 'search-field' }, el('span', {}, 'Chunked prefill'), this.chunked, el('small')),
        field('trials', 'Candidates at most', 'The search runs every point when the space is no larger; otherwise a model-based search of this many', ''),
      ),
      el('div', { className: 'search-actions' }, this.runBtn, this.cancelBtn, this.fileBtn, this.progress, this.status),
      this.message,
      this.results,
    );
    root.addEventListener('toggle', () => {
      if (root.open) {
        this.fillFromScenario(false);
        this.pool.warm();
      }
    });
  }

  /** The model and GPU of the scenario on screen (a roofline preset), or why there are none. */
  private target(): { model: string; gpu: string } | string {
    const s = this.host.scenario();
    const t = (getPath(s, 'engine.timing_model') ?? {}) as JsonObject;
    if (t.type !== 'roofline' || typeof t.model !== 'string' || typeof t.gpu !== 'string')
      return 'The search prices candidates with the roofline timing of a model and a GPU: choose a model preset in the form (Model) first.';
    return { model: t.model, gpu: t.gpu };
  }

  /** Fills the load and the knobs from the scenario on screen (once, unless `force`). */
  fillFromScenario(force: boolean): void {
    const s = this.host.scenario();
    const t = this.target();
    this.context.textContent =
      typeof t === 'string'
        ? t
        : `For ${t.model} on ${gpuName(t.gpu)} GPUs (the model and GPU on screen, roofline timing), ${String(getPath(s, 'engine.backend') ?? 'vllm')} engines. The search is the engine's own (servesim recommend): every candidate is an ordinary run; hopeless ones stop early, and ones needing more GPUs than an answer already found are skipped.`;
    if (typeof t !== 'string') {
      const timing = getPath(s, 'engine.timing_model') as object;
      void this.host.smallestTp(timing).then(
        (tp) => {
          this.minTp = tp ?? 1;
        },
        () => {},
      );
    }
    if (!force && this.inputs.rate?.value) return;
    const set = (k: string, v: string) => {
      const i = this.inputs[k];
      if (i) i.value = v;
    };
    const n = (p: string, d: number) => {
      const v = Number(getPath(s, p));
      return Number.isFinite(v) && v > 0 ? v : d;
    };
    set('rate', String(n('workload.rate_rps', 10)));
    set('input', String(Math.round(n('workload.input_tokens.mean', 2048))));
    set('output', String(Math.round(n('workload.output_tokens.mean', 256))));
    set('requests', String(Math.max(2000, n('workload.num_requests', 2000))));
    const slo = (getPath(s, 'slo') ?? {}) as JsonObject;
    set('ttft', String(slo.p99_ttft_ms ?? 2000));
    set('itl', String(slo.p99_itl_ms ?? 50));
    const tp = n('engine.timing_model.tp', 1);
    set('tp', [...new Set([tp, tp * 2].filter((x) => x <= 8))].join(', ') || String(tp));
    set('workers', '1..8');
    set('prefill', '1..4');
    set('decode', '1..4');
    set('budget', '256, 512, 1024, 2048, 8192');
    set('seqs', '64, 256');
    set('trials', '100');
  }

  /** The search the panel describes; throws naming the field. */
  private read(): SearchSpec {
    const t = this.target();
    if (typeof t === 'string') throw new Error(t);
    const s = this.host.scenario();
    const v = (k: string) => this.inputs[k]?.value ?? '';
    const pos = (k: string, name: string, integer = false) => {
      const x = Number(v(k));
      if (!Number.isFinite(x) || x <= 0 || (integer && !Number.isInteger(x)))
        throw new Error(`${name}: "${v(k)}" is not a positive ${integer ? 'whole ' : ''}number`);
      return x;
    };
    const modes = [...(this.modeAgg.checked ? ['aggregated' as const] : []), ...(this.modeDis.checked ? ['disaggregated' as const] : [])];
    if (modes.length === 0) throw new Error('What to search: tick aggregated, disaggregated or both');
    const spec: SearchSpec = {
      model: t.model,
      gpu: t.gpu,
      backend: String(getPath(s, 'engine.backend') ?? 'vllm'),
      blockSize: Number(getPath(s, 'engine.block_size') ?? 64) || 64,
      rate: pos('rate', 'Requests per second'),
      arrival: getPath(s, 'workload.arrival') === 'constant' ? 'constant' : 'poisson',
      seed: Number(getPath(s, 'workload.seed') ?? 42) || 42,
      input: pos('input', 'Prompt tokens', true),
      output: pos('output', 'Output tokens', true),
      requests: pos('requests', 'Requests per run', true),
      slo: { p99_ttft_ms: pos('ttft', 'p99 TTFT'), p99_itl_ms: pos('itl', 'p99 ITL') },
      tp: parseList('Tensor parallel (TP)', v('tp')),
      minTp: this.minTp,
      workers: parseRange('Workers', v('workers')),
      modes,
      prefillWorkers: parseRange('Prefill workers', v('prefill')),
      decodeWorkers: parseRange('Decode workers', v('decode')),
      tokenBudget: parseList('Token budget per pass', v('budget')),
      maxSeqs: parseList('Max sequences', v('seqs')),
      chunked: this.chunked.value === 'both' ? [true, false] : [this.chunked.value === 'on'],
      transferGbps: 50,
      maxGpus: 0,
      maxTrials: pos('trials', 'Candidates at most', true),
    };
    spec.maxGpus = maxGpusOf(spec);
    return spec;
  }

  /** Writes a spec back into the fields (after extending a range). */
  private write(s: SearchSpec): void {
    const set = (k: string, v: string) => {
      const i = this.inputs[k];
      if (i) i.value = v;
    };
    set('tp', s.tp.join(', '));
    set('workers', rangeText(s.workers));
    set('prefill', rangeText(s.prefillWorkers));
    set('decode', rangeText(s.decodeWorkers));
    set('budget', s.tokenBudget.join(', '));
    set('seqs', s.maxSeqs.join(', '));
    set('requests', String(s.requests));
  }

  get running(): boolean {
    return this.job !== null;
  }

  cancel(): void {
    this.seq++;
    this.job?.cancel();
    this.job = null;
    this.line.set('cancelled', 'Cancelled');
    this.idle();
  }

  private idle(): void {
    this.progress.hidden = true;
    this.cancelBtn.hidden = true;
    this.runBtn.disabled = false;
  }

  /** Runs the search the panel describes (or `given`), then checks the answer's run length. */
  async run(given?: SearchSpec, note?: string): Promise<void> {
    const seq = ++this.seq;
    this.job?.cancel();
    this.job = null;
    this.line.say(null);
    let spec: SearchSpec;
    try {
      spec = given ?? this.read();
    } catch (e) {
      this.line.say((e as Error).message);
      this.line.set('refused', 'Fix the search before running it');
      return;
    }
    this.spec = spec;
    this.tried = [];
    this.lastResult = null;
    this.lastText = recommendText(spec);
    this.results.hidden = false;
    this.warnings.replaceChildren(...(note ? [el('p', { className: 'search-warning', id: 'search-short' }, note)] : []));
    this.answer.textContent = '';
    this.why.textContent = '';
    this.runnerUps.replaceChildren();
    for (const b of this.exports) b.disabled = true;
    this.progress.value = 0;
    this.progress.hidden = false;
    this.cancelBtn.hidden = false;
    this.runBtn.disabled = true;
    this.line.set('running', 'Starting the search…');
    const search = this.pool.search(this.lastText, {
      onTried: (t) => {
        this.tried.push(t);
        this.redraw.schedule();
      },
      onProgress: (done, running, fraction) => {
        this.progress.value = fraction;
        this.line.set('running', `${done} candidates done, ${running} running on ${search.runners} workers…`);
      },
    });
    this.job = search;
    let result: SearchResult;
    try {
      result = await search.done;
    } catch (e) {
      if (seq !== this.seq) return;
      this.job = null;
      this.idle();
      const msg = (e as Error).message;
      if (msg !== 'cancelled') {
        this.line.say(`The search cannot run: ${msg}`);
        this.line.set('error', 'The search stopped on an error');
      }
      return;
    }
    if (seq !== this.seq) return;
    this.lastResult = result;
    this.render();
    const best = result.ranking[0];
    const bestTried = best ? result.tried.get(best.id) : undefined;
    // Steady state: the answer's first half alone against its whole run.
    if (best && bestTried?.summary && bestTried.proposed.scenario) {
      this.line.set('running', 'Checking that the run is long enough for a steady state…');
      const scenario = structuredClone(bestTried.proposed.scenario) as JsonObject;
      const workload = scenario.workload as JsonObject;
      const half = Math.max(1, Math.floor(spec.requests / 2));
      workload.num_requests = half;
      let halfSummary: Record<string, number> | { stopped: string };
      try {
        halfSummary = (await this.pool.runOne(scenario, bestTried.proposed.objective, bestTried.proposed.gpus ?? 0)) as
          | Record<string, number>
          | { stopped: string };
      } catch (e) {
        if (seq !== this.seq) return;
        halfSummary = { stopped: (e as Error).message };
      }
      if (seq !== this.seq) return;
      const meetsHalf = !('stopped' in halfSummary) && meets(spec.slo, halfSummary);
      const off = unsteady(spec.slo, bestTried.summary, halfSummary, true, meetsHalf);
      this.status.dataset.steady = String(off === null);
      if (off !== null) {
        const lengthenings = Number(this.root.dataset.lengthenings ?? 0);
        if (lengthenings < MAX_LENGTHENINGS && spec.requests * 2 <= MAX_REQUESTS) {
          this.root.dataset.lengthenings = String(lengthenings + 1);
          const longer = { ...spec, requests: spec.requests * 2 };
          this.write(longer);
          const why = `${spec.requests.toLocaleString('en-US')} requests per run are too short for a steady state (${off}): searching again with ${longer.requests.toLocaleString('en-US')}.`;
          this.job = null;
          void this.run(longer, why);
          return;
        }
        this.addWarning(
          'search-short',
          `Even ${spec.requests.toLocaleString('en-US')} requests per run may be too short for a steady state: ${off}. Treat the answer with care, or raise Requests per run.`,
        );
      }
    }
    this.root.dataset.lengthenings = '0';
    this.job = null;
    this.idle();
    const secs = result.elapsedMs / 1000;
    this.status.dataset.elapsedMs = String(Math.round(result.elapsedMs));
    this.status.dataset.candidates = String(result.tried.size);
    this.line.set(
      'done',
      `Done: ${result.tried.size} candidates in ${secs.toFixed(1)} s on ${search.runners} workers (${result.info.exhaustive ? 'every point of the space' : `a model-based search in a space of ${result.info.space_points === null ? 'unbounded size' : `${result.info.space_points.toLocaleString('en-US')} points`}`})`,
    );
  }

  private addWarning(id: string, text: string, action?: { label: string; run: () => void }): void {
    const p = el('p', { className: 'search-warning', id }, text);
    if (action) {
      const b = button(`${id}-fix`, action.label, action.run);
      p.append(' ', b);
    }
    this.warnings.append(p);
  }

  private configOfTried(t: Tried): Config | null {
    return t.proposed.scenario ? configOf(t.proposed.scenario as JsonObject, t.proposed.gpus ?? 0) : null;
  }

  /** The answer, the runner-ups and the table (at most once a second while candidates finish). */
  private render(): void {
    this.redraw.cancel();
    this.renders++;
    this.results.dataset.renders = String(this.renders);
    const spec = this.spec;
    if (!spec) return;
    const name = gpuName(spec.gpu);
    const result = this.lastResult;
    const ok = (t: Tried) => t.summary !== undefined && meets(spec.slo, t.summary);
    const rows = [...this.tried].sort((a, b) => (a.proposed.gpus ?? Infinity) - (b.proposed.gpus ?? Infinity) || a.proposed.id - b.proposed.id);
    // While candidates run only the answer so far is redrawn (a line); the table, a row per
    // candidate, is drawn once, at the end.
    if (result) this.renderTable(rows, ok);
    else (this.table.tBodies[0] as HTMLTableSectionElement).replaceChildren();
    if (!result) {
      const found = rows.filter(ok);
      const first = found[0];
      const c = first ? this.configOfTried(first) : null;
      this.answer.textContent = c ? `So far (${rows.length} candidates): ${bill(c, name)}.` : `So far (${rows.length} candidates): nothing meets the SLO yet.`;
      return;
    }
    const ranking: Ranked[] = result.ranking;
    const best = ranking[0] ? result.tried.get(ranking[0].id) : undefined;
    const c = best ? this.configOfTried(best) : null;
    this.answer.dataset.gpus = c ? String(c.gpus) : '';
    if (!best || !c || !best.summary) {
      const misses = rows.filter((t) => t.summary || t.stopped);
      this.answer.textContent = `Nothing in this space meets the SLO (${rows.length} candidates tried${misses.length ? `; e.g. ${misses[misses.length - 1]?.stopped ?? 'see the table'}` : ''}).`;
      this.why.textContent = '';
    } else {
      this.answer.textContent = `${bill(c, name)}.`;
      this.why.textContent = `${figures(spec.slo, best.summary)}; ${itlReason(c, best.summary)}.`;
    }
    const found: Edge[] = edges(spec, c);
    for (const n of this.warnings.querySelectorAll('#search-edge')) n.remove();
    if (found.length)
      this.addWarning(
        'search-edge',
        `The answer sits on the edge of the search: ${found.map((e) => e.text).join('; ')}. A wider range could hold a cheaper configuration.`,
        {
          label: 'Extend the range and search again',
          run: () => {
            const wider = extend(spec, found, c);
            this.write(wider);
            void this.run(wider);
          },
        },
      );
    const ups = ranking.slice(1, 4).flatMap((r) => {
      const t = result.tried.get(r.id);
      const rc = t ? this.configOfTried(t) : null;
      return rc && t?.summary ? [el('li', {}, `${bill(rc, name)}: ${figures(spec.slo, t.summary)}`)] : [];
    });
    // The evidence from below: the dearest candidates cheaper than the answer, and why they miss.
    const cheaper = c
      ? rows
          .filter((t) => (t.proposed.gpus ?? Infinity) < c.gpus && (t.summary || t.stopped) && !ok(t))
          .sort((x, y) => (y.proposed.gpus ?? 0) - (x.proposed.gpus ?? 0))
          .slice(0, 2)
      : [];
    const missLines = cheaper.map((t) => {
      const tc = this.configOfTried(t);
      const why = t.summary ? broken(spec.slo, t.summary).join('; ') : (t.stopped ?? '');
      return el('li', { className: 'miss' }, `${tc ? bill(tc, name) : setWords(t.proposed.set)} misses: ${why}`);
    });
    this.runnerUps.replaceChildren(...ups, ...missLines);
    this.runnerUpsNote.textContent = ups.length
      ? 'Runner-ups (the next cheapest that meet the SLO), and the cheaper ones that miss it:'
      : c
        ? 'No other candidate meets the SLO at this cost; the cheaper ones miss it:'
        : '';
    for (const b of this.exports) b.disabled = ranking.length === 0;
  }

  private renderTable(rows: Tried[], ok: (t: Tried) => boolean): void {
    const head = this.table.tHead as HTMLTableSectionElement;
    const body = this.table.tBodies[0] as HTMLTableSectionElement;
    const name = gpuName(this.spec?.gpu ?? '');
    head.replaceChildren(
      el(
        'tr',
        {},
        ...['#', 'configuration', 'GPUs', 'p99 TTFT ms', 'p99 ITL ms', 'verdict'].map((h, i) =>
          el('th', { className: i === 0 || (i >= 2 && i <= 4) ? 'num' : '', scope: 'col' }, h),
        ),
      ),
    );
    const cell = (v: number | undefined) =>
      el('td', { className: 'num' }, v === undefined || !Number.isFinite(v) ? '—' : v.toLocaleString('en-US', { maximumFractionDigits: 1 }));
    body.replaceChildren(
      ...rows.map((t) => {
        const c = this.configOfTried(t);
        const tr = el('tr');
        tr.dataset.id = String(t.proposed.id);
        const verdict = t.summary ? (ok(t) ? 'meets' : 'misses') : t.stopped ? 'stopped early' : 'not run';
        tr.dataset.verdict = verdict;
        tr.append(
          el('td', { className: 'num' }, String(t.proposed.id)),
          el('td', {}, c ? bill(c, name) : setWords(t.proposed.set)),
          el('td', { className: 'num' }, t.proposed.gpus === undefined ? '—' : String(t.proposed.gpus)),
          cell(t.summary?.p99_ttft_ms),
          cell(t.summary?.p99_itl_ms),
          el(
            'td',
            { className: `verdict ${verdict === 'meets' ? 'ok' : ''}`, title: t.stopped ?? t.infeasible ?? '' },
            verdict === 'not run' ? `not run: ${t.infeasible ?? ''}` : verdict,
          ),
        );
        return tr;
      }),
    );
  }

  private bestTried(): Tried | undefined {
    const r = this.lastResult;
    const best = r?.ranking[0];
    return best ? r?.tried.get(best.id) : undefined;
  }

  private openBest(): void {
    const t = this.bestTried();
    if (t?.proposed.scenario) this.host.openScenario(t.proposed.scenario as JsonObject);
  }

  private exportBest(): void {
    const best = this.lastResult?.ranking[0];
    if (best) this.host.download('cheapest.yaml', best.yaml, 'application/yaml');
  }

  /** The search file (for the CLI): what the panel last ran. */
  recommendFileText(): string {
    return this.lastText;
  }
}
