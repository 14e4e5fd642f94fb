// What a sweep is, on the page's side: the panel's text turned into a sweep file (the same
// file `servesim sweep` reads), one-click presets, and reading the points' lines back (the
// answer in words, the Pareto front, the CSV). Expansion and SLO checks are the engine's
// (`expandSweep` and each line's `meets_slo`): nothing here decides which points exist or
// which meet the objective.

import { getPath, type Json, type JsonObject } from '../scenario/json';

/** One varied field as the sweep file writes it: a list, or a range the engine expands. */
export type Vary = { field: string; values: Json[] } | { field: string; from: number; to: number; step?: number };

/** The objective, with the sweep file's (and a scenario's `slo`) names. */
export const SLO_KEYS = ['p99_ttft_ms', 'p99_itl_ms', 'p99_tpot_ms', 'p99_e2e_latency_ms', 'ttft_ms', 'itl_ms', 'e2e_ms', 'min_goodput_ratio'] as const;
export type SloKey = (typeof SLO_KEYS)[number];
export type Slo = Partial<Record<SloKey, number>>;

/** What travels in a share link next to the scenario (`"sweep"`), and in a sweep file less the base. */
export interface SweepSpec {
  vary: Vary[];
  slo?: Slo;
}

export interface SweepFile {
  version: 1;
  base: JsonObject;
  vary: Vary[];
  slo?: Slo;
}

/** A field the user gets wrong, named, for the page's message. */
export class SweepInputError extends Error {}

/** The panel's fields as text: a dotted path and its values (`1, 2, 4` or `4..10 step 2`). */
export interface AxisText {
  field: string;
  values: string;
}

function token(t: string): Json {
  if (t === 'true' || t === 'false') return t === 'true';
  if (t === 'null') return null;
  const n = Number(t);
  if (t !== '' && Number.isFinite(n)) return n;
  // A quoted or bare word is a string value (a router mode, a backend).
  return t.replace(/^"(.*)"$/, '$1');
}

/**
 * A values text as a sweep axis: `from..to` or `from..to step s` is a range (the engine
 * expands it, as the CLI does); anything else is a comma-separated list of numbers, booleans
 * or words. Errors name the field.
 */
export function parseAxis({ field, values }: AxisText): Vary {
  const f = field.trim();
  if (!/^[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)*$/.test(f)) throw new SweepInputError(`Sweep field "${field}": expected a dotted path such as cluster.num_workers`);
  const text = values.trim();
  if (text === '') throw new SweepInputError(`Sweep values for ${f}: give a list (1, 2, 4) or a range (4..10, or 4..10 step 2)`);
  const range = /^(-?[\d.eE+-]+)\s*\.\.\s*(-?[\d.eE+-]+)(?:\s+(?:step|by)\s+([\d.eE+-]+))?$/.exec(text);
  if (range) {
    const [from, to, step] = [Number(range[1]), Number(range[2]), range[3] === undefined ? undefined : Number(range[3])];
    if (![from, to, step ?? 1].every(Number.isFinite)) throw new SweepInputError(`Sweep values for ${f}: "${text}" is not a range of numbers`);
    return step === undefined ? { field: f, from, to } : { field: f, from, to, step };
  }
  const list = text
    .split(',')
    .map((t) => t.trim())
    .filter((t) => t !== '');
  if (list.length === 0) throw new SweepInputError(`Sweep values for ${f}: no values`);
  return { field: f, values: list.map(token) };
}

/** The values text of an axis (the inverse of `parseAxis`, for filling the panel from a link). */
export function axisText(v: Vary): AxisText {
  if ('values' in v) return { field: v.field, values: v.values.map((x) => (typeof x === 'string' ? x : JSON.stringify(x))).join(', ') };
  return { field: v.field, values: `${v.from}..${v.to}${v.step === undefined ? '' : ` step ${v.step}`}` };
}

