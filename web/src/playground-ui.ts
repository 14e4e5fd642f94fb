// The playground page: configuration form, runs in the worker, charts, comparison, share
// links, exports.

import { type Boot, boot, element, hashFor, intervalFor, pageUrl, STORAGE_KEY, Status, scenarioFromHash, showMessage } from './app';
import { Charts, type Run } from './charts';
import { takeSpeculative } from './early';
import { ConfigForm } from './form';
import { cliCommand, download, fmt, recordsCsv, renderHeadline, renderReasons, renderSummary, seriesCsv } from './results';
import { diff, getPath, type JsonObject, pretty } from './scenario';

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

const status = new Status($('status'));
const message = $('message');
const runBtn = $<HTMLButtonElement>('run');
const cancelBtn = $<HTMLButtonElement>('cancel');
const progress = $<HTMLProgressElement>('progress');
const pinBtn = $<HTMLButtonElement>('pin');
const unpinBtn = $<HTMLButtonElement>('unpin');
const main = document.querySelector('main') as HTMLElement;

let app: Boot;
let form: ConfigForm;
let charts: Charts;
let current: Run | null = null;
let pinned: Run | null = null;
let job: { id: number; cancel: () => void } | null = null;
/** Link hash of the form's scenario (kept up to date as it changes). */
let hash = '';
let engineError: string | null = null;
let linkNote: string | null = null;
let runSeq = 0;

function traceFile(): Blob | undefined {
  const s = form.scenario;
  if (getPath(s, 'workload.type') !== 'trace') return undefined;
  return form.trace && form.trace.name === getPath(s, 'workload.path') ? form.trace.file : undefined;
}

function updateMessage(): void {
  const bad = form.invalidFields;
  if (bad.length) showMessage(message, `Fix ${bad.length} field(s) before running: ${bad.join(', ')}.`);
  else if (engineError) showMessage(message, engineError);
  else if (linkNote) showMessage(message, linkNote);
  else showMessage(message, null);
  runBtn.disabled = bad.length > 0;
}

function runs(): Run[] {
  if (!current) return [];
  return pinned ? [pinned, { ...current, label: 'B' }] : [current];
}

function renderResults(): void {
  if (!current) return;
  const { result } = current;
  const all = runs();
  renderHeadline($('headline'), all);
  renderSummary($<HTMLTableElement>('summary'), all);
  renderReasons($('reasons'), result.reasons, result.cancelled);
  charts.render(all);
  const src = result.series.source;
  $('series-note').textContent =
    `Time series: ${fmt(result.series.interval_ms)} ms windows (${src === 'engine' ? "the engine's per-pass metrics" : src}); charts show up to 8 ranks.`;
  for (const b of ['export-json', 'export-csv', 'export-series']) $<HTMLButtonElement>(b).disabled = false;
  pinBtn.disabled = false;
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
  // The engine gets the non-default fields, as a link or scenario.json carries them (so what
  // it derives from a timing model, such as a roofline's KV pool, is derived here too).
  const scenarioJson = JSON.stringify(diff(scenario, app.defaults));
  const forHash = await hashFor(scenario, app.defaults);
  if (seq !== runSeq) return; // a newer run was asked for meanwhile
  performance.mark('servesim:run');
  // The run early.ts started for the default scenario, if this is still it.
  const early = takeSpeculative();
  let started: { id: number; result: Promise<import('./protocol').RunResult>; cancel: () => void };
  if (early && forHash === '' && traceFile() === undefined && form.files() === undefined) {
    early.onProgress = (p) => {
      progress.value = p;
    };
    started = early;
  } else {
    early?.cancel();
    started = app.engine.run(
      scenarioJson,
      traceFile(),
      intervalFor(scenario, app.defaults),
      (p) => {
        progress.value = p;
      },
      form.files(),
    );
  }
  job = started;
  status.set('running', 'Running…');
  progress.value = 0;
  progress.hidden = false;
  cancelBtn.hidden = false;
  started.result.then(
    (result) => {
      if (job !== started) return;
      job = null;
      engineError = null;
      current = { label: 'B', result };
      main.dataset.hash = forHash;
      performance.mark('servesim:result');
      renderResults();
      performance.mark('servesim:rendered');
      const requests = fmt(result.summary.num_requests);
      const secs = (result.summary.duration_ms ?? 0) / 1000;
      status.set(
        'done',
        `${result.cancelled ? 'Cancelled' : 'Done'}: ${requests} requests, ${secs.toFixed(1)} s simulated in ${result.elapsed_ms.toFixed(0)} ms`,
      );
      if (!document.body.dataset.firstResultsMs) document.body.dataset.firstResultsMs = performance.now().toFixed(0);
      finishJob();
    },
    (err: Error) => {
      if (job !== started) return;
      job = null;
      engineError = `The engine refused this scenario: ${err.message}`;
      status.set('error', 'Error');
      finishJob();
    },
  );
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
  updateMessage();
  clearTimeout(checkTimer);
  if (form.invalidFields.length) return;
  checkTimer = setTimeout(check, 150);
}

