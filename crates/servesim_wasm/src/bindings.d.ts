// The shapes of what the engine hands to JavaScript. wasm-bindgen copies this text into the
// package's servesim_wasm.d.ts (see `types.rs`), and the exports below name these types in
// their signatures, so `summary()` is a `Summary`, not `any`.
//
// Every function that can fail throws a plain JS `Error` (`ServesimError` below) whose
// `message` is the simulator's own: it names the scenario field (`engine.num_gpu_blockz:
// unknown field ...`) or the trace line (`trace.jsonl:3: ...`).

/** What the engine throws: an `Error` whose message names the field or the trace line. */
export type ServesimError = Error;

/** Named columns of equal length, one `Float64Array` each (`NaN` where a value is absent). */
export type Columns = Record<string, Float64Array>;

/** The per-request record columns, in the order `records()` hands them over. */
export type RecordColumnName =
  | 'arrival_ms'
  | 'input_length'
  | 'first_token_ms'
  | 'last_token_ms'
  | 'end_ms'
  | 'output_tokens'
  | 'reused_input_tokens'
  | 'admissions'
  | 'status'
  | 'worker'
  | 'ttst_ms';
/**
 * `records()`: one entry per request in each column; status 0 pending, 1 completed,
 * 2 rejected, 3 unschedulable.
 */
export type RecordColumns = Record<RecordColumnName, Float64Array>;

/** The cluster-wide time-series columns (`timeseries().cluster`). */
export type ClusterColumnName = 'requests_completed' | 'input_tok_s' | 'output_tok_s' | 'ttft_p50_ms' | 'ttft_p99_ms' | 'itl_p50_ms' | 'itl_p99_ms';
export type ClusterColumns = Record<ClusterColumnName, Float64Array>;

/**
 * One DP rank's time-series columns: running, waiting, kv_usage, prefix_hit_rate, preemptions,
 * pass_ms (mean pass duration, NaN in a window without a pass) and, in runs that encoded an
 * image, encoder_ms (the vision-encoder part of pass_ms).
 */
export interface RankSeries {
  /** The pool the rank serves in, as the harness names it. */
  pool: string;
  worker: number;
  dp_rank: number;
  columns: Columns;
}

/** `timeseries()`: every column aligned with `t_ms` (the window ends). */
export interface EngineTimeSeries {
  interval_ms: number;
  /** "engine": the harness's per-pass metrics. */
  source: string;
  t_ms: Float64Array;
  cluster: ClusterColumns;
  ranks: RankSeries[];
}

/** The statistics written for each latency measure. */
export type SummaryStat = 'mean' | 'min' | 'max' | 'median' | 'p75' | 'p90' | 'p95' | 'p99' | 'std';
export type SummaryMeasure = 'ttft_ms' | 'ttst_ms' | 'tpot_ms' | 'itl_ms' | 'e2e_latency_ms' | 'output_token_throughput_per_user';

/** The G3 store's transfers in one direction (`g3_offload.read`, `g3_offload.write`). */
export interface G3Io {
  submitted_jobs: number;
  completed_jobs: number;
  cancelled_jobs: number;
  completed_bytes: number;
  transfer_ms: number;
}

/** `g3_offload`: the disk tier's counters (a run with `engine.g3_offload`). */
export interface G3Stats {
  lookup_probes: number;
  lookup_hits: number;
  lookup_pending: number;
  read: G3Io;
  write: G3Io;
  evictions: number;
  cross_worker_read_blocks: number;
  resident_blocks: number;
  pending_blocks: number;
  /** Requests that gave up restoring from G3 (absent when none did). */
  bypassed_restores?: number;
}

/** One host pool's figures (`g2_domains`). */
export interface G2Domain {
  capacity_blocks: number;
  resident_blocks: number;
  used_blocks: number;
}

/**
 * `summary()`: Dynamo's replay-summary keys and servesim's, every one declared (a test holds
 * real summaries to this list). A figure that is not a finite number is `null`; the goodput
 * figures are there only with an SLA, `meets_slo` only with an SLO, the image figures only
 * with images, the tier counters only with offload tiers, the trajectory figures only with a
 * request-graph trace.
 */