/** The objective from the panel's number fields (empty ones are unset). Errors name the field. */
export function parseSlo(fields: Partial<Record<SloKey, string>>): Slo | undefined {
  const slo: Slo = {};
  for (const key of SLO_KEYS) {
    const text = (fields[key] ?? '').trim();
    if (text === '') continue;
    const n = Number(text);
    if (!Number.isFinite(n) || n <= 0) throw new SweepInputError(`SLO ${key}: "${text}" is not a positive number`);
    slo[key] = n;
  }
  return Object.keys(slo).length ? slo : undefined;
}

/** The sweep file for a base (the scenario's non-default fields) and a spec. */
export function sweepFile(base: JsonObject, spec: SweepSpec): SweepFile {
  const file: SweepFile = { version: 1, base, vary: spec.vary };
  if (spec.slo) file.slo = spec.slo;
  return file;
}

/** A link's `"sweep"`, checked for shape only (the engine validates the rest when it expands). */
export function specFromLink(v: unknown): SweepSpec {
  const bad = (why: string) => new SweepInputError(`This link's sweep is not valid: ${why}`);
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw bad('"sweep" must be an object');
  const o = v as Record<string, unknown>;
  if (!Array.isArray(o.vary) || o.vary.length === 0 || o.vary.length > 2) throw bad('"sweep.vary" must list one or two fields');
  for (const [i, a] of o.vary.entries()) {
    if (typeof a !== 'object' || a === null || typeof (a as { field?: unknown }).field !== 'string') throw bad(`sweep.vary[${i}] needs a "field"`);
  }
  if (o.slo !== undefined && (typeof o.slo !== 'object' || o.slo === null || Array.isArray(o.slo))) throw bad('"sweep.slo" must be an object');
  const spec: SweepSpec = { vary: o.vary as Vary[] };
  if (o.slo !== undefined) spec.slo = o.slo as Slo;
  return spec;
}

/** A value as a short, round number for presets. */
function nice(x: number): number {
  if (x >= 10) return Math.round(x);
  return Math.round(x * 10) / 10;
}

/**
 * The one-click load sweep: the arrival rate from a quarter to twice the scenario's (a
 * trace's arrival speed-up for a trace workload), eight points, so the knee is on the chart.
 */
export function loadPreset(scenario: JsonObject): AxisText {
  const trace = getPath(scenario, 'workload.type') === 'trace';
  const field = trace ? 'workload.arrival_speedup_ratio' : 'workload.rate_rps';
  const cur = Number(getPath(scenario, field) ?? 1) || 1;
  const values = [...new Set([0.25, 0.5, 0.75, 1, 1.25, 1.5, 1.75, 2].map((k) => nice(cur * k)))].filter((x) => x > 0);
  return { field, values: values.join(', ') };
}

/** The one-click worker-count sweep: 1 to twice the scenario's count (at least 8). */
export function workersPreset(scenario: JsonObject): AxisText {
  const cur = Number(getPath(scenario, 'cluster.num_workers') ?? 1) || 1;
  return { field: 'cluster.num_workers', values: `1..${Math.min(4096, Math.max(8, 2 * cur))}` };
}

/** One point's line as `servesim sweep` prints it (parsed), and the text itself. */
export interface PointLine {
  point: number;
  set: Record<string, Json>;
  summary: Record<string, number>;
  meets_slo?: boolean;
  /** The line's exact text (what the JSON-lines export writes). */
  text: string;
}

export function parseLine(text: string): PointLine {
  return { ...(JSON.parse(text) as Omit<PointLine, 'text'>), text };
}

/** Output tokens/s per GPU: the cost side of the Pareto chart. */
export function tokPerGpu(s: Record<string, number>): number | null {
  const gpus = s.total_gpus ?? 0;
  const tok = s.output_throughput_tok_s;
  return gpus > 0 && typeof tok === 'number' ? tok / gpus : null;
}

/** Output tokens/s a user sees (the mean over requests): the experience side. */
export function tokPerUser(s: Record<string, number>): number | null {
  const v = s.mean_output_token_throughput_per_user;
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}

/**
 * The Pareto-optimal points for maximising both tokens/s per GPU and tokens/s per user: no
 * other point is at least as good on both and better on one. Indices into `lines`, by
 * increasing tokens/s per user.
 */
