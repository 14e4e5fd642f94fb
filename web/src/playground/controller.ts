// The playground page: configuration form, runs in the worker, charts, comparison, share
// links, exports. `Playground` owns the page's parts (form, charts, inspector, sweep) and its
// state (state.ts); the markup's controls are wired once, in `start`.
//
// What is on screen is the engine's answer for the settings on screen: results of earlier
// settings are marked stale (`data-stale` on #results) while the settings differ, are
// invalid or are refused, and the status then never says "Done".

import { type Boot, boot, intervalFor } from '../engine/boot';
import { EngineError, type Job } from '../engine/client';
import { STORAGE_KEY, takeSpeculative } from '../engine/early';
import type { EffectiveConfig, ExportKind, RunResult } from '../engine/protocol';
import { ConfigForm } from '../form/form';
import type { Inspector } from '../inspector/inspector';
import { mountInspector, openFromLink, openLesson } from '../inspector/mount';
import { Charts, PALETTE, type Run } from '../results/charts';
import { type LinkRun, MAX_PINNED, type Pinned, type RunRow, renderRuns, runLabel, runsFromLink, settingsDiff, styled } from '../results/compare';
import { renderHarness } from '../results/harness-view';
import { cliCommand, download, fmt, KEY_METRICS, mechanism, renderHeadline, renderReasons, renderSummary } from '../results/summary';
import { describeScenario } from '../scenario/describe';
import { clone, diff, getPath, type JsonObject, merge, pretty } from '../scenario/json';
import { hashFor, type LinkExtras, linkHash, pageUrl, scenarioFromHash } from '../scenario/page-link';
import { SearchPanel } from '../search/panel';
import { SweepPanel } from '../sweep/panel';
import { specFromLink } from '../sweep/spec';
import { element, showMessage } from '../ui/dom';
import { explainMarked } from '../ui/glossary';
import { Status } from '../ui/status';
import { exampleLinks } from './examples';
import { initialState, type PageState } from './state';

const $ = <T extends HTMLElement>(id: string) => element<T>(`#${id}`);

/** A cancelled run whose worker does not answer within this long is stopped by force. */
const CANCEL_DEADLINE_MS = 800;

/** The markup's controls and outputs. */
const ui = {
  status: new Status($('status')),
  message: $('message'),
  run: $<HTMLButtonElement>('run'),
  cancel: $<HTMLButtonElement>('cancel'),
  progress: $<HTMLProgressElement>('progress'),
  pin: $<HTMLButtonElement>('pin'),
  unpin: $<HTMLButtonElement>('unpin'),
  autorun: $<HTMLInputElement>('autorun'),
  main: element('main'),
  results: $('results'),
};

export class Playground {
  readonly state: PageState = initialState();
  readonly form: ConfigForm;
  private charts: Charts;
  // Built by `mount`, a task after the form (no start-up task holds the page long).
  private inspector!: Inspector;
  sweep!: SweepPanel;
  search!: SearchPanel;

  constructor(private app: Boot) {
    this.form = new ConfigForm($<HTMLFormElement>('form'), app.defaults, app.presets, app.engine, () => this.changed(), app.kernels);
    this.charts = new Charts(document);
  }

  /** The inspector and the sweep panel, and the glossary's tooltips on the page. */
  mount(): void {
    const app = this.app;
    this.inspector = mountInspector({
      engine: app.engine,
      scenarioJson: () => JSON.stringify(diff(this.form.scenario, app.defaults)),
      trace: () => this.traceFile(),
      files: () => this.form.files(),
      applyScenario: (partial) =>
        void app.engine.normalize(JSON.stringify(partial)).then(
          (full) => {
            // The user's own scenario is kept, once, for "Back to my scenario".
            this.state.ownScenario ??= clone(this.form.scenario);
            const scenario = JSON.parse(full) as JsonObject;
            this.state.lessonPartial = JSON.stringify(diff(scenario, app.defaults));
            this.form.set(scenario);
            this.changed();
          },
          (e: Error) => showMessage(ui.message, `This lesson's scenario is not valid: ${e.message}`),
        ),
      restoreScenario: () => {
        const own = this.state.ownScenario;
        this.state.ownScenario = null;
        this.state.lessonPartial = null;
        if (!own) return;
        this.form.set(own);
        this.changed();
      },
    });
    explainMarked(document);
    this.sweep = new SweepPanel(element<HTMLDetailsElement>('#sweep'), {
      base: () => diff(this.form.scenario, app.defaults),
      scenario: () => this.form.scenario,
      uploads: () => ({ trace: this.traceFile(), files: this.form.files() }),
      refusal: () => (this.form.invalidFields.length ? `fix ${this.form.invalidFields.join(', ')}` : this.state.engineError),
      openPoint: (s) => void this.openPoint(s),
      linkChanged: () => void this.publish(this.form.scenario),
      download,
    });
    this.search = new SearchPanel(element<HTMLDetailsElement>('#search'), {
      scenario: () => this.form.scenario,
      presets: app.presets,
      smallestTp: (t) => app.engine.smallestTp(t),
      openScenario: (s) => void this.openPoint(s),
      download,
    });
  }

