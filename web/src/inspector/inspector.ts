// The Inspector: steps through a run's event stream pass by pass. The worker records the
// stream with the engine's own recorder (the bytes `servesim run --events` writes); this
// module parses it, keeps a clock over it and draws the state at the clock's time:
// a rank's block map, its running batch and waiting queue, a selected request's timeline and
// routing, and the event log. Its state (time, rank, request) lives in the URL's `inspect`
// parameter, so a copied link or an embed opens the same moment.

import './inspector.css';
import type { Engine } from '../engine/client';
import type { EventsRecording } from '../engine/protocol';
import { el } from '../ui/dom';
import { LESSONS, type Lesson, lessonVariant } from './lessons';
import {
  type ClusterState,
  type Ev,
  isMoment,
  MOMENTS,
  type MomentKind,
  parseEvents,
  Replay,
  rankKey,
  rankLabel,
  requestOf,
  routerChoice,
  stepMoment,
} from './model';
import { BlockMap, fmtMs, renderLog, renderPoolBar, renderQueues, renderRadixTree, renderRouter, renderTimeline } from './view';

/** Runs of more requests are recorded over a time window only. */
export const MAX_WHOLE_REQUESTS = 2500;
/** The default window for those (virtual ms). */
export const DEFAULT_WINDOW_MS = 20_000;
/** A recording stops past this many bytes of lines. */
export const MAX_BYTES = 64 * 1024 * 1024;
const PLAY_MS = 140;

export interface InspectorHost {
  engine: Engine;
  /** The scenario to record: the non-default fields as JSON (what a run gets). */
  scenarioJson(): string;
  trace(): Blob | undefined;
  files(): Record<string, Uint8Array> | undefined;
  /** Applies a lesson's partial scenario (through the form, like a link). */
  applyScenario?(partial: Record<string, unknown>): void;
  /** Puts back the scenario the user had before the first lesson. */
  restoreScenario?(): void;
}

/** `?inspect=T,RANK,REQUEST`: the inspector's state in a link. */
export interface InspectLink {
  t_ms: number | null;
  rank: string | null;
  request: number | null;
}

export function parseInspectParam(v: string | null): InspectLink | null {
  if (v === null) return null;
  const [t, rank, req] = v.split(',');
  const tn = Number(t);
  const rn = Number(req);
  return {
    t_ms: t !== undefined && t !== '' && Number.isFinite(tn) && tn >= 0 ? tn : null,
    rank: rank && /^[a-z]+\/\d+\/\d+$/.test(rank) ? rank : null,
    request: req !== undefined && req !== '' && Number.isInteger(rn) && rn >= 0 ? rn : null,
  };
}

export function formatInspectParam(l: InspectLink): string {
  return [l.t_ms === null ? '' : String(Math.round(l.t_ms * 1000) / 1000), l.rank ?? '', l.request === null ? '' : String(l.request)]
    .join(',')
    .replace(/,+$/, '');
}

function section(title: string, body: HTMLElement, cls: string): HTMLElement {
  return el('section', { className: `inspector-card ${cls}` }, el('h3', {}, title), body);
}

