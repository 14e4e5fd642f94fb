// What the page's search asks, on the page's side: the question (the load, the SLO, the
// model and GPU, the ranges of the knobs) as a DynoSim recommend file (the one `servesim
// recommend` reads: the page downloads it), and the answer read back in words — the bill,
// why the binding latency is what it is, the runner-ups, the edges of the ranges. Which
// candidates exist, run, meet the SLO and rank first is the engine's (`Recommendation`).

import type { JsonObject } from '../scenario/json';
import type { Slo } from '../sweep/spec';

export type Mode = 'aggregated' | 'disaggregated';

/** An integer range, both ends included. */
export interface IntRange {
  min: number;
  max: number;
}

export interface SearchSpec {
  /** The roofline's model preset (`llama-3.1-70b`) and GPU preset (`h100`). */
  model: string;
  gpu: string;
  backend: string;
  blockSize: number;
  /** The load: requests per second, prompt and output tokens, requests per run. */
  rate: number;
  arrival: 'poisson' | 'constant';
  seed: number;
  input: number;
  output: number;
  requests: number;
  slo: Slo;
  tp: number[];
  /** The smallest TP on which the model leaves room for a KV cache. */
  minTp: number;
  workers: IntRange;
  modes: Mode[];
  prefillWorkers: IntRange;
  decodeWorkers: IntRange;
  tokenBudget: number[];
  maxSeqs: number[];
  chunked: boolean[];
  /** KV transfer bandwidth between prefill and decode workers, GB/s. */
  transferGbps: number;
  maxGpus: number;
  maxTrials: number;
}

export class SearchInputError extends Error {}

function oneOrChoices<T>(values: T[]): T | { choices: T[] } {
  return values.length === 1 ? (values[0] as T) : { choices: values };
}

function range(r: IntRange): number | { range: { min: number; max: number } } {
  return r.min === r.max ? r.min : { range: { min: r.min, max: r.max } };
}

/** The search as a DynoSim recommend document (JSON, which YAML reads as it is). */
export function recommendFile(s: SearchSpec): JsonObject {
  const timing = { type: 'roofline' };
  const kv = { block_size: s.blockSize };
  const workers: JsonObject = {};
  if (s.modes.includes('aggregated'))
    workers.aggregated = {
      parallelism: { replicas: range(s.workers), tensor: oneOrChoices(s.tp) },
      scheduler: { max_batched_tokens: oneOrChoices(s.tokenBudget), max_sequences: oneOrChoices(s.maxSeqs) },
      kv_cache: kv,
      timing,
    };
  if (s.modes.includes('disaggregated')) {
    // Prefill workers take the token budget's largest value (they do not decode: nothing
    // to protect), decode workers the max-sequences domain.
    workers.prefill = {
      parallelism: { replicas: range(s.prefillWorkers), tensor: oneOrChoices(s.tp) },
      scheduler: { max_batched_tokens: Math.max(...s.tokenBudget, 8192), max_sequences: 8 },
      kv_cache: kv,
      timing,
    };
    workers.decode = {
      parallelism: { replicas: range(s.decodeWorkers), tensor: oneOrChoices(s.tp) },
      scheduler: { max_batched_tokens: 8192, max_sequences: oneOrChoices(s.maxSeqs) },
      kv_cache: kv,
      timing,
    };
  }
  const engine: JsonObject = {
    mode: oneOrChoices(s.modes),
    model: s.model,
    hardware: s.gpu,
    backend: s.backend,
    enable_chunked_prefill: oneOrChoices(s.chunked),
    workers,
  };
  if (s.modes.includes('disaggregated'))
    engine.kv_transfer = { bytes_per_token: 'auto', bandwidth_gb_per_second: s.transferGbps, timing_mode: 'destination_missing' };
  return {
    traffic: {
      source: { type: 'synthetic', input_tokens: s.input, output_tokens: s.output },
      load: { type: s.arrival === 'constant' ? 'constant_rate' : 'poisson', requests_per_second: s.rate, seed: s.seed },
      stop: { requests: s.requests },
    },
    engine,
    evaluation: { slo: s.slo as JsonObject },
    optimization: { target: 'gpus', constraints: { max_candidate_gpus: s.maxGpus } },
    optimizer: { algorithm: 'bayesian', max_trials: s.maxTrials, seed: 42 },
  };
}