export function paretoFront(lines: PointLine[]): number[] {
  const pts = lines
    .map((l, i) => ({ i, x: tokPerUser(l.summary), y: tokPerGpu(l.summary) }))
    .filter((p): p is { i: number; x: number; y: number } => p.x !== null && p.y !== null);
  return pts
    .filter((p) => !pts.some((q) => q !== p && q.x >= p.x && q.y >= p.y && (q.x > p.x || q.y > p.y)))
    .sort((a, b) => a.x - b.x || b.y - a.y)
    .map((p) => p.i);
}

function count(n: Json, one: string, many = `${one}s`): string {
  return `${typeof n === 'number' ? n.toLocaleString('en-US') : JSON.stringify(n)} ${n === 1 ? one : many}`;
}

/** Words for the fields people sweep most (any other field reads `path = value`). */
const WORDS: [RegExp, (v: Json) => string][] = [
  [/^cluster\.num_workers$/, (v) => count(v, 'worker')],
  [/^(engine\.timing_model\.tp|tensor_parallel_size)$/, (v) => `TP ${JSON.stringify(v)}`],
  [/^cluster\.num_prefill_workers$/, (v) => count(v, 'prefill worker')],
  [/^cluster\.num_decode_workers$/, (v) => count(v, 'decode worker')],
  [/^engine\.max_num_batched_tokens$/, (v) => `token budget ${typeof v === 'number' ? v.toLocaleString('en-US') : JSON.stringify(v)}`],
  [/^engine\.max_num_seqs$/, (v) => `max ${count(v, 'sequence')}`],
  [/^engine\.enable_chunked_prefill$/, (v) => `chunked prefill ${v === true ? 'on' : v === false ? 'off' : JSON.stringify(v)}`],
  [/^workload\.rate_rps$/, (v) => `${JSON.stringify(v)} req/s`],
  [/^workload\.num_requests$/, (v) => count(v, 'request')],
  [/^cluster\.router_mode$/, (v) => `router ${typeof v === 'string' ? v : JSON.stringify(v)}`],
];

/**
 * A point's values in words: "TP 4 × 14 workers, token budget 512" (TP and the worker count
 * together read as the cluster's shape); fields without words read `path = value`.
 */
export function describeSet(set: Record<string, Json>): string {
  const entries = Object.entries(set);
  const tp = entries.find(([f]) => /^(engine\.timing_model\.tp|tensor_parallel_size)$/.test(f));
  const workers = entries.find(([f]) => f === 'cluster.num_workers');
  const parts: string[] = [];
  const rest = entries.filter((e) => !(tp && workers && (e === tp || e === workers)));
  if (tp && workers) parts.push(`TP ${JSON.stringify(tp[1])} × ${count(workers[1], 'worker')}`);
  for (const [f, v] of rest) {
    const w = WORDS.find(([re]) => re.test(f));
    parts.push(w ? w[1](v) : `${f} = ${typeof v === 'string' ? v : JSON.stringify(v)}`);
  }
  return parts.join(', ');
}

function ms(v: number | undefined): string {
  if (v === undefined || !Number.isFinite(v)) return '—';
  return v >= 1000 ? `${+(v / 1000).toPrecision(3)} s` : `${+v.toPrecision(3)} ms`;
}