export class Inspector {
  readonly root = el('section', { id: 'inspector', className: 'inspector', hidden: true });
  private status = el('p', { id: 'inspector-status', className: 'inspector-status', role: 'status' });
  private note = el('p', { id: 'inspector-note', className: 'inspector-note', hidden: true });
  private lessonNote = el('div', { className: 'inspector-lesson', hidden: true });
  private rankSel = el('select', { id: 'inspector-rank', title: 'Which worker rank to show' });
  private momentSel = el('select', { id: 'inspector-moment', ariaLabel: 'Kind of event to jump to' });
  private prevMoment = el('button', { id: 'inspector-prev-moment', type: 'button', textContent: '◀ previous', title: 'The previous event of the chosen kind' });
  private nextMoment = el('button', { id: 'inspector-next-moment', type: 'button', textContent: 'next ▶', title: 'The next event of the chosen kind' });
  private momentNote = el('span', { id: 'inspector-moment-note', className: 'inspector-sub', role: 'status' });
  private scrub = el('input', { id: 'inspector-scrub', type: 'range', min: '0', max: '0', step: 'any', value: '0', ariaLabel: 'Time in the recording' });
  private clock = el('output', { id: 'inspector-clock' });
  private playBtn = el('button', { id: 'inspector-play', type: 'button', textContent: '▶ Play' });
  private backBtn = el('button', { id: 'inspector-back', type: 'button', textContent: '◀ Pass', title: 'Step one pass back (this rank)' });
  private fwdBtn = el('button', { id: 'inspector-forward', type: 'button', textContent: 'Pass ▶', title: 'Step one pass forward (this rank)' });
  private exportBtn = el('button', { id: 'export-events', type: 'button', textContent: 'Download events (.jsonl)', disabled: true });
  private recordBtn = el('button', { id: 'inspector-record', type: 'button', textContent: 'Record' });
  private fromIn = el('input', { id: 'inspector-from', type: 'number', min: '0', step: 'any', value: '0', title: 'Record from (s of virtual time)' });
  private toIn = el('input', {
    id: 'inspector-to',
    type: 'number',
    min: '0',
    step: 'any',
    value: '',
    placeholder: 'end',
    title: 'Record to (s; empty: to the end)',
  });
  private passInfo = el('p', { id: 'inspector-pass', className: 'inspector-sub' });
  private blockMap: BlockMap;
  private blocksBox = el('div', { id: 'inspector-blocks', className: 'inspector-blocks' });
  private treeBox = el('div', { className: 'inspector-radix' });
  private queues = el('div', { id: 'inspector-queues' });
  private timeline = el('div', { id: 'inspector-timeline' });
  private router = el('div', { id: 'inspector-router' });
  private logKind = el('select', { id: 'inspector-log-kind', title: 'Show one kind of event', ariaLabel: 'Show one kind of event' });
  private logReq = el('input', {
    id: 'inspector-log-request',
    type: 'text',
    inputMode: 'numeric',
    placeholder: 'request #',
    size: 8,
    ariaLabel: 'Show one request',
  });
  private logRaw = el('input', { id: 'inspector-log-raw', type: 'checkbox' });
  private log = el('div', { id: 'inspector-log' });

  private replay: Replay | null = null;
  private recording: EventsRecording | null = null;
  private recordedFor: string | null = null;
  private cursor = -1;
  private rank: string | null = null;
  private selected: number | null = null;
  private timer: ReturnType<typeof setInterval> | undefined;
  private job: { cancel: () => void } | null = null;
  /** The scenario the recording under way is of. */
  private jobFor: string | null = null;
  private seq = 0;
  private pending: InspectLink | null = null;
  /** The moment to open at once the recording under way is ready (a lesson's). */
  private pendingMoment: MomentKind | null = null;
  /** A lesson's scenario is on its way to the form: record that one, not the one on screen. */
  private awaitingLesson = false;
  /** The event a jump went to (marked in the log; the state shown is its pass's end). */
  private momentAt: number | null = null;

  constructor(private host: InspectorHost) {
    this.root.dataset.inspector = '';
    this.blockMap = new BlockMap((r) => this.select(r));
    this.build();
  }

