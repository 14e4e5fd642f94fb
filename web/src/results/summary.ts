// Result views that are not charts: headline cards (and what they cover: a run in which no
// request completed says so, with the reason, never "0 ms"), the summary table (the
// report's own keys, each explained), reasons for requests that could not run, and the CLI
// command.

import type { Reason, RunResult, Summary, SummaryNumberKey } from '../engine/protocol';
import { summaryKeys } from '../engine/summary-keys';
import { explain, TERMS, term } from '../ui/glossary';
import type { Run } from './charts';
import { verdictClass } from './compare';

/** Headline cards: summary key, label, unit, the glossary term of the label. */
export const HEADLINE: [SummaryNumberKey, string, string, string][] = [
  ['mean_ttft_ms', 'Mean TTFT', 'ms', 'TTFT'],
  ['p99_ttft_ms', 'p99 TTFT', 'ms', 'TTFT'],
  ['mean_tpot_ms', 'Mean TPOT', 'ms', 'TPOT'],
  ['mean_e2e_latency_ms', 'Mean E2E', 'ms', 'E2E'],
  ['output_throughput_tok_s', 'Output throughput', 'tok/s', 'Output throughput'],
  ['prefix_cache_reused_ratio', 'Prefix reuse', '', 'Prefix reuse'],
];

export function fmt(v: unknown): string {
  if (typeof v === 'object' && v !== null) return JSON.stringify(v);
  if (typeof v !== 'number') return v == null ? '—' : String(v);
  if (!Number.isFinite(v)) return String(v);
  if (Number.isInteger(v)) return v.toLocaleString('en-US');
  const a = Math.abs(v);
  const digits = a >= 1000 ? 1 : a >= 100 ? 2 : a >= 1 ? 3 : 4;
  return v.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: 0 });
}

function cell(tag: 'td' | 'th', text: string, cls?: string): HTMLElement {
  const e = document.createElement(tag);
  e.textContent = text;
  if (cls) e.className = cls;
  return e;
}

/** The backend's name for a request losing its place: preemption (vLLM) or retraction (SGLang). */
export function mechanism(r: RunResult): { key: 'num_preemptions' | 'num_retractions'; label: string } {
  return r.config.pools.some((p) => p.backend === 'sglang')
    ? { key: 'num_retractions', label: 'Retractions' }
    : { key: 'num_preemptions', label: 'Preemptions' };
}

/**
 * What the headline's figures cover, in one sentence, when that is not simply "every
 * request": none completed (and why), some could not, or the run was cancelled.
 */
export function coverage(r: RunResult): string | null {
  const s = r.summary;
  const n = s.num_requests ?? 0;
  const done = s.completed_requests ?? 0;
  const why = r.reasons[0] ? ` First: request ${r.reasons[0].request} (${r.reasons[0].status}): ${r.reasons[0].reason}.` : '';
  const failed = [
    s.rejected_requests ? `${fmt(s.rejected_requests)} rejected` : '',
    s.unschedulable_requests ? `${fmt(s.unschedulable_requests)} unschedulable` : '',
  ]
    .filter(Boolean)
    .join(', ');
  if (r.cancelled) {
    return `Cancelled after ${fmt(r.now_ms / 1000)} s of simulated time: ${fmt(done)} of the ${fmt(n)} requests that had arrived completed; the figures cover those.${failed ? ` ${failed}.` : ''}`;
  }
  if (done === 0) return `No request completed: ${failed || `0 of ${fmt(n)}`}.${why}`;
  if (done < n) return `${fmt(done)} of ${fmt(n)} requests completed; the figures cover those (${failed}).${why}`;
  return null;
}

export function renderHeadline(root: HTMLElement, runs: Run[]): void {
  root.replaceChildren();
  const cur = runs.at(-1);
  if (!cur) return;
  const base = runs.length > 1 ? runs[0] : null;
  const note = coverage(cur.result);
  const none = (cur.result.summary.completed_requests ?? 0) === 0;
  if (note) {
    const p = document.createElement('p');
    p.className = none ? 'coverage none' : 'coverage';
    p.id = 'coverage';
    p.textContent = note;
    root.append(p);
  }
  const mech = mechanism(cur.result);
  const cards: [SummaryNumberKey, string, string, string][] = [...HEADLINE, [mech.key, mech.label, '', mech.label]];
  // With an SLA set, goodput stands next to throughput.
  if ('goodput_output_throughput_tok_s' in cur.result.summary) cards.splice(5, 0, ['goodput_output_throughput_tok_s', 'Goodput', 'tok/s', 'Goodput']);
  // With a price per GPU-hour, what a million output tokens cost.
  if ('cost_per_million_output_tokens_usd' in cur.result.summary)
    cards.push(['cost_per_million_output_tokens_usd', 'Cost per M output tokens', 'USD', 'cost_per_million_output_tokens_usd']);
  // With images, what the vision encoder cost and how often its cache saved it.
  if ('num_images' in cur.result.summary) {
    cards.push(
      ['mean_encoder_time_ms', 'Mean encoder time', 'ms', 'mean_encoder_time_ms'],
      ['encoder_cache_hit_ratio', 'Encoder cache hits', '', 'encoder_cache_hit_ratio'],
    );
  }
  for (const [key, label, unit, name] of cards) {
    const card = document.createElement('div');
    card.className = 'card';
    card.dataset.key = key;
    const value = cur.result.summary[key];
    const v = document.createElement('div');
    v.className = 'value';
    v.id = `h-${key}`;
    // With no completed request there is no latency or throughput: a dash, not "0 ms".
    const shown = none && key !== mech.key ? undefined : value;
    // Ten seconds and more read as seconds (the unrounded ms stay in data-value).
    const secs = unit === 'ms' && typeof shown === 'number' && Math.abs(shown) >= 10_000;
    v.textContent = fmt(secs ? (shown as number) / 1000 : shown);
    if (typeof shown === 'number') v.dataset.value = String(shown);
    const u = document.createElement('span');
    u.className = 'unit';
    u.textContent = shown === undefined ? '' : secs ? 's' : unit;
    v.append(u);
    const l = document.createElement('div');
    l.className = 'label';
    const explanation = explain(key) ?? TERMS[name];
    l.append(explanation ? term(label, explanation) : label);
    card.append(l, v);
    if (base) {
      const d = document.createElement('div');
      d.className = 'delta';
      d.textContent = `${base.label}: ${fmt(base.result.summary[key])} (${delta(base.result.summary[key], value)})`;
      d.dataset.verdict = verdictClass(key, base.result.summary[key], value);
      card.append(d);
    }
    root.append(card);
  }
}

