import { describe, expect, it } from 'vitest';
import { formatInspectParam, parseInspectParam } from './inspector';
import { type ClusterState, type Ev, isMoment, parseEvents, Replay, requestTimeline, routerChoice, StreamError, stepMoment } from './model';
import { legendRank } from './mount';
import { describeEvent } from './view';

// A hand-written stream in the CLI's format: two requests on one vLLM rank sharing a cached
// block, the second preempted and readmitted, with a hash beyond a double's precision.
const P = '"pool":"aggregated","worker":0,"dp_rank":0';
const BIG = '18446744073709551557';
const LINES = [
  `{"t_ms":0.0,"kind":"arrived","request":0,"input_tokens":32,"output_tokens":2}`,
  `{"t_ms":0.0,"kind":"routed","request":0,${P}}`,
  `{"t_ms":1.0,"kind":"arrived","request":1,"input_tokens":32,"output_tokens":4}`,
  `{"t_ms":1.0,"kind":"routed","request":1,${P}}`,
  `{"t_ms":5.0,"kind":"stored",${P},"parent":null,"hashes":[${BIG},42]}`,
  `{"t_ms":5.0,"kind":"admitted","request":0,${P},"cached_tokens":0,"readmission":false}`,
  `{"t_ms":5.0,"kind":"blocks",${P},"set":[[0,${BIG},1],[1,42,1]],"held":[[0,0,[0,1]]]}`,
  `{"t_ms":5.0,"kind":"pass",${P},"start_ms":0.0,"duration_ms":5.0,"prefill_tokens":32,"decode_tokens":0,"batch":1,"waiting":1,"blocks":{"in_use":2,"idle":0,"free":2,"cached":2}}`,
  `{"t_ms":5.0,"kind":"first_token","request":0,${P},"ttft_ms":5.0}`,
  `{"t_ms":9.0,"kind":"admitted","request":1,${P},"cached_tokens":16,"readmission":false}`,
  `{"t_ms":9.0,"kind":"blocks",${P},"set":[[0,${BIG},2],[2,null,1],[3,null,1]],"held":[[0,2,[3]],[1,0,[0,2]]]}`,
  `{"t_ms":9.0,"kind":"pass",${P},"start_ms":5.0,"duration_ms":4.0,"prefill_tokens":16,"decode_tokens":1,"batch":2,"waiting":0,"blocks":{"in_use":4,"idle":0,"free":0,"cached":2}}`,
  `{"t_ms":9.0,"kind":"set_aside_for_a_future_kind","x":1}`,
  `{"t_ms":12.0,"kind":"preempted","request":1,${P}}`,
  `{"t_ms":12.0,"kind":"blocks",${P},"set":[[0,${BIG},1],[2,null,0]],"held":[[1,0,[]]]}`,
  `{"t_ms":12.0,"kind":"pass",${P},"start_ms":9.0,"duration_ms":3.0,"prefill_tokens":0,"decode_tokens":1,"batch":1,"waiting":1,"blocks":{"in_use":3,"idle":0,"free":1,"cached":2}}`,
  `{"t_ms":12.0,"kind":"finished","request":0,"status":"completed","output_tokens":2}`,
];
const TEXT = `${LINES.join('\n')}\n`;
const PASS = '"start_ms":0,"duration_ms":1,"prefill_tokens":0,"decode_tokens":0,"batch":0,"waiting":0,"blocks":{"in_use":0,"idle":0,"free":1,"cached":0}';