/** The file as text: a header saying what it is, then the document (JSON is YAML). */
export function recommendText(s: SearchSpec): string {
  return [
    '# servesim\'s "Find the cheapest configuration" as a DynoSim recommend file:',
    '#   servesim recommend search.yaml     (the same search, the same candidates, the same answer)',
    `${JSON.stringify(recommendFile(s), null, 2)}`,
    '',
  ].join('\n');
}

/** Integers in a list text (`4, 8`); errors name the field. */
export function parseList(name: string, text: string): number[] {
  const parts = text
    .split(/[,\s]+/)
    .map((t) => t.trim())
    .filter((t) => t !== '');
  const out = parts.map(Number);
  if (out.length === 0 || out.some((x) => !Number.isInteger(x) || x <= 0))
    throw new SearchInputError(`${name}: "${text}" is not a list of positive whole numbers (e.g. 4, 8)`);
  return [...new Set(out)].sort((a, b) => a - b);
}

/** A range text (`1..8`, or one number); errors name the field. */
export function parseRange(name: string, text: string): IntRange {
  const m = /^\s*(\d+)\s*(?:(?:\.\.|-|to)\s*(\d+))?\s*$/.exec(text);
  const min = Number(m?.[1]);
  const max = m?.[2] === undefined ? min : Number(m[2]);
  if (!m || !Number.isInteger(min) || !Number.isInteger(max) || min < 1 || max < min)
    throw new SearchInputError(`${name}: "${text}" is not a range of workers (e.g. 1..8)`);
  return { min, max };
}

export function rangeText(r: IntRange): string {
  return r.min === r.max ? String(r.min) : `${r.min}..${r.max}`;
}

/** A candidate's concrete configuration, read from its scenario. */
export interface Config {
  mode: Mode;
  /** Aggregated: workers × TP. Disaggregated: prefill and decode pools. */
  workers: number;
  tp: number;
  prefill?: { workers: number; tp: number };
  decode?: { workers: number; tp: number };
  tokenBudget: number;
  maxSeqs: number;
  chunked: boolean;
  gpus: number;
}

function num(v: unknown, fallback: number): number {
  return typeof v === 'number' && Number.isFinite(v) ? v : fallback;
}

export function configOf(scenario: JsonObject, gpus: number): Config {
  const engine = (scenario.engine ?? {}) as JsonObject;
  const cluster = (scenario.cluster ?? {}) as JsonObject;
  const tp = num(scenario.tensor_parallel_size, num((engine.timing_model as JsonObject | undefined)?.tp, 1));
  if (cluster.num_prefill_workers !== undefined) {
    const pe = (cluster.prefill_engine ?? {}) as JsonObject;
    const de = (cluster.decode_engine ?? {}) as JsonObject;
    return {
      mode: 'disaggregated',
      workers: num(cluster.num_prefill_workers, 1) + num(cluster.num_decode_workers, 1),
      tp: num(cluster.decode_tensor_parallel_size, tp),
      prefill: { workers: num(cluster.num_prefill_workers, 1), tp: num(cluster.prefill_tensor_parallel_size, tp) },
      decode: { workers: num(cluster.num_decode_workers, 1), tp: num(cluster.decode_tensor_parallel_size, tp) },
      tokenBudget: num(pe.max_num_batched_tokens, 8192),
      maxSeqs: num(de.max_num_seqs, 256),
      chunked: pe.enable_chunked_prefill !== false,
      gpus,
    };
  }
  return {
    mode: 'aggregated',
    workers: num(cluster.num_workers, 1),
    tp,
    tokenBudget: num(engine.max_num_batched_tokens, 8192),
    maxSeqs: num(engine.max_num_seqs, 256),
    chunked: engine.enable_chunked_prefill !== false,
    gpus,
  };
}