  /** The uploaded trace, if the scenario on screen is a trace workload of that file. */
  private traceFile(): Blob | undefined {
    const s = this.form.scenario;
    const trace = this.form.trace;
    if (getPath(s, 'workload.type') !== 'trace') return undefined;
    return trace && trace.name === getPath(s, 'workload.path') ? trace.file : undefined;
  }

  /** A trace workload: it runs only on Run (a trace is set up in several steps, and is long). */
  private isTrace(): boolean {
    return getPath(this.form.scenario, 'workload.type') === 'trace';
  }

  /** The trace file the scenario names ('' for none yet), when it has not been uploaded in this tab. */
  private missingTrace(): string | null {
    if (!this.isTrace() || this.traceFile()) return null;
    return String(getPath(this.form.scenario, 'workload.path') ?? '');
  }

  /** Results are stale whenever the settings on screen are not the ones they were run with. */
  private markStale(): void {
    const st = this.state;
    const refused = st.engineError ?? st.runError;
    const stale = st.current !== null && (st.dirty || st.resultsHash !== st.hash || refused !== null || this.form.invalidFields.length > 0);
    ui.results.dataset.stale = String(stale);
    const note = $('stale-note');
    note.hidden = !stale;
    if (stale) {
      note.textContent =
        refused !== null || this.form.invalidFields.length > 0
          ? 'These results are from earlier settings: the current ones cannot run (see above).'
          : st.job
            ? 'These results are from earlier settings: a run of the current ones is under way.'
            : 'These results are from earlier settings: Run to update them.';
    }
  }

  updateMessage(): void {
    const st = this.state;
    const bad = this.form.invalidFields;
    const missing = this.missingTrace();
    const upload = { id: 'message-upload', label: `Upload ${missing || 'a trace'}`, run: () => this.form.showTraceUpload(true) };
    if (bad.length) showMessage(ui.message, `Fix ${bad.length} field(s) before running: ${bad.join(', ')}.`);
    else if (st.engineError ?? st.runError) showMessage(ui.message, st.engineError ?? st.runError, 'error', missing ? upload : undefined);
    else if (st.linkNote) showMessage(ui.message, st.linkNote);
    else if (missing !== null)
      showMessage(
        ui.message,
        missing ? `This scenario replays the trace “${missing}”: upload it, then Run.` : 'This scenario replays a trace: upload it, then Run.',
        'info',
        upload,
      );
    else showMessage(ui.message, null);
    ui.run.disabled = bad.length > 0;
    // While the settings cannot run, the status says so (never "Done").
    if (bad.length) ui.status.set('refused', 'Fix the highlighted fields');
    else if ((st.engineError ?? st.runError) && !st.job) ui.status.set('refused', 'Refused: the engine cannot run these settings');
    // Setting up a trace (after results of another workload): what the page waits for. A
    // trace run's own "Done" line stays, marked as of earlier settings.
    else if (this.isTrace() && !st.job && !st.dirty && st.resultsHash !== st.hash && !st.resultsOfTrace)
      ui.status.set('ready', missing !== null ? 'Waiting for the trace file' : 'Ready: a trace replays when you press Run');
    this.markStale();
  }

  private runs(): Run[] {
    const { current, pinned } = this.state;
    if (!current) return [];
    return [...pinned.map((p) => p.run), { ...current, label: runLabel(pinned.length) }];
  }