/** The SLO bounds a summary breaks, in words (`p99 TTFT 14.4 s > 2 s`). */
export function broken(slo: Slo | undefined, s: Record<string, number>): string[] {
  if (!slo) return [];
  const out: string[] = [];
  const done = s.completed_requests ?? 0;
  const n = s.num_requests ?? 0;
  if (done < n) out.push(`${done.toLocaleString('en-US')} of ${n.toLocaleString('en-US')} requests completed`);
  const names: [SloKey, string][] = [
    ['p99_ttft_ms', 'p99 TTFT'],
    ['p99_itl_ms', 'p99 ITL'],
    ['p99_tpot_ms', 'p99 TPOT'],
    ['p99_e2e_latency_ms', 'p99 E2E'],
  ];
  for (const [key, name] of names) {
    const bound = slo[key];
    const v = s[key];
    if (bound !== undefined && !(typeof v === 'number' && v <= bound)) out.push(`${name} ${ms(v)} > ${ms(bound)}`);
  }
  if ((slo.ttft_ms ?? slo.itl_ms ?? slo.e2e_ms) !== undefined && done > 0) {
    const good = (s.goodput_completed_requests ?? 0) / done;
    const need = slo.min_goodput_ratio ?? 0.99;
    if (good < need) out.push(`${(good * 100).toFixed(1)} % of requests within the per-request thresholds (< ${(need * 100).toFixed(1)} %)`);
  }
  return out;
}

/** The SLO's figures of a summary, in words (`p99 TTFT 838 ms`). */
function figures(slo: Slo | undefined, s: Record<string, number>): string {
  const parts: string[] = [];
  if (slo?.p99_ttft_ms !== undefined || !slo) parts.push(`p99 TTFT ${ms(s.p99_ttft_ms)}`);
  if (slo?.p99_itl_ms !== undefined) parts.push(`p99 ITL ${ms(s.p99_itl_ms)}`);
  if (slo?.p99_tpot_ms !== undefined) parts.push(`p99 TPOT ${ms(s.p99_tpot_ms)}`);
  if (slo?.p99_e2e_latency_ms !== undefined) parts.push(`p99 E2E ${ms(s.p99_e2e_latency_ms)}`);
  if (slo && (slo.ttft_ms ?? slo.itl_ms ?? slo.e2e_ms) !== undefined && s.completed_requests) {
    parts.push(`${(((s.goodput_completed_requests ?? 0) / s.completed_requests) * 100).toFixed(1)} % good`);
  }
  return parts.join(', ');
}

function gpus(s: Record<string, number>): string {
  const g = s.total_gpus;
  return typeof g === 'number' ? ` (${g.toLocaleString('en-US')} GPU${g === 1 ? '' : 's'})` : '';
}

/**
 * The sweep's answer in words, from the points' lines. When the GPU count varies across the
 * points, the answer is the configuration with the fewest GPUs that meets the SLO (ties: the
 * first in point order) and the nearest smaller one that does not; when it does not vary (a
 * load sweep), the most demanding value of the first field that still meets it. Without an
 * SLO, it says so. `index` of the point named, when one is.
 */
export function verdict(lines: PointLine[], fields: string[], slo: Slo | undefined): { text: string; point: number | null } {
  if (lines.length === 0) return { text: 'No point has finished.', point: null };
  if (!slo) return { text: 'No SLO is set: set one to have the sweep name the smallest configuration that meets it.', point: null };
  const meeting = lines.filter((l) => l.meets_slo === true);
  if (meeting.length === 0) {
    // The nearest miss: the point that breaks the fewest bounds, then the lowest p99 TTFT.
    const near = [...lines].sort(
      (a, b) => broken(slo, a.summary).length - broken(slo, b.summary).length || (a.summary.p99_ttft_ms ?? Infinity) - (b.summary.p99_ttft_ms ?? Infinity),
    )[0];
    const why = near ? ` The nearest, ${describeSet(near.set)}${gpus(near.summary)}: ${broken(slo, near.summary).join('; ')}.` : '';
    return { text: `No configuration in this sweep meets the SLO.${why}`, point: near?.point ?? null };
  }
  const gpuCounts = new Set(lines.map((l) => l.summary.total_gpus));
  if (gpuCounts.size > 1) {
    const best = [...meeting].sort((a, b) => (a.summary.total_gpus ?? 0) - (b.summary.total_gpus ?? 0) || a.point - b.point)[0] as PointLine;
    const g = best.summary.total_gpus ?? 0;
    // The largest configuration below it that misses: the evidence that it is the smallest.
    const below = lines
      .filter((l) => l.meets_slo === false && (l.summary.total_gpus ?? 0) < g)
      .sort((a, b) => (b.summary.total_gpus ?? 0) - (a.summary.total_gpus ?? 0))[0];
    const miss = below ? ` ${describeSet(below.set)}${gpus(below.summary)} does not: ${broken(slo, below.summary).join('; ')}.` : '';
    return {
      text: `The smallest configuration that meets the SLO: ${describeSet(best.set)}${gpus(best.summary)}, with ${figures(slo, best.summary)}.${miss}`,
      point: best.point,
    };
  }
  // The same hardware at every point: how far the first field can go.
  const field = fields[0] ?? '';
  const numeric = lines.every((l) => typeof l.set[field] === 'number');
  if (!numeric) {
    const names = meeting.map((l) => describeSet(l.set)).join('; ');
    return { text: `${meeting.length} of ${lines.length} points meet the SLO: ${names}.`, point: meeting[0]?.point ?? null };
  }
  const top = [...meeting].sort((a, b) => (b.set[field] as number) - (a.set[field] as number) || a.point - b.point)[0] as PointLine;
  const above = lines
    .filter((l) => l.meets_slo === false && (l.set[field] as number) > (top.set[field] as number))
    .sort((a, b) => (a.set[field] as number) - (b.set[field] as number))[0];
  const miss = above ? ` At ${describeSet(above.set)} it does not: ${broken(slo, above.summary).join('; ')}.` : '';
  return { text: `The SLO holds up to ${describeSet(top.set)}${gpus(top.summary)}, with ${figures(slo, top.summary)}.${miss}`, point: top.point };
}

