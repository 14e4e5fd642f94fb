// The embed page: a compact, read-only view for iframes. It takes the playground's link
// (`embed.html#v1.…`), runs the scenario and shows the headline numbers and two charts.

import { boot, element, intervalFor, pageUrl, Status, scenarioFromHash, showMessage } from './app';
import { Charts } from './charts';
import { takeSpeculative } from './early';
import { explainMarked } from './glossary';
import { fmt, renderHeadline } from './results';

const status = new Status(element('#status'));
const message = element('#message');
const progress = document.getElementById('progress') as HTMLProgressElement;

async function start(): Promise<void> {
  const app = await boot().catch((e: Error) => {
    status.set('error', 'The engine failed to load');
    showMessage(message, `The engine failed to load: ${e.message}`);
    return null;
  });
  if (!app) return;
  const charts = new Charts(document, 180);
  explainMarked(document);
  const h = location.hash;
  (document.getElementById('open') as HTMLAnchorElement).href = pageUrl('index.html', h);
  const { scenario, error } = await scenarioFromHash(app, h);
  if (error) showMessage(message, error);
  const chosen = scenario ?? app.defaults;
  const name = chosen.name;
  if (typeof name === 'string' && name) element('#title').textContent = name;
  status.set('running', 'Running…');
  progress.hidden = false;
  try {
    // Without a link the view shows the default scenario: adopt the run early.ts started.
    const early = takeSpeculative();
    if (early && scenario === null && !error) early.onProgress = (p) => (progress.value = p);
    else early?.cancel();
    const job =
      early && scenario === null && !error
        ? early
        : app.engine.run(JSON.stringify(chosen), undefined, intervalFor(chosen, app.defaults), (p) => (progress.value = p));
    const result = await job.result;
    const run = { label: 'run', result };
    renderHeadline(element('#headline'), [run]);
    charts.render([run]);
    const s = result.summary;
    const requests =
      s.completed_requests === s.num_requests ? `${fmt(s.num_requests)} requests` : `${fmt(s.completed_requests)} of ${fmt(s.num_requests)} requests completed`;
    status.set('done', `${requests}, ${fmt(result.now_ms / 1000)} s simulated`);
  } catch (e) {
    status.set('error', 'Error');
    showMessage(message, `The engine refused this scenario: ${(e as Error).message}`);
  } finally {
    progress.hidden = true;
  }
}

window.addEventListener('hashchange', () => location.reload());
void start();