export type Summary = {
  num_requests: number;
  completed_requests: number;
  rejected_requests: number;
  unschedulable_requests: number;
  num_preemptions: number;
  num_retractions: number;
  total_input_tokens: number;
  total_output_tokens: number;
  committed_prefill_tokens: number;
  duration_ms: number;
  request_throughput_rps: number;
  input_throughput_tok_s: number;
  output_throughput_tok_s: number;
  total_throughput_tok_s: number;
  prefill_worker_seconds: number;
  decode_worker_seconds: number;
  prefill_gpus_per_worker: number;
  decode_gpus_per_worker: number;
  gpu_hours: number;
  total_gpus: number;
  gpu_seconds: number;
  /** With `gpu_hour_usd` set: the price, what the run's GPU time cost, and per million output tokens. */
  gpu_hour_usd?: number;
  cost_usd?: number;
  cost_per_million_output_tokens_usd?: number;
  /** With every engine timed by measured kernels: the share of active time with measured power. */
  power_coverage?: number;
  /** With power_coverage at least 0.9: one GPU's mean power while computing (W), and the energy per output token (J). */
  power_w?: number;
  energy_per_output_token_j?: number;
  goodput_completed_requests?: number;
  goodput_request_throughput_rps?: number;
  goodput_output_throughput_tok_s?: number;
  processed_tokens: number;
  prefix_cache_reused_ratio: number;
  first_admission_prefix_cache_reused_ratio: number;
  num_ttft_samples: number;
  num_tpot_samples: number;
  num_e2e_latency_samples: number;
  g3_offload?: G3Stats;
  g2_domains?: G2Domain[];
  num_images?: number;
  mean_encoder_time_ms?: number;
  encoder_cache_hit_ratio?: number;
  encoder_cache_lookups?: number;
  meets_slo?: boolean;
  /** With a request-graph trace (agentic_mooncake, Dynamo's agent_context): its plays. */
  total_trajectories?: number;
  completed_trajectories?: number;
  incomplete_trajectories?: number;
  p50_trajectory_e2e_latency_ms?: number;
} & { [K in `${SummaryStat}_${SummaryMeasure}`]: number } & { [K in `${SummaryStat}_trajectory_e2e_latency_ms`]?: number };

/** A summary key whose value is a number (every key but the tier counters and `meets_slo`). */
export type SummaryNumberKey = { [K in keyof Summary]-?: Summary[K] extends number | undefined ? K : never }[keyof Summary];

/** One pool's effective figures. */
export interface PoolConfig {
  pool: string;
  workers: number;
  dp_size: number;
  tensor_parallel_size: number;
  gpus_per_worker: number;
  gpus: number;
  backend: string;
  block_size: number;
  /** KV blocks per DP rank. */
  num_gpu_blocks: number;
  kv_tokens_per_rank: number;
  kv_bytes_per_token: number | null;
  kv_gib_per_rank: number | null;
  timing: {
    type: string;
    model?: string;
    gpu?: string;
    tp?: number;
    params_billion?: number;
    weight_gb?: number;
    weight_gb_per_gpu?: number;
    prefill_ms?: number;
    decode_ms?: number;
    /** Measured kernels (`ais`): where the timing comes from, `measured kernels: SYSTEM · BACKEND VERSION`. */
    source?: string;
    architecture?: string;
    system?: string;
    backend?: string;
    backend_version?: string;
    pp?: number;
    gemm_quant_mode?: string;
    kvcache_quant_mode?: string;
    fmha_quant_mode?: string;
    weight_gib_per_gpu?: number;
    board_power_w?: number | null;
  };
  /** Measured kernels with `num_gpu_blocks` unset: the memory model's arithmetic of one rank's pool. */
  kv_pool?: KvPoolArithmetic;
}

/** One rank's KV pool by AIConfigurator's memory model, in bytes. */
export interface KvPoolArithmetic {
  gpu_memory_bytes: number;
  fraction: number;
  /** `of_total` (vLLM, SGLang: the fraction of the GPU's memory) or `of_free` (TRT-LLM: of what the rest leaves). */
  fraction_of: 'of_total' | 'of_free';
  weights_bytes: number;
  activations_bytes: number;
  nccl_bytes: number;
  other_bytes: number;
  kv_budget_bytes: number;
  kv_bytes_per_token: number;
  kv_tokens: number;
}

