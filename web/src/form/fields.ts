// The configuration form's fields: where each lives in the scenario, its unit, its range.
// These checks only flag obviously bad input while typing; the engine's validation (run in
// the worker) is the authority and its message is shown as well.

import type { Json, JsonObject } from '../scenario/json';
import { getPath, setPath } from '../scenario/json';

export type Kind = 'int' | 'float' | 'bool' | 'enum' | 'text';

export interface Field {
  path: string;
  label: string;
  kind: Kind;
  unit?: string;
  help?: string;
  min?: number;
  max?: number;
  /** The value must be strictly greater than `min`. */
  minExclusive?: boolean;
  /** An empty input means `null`; this says what null means ("unbounded"). */
  nullable?: string;
  options?: { value: string; label: string }[];
  /** Shown when the engine's defaults do not have the field (a feature still to land). */
  fallback?: Json;
  when?: (s: JsonObject) => boolean;
  /** Absent from the defaults without being unknown to the engine (an optional object's key). */
  optional?: boolean;
  /** A field that is not one path of the scenario (a switch that adds or removes an object). */
  get?: (s: JsonObject) => Json | undefined;
  set?: (s: JsonObject, v: Json) => void;
  /** A seed: a button beside it draws a fresh one (from the engine's random source). */
  reseed?: boolean;
  /** Shown under the section's "More settings" (collapsed until opened or used). */
  advanced?: boolean;
}

/** What a custom editor in a section (a list) gets from the form. */
export interface WidgetContext {
  scenario: () => JsonObject;
  /** Call after changing the scenario. */
  changed: () => void;
  /** Marks (or clears, with null) an input as invalid, naming the field in the page's message. */
  flag: (row: HTMLElement, input: HTMLElement, key: string, error: string | null) => void;
}

/** Builds its rows into the section's body; returns what to run when the form refreshes. */
export type Widget = (body: HTMLElement, ctx: WidgetContext) => () => void;

export interface Section {
  id: string;
  title: string;
  fields: Field[];
  widgets?: Widget[];
  /** Closed until opened, or until the scenario sets one of its fields. */
  collapsed?: boolean;
}

const opts = (...values: [string, string][]) => values.map(([value, label]) => ({ value, label }));
const synthetic = (s: JsonObject) => getPath(s, 'workload.type') === 'synthetic';
const trace = (s: JsonObject) => getPath(s, 'workload.type') === 'trace';
const sglang = (s: JsonObject) => getPath(s, 'engine.backend') === 'sglang';
const timing = (t: string) => (s: JsonObject) => getPath(s, 'engine.timing_model.type') === t;
const kvRouter = (s: JsonObject) => getPath(s, 'cluster.router_mode') === 'kv_router';
const disagg = (s: JsonObject) => Number(getPath(s, 'cluster.num_prefill_workers') ?? 0) > 0 || Number(getPath(s, 'cluster.num_decode_workers') ?? 0) > 0;