  private build(): void {
    const lessons = el('div', { className: 'inspector-lessons' }, el('span', {}, 'Lessons: '));
    if (this.host.applyScenario) {
      for (const l of LESSONS) {
        const b = el('button', { type: 'button', textContent: l.title });
        b.dataset.lesson = l.id;
        b.addEventListener('click', () => this.lesson(l));
        lessons.append(b);
      }
    }
    const head = el(
      'header',
      { className: 'inspector-head' },
      el('h2', {}, 'Inspector'),
      el('label', {}, 'from ', this.fromIn, ' s'),
      el('label', {}, 'to ', this.toIn, ' s'),
      this.recordBtn,
      this.exportBtn,
    );
    const controls = el(
      'div',
      { className: 'inspector-controls' },
      this.backBtn,
      this.playBtn,
      this.fwdBtn,
      this.scrub,
      this.clock,
      el('label', {}, 'rank ', this.rankSel),
    );
    for (const [k, label] of Object.entries(MOMENTS)) this.momentSel.append(el('option', { value: k, textContent: label }));
    const moments = el('div', { className: 'inspector-moments' }, 'Jump to a ', this.momentSel, ' ', this.prevMoment, this.nextMoment, ' ', this.momentNote);
    this.blocksBox.append(this.blockMap.root);
    const blocks = el('div', {}, this.passInfo, this.blocksBox, this.treeBox);
    for (const k of [
      '',
      'arrived',
      'routed',
      'admitted',
      'preempted',
      'retracted',
      'transfer_start',
      'transfer_end',
      'first_token',
      'finished',
      'stored',
      'removed',
      'blocks',
      'pass',
    ]) {
      this.logKind.append(el('option', { value: k, textContent: k || 'all kinds' }));
    }
    const logBox = el(
      'div',
      {},
      el('div', { className: 'inspector-log-filter' }, this.logKind, this.logReq, el('label', {}, this.logRaw, ' raw lines')),
      this.log,
    );
    const grid = el(
      'div',
      { className: 'inspector-grid' },
      section('KV blocks', blocks, 'wide'),
      section('Batch and queue', this.queues, ''),
      section('Router', this.router, ''),
      section('Request timeline', this.timeline, 'wide'),
      section('Event log', logBox, 'wide'),
    );
    if (this.host.applyScenario) this.root.append(lessons);
    this.root.append(head, this.lessonNote, this.status, this.note, controls, moments, grid);

    this.recordBtn.addEventListener('click', () => void this.record());
    this.exportBtn.addEventListener('click', () => this.download());
    this.playBtn.addEventListener('click', () => (this.timer ? this.pause() : this.play()));
    this.backBtn.addEventListener('click', () => this.step(-1));
    this.fwdBtn.addEventListener('click', () => this.step(1));
    this.scrub.addEventListener('input', () => {
      if (!this.replay) return;
      this.pause();
      this.seekTime(Number(this.scrub.value));
    });
    this.rankSel.addEventListener('change', () => {
      this.rank = this.rankSel.value;
      this.render();
    });
    this.logKind.addEventListener('change', () => this.renderLog());
    this.logRaw.addEventListener('change', () => this.renderLog());
    this.prevMoment.addEventListener('click', () => this.jump(-1));
    this.nextMoment.addEventListener('click', () => this.jump(1));
    this.logReq.addEventListener('input', () => this.renderLog());
    this.root.addEventListener('keydown', (e) => {
      if (e.target instanceof HTMLInputElement && e.target.type !== 'range') return;
      if (e.key === 'ArrowRight' || e.key === '.') this.step(1);
      else if (e.key === 'ArrowLeft' || e.key === ',') this.step(-1);
      else return;
      e.preventDefault();
    });
    this.setControls(false);
  }

  get open(): boolean {
    return !this.root.hidden;
  }

  /** Shows the inspector; records the scenario on screen unless that is already done. */
  show(at?: InspectLink): void {
    this.root.hidden = false;
    if (at) this.pending = at;
    if (this.awaitingLesson) return;
    if (this.recordedFor !== this.host.scenarioJson()) void this.record();
    else if (this.pending) this.applyLink();
  }

  hide(): void {
    this.pause();
    this.root.hidden = true;
    this.writeLink(true);
  }

