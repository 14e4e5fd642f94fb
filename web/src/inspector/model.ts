// The inspector's model: the event stream `servesim run --events` writes (docs/events.md),
// parsed and replayed into the state of the cluster after any event. Nothing here simulates:
// every block, holder and queue position comes from a line of the stream; the model only
// folds the lines in order. Replaying is linear, so the model keeps a checkpoint every so
// many events and a jump backwards replays from the nearest one.

import type { KvBlockCounts, PassEvent, RoutedEvent, ServesimEvent, ServesimEventKind } from '../../pkg/servesim_wasm.js';

/** One line of the stream (the package's type), its u64 hashes kept exact as decimal strings. */
export type Ev = ServesimEvent<string>;
export type PoolBlocks = KvBlockCounts;

/** A rank as the stream and the time series name it. */
export interface Place {
  pool: string;
  worker: number;
  dp_rank: number;
}

/** `pool/worker/rank`: a rank's key. */
export function rankKey(e: Place): string {
  return `${e.pool}/${e.worker}/${e.dp_rank}`;
}

/** `w0` or `w0 r1` (prefill / decode pools prefixed): a rank as the page names it. */
export function rankLabel(key: string): string {
  const [pool, worker, rank] = key.split('/');
  const p = pool === 'aggregated' ? '' : `${pool} `;
  return rank === '0' ? `${p}worker ${worker}` : `${p}worker ${worker} rank ${rank}`;
}

/** The request an event is about, if any. */
export function requestOf(e: Ev): number | undefined {
  return 'request' in e ? e.request : undefined;
}

type FieldSpec<T> = { [K in keyof T]-?: Partial<Pick<T, K>> extends Pick<T, K> ? 'optional' : 'required' };
const PLACE = { pool: 'required', worker: 'required', dp_rank: 'required' } as const;

/**
 * Every field of every kind of line, as the package declares them: tsc holds this table to
 * the types exactly (a field missing, extra or of the wrong optionality fails to compile), the
 * parser checks lines against it, and a test checks the engine's real lines against it.
 */
export const EVENT_FIELDS: { [K in ServesimEventKind]: FieldSpec<Extract<Ev, { kind: K }>> } = {
  arrived: { t_ms: 'required', kind: 'required', request: 'required', input_tokens: 'required', output_tokens: 'required' },
  routed: { t_ms: 'required', kind: 'required', request: 'required', ...PLACE, costs: 'optional', overlap_blocks: 'optional' },
  admitted: { t_ms: 'required', kind: 'required', request: 'required', ...PLACE, cached_tokens: 'required', readmission: 'required' },
  preempted: { t_ms: 'required', kind: 'required', request: 'required', ...PLACE },
  retracted: { t_ms: 'required', kind: 'required', request: 'required', ...PLACE },
  transfer_start: { t_ms: 'required', kind: 'required', request: 'required', ...PLACE, ms: 'required' },
  transfer_end: { t_ms: 'required', kind: 'required', request: 'required', ...PLACE },
  first_token: { t_ms: 'required', kind: 'required', request: 'required', ...PLACE, ttft_ms: 'required' },
  finished: { t_ms: 'required', kind: 'required', request: 'required', status: 'required', output_tokens: 'required', reason: 'optional' },
  stored: { t_ms: 'required', kind: 'required', ...PLACE, parent: 'required', hashes: 'required', tier: 'optional' },
  removed: { t_ms: 'required', kind: 'required', ...PLACE, hashes: 'required', tier: 'optional' },
  blocks: { t_ms: 'required', kind: 'required', ...PLACE, set: 'required', held: 'required' },
  pass: {
    t_ms: 'required',
    kind: 'required',
    ...PLACE,
    start_ms: 'required',
    duration_ms: 'required',
    prefill_tokens: 'required',
    decode_tokens: 'required',
    batch: 'required',
    waiting: 'required',
    blocks: 'required',
  },
};

function isKind(kind: string): kind is ServesimEventKind {
  return Object.hasOwn(EVENT_FIELDS, kind);
}

// A u64 right after `:`, `[` or `,` with 16+ digits: too large for a double, so quoted before
// JSON.parse. No other field of the stream holds such an integer (times and costs are small
// decimals, ids are u32).
const BIG = /(?<=[:[,])(\d{16,})(?=[,\]}])/g;

export class StreamError extends Error {}

/**
 * Parses the stream's text; a bad line throws, naming it and what is wrong. Lines of a kind
 * this page does not know (a newer writer's) are skipped, as docs/events.md promises readers
 * may; extra fields of a known kind are kept.
 */
