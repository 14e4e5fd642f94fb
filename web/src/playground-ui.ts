// The playground page: configuration form, runs in the worker, charts, comparison, share
// links, exports.
//
// What is on screen is the engine's answer for the settings on screen: results of earlier
// settings are marked stale (`data-stale` on #results) while the settings differ, are
// invalid or are refused, and the status then never says "Done".

import { type Boot, boot, element, hashFor, intervalFor, type LinkExtras, linkHash, pageUrl, STORAGE_KEY, Status, scenarioFromHash, showMessage } from './app';
import { Charts, PALETTE, type Run } from './charts';
import { type LinkRun, MAX_PINNED, type Pinned, type RunRow, renderRuns, runLabel, runsFromLink, settingsDiff, styled } from './compare';
import { takeSpeculative } from './early';
import { EngineError } from './engine';
import { exampleLinks } from './examples';
import { ConfigForm } from './form';
import { explainMarked } from './glossary';
import { renderHarness } from './harness-view';
import type { Inspector } from './inspector';
import { mountInspector, openFromLink } from './inspector-mount';
import type { EffectiveConfig, ExportKind, RunResult } from './protocol';
import { cliCommand, download, fmt, mechanism, renderHeadline, renderReasons, renderSummary } from './results';
import { diff, getPath, type JsonObject, merge, pretty } from './scenario';
import { specFromLink } from './sweep-spec';
import { SweepPanel } from './sweep-ui';

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

const status = new Status($('status'));
const message = $('message');
const runBtn = $<HTMLButtonElement>('run');
const cancelBtn = $<HTMLButtonElement>('cancel');
const progress = $<HTMLProgressElement>('progress');
const pinBtn = $<HTMLButtonElement>('pin');
const unpinBtn = $<HTMLButtonElement>('unpin');
const main = document.querySelector('main') as HTMLElement;
const results = $('results');

/** A cancelled run whose worker does not answer within this long is stopped by force. */
const CANCEL_DEADLINE_MS = 800;

let app: Boot;
let form: ConfigForm;
let charts: Charts;
let inspector: Inspector | undefined;
let current: Run | null = null;
/** Runs pinned for comparison (A, B, ...); the current run comes after them. */
let pinned: Pinned[] = [];
/** The non-default fields of the current run (what pinning it keeps). */
let currentScenario: JsonObject = {};
let job: { id: number; cancel: () => void } | null = null;
/** Link hash of the form's scenario (kept up to date as it changes). */
let hash = '';
/** The page's link: the scenario's hash plus what travels with it (the sweep). */
let link = '';
let sweep: SweepPanel;
/** The link hash of the scenario the results on screen belong to. */
let resultsHash: string | null = null;
/** An edit not yet checked and published. */
let dirty = false;
/** Why the engine refuses the settings on screen (from inspecting them). */
let engineError: string | null = null;
/** Why the last run failed (a bad trace line, a crash): it belongs to the settings it ran. */
let runError: string | null = null;
let linkNote: string | null = null;
let runSeq = 0;

function traceFile(): Blob | undefined {
  const s = form.scenario;
  if (getPath(s, 'workload.type') !== 'trace') return undefined;
  return form.trace && form.trace.name === getPath(s, 'workload.path') ? form.trace.file : undefined;
}

/** Results are stale whenever the settings on screen are not the ones they were run with. */
function markStale(): void {
  const refused = engineError ?? runError;
  const stale = current !== null && (dirty || resultsHash !== hash || refused !== null || form.invalidFields.length > 0);
  results.dataset.stale = String(stale);
  const note = $('stale-note');
  note.hidden = !stale;
  if (stale) {
    note.textContent =
      refused !== null || form.invalidFields.length > 0
        ? 'These results are from earlier settings: the current ones cannot run (see above).'
        : job
          ? 'These results are from earlier settings: a run of the current ones is under way.'
          : 'These results are from earlier settings: Run to update them.';
  }
}