export const ENGINE: Section = {
  id: 'engine',
  title: 'Engine',
  fields: [
    { path: 'engine.backend', label: 'Scheduler', kind: 'enum', options: opts(['vllm', 'vLLM'], ['sglang', 'SGLang'], ['trtllm', 'TRT-LLM']) },
    {
      path: 'engine.num_gpu_blocks',
      label: 'KV blocks per rank',
      kind: 'int',
      unit: 'blocks',
      min: 1,
      max: 100_000_000,
      nullable: 'automatic',
      help: "Empty: Dynamo's 16,384, or with the roofline or measured kernels what fits in GPU memory",
    },
    {
      path: 'engine.block_size',
      label: 'Block size',
      kind: 'int',
      unit: 'tokens',
      min: 0,
      max: 1024,
      help: "0 = the scheduler's default (vLLM 64, SGLang 1, TRT-LLM 32)",
    },
    { path: 'engine.max_num_seqs', label: 'Max running requests', kind: 'int', unit: 'per rank', min: 1, nullable: 'unbounded' },
    { path: 'engine.max_num_batched_tokens', label: 'Token budget per pass', kind: 'int', unit: 'tokens', min: 1, nullable: 'unbounded' },
    { path: 'engine.enable_chunked_prefill', advanced: true, label: 'Chunked prefill', kind: 'bool' },
    { path: 'engine.enable_prefix_caching', advanced: true, label: 'Prefix caching', kind: 'bool' },
    {
      path: 'engine.preemption_mode',
      advanced: true,
      label: 'Preemption victim',
      kind: 'enum',
      options: opts(['lifo', 'LIFO: newest running'], ['fifo', 'FIFO: oldest running']),
    },
    {
      path: 'engine.kv_manager',
      advanced: true,
      label: 'KV block manager',
      kind: 'enum',
      options: opts(['native', 'native (vLLM block pool)'], ['kvbm', 'kvbm (logical, pluggable eviction)']),
      fallback: 'native',
      when: (s) => !sglang(s),
    },
    {
      path: 'engine.eviction_backend',
      advanced: true,
      label: 'Eviction backend',
      kind: 'enum',
      options: opts(['lineage', 'lineage (leaves first)'], ['lru', 'LRU'], ['multi_lru', 'multi-LRU + TinyLFU']),
      fallback: 'lineage',
      help: 'Which cached block the kvbm manager evicts first when the pool is full',
      when: (s) => !sglang(s) && getPath(s, 'engine.kv_manager') === 'kvbm',
    },
    { path: 'engine.max_model_len', advanced: true, label: 'Max model length', kind: 'int', unit: 'tokens', min: 1, nullable: 'none', when: (s) => !sglang(s) },
    {
      path: 'engine.speedup_ratio',
      advanced: true,
      label: 'Speed-up ratio',
      kind: 'float',
      unit: '×',
      min: 0,
      minExclusive: true,
      help: 'Divides every modelled duration',
    },
    {
      path: 'engine.decode_speedup_ratio',
      advanced: true,
      label: 'Decode speed-up',
      kind: 'float',
      unit: '×',
      min: 0,
      minExclusive: true,
      help: 'Extra divisor for decode (speculative decoding)',
    },
    {
      path: 'engine.sglang.schedule_policy',
      label: 'SGLang policy',
      kind: 'enum',
      options: opts(['fifo', 'FIFO'], ['lpm', 'longest prefix match']),
      fallback: 'fifo',
      when: sglang,
    },
    { path: 'engine.sglang.chunked_prefill_size', label: 'SGLang chunk size', kind: 'int', unit: 'tokens', min: 1, fallback: 8192, when: sglang },
    { path: 'engine.sglang.max_prefill_tokens', label: 'SGLang max prefill', kind: 'int', unit: 'tokens', min: 1, fallback: 16384, when: sglang },
  ],
};

/** The scenario's name and its seeds (the same seeds give the same run, bit for bit). */
export const SCENARIO: Section = {
  id: 'scenario',
  title: 'Name and seeds',
  collapsed: true,
  fields: [
    { path: 'name', label: 'Name', kind: 'text', max: 120, nullable: 'untitled', optional: true, help: 'Shown as the title of the embed view' },
    { path: 'seed', label: 'Seed', kind: 'int', min: 0, max: Number.MAX_SAFE_INTEGER, help: 'Seeds routing ties and sampling', reseed: true },
    { path: 'workload.seed', label: 'Workload seed', kind: 'int', min: 0, max: Number.MAX_SAFE_INTEGER, when: synthetic, reseed: true },
  ],
};

export const CLUSTER: Section = {
  id: 'cluster',
  title: 'Cluster',
  fields: [
    {
      path: 'cluster.num_workers',
      label: 'Workers',
      kind: 'int',
      min: 1,
      max: 4096,
      help: 'Aggregated workers (prefill and decode on each); unused when both pools below are set',
    },
    {
      path: 'cluster.router_mode',
      label: 'Router',
      kind: 'enum',
      options: opts(['round_robin', 'round robin'], ['random', 'random'], ['kv_router', 'KV-aware']),
    },
    {
      path: 'cluster.router_config.overlap_score_credit',
      label: 'Overlap credit',
      kind: 'float',
      min: 0,
      fallback: 1,
      when: kvRouter,
      help: "Weight of cached-prefix overlap in the KV router's cost",
    },
    {
      path: 'cluster.router_config.router_temperature',
      label: 'Router temperature',
      kind: 'float',
      min: 0,
      fallback: 0,
      when: kvRouter,
      help: '0 = lowest cost; > 0 = softmax sampling',
    },
    {
      path: 'gpu_hour_usd',
      label: 'Price per GPU-hour',
      kind: 'float',
      unit: 'USD',
      min: 0,
      nullable: 'not set',
      fallback: null,
      optional: true,
      help: 'Your price: the results add the cost per million output tokens (servesim knows no prices)',
    },
    { path: 'dp_size', advanced: true, label: 'DP ranks per worker', kind: 'int', min: 1, max: 1024 },
    {
      path: 'cluster.num_prefill_workers',
      advanced: true,
      label: 'Prefill workers',
      kind: 'int',
      min: 0,
      max: 4096,
      fallback: 0,
      help: 'Disaggregated serving when both pools are > 0',
    },
    { path: 'cluster.num_decode_workers', advanced: true, label: 'Decode workers', kind: 'int', min: 0, max: 4096, fallback: 0 },
    {
      path: 'engine.kv_transfer_bandwidth',
      advanced: true,
      label: 'KV transfer bandwidth',
      kind: 'float',
      unit: 'GB/s',
      min: 0,
      nullable: 'none',
      help: 'Prefill → decode; 0 or empty = no delay',
    },
    {
      path: 'engine.kv_transfer_timing_mode',
      advanced: true,
      label: 'Transfer charged for',
      kind: 'enum',
      options: opts(['full_prompt', 'the whole prompt'], ['destination_missing', 'blocks missing at the decode side']),
      when: disagg,
    },
  ],
};

