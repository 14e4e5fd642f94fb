// The comparison of N named runs: runs pinned one after another (A, B, C, ...) next to the
// current one, each with its own settings (shown as a diff against the first), GPU count,
// colour and line dash; deltas against the first run coloured better or worse per metric;
// and the set of pinned runs as a link's `"runs"`, so a shared comparison reopens whole.

import './compare.css';
import { isObject, type Json, type JsonObject } from '../scenario/json';
import type { Run } from './charts';

/** A pinned run: its letter, its result, and the non-default fields it ran with. */
export interface Pinned {
  label: string;
  run: Run;
  scenario: JsonObject;
}

/** What a link carries per pinned run. */
export interface LinkRun {
  label: string;
  scenario: JsonObject;
}

/** The most runs a comparison holds (letters A to L; the charts stay readable). */
export const MAX_PINNED = 11;

/** Colours and dashes per run: the first pinned run is A. */
const RUN_COLORS = ['#64748b', '#d97706', '#7c3aed', '#0891b2', '#db2777', '#65a30d', '#b45309', '#4f46e5', '#0d9488', '#be123c', '#a16207'];
const RUN_DASHES = [
  [6, 4],
  [2, 3],
  [10, 3, 2, 3],
  [12, 6],
  [1, 4],
];

export function runLabel(i: number): string {
  return String.fromCharCode(65 + i);
}

/** The run as the charts draw it: pinned runs in their own colour and dash. */
export function styled(label: string, result: Run['result'], k: number | null): Run {
  if (k === null) return { label, result };
  return { label, result, baseline: true, color: RUN_COLORS[k % RUN_COLORS.length], dash: RUN_DASHES[k % RUN_DASHES.length] };
}

/**
 * Whether a larger value of a summary key is better (`higher`), worse (`lower`), or neither
 * (counts of the workload, durations, settings): deltas are coloured only where it is clear.
 */
export function better(key: string): 'higher' | 'lower' | null {
  if (/throughput|goodput|reused_ratio|per_user/.test(key)) return 'higher';
  if (/(ttft|tpot|itl|ttst|e2e_latency)_ms$/.test(key) && !key.startsWith('std_')) return 'lower';
  if (/^(rejected|unschedulable)_requests$|^num_(preemptions|retractions)$|^(total_gpus|gpu_seconds|gpu_hours)$/.test(key)) return 'lower';
  return null;
}

/** `better` / `worse` / '' for a change of `key` from `a` (the first run) to `b`. */
export function verdictClass(key: string, a: unknown, b: unknown): '' | 'better' | 'worse' {
  const dir = better(key);
  if (!dir || typeof a !== 'number' || typeof b !== 'number' || a === b || !Number.isFinite(a) || !Number.isFinite(b)) return '';
  return b > a === (dir === 'higher') ? 'better' : 'worse';
}

function flatten(v: Json | undefined, prefix: string, out: Map<string, Json>): void {
  if (isObject(v)) {
    for (const [k, x] of Object.entries(v)) flatten(x, prefix ? `${prefix}.${k}` : k, out);
  } else if (v !== undefined) out.set(prefix, v);
}

/** The settings a run changes against the first, as `path: first → this` lines. */
export function settingsDiff(first: JsonObject, other: JsonObject): string[] {
  const a = new Map<string, Json>();
  const b = new Map<string, Json>();
  flatten(first, '', a);
  flatten(other, '', b);
  const show = (v: Json | undefined) => (v === undefined ? 'not set' : JSON.stringify(v));
  const out: string[] = [];
  for (const k of new Set([...a.keys(), ...b.keys()])) {
    if (JSON.stringify(a.get(k)) !== JSON.stringify(b.get(k))) out.push(`${k}: ${show(a.get(k))} → ${show(b.get(k))}`);
  }
  return out;
}

/** A link's `"runs"`, checked for shape (the engine validates each scenario when it runs). */
export function runsFromLink(v: unknown): LinkRun[] {
  if (!Array.isArray(v) || v.length > MAX_PINNED || !v.every((r) => isObject(r) && isObject(r.scenario))) {
    throw new Error(`This link's runs are not valid: "runs" must list up to ${MAX_PINNED} objects, each with a "scenario"`);
  }
  return v.map((r, i) => ({ label: runLabel(i), scenario: (r as { scenario: JsonObject }).scenario }));
}

export interface RunRow {
  label: string;
  color: string | null;
  gpus: number | null;
  diff: string[];
  current: boolean;
}

/** The list of runs above the results: letter and colour, GPUs, what differs from the first. */
export function renderRuns(root: HTMLElement, rows: RunRow[], onRemove: (label: string) => void): void {
  root.replaceChildren();
  root.hidden = rows.length < 2;
  if (rows.length < 2) return;
  const first = rows[0]?.label ?? 'A';
  for (const r of rows) {
    const li = document.createElement('div');
    li.className = 'run-row';
    li.dataset.label = r.label;
    const swatch = document.createElement('span');
    swatch.className = 'swatch';
    swatch.style.background = r.color ?? 'var(--accent)';
    const name = document.createElement('strong');
    name.textContent = r.current ? `${r.label} (current)` : r.label;
    const gpus = document.createElement('span');
    gpus.className = 'gpus';
    gpus.textContent = r.gpus === null ? '' : `${r.gpus.toLocaleString('en-US')} GPU${r.gpus === 1 ? '' : 's'}`;
    const diff = document.createElement('span');
    diff.className = 'diff';
    diff.textContent = r.label === first ? 'the baseline' : r.diff.length ? r.diff.join('; ') : `the same settings as ${first}`;
    li.append(swatch, name, gpus, diff);
    if (!r.current) {
      const x = document.createElement('button');
      x.type = 'button';
      x.className = 'remove';
      x.textContent = '×';
      x.title = `Remove run ${r.label} from the comparison`;
      x.ariaLabel = x.title;
      x.addEventListener('click', () => onRemove(r.label));
      li.append(x);
    }
    root.append(li);
  }
}
