// Puts the Inspector into the playground: its button in the top bar, its panel above the
// results, a link from the per-worker charts (double-click a moment), and the `?inspect=`
// link parameter that opens it at a time, rank and request.

import { Inspector, type InspectorHost, parseInspectParam } from './inspector';

/** Per-worker charts whose moments link to the inspector. */
const LINKED_CHARTS = ['chart-kv', 'chart-queue', 'chart-hit', 'chart-preempt', 'chart-pass'];

/** `worker 3`, `B prefill 1.2` (a chart legend's series name) → `aggregated/3/0`, `prefill/1/2`. */
export function legendRank(label: string): string | null {
  const m = /(?:^|\s)(worker|prefill|decode) (\d+)(?:\.(\d+))?\s*$/.exec(label.trim());
  if (!m) return null;
  const pool = m[1] === 'worker' ? 'aggregated' : (m[1] as string);
  return `${pool}/${m[2]}/${m[3] ?? '0'}`;
}

/**
 * The moment under a chart's cursor, from its live legend: the time (s, the first row) and
 * the rank whose series is highest there (the busiest, most preempting, fullest one).
 */
function chartMoment(fig: HTMLElement): { t_ms: number; rank: string | null } | null {
  const rows = [...fig.querySelectorAll<HTMLElement>('.u-legend .u-series')];
  const t = Number((rows[0]?.querySelector('.u-value')?.textContent ?? '').replace(/[^0-9.eE+-]/g, ''));
  if (!Number.isFinite(t) || rows.length === 0) return null;
  let best: { v: number; rank: string | null } = { v: Number.NEGATIVE_INFINITY, rank: null };
  for (const row of rows.slice(1)) {
    if (row.classList.contains('u-off')) continue;
    const v = Number((row.querySelector('.u-value')?.textContent ?? '').replace(/[^0-9.eE+-]/g, ''));
    const rank = legendRank(row.querySelector('.u-label')?.textContent ?? '');
    if (Number.isFinite(v) && v > best.v) best = { v, rank };
  }
  return { t_ms: t * 1000, rank: best.rank };
}

export function mountInspector(host: InspectorHost): Inspector {
  const inspector = new Inspector(host);
  const results = document.getElementById('results');
  results?.before(inspector.root);
  const btn = Object.assign(document.createElement('button'), { id: 'open-inspector', type: 'button', textContent: 'Inspector' });
  btn.title = 'Step through the run pass by pass: KV blocks, batch, queue, routing, events';
  btn.setAttribute('aria-expanded', 'false');
  btn.setAttribute('aria-controls', 'inspector');
  btn.addEventListener('click', () => {
    if (inspector.open) inspector.hide();
    else inspector.show();
    btn.setAttribute('aria-expanded', String(inspector.open));
  });
  document.querySelector('.actions')?.prepend(btn);
  for (const id of LINKED_CHARTS) {
    const fig = document.getElementById(id);
    if (!fig) continue;
    fig.title = 'Double-click a moment to open it in the Inspector';
    fig.addEventListener('dblclick', () => {
      const at = chartMoment(fig);
      if (!at) return;
      inspector.openAt(at.t_ms, at.rank);
      btn.setAttribute('aria-expanded', 'true');
    });
  }
  return inspector;
}

/** Opens the inspector if the page's link asks for it (call once the scenario is set). */
export function openFromLink(inspector: Inspector): void {
  const at = parseInspectParam(new URLSearchParams(location.search).get('inspect'));
  if (!at) return;
  inspector.show(at);
  document.getElementById('open-inspector')?.setAttribute('aria-expanded', 'true');
}

/** Opens the inspector on a lesson (the "Try" line's student entry). */
export function openLesson(inspector: Inspector, id: string): void {
  inspector.show();
  inspector.startLesson(id);
  document.getElementById('open-inspector')?.setAttribute('aria-expanded', 'true');
  inspector.root.scrollIntoView({ block: 'start' });
}