export const WORKLOAD: Section = {
  id: 'workload',
  title: 'Workload',
  fields: [
    { path: 'workload.num_requests', label: 'Requests', kind: 'int', min: 1, max: 2_000_000, when: synthetic },
    {
      path: 'workload.arrival',
      advanced: true,
      label: 'Arrivals',
      kind: 'enum',
      options: opts(['poisson', 'Poisson'], ['constant', 'constant rate'], ['gamma', 'gamma (burstiness)'], ['burst', 'all at t = 0']),
      when: synthetic,
    },
    {
      path: 'workload.rate_rps',
      label: 'Rate',
      kind: 'float',
      unit: 'req/s',
      min: 0,
      minExclusive: true,
      when: (s) => synthetic(s) && getPath(s, 'workload.arrival') !== 'burst',
    },
    {
      path: 'workload.smoothness',
      advanced: true,
      label: 'Gamma shape',
      kind: 'float',
      min: 0,
      minExclusive: true,
      help: '< 1 is burstier than Poisson',
      when: (s) => synthetic(s) && getPath(s, 'workload.arrival') === 'gamma',
    },
    { path: 'workload.input_tokens.mean', label: 'Prompt length, mean', kind: 'float', unit: 'tokens', min: 1, max: 1e6, when: synthetic },
    { path: 'workload.input_tokens.stddev', advanced: true, label: 'Prompt length, std dev', kind: 'float', unit: 'tokens', min: 0, when: synthetic },
    { path: 'workload.output_tokens.mean', label: 'Output length, mean', kind: 'float', unit: 'tokens', min: 1, max: 1e6, when: synthetic },
    { path: 'workload.output_tokens.stddev', advanced: true, label: 'Output length, std dev', kind: 'float', unit: 'tokens', min: 0, when: synthetic },
    {
      path: 'workload.num_prefix_groups',
      advanced: true,
      label: 'Shared-prefix groups',
      kind: 'int',
      min: 0,
      max: 1_000_000,
      when: synthetic,
      help: '0 = no shared prefixes',
    },
    { path: 'workload.shared_prefix_ratio', advanced: true, label: 'Shared fraction of prompt', kind: 'float', min: 0, max: 1, when: synthetic },
    { path: 'workload.block_tokens', advanced: true, label: 'Prefix granularity', kind: 'int', unit: 'tokens', min: 1, when: synthetic },
    {
      path: 'workload.trace_block_size',
      label: 'Trace block size',
      kind: 'int',
      unit: 'tokens',
      min: 1,
      when: trace,
      help: 'Tokens per hash id (Mooncake: 512)',
    },
    { path: 'workload.arrival_speedup_ratio', label: 'Arrival speed-up', kind: 'float', unit: '×', min: 0, minExclusive: true, when: trace },
  ],
};

const images = (s: JsonObject) => synthetic(s) && Number(getPath(s, 'workload.images.per_request') ?? 0) > 0;
const notRoofline = (s: JsonObject) => getPath(s, 'engine.timing_model.type') !== 'roofline';

/**
 * Images in a synthetic workload (`workload.images`, vLLM only) and the encoder's settings.
 * Zero images per request removes the object, so text-only scenarios and their links are
 * unchanged; one or more writes it whole (its two required keys).
 */