function delta(a: unknown, b: unknown): string {
  if (typeof a !== 'number' || typeof b !== 'number') return '';
  if (a === b) return '=';
  if (a === 0) return 'new';
  const pct = ((b - a) / Math.abs(a)) * 100;
  return `${pct > 0 ? '+' : ''}${pct.toFixed(1)}%`;
}

/** The rows the summary leads with; the rest are behind "All metrics". */
export const KEY_METRICS: (keyof Summary)[] = [
  'num_requests',
  'completed_requests',
  'mean_ttft_ms',
  'p99_ttft_ms',
  'mean_itl_ms',
  'p99_itl_ms',
  'mean_e2e_latency_ms',
  'output_throughput_tok_s',
  'goodput_output_throughput_tok_s',
  'prefix_cache_reused_ratio',
  'num_preemptions',
  'num_retractions',
  'total_gpus',
  'cost_per_million_output_tokens_usd',
  'energy_per_output_token_j',
];

/** The summary table: every key of the report, or only `keys` (in that order, where present). */
export function renderSummary(table: HTMLTableElement, runs: Run[], keys?: (keyof Summary)[]): void {
  // The markup's <thead> and <tbody> (createTHead returns the existing head).
  const head = table.createTHead();
  const body = table.tBodies[0] ?? table.createTBody();
  head.replaceChildren();
  body.replaceChildren();
  const cur = runs.at(-1);
  if (!cur) return;
  const base = runs.length > 1 ? runs[0] : null;
  const hr = document.createElement('tr');
  hr.append(cell('th', 'key'));
  for (const run of runs) hr.append(cell('th', runs.length > 1 ? run.label : 'value', 'num'));
  if (base) hr.append(cell('th', `${cur.label} vs ${base.label}`, 'num'));
  head.append(hr);
  const all = summaryKeys(cur.result.summary);
  for (const k of keys ? keys.filter((x) => all.includes(x)) : all) {
    const tr = document.createElement('tr');
    tr.dataset.key = k;
    const key = cell('td', '', 'key');
    const why = explain(k);
    key.append(why ? term(k, why) : k);
    tr.append(key);
    for (const run of runs) {
      const v = run.result.summary[k];
      const td = cell('td', fmt(v), 'num');
      if (typeof v === 'number') td.dataset.value = String(v);
      // Each run's value against the first: better or worse, for the metrics where it is clear.
      if (base && run !== base) td.dataset.verdict = verdictClass(k, base.result.summary[k], v);
      tr.append(td);
    }
    if (base) {
      const d = cell('td', delta(base.result.summary[k], cur.result.summary[k]), 'num');
      d.dataset.verdict = verdictClass(k, base.result.summary[k], cur.result.summary[k]);
      tr.append(d);
    }
    body.append(tr);
  }
}

export function renderReasons(root: HTMLElement, reasons: Reason[], count: number, cancelled: boolean): void {
  root.replaceChildren();
  if (cancelled) {
    const p = document.createElement('p');
    p.className = 'note';
    p.textContent = 'This run was cancelled: requests that had not finished are left out of the summary.';
    root.append(p);
  }
  if (count === 0) return;
  const p = document.createElement('p');
  p.className = 'note';
  p.textContent = `${count.toLocaleString('en-US')} request(s) could not complete${count > reasons.length ? ` (the first ${reasons.length} below; the results JSON lists all)` : ''}:`;
  const ul = document.createElement('ul');
  for (const r of reasons) {
    const li = document.createElement('li');
    li.textContent = `request ${r.request} (${r.status}): ${r.reason}`;
    ul.append(li);
  }
  root.append(p, ul);
}

/** The shell command that runs the same scenario natively. */
export function cliCommand(hasTrace: boolean, traceName: string | null, profileName: string | null = null): string {
  const lines = ['# build once: cargo build --release -p servesim_cli', '# save the scenario below as scenario.json'];
  if (hasTrace) lines.push(`# put ${traceName ?? 'the trace'} next to scenario.json`);
  if (profileName) lines.push(`# put ${profileName} next to scenario.json`);
  lines.push('./target/release/servesim run scenario.json > results.json');
  return lines.join('\n');
}

export function download(name: string, text: string, type: string): void {
  const blob = new Blob([text], { type });
  const a = document.createElement('a');
  a.href = URL.createObjectURL(blob);
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
}
