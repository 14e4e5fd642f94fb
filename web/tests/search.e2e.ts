// "Find the cheapest configuration": the capacity question answered by the page's search
// (the engine's own recommend search, on Web Workers) with no more GPUs than a brute-force
// search of the same space by the CLI; the answer in words; the edge-of-range and short-run
// warnings; responsiveness (no long main-thread task); axe at zero on the panel.

import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, type Page, test } from '@playwright/test';
import { SERVESIM } from './cli';
import { link, screenshot, waitRun, watchErrors } from './helpers';

test.use({ bypassCSP: true });
const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

/** The review's capacity question: Llama 3.1 70B on H100s, 10 req/s of 2,000 → 300 tokens. */
const CAPACITY = {
  engine: { timing_model: { type: 'roofline', model: 'llama-3.1-70b', gpu: 'h100', tp: 4 } },
  workload: { type: 'synthetic', num_requests: 2000, rate_rps: 10, input_tokens: { mean: 2000, stddev: 0 }, output_tokens: { mean: 300, stddev: 0 } },
};

async function openSearch(page: Page, scenario: object): Promise<void> {
  await page.goto(`/${link(scenario)}`);
  // The playground runs the scenario on screen first; the search is measured on its own.
  await waitRun(page, 0, 60_000);
  await page.locator('#search > summary').click();
  await expect(page.locator('#search-rate')).toHaveValue('10');
}

async function fill(page: Page, values: Record<string, string>): Promise<void> {
  for (const [k, v] of Object.entries(values)) await page.locator(`#search-${k}`).fill(v);
}

async function searchDone(page: Page, timeout = 170_000): Promise<void> {
  await expect(page.locator('#search-status')).toHaveAttribute('data-state', 'done', { timeout });
}

async function download(page: Page, button: string): Promise<string> {
  const [d] = await Promise.all([page.waitForEvent('download'), page.locator(button).click()]);
  const chunks = await (await d.createReadStream()).toArray();
  return Buffer.concat(chunks).toString('utf8');
}