  /** The scenario changed: a recording of the old one is stale. */
  scenarioChanged(): void {
    // Closed, it records when opened; open, a recording of other settings (done or under
    // way) is replaced.
    this.awaitingLesson = false;
    const want = this.host.scenarioJson();
    if (this.open && (this.job ? this.jobFor : this.recordedFor) !== want) void this.record();
    else if (this.open && !this.job && this.pendingMoment && this.replay) {
      // A lesson whose scenario is already recorded: straight to its moment.
      this.momentSel.value = this.pendingMoment;
      this.pendingMoment = null;
      this.jump(1, -1);
    }
  }

  /** Applies a lesson by its id (its own setting, variant 0). */
  startLesson(id: string): void {
    const l = LESSONS.find((x) => x.id === id);
    if (l) this.lesson(l);
  }

  /** Applies variant `i` of a lesson (0: the lesson itself), with buttons for the others. */
  private lesson(l: Lesson, i = 0): void {
    const v = lessonVariant(l, i);
    const variants = el('div', { className: 'inspector-variants', role: 'group' }, 'Compare: ');
    variants.setAttribute('aria-label', `${l.title}: compare settings`);
    for (let k = 0; k <= l.compare.length; k++) {
      const b = el('button', { type: 'button', textContent: lessonVariant(l, k).label });
      b.dataset.variant = String(k);
      b.setAttribute('aria-pressed', String(k === i));
      b.addEventListener('click', () => this.lesson(l, k));
      variants.append(b);
    }
    this.momentSel.value = l.at;
    this.pendingMoment = l.at;
    this.awaitingLesson = this.host.applyScenario !== undefined;
    this.host.applyScenario?.(v.scenario);
    const back = el('button', { type: 'button', id: 'lesson-back', textContent: 'Back to my scenario' });
    back.addEventListener('click', () => {
      this.lessonNote.hidden = true;
      this.pendingMoment = null;
      this.host.restoreScenario?.();
    });
    back.hidden = !this.host.restoreScenario;
    this.lessonNote.hidden = false;
    this.lessonNote.replaceChildren(el('p', {}, `${l.title} (${v.label}): ${v.look}`), variants, back);
    this.lessonNote.dataset.lesson = l.id;
    this.lessonNote.dataset.variant = String(i);
  }

  private setControls(on: boolean): void {
    for (const b of [this.playBtn, this.backBtn, this.fwdBtn, this.scrub, this.rankSel, this.momentSel, this.prevMoment, this.nextMoment]) b.disabled = !on;
  }

  private window(): { from: number; to: number } {
    const from = Math.max(0, Number(this.fromIn.value) || 0) * 1000;
    const toS = this.toIn.value.trim();
    const to = toS === '' ? Number.POSITIVE_INFINITY : Number(toS) * 1000;
    return { from, to: Number.isFinite(to) && to >= from ? to : Number.POSITIVE_INFINITY };
  }