  /**
   * A run's scenario as the engine reads it (defaults filled in, a timing model's arguments
   * included), so two runs compare field by field however their links spelled them.
   */
  private async full(partial: JsonObject): Promise<JsonObject> {
    const key = JSON.stringify(partial);
    let full = this.normalized.get(key);
    if (!full) {
      full = await this.app.engine.normalize(key).then(
        (t) => JSON.parse(t) as JsonObject,
        () => merge(this.app.defaults, partial),
      );
      this.normalized.set(key, full);
    }
    return full;
  }

  private normalized = new Map<string, JsonObject>();

  /** The runs list above the results (shown with two runs or more). */
  private async renderRunList(): Promise<void> {
    const { pinned, current, currentScenario } = this.state;
    const first = await this.full(pinned[0]?.scenario ?? currentScenario);
    const rows: RunRow[] = [];
    for (const p of pinned) {
      rows.push({
        label: p.label,
        color: p.run.color ?? null,
        gpus: p.run.result.config.total_gpus ?? null,
        diff: settingsDiff(first, await this.full(p.scenario)),
        current: false,
      });
    }
    if (current)
      rows.push({
        label: runLabel(pinned.length),
        // The distributions draw the run after the pinned ones in the palette's second colour.
        color: PALETTE[1] ?? null,
        gpus: current.result.config.total_gpus ?? null,
        diff: settingsDiff(first, await this.full(currentScenario)),
        current: true,
      });
    // A newer render may have started meanwhile: the list shows the runs on screen now.
    if (this.state.current !== current || this.state.pinned !== pinned) return;
    renderRuns($('runs'), rows, (label) => {
      this.state.pinned = this.state.pinned
        .filter((p) => p.label !== label)
        .map((p, k) => ({ ...p, label: runLabel(k), run: styled(runLabel(k), p.run.result, k) }));
      this.pinsChanged();
    });
  }

  private pinsChanged(): void {
    const { pinned, current } = this.state;
    ui.unpin.hidden = pinned.length === 0;
    ui.pin.textContent = pinned.length ? `Pin this run as ${runLabel(pinned.length)}` : 'Compare: pin as A';
    ui.pin.disabled = !current || pinned.length >= MAX_PINNED;
    void this.renderResults();
    void this.publish(this.form.scenario);
  }

  pin(): void {
    const st = this.state;
    if (!st.current || st.pinned.length >= MAX_PINNED) return;
    const k = st.pinned.length;
    st.pinned = [...st.pinned, { label: runLabel(k), run: styled(runLabel(k), st.current.result, k), scenario: st.currentScenario }];
    this.pinsChanged();
  }

  unpinAll(): void {
    this.state.pinned = [];
    this.pinsChanged();
  }

  /** Runs a link's pinned runs again (runs are deterministic) and pins them, in order. */
  private async restorePinned(list: unknown): Promise<void> {
    let runsList: LinkRun[];
    try {
      runsList = runsFromLink(list);
    } catch (e) {
      this.state.linkNote = (e as Error).message;
      return;
    }
    const restored: Pinned[] = [];
    for (const [k, r] of runsList.entries()) {
      try {
        const interval = 'timeseries_interval_ms' in r.scenario ? undefined : 0;
        const result = await this.app.engine.run(JSON.stringify(r.scenario), undefined, interval, () => {}).result;
        restored.push({ label: runLabel(k), run: styled(runLabel(k), result, k), scenario: r.scenario });
      } catch (e) {
        this.state.linkNote = `Run ${r.label} of this link cannot run: ${(e as Error).message}`;
        return;
      }
    }
    this.state.pinned = restored;
    this.pinsChanged();
  }