export function parseEvents(text: string): Ev[] {
  const out: Ev[] = [];
  let start = 0;
  let line = 0;
  while (start < text.length) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    line += 1;
    const raw = text.slice(start, end).trim();
    start = end + 1;
    if (raw === '') continue;
    let v: unknown;
    try {
      v = JSON.parse(raw.replace(BIG, '"$1"'));
    } catch (err) {
      throw new StreamError(`events line ${line}: ${(err as Error).message}`);
    }
    if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new StreamError(`events line ${line}: not an event (not a JSON object)`);
    const rec = v as Record<string, unknown>;
    if (typeof rec.t_ms !== 'number' || typeof rec.kind !== 'string') throw new StreamError(`events line ${line}: not an event (no t_ms or kind)`);
    if (!isKind(rec.kind)) continue;
    for (const [field, need] of Object.entries(EVENT_FIELDS[rec.kind])) {
      if (need === 'required' && !(field in rec)) throw new StreamError(`events line ${line}: a "${rec.kind}" line without "${field}"`);
    }
    const e = rec as unknown as Ev;
    normaliseHashes(e);
    out.push(e);
  }
  return out;
}

/** Hashes as decimal strings whatever their size (small ones parse as numbers). */
function normaliseHashes(e: Ev): void {
  const s = (v: unknown) => (v === null || v === undefined ? null : String(v));
  if (e.kind === 'stored') {
    e.parent = s(e.parent);
    e.hashes = e.hashes.map((h) => String(h));
  } else if (e.kind === 'removed') {
    e.hashes = e.hashes.map((h) => String(h));
  } else if (e.kind === 'blocks') {
    for (const c of e.set) c[1] = s(c[1]);
  }
}

export type Phase = 'arrived' | 'waiting' | 'running' | 'transfer' | 'done';

export interface RequestState {
  id: number;
  phase: Phase;
  /** The rank it is at (routed, admitted or transferred to). */
  at?: string;
  /** It has emitted its first token. */
  decoding: boolean;
  /** Times it lost its KV (preempted or retracted). */
  preemptions: number;
  input_tokens: number;
  output_tokens: number;
}

/** One rank's state. */
export class RankState {
  /** Per physical block: holders (vLLM `blocks` lines) and hash if cache-visible. */
  holders: number[] = [];
  hashes: (string | null)[] = [];
  /** Blocks whose hash the latest `blocks` line of this rank took away (just evicted), with
   * the hash they lost (the block may already hold something else). */
  evicted = new Map<number, string>();
  /** Hashes removed at this rank's latest removal time. */
  removedNow: { t: number; hashes: string[] } = { t: -1, hashes: [] };
  /** request → the blocks it holds, in sequence order. */
  held = new Map<number, number[]>();
  /** Cache-visible hash → parent hash (stored minus removed): the radix tree's nodes. */
  cached = new Map<string, string | null>();
  /** Requests admitted and not since preempted or finished, in admission order. */
  running = new Set<number>();
  /** Requests routed here and not admitted (preempted ones first), in queue order. */
  waiting: number[] = [];
  /** The latest pass line of this rank. */
  pass: PassEvent | null = null;
  /** Whether the stream has `blocks` lines for this rank (a vLLM native pool). */
  hasBlocks = false;
  /** Time of this rank's latest `blocks` line. */
  blocksAt = -1;

  constructor(readonly key: string) {}

  clone(): RankState {
    const r = new RankState(this.key);
    r.holders = this.holders.slice();
    r.hashes = this.hashes.slice();
    r.evicted = new Map(this.evicted);
    r.removedNow = { t: this.removedNow.t, hashes: this.removedNow.hashes.slice() };
    r.held = new Map([...this.held].map(([k, v]) => [k, v.slice()]));
    r.cached = new Map(this.cached);
    r.running = new Set(this.running);
    r.waiting = this.waiting.slice();
    r.pass = this.pass;
    r.hasBlocks = this.hasBlocks;
    r.blocksAt = this.blocksAt;
    return r;
  }

  /** Pool size: the latest pass's, else what the blocks lines have shown. */
  get capacity(): number {
    const b = this.pass?.blocks;
    return b ? b.in_use + b.idle + b.free : this.holders.length;
  }

