// What every metric on the page means, in a sentence: the summary's keys (the reference
// replay's names), the headline cards, chart captions and legends. Shown on hover and on
// focus (`term`).

/** The metrics the summary's statistics are taken of. */
const METRICS: Record<string, string> = {
  ttft_ms: 'TTFT, time to first token: from a request’s arrival to its first output token (queueing plus prefill), ms',
  ttst_ms: 'TTST, time to second token: from the first output token to the second, ms',
  tpot_ms: 'TPOT, time per output token: a request’s (last token − first token) / (output tokens − 1), ms',
  itl_ms: 'ITL, inter-token latency: the gap between consecutive output tokens of a request, over all gaps, ms',
  e2e_latency_ms: 'E2E, end-to-end latency: from a request’s arrival to its last token, ms',
  output_token_throughput_per_user: 'Per-user throughput: 1000 / ITL, the output tokens per second one request sees while it decodes',
};

const STATS: Record<string, string> = {
  mean: 'Mean',
  min: 'Smallest',
  max: 'Largest',
  median: 'Median (p50)',
  p50: 'Median (p50)',
  p75: '75th percentile',
  p90: '90th percentile',
  p95: '95th percentile',
  p99: '99th percentile',
  std: 'Standard deviation',
};

/** Keys explained on their own. */
const KEYS: Record<string, string> = {
  num_requests: 'Requests in the workload (all of them, also those that did not complete)',
  completed_requests: 'Requests that received all their output tokens; the latency and throughput figures are over these',
  rejected_requests: 'Requests refused at admission or at the prefill → decode hand-off (see the reasons below the table)',
  unschedulable_requests: 'Requests that could never run (a prompt larger than the pool or the token budget); the reference aborts its replay there',
  num_preemptions:
    'Preemptions (vLLM): a running request lost its KV blocks because the pool was full, and waits to be recomputed (the preemption victim setting picks which)',
  num_retractions: 'Retractions (SGLang): a decoding request was sent back to the queue to free KV memory, and will be prefilled again',
  total_input_tokens: 'Prompt tokens of the completed requests',
  total_output_tokens: 'Output tokens of the completed requests',
  committed_prefill_tokens:
    'Committed prefill tokens: prompt tokens the engines actually computed (prefix-cache hits are not computed; recomputation after a preemption is)',
  duration_ms: 'Duration: from the first arrival to the last completion, ms of simulated time',
  request_throughput_rps: 'Request throughput: completed requests per second of the duration',
  input_throughput_tok_s: 'Input throughput: prompt tokens of completed requests per second of the duration',
  output_throughput_tok_s: 'Output throughput: output tokens per second of the duration, all requests together',
  total_throughput_tok_s: 'Total throughput: prompt plus output tokens per second of the duration',
  processed_tokens: 'Processed tokens: prompt plus output tokens of the completed requests',
  prefix_cache_reused_ratio:
    'Prefix reuse: prompt tokens found in the KV prefix cache / prompt tokens, best over each request’s admissions (a preempted request that finds its own blocks again counts)',
  first_admission_prefix_cache_reused_ratio: 'First-admission prefix reuse: as prefix reuse, but only each request’s first admission counts',
  num_ttft_samples: 'Requests with a TTFT (completed, at least one token)',
  num_tpot_samples: 'Requests with a TPOT (completed, at least two tokens)',
  num_e2e_latency_samples: 'Requests with an end-to-end latency (completed)',
  prefill_worker_seconds: 'Prefill worker-seconds: seconds of the run times prefill workers',
  decode_worker_seconds: 'Decode worker-seconds: seconds of the run times decode workers',
  prefill_gpus_per_worker: 'GPUs per prefill worker (tensor parallel × DP ranks)',
  decode_gpus_per_worker: 'GPUs per decode worker (tensor parallel × DP ranks)',
  gpu_hours: 'GPU-hours: GPUs × hours of the run',
  gpu_seconds: 'GPU-seconds: each worker’s GPUs × the seconds it was provisioned, summed',
  gpu_hour_usd: 'The price of one GPU-hour the scenario sets (USD); servesim has no prices of its own',
  cost_usd: 'Cost: GPU-hours × the price per GPU-hour (USD)',
  cost_per_million_output_tokens_usd: 'Cost per million output tokens: the run’s cost / (output tokens / 1,000,000), USD',
  power_coverage:
    'Power coverage: the share of the passes’ modelled time whose kernels have measured power; power is published from 0.9 (the reference’s gate)',
  power_w: 'Power: one GPU’s mean modelled power while it computes (energy / active time of every pass), W; not the cluster’s, no idle time',
  energy_per_output_token_j: 'Energy per output token: the passes’ modelled energy on all the engines’ GPUs / output tokens, J',
  meets_slo: 'Whether the run met every bound of the scenario’s slo (p99 latencies; the goodput thresholds count requests)',
  total_gpus: 'GPUs of the cluster as it starts (workers × GPUs per worker)',
  num_images: 'Images in the completed requests’ prompts (each runs through the vision encoder unless its output is cached)',
  mean_encoder_time_ms:
    'Mean encoder time: per request with images, the vision-encoder time of the passes that encoded its images (on its path to the first token), ms',
  encoder_cache_hit_ratio: 'Encoder cache hits: images found in the encoder cache when a request first needed them / images looked up',
  encoder_cache_lookups: 'Images looked up in the encoder cache (an image already in the request’s KV prefix is not looked up)',
};