/**
 * The knee of a load sweep over one numeric field: the last value at which output throughput
 * still grows in step with the load (within 10 % of proportional to the first point's
 * throughput per unit of load); beyond it the cluster is saturated and queues grow. `null`
 * when the sweep is not a load sweep or never saturates.
 */
export function knee(lines: PointLine[], field: string): { value: number; throughput: number; next: PointLine } | null {
  if (!/rate_rps$|arrival_speedup_ratio$/.test(field)) return null;
  const pts = lines
    .filter((l) => typeof l.set[field] === 'number' && typeof l.summary.output_throughput_tok_s === 'number')
    .sort((a, b) => (a.set[field] as number) - (b.set[field] as number));
  const first = pts[0];
  if (!first || pts.length < 3) return null;
  const tok = (l: PointLine) => l.summary.output_throughput_tok_s as number;
  const per = tok(first) / (first.set[field] as number);
  for (let k = 1; k < pts.length; k++) {
    const p = pts[k] as PointLine;
    if (tok(p) < 0.9 * per * (p.set[field] as number)) {
      const prev = pts[k - 1] as PointLine;
      return { value: prev.set[field] as number, throughput: tok(prev), next: p };
    }
  }
  return null;
}

function csvCell(v: unknown): string {
  const s = v === undefined || v === null ? '' : typeof v === 'string' ? v : JSON.stringify(v);
  return /[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/**
 * The sweep as CSV: one row per point, `point`, one column per varied field named by its
 * dotted path, `meets_slo`, then the summary keys by their report names (the union, in the
 * order they first appear).
 */
export function sweepCsv(lines: PointLine[], fields: string[]): string {
  const keys: string[] = [];
  const seen = new Set<string>();
  for (const l of lines)
    for (const k of Object.keys(l.summary))
      if (!seen.has(k)) {
        seen.add(k);
        keys.push(k);
      }
  const rows = [['point', ...fields, 'meets_slo', ...keys].map(csvCell).join(',')];
  for (const l of lines) rows.push([l.point, ...fields.map((f) => l.set[f]), l.meets_slo, ...keys.map((k) => l.summary[k])].map(csvCell).join(','));
  return `${rows.join('\n')}\n`;
}

/** The JSON lines, as `servesim sweep` prints them: in point order, each line and a newline. */
export function sweepJsonLines(lines: PointLine[]): string {
  return [...lines]
    .sort((a, b) => a.point - b.point)
    .map((l) => `${l.text}\n`)
    .join('');
}