  /** Counts from the block table (only meaningful when `hasBlocks`). */
  counts(): PoolBlocks & { shared: number; evicted: number } {
    let in_use = 0;
    let idle = 0;
    let shared = 0;
    const distinct = new Set<string>();
    for (let i = 0; i < this.holders.length; i++) {
      const h = this.holders[i] ?? 0;
      const hash = this.hashes[i] ?? null;
      if (h > 0) in_use++;
      else if (hash !== null) idle++;
      if (h > 1) shared++;
      if (hash !== null) distinct.add(hash);
    }
    return { in_use, idle, free: this.capacity - in_use - idle, cached: distinct.size, shared, evicted: this.evicted.size };
  }

  private dropWaiting(id: number): void {
    const i = this.waiting.indexOf(id);
    if (i >= 0) this.waiting.splice(i, 1);
  }

  apply(e: Ev): void {
    switch (e.kind) {
      case 'routed':
        this.waiting.push(e.request);
        break;
      case 'admitted':
        this.dropWaiting(e.request);
        this.running.add(e.request);
        break;
      case 'preempted':
      case 'retracted':
        this.running.delete(e.request);
        // vLLM puts a preempted request back at the head of the queue.
        this.waiting.unshift(e.request);
        break;
      case 'transfer_start':
        this.waiting.push(e.request);
        break;
      case 'transfer_end':
        this.dropWaiting(e.request);
        this.running.add(e.request);
        break;
      case 'finished':
        this.running.delete(e.request);
        this.dropWaiting(e.request);
        break;
      case 'stored': {
        let parent = e.parent;
        for (const h of e.hashes) {
          this.cached.set(h, parent);
          parent = h;
        }
        break;
      }
      case 'removed':
        if (this.removedNow.t !== e.t_ms) this.removedNow = { t: e.t_ms, hashes: [] };
        for (const h of e.hashes) {
          this.cached.delete(h);
          this.removedNow.hashes.push(h);
        }
        break;
      case 'blocks':
        this.applyBlocks(e);
        break;
      case 'pass':
        // "Just evicted" means by this pass: a pass without a `blocks` line changed nothing.
        if (this.blocksAt !== e.t_ms) this.evicted.clear();
        this.pass = e;
        break;
    }
  }

  private applyBlocks(e: Extract<Ev, { kind: 'blocks' }>): void {
    this.hasBlocks = true;
    this.blocksAt = e.t_ms;
    this.evicted.clear();
    for (const [block, hash, holders] of e.set) {
      while (this.holders.length <= block) {
        this.holders.push(0);
        this.hashes.push(null);
      }
      const was = this.hashes[block] ?? null;
      if (was !== null && was !== hash) this.evicted.set(block, was);
      this.holders[block] = holders;
      this.hashes[block] = hash;
    }
    for (const [request, keep, blocks] of e.held) {
      const list = (this.held.get(request) ?? []).slice(0, keep);
      list.push(...blocks);
      if (list.length) this.held.set(request, list);
      else this.held.delete(request);
    }
  }

  /** block → the requests holding it. */
  holdersOf(): Map<number, number[]> {
    const m = new Map<number, number[]>();
    for (const [r, blocks] of this.held) {
      for (const b of blocks) {
        const l = m.get(b);
        if (l) l.push(r);
        else m.set(b, [r]);
      }
    }
    return m;
  }
}

export class ClusterState {
  ranks = new Map<string, RankState>();
  requests = new Map<number, RequestState>();
  /** Index of the last event applied (-1: none). */
  cursor = -1;

  rank(key: string): RankState {
    let r = this.ranks.get(key);
    if (!r) {
      r = new RankState(key);
      this.ranks.set(key, r);
    }
    return r;
  }

  clone(): ClusterState {
    const c = new ClusterState();
    for (const [k, r] of this.ranks) c.ranks.set(k, r.clone());
    for (const [k, r] of this.requests) c.requests.set(k, { ...r });
    c.cursor = this.cursor;
    return c;
  }

  apply(e: Ev): void {
    if (e.kind === 'arrived') {
      const { request: id, input_tokens, output_tokens } = e;
      this.requests.set(id, { id, phase: 'arrived', decoding: false, preemptions: 0, input_tokens, output_tokens });
      return;
    }
    const req = 'request' in e ? this.requests.get(e.request) : undefined;
    if (e.kind === 'finished') {
      if (req) {
        if (req.at) this.rank(req.at).apply(e);
        req.phase = 'done';
      }
      return;
    }
    const key = rankKey(e);
    this.rank(key).apply(e);
    if (!req) return;
    switch (e.kind) {
      case 'routed':
        req.phase = 'waiting';
        req.at = key;
        break;
      case 'admitted':
        req.phase = 'running';
        req.at = key;
        break;
      case 'preempted':
      case 'retracted':
        req.phase = 'waiting';
        req.preemptions += 1;
        break;
      case 'transfer_start':
        // The prompt's KV leaves the prefill rank for this decode rank.
        if (req.at && req.at !== key) this.rank(req.at).running.delete(req.id);
        req.phase = 'transfer';
        req.at = key;
        break;
      case 'transfer_end':
        req.phase = 'running';
        break;
      case 'first_token':
        req.decoding = true;
        break;
    }
  }
}

