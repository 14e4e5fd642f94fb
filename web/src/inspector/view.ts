// The inspector's pictures, drawn from a replayed state (model.ts): the block map
// of a rank, the running batch and the waiting queue as request chips, a request's timeline,
// the router's choice and the event log. Everything is rendered as text or canvas pixels,
// never as HTML from the stream.

import { el } from '../ui/dom';
import {
  type ClusterState,
  type Ev,
  type PoolBlocks,
  type RankState,
  type Replay,
  type RouterChoice,
  rankKey,
  rankLabel,
  requestOf,
  requestTimeline,
  type Segment,
} from './model';

export const COLORS = {
  free: '#e8ebef',
  one: '#4a7fd4',
  shared: '#8a3fc4',
  idle: '#3fa66b',
  evicted: '#e0533d',
  selected: '#111',
} as const;

export function fmtMs(ms: number): string {
  if (!Number.isFinite(ms)) return '–';
  return ms >= 10_000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(1)} ms`;
}

/** What a block is, for colour and the hover text. */
export type CellState = 'free' | 'one' | 'shared' | 'idle' | 'evicted';

export function cellState(rank: RankState, i: number): CellState {
  const holders = rank.holders[i] ?? 0;
  if (holders > 1) return 'shared';
  if (holders === 1) return 'one';
  if ((rank.hashes[i] ?? null) !== null) return 'idle';
  return rank.evicted.has(i) ? 'evicted' : 'free';
}

/** Cell side in CSS pixels for `n` cells across `width`, about `rows` rows high at most. */
function cellSide(n: number, width: number): number {
  const area = width * Math.min(320, Math.max(80, n / 8));
  return Math.max(3, Math.min(18, Math.floor(Math.sqrt(area / Math.max(1, n)))));
}

/**
 * The block map of one rank on a canvas: every KV block a cell, by physical block id. The
 * counts go into `data-*` attributes (what the tests read) and the legend.
 */
export class BlockMap {
  readonly root = el('div', { className: 'inspector-blockmap' });
  private canvas = el('canvas');
  private tip = el('div', { className: 'inspector-tip', hidden: true });
  private legend = el('p', { className: 'inspector-legend' });
  private rank: RankState | null = null;
  private holdersOf = new Map<number, number[]>();
  private side = 8;
  private cols = 1;
  /** Blocks of the selected request, outlined. */
  private selected = new Set<number>();

  constructor(private onPick: (request: number) => void) {
    this.root.append(this.legend, this.canvas, this.tip);
    this.canvas.setAttribute('role', 'img');
    this.canvas.addEventListener('mousemove', (e) => this.hover(e));
    this.canvas.addEventListener('mouseleave', () => {
      this.tip.hidden = true;
    });
    this.canvas.addEventListener('click', (e) => {
      const i = this.cellAt(e);
      const h = i === null ? undefined : this.holdersOf.get(i)?.[0];
      if (h !== undefined) this.onPick(h);
    });
  }

  private cellAt(e: MouseEvent): number | null {
    const r = this.canvas.getBoundingClientRect();
    const col = Math.floor((e.clientX - r.left) / this.side);
    const row = Math.floor((e.clientY - r.top) / this.side);
    if (col < 0 || col >= this.cols || row < 0) return null;
    const i = row * this.cols + col;
    return this.rank && i < this.rank.capacity ? i : null;
  }

  private hover(e: MouseEvent): void {
    const i = this.cellAt(e);
    if (i === null || !this.rank) {
      this.tip.hidden = true;
      return;
    }
    this.tip.textContent = describeBlock(this.rank, i, this.holdersOf.get(i) ?? []);
    this.tip.hidden = false;
    const box = this.root.getBoundingClientRect();
    this.tip.style.left = `${Math.min(e.clientX - box.left + 12, box.width - 260)}px`;
    this.tip.style.top = `${e.clientY - box.top + 12}px`;
  }

  draw(rank: RankState, selectedRequest: number | null): void {
    this.rank = rank;
    this.holdersOf = rank.holdersOf();
    this.selected = new Set(selectedRequest === null ? [] : (rank.held.get(selectedRequest) ?? []));
    const n = rank.capacity;
    const width = Math.max(200, this.root.clientWidth || 600);
    this.side = cellSide(n, width);
    this.cols = Math.max(1, Math.floor(width / this.side));
    const rows = Math.ceil(n / this.cols);
    const dpr = window.devicePixelRatio || 1;
    this.canvas.width = Math.round(this.cols * this.side * dpr);
    this.canvas.height = Math.round(rows * this.side * dpr);
    this.canvas.style.width = `${this.cols * this.side}px`;
    this.canvas.style.height = `${rows * this.side}px`;
    const g = this.canvas.getContext('2d');
    const c = rank.counts();
    this.root.dataset.inUse = String(c.in_use);
    this.root.dataset.idle = String(c.idle);
    this.root.dataset.free = String(c.free);
    this.root.dataset.cached = String(c.cached);
    this.root.dataset.shared = String(c.shared);
    this.root.dataset.evicted = String(c.evicted);
    this.root.dataset.capacity = String(n);
    this.canvas.setAttribute('aria-label', `KV blocks of ${rankLabel(rank.key)}: ${c.in_use} in use (${c.shared} shared), ${c.idle} cached, ${c.free} free`);
    this.legend.replaceChildren(
      swatch(COLORS.one, `in use by one request ${c.in_use - c.shared}`),
      swatch(COLORS.shared, `shared by 2+ requests ${c.shared}`),
      swatch(COLORS.idle, `cached, idle ${c.idle}`),
      swatch(COLORS.free, `free ${c.free}`),
      swatch(COLORS.evicted, `just evicted ${c.evicted} (red frame: evicted, then reused)`),
      el('span', { className: 'inspector-sub' }, `${n} blocks · ${c.cached} cache-visible hashes · hover a block for its hash and holders`),
    );
    if (!g) return;
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    const gap = this.side >= 6 ? 1 : 0;
    for (let i = 0; i < n; i++) {
      const x = (i % this.cols) * this.side;
      const y = Math.floor(i / this.cols) * this.side;
      g.fillStyle = COLORS[cellState(rank, i)];
      g.fillRect(x, y, this.side - gap, this.side - gap);
      if (rank.evicted.has(i) && cellState(rank, i) !== 'evicted') {
        // Evicted and at once reused: the new use's colour, framed in red.
        g.strokeStyle = COLORS.evicted;
        g.lineWidth = Math.max(1, this.side / 4);
        g.strokeRect(x + 0.5, y + 0.5, this.side - gap - 1, this.side - gap - 1);
      }
      if (this.selected.has(i)) {
        g.strokeStyle = COLORS.selected;
        g.lineWidth = Math.max(1, this.side / 5);
        g.strokeRect(x + 0.5, y + 0.5, this.side - gap - 1, this.side - gap - 1);
      }
    }
  }
}

export function describeBlock(rank: RankState, i: number, holders: number[]): string {
  const hash = rank.hashes[i] ?? null;
  const state = cellState(rank, i);
  const what = {
    free: 'free',
    one: 'in use',
    shared: `in use, shared by ${holders.length} requests`,
    idle: 'cached, held by nobody (evictable, a prefix hit can reuse it)',
    evicted: 'just evicted (its cached content was dropped this pass)',
  }[state];
  const parts = [`block ${i}: ${what}`];
  parts.push(hash === null ? 'hash: none (not cache-visible yet)' : `hash ${hash}`);
  const lost = rank.evicted.get(i);
  if (lost !== undefined && state !== 'evicted') parts.push(`this pass evicted its cached block ${lost} to make room`);
  else if (lost !== undefined) parts.push(`evicted: ${lost}`);
  if (holders.length) parts.push(`held by request${holders.length > 1 ? 's' : ''} ${holders.join(', ')}`);
  return parts.join(' · ');
}

function swatch(color: string, text: string): HTMLElement {
  const s = el('span', { className: 'inspector-swatch' });
  s.style.background = color;
  return el('span', { className: 'inspector-key' }, s, text);
}

/** Pool counts without a block table (SGLang pages): a bar, and the radix tree. */
export function renderPoolBar(root: HTMLElement, b: PoolBlocks | undefined): void {
  root.replaceChildren();
  if (!b) return;
  const total = b.in_use + b.idle + b.free || 1;
  const bar = el('div', { className: 'inspector-bar' });
  for (const [n, color, label] of [
    [b.in_use, COLORS.one, 'in use'],
    [b.idle, COLORS.idle, 'cached, idle'],
    [b.free, COLORS.free, 'free'],
  ] as const) {
    const seg = el('span', { title: `${label}: ${n}` });
    seg.style.width = `${(100 * n) / total}%`;
    seg.style.background = color;
    bar.append(seg);
  }
  root.append(bar, el('p', { className: 'inspector-sub' }, `${b.in_use} in use · ${b.idle} cached idle · ${b.free} free · ${b.cached} cache-visible`));
}

/**
 * The cached blocks as a radix tree: the `stored` / `removed` lines give each cache-visible
 * hash's parent, so the tree is exactly what a router's indexer holds. Chains without
 * branches are drawn as one edge with their length (a compressed radix tree).
 */
export function renderRadixTree(root: HTMLElement, rank: RankState, maxLines = 60): void {
  const children = new Map<string | null, string[]>();
  for (const [h, parent] of rank.cached) {
    const p = parent !== null && rank.cached.has(parent) ? parent : null;
    const l = children.get(p);
    if (l) l.push(h);
    else children.set(p, [h]);
  }
  const lines: string[] = [];
  const walk = (h: string, depth: number) => {
    if (lines.length >= maxLines) return;
    let len = 1;
    let tail = h;
    while ((children.get(tail) ?? []).length === 1) {
      tail = (children.get(tail) as string[])[0] as string;
      len++;
    }
    const kids = children.get(tail) ?? [];
    lines.push(
      `${'  '.repeat(depth)}${depth ? '└ ' : ''}${len} block${len > 1 ? 's' : ''} (${short(h)}…${len > 1 ? short(tail) : ''})${kids.length ? ` → ${kids.length} branches` : ''}`,
    );
    for (const k of kids) walk(k, depth + 1);
  };
  for (const r of children.get(null) ?? []) walk(r, 0);
  const total = rank.cached.size;
  root.replaceChildren(
    el('p', { className: 'inspector-sub' }, `Radix tree of the ${total} cache-visible blocks (from stored / removed events; single-child chains collapsed)`),
    el('pre', { className: 'inspector-tree' }, lines.length ? lines.join('\n') + (lines.length >= maxLines ? '\n…' : '') : '(empty)'),
  );
}

function short(h: string): string {
  return h.slice(0, 6);
}

/** Running batch and waiting queue as chips; a click selects the request. */
export function renderQueues(root: HTMLElement, rank: RankState, state: ClusterState, selected: number | null, pick: (r: number) => void, max = 120): void {
  const chip = (id: number) => {
    const r = state.requests.get(id);
    const blocks = rank.held.get(id)?.length;
    const b = el('button', { type: 'button', className: 'inspector-chip', textContent: `#${id}` });
    b.dataset.request = String(id);
    if (r?.preemptions) b.dataset.preempted = String(r.preemptions);
    if (r?.decoding) b.dataset.decoding = 'true';
    if (id === selected) b.setAttribute('aria-pressed', 'true');
    b.title = `request ${id}: ${r?.input_tokens ?? '?'} prompt tokens, ${r?.output_tokens ?? '?'} output tokens${blocks ? `, holds ${blocks} blocks` : ''}${r?.preemptions ? `, preempted ${r.preemptions}×` : ''}${r?.decoding ? ', decoding' : ', prefill'}`;
    b.addEventListener('click', () => pick(id));
    return b;
  };
  const list = (ids: number[], label: string, name: string) => {
    const box = el('div', { className: 'inspector-chips' });
    box.dataset.list = name;
    box.dataset.count = String(ids.length);
    box.append(el('strong', {}, `${label} (${ids.length})`));
    for (const id of ids.slice(0, max)) box.append(chip(id));
    if (ids.length > max) box.append(el('span', { className: 'inspector-sub' }, ` +${ids.length - max} more`));
    return box;
  };
  root.replaceChildren(list([...rank.running], 'Running batch', 'running'), list(rank.waiting, 'Waiting queue', 'waiting'));
}