/** A sentence explaining a summary key, or null for a key this page does not know. */
export function explain(key: string): string | null {
  if (key in KEYS) return KEYS[key] ?? null;
  if (key.includes('goodput')) return 'Goodput: the requests (or tokens) per second that met their latency targets';
  if (key.endsWith('_samples')) return 'Samples of a latency statistic';
  const m = /^(mean|min|max|median|p\d\d|std)_(.+)$/.exec(key);
  if (m) {
    const [, stat, metric] = m;
    const what = METRICS[metric ?? ''];
    const how = STATS[stat ?? ''];
    if (what && how) return `${how} of ${what}`;
  }
  return null;
}

/** The page's short metric names (cards, captions, legends). */
export const TERMS: Record<string, string> = {
  TTFT: METRICS.ttft_ms ?? '',
  TTST: METRICS.ttst_ms ?? '',
  TPOT: METRICS.tpot_ms ?? '',
  ITL: METRICS.itl_ms ?? '',
  E2E: METRICS.e2e_latency_ms ?? '',
  'Prefix reuse': KEYS.prefix_cache_reused_ratio ?? '',
  'Output throughput': KEYS.output_throughput_tok_s ?? '',
  Throughput: 'Tokens per second in each window: output tokens emitted (left axis) and prompt tokens of the requests that completed (right axis)',
  'KV cache use': 'KV cache use: the share of a rank’s KV blocks held by requests at the end of each window',
  'Queue depth': 'Queue depth: requests waiting for admission on a rank at the end of each window',
  'Prefix cache hit rate': 'Prefix cache hit rate: prompt tokens found in the cache / prompt tokens, over the admissions in each window',
  Preemptions: KEYS.num_preemptions ?? '',
  Retractions: KEYS.num_retractions ?? '',
  'Latency over time': 'TTFT and ITL percentiles of the tokens emitted in each window',
  'Pass time': 'Pass time: the mean duration of a rank’s forward passes ending in each window, ms (its timing model’s figure); dotted: the vision-encoder part',
};

let tipSeq = 0;

/**
 * `text` as a term explained on hover and focus: focusable, described by a tooltip (plain
 * text, never markup).
 */
export function term(text: string, explanation: string): HTMLElement {
  const span = document.createElement('span');
  span.className = 'term';
  span.tabIndex = 0;
  span.textContent = text;
  const tip = document.createElement('span');
  tip.className = 'tip';
  tip.setAttribute('role', 'tooltip');
  tip.id = `tip-${++tipSeq}`;
  tip.textContent = explanation;
  span.setAttribute('aria-describedby', tip.id);
  span.append(tip);
  return span;
}

/** Replaces, in `root`'s text, each glossary term marked `data-term` by an explained one. */
export function explainMarked(root: ParentNode): void {
  for (const el of root.querySelectorAll<HTMLElement>('[data-term]')) {
    const name = el.dataset.term ?? '';
    const text = TERMS[name];
    if (!text || el.querySelector('.tip')) continue;
    el.replaceWith(term(el.textContent ?? name, text));
  }
}