async function check(): Promise<void> {
  const seq = ++checkSeq;
  const scenario = form.scenario;
  try {
    await app.engine.normalize(JSON.stringify(diff(scenario, app.defaults)));
    if (seq !== checkSeq) return;
    engineError = null;
  } catch (e) {
    if (seq !== checkSeq) return;
    engineError = `The engine refused this scenario: ${(e as Error).message}`;
  }
  await publish(scenario);
  if (seq !== checkSeq) return; // a newer edit published its own link
  updateMessage();
  if (!engineError && $<HTMLInputElement>('autorun').checked) void run();
}

let publishSeq = 0;

async function publish(scenario: JsonObject): Promise<void> {
  const seq = ++publishSeq;
  const h = await hashFor(scenario, app.defaults);
  // Links are compressed asynchronously: an older edit's must not overwrite a newer one's.
  if (seq !== publishSeq) return;
  hash = h;
  history.replaceState(null, '', hash === '' ? location.pathname + location.search : hash);
  const partial = diff(scenario, app.defaults);
  try {
    localStorage.setItem(STORAGE_KEY, JSON.stringify(partial));
  } catch {
    // Storage full or disabled: the link still holds the scenario.
  }
  $('scenario-file').textContent = pretty(partial);
  const isTrace = getPath(scenario, 'workload.type') === 'trace';
  const profile = (getPath(scenario, 'engine.timing_model.config.path') ?? getPath(scenario, 'engine.planner_profile_data') ?? null) as string | null;
  $('cli').textContent = cliCommand(isTrace, (getPath(scenario, 'workload.path') as string | null) ?? null, profile);
  ($('open-embed') as HTMLAnchorElement).href = pageUrl('embed.html', hash);
}

async function openHash(h: string): Promise<void> {
  const { scenario, error } = await scenarioFromHash(app, h);
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
  await publish(form.scenario);
  updateMessage();
  void run();
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
  form = new ConfigForm($<HTMLFormElement>('form'), app.defaults, changed);
  charts = new Charts(document);
  performance.mark('servesim:form');
  status.set('ready', `Engine ${app.version} ready`);
  runBtn.disabled = false;
  await openHash(location.hash);
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
      engineError = e.message;
      status.set('error', 'Error');
      updateMessage();
    }),
  );
  element('.actions').append(b);
}
cancelBtn.addEventListener('click', () => job?.cancel());
pinBtn.addEventListener('click', () => {
  if (!current) return;
  pinned = { label: 'A', result: current.result, baseline: true };
  unpinBtn.hidden = false;
  pinBtn.textContent = 'Pin this run as A';
  renderResults();
});
unpinBtn.addEventListener('click', () => {
  pinned = null;
  unpinBtn.hidden = true;
  pinBtn.textContent = 'Compare: pin as A';
  renderResults();
});
$('copy-link').addEventListener('click', async () => {
  const url = pageUrl('index.html', hash);
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
  if (location.hash !== hash) void openHash(location.hash);
});
$('export-json').addEventListener('click', async () => {
  if (!current) return;
  try {
    download('servesim-results.json', await app.engine.report(current.result.id), 'application/json');
  } catch (e) {
    showMessage(message, (e as Error).message);
  }
});
$('export-csv').addEventListener('click', () => current && download('servesim-requests.csv', recordsCsv(current.result), 'text/csv'));
$('export-series').addEventListener('click', () => current && download('servesim-timeseries.csv', seriesCsv(current.result.series), 'text/csv'));
$('export-scenario').addEventListener('click', () => download('scenario.json', `${pretty(diff(form.scenario, app.defaults))}\n`, 'application/json'));

void start();
