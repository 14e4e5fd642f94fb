// What an embed shows and how, read from its address: `embed.html?panels=cards,kv&theme=dark
// &run=click#v1.…`. The hash is the scenario (the playground's share link); the query holds
// only these display options, so one scenario link serves every kind of embed. Also: the
// snippet the playground's "Embed" builder hands out, and the key settings an embed states.

import type { EffectiveConfig } from '../engine/protocol';
import { fmt } from '../results/summary';
import { getPath, type JsonObject } from '../scenario/json';

/** The panels an embed can show, in page order: the headline cards, then the charts. */
export const PANELS = {
  cards: 'Key results',
  throughput: 'Throughput',
  latency: 'Latency over time',
  'dist-ttft': 'TTFT distribution',
  'dist-tpot': 'TPOT distribution',
  'dist-e2e': 'E2E distribution',
  kv: 'KV cache use',
  queue: 'Queue depth',
  hit: 'Prefix cache hit rate',
  preempt: 'Preemptions',
  pass: 'Pass time',
} as const;
export type Panel = keyof typeof PANELS;
export const PANEL_IDS = Object.keys(PANELS) as Panel[];

export type Theme = 'light' | 'dark';

export interface EmbedOptions {
  panels: Panel[];
  theme: Theme;
  /** Wait for a click before running (for heavy scenarios). */
  clickToRun: boolean;
  /**
   * Show the inspector (a live KV block map of the run) instead of the results: its moment
   * as the playground's `?inspect=T,RANK,REQUEST` gives it ('' opens at the first pass).
   */
  inspect?: string;
}

export const DEFAULT_OPTIONS: EmbedOptions = { panels: ['cards', 'throughput', 'latency'], theme: 'light', clickToRun: false };

function isPanel(p: string): p is Panel {
  return Object.hasOwn(PANELS, p);
}

/**
 * The options in an embed's query string, and what in it was not understood (the embed says
 * so; it still shows what it can).
 */
export function parseOptions(search: string): { options: EmbedOptions; problems: string[] } {
  const q = new URLSearchParams(search);
  const problems: string[] = [];
  const options: EmbedOptions = { ...DEFAULT_OPTIONS, panels: [...DEFAULT_OPTIONS.panels] };
  const panels = q.get('panels');
  if (panels !== null) {
    const names = panels.split(',').filter((p) => p !== '');
    const unknown = names.filter((p) => !isPanel(p));
    if (unknown.length) problems.push(`unknown panel ${unknown.map((p) => `“${p}”`).join(', ')} (known: ${PANEL_IDS.join(', ')})`);
    const known = PANEL_IDS.filter((p) => names.includes(p));
    if (known.length) options.panels = known;
    else problems.push('no panel to show: showing the default ones');
  }
  const theme = q.get('theme');
  if (theme === 'light' || theme === 'dark') options.theme = theme;
  else if (theme !== null) problems.push(`unknown theme “${theme}” (light or dark)`);
  const run = q.get('run');
  if (run === 'click') options.clickToRun = true;
  else if (run !== null && run !== 'auto') problems.push(`unknown run mode “${run}” (auto or click)`);
  return { options, problems };
}

/** The query string for options, leaving defaults out ('' for all defaults). */
export function optionsQuery(o: EmbedOptions): string {
  const q = new URLSearchParams();
  if (o.inspect !== undefined) {
    // The inspector view: its moment and the theme (panels and click-to-run are the results').
    q.set('inspect', o.inspect);
    if (o.theme !== DEFAULT_OPTIONS.theme) q.set('theme', o.theme);
    return `?${q.toString().replace(/%2C/g, ',').replace(/%2F/g, '/')}`;
  }
  const panels = PANEL_IDS.filter((p) => o.panels.includes(p));
  if (panels.join(',') !== DEFAULT_OPTIONS.panels.join(',')) q.set('panels', panels.join(','));
  if (o.theme !== DEFAULT_OPTIONS.theme) q.set('theme', o.theme);
  if (o.clickToRun) q.set('run', 'click');
  // Commas stay readable in the snippet.
  const s = q.toString().replace(/%2C/g, ',');
  return s ? `?${s}` : '';
}

