// The Inspector (issue #23): a student steps through a preemption and an eviction and sees
// which blocks moved; the page's event download is byte for byte `servesim run --events`;
// the block map at a pass equals the stream's own counts at that pass; links and the embed
// open it at a time and rank; large runs are recorded over a window, and say so.

import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, type Page, test } from '@playwright/test';
import { LESSONS } from '../src/inspector/lessons';
import { SERVESIM } from './cli';
import { link, openForm, runsDone, screenshot, waitRun, watchErrors } from './helpers';

// These tests set individual settings: the whole form is open from the start.
test.beforeEach(async ({ page }) => openForm(page));

/** `servesim run SCENARIO --events OUT`: the file's bytes. */
function cliEvents(scenario: object): Buffer {
  if (!existsSync(SERVESIM)) throw new Error(`${SERVESIM} is missing: cargo build --release -p servesim_cli`);
  const dir = mkdtempSync(join(tmpdir(), 'servesim-events-'));
  try {
    writeFileSync(join(dir, 'scenario.json'), JSON.stringify(scenario));
    execFileSync(SERVESIM, ['run', join(dir, 'scenario.json'), '--events', join(dir, 'events.jsonl')], { maxBuffer: 1 << 30 });
    return readFileSync(join(dir, 'events.jsonl'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

type Line = Record<string, unknown> & { t_ms: number; kind: string };
const parse = (b: Buffer): Line[] =>
  b
    .toString('utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l.replace(/(?<=[:[,])(\d{16,})(?=[,\]}])/g, '"$1"')) as Line);
const key = (e: Line) => `${e.pool}/${e.worker}/${e.dp_rank}`;

function lesson(id: string) {
  const l = LESSONS.find((x) => x.id === id);
  if (!l) throw new Error(`no lesson ${id}`);
  return l;
}

/** Opens the playground on a scenario, then the inspector; waits for its recording. */
async function openInspector(page: Page, scenario: { name: string }, search = ''): Promise<void> {
  await page.goto(`/${search}${link(scenario)}`);
  await waitRun(page, 0, 30_000);
  if (!(await page.locator('[data-inspector]').isVisible())) await page.locator('#open-inspector').click();
  const insp = page.locator('[data-inspector]');
  await expect(insp).toHaveAttribute('data-scenario', new RegExp(`"name":"${scenario.name}"`), { timeout: 30_000 });
  await expect(insp).toHaveAttribute('data-state', 'ready', { timeout: 30_000 });
}

/** The page's download of the events. */
async function download(page: Page): Promise<Buffer> {
  const [dl] = await Promise.all([page.waitForEvent('download'), page.locator('#export-events').click()]);
  return readFileSync(await dl.path());
}

const blockCounts = (page: Page) =>
  page.locator('.inspector-blockmap').evaluate((n: HTMLElement) => ({
    in_use: Number(n.dataset.inUse),
    idle: Number(n.dataset.idle),
    free: Number(n.dataset.free),
    cached: Number(n.dataset.cached),
  }));

const cursor = async (page: Page) => Number(await page.locator('[data-inspector]').getAttribute('data-cursor'));

test.describe('the inspector', () => {
  test('a student steps through a preemption and sees which blocks moved', async ({ page }, info) => {
    test.setTimeout(120_000);
    const errors = watchErrors(page);
    const l = lesson('preemption');
    await page.goto('/');
    await waitRun(page, 0, 30_000);
    await page.locator('#open-inspector').click();
    await expect(page.locator('[data-inspector]')).toBeVisible();
    // The lesson's button sets the scenario like a link; the inspector records it.
    const n = await runsDone(page);
    await page.locator('[data-lesson="preemption"]').click();
    await waitRun(page, n, 30_000);
    await expect(page.locator('.inspector-lesson')).toContainText('preempts the most recently admitted');
    await expect(page.locator('[data-inspector]')).toHaveAttribute('data-scenario', /lesson: preemption/, { timeout: 30_000 });
    await expect(page.locator('[data-inspector]')).toHaveAttribute('data-state', 'ready', { timeout: 30_000 });
    await expect(page.locator('[data-inspector]')).toHaveAttribute('data-complete', 'true');

    // The download is exactly the CLI's file for the scenario the page shows.
    const shown = JSON.parse((await page.locator('#scenario-file').textContent()) ?? '{}') as object;
    expect(shown).toMatchObject({ name: l.scenario.name });
    const mine = await download(page);
    const cli = cliEvents(shown);
    expect(mine.length).toBe(cli.length);
    expect(mine.equals(cli)).toBe(true);
    const events = parse(cli);
    expect(Number(await page.locator('[data-inspector]').getAttribute('data-events'))).toBe(events.length);

    // Find the first preemption in the stream, then scrub to just before it.
    const pi = events.findIndex((e) => e.kind === 'preempted');
    expect(pi).toBeGreaterThan(0);
    const victim = events[pi]?.request as number;
    const rank = key(events[pi] as Line);
    let passBefore = pi;
    while (passBefore > 0 && !((events[passBefore] as Line).kind === 'pass' && key(events[passBefore] as Line) === rank)) passBefore--;
    await page.locator('#inspector-scrub').fill(String((events[passBefore] as Line).t_ms));
    await expect.poll(() => cursor(page)).toBeGreaterThanOrEqual(passBefore);
    // The victim is running and holds blocks.
    await page.locator(`[data-list="running"] [data-request="${victim}"]`).click();
    const heldBefore = await page.locator('#inspector-timeline .inspector-timeline').count();
    expect(heldBefore).toBe(1);
    await screenshot(page, info, 'inspector-before-preemption.png', false);

    // Step pass by pass up to the preemption; at every pass the block map's counts equal the
    // pass line's own (the engine's pool as the pass left it).
    for (let guard = 0; guard < 50 && (await cursor(page)) < pi; guard++) {
      await page.locator('#inspector-forward').click();
      const at = await cursor(page);
      const p = events[at] as Line;
      expect(p.kind).toBe('pass');
      expect(await blockCounts(page)).toEqual(p.blocks);
    }
    expect(await cursor(page)).toBeGreaterThan(pi);
    // Now the victim waits at the head of the queue, marked preempted, holding nothing.
    const chip = page.locator(`[data-list="waiting"] [data-request="${victim}"]`);
    await expect(chip).toHaveAttribute('data-preempted', '1');
    await expect(page.locator('[data-list="waiting"] .inspector-chip').first()).toHaveAttribute('data-request', String(victim));
    await expect(page.locator('#inspector-log li[data-kind="preempted"]').first()).toContainText(`request #${victim} is preempted`);
    await expect(page.locator('#inspector-timeline .seg[data-kind="preempted"]')).toHaveCount(1);
    await expect(page.locator('#inspector-timeline')).toContainText('lost its KV 1×');
    // Why: the story says so, with the pool as that pass left it.
    await expect(page.locator('.inspector-story')).toContainText('needed a new block and none was free');
    await expect(page.locator('.inspector-story')).toContainText(/after that pass: \d+ free/);
    await screenshot(page, info, 'inspector-after-preemption.png', false);

    // One pass back and the victim runs again (the step is exact, both ways).
    await page.locator('#inspector-back').click();
    await expect(page.locator(`[data-list="running"] [data-request="${victim}"]`)).toBeVisible();
    // The share link carries the moment, rank and request.
    const href = page.url();
    expect(new URL(href).searchParams.get('inspect')).toMatch(new RegExp(`,${rank.replace(/\//g, '\\/')},${victim}$`));
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write']);
    await page.locator('#copy-link').click();
    const copied = await page.evaluate(() => navigator.clipboard.readText());
    expect(new URL(copied).searchParams.get('inspect')).toBe(new URL(href).searchParams.get('inspect'));
    expect(new URL(copied).hash).toMatch(/^#v1\./);
    expect(errors).toEqual([]);
  });

  test('a lesson compares LIFO with FIFO: the first victim is the newest running request, then the oldest', async ({ page }, info) => {
    test.setTimeout(120_000);
    const errors = watchErrors(page);
    await page.goto('/');
    await waitRun(page, 0, 30_000);
    await page.locator('#open-inspector').click();
    const insp = page.locator('[data-inspector]');
    /** The first preemption's victim, and the rank's running requests then, in admission order. */
    const firstVictim = (events: Line[]) => {
      const running = new Map<string, number[]>();
      for (const e of events) {
        const r = running.get(key(e)) ?? [];
        running.set(key(e), r);
        const id = e.request as number;
        if (e.kind === 'admitted') r.push(id);
        else if (e.kind === 'finished' || e.kind === 'preempted') {
          if (e.kind === 'preempted') return { victim: id, running: [...r] };
          r.splice(r.indexOf(id), 1);
        }
      }
      throw new Error('no preemption');
    };
    for (const [variant, label, pick] of [
      ['0', 'LIFO', (r: number[]) => r.at(-1)],
      ['1', 'FIFO', (r: number[]) => r[0]],
    ] as const) {
      const n = await runsDone(page);
      if (variant === '0') await page.locator('[data-lesson="preemption"]').click();
      else await page.locator(`.inspector-variants [data-variant="${variant}"]`).click();
      await waitRun(page, n, 30_000);
      await expect(page.locator(`.inspector-variants [data-variant="${variant}"]`)).toHaveAttribute('aria-pressed', 'true');
      await expect(page.locator('.inspector-lesson p')).toContainText(`(${label})`);
      await expect(insp).toHaveAttribute('data-scenario', variant === '0' ? /lesson: preemption under KV pressure"/ : /\(FIFO\)/, { timeout: 30_000 });
      await expect(insp).toHaveAttribute('data-state', 'ready', { timeout: 30_000 });
      const shown = JSON.parse((await page.locator('#scenario-file').textContent()) ?? '{}') as { engine?: { preemption_mode?: string } };
      expect(shown.engine?.preemption_mode ?? 'lifo').toBe(label.toLowerCase());
      const mine = await download(page);
      expect(mine.equals(cliEvents(shown))).toBe(true);
      const { victim, running } = firstVictim(parse(mine));
      expect(running.length).toBeGreaterThan(1);
      expect(victim).toBe(pick(running));
    }
    await screenshot(page, info, 'inspector-lesson-fifo.png', false);
    expect(errors).toEqual([]);
  });

  test('prefix reuse and eviction show in the block map; hover tells hash and holders', async ({ page }, info) => {
    test.setTimeout(120_000);
    const errors = watchErrors(page);
    const l = lesson('prefix-reuse');
    await openInspector(page, l.scenario as { name: string });
    const events = parse(cliEvents(l.scenario));
    // The first pass where a block is held by two requests at once, per the stream.
    const holders = new Map<number, number>();
    let shared = -1;
    for (let i = 0; i < events.length && shared < 0; i++) {
      const e = events[i] as Line;
      if (e.kind === 'blocks') for (const [b, , h] of e.set as [number, string | null, number][]) holders.set(b, h);
      if (e.kind === 'pass' && [...holders.values()].some((h) => h > 1)) shared = i;
    }
    expect(shared).toBeGreaterThan(0);
    const admittedWithCache = events.find((e) => e.kind === 'admitted' && (e.cached_tokens as number) > 0);
    expect(admittedWithCache).toBeDefined();
    await page.locator('#inspector-scrub').fill(String((events[shared] as Line).t_ms));
    await expect.poll(() => cursor(page)).toBe(shared);
    console.log(`prefix lesson: ${events.length} events, render ${await page.locator('[data-inspector]').getAttribute('data-render-ms')} ms`);
    const map = page.locator('.inspector-blockmap');
    expect(Number(await map.getAttribute('data-shared'))).toBeGreaterThan(0);
    expect(await blockCounts(page)).toEqual((events[shared] as Line).blocks);
    // Hover block 0 (the first prompt block: the shared prefix) for its hash and holders.
    const canvas = map.locator('canvas');
    const box = await canvas.boundingBox();
    if (!box) throw new Error('no block map');
    await page.mouse.move(box.x + 2, box.y + 2);
    const tip = page.locator('.inspector-tip');
    await expect(tip).toBeVisible();
    await expect(tip).toContainText('block 0: in use, shared by');
    const hash = /hash (\d+)/.exec((await tip.textContent()) ?? '')?.[1];
    const stored = events.filter((e) => e.kind === 'stored').flatMap((e) => e.hashes as string[]);
    expect(stored.map(String)).toContain(hash);
    await screenshot(page, info, 'inspector-prefix-reuse.png', false);

    // Eviction: the lesson with more prompt families than the pool holds.
    const ev = lesson('eviction');
    await openInspector(page, ev.scenario as { name: string });
    const evs = parse(cliEvents(ev.scenario));
    const ri = evs.findIndex((e) => e.kind === 'removed');
    expect(ri).toBeGreaterThan(0);
    const pass = evs.findIndex((e, i) => i > ri && e.kind === 'pass' && key(e) === key(evs[ri] as Line));
    await page.locator('#inspector-scrub').fill(String((evs[pass] as Line).t_ms));
    await expect.poll(() => cursor(page)).toBeGreaterThanOrEqual(pass);
    await expect(page.locator('[data-inspector]')).toContainText('removed at this time');
    expect(Number(await map.getAttribute('data-evicted'))).toBeGreaterThan(0);
    expect(await blockCounts(page)).toEqual((evs[await cursor(page)] as Line).blocks);
    await screenshot(page, info, 'inspector-eviction.png', false);
    expect(errors).toEqual([]);
  });

  test("the router table shows every worker's cost; the cheapest was chosen", async ({ page }, info) => {
    test.setTimeout(120_000);
    const l = lesson('kv-routing');
    await openInspector(page, l.scenario as { name: string });
    const cli = cliEvents(l.scenario);
    expect((await download(page)).equals(cli)).toBe(true);
    const events = parse(cli);
    const routed = events.filter((e) => e.kind === 'routed' && Array.isArray(e.costs));
    const r = routed[routed.length - 1] as Line;
    await page.locator('#inspector-scrub').fill(String(r.t_ms));
    await page.locator('#inspector-log-kind').selectOption('routed');
    await expect(page.locator('#inspector-log li').last()).toContainText('routed');
    // Select the request through the page's link parameter, as a shared link would.
    const url = new URL(page.url());
    url.searchParams.set('inspect', `${r.t_ms},${key(r)},${r.request}`);
    await page.goto(url.href);
    await expect(page.locator('[data-inspector]')).toHaveAttribute('data-state', 'ready', { timeout: 30_000 });
    const rows = page.locator('.inspector-router tbody tr');
    await expect(rows).toHaveCount(4);
    const costs = r.costs as number[];
    const best = costs.indexOf(Math.min(...costs));
    await expect(rows.nth(best)).toHaveAttribute('data-chosen', 'true');
    await expect(rows.nth(best)).toContainText((costs[best] as number).toFixed(2));
    await screenshot(page, info, 'inspector-router.png', false);
  });

  test('a chart moment opens in the inspector; the embed shows just the inspector', async ({ page }, info) => {
    test.setTimeout(90_000);
    const l = lesson('preemption');
    await page.goto(`/${link(l.scenario)}`);
    await waitRun(page, 0, 30_000);
    const over = page.locator('#chart-kv .u-over');
    await over.scrollIntoViewIfNeeded();
    const b = await over.boundingBox();
    if (!b) throw new Error('no chart');
    await page.mouse.move(b.x + b.width / 2, b.y + b.height / 2);
    await page.mouse.dblclick(b.x + b.width / 2, b.y + b.height / 2);
    const insp = page.locator('[data-inspector]');
    await expect(insp).toHaveAttribute('data-state', 'ready', { timeout: 30_000 });
    await expect(insp).toHaveAttribute('data-rank', 'aggregated/0/0');
    const t = Number(await insp.getAttribute('data-t-ms'));
    expect(t).toBeGreaterThan(0);

    const errors = watchErrors(page);
    await page.goto(`/embed.html?inspect=${t},aggregated/0/0${link(l.scenario)}`);
    await expect(page.locator('[data-inspector]')).toHaveAttribute('data-state', 'ready', { timeout: 30_000 });
    await expect(page.locator('.inspector-blockmap canvas')).toBeVisible();
    await expect(page.locator('#chart-throughput')).toBeHidden();
    expect(Math.abs(Number(await page.locator('[data-inspector]').getAttribute('data-t-ms')) - t)).toBeLessThan(1000);
    await screenshot(page, info, 'inspector-embed.png', false);
    expect(errors).toEqual([]);
  });

  test('a large run is recorded over a window and says so; junk in the link is ignored', async ({ page }) => {
    test.setTimeout(120_000);
    const big = {
      name: 'many requests',
      workload: { type: 'synthetic', num_requests: 6000, rate_rps: 200, input_tokens: { mean: 256, stddev: 0 }, output_tokens: { mean: 16, stddev: 0 } },
    };
    const errors = watchErrors(page);
    await openInspector(page, big, '?inspect=%3Cb%3E,not-a-rank,-4');
    const insp = page.locator('[data-inspector]');
    await expect(page.locator('#inspector-note')).toHaveAttribute('data-windowed', 'true');
    await expect(page.locator('#inspector-note')).toContainText('more than the inspector records whole');
    await expect(insp).toHaveAttribute('data-complete', 'false');
    expect(Number(await page.locator('#inspector-scrub').getAttribute('max'))).toBeLessThanOrEqual(20_000);
    // Another window, chosen by hand.
    await page.locator('#inspector-from').fill('10');
    await page.locator('#inspector-to').fill('12');
    await page.locator('#inspector-record').click();
    await expect(insp).toHaveAttribute('data-state', 'ready', { timeout: 30_000 });
    await expect(page.locator('#inspector-note')).toContainText('Only 10.00 s to 12.00 s');
    expect(Number(await page.locator('#inspector-scrub').getAttribute('min'))).toBeGreaterThanOrEqual(10_000);
    expect(errors).toEqual([]);
  });

  test('SGLang shows its pool and the radix tree of cached blocks', async ({ page }, info) => {
    test.setTimeout(90_000);
    const errors = watchErrors(page);
    const sg = { ...lesson('prefix-reuse').scenario, name: 'sglang prefix', engine: { backend: 'sglang', num_gpu_blocks: 8192, max_num_seqs: 8 } };
    await openInspector(page, sg);
    await page.locator('#inspector-forward').click();
    await page.locator('#inspector-forward').click();
    await expect(page.locator('.inspector-blockmap')).toBeHidden();
    await expect(page.locator('[data-inspector]')).toContainText('Radix tree of the');
    await expect(page.locator('.inspector-tree')).toContainText('block');
    await screenshot(page, info, 'inspector-sglang.png', false);
    expect(errors).toEqual([]);
  });

  test('on a phone the inspector stacks and stays usable', async ({ page }, info) => {
    test.setTimeout(90_000);
    await page.setViewportSize({ width: 390, height: 844 });
    const l = lesson('prefix-reuse');
    await openInspector(page, l.scenario as { name: string });
    await page.locator('#inspector-forward').click();
    await page.locator('#inspector-forward').click();
    const box = await page.locator('.inspector-blockmap canvas').boundingBox();
    expect(box?.width ?? 0).toBeLessThanOrEqual(390);
    // Nothing in the panel is wider than the screen.
    const wide = await page.locator('[data-inspector]').evaluate((n) => n.scrollWidth);
    expect(wide).toBeLessThanOrEqual(390);
    await page.locator('[data-inspector]').evaluate((n) => n.scrollIntoView());
    await screenshot(page, info, 'inspector-phone.png', false);
    await page.locator('#inspector-blocks').evaluate((n) => n.scrollIntoView());
    await screenshot(page, info, 'inspector-phone-blocks.png', false);
  });
});