function plural(n: number, one: string, many = `${one}s`): string {
  return `${n.toLocaleString('en-US')} ${n === 1 ? one : many}`;
}

/** "TP 4 × 3 workers = 12 H100s, token budget 512, up to 256 sequences" */
export function bill(c: Config, gpuName: string): string {
  const gpus = `${c.gpus.toLocaleString('en-US')} ${gpuName}${c.gpus === 1 ? '' : 's'}`;
  const knobs = `, max ${plural(c.maxSeqs, 'sequence')} per worker${c.chunked ? '' : ', chunked prefill off'}`;
  if (c.mode === 'disaggregated' && c.prefill && c.decode)
    return `disaggregated: ${plural(c.prefill.workers, 'prefill worker')} × TP ${c.prefill.tp} + ${plural(c.decode.workers, 'decode worker')} × TP ${c.decode.tp} = ${gpus}${knobs}`;
  return `TP ${c.tp} × ${plural(c.workers, 'worker')} = ${gpus}, token budget ${c.tokenBudget.toLocaleString('en-US')} per pass${knobs}`;
}

function ms(v: number | undefined): string {
  if (v === undefined || !Number.isFinite(v)) return '—';
  return v >= 1000 ? `${+(v / 1000).toPrecision(3)} s` : `${+v.toPrecision(3)} ms`;
}

/**
 * Where the run's p99 ITL comes from. In an aggregated engine a decode token waits for its
 * whole pass, and only a pass that also prefills is much slower than a decode-only pass: a
 * p99 far above the median means the slow tail is those shared passes (the token budget caps
 * the prefill work in one). Disaggregated decode workers never prefill.
 */
export function itlReason(c: Config, s: Record<string, number>): string {
  const p99 = s.p99_itl_ms;
  const p50 = s.median_itl_ms;
  if (p99 === undefined || p50 === undefined || !Number.isFinite(p99)) return '';
  if (c.mode === 'disaggregated') return `p99 ITL ${ms(p99)} comes from decode batches alone (decode workers never prefill; median ${ms(p50)})`;
  if (p99 >= 2 * p50)
    return `p99 ITL ${ms(p99)} comes from decode passes that share with prefills (median ${ms(p50)}; the token budget of ${c.tokenBudget.toLocaleString('en-US')} caps the prefill work in one pass)`;
  return `p99 ITL ${ms(p99)} is close to the median (${ms(p50)}): decode passes dominate`;
}

/** The SLO's figures of a summary, in words. */
export function figures(slo: Slo, s: Record<string, number>): string {
  const names: [keyof Slo, string][] = [
    ['p99_ttft_ms', 'p99 TTFT'],
    ['p99_itl_ms', 'p99 ITL'],
    ['p99_tpot_ms', 'p99 TPOT'],
    ['p99_e2e_latency_ms', 'p99 E2E'],
  ];
  return names
    .filter(([k]) => slo[k] !== undefined)
    .map(([k, name]) => `${name} ${ms(s[k])} (≤ ${ms(slo[k])})`)
    .join(', ');
}

/** A knob of the search whose answer sits at an end of its range, and how to extend it. */
export interface Edge {
  knob: 'workers' | 'tp' | 'tokenBudget' | 'maxSeqs' | 'prefillWorkers' | 'decodeWorkers';
  text: string;
}

/** Which end of a list a value sits at; lists of two are a choice between two, not a range. */
function atEnds(v: number, values: number[]): 'low' | 'high' | null {
  if (values.length < 3) return null;
  if (v <= Math.min(...values)) return 'low';
  if (v >= Math.max(...values)) return 'high';
  return null;
}

