// The embed page: a compact, read-only view for iframes. It takes the playground's link
// (`embed.html#v1.…`, display options in the query: see options.ts), states the
// scenario's key settings, runs it (at once, or on a click) and shows the chosen panels.
// A link that cannot be opened shows why, and no numbers.

import { type Boot, boot, intervalFor } from '../engine/boot';
import { takeSpeculative } from '../engine/early';
import type { EffectiveConfig } from '../engine/protocol';
import { Charts } from '../results/charts';
import { fmt, HEADLINE, renderHeadline } from '../results/summary';
import type { JsonObject } from '../scenario/json';
import { decodeLink, LinkError } from '../scenario/link';
import { pageUrl } from '../scenario/page-link';
import { element, showMessage } from '../ui/dom';
import { explainMarked } from '../ui/glossary';
import { Status } from '../ui/status';
import { keySettings, PANEL_IDS, parseOptions } from './options';
import { announceReady } from './resize';

const status = new Status(element('#status'));
const message = element('#message');
const progress = element<HTMLProgressElement>('#progress');
const runButton = element<HTMLButtonElement>('#run');
const { options, problems } = parseOptions(location.search);

/** Only the chosen panels stay in the page (the charts draw only those). */
function keepPanels(): void {
  if (!options.panels.includes('cards')) element('#headline').remove();
  for (const id of PANEL_IDS) {
    if (id !== 'cards' && !options.panels.includes(id)) document.getElementById(`chart-${id}`)?.remove();
  }
  if (!document.querySelector('figure.chart')) element('.charts').remove();
}

/** The link's scenario, engine-normalised; `null` without a link. Throws the reason it cannot open. */
async function linkScenario(app: Boot, hash: string): Promise<JsonObject | null> {
  let partial: JsonObject | null;
  try {
    partial = await decodeLink(hash);
  } catch (e) {
    throw new Error(`This link could not be opened: ${e instanceof LinkError ? e.message : 'the link could not be read'}.`);
  }
  if (partial === null) return null;
  try {
    return JSON.parse(await app.engine.normalize(JSON.stringify(partial))) as JsonObject;
  } catch (e) {
    throw new Error(`This link's scenario is not valid: ${(e as Error).message}.`);
  }
}

/** Cards with no values yet, so the page has its final height before the results arrive. */
function placeholderCards(): void {
  if (!options.panels.includes('cards')) return;
  const cards = HEADLINE.map(([key, label]) => {
    const card = Object.assign(document.createElement('div'), { className: 'card placeholder' });
    card.dataset.key = key;
    card.append(Object.assign(document.createElement('div'), { className: 'label', textContent: label }));
    card.append(Object.assign(document.createElement('div'), { className: 'value', textContent: '…' }));
    return card;
  });
  // The mechanism's card (preemptions or retractions) comes last, as in the results.
  const last = Object.assign(document.createElement('div'), { className: 'card placeholder' });
  last.append(Object.assign(document.createElement('div'), { className: 'label', textContent: 'Preemptions' }));
  last.append(Object.assign(document.createElement('div'), { className: 'value', textContent: '…' }));
  element('#headline').replaceChildren(...cards, last);
}

function refuse(text: string): void {
  // No numbers, and no placeholders for them either.
  document.getElementById('headline')?.replaceChildren();
  announceReady();
  document.body.dataset.state = 'error';
  status.set('error', 'Cannot show this scenario');
  showMessage(message, text);
}

async function showSettings(app: Boot, scenario: JsonObject): Promise<void> {
  let config: EffectiveConfig | null = null;
  try {
    config = (JSON.parse(await app.engine.inspect(JSON.stringify(scenario))) as { config: EffectiveConfig }).config;
  } catch {
    // The run reports why it cannot go; the line then shows what the scenario says.
  }
  element('#settings').replaceChildren(...keySettings(scenario, config).map((t) => Object.assign(document.createElement('span'), { textContent: t })));
}

async function run(app: Boot, scenario: JsonObject, isDefault: boolean, charts: Charts): Promise<void> {
  status.set('running', 'Running…');
  runButton.hidden = true;
  progress.hidden = false;
  try {
    // Without a link the view shows the default scenario: adopt the run early.ts started.
    const early = takeSpeculative();
    if (early && isDefault) early.onProgress = (p) => (progress.value = p);
    else early?.cancel();
    const job =
      early && isDefault ? early : app.engine.run(JSON.stringify(scenario), undefined, intervalFor(scenario, app.defaults), (p) => (progress.value = p));
    const result = await job.result;
    const shown = { label: 'run', result };
    if (options.panels.includes('cards')) renderHeadline(element('#headline'), [shown]);
    charts.render([shown]);
    announceReady();
    const s = result.summary;
    const requests =
      s.completed_requests === s.num_requests ? `${fmt(s.num_requests)} requests` : `${fmt(s.completed_requests)} of ${fmt(s.num_requests)} requests completed`;
    status.set('done', `${requests}, ${fmt(result.now_ms / 1000)} s simulated`);
  } catch (e) {
    refuse(`The engine refused this scenario: ${(e as Error).message}`);
  } finally {
    progress.hidden = true;
  }
}

async function start(): Promise<void> {
  keepPanels();
  placeholderCards();
  const app = await boot().catch((e: Error) => {
    refuse(`The engine failed to load: ${e.message}`);
    return null;
  });
  if (!app) return;
  const hash = location.hash;
  element<HTMLAnchorElement>('#open').href = pageUrl('index.html', hash);
  let scenario: JsonObject | null;
  try {
    scenario = await linkScenario(app, hash);
  } catch (e) {
    // No numbers under a refused link: a typo in a docs page must not publish the defaults'.
    takeSpeculative()?.cancel();
    refuse((e as Error).message);
    return;
  }
  const chosen = scenario ?? app.defaults;
  if (typeof chosen.name === 'string' && chosen.name) element('#title').textContent = chosen.name;
  if (problems.length) showMessage(message, `This embed's address has options it does not know: ${problems.join('; ')}.`, 'info');
  const charts = new Charts(document, 180);
  explainMarked(document);
  await showSettings(app, chosen);
  if (options.clickToRun) {
    takeSpeculative()?.cancel();
    status.set('ready', 'Ready: the run starts on a click');
    runButton.hidden = false;
    announceReady();
    runButton.addEventListener('click', () => void run(app, chosen, false, charts), { once: true });
    return;
  }
  await run(app, chosen, scenario === null, charts);
}

window.addEventListener('hashchange', () => location.reload());
void start();
