// The results of the harness's extras, below the main charts: scaling (replica counts over
// time, GPU-hours, the decision log) for a run with a planner or a script, and KV tiers
// (per-tier hits and host onboarding, the tier counters) for a run with offload. Hidden for
// runs with neither.

import type { RunResult } from '../engine/protocol';
import { elAttrs as el } from '../ui/dom';
import { HarnessChart } from './harness-chart';
import { counterRows, hitChart, onboardChart, tierTimes, tierTotals } from './offload-view';
import { decisionLog, replicaChart, replicaSteps } from './planner-view';
import { fmt } from './summary';

let charts: HarnessChart[] = [];

function figure(root: HTMLElement, id: string, caption: string): HTMLElement {
  const fig = el('figure', { class: 'chart', id });
  fig.append(el('figcaption', {}, caption));
  const host = el('div', { class: 'plot' });
  fig.append(host);
  root.append(fig);
  return host;
}

function kv(rows: [string, string][], id: string): HTMLTableElement {
  const t = el('table', { id, class: 'log' });
  const body = t.createTBody();
  for (const [k, v] of rows) {
    const tr = el('tr');
    tr.append(el('td', { class: 'key' }, k), el('td', { class: 'num' }, v));
    body.append(tr);
  }
  return t;
}

export function renderHarness(root: HTMLElement, result: RunResult): void {
  for (const c of charts) c.destroy();
  charts = [];
  root.replaceChildren();
  const s = result.summary as Record<string, unknown>;
  const planner = result.planner ?? null;
  const tiers = result.tiers;
  const offload = result.config.pools.length > 0 && ('g3_offload' in s || 'g2_domains' in s || (tiers !== undefined && tierTotals(tiers).host > 0));
  root.hidden = planner === null && !offload;
  if (root.hidden) return;

  if (planner) {
    const sec = el('section', { id: 'scaling-results', 'aria-label': 'Scaling' });
    sec.append(el('h2', {}, 'Scaling'));
    const gpuHours = typeof s.gpu_hours === 'number' ? s.gpu_hours : null;
    const line = el('p', { class: 'note', id: 'gpu-hours' });
    line.textContent = `GPU-hours: ${fmt(gpuHours)} (${fmt(s.gpu_seconds)} GPU-seconds; worker-seconds: prefill ${fmt(s.prefill_worker_seconds)}, decode ${fmt(s.decode_worker_seconds)})`;
    if (gpuHours !== null) line.dataset.value = String(gpuHours);
    sec.append(line);
    const grid = el('div', { class: 'charts' });
    sec.append(grid);
    const steps = replicaSteps(planner, result.config, Number(s.duration_ms ?? result.now_ms));
    const host = figure(grid, 'chart-replicas', 'Workers per pool over time (shaded: starting, then draining)');
    const chart = new HarnessChart(host);
    chart.draw(replicaChart(steps));
    charts.push(chart);
    host.dataset.max = String(Math.max(...steps.pools.flatMap((p) => p.active)));
    const disaggregated = result.config.pools.some((p) => p.pool === 'prefill');
    sec.append(decisionLog(planner, disaggregated));
    root.append(sec);
  }

  if (offload && tiers) {
    const sec = el('section', { id: 'offload-results', 'aria-label': 'KV offload tiers' });
    sec.append(el('h2', {}, 'KV offload tiers'));
    const n = Object.values(tiers)[0]?.length ?? 0;
    const t = tierTimes(result.series.t_ms, result.series.interval_ms, n);
    const tot = tierTotals(tiers);
    const all = tot.gpu + tot.host + tot.computed;
    const pct = (x: number) => (all > 0 ? `${((100 * x) / all).toFixed(1)} %` : '—');
    const line = el('p', { class: 'note', id: 'tier-totals' });
    line.textContent = `First admissions' prompt tokens: ${fmt(tot.gpu)} from the GPU cache (${pct(tot.gpu)}), ${fmt(tot.host)} from the host tier (${pct(tot.host)}), ${fmt(tot.computed)} computed; ${fmt(tot.loads)} requests waited for a host load.`;
    line.dataset.host = String(tot.host);
    sec.append(line);
    const grid = el('div', { class: 'charts' });
    sec.append(grid);
    const hit = new HarnessChart(figure(grid, 'chart-tier-hits', 'Prompt tokens by tier (per window, by first token)'));
    hit.draw(hitChart(tiers, t));
    const onboard = new HarnessChart(figure(grid, 'chart-tier-onboard', 'Host tier onboarding (host → GPU)'));
    onboard.draw(onboardChart(tiers, t));
    charts.push(hit, onboard);
    if (s.g3_offload !== undefined) {
      sec.append(el('h3', {}, 'G3 counters'), kv(counterRows(s.g3_offload), 'g3-counters'));
    }
    if (Array.isArray(s.g2_domains)) {
      sec.append(el('h3', {}, 'Shared host pools'), kv(counterRows(s.g2_domains), 'g2-domains'));
    }
    root.append(sec);
  }
}