describe('the inspector model', () => {
  it('keeps u64 hashes exact', () => {
    const events = parseEvents(TEXT);
    const stored = events[4];
    const blocks = events[6];
    if (stored?.kind !== 'stored' || blocks?.kind !== 'blocks') throw new Error('the fixture changed');
    expect(stored.hashes).toEqual([BIG, '42']);
    expect(stored.parent).toBeNull();
    expect(blocks.set[0]?.[1]).toBe(BIG);
  });

  it('skips a kind it does not know, as readers may', () => {
    const events = parseEvents(TEXT);
    expect(events).toHaveLength(LINES.length - 1);
    expect(events.map((e) => e.kind)).not.toContain('set_aside_for_a_future_kind');
  });

  it('names a bad line', () => {
    expect(() => parseEvents(`${LINES[0]}\n{oops\n`)).toThrow(StreamError);
    expect(() => parseEvents(`${LINES[0]}\n{oops\n`)).toThrow(/events line 2/);
    expect(() => parseEvents('[1,2]\n')).toThrow(/line 1: not an event/);
    expect(() => parseEvents(`${LINES[0]}\n{"t_ms":0,"kind":"pass",${P}}\n`)).toThrow('events line 2: a "pass" line without "start_ms"');
  });

  it('replays blocks, holders and queues to each pass', () => {
    const replay = new Replay(parseEvents(TEXT));
    let s: ClusterState = replay.at(7);
    let rank = s.rank('aggregated/0/0');
    expect(rank.counts()).toMatchObject({ in_use: 2, idle: 0, free: 2, cached: 2, shared: 0 });
    expect([...rank.running]).toEqual([0]);
    expect(rank.waiting).toEqual([1]);
    s = replay.at(11);
    rank = s.rank('aggregated/0/0');
    // Block 0 (the shared prefix) is held by both requests.
    expect(rank.counts()).toMatchObject({ in_use: 4, free: 0, shared: 1 });
    expect(rank.holdersOf().get(0)).toEqual([0, 1]);
    expect(rank.held.get(0)).toEqual([0, 1, 3]);
    s = replay.at(14);
    rank = s.rank('aggregated/0/0');
    expect(rank.evicted.size).toBe(0);
    expect(rank.counts()).toMatchObject({ in_use: 3, free: 1, shared: 0 });
    expect(rank.waiting).toEqual([1]);
    expect(s.requests.get(1)?.preemptions).toBe(1);
    // Each pass's block counts agree with its own `blocks` field.
    for (const i of replay.passes) {
      const r = replay.at(i).rank('aggregated/0/0');
      const b = r.pass?.blocks;
      if (!b) throw new Error(`no pass at ${i}`);
      const c = r.counts();
      expect([c.in_use, c.idle, c.free, c.cached]).toEqual([b.in_use, b.idle, b.free, b.cached]);
    }
  });

  it('gives the same state going back as going forward', () => {
    // Many small passes, so the replay takes checkpoints.
    const lines: string[] = [];
    for (let i = 0; i < 3000; i++) {
      lines.push(`{"t_ms":${i},"kind":"blocks",${P},"set":[[${i % 7},${i % 3 === 0 ? 'null' : i},${i % 4}]],"held":[]}`);
      lines.push(
        `{"t_ms":${i},"kind":"pass",${P},"start_ms":${i},"duration_ms":1,"prefill_tokens":0,"decode_tokens":0,"batch":0,"waiting":0,"blocks":{"in_use":0,"idle":0,"free":7,"cached":0}}`,
      );
    }
    const events = parseEvents(lines.join('\n'));
    const replay = new Replay(events);
    const snapshot = (i: number) => {
      const r = replay.at(i).rank('aggregated/0/0');
      return JSON.stringify([r.holders, r.hashes, [...r.evicted]]);
    };
    const forward = [10, 2500, 4100, 5999].map(snapshot);
    const back = [5999, 4100, 2500, 10].map(snapshot).reverse();
    expect(back).toEqual(forward);
    const fresh = new Replay(events);
    expect(JSON.stringify(fresh.at(2500).rank('aggregated/0/0').holders)).toBe(JSON.stringify(JSON.parse(forward[1] as string)[0]));
  });

  it('steps pass by pass and finds times', () => {
    const replay = new Replay(parseEvents(TEXT));
    expect(replay.passes).toEqual([7, 11, 14]);
    expect(replay.stepPass(-1, 1)).toBe(7);
    expect(replay.stepPass(7, 1)).toBe(11);
    expect(replay.stepPass(11, -1)).toBe(7);
    expect(replay.stepPass(7, -1)).toBe(7);
    expect(replay.indexAt(9)).toBe(11);
    expect(replay.indexAt(-1)).toBe(-1);
  });

  it("tells a request's life and its routing", () => {
    const replay = new Replay(parseEvents(TEXT));
    const { segments, chunks } = requestTimeline(replay, 1);
    expect(segments.map((s) => s.kind)).toEqual(['waiting', 'prefill', 'preempted']);
    expect(segments[1]).toMatchObject({ from: 9, to: 12 });
    expect(chunks).toEqual([9]);
    expect(routerChoice(replay, 1)).toMatchObject({ chosen: 'aggregated/0/0', targets: [{ key: 'aggregated/0/0', cost: null }] });
    const kv = `{"t_ms":0,"kind":"routed","request":3,"pool":"aggregated","worker":1,"dp_rank":0,"costs":[4.5,1.25],"overlap_blocks":[0,6]}
{"t_ms":1,"kind":"pass","pool":"aggregated","worker":0,"dp_rank":0,${PASS}}
{"t_ms":1,"kind":"pass","pool":"aggregated","worker":1,"dp_rank":0,${PASS}}`;
    const c = routerChoice(new Replay(parseEvents(kv)), 3);
    expect(c?.targets).toEqual([
      { key: 'aggregated/0/0', cost: 4.5, overlap: 0 },
      { key: 'aggregated/1/0', cost: 1.25, overlap: 6 },
    ]);
  });

  it('reads and writes the link parameter, refusing junk', () => {
    const l = { t_ms: 1234.5, rank: 'aggregated/1/0', request: 7 };
    expect(parseInspectParam(formatInspectParam(l))).toEqual(l);
    expect(parseInspectParam('12')).toEqual({ t_ms: 12, rank: null, request: null });
    expect(parseInspectParam('x,<script>,-1')).toEqual({ t_ms: null, rank: null, request: null });
    expect(parseInspectParam(null)).toBeNull();
  });

  it('maps chart legend names to ranks', () => {
    expect(legendRank('worker 3')).toBe('aggregated/3/0');
    expect(legendRank('B prefill 1.2')).toBe('prefill/1/2');
    expect(legendRank('time (s)')).toBeNull();
  });
});