function updateMessage(): void {
  const bad = form.invalidFields;
  if (bad.length) showMessage(message, `Fix ${bad.length} field(s) before running: ${bad.join(', ')}.`);
  else if (engineError ?? runError) showMessage(message, engineError ?? runError);
  else if (linkNote) showMessage(message, linkNote);
  else showMessage(message, null);
  runBtn.disabled = bad.length > 0;
  // While the settings cannot run, the status says so (never "Done").
  if (bad.length) status.set('refused', 'Fix the highlighted fields');
  else if ((engineError ?? runError) && !job) status.set('refused', 'Refused: the engine cannot run these settings');
  markStale();
}

function runs(): Run[] {
  if (!current) return [];
  return [...pinned.map((p) => p.run), { ...current, label: runLabel(pinned.length) }];
}

/** The runs list above the results (shown with two runs or more). */
function renderRunList(): void {
  // Diffs of the full scenarios: a value reads as itself, not as "default".
  const full = (partial: JsonObject) => merge(app.defaults, partial);
  const first = full(pinned[0]?.scenario ?? currentScenario);
  const rows: RunRow[] = pinned.map((p) => ({
    label: p.label,
    color: p.run.color ?? null,
    gpus: p.run.result.config.total_gpus ?? null,
    diff: settingsDiff(first, full(p.scenario)),
    current: false,
  }));
  if (current)
    rows.push({
      label: runLabel(pinned.length),
      // The distributions draw the run after the pinned ones in the palette's second colour.
      color: PALETTE[1] ?? null,
      gpus: current.result.config.total_gpus ?? null,
      diff: settingsDiff(first, full(currentScenario)),
      current: true,
    });
  renderRuns($('runs'), rows, (label) => {
    pinned = pinned.filter((p) => p.label !== label).map((p, k) => ({ ...p, label: runLabel(k), run: styled(runLabel(k), p.run.result, k) }));
    pinsChanged();
  });
}

function pinsChanged(): void {
  unpinBtn.hidden = pinned.length === 0;
  pinBtn.textContent = pinned.length ? `Pin this run as ${runLabel(pinned.length)}` : 'Compare: pin as A';
  pinBtn.disabled = !current || pinned.length >= MAX_PINNED;
  void renderResults();
  void publish(form.scenario);
}

/** Runs a link's pinned runs again (runs are deterministic) and pins them, in order. */
async function restorePinned(list: unknown): Promise<void> {
  let runsList: LinkRun[];
  try {
    runsList = runsFromLink(list);
  } catch (e) {
    linkNote = (e as Error).message;
    return;
  }
  const restored: Pinned[] = [];
  for (const [k, r] of runsList.entries()) {
    try {
      const interval = 'timeseries_interval_ms' in r.scenario ? undefined : 0;
      const result = await app.engine.run(JSON.stringify(r.scenario), undefined, interval, () => {}).result;
      restored.push({ label: runLabel(k), run: styled(runLabel(k), result, k), scenario: r.scenario });
    } catch (e) {
      linkNote = `Run ${r.label} of this link cannot run: ${(e as Error).message}`;
      return;
    }
  }
  pinned = restored;
  pinsChanged();
}

let renderSeq = 0;

/** Headline and table at once; the charts one per task, so no task holds the page long. */
function renderResults(): Promise<void> {
  if (!current) return Promise.resolve();
  const seq = ++renderSeq;
  const { result } = current;
  const all = runs();
  renderHeadline($('headline'), all);
  renderRunList();
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
  pinBtn.disabled = pinned.length >= MAX_PINNED;
  markStale();
  // The table first, then the charts, each in a task of its own.
  const draws = [() => renderSummary($<HTMLTableElement>('summary'), all), ...charts.drawers(all), () => renderHarness($('harness-results'), result)];
  return new Promise((resolve) => {
    const step = () => {
      const draw = draws.shift();
      if (seq !== renderSeq || !draw) {
        resolve();
        return;
      }
      draw();
      setTimeout(step, 0);
    };
    setTimeout(step, 0);
  });
}