  /** Headline and table at once; the charts one per task, so no task holds the page long. */
  private renderResults(): Promise<void> {
    const { current, pinned } = this.state;
    if (!current) return Promise.resolve();
    const ticket = this.state.latest.take('render');
    const { result } = current;
    const all = this.runs();
    renderHeadline($('headline'), all);
    void this.renderRunList();
    renderReasons($('reasons'), result.reasons, result.reason_count, result.cancelled);
    const mech = mechanism(result);
    const caption = $('preempt-caption');
    caption.replaceChildren(Object.assign(document.createElement('span'), { textContent: `${mech.label} per window` }));
    (caption.firstChild as HTMLElement).dataset.term = mech.label;
    explainMarked(caption);
    const src = result.series.source;
    const ranks =
      result.series.rank_count > result.series.ranks.length ? ` (the first ${result.series.ranks.length} of ${fmt(result.series.rank_count)} ranks)` : '';
    const note = $('series-note');
    note.textContent = `Time series: ${fmt(result.series.interval_ms)} ms windows (${src === 'engine' ? "the engine's per-pass metrics" : src}); per-rank charts${ranks}.`;
    note.dataset.windows = String(result.series.t_ms.length);
    note.dataset.lastMs = String(result.series.t_ms.at(-1) ?? 0);
    for (const b of ['export-json', 'export-csv', 'export-series']) $<HTMLButtonElement>(b).disabled = false;
    ui.pin.disabled = pinned.length >= MAX_PINNED;
    this.markStale();
    // The table first, then the charts, each in a task of its own.
    const other = mech.key === 'num_preemptions' ? 'num_retractions' : 'num_preemptions';
    const draws = [
      () => {
        renderSummary(
          $<HTMLTableElement>('summary-key'),
          all,
          KEY_METRICS.filter((k) => k !== other),
        );
        renderSummary($<HTMLTableElement>('summary'), all);
        element('#all-metrics > summary').textContent = `All metrics (${Object.keys(result.summary).length})`;
      },
      ...this.charts.drawers(all),
      () => renderHarness($('harness-results'), result),
    ];
    return new Promise((resolve) => {
      const step = () => {
        const draw = draws.shift();
        if (ticket.stale || !draw) {
          resolve();
          return;
        }
        draw();
        setTimeout(step, 0);
      };
      setTimeout(step, 0);
    });
  }

  private statusLine(result: RunResult): string {
    const s = result.summary;
    const secs = fmt(result.now_ms / 1000);
    const took = result.elapsed_ms.toFixed(0);
    // After a cancel num_requests counts the requests that had arrived (as after a cut-off).
    if (result.cancelled)
      return `Cancelled: ${fmt(s.completed_requests)} of ${fmt(result.requests)} requests completed (${fmt(s.num_requests)} arrived) in ${secs} s simulated (${took} ms)`;
    const done = s.completed_requests ?? 0;
    const all = s.num_requests ?? 0;
    const what = done === all ? `${fmt(all)} requests` : `${fmt(done)} of ${fmt(all)} requests completed`;
    return `Done: ${what}, ${secs} s simulated in ${took} ms`;
  }

  async run(): Promise<void> {
    const st = this.state;
    const form = this.form;
    if (form.invalidFields.length) {
      this.updateMessage();
      return;
    }
    const ticket = st.latest.take('run');
    st.job?.cancel();
    st.job = null;
    const scenario = form.scenario;
    // The engine gets the non-default fields, as a link or scenario.json carries them.
    const scenarioJson = JSON.stringify(diff(scenario, this.app.defaults));
    const forHash = await hashFor(scenario, this.app.defaults);
    if (ticket.stale) return; // a newer run was asked for meanwhile
    performance.mark('servesim:run');
    // The run early.ts started for the default scenario, if this is still it.
    const early = takeSpeculative();
    let started: Job<RunResult> | null = null;
    const onProgress = (p: number, _now: number, halted: boolean) => {
      ui.progress.value = p;
      if (halted && started !== null && st.job === started) {
        // The engine has stopped; it is gathering what ran.
        st.stopped = true;
        ui.status.set('cancelling', 'Cancelled: gathering what ran…');
      }
    };
    if (early && forHash === '' && this.traceFile() === undefined && form.files() === undefined) {
      early.onProgress = onProgress;
      started = early;
    } else {
      early?.cancel();
      started = this.app.engine.run(scenarioJson, this.traceFile(), intervalFor(scenario, this.app.defaults), onProgress, form.files());
    }
    const job = started;
    const ofTrace = this.isTrace();
    st.job = job;
    ui.status.set('running', 'Running…');
    st.stopped = false;
    ui.progress.value = 0;
    ui.progress.hidden = false;
    ui.cancel.hidden = false;
    this.markStale();
    job.result.then(
      async (result) => {
        if (st.job !== job) return;
        st.job = null;
        st.runError = null;
        st.current = { label: 'B', result };
        st.currentScenario = JSON.parse(scenarioJson) as JsonObject;
        st.resultsHash = forHash;
        st.resultsOfTrace = ofTrace;
        ui.main.dataset.hash = forHash;
        performance.mark('servesim:result');
        this.finishJob();
        ui.status.set('running', 'Drawing…');
        const drawn = this.renderResults();
        if (!document.body.dataset.firstResultsMs) document.body.dataset.firstResultsMs = performance.now().toFixed(0);
        await drawn;
        performance.mark('servesim:rendered');
        if (st.current?.result !== result) return;
        const stale = st.resultsHash !== st.hash || st.dirty;
        ui.status.set('done', stale ? `${this.statusLine(result)}; the settings have changed since` : this.statusLine(result));
        this.updateMessage();
      },
      (err: Error) => {
        if (st.job !== job) return;
        st.job = null;
        if (st.cancelling === job) {
          ui.status.set('cancelled', 'Cancelled: the engine was stopped before it had results');
        } else {
          st.runError = `The engine refused this scenario: ${err.message}`;
          ui.status.set('refused', 'Refused: the engine cannot run these settings');
        }
        this.finishJob();
      },
    );
  }