export const IMAGES: Section = {
  id: 'workload',
  title: 'Workload',
  fields: [
    {
      advanced: true,
      path: 'workload.images.per_request',
      label: 'Images per request',
      kind: 'int',
      min: 0,
      max: 64,
      fallback: 0,
      help: 'vLLM only: each image runs through the vision encoder before its tokens are prefilled (the roofline needs a vision model, e.g. Qwen2.5-VL 7B)',
      when: synthetic,
      get: (s) => getPath(s, 'workload.images.per_request') ?? 0,
      set: (s, v) => {
        if (!Number(v)) {
          setPath(s, 'workload.images', undefined);
          return;
        }
        setPath(s, 'workload.images.per_request', v);
        if (getPath(s, 'workload.images.tokens_per_image') === undefined) setPath(s, 'workload.images.tokens_per_image', 576);
      },
    },
    {
      advanced: true,
      path: 'workload.images.tokens_per_image',
      label: 'Tokens per image',
      kind: 'int',
      unit: 'tokens',
      min: 1,
      max: 1_000_000,
      optional: true,
      help: 'Image tokens in the prompt, added to its text (576: a 336 px LLaVA-1.5 image)',
      when: images,
    },
    {
      advanced: true,
      path: 'workload.images.distinct',
      label: 'Distinct images',
      kind: 'int',
      min: 0,
      max: 1_000_000_000,
      fallback: 0,
      optional: true,
      help: '0: every image unique; n: drawn from n images, so repeats can skip the encoder',
      when: images,
    },
    {
      advanced: true,
      path: 'engine.max_num_encoder_input_tokens',
      label: 'Encoder budget per pass',
      kind: 'int',
      unit: 'tokens',
      min: 1,
      nullable: 'the token budget',
      fallback: null,
      optional: true,
      when: images,
    },
    {
      advanced: true,
      path: 'engine.encoder_cache_size',
      label: 'Encoder cache',
      kind: 'int',
      unit: 'tokens',
      min: 1,
      nullable: 'the encoder budget',
      fallback: null,
      optional: true,
      help: 'Encoder outputs kept until their request has prefilled them, and after while there is room',
      when: images,
    },
    {
      advanced: true,
      path: 'engine.encoder_ms_per_token',
      label: 'Encoder time',
      kind: 'float',
      unit: 'ms/token',
      min: 0,
      nullable: '0.01',
      fallback: null,
      optional: true,
      help: 'Per image token, for timing models without a vision tower',
      when: (s) => images(s) && notRoofline(s),
    },
  ],
};

export const PERF: Section = {
  id: 'perf',
  title: 'Performance model',
  fields: [
    { path: 'engine.timing_model.prefill_ms', label: 'Prefill pass', kind: 'float', unit: 'ms', min: 0, when: timing('fixed') },
    { path: 'engine.timing_model.decode_ms', label: 'Decode pass', kind: 'float', unit: 'ms', min: 0, when: timing('fixed') },
    {
      path: 'engine.timing_model.compute_efficiency',
      label: 'Compute efficiency',
      kind: 'float',
      min: 0,
      minExclusive: true,
      max: 1,
      fallback: 0.6,
      help: 'Share of the dense peak that prefill reaches',
      when: timing('roofline'),
    },
    {
      path: 'engine.timing_model.bandwidth_efficiency',
      label: 'Bandwidth efficiency',
      kind: 'float',
      min: 0,
      minExclusive: true,
      max: 1,
      fallback: 0.8,
      help: 'Share of the memory bandwidth that decode reaches',
      when: timing('roofline'),
    },
    { path: 'engine.timing_model.overhead_ms', label: 'Overhead per pass', kind: 'float', unit: 'ms', min: 0, fallback: 2, when: timing('roofline') },
  ],
};

/** Parses an input's text for a field: the value, or why it is invalid. */
export function parseField(f: Field, raw: string | boolean): { value: Json } | { error: string } {
  if (f.kind === 'bool') return { value: Boolean(raw) };
  if (f.kind === 'text') {
    const t = String(raw).trim();
    if (t.length > (f.max ?? 200)) return { error: `at most ${f.max ?? 200} characters` };
    return { value: t === '' ? null : t };
  }
  const text = String(raw).trim();
  if (f.kind === 'enum') {
    if (f.options && !f.options.some((o) => o.value === text)) return { error: 'choose one of the listed values' };
    return { value: text };
  }
  if (text === '') {
    if (f.nullable) return { value: null };
    return { error: 'required' };
  }
  let n: number;
  if (f.kind === 'int') {
    if (!/^[+-]?\d+$/.test(text)) return { error: 'a whole number' };
    n = Number(text);
    if (!Number.isSafeInteger(n)) return { error: 'too large' };
  } else {
    n = Number(text);
    if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(text) || !Number.isFinite(n)) return { error: 'a number' };
  }
  if (f.min !== undefined && (f.minExclusive ? n <= f.min : n < f.min)) {
    return { error: f.minExclusive ? `must be more than ${f.min}` : `at least ${f.min}` };
  }
  if (f.max !== undefined && n > f.max) return { error: `at most ${f.max}` };
  return { value: n };
}

/** The text an input shows for a value. */
export function formatValue(v: Json | undefined): string {
  if (v === null || v === undefined) return '';
  return String(v);
}