/** `kernelCatalog()`, parsed: the measured-kernel data the loaded index lists. */
export interface KernelCatalog {
  package: string | null;
  package_version: string | null;
  sets: {
    system: string;
    backend: string;
    version: string;
    file: string;
    bytes: number;
    gpu_memory_bytes?: number;
    power_w?: number;
    sm_version?: number;
    loaded: boolean;
  }[];
  /** GPU → framework → versions, newest first. */
  systems: Record<string, Record<string, string[]>>;
  /** The bundled model configs, read as the timing model reads them (or why not). */
  models: {
    name: string;
    architecture?: string;
    layers?: number;
    hidden_size?: number;
    heads?: number;
    kv_heads?: number;
    head_size?: number;
    intermediate_size?: number;
    vocab_size?: number;
    max_position_embeddings?: number;
    gemm_quant_mode?: string | null;
    kvcache_quant_mode?: string | null;
    error?: string;
  }[];
}

/** What a scenario runs with: `servesim run`'s `config`. */
export interface EffectiveConfig {
  total_gpus: number;
  pools: PoolConfig[];
  /** Settings that change nothing in this combination, with the reason. */
  no_effect: { field: string; reason: string }[];
}

/** A CDF: x values (ms, ascending) and their percentiles (0–100]. */
export type Cdf = [number[], number[]];
export interface LatencyCdfs {
  ttft: Cdf;
  tpot: Cdf;
  e2e: Cdf;
}

/** Why a request could not complete. */
export interface Reason {
  /** The request's index in the workload. */
  request: number;
  status: 'pending' | 'completed' | 'rejected' | 'unschedulable';
  reason: string;
}

/** `inspectScenario()`, parsed: the scenario as the engine reads it and what it would run with. */
export interface Inspected {
  scenario: Record<string, unknown>;
  config: EffectiveConfig;
}

/** `presets()`, parsed: the roofline's model and GPU presets with their figures. */
export interface Presets {
  models: { id: string; spec: Record<string, unknown>; params_billion: number; kv_bytes_per_token: Record<string, number> }[];
  gpus: { id: string; spec: { bf16_tflops: number; fp8_tflops: number | null; hbm_gb_per_s: number; hbm_gb: number } }[];
  kv_dtypes: string[];
  weight_dtypes: string[];
}

/** Workers of a pool by state: [active, starting, draining] ids. */
export type Topology = [number[], number[], number[]];

/** `servesim run`'s `planner`: ticks, scaling events and lifecycle operations. */
export interface PlannerRecord {
  total_ticks: number;
  scaling_events: { at_s: number; component: string; from_count: number; to_count: number; reason: string }[];
  lifecycle: {
    at_ms: number;
    pool: string;
    cause: string;
    planner_tick_ordinal: number | null;
    transitions: [number, string][];
    state_after: { active: number[]; starting: number[]; draining: number[] };
  }[];
  ticks: {
    at_ms: number;
    prefill: Topology;
    decode: Topology;
    scale_to: { num_prefill: number | null; num_decode: number | null } | null;
    load_decision_reason: string | null;
    decision: { target_prefill: number | null; target_decode: number | null; next_tick_ms: number };
  }[];
}

/** Prompt tokens by KV tier per time-series window (`tierSeries()`), aligned with the windows. */
export type TierSeries = Record<'gpu_hit_tokens' | 'host_hit_tokens' | 'computed_tokens' | 'host_onboard_tok_s' | 'host_onboard_requests', Float64Array>;

// ---- The event stream: the JSON lines `servesim run --events` writes and `EventRecording`
// records (docs/events.md). One type per `kind`; `ServesimEvent` is their union.

/** Where an event happened: a pool, a worker in it (ids are per pool) and its DP rank. */
export interface EventPlace {
  pool: 'aggregated' | 'prefill' | 'decode';
  worker: number;
  dp_rank: number;
}

/** A rank's KV pool by use (SGLang: pages): `in_use + idle + free` is the pool's size. */
export interface KvBlockCounts {
  /** Held by requests. */
  in_use: number;
  /** Cached and held by nobody (evictable). */
  idle: number;
  free: number;
  /** Cache-visible: the distinct blocks stored and not removed. */
  cached: number;
}