  cancel(): void {
    const st = this.state;
    const j = st.job;
    if (!j) return;
    st.cancelling = j;
    j.cancel();
    setTimeout(() => {
      // An engine that has not even stopped (still building a large run) is stopped by force.
      if (st.job === j && !st.stopped) this.app.engine.restart();
    }, CANCEL_DEADLINE_MS);
  }

  get busy(): boolean {
    return this.state.job !== null;
  }

  private finishJob(): void {
    ui.progress.hidden = true;
    ui.cancel.hidden = true;
    this.updateMessage();
  }

  /** After an edit: validate with the engine, update link, storage and the CLI view. */
  changed(): void {
    const st = this.state;
    st.linkNote = null;
    st.badLink = null;
    st.runError = null;
    st.dirty = true;
    if (this.form.invalidFields.length && st.job) {
      // The run in flight is for settings that are no longer on screen.
      st.job.cancel();
      st.job = null;
      this.finishJob();
    }
    this.updateMessage();
    clearTimeout(st.checkTimer);
    if (this.form.invalidFields.length) return;
    st.checkTimer = setTimeout(() => void this.check(), 150);
  }

  /** The engine's view of the settings on screen: its derived figures, or why it refuses them. */
  private async inspect(scenario: JsonObject, retry = true): Promise<EffectiveConfig | null> {
    try {
      const r = JSON.parse(await this.app.engine.inspect(JSON.stringify(diff(scenario, this.app.defaults)))) as { config: EffectiveConfig };
      this.state.engineError = null;
      return r.config;
    } catch (e) {
      // A run stopped by force restarts the worker, failing what was in flight with it.
      if (retry && e instanceof EngineError && /restarted/.test(e.message)) return this.inspect(scenario, false);
      this.state.engineError = `The engine refused this scenario: ${(e as Error).message}`;
      return null;
    }
  }

  private async check(): Promise<void> {
    const st = this.state;
    const ticket = st.latest.take('check');
    const scenario = this.form.scenario;
    const config = await this.inspect(scenario);
    if (ticket.stale) return;
    this.form.showConfig(config);
    this.describe(scenario, config);
    if (st.engineError && st.job) {
      st.job.cancel();
      st.job = null;
      this.finishJob();
    }
    await this.publish(scenario);
    if (ticket.stale) return; // a newer edit published its own link
    st.dirty = false;
    this.updateMessage();
    // A trace waits for Run: it is set up in steps (source, file, block size) and replays long.
    if (!st.engineError && ui.autorun.checked && !this.isTrace()) void this.run();
  }