  /** Records the scenario on screen (over the window the inputs give). */
  async record(): Promise<void> {
    const seq = ++this.seq;
    this.job?.cancel();
    this.pause();
    const json = this.host.scenarioJson();
    const { from, to } = this.window();
    this.root.dataset.state = 'recording';
    this.status.textContent = 'Recording the event stream…';
    this.setControls(false);
    this.exportBtn.disabled = true;
    const job = this.host.engine.recordEvents(
      {
        json,
        trace: this.host.trace(),
        files: this.host.files(),
        from_ms: from,
        to_ms: to,
        max_requests: MAX_WHOLE_REQUESTS,
        window_ms: DEFAULT_WINDOW_MS,
        max_bytes: MAX_BYTES,
      },
      (p) => {
        if (seq === this.seq) this.status.textContent = `Recording the event stream… ${(p * 100).toFixed(0)} %`;
      },
    );
    this.job = job;
    this.jobFor = json;
    let rec: EventsRecording;
    try {
      rec = await job.result;
    } catch (e) {
      if (seq !== this.seq) return;
      this.job = null;
      this.root.dataset.state = 'error';
      this.status.textContent = `Could not record this scenario: ${(e as Error).message}`;
      return;
    }
    if (seq !== this.seq) return;
    this.job = null;
    const t0 = performance.now();
    let events: Ev[];
    try {
      events = parseEvents(new TextDecoder().decode(rec.bytes));
    } catch (e) {
      this.root.dataset.state = 'error';
      this.status.textContent = `The event stream could not be read: ${(e as Error).message}`;
      return;
    }
    const parseMs = performance.now() - t0;
    this.recording = rec;
    this.recordedFor = json;
    this.replay = new Replay(events);
    this.exportBtn.disabled = false;
    this.describe(rec, parseMs);
    const keys = this.replay.rankKeys;
    this.rankSel.replaceChildren(...keys.map((k) => el('option', { value: k, textContent: rankLabel(k) })));
    if (!this.rank || !keys.includes(this.rank)) this.rank = keys[0] ?? null;
    if (this.rank) this.rankSel.value = this.rank;
    const first = events[0]?.t_ms ?? 0;
    this.scrub.min = String(first);
    this.scrub.max = String(this.replay.endMs);
    this.setControls(events.length > 0);
    this.root.dataset.state = 'ready';
    // The scenario recorded (its non-default fields), for tests and for anyone curious.
    this.root.dataset.scenario = json;
    this.root.dataset.events = String(events.length);
    this.root.dataset.complete = String(rec.complete);
    if (this.pending) this.applyLink();
    else if (this.pendingMoment && !this.awaitingLesson) {
      // A lesson opens at its moment: the first event of its kind.
      const kind = this.pendingMoment;
      this.pendingMoment = null;
      this.momentSel.value = kind;
      if (!this.jump(1, -1)) this.seek(this.replay.stepPass(-1, 1, this.rank ?? undefined));
    } else {
      // Open at the first pass of the shown rank: something to look at.
      this.seek(this.replay.stepPass(-1, 1, this.rank ?? undefined));
    }
  }

  private describe(rec: EventsRecording, parseMs: number): void {
    const mb = (rec.bytes.byteLength / 1e6).toFixed(1);
    const parts = [
      `${rec.lines.toLocaleString('en')} events (${mb} MB) from ${rec.requests.toLocaleString('en')} requests, recorded in ${rec.elapsed_ms.toFixed(0)} ms, read in ${parseMs.toFixed(0)} ms.`,
    ];
    this.status.textContent = parts.join(' ');
    const notes: string[] = [];
    if (rec.windowed) {
      const to = Number.isFinite(rec.to_ms) ? fmtMs(rec.to_ms) : 'the end';
      notes.push(
        rec.requests > MAX_WHOLE_REQUESTS && !Number.isFinite(this.window().to)
          ? `This run has ${rec.requests.toLocaleString('en')} requests, more than the inspector records whole (${MAX_WHOLE_REQUESTS.toLocaleString('en')}): only ${fmtMs(rec.from_ms)} to ${to} of virtual time is recorded. Set "from" and "to" and Record to look elsewhere.`
          : `Only ${fmtMs(rec.from_ms)} to ${to} of virtual time is recorded: the state shown starts from what happened in that window (requests and blocks from before it are not shown).`,
      );
    }
    if (rec.dropped > 0)
      notes.push(`The recording stopped at ${(MAX_BYTES / 1e6).toFixed(0)} MB: ${rec.dropped.toLocaleString('en')} later events are not shown.`);
    notes.push(
      rec.complete
        ? 'The download is the file `servesim run --events` writes for this scenario.'
        : 'The download holds only the recorded window, not the whole `--events` file.',
    );
    this.note.hidden = false;
    this.note.textContent = notes.join(' ');
    this.note.dataset.windowed = String(rec.windowed);
  }