/** The embed page's address for a scenario hash and options, beside the page at `base`. */
export function embedUrl(base: string, hash: string, o: EmbedOptions): string {
  const u = new URL('embed.html', base);
  return `${u.origin}${u.pathname}${optionsQuery(o)}${hash}`;
}

/**
 * A height that fits the panels at a width without the resizing script: the header and the
 * settings line, the cards (wrapping as the page wraps them), and the charts (one column
 * below 600 px, two above). The builder replaces it with the preview's measured height.
 */
export function estimateHeight(o: EmbedOptions, width: number): number {
  // The inspector: its controls, the block map and the cards below it (one column when narrow).
  if (o.inspect !== undefined) return width >= 900 ? 1100 : 1500;
  const inner = Math.max(200, width - 20);
  let h = 16 + 34 + 22 + 10; // padding, header, settings line, gaps
  if (o.panels.includes('cards')) {
    const perRow = Math.max(1, Math.floor((inner + 8) / (124 + 8)));
    h += Math.ceil(5 / perRow) * 68 + 12;
  }
  const charts = o.panels.filter((p) => p !== 'cards').length;
  const columns = inner >= 2 * 300 + 10 ? 2 : 1;
  h += Math.ceil(charts / columns) * 262;
  return Math.round(h);
}

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '"': '&quot;', '<': '&lt;', '>': '&gt;' };
const attr = (s: string) => s.replace(/[&"<>]/g, (c) => HTML_ESCAPES[c] ?? c);

/**
 * The snippet a docs author pastes for each embed: an iframe with a `title` (for screen
 * readers), its default size (it fits without the script) and lazy loading.
 */
export function snippet(p: { url: string; title: string; width: number; height: number }): string {
  return [
    `<iframe src="${attr(p.url)}" title="${attr(p.title)}" width="${p.width}" height="${p.height}"`,
    `  style="max-width: 100%; border: 0" loading="lazy"></iframe>`,
  ].join('\n');
}

/** The script that sizes every servesim frame of a page to its content: once per page. */
export function scriptTag(scriptUrl: string): string {
  return `<script src="${attr(scriptUrl)}" async></script>`;
}

const ROUTERS: Record<string, string> = { round_robin: 'round robin', random: 'random', kv_router: 'KV-aware router' };

/**
 * The scenario's key settings, a few short phrases (what the embed states under its title):
 * engine, pools and router, KV pool, workload. Derived figures (the KV pool) are the
 * engine's, from its effective config.
 */
export function keySettings(s: JsonObject, config: EffectiveConfig | null): string[] {
  const out: string[] = [];
  const pools = config?.pools ?? [];
  const first = pools[0];
  const backend = String(first?.backend ?? getPath(s, 'engine.backend') ?? 'vllm');
  out.push(backend === 'vllm' ? 'vLLM' : backend === 'sglang' ? 'SGLang' : backend === 'trtllm' ? 'TensorRT-LLM' : backend);
  const router = ROUTERS[String(getPath(s, 'cluster.router_mode'))] ?? String(getPath(s, 'cluster.router_mode') ?? '');
  if (pools.length > 1) {
    out.push(`${pools.map((p) => `${fmt(p.workers)} ${p.pool}`).join(' + ')} workers, ${router}`);
  } else {
    const n = first?.workers ?? Number(getPath(s, 'cluster.num_workers') ?? 1);
    out.push(n === 1 ? '1 worker' : `${fmt(n)} workers, ${router}`);
  }
  if (first) out.push(`${fmt(first.num_gpu_blocks)} KV blocks × ${fmt(first.block_size)} tokens`);
  const w = (getPath(s, 'workload') ?? {}) as JsonObject;
  if (w.type === 'trace') {
    const path = String(w.path ?? 'trace');
    out.push(`trace ${path.split('/').at(-1)}`);
  } else if (w.type === 'synthetic') {
    const mean = (k: string) => getPath(w, `${k}.mean`);
    const rate = typeof w.rate_rps === 'number' ? ` at ${fmt(w.rate_rps)} req/s` : '';
    const lengths = mean('input_tokens') !== undefined ? `, ${fmt(mean('input_tokens'))} → ${fmt(mean('output_tokens'))} tokens` : '';
    out.push(`${fmt(w.num_requests)} requests${rate}${lengths}`);
  } else if (typeof w.type === 'string') {
    out.push(`${w.type} workload`);
  }
  return out;
}
