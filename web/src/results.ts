// Result views that are not charts: headline cards, the summary table (the report's own
// keys), reasons for requests that could not run, and exports (CSV, CLI command).

import type { Run } from './charts';
import { entry, type Reason, type RunResult, type TimeSeries } from './protocol';

export const HEADLINE: [string, string, string][] = [
  ['mean_ttft_ms', 'Mean TTFT', 'ms'],
  ['p99_ttft_ms', 'p99 TTFT', 'ms'],
  ['mean_tpot_ms', 'Mean TPOT', 'ms'],
  ['mean_e2e_latency_ms', 'Mean E2E', 'ms'],
  ['output_throughput_tok_s', 'Output throughput', 'tok/s'],
  ['prefix_cache_reused_ratio', 'Prefix reuse', ''],
];

export function fmt(v: unknown): string {
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

export function renderHeadline(root: HTMLElement, runs: Run[]): void {
  root.replaceChildren();
  const cur = runs.at(-1);
  if (!cur) return;
  const base = runs.length > 1 ? runs[0] : null;
  for (const [key, label, unit] of HEADLINE) {
    const card = document.createElement('div');
    card.className = 'card';
    card.dataset.key = key;
    const value = cur.result.summary[key];
    const v = document.createElement('div');
    v.className = 'value';
    v.id = `h-${key}`;
    v.textContent = fmt(value);
    const u = document.createElement('span');
    u.className = 'unit';
    u.textContent = unit;
    v.append(u);
    const l = document.createElement('div');
    l.className = 'label';
    l.textContent = label;
    card.append(l, v);
    if (base) {
      const d = document.createElement('div');
      d.className = 'delta';
      d.textContent = `A: ${fmt(base.result.summary[key])} (${delta(base.result.summary[key], value)})`;
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

export function renderSummary(table: HTMLTableElement, runs: Run[]): void {
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
  if (runs.length > 1) hr.append(cell('th', 'B vs A', 'num'));
  head.append(hr);
  for (const k of Object.keys(cur.result.summary)) {
    const tr = document.createElement('tr');
    tr.dataset.key = k;
    tr.append(cell('td', k, 'key'));
    for (const run of runs) tr.append(cell('td', fmt(run.result.summary[k]), 'num'));
    if (base) tr.append(cell('td', delta(base.result.summary[k], cur.result.summary[k]), 'num'));
    body.append(tr);
  }
}

export function renderReasons(root: HTMLElement, reasons: Reason[], cancelled: boolean): void {
  root.replaceChildren();
  if (cancelled) {
    const p = document.createElement('p');
    p.className = 'note';
    p.textContent = 'This run was cancelled: requests that had not finished are left out of the summary.';
    root.append(p);
  }
  if (reasons.length === 0) return;
  const p = document.createElement('p');
  p.className = 'note';
  p.textContent = `${reasons.length} request(s) could not complete:`;
  const ul = document.createElement('ul');
  for (const r of reasons.slice(0, 50)) {
    const li = document.createElement('li');
    li.textContent = `request ${r.request} (${r.status}): ${r.reason}`;
    ul.append(li);
  }
  root.append(p, ul);
}

const STATUS = ['pending', 'completed', 'rejected', 'unschedulable'];

function csvNum(x: number): string {
  return Number.isFinite(x) ? String(x) : '';
}

/** One row per request, in trace order. */
export function recordsCsv(r: RunResult): string {
  const c = r.records;
  const lines = [
    'request,arrival_ms,input_length,output_tokens,first_token_ms,last_token_ms,end_ms,ttft_ms,e2e_ms,reused_input_tokens,readmissions,status,worker',
  ];
  for (const [i, arrival] of c.arrival_ms.entries()) {
    const first = entry(c.first_token_ms, i);
    const end = entry(c.end_ms, i);
    lines.push(
      [
        i,
        arrival,
        entry(c.input_length, i),
        entry(c.output_tokens, i),
        csvNum(first),
        csvNum(entry(c.last_token_ms, i)),
        csvNum(end),
        csvNum(first - arrival),
        csvNum(end - arrival),
        entry(c.reused_input_tokens, i),
        Math.max(0, entry(c.admissions, i) - 1),
        STATUS[entry(c.status, i)] ?? '',
        entry(c.worker, i),
      ].join(','),
    );
  }
  return `${lines.join('\n')}\n`;
}

/** Cluster columns, then each rank's columns, one row per window end. */
export function seriesCsv(s: TimeSeries): string {
  const cols: [string, Float64Array][] = [['t_ms', s.t_ms]];
  for (const [k, v] of Object.entries(s.cluster)) cols.push([k, v]);
  for (const r of s.ranks) for (const [k, v] of Object.entries(r.columns)) cols.push([`w${r.worker}_dp${r.dp_rank}_${k}`, v]);
  const lines = [cols.map(([k]) => k).join(',')];
  for (const i of s.t_ms.keys()) lines.push(cols.map(([, v]) => csvNum(entry(v, i))).join(','));
  return `${lines.join('\n')}\n`;
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