  private async publish(scenario: JsonObject): Promise<void> {
    const st = this.state;
    const ticket = st.latest.take('publish');
    const h = await hashFor(scenario, this.app.defaults);
    const partial = diff(scenario, this.app.defaults);
    const extras: LinkExtras = {};
    const spec = this.sweep.linkSpec();
    if (spec) extras.sweep = spec as unknown as LinkExtras['sweep'];
    if (st.pinned.length) extras.runs = st.pinned.map((p): LinkRun => ({ label: p.label, scenario: p.scenario })) as unknown as LinkExtras['runs'];
    const l = await linkHash(partial, extras);
    // Links are compressed asynchronously: an older edit's must not overwrite a newer one's.
    if (ticket.stale) return;
    st.hash = h;
    st.link = l;
    // A link that could not be opened stays in the address bar (to fix or report) until an
    // edit, and the defaults shown meanwhile do not replace the scenario this browser kept.
    const keep = st.badLink !== null;
    if (!keep) history.replaceState(null, '', l === '' ? location.pathname + location.search : l);
    this.sweep.baseChanged(scenario);
    try {
      // A lesson's scenario, unedited, does not replace the user's own in this browser either.
      if (!keep && JSON.stringify(partial) !== st.lessonPartial) localStorage.setItem(STORAGE_KEY, JSON.stringify(partial));
    } catch {
      // Storage full or disabled: the link still holds the scenario.
    }
    $('scenario-file').textContent = pretty(partial);
    this.inspector.scenarioChanged();
    const isTrace = getPath(scenario, 'workload.type') === 'trace';
    const profile = (getPath(scenario, 'engine.timing_model.config.path') ?? getPath(scenario, 'engine.planner_profile_data') ?? null) as string | null;
    $('cli').textContent = cliCommand(isTrace, (getPath(scenario, 'workload.path') as string | null) ?? null, profile);
    $<HTMLAnchorElement>('open-embed').href = pageUrl('embed.html', h);
  }

  async openHash(h: string): Promise<void> {
    const st = this.state;
    const { scenario, error, extras } = await scenarioFromHash(this.app, h);
    let chosen = scenario;
    if (!chosen && !error && h === '') {
      // No link: the last scenario of this browser, if it is still valid.
      const saved = localStorage.getItem(STORAGE_KEY);
      if (saved) {
        try {
          chosen = JSON.parse(await this.app.engine.normalize(saved)) as JsonObject;
        } catch {
          localStorage.removeItem(STORAGE_KEY);
        }
      }
    }
    this.form.set(chosen ?? this.app.defaults);
    st.linkNote = error;
    st.badLink = error ? h : null;
    st.engineError = null;
    st.runError = null;
    st.dirty = false;
    if (extras.sweep !== undefined) {
      // A link with a sweep runs it (the scenario's own run goes on as well).
      try {
        this.sweep.openFromLink(specFromLink(extras.sweep));
      } catch (e) {
        st.linkNote = (e as Error).message;
      }
    } else if (this.sweep.linkSpec()) {
      // Another link was opened: what is on screen is what it holds.
      this.sweep.clear();
    }
    if (extras.runs !== undefined) await this.restorePinned(extras.runs);
    await this.publish(this.form.scenario);
    this.updateMessage();
    st.ownScenario = null;
    st.lessonPartial = null;
    const onScreen = this.form.scenario;
    const config = this.inspect(onScreen);
    // A link to a trace scenario runs once its file is uploaded (the message offers the upload).
    if (this.missingTrace() === null) void this.run();
    const shown = await config;
    this.form.showConfig(shown);
    this.describe(onScreen, shown);
    this.updateMessage();
  }

  /** The sentence at the top: the scenario on screen, in words. */
  private describe(scenario: JsonObject, config: EffectiveConfig | null): void {
    $('scenario-line').textContent = describeScenario(scenario, config);
  }

  /** The "Try" line: a capacity question, a lesson, a real trace. */
  tryCapacity(): void {
    this.sweep.preset('workers');
    $('sweep').scrollIntoView({ block: 'start' });
  }

  tryLesson(): void {
    openLesson(this.inspector, 'preemption');
  }

  tryTrace(): void {
    this.form.showTraceUpload();
  }

  /** Whether the page's link is the one it published (a hash change that is not is a new link). */
  isOwnLink(hash: string): boolean {
    return hash === this.state.link || hash === this.state.badLink;
  }

  /** A sweep point as a normal run: its scenario in the form, then a run. */
  private async openPoint(partial: JsonObject): Promise<void> {
    try {
      this.form.set(JSON.parse(await this.app.engine.normalize(JSON.stringify(partial))) as JsonObject);
    } catch (e) {
      showMessage(ui.message, `That point cannot be opened: ${(e as Error).message}`);
      return;
    }
    this.changed();
    if (!ui.autorun.checked) void this.run();
    ui.results.scrollIntoView({ block: 'start' });
  }