/**
 * The knobs at an end of their range in the answer, where a wider range could hold a cheaper
 * configuration: more workers of a smaller TP, a smaller or larger token budget or sequence
 * limit. One worker is a floor, not an edge. With no answer, the worker counts' tops are.
 */
export function edges(spec: SearchSpec, c: Config | null): Edge[] {
  const out: Edge[] = [];
  if (!c) {
    if (spec.modes.includes('aggregated')) out.push({ knob: 'workers', text: `nothing up to ${spec.workers.max} workers meets the SLO` });
    if (spec.modes.includes('disaggregated')) out.push({ knob: 'decodeWorkers', text: `nothing up to ${spec.decodeWorkers.max} decode workers meets the SLO` });
    return out;
  }
  if (c.mode === 'aggregated') {
    if (c.workers >= spec.workers.max && spec.workers.max > spec.workers.min)
      out.push({ knob: 'workers', text: `${c.workers} workers is the top of the range ${rangeText(spec.workers)}` });
  } else {
    if (c.prefill && c.prefill.workers >= spec.prefillWorkers.max && spec.prefillWorkers.max > spec.prefillWorkers.min)
      out.push({ knob: 'prefillWorkers', text: `${c.prefill.workers} prefill workers is the top of the range ${rangeText(spec.prefillWorkers)}` });
    if (c.decode && c.decode.workers >= spec.decodeWorkers.max && spec.decodeWorkers.max > spec.decodeWorkers.min)
      out.push({ knob: 'decodeWorkers', text: `${c.decode.workers} decode workers is the top of the range ${rangeText(spec.decodeWorkers)}` });
  }
  const tpEnd = spec.tp.length >= 2 && c.tp <= Math.min(...spec.tp) ? 'low' : atEnds(c.tp, spec.tp);
  // A smaller TP is worth a look only if the model fits on it.
  if (tpEnd === 'low' && c.tp / 2 >= spec.minTp) out.push({ knob: 'tp', text: `TP ${c.tp} is the smallest TP searched` });
  if (tpEnd === 'high') out.push({ knob: 'tp', text: `TP ${c.tp} is the largest TP searched` });
  if (c.mode === 'aggregated') {
    const b = atEnds(c.tokenBudget, spec.tokenBudget);
    if (b) out.push({ knob: 'tokenBudget', text: `a token budget of ${c.tokenBudget} is the ${b === 'low' ? 'smallest' : 'largest'} searched` });
  }
  const q = atEnds(c.maxSeqs, spec.maxSeqs);
  if (q) out.push({ knob: 'maxSeqs', text: `max ${c.maxSeqs} sequences is the ${q === 'low' ? 'smallest' : 'largest'} searched` });
  return out;
}

function withValue(values: number[], v: number): number[] {
  return [...new Set([...values, v])].sort((a, b) => a - b);
}

/** The spec with each edge's range extended one step past the answer. */
export function extend(spec: SearchSpec, found: Edge[], c: Config | null): SearchSpec {
  const s: SearchSpec = structuredClone(spec);
  for (const e of found) {
    switch (e.knob) {
      case 'workers':
        s.workers = { min: s.workers.min, max: s.workers.max * 2 };
        break;
      case 'prefillWorkers':
        s.prefillWorkers = { min: s.prefillWorkers.min, max: s.prefillWorkers.max * 2 };
        break;
      case 'decodeWorkers':
        s.decodeWorkers = { min: s.decodeWorkers.min, max: s.decodeWorkers.max * 2 };
        break;
      case 'tp': {
        const v = c?.tp ?? 1;
        s.tp = withValue(s.tp, v <= Math.min(...s.tp) ? Math.max(s.minTp, v / 2) : v * 2);
        break;
      }
      case 'tokenBudget': {
        const v = c?.tokenBudget ?? 8192;
        s.tokenBudget = withValue(s.tokenBudget, v <= Math.min(...s.tokenBudget) ? Math.max(16, v / 2) : v * 2);
        break;
      }
      case 'maxSeqs': {
        const v = c?.maxSeqs ?? 256;
        s.maxSeqs = withValue(s.maxSeqs, v <= Math.min(...s.maxSeqs) ? Math.max(1, v / 2) : v * 2);
        break;
      }
    }
  }
  // More candidates need more GPUs allowed, too.
  s.maxGpus = Math.max(s.maxGpus, maxGpusOf(s));
  return s;
}

