// The embed page showing just the inspector (`embed.html?inspect=T,RANK#v1.…`): a docs page
// explaining prefix caching can embed a live block map of its scenario.

import { boot } from '../engine/boot';
import { Inspector, parseInspectParam } from '../inspector/inspector';
import { diff } from '../scenario/json';
import { pageUrl, scenarioFromHash } from '../scenario/page-link';
import { element, showMessage } from '../ui/dom';
import { announceReady } from './resize';

async function start(): Promise<void> {
  const status = element('#status');
  const message = element('#message');
  document.body.classList.add('embed-inspector');
  for (const id of ['headline']) document.getElementById(id)?.setAttribute('hidden', '');
  document.querySelector('.charts')?.setAttribute('hidden', '');
  const app = await boot().catch((e: Error) => {
    showMessage(message, `The engine failed to load: ${e.message}`);
    return null;
  });
  if (!app) return;
  const h = location.hash;
  (document.getElementById('open') as HTMLAnchorElement).href = `${pageUrl('index.html', h).replace(/#.*$/, '')}${location.search}${h}`;
  const { scenario, error } = await scenarioFromHash(app, h);
  if (error) showMessage(message, error);
  const chosen = scenario ?? app.defaults;
  if (typeof chosen.name === 'string' && chosen.name) element('#title').textContent = chosen.name;
  const json = JSON.stringify(diff(chosen, app.defaults));
  const inspector = new Inspector({ engine: app.engine, scenarioJson: () => json, trace: () => undefined, files: () => undefined });
  (document.querySelector('main') ?? document.body).append(inspector.root);
  status.textContent = 'Inspector';
  status.dataset.state = 'done';
  // The height is final once the recording is shown (or has failed).
  new MutationObserver((_, seen) => {
    if (inspector.root.dataset.state === 'ready' || inspector.root.dataset.state === 'error') {
      seen.disconnect();
      announceReady();
    }
  }).observe(inspector.root, { attributes: true, attributeFilter: ['data-state'] });
  inspector.show(parseInspectParam(new URLSearchParams(location.search).get('inspect')) ?? undefined);
}

void start();