const SEGMENT_COLORS: Record<Segment['kind'], string> = {
  waiting: '#c9ced6',
  prefill: '#f0a23b',
  decode: '#4a7fd4',
  preempted: '#e0533d',
  resumed: '#9b7bd4',
  transfer: '#2fa7a0',
};

/** A request's timeline as a bar of segments, with the current time marked. */
export function renderTimeline(root: HTMLElement, replay: Replay, id: number | null, nowMs: number): void {
  root.replaceChildren();
  if (id === null) {
    root.append(el('p', { className: 'inspector-sub' }, 'Select a request (a chip, or a block in the map) to see its life.'));
    return;
  }
  const { segments, chunks, events } = requestTimeline(replay, id);
  if (events.length === 0) {
    root.append(el('p', { className: 'inspector-sub' }, `Request ${id} has no events in this recording.`));
    return;
  }
  const t0 = events[0]?.t_ms ?? 0;
  const t1 = Math.max(t0 + 1e-9, events.at(-1)?.t_ms ?? t0);
  const pct = (t: number) => `${(100 * (t - t0)) / (t1 - t0)}%`;
  const bar = el('div', { className: 'inspector-timeline' });
  bar.dataset.request = String(id);
  for (const s of segments) {
    const seg = el('span', { className: 'seg', title: `${s.kind}${s.at ? ` on ${rankLabel(s.at)}` : ''}: ${fmtMs(s.from)} → ${fmtMs(s.to)}` });
    seg.dataset.kind = s.kind;
    seg.style.left = pct(s.from);
    seg.style.width = `max(2px, ${(100 * (s.to - s.from)) / (t1 - t0)}%)`;
    seg.style.background = SEGMENT_COLORS[s.kind];
    bar.append(seg);
  }
  for (const c of chunks) {
    const tick = el('span', { className: 'tick', title: `a prefill pass ended at ${fmtMs(c)}` });
    tick.style.left = pct(c);
    bar.append(tick);
  }
  if (nowMs >= t0 && nowMs <= t1) {
    const now = el('span', { className: 'now' });
    now.style.left = pct(nowMs);
    bar.append(now);
  }
  const keys = el('p', { className: 'inspector-legend' });
  const names: Record<Segment['kind'], string> = {
    waiting: 'waiting',
    prefill: 'prefill',
    decode: 'decode',
    preempted: 'preempted (no KV)',
    resumed: 'readmitted: recompute, then decode',
    transfer: 'KV transfer',
  };
  for (const k of Object.keys(SEGMENT_COLORS) as Segment['kind'][]) keys.append(swatch(SEGMENT_COLORS[k], names[k]));
  const preempted = segments.filter((s) => s.kind === 'preempted').length;
  const story = events.map((e) => `${fmtMs(e.t_ms)} ${e.kind}${'pool' in e ? ` (${rankLabel(rankKey(e))})` : ''}${detail(replay, e)}`).join('\n');
  root.append(
    el(
      'p',
      {},
      el('strong', {}, `Request ${id}`),
      ` · ${fmtMs(t0)} → ${fmtMs(t1)}${preempted ? ` · lost its KV ${preempted}×` : ''} · ticks: its rank's passes that computed prompt tokens while it was in prefill`,
    ),
    bar,
    keys,
    el('pre', { className: 'inspector-story' }, story),
  );
}