function statusLine(result: RunResult): string {
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

async function run(): Promise<void> {
  if (form.invalidFields.length) {
    updateMessage();
    return;
  }
  const seq = ++runSeq;
  job?.cancel();
  job = null;
  const scenario = form.scenario;
  // The engine gets the non-default fields, as a link or scenario.json carries them.
  const scenarioJson = JSON.stringify(diff(scenario, app.defaults));
  const forHash = await hashFor(scenario, app.defaults);
  if (seq !== runSeq) return; // a newer run was asked for meanwhile
  performance.mark('servesim:run');
  // The run early.ts started for the default scenario, if this is still it.
  const early = takeSpeculative();
  let started: { id: number; result: Promise<RunResult>; cancel: () => void } | null = null;
  const onProgress = (p: number, _now: number, halted: boolean) => {
    progress.value = p;
    if (halted && started !== null && job === started) {
      // The engine has stopped; it is gathering what ran.
      stopped = true;
      status.set('cancelling', 'Cancelled: gathering what ran…');
    }
  };
  if (early && forHash === '' && traceFile() === undefined && form.files() === undefined) {
    early.onProgress = onProgress;
    started = early;
  } else {
    early?.cancel();
    started = app.engine.run(scenarioJson, traceFile(), intervalFor(scenario, app.defaults), onProgress, form.files());
  }
  job = started;
  status.set('running', 'Running…');
  stopped = false;
  progress.value = 0;
  progress.hidden = false;
  cancelBtn.hidden = false;
  markStale();
  started.result.then(
    async (result) => {
      if (job !== started) return;
      job = null;
      runError = null;
      current = { label: 'B', result };
      currentScenario = JSON.parse(scenarioJson) as JsonObject;
      resultsHash = forHash;
      main.dataset.hash = forHash;
      performance.mark('servesim:result');
      finishJob();
      status.set('running', 'Drawing…');
      const drawn = renderResults();
      if (!document.body.dataset.firstResultsMs) document.body.dataset.firstResultsMs = performance.now().toFixed(0);
      await drawn;
      performance.mark('servesim:rendered');
      if (current?.result !== result) return;
      const stale = resultsHash !== hash || dirty;
      status.set('done', stale ? `${statusLine(result)}; the settings have changed since` : statusLine(result));
      updateMessage();
    },
    (err: Error) => {
      if (job !== started) return;
      job = null;
      if (cancelling === started) {
        status.set('cancelled', 'Cancelled: the engine was stopped before it had results');
      } else {
        runError = `The engine refused this scenario: ${err.message}`;
        status.set('refused', 'Refused: the engine cannot run these settings');
      }
      finishJob();
    },
  );
}

/** The job being cancelled (a run that does not stop in time is stopped by force). */
let cancelling: { id: number; cancel: () => void } | null = null;
/** The engine said the current run has stopped (it is gathering the results). */
let stopped = false;

function cancel(): void {
  const j = job;
  if (!j) return;
  cancelling = j;
  j.cancel();
  setTimeout(() => {
    // An engine that has not even stopped (still building a large run) is stopped by force.
    if (job === j && !stopped) app.engine.restart();
  }, CANCEL_DEADLINE_MS);
}

function finishJob(): void {
  progress.hidden = true;
  cancelBtn.hidden = true;
  updateMessage();
}

let checkTimer: ReturnType<typeof setTimeout> | undefined;
let checkSeq = 0;

/** After an edit: validate with the engine, update link, storage and the CLI view. */
function changed(): void {
  linkNote = null;
  runError = null;
  dirty = true;
  if (form.invalidFields.length && job) {
    // The run in flight is for settings that are no longer on screen.
    job.cancel();
    job = null;
    finishJob();
  }
  updateMessage();
  clearTimeout(checkTimer);
  if (form.invalidFields.length) return;
  checkTimer = setTimeout(check, 150);
}

/** The engine's view of the settings on screen: its derived figures, or why it refuses them. */
async function inspect(scenario: JsonObject, retry = true): Promise<EffectiveConfig | null> {
  try {
    const r = JSON.parse(await app.engine.inspect(JSON.stringify(diff(scenario, app.defaults)))) as { config: EffectiveConfig };
    engineError = null;
    return r.config;
  } catch (e) {
    // A run stopped by force restarts the worker, failing what was in flight with it.
    if (retry && e instanceof EngineError && /restarted/.test(e.message)) return inspect(scenario, false);
    engineError = `The engine refused this scenario: ${(e as Error).message}`;
    return null;
  }
}

async function check(): Promise<void> {
  const seq = ++checkSeq;
  const scenario = form.scenario;
  const config = await inspect(scenario);
  if (seq !== checkSeq) return;
  form.showConfig(config);
  if (engineError && job) {
    job.cancel();
    job = null;
    finishJob();
  }
  await publish(scenario);
  if (seq !== checkSeq) return; // a newer edit published its own link
  dirty = false;
  updateMessage();
  if (!engineError && $<HTMLInputElement>('autorun').checked) void run();
}

let publishSeq = 0;

async function publish(scenario: JsonObject): Promise<void> {
  const seq = ++publishSeq;
  const h = await hashFor(scenario, app.defaults);
  const partial = diff(scenario, app.defaults);
  const extras: LinkExtras = {};
  const spec = sweep.linkSpec();
  if (spec) extras.sweep = spec as unknown as LinkExtras['sweep'];
  if (pinned.length) extras.runs = pinned.map((p): LinkRun => ({ label: p.label, scenario: p.scenario })) as unknown as LinkExtras['runs'];
  const l = await linkHash(partial, extras);
  // Links are compressed asynchronously: an older edit's must not overwrite a newer one's.
  if (seq !== publishSeq) return;
  hash = h;
  link = l;
  history.replaceState(null, '', link === '' ? location.pathname + location.search : link);
  sweep.baseChanged(scenario);
  try {
    localStorage.setItem(STORAGE_KEY, JSON.stringify(partial));
  } catch {
    // Storage full or disabled: the link still holds the scenario.
  }
  $('scenario-file').textContent = pretty(partial);
  inspector?.scenarioChanged();
  const isTrace = getPath(scenario, 'workload.type') === 'trace';
  const profile = (getPath(scenario, 'engine.timing_model.config.path') ?? getPath(scenario, 'engine.planner_profile_data') ?? null) as string | null;
  $('cli').textContent = cliCommand(isTrace, (getPath(scenario, 'workload.path') as string | null) ?? null, profile);
  ($('open-embed') as HTMLAnchorElement).href = pageUrl('embed.html', hash);
}

async function openHash(h: string): Promise<void> {
  const { scenario, error, extras } = await scenarioFromHash(app, h);
  let chosen = scenario;
  if (!chosen && !error && h === '') {
    // No link: the last scenario of this browser, if it is still valid.
    const saved = localStorage.getItem(STORAGE_KEY);
    if (saved) {
      try {
        chosen = JSON.parse(await app.engine.normalize(saved)) as JsonObject;
      } catch {
        localStorage.removeItem(STORAGE_KEY);
      }
    }
  }
  form.set(chosen ?? app.defaults);
  linkNote = error;
  engineError = null;
  runError = null;
  dirty = false;
  if (extras.sweep !== undefined) {
    // A link with a sweep runs it (the scenario's own run goes on as well).
    try {
      sweep.openFromLink(specFromLink(extras.sweep));
    } catch (e) {
      linkNote = (e as Error).message;
    }
  } else if (sweep.linkSpec()) {
    // Another link was opened: what is on screen is what it holds.
    sweep.clear();
  }
  if (extras.runs !== undefined) await restorePinned(extras.runs);
  await publish(form.scenario);
  updateMessage();
  const config = inspect(form.scenario);
  void run();
  form.showConfig(await config);
  updateMessage();
}

async function start(): Promise<void> {
  performance.mark('servesim:start');
  try {
    app = await boot();
    performance.mark('servesim:engine-ready');
  } catch (e) {
    status.set('error', 'The engine failed to load');
    showMessage(message, `The engine failed to load: ${(e as Error).message}`);
    return;
  }
  form = new ConfigForm($<HTMLFormElement>('form'), app.defaults, app.presets, app.engine, changed);
  (window as unknown as { __servesimForm?: ConfigForm }).__servesimForm = form;
  charts = new Charts(document);
  // Off the first run's path: the links are built when the page is idle.
  setTimeout(() => void exampleLinks().then((nav) => $('config').prepend(nav)), 300);
  inspector = mountInspector({
    engine: app.engine,
    scenarioJson: () => JSON.stringify(diff(form.scenario, app.defaults)),
    trace: traceFile,
    files: () => form.files(),
    applyScenario: (partial) =>
      void app.engine.normalize(JSON.stringify(partial)).then(
        (full) => {
          form.set(JSON.parse(full) as JsonObject);
          changed();
        },
        (e: Error) => showMessage(message, `This lesson's scenario is not valid: ${e.message}`),
      ),
  });
  explainMarked(document);
  performance.mark('servesim:form');
  sweep = new SweepPanel(element<HTMLDetailsElement>('#sweep'), {
    base: () => diff(form.scenario, app.defaults),
    scenario: () => form.scenario,
    uploads: () => ({ trace: traceFile(), files: form.files() }),
    refusal: () => (form.invalidFields.length ? `fix ${form.invalidFields.join(', ')}` : engineError),
    openPoint: (s) => void openPoint(s),
    linkChanged: () => void publish(form.scenario),
    download,
  });
  status.set('ready', `Engine ${app.version} ready`);
  runBtn.disabled = false;
  await openHash(location.hash);
  openFromLink(inspector);
}

runBtn.addEventListener('click', () => void run());
if (new URLSearchParams(location.search).has('test-crash')) {
  // Test hook: a button that makes the engine panic, to check the page survives it.
  const b = document.createElement('button');
  b.id = 'crash';
  b.type = 'button';
  b.textContent = 'Crash the engine';
  b.addEventListener('click', () =>
    app.engine.crashForTesting().catch((e: Error) => {
      runError = e.message;
      status.set('error', 'Error');
      updateMessage();
    }),
  );
  element('.actions').append(b);
}
cancelBtn.addEventListener('click', cancel);
document.addEventListener('keydown', (e) => {
  if (e.key !== 'Escape' || !(job || sweep?.running)) return;
  e.preventDefault();
  if (job) cancel();
  if (sweep?.running) sweep.cancel();
});
pinBtn.addEventListener('click', () => {
  if (!current || pinned.length >= MAX_PINNED) return;
  const k = pinned.length;
  pinned.push({ label: runLabel(k), run: styled(runLabel(k), current.result, k), scenario: currentScenario });
  pinsChanged();
});
unpinBtn.addEventListener('click', () => {
  pinned = [];
  pinsChanged();
});
$('copy-link').addEventListener('click', async () => {
  const url = pageUrl('index.html', link);
  try {
    await navigator.clipboard.writeText(url);
    showMessage(message, 'Link copied to the clipboard.', 'info');
  } catch {
    showMessage(message, `Copy this link: ${url}`, 'info');
  }
  setTimeout(updateMessage, 2500);
});
$('reset').addEventListener('click', () => {
  form.set(app.defaults);
  changed();
  if (!$<HTMLInputElement>('autorun').checked) void run();
});
window.addEventListener('hashchange', () => {
  if (location.hash !== link) void openHash(location.hash);
});

/** A sweep point as a normal run: its scenario in the form, then a run. */
async function openPoint(partial: JsonObject): Promise<void> {
  try {
    form.set(JSON.parse(await app.engine.normalize(JSON.stringify(partial))) as JsonObject);
  } catch (e) {
    showMessage(message, `That point cannot be opened: ${(e as Error).message}`);
    return;
  }
  changed();
  if (!$<HTMLInputElement>('autorun').checked) void run();
  results.scrollIntoView({ block: 'start' });
}

async function exportRun(kind: ExportKind, name: string, type: string): Promise<void> {
  if (!current) return;
  try {
    download(name, await app.engine.exportText(current.result.id, kind), type);
  } catch (e) {
    showMessage(message, (e as Error).message);
  }
}
$('export-json').addEventListener('click', () => void exportRun('json', 'servesim-results.json', 'application/json'));
$('export-csv').addEventListener('click', () => void exportRun('requests', 'servesim-requests.csv', 'text/csv'));
$('export-series').addEventListener('click', () => void exportRun('series', 'servesim-timeseries.csv', 'text/csv'));
$('export-scenario').addEventListener('click', () => download('scenario.json', `${pretty(diff(form.scenario, app.defaults))}\n`, 'application/json'));

void start();