  reset(): void {
    this.form.set(this.app.defaults);
    this.changed();
    if (!ui.autorun.checked) void this.run();
  }

  async copyLink(): Promise<void> {
    const url = pageUrl('index.html', this.state.link);
    try {
      await navigator.clipboard.writeText(url);
      showMessage(ui.message, 'Link copied to the clipboard.', 'info');
    } catch {
      showMessage(ui.message, `Copy this link: ${url}`, 'info');
    }
    setTimeout(() => this.updateMessage(), 2500);
  }

  async exportRun(kind: ExportKind, name: string, type: string): Promise<void> {
    const current = this.state.current;
    if (!current) return;
    try {
      download(name, await this.app.engine.exportText(current.result.id, kind), type);
    } catch (e) {
      showMessage(ui.message, (e as Error).message);
    }
  }

  exportScenario(): void {
    download('scenario.json', `${pretty(diff(this.form.scenario, this.app.defaults))}\n`, 'application/json');
  }

  /** Test hook: makes the engine panic, to check the page survives it. */
  async crash(): Promise<void> {
    await this.app.engine.crashForTesting().catch((e: Error) => {
      this.state.runError = e.message;
      ui.status.set('error', 'Error');
      this.updateMessage();
    });
  }

  /** Opens the inspector if the page's link asks for it (call once the scenario is set). */
  openInspectorFromLink(): void {
    openFromLink(this.inspector);
  }
}

/** Wires the markup's controls to the page. */
function wire(page: Playground): void {
  ui.run.addEventListener('click', () => void page.run());
  ui.cancel.addEventListener('click', () => page.cancel());
  ui.pin.addEventListener('click', () => page.pin());
  ui.unpin.addEventListener('click', () => page.unpinAll());
  $('copy-link').addEventListener('click', () => void page.copyLink());
  $('reset').addEventListener('click', () => page.reset());
  $('export-json').addEventListener('click', () => void page.exportRun('json', 'servesim-results.json', 'application/json'));
  $('export-csv').addEventListener('click', () => void page.exportRun('requests', 'servesim-requests.csv', 'text/csv'));
  $('export-series').addEventListener('click', () => void page.exportRun('series', 'servesim-timeseries.csv', 'text/csv'));
  $('export-scenario').addEventListener('click', () => page.exportScenario());
  $('try-capacity').addEventListener('click', () => page.tryCapacity());
  $('try-lesson').addEventListener('click', () => page.tryLesson());
  $('try-trace').addEventListener('click', () => page.tryTrace());
  document.addEventListener('keydown', (e) => {
    if (e.key !== 'Escape' || !(page.busy || page.sweep.running || page.search.running)) return;
    e.preventDefault();
    if (page.busy) page.cancel();
    if (page.sweep.running) page.sweep.cancel();
    if (page.search.running) page.search.cancel();
  });
  window.addEventListener('hashchange', () => {
    if (!page.isOwnLink(location.hash)) void page.openHash(location.hash);
  });
  if (new URLSearchParams(location.search).has('test-crash')) {
    // Test hook: a button that makes the engine panic, to check the page survives it.
    const b = Object.assign(document.createElement('button'), { id: 'crash', type: 'button', textContent: 'Crash the engine' });
    b.addEventListener('click', () => void page.crash());
    element('.actions').append(b);
  }
}

async function start(): Promise<void> {
  performance.mark('servesim:start');
  let app: Boot;
  try {
    app = await boot();
    performance.mark('servesim:engine-ready');
  } catch (e) {
    ui.status.set('error', 'The engine failed to load');
    showMessage(ui.message, `The engine failed to load: ${(e as Error).message}`);
    return;
  }
  const page = new Playground(app);
  (window as unknown as { __servesimForm?: ConfigForm }).__servesimForm = page.form;
  // The rest of the page's parts a task later: each start-up task stays short.
  await new Promise((resolve) => setTimeout(resolve, 0));
  page.mount();
  // Off the first run's path: the links are built when the page is idle.
  setTimeout(() => void exampleLinks().then((nav) => $('config').prepend(nav)), 300);
  performance.mark('servesim:form');
  wire(page);
  ui.status.set('ready', `Engine ${app.version} ready`);
  ui.run.disabled = false;
  await page.openHash(location.hash);
  page.openInspectorFromLink();
}

void start();