/** What a line of a request's story adds: reuse at admission, the pool when it lost its KV. */
function detail(replay: Replay, e: Ev): string {
  if (e.kind === 'admitted') return e.cached_tokens ? `, ${e.cached_tokens} cached prompt tokens reused` : ', nothing cached to reuse';
  if (e.kind !== 'preempted' && e.kind !== 'retracted') return '';
  // The pass that did it ends at the same time on the same rank, right after.
  const i = replay.indexAt(e.t_ms);
  const p = replay.passAtOrBefore(i, rankKey(e));
  const pass = replay.events[p];
  const b = pass?.kind === 'pass' ? pass.blocks : undefined;
  const pool = b ? ` (after that pass: ${b.free} free, ${b.idle} cached idle, ${b.in_use} in use)` : '';
  return e.kind === 'preempted'
    ? `: a running request needed a new block and none was free, so vLLM took this one's blocks (it recomputes when readmitted)${pool}`
    : `: decode memory ran short, so SGLang sent it back to the queue${pool}`;
}

/** The router's choice: every target's cost and believed cached overlap. */
export function renderRouter(root: HTMLElement, choice: RouterChoice | null): void {
  root.replaceChildren();
  if (!choice) {
    root.append(el('p', { className: 'inspector-sub' }, 'No routing recorded for this request.'));
    return;
  }
  if (choice.targets.length === 1 && choice.targets[0]?.cost === null) {
    root.append(
      el('p', {}, `Routed at ${fmtMs(choice.t_ms)} to ${rankLabel(choice.chosen)} (this router does not cost targets: round robin, random or load-based).`),
    );
    return;
  }
  const table = el('table', { className: 'inspector-router' });
  table.append(el('thead', {}, el('tr', {}, el('th', {}, 'target'), el('th', {}, 'cost (lowest wins)'), el('th', {}, 'cached prefix blocks it believed'))));
  const body = el('tbody');
  for (const t of choice.targets) {
    const tr = el(
      'tr',
      {},
      el('td', {}, rankLabel(t.key)),
      el('td', {}, t.cost === null ? '–' : t.cost.toFixed(2)),
      el('td', {}, t.overlap === null ? '–' : String(t.overlap)),
    );
    if (t.key === choice.chosen) {
      tr.dataset.chosen = 'true';
      (tr.firstChild as HTMLElement).append(' ✓ chosen');
    }
    body.append(tr);
  }
  table.append(body);
  root.append(el('p', {}, `The KV-aware router at ${fmtMs(choice.t_ms)}: what it knew from the KV events it had received.`), table);
}