/** A stream indexed for stepping: checkpoints, passes, each request's events. */
export class Replay {
  readonly passes: number[] = [];
  readonly byRequest = new Map<number, number[]>();
  readonly rankKeys: string[];
  private checkpoints: ClusterState[] = [];
  private readonly every: number;
  private state = new ClusterState();

  constructor(readonly events: Ev[]) {
    const keys = new Set<string>();
    events.forEach((e, i) => {
      if (e.kind === 'pass') {
        this.passes.push(i);
        keys.add(rankKey(e));
      }
      const id = requestOf(e);
      if (id !== undefined) {
        const l = this.byRequest.get(id);
        if (l) l.push(i);
        else this.byRequest.set(id, [i]);
      }
    });
    this.rankKeys = [...keys].sort(compareKeys);
    this.every = Math.max(1000, Math.ceil(events.length / 100));
    this.checkpoints.push(this.state.clone());
  }

  get endMs(): number {
    return this.events.at(-1)?.t_ms ?? 0;
  }

  /** The state after event `i` (-1: before any). */
  at(i: number): ClusterState {
    const target = Math.max(-1, Math.min(i, this.events.length - 1));
    if (target < this.state.cursor) {
      const k = Math.floor((target + 1) / this.every);
      const cp = this.checkpoints[Math.min(k, this.checkpoints.length - 1)] as ClusterState;
      this.state = cp.clone();
    }
    while (this.state.cursor < target) {
      const next = this.state.cursor + 1;
      this.state.apply(this.events[next] as Ev);
      this.state.cursor = next;
      // Checkpoint k holds the state after event k * every - 1.
      if ((next + 1) % this.every === 0 && this.checkpoints.length === (next + 1) / this.every) {
        this.checkpoints.push(this.state.clone());
      }
    }
    return this.state;
  }

  /** The last event at or before `t_ms` (-1: none). */
  indexAt(tMs: number): number {
    let lo = 0;
    let hi = this.events.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((this.events[mid] as Ev).t_ms <= tMs) lo = mid + 1;
      else hi = mid;
    }
    return lo - 1;
  }

  /** The last pass line at or before event `i`, of rank `key` if given (-1: none). */
  passAtOrBefore(i: number, key?: string): number {
    for (let j = Math.min(i, this.events.length - 1); j >= 0; j--) {
      const e = this.events[j] as Ev;
      if (e.kind === 'pass' && (key === undefined || rankKey(e) === key)) return j;
    }
    return -1;
  }

  /** The next (dir 1) or previous (dir -1) pass line from `i`, of rank `key` if given. */
  stepPass(i: number, dir: 1 | -1, key?: string): number {
    for (let j = i + dir; j >= 0 && j < this.events.length; j += dir) {
      const e = this.events[j] as Ev;
      if (e.kind === 'pass' && (key === undefined || rankKey(e) === key)) return j;
    }
    return i;
  }
}

/** Ranks in pool, worker, rank order. */
export function compareKeys(a: string, b: string): number {
  const [pa, wa, ra] = a.split('/');
  const [pb, wb, rb] = b.split('/');
  return (pa ?? '').localeCompare(pb ?? '') || Number(wa) - Number(wb) || Number(ra) - Number(rb);
}

/** One segment of a request's timeline. */
export interface Segment {
  kind: 'waiting' | 'prefill' | 'decode' | 'preempted' | 'resumed' | 'transfer';
  from: number;
  to: number;
  at?: string;
}

/**
 * A request's life from its events: waiting (routed, not yet admitted), prefill (admitted,
 * no token yet), decode, preempted (lost its KV, waiting to be readmitted), transfer (its KV
 * moving to a decode rank); `chunks` are the times its pass lines grew its blocks while in
 * prefill (a chunk each).
 */