/** `servesim recommend` of a file, every point (max_trials past the space): the cheapest GPUs. */
function bruteForce(file: string): { gpus: number; candidates: number } {
  const dir = mkdtempSync(join(tmpdir(), 'servesim-search-'));
  try {
    writeFileSync(join(dir, 'search.yaml'), file);
    execFileSync(SERVESIM, ['recommend', join(dir, 'search.yaml'), '--set', 'optimizer.max_trials=100000', '--output-dir', join(dir, 'out'), '--jobs', '2'], {
      encoding: 'utf8',
      maxBuffer: 1 << 28,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const ledger = JSON.parse(readFileSync(join(dir, 'out', 'recommendation.json'), 'utf8')) as {
      algorithm: string;
      candidates: { rank?: number; gpus?: number }[];
    };
    expect(ledger.algorithm).toBe('exhaustive');
    const best = ledger.candidates.find((c) => c.rank === 1);
    return { gpus: best?.gpus ?? Infinity, candidates: ledger.candidates.length };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('the capacity question: the page finds a configuration no dearer than a brute-force search of the same space, in words, responsively', async ({
  page,
}, info) => {
  test.setTimeout(600_000);
  const errors = watchErrors(page);
  await page.addInitScript(() => {
    const w = window as unknown as { __long: number[] };
    w.__long = [];
    new PerformanceObserver((l) => {
      for (const e of l.getEntries()) w.__long.push(e.duration);
      (w as unknown as { __lt: string[] }).__lt ??= [];
      for (const e of l.getEntries()) (w as unknown as { __lt: string[] }).__lt.push(`${e.startTime.toFixed(0)}:${e.duration.toFixed(0)}`);
    }).observe({ type: 'longtask', buffered: true });
  });
  await openSearch(page, CAPACITY);
  await expect(page.locator('#search-context')).toContainText('llama-3.1-70b on H100 GPUs');
  await expect(page.locator('#search-tp')).toHaveValue('4, 8');
  await fill(page, { ttft: '2000', itl: '50' });
  await page.evaluate(() => {
    (window as unknown as { __long: number[] }).__long = [];
  });
  const t0 = Date.now();
  const tClick = await page.evaluate(() => performance.now());
  await page.locator('#search-run').click();
  await expect(page.locator('#search-status')).toHaveAttribute('data-state', 'running');
  // Typing stays quick while candidates run (in the panel: an edit of the form would start
  // the playground's own run, whose drawing is not the search's).
  const a = Date.now();
  await page.locator('#search-trials').fill('101');
  await page.locator('#search-trials').fill('100');
  const typing = Date.now() - a;
  await searchDone(page);
  const secs = (Date.now() - t0) / 1000;
  const long = await page.evaluate(() => (window as unknown as { __long: number[] }).__long);
  const renders = Number(await page.locator('#search-results').getAttribute('data-renders'));
  const candidates = Number(await page.locator('#search-status').getAttribute('data-candidates'));
  const max = Math.max(0, ...long);
  const tDone = await page.evaluate(() => performance.now());
  console.log(
    `search: long tasks (start:ms) from the click at ${tClick.toFixed(0)} to ${tDone.toFixed(0)}: ${JSON.stringify(await page.evaluate(() => (window as unknown as { __lt: string[] }).__lt))}`,
  );
  const answer = (await page.locator('#search-answer').textContent()) ?? '';
  const why = (await page.locator('#search-why').textContent()) ?? '';
  const gpus = Number(await page.locator('#search-answer').getAttribute('data-gpus'));
  console.log(
    `search: ${candidates} candidates in ${secs.toFixed(1)} s; ${long.length} long tasks, max ${max.toFixed(0)} ms; ${renders} redraws; typing ${typing} ms\n  ${answer}\n  ${why}`,
  );
  // The answer in words: the bill, and why the binding latency is what it is.
  expect(answer).toMatch(/^(TP \d+ × \d+ workers? = \d+ H100s, token budget [\d,]+ per pass|disaggregated: .* = \d+ H100s)/);
  expect(why).toMatch(/p99 TTFT .* \(≤ 2 s\), p99 ITL .* \(≤ 50 ms\); p99 ITL/);
  expect(await page.locator('#search-runnerups li').count()).toBeGreaterThan(0);
  await screenshot(page, info, 'search-desktop.png', false);
  await page.locator('#search').screenshot({ path: join(import.meta.dirname, '..', 'test-results', 'screenshots', 'search-panel-desktop.png') });
  // The same space, every point, by the CLI: the page's answer is no dearer.
  const file = await download(page, '#export-search-file');
  const brute = bruteForce(file);
  console.log(`search: brute force ${brute.candidates} candidates, cheapest ${brute.gpus} GPUs; the page's ${gpus}`);
  expect(gpus).toBeLessThanOrEqual(brute.gpus);
  // Loose bounds (10×): the figures above are the measurement.
  expect(secs).toBeLessThan(600);
  expect(max).toBeLessThan(1000);
  expect(renders).toBeLessThanOrEqual(Math.ceil(secs) + 3);
  // The answer opens as a normal run.
  await page.locator('#search-open').click();
  await expect(page.locator('#f-cluster-num_workers')).toBeVisible();
  expect(errors).toEqual([]);
});

test('an answer on the edge of a range is flagged, and extending the range searches again', async ({ page }) => {
  test.setTimeout(300_000);
  await openSearch(page, CAPACITY);
  await page.locator('#search-mode-dis').uncheck();
  await fill(page, { tp: '4', workers: '1..3', budget: '512', seqs: '256', requests: '1000', trials: '20' });
  await page.locator('#search-chunked').selectOption('on');
  await page.locator('#search-run').click();
  await searchDone(page);
  await expect(page.locator('#search-answer')).toContainText('TP 4 × 3 workers = 12 H100s');
  await expect(page.locator('#search-edge')).toContainText('3 workers is the top of the range 1..3');
  await page.locator('#search-edge-fix').click();
  await expect(page.locator('#search-workers')).toHaveValue('1..6');
  await searchDone(page);
  await expect(page.locator('#search-edge')).toHaveCount(0);
});

test('a run too short for a steady state is lengthened, and says so', async ({ page }) => {
  test.setTimeout(300_000);
  await openSearch(page, CAPACITY);
  await page.locator('#search-mode-dis').uncheck();
  await fill(page, { tp: '4', workers: '2..4', budget: '512', seqs: '256', requests: '200', trials: '20' });
  await page.locator('#search-chunked').selectOption('on');
  await page.locator('#search-run').click();
  await expect(page.locator('#search-short')).toContainText('200 requests per run are too short for a steady state', { timeout: 120_000 });
  await expect(page.locator('#search-requests')).not.toHaveValue('200');
  await searchDone(page);
});

test('the search panel with its answer: no axe violations; phone size', async ({ page }, info) => {
  test.setTimeout(300_000);
  await openSearch(page, CAPACITY);
  await page.locator('#search-mode-dis').uncheck();
  await fill(page, { tp: '4', workers: '2..4', budget: '512, 2048', seqs: '256', requests: '1000', trials: '20' });
  await page.locator('#search-run').click();
  await searchDone(page);
  await page.addScriptTag({ path: AXE });
  const found = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run: (c: unknown, o: unknown) => Promise<{ violations: { id: string; nodes: { target: string[] }[] }[] }> } })
      .axe;
    const r = await axe.run(document.querySelector('#search'), { resultTypes: ['violations'] });
    return r.violations.map((v) => `${v.id} at ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  });
  console.log(`axe search: ${found.length} violations`);
  expect(found).toEqual([]);
  await page.setViewportSize({ width: 390, height: 844 });
  await page.locator('#search').screenshot({ path: join(import.meta.dirname, '..', 'test-results', 'screenshots', 'search-panel-phone.png') });
  await screenshot(page, info, 'search-phone.png', false);
});