/** Event log lines around the cursor, filtered by kind and request. */
export function renderLog(
  root: HTMLElement,
  events: Ev[],
  cursor: number,
  filter: { kind: string; request: string; raw: boolean; moment?: number | null },
  around = 80,
): void {
  const want = (e: Ev) => (filter.kind === '' || e.kind === filter.kind) && (filter.request === '' || String(requestOf(e)) === filter.request);
  const before: number[] = [];
  for (let i = cursor; i >= 0 && before.length < around; i--) if (want(events[i] as Ev)) before.push(i);
  const after: number[] = [];
  for (let i = cursor + 1; i < events.length && after.length < around / 4; i++) if (want(events[i] as Ev)) after.push(i);
  const rows = [...before.reverse(), ...after];
  const ol = el('ol', { className: 'inspector-log', tabIndex: 0, ariaLabel: 'Event log around the time shown' });
  for (const i of rows) {
    const e = events[i] as Ev;
    const li = el('li', { textContent: filter.raw ? logLine(e) : describeEvent(e) });
    li.dataset.kind = e.kind;
    if (i === cursor) li.dataset.current = 'true';
    if (i === filter.moment) li.dataset.moment = 'true';
    if (i > cursor) li.dataset.future = 'true';
    ol.append(li);
  }
  root.replaceChildren(ol);
  const cur =
    ol.querySelector<HTMLElement>('[data-moment]') ??
    ol.querySelector<HTMLElement>('[data-current]') ??
    ol.querySelector<HTMLElement>('li:not([data-future]):last-of-type');
  if (cur) ol.scrollTop = Math.max(0, cur.offsetTop - ol.clientHeight / 2);
}