  private download(): void {
    if (!this.recording) return;
    const blob = new Blob([this.recording.bytes as Uint8Array<ArrayBuffer>], { type: 'application/x-ndjson' });
    const a = document.createElement('a');
    a.href = URL.createObjectURL(blob);
    a.download = this.recording.complete ? 'servesim-events.jsonl' : 'servesim-events-window.jsonl';
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
  }

  private applyLink(): void {
    const at = this.pending;
    this.pending = null;
    if (!at || !this.replay) return;
    if (at.rank && this.replay.rankKeys.includes(at.rank)) {
      this.rank = at.rank;
      this.rankSel.value = at.rank;
    }
    if (at.request !== null) this.selected = at.request;
    if (at.t_ms !== null) this.seekTime(at.t_ms);
    else this.seek(this.replay.stepPass(-1, 1, this.rank ?? undefined));
  }

  /** To the shown rank's last pass at or before `tMs`, so the state shown is a pass end. */
  private seekTime(tMs: number): void {
    if (!this.replay) return;
    const i = this.replay.indexAt(tMs);
    const pass = this.replay.passAtOrBefore(i, this.rank ?? undefined);
    this.seek(pass >= 0 ? pass : i);
  }

  private play(): void {
    if (!this.replay) return;
    this.playBtn.textContent = '⏸ Pause';
    this.root.dataset.playing = 'true';
    this.timer = setInterval(() => {
      const before = this.cursor;
      this.step(1, false);
      if (this.cursor === before) this.pause();
    }, PLAY_MS);
  }

  private pause(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.playBtn.textContent = '▶ Play';
    this.root.dataset.playing = 'false';
  }

  /**
   * To the next (1) or previous (-1) event of the chosen kind, from `from` (the cursor): its
   * rank is shown and its request selected. False when there is none that way.
   */
  jump(dir: 1 | -1, from = this.cursor): boolean {
    if (!this.replay) return false;
    this.pause();
    const kind = this.momentSel.value as MomentKind;
    const i = stepMoment(this.replay.events, from === this.cursor && this.momentAt !== null ? this.momentAt : from, dir, kind);
    const total = this.replay.events.filter((e) => isMoment(e, kind)).length;
    if (i < 0) {
      this.momentNote.textContent = total === 0 ? `No ${MOMENTS[kind]} in this recording.` : `No ${dir > 0 ? 'later' : 'earlier'} ${MOMENTS[kind]}.`;
      return false;
    }
    const e = this.replay.events[i] as Ev;
    if ('pool' in e && this.replay.rankKeys.includes(rankKey(e))) {
      this.rank = rankKey(e);
      this.rankSel.value = this.rank;
    }
    const req = requestOf(e);
    if (req !== undefined) this.selected = req;
    const nth = this.replay.events.slice(0, i + 1).filter((x) => isMoment(x, kind)).length;
    this.momentNote.textContent = `${MOMENTS[kind]} ${nth} of ${total}, at ${fmtMs(e.t_ms)}`;
    this.root.dataset.moment = kind;
    // Shown at the end of the pass it belongs to (its blocks freed, its chip back in the
    // queue), the event itself marked in the log.
    let end = i;
    for (let j = i; j < this.replay.events.length && (this.replay.events[j] as Ev).t_ms === e.t_ms; j++) {
      const x = this.replay.events[j] as Ev;
      if (x.kind === 'pass' && 'pool' in e && rankKey(x) === rankKey(e)) {
        end = j;
        break;
      }
    }
    this.seek(end);
    this.momentAt = i;
    this.renderLog();
    return true;
  }

  /** One pass of the shown rank forward or back. */
  step(dir: 1 | -1, stopPlaying = true): void {
    if (!this.replay) return;
    if (stopPlaying) this.pause();
    this.seek(this.replay.stepPass(this.cursor, dir, this.rank ?? undefined));
  }

  private seek(i: number): void {
    if (!this.replay) return;
    this.cursor = i;
    this.momentAt = null;
    this.render();
  }

