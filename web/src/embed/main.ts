// Entry of embed.html, kept tiny. An embed stays light until it is on screen: a docs page
// with several embeds starts an engine (a worker and its wasm download, shared through the
// HTTP cache) only for those the reader scrolls to.
import '../ui/style.css';
import './embed.css';
import { parseOptions } from './options';
import { reportHeight } from './resize';

document.documentElement.dataset.theme = parseOptions(location.search).options.theme;
reportHeight();

function whenVisible(node: Element): Promise<void> {
  if (typeof IntersectionObserver === 'undefined') return Promise.resolve();
  return new Promise((resolve) => {
    const seen = new IntersectionObserver((entries) => {
      if (entries.some((e) => e.isIntersecting)) {
        seen.disconnect();
        resolve();
      }
    });
    seen.observe(node);
  });
}

// `?inspect=…` shows just the inspector (a live block map for a docs page).
const inspectOnly = new URLSearchParams(location.search).has('inspect');
void whenVisible(document.body).then(async () => {
  if (inspectOnly) {
    await import('./inspector');
    return;
  }
  await import('../engine/early');
  await import('./page');
});