/** A request reached the router (a session turn's prompt includes its history). */
export interface ArrivedEvent {
  t_ms: number;
  kind: 'arrived';
  request: number;
  input_tokens: number;
  output_tokens: number;
}

/** The router chose a worker's rank; with the KV router, every target's cost and believed overlap. */
export interface RoutedEvent extends EventPlace {
  t_ms: number;
  kind: 'routed';
  request: number;
  /** One per target (a worker rank, in target order); the lowest wins. */
  costs?: number[];
  /** The prefix blocks the router believed each target had. */
  overlap_blocks?: number[];
}

/** A pass admitted the request (told at the pass end). */
export interface AdmittedEvent extends EventPlace {
  t_ms: number;
  kind: 'admitted';
  request: number;
  cached_tokens: number;
  readmission: boolean;
}

/** vLLM took the request's blocks to make room; it recomputes later. */
export interface PreemptedEvent extends EventPlace {
  t_ms: number;
  kind: 'preempted';
  request: number;
}

/** SGLang sent the request back to the queue under decode memory pressure. */
export interface RetractedEvent extends EventPlace {
  t_ms: number;
  kind: 'retracted';
  request: number;
}

/** Disaggregated: the prompt's KV starts moving to this decode rank, arriving `ms` later. */
export interface TransferStartEvent extends EventPlace {
  t_ms: number;
  kind: 'transfer_start';
  request: number;
  ms: number;
}

export interface TransferEndEvent extends EventPlace {
  t_ms: number;
  kind: 'transfer_end';
  request: number;
}

export interface FirstTokenEvent extends EventPlace {
  t_ms: number;
  kind: 'first_token';
  request: number;
  ttft_ms: number;
}

export interface FinishedEvent {
  t_ms: number;
  kind: 'finished';
  request: number;
  status: 'completed' | 'rejected' | 'unschedulable';
  output_tokens: number;
  /** Why a rejected or unschedulable request stopped. */
  reason?: string;
}

/**
 * Blocks became cache-visible: sequence hashes chained from `parent`. Hashes are u64s, past a
 * double's precision: `JSON.parse` reads them as (rounded) numbers, the default `Hash`; a
 * reader that keeps them exact (the page quotes them) says which type it uses.
 */
export interface StoredEvent<Hash = number> extends EventPlace {
  t_ms: number;
  kind: 'stored';
  parent: Hash | null;
  hashes: Hash[];
  /** Native offload's host tier; absent for the GPU pool. */
  tier?: 'host';
}

/** The last copy of each block was evicted. */
export interface RemovedEvent<Hash = number> extends EventPlace {
  t_ms: number;
  kind: 'removed';
  hashes: Hash[];
  tier?: 'host';
}

/**
 * A rank's KV pool block by block, as the changes since its previous `blocks` line (vLLM's
 * native pool only): `set` is `[block, hash or null, holders]` per changed block; `held` is
 * `[request, keep, blocks]` per request whose blocks changed (it now holds its first `keep`
 * blocks, then `blocks`).
 */
export interface BlocksEvent<Hash = number> extends EventPlace {
  t_ms: number;
  kind: 'blocks';
  set: [block: number, hash: Hash | null, holders: number][];
  held: [request: number, keep: number, blocks: number[]][];
}

/** A rank's pass ended: when it started, what it computed, its KV pool as it left it. */
export interface PassEvent extends EventPlace {
  t_ms: number;
  kind: 'pass';
  start_ms: number;
  duration_ms: number;
  prefill_tokens: number;
  decode_tokens: number;
  batch: number;
  waiting: number;
  blocks: KvBlockCounts;
}

/** One line of the event stream, told apart by `kind`. */
export type ServesimEvent<Hash = number> =
  | ArrivedEvent
  | RoutedEvent
  | AdmittedEvent
  | PreemptedEvent
  | RetractedEvent
  | TransferStartEvent
  | TransferEndEvent
  | FirstTokenEvent
  | FinishedEvent
  | StoredEvent<Hash>
  | RemovedEvent<Hash>
  | BlocksEvent<Hash>
  | PassEvent;

export type ServesimEventKind = ServesimEvent['kind'];