  /** Selects a request: its timeline, routing and blocks (outlined in the map). */
  select(request: number | null): void {
    this.selected = request;
    this.render();
  }

  private state(): ClusterState | null {
    return this.replay ? this.replay.at(this.cursor) : null;
  }

  private render(): void {
    const replay = this.replay;
    const state = this.state();
    if (!replay || !state) return;
    const t0 = performance.now();
    const e = replay.events[this.cursor];
    const now = e?.t_ms ?? 0;
    this.scrub.value = String(now);
    this.clock.textContent = `t = ${fmtMs(now)}`;
    this.root.dataset.cursor = String(this.cursor);
    this.root.dataset.tMs = String(now);
    this.root.dataset.rank = this.rank ?? '';
    const rank = this.rank ? state.rank(this.rank) : null;
    if (rank) {
      const p = rank.pass;
      this.passInfo.textContent = p
        ? `${rankLabel(rank.key)}: pass ${fmtMs(p.start_ms)} → ${fmtMs(p.t_ms)} (${p.duration_ms.toFixed(2)} ms): ${p.prefill_tokens} prefill + ${p.decode_tokens} decode tokens, batch ${p.batch}, ${p.waiting} waiting`
        : `${rankLabel(rank.key)}: no pass yet`;
      this.passInfo.dataset.passBlocks = p ? JSON.stringify(p.blocks) : '';
      if (rank.hasBlocks) {
        this.blockMap.root.hidden = false;
        this.blockMap.draw(rank, this.selected);
        this.treeBox.replaceChildren();
        const removed = rank.removedNow.t === now ? rank.removedNow.hashes.length : 0;
        if (removed) this.treeBox.append(el('p', { className: 'inspector-sub' }, `${removed} cached block(s) removed at this time (the router was told).`));
      } else {
        // No per-block table (SGLang pages, the kvbm manager): counts and the radix tree.
        this.blockMap.root.hidden = true;
        const bar = el('div');
        renderPoolBar(bar, p?.blocks);
        this.treeBox.replaceChildren(bar);
        const tree = el('div');
        renderRadixTree(tree, rank);
        this.treeBox.append(tree);
      }
      renderQueues(this.queues, rank, state, this.selected, (r) => this.select(r));
    }
    renderTimeline(this.timeline, replay, this.selected, now);
    renderRouter(this.router, this.selected === null ? null : routerChoice(replay, this.selected));
    this.renderLog();
    this.root.dataset.renderMs = (performance.now() - t0).toFixed(1);
    this.writeLink(false);
  }

  private renderLog(): void {
    if (!this.replay) return;
    renderLog(this.log, this.replay.events, this.cursor, {
      kind: this.logKind.value,
      request: this.logReq.value.trim(),
      raw: this.logRaw.checked,
      moment: this.momentAt,
    });
  }

  /** The inspector's state into the URL (`?inspect=…`), so Copy link carries it. */
  private writeLink(clear: boolean): void {
    const url = new URL(location.href);
    const e = this.replay?.events[this.cursor];
    if (clear || !e) url.searchParams.delete('inspect');
    else url.searchParams.set('inspect', formatInspectParam({ t_ms: e.t_ms, rank: this.rank, request: this.selected }));
    if (url.href !== location.href) history.replaceState(history.state, '', url.href);
  }

  /** Opens at a time and rank (from a chart). */
  openAt(tMs: number, rank: string | null): void {
    this.show({ t_ms: tMs, rank, request: null });
    if (this.replay && this.recordedFor === this.host.scenarioJson()) this.applyLink();
    this.root.scrollIntoView({ block: 'start' });
  }
}

/** A `rankKey` for the n-th rank series of the charts (they list ranks in the same order). */
export function chartRankKey(ranks: { pool: string; worker: number; dp_rank: number }[], i: number): string | null {
  const r = ranks[i];
  return r ? rankKey(r) : null;
}