const SHOWN_APART = new Set(['t_ms', 'kind', 'pool', 'worker', 'dp_rank']);

function logLine(e: Ev): string {
  const where = 'pool' in e ? ` ${rankLabel(rankKey(e))}` : '';
  let body = JSON.stringify(Object.fromEntries(Object.entries(e).filter(([k]) => !SHOWN_APART.has(k))));
  if (body.length > 160) body = `${body.slice(0, 157)}…`;
  return `${e.t_ms.toFixed(3)} ${e.kind}${where} ${body === '{}' ? '' : body}`;
}

/** A hash as the log shows it: its first digits (the full value is in the raw line). */
function shortHash(h: string | number | null): string {
  return h === null ? 'the root' : `${String(h).slice(0, 6)}…`;
}

const plural = (k: number, what: string) => `${k.toLocaleString('en')} ${what}${k === 1 ? '' : 's'}`;

/** One event of the stream as a sentence: time, place, what happened. */
export function describeEvent(e: Ev): string {
  const at = `${fmtMs(e.t_ms)}${'pool' in e ? ` · ${rankLabel(rankKey(e))}` : ''} · `;
  switch (e.kind) {
    case 'arrived':
      return `${at}request #${e.request} arrives: ${plural(e.input_tokens, 'prompt token')}, ${plural(e.output_tokens, 'output token')} to generate`;
    case 'routed': {
      const overlap = e.overlap_blocks ?? [];
      const best = overlap.length ? Math.max(...overlap) : 0;
      return `${at}request #${e.request} is routed here${e.costs ? ` (the KV router's cheapest target${best > 0 ? `; up to ${plural(best, 'cached block')} on a worker` : ''})` : ''}`;
    }
    case 'admitted':
      return `${at}request #${e.request} is ${e.readmission ? 're' : ''}admitted${e.cached_tokens ? `, reusing ${plural(e.cached_tokens, 'cached prompt token')}` : ', nothing cached to reuse'}`;
    case 'preempted':
      return `${at}request #${e.request} is preempted: it loses its KV blocks and goes back to the head of the queue`;
    case 'retracted':
      return `${at}request #${e.request} is retracted: SGLang frees its KV and queues it again`;
    case 'transfer_start':
      return `${at}request #${e.request}'s KV starts moving here (${e.ms.toFixed(2)} ms)`;
    case 'transfer_end':
      return `${at}request #${e.request}'s KV has arrived: it decodes here`;
    case 'first_token':
      return `${at}request #${e.request} emits its first token (TTFT ${fmtMs(e.ttft_ms)})`;
    case 'finished':
      return `${at}request #${e.request} ${e.status === 'completed' ? 'completes' : `ends ${e.status}`} after ${plural(e.output_tokens, 'output token')}${e.reason ? `: ${e.reason}` : ''}`;
    case 'stored':
      return `${at}${plural(e.hashes.length, 'block')} ${e.hashes.length === 1 ? 'becomes' : 'become'} cache-visible (${e.hashes.slice(0, 3).map(shortHash).join(', ')}${e.hashes.length > 3 ? ', …' : ''} under ${shortHash(e.parent)}${e.tier ? `, tier ${e.tier}` : ''})`;
    case 'removed':
      return `${at}${plural(e.hashes.length, 'cached block')} evicted (${e.hashes.slice(0, 3).map(shortHash).join(', ')}${e.hashes.length > 3 ? ', …' : ''}${e.tier ? `, tier ${e.tier}` : ''}): the router is told`;
    case 'blocks':
      return `${at}${plural(e.set.length, 'block')} ${e.set.length === 1 ? 'changes' : 'change'} holders or contents; ${plural(e.held.length, 'request')}' block lists change`;
    case 'pass':
      return `${at}a pass of ${e.duration_ms.toFixed(2)} ms: ${plural(e.prefill_tokens, 'prefill token')} + ${plural(e.decode_tokens, 'decode token')}, batch ${e.batch}, ${e.waiting} waiting; KV ${e.blocks.in_use} in use, ${e.blocks.free} free`;
  }
}