/** The most GPUs any candidate of the spec can use. */
export function maxGpusOf(s: SearchSpec): number {
  const tp = Math.max(...s.tp);
  const agg = s.modes.includes('aggregated') ? s.workers.max * tp : 0;
  const dis = s.modes.includes('disaggregated') ? (s.prefillWorkers.max + s.decodeWorkers.max) * tp : 0;
  return Math.max(agg, dis);
}

/**
 * A short run's verdict on steady state: the first half of the requests alone against the
 * whole run (for a 50/50 mixture, when the first half's p99 equals the whole's, so does the
 * second half's). Figures off by more than 10 %, or a different SLO verdict, mean the run is
 * too short. Returns the disagreement in words, or null.
 */
export function unsteady(
  slo: Slo,
  whole: Record<string, number>,
  half: Record<string, number> | { stopped: string },
  meetsWhole: boolean,
  meetsHalf: boolean,
): string | null {
  if ('stopped' in half) return `the first half alone cannot meet the SLO while the whole run does (${half.stopped})`;
  const keys = (['p99_ttft_ms', 'p99_itl_ms', 'p99_tpot_ms', 'p99_e2e_latency_ms'] as const).filter((k) => slo[k] !== undefined);
  const names: Record<string, string> = { p99_ttft_ms: 'p99 TTFT', p99_itl_ms: 'p99 ITL', p99_tpot_ms: 'p99 TPOT', p99_e2e_latency_ms: 'p99 E2E' };
  const off = keys.filter((k) => {
    const a = whole[k];
    const b = half[k];
    if (a === undefined || b === undefined) return false;
    return Math.abs(a - b) > 0.1 * Math.max(Math.abs(a), Math.abs(b)) && Math.abs(a - b) > 1;
  });
  if (off.length === 0 && meetsWhole === meetsHalf) return null;
  const parts = off.map((k) => `${names[k]} ${ms(half[k])} in the first half against ${ms(whole[k])} over the whole run`);
  if (meetsWhole !== meetsHalf)
    parts.push(meetsHalf ? 'the first half meets the SLO, the whole run does not' : 'the whole run meets the SLO, its first half does not');
  return parts.join('; ');
}

/** A candidate's searched values in words, from its `set` (DynoSim paths), for one that did not run. */
export function setWords(set: Record<string, unknown>): string {
  const out: string[] = [];
  for (const [path, v] of Object.entries(set)) {
    const role = /workers\.(aggregated|prefill|decode)\./.exec(path)?.[1];
    const who = role === 'prefill' ? 'prefill ' : role === 'decode' ? 'decode ' : '';
    if (path.endsWith('parallelism.replicas')) out.push(`${String(v)} ${who}worker${v === 1 ? '' : 's'}`);
    else if (path.endsWith('parallelism.tensor')) out.push(`${who}TP ${String(v)}`);
    else if (path.endsWith('scheduler.max_batched_tokens')) out.push(`token budget ${String(v)}`);
    else if (path.endsWith('scheduler.max_sequences')) out.push(`max ${String(v)} sequences`);
    else if (path === 'engine.enable_chunked_prefill') out.push(`chunked prefill ${v ? 'on' : 'off'}`);
    else if (path === 'engine.mode') out.push(String(v));
    else out.push(`${path} = ${JSON.stringify(v)}`);
  }
  return out.join(', ');
}