export function requestTimeline(replay: Replay, id: number): { segments: Segment[]; chunks: number[]; events: Ev[] } {
  const idx = replay.byRequest.get(id) ?? [];
  const events = idx.map((i) => replay.events[i] as Ev);
  const segments: Segment[] = [];
  let open: Segment | null = null;
  const close = (t: number) => {
    if (open) {
      open.to = t;
      segments.push(open);
      open = null;
    }
  };
  const begin = (kind: Segment['kind'], t: number, at?: string) => {
    close(t);
    open = { kind, from: t, to: t, at };
  };
  for (const e of events) {
    const at = 'pool' in e ? rankKey(e) : undefined;
    switch (e.kind) {
      case 'routed':
        begin('waiting', e.t_ms, at);
        break;
      case 'admitted':
        // Told at the end of the pass that admitted it. Readmitted after losing its KV, it
        // recomputes its prompt and tokens so far, then decodes on: the stream has no line
        // for where one ends and the other begins, so that stretch is one segment.
        begin(e.readmission ? 'resumed' : 'prefill', e.t_ms, at);
        break;
      case 'first_token':
        begin('decode', e.t_ms, at);
        break;
      case 'preempted':
      case 'retracted':
        begin('preempted', e.t_ms, at);
        break;
      case 'transfer_start':
        begin('transfer', e.t_ms, at);
        break;
      case 'transfer_end':
        begin('decode', e.t_ms, at);
        break;
      case 'finished':
        close(e.t_ms);
        break;
    }
  }
  close(replay.endMs);
  const chunks: number[] = [];
  for (const s of segments) {
    if (s.kind !== 'prefill' || !s.at) continue;
    for (const i of replay.passes) {
      const p = replay.events[i];
      if (p?.kind !== 'pass' || p.t_ms < s.from || p.t_ms > s.to || rankKey(p) !== s.at) continue;
      if (p.prefill_tokens > 0) chunks.push(p.t_ms);
    }
  }
  return { segments, chunks, events };
}

/** The router's choice for a request: every target's cost and believed overlap. */
export interface RouterChoice {
  t_ms: number;
  chosen: string;
  targets: { key: string; cost: number | null; overlap: number | null }[];
}

/**
 * What the router saw when it placed request `id`: with the KV router, the cost and cached
 * overlap of every target (one per worker rank of the pool, in target order); otherwise only
 * where it went. Targets are the pool's ranks as the stream names them.
 */
export function routerChoice(replay: Replay, id: number): RouterChoice | null {
  const e = (replay.byRequest.get(id) ?? []).map((i) => replay.events[i] as Ev).find((x): x is RoutedEvent => x.kind === 'routed');
  if (!e) return null;
  const chosen = rankKey(e);
  const costs = e.costs ?? null;
  const overlap = e.overlap_blocks ?? null;
  const pool = replay.rankKeys.filter((k) => k.startsWith(`${e.pool}/`));
  const n = Math.max(costs?.length ?? 0, overlap?.length ?? 0);
  const targets =
    n === 0
      ? [{ key: chosen, cost: null, overlap: null }]
      : Array.from({ length: n }, (_, i) => ({ key: pool[i] ?? `${e.pool}/target ${i}`, cost: costs?.[i] ?? null, overlap: overlap?.[i] ?? null }));
  return { t_ms: e.t_ms, chosen, targets };
}

/** Moments a lesson opens at and the "next event of this kind" buttons step between. */
export const MOMENTS = {
  preempted: 'preemption',
  evicted: 'eviction of cached blocks',
  reuse: 'admission that reused cached blocks',
  routing: 'routing choice',
  admitted: 'admission',
  first_token: 'first token',
  finished: 'finished request',
  transfer_start: 'KV transfer',
} as const;
export type MomentKind = keyof typeof MOMENTS;

/** Whether event `e` is a moment of `kind`. */
export function isMoment(e: Ev, kind: MomentKind): boolean {
  switch (kind) {
    case 'preempted':
      return e.kind === 'preempted' || e.kind === 'retracted';
    case 'evicted':
      return e.kind === 'removed';
    case 'reuse':
      return e.kind === 'admitted' && e.cached_tokens > 0;
    case 'routing':
      // A choice the router costed, where some target held part of the prefix.
      return e.kind === 'routed' && (e.overlap_blocks ?? []).some((b) => b > 0);
    default:
      return e.kind === kind;
  }
}

/** The next (dir 1) or previous (dir -1) moment of `kind` from event `i`; -1 when none. */
export function stepMoment(events: Ev[], i: number, dir: 1 | -1, kind: MomentKind): number {
  for (let j = i + dir; j >= 0 && j < events.length; j += dir) if (isMoment(events[j] as Ev, kind)) return j;
  return -1;
}