describe('moments', () => {
  const lines = [
    '{"t_ms":1,"kind":"arrived","request":0,"input_tokens":64,"output_tokens":4}',
    '{"t_ms":1,"kind":"routed","request":0,"pool":"aggregated","worker":0,"dp_rank":0,"costs":[1.5,2],"overlap_blocks":[0,0]}',
    '{"t_ms":2,"kind":"admitted","request":0,"pool":"aggregated","worker":0,"dp_rank":0,"cached_tokens":0,"readmission":false}',
    '{"t_ms":3,"kind":"routed","request":1,"pool":"aggregated","worker":0,"dp_rank":0,"costs":[0.5,2],"overlap_blocks":[1,0]}',
    '{"t_ms":4,"kind":"admitted","request":1,"pool":"aggregated","worker":0,"dp_rank":0,"cached_tokens":16,"readmission":false}',
    '{"t_ms":5,"kind":"preempted","request":0,"pool":"aggregated","worker":0,"dp_rank":0}',
    '{"t_ms":6,"kind":"removed","pool":"aggregated","worker":0,"dp_rank":0,"hashes":[12345678901234567890]}',
    '{"t_ms":7,"kind":"preempted","request":1,"pool":"aggregated","worker":0,"dp_rank":0}',
  ];
  const events = parseEvents(lines.join('\n'));

  it('finds the next and previous event of a kind, and nothing past the ends', () => {
    expect(stepMoment(events, -1, 1, 'preempted')).toBe(5);
    expect(stepMoment(events, 5, 1, 'preempted')).toBe(7);
    expect(stepMoment(events, 7, 1, 'preempted')).toBe(-1);
    expect(stepMoment(events, 7, -1, 'preempted')).toBe(5);
    // A reuse is an admission with cached tokens; a routing choice one where a target held blocks.
    expect(stepMoment(events, -1, 1, 'reuse')).toBe(4);
    expect(stepMoment(events, -1, 1, 'routing')).toBe(3);
    expect(stepMoment(events, -1, 1, 'evicted')).toBe(6);
    expect(events.filter((e) => isMoment(e, 'admitted'))).toHaveLength(2);
  });

  it('tells each event as a sentence, hashes shortened', () => {
    expect(describeEvent(events[5] as Ev)).toBe('5.0 ms · worker 0 · request #0 is preempted: it loses its KV blocks and goes back to the head of the queue');
    expect(describeEvent(events[4] as Ev)).toBe('4.0 ms · worker 0 · request #1 is admitted, reusing 16 cached prompt tokens');
    expect(describeEvent(events[6] as Ev)).toBe('6.0 ms · worker 0 · 1 cached block evicted (123456…): the router is told');
  });
});
