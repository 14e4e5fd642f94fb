// The page for people (issue 34), walked as its users would: a newcomer learns in a line what
// is simulated and what to try; a student reaches a preemption in one click; a link keeps its
// word; the page stays responsive through a sweep; a docs author embeds the block map.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, type Page, test } from '@playwright/test';
import { link, runsDone, screenshot, waitFresh, waitRun, watchErrors } from './helpers';

/** Opens every collapsed part of the form (sections and "More settings"). */
async function expandForm(page: Page): Promise<void> {
  await page.locator('#form details').evaluateAll((ds) => {
    for (const d of ds as HTMLDetailsElement[]) d.open = true;
  });
}

test('a newcomer: one sentence says what runs, and follows every edit; about 15 fields; the key numbers first', async ({ page }, info) => {
  const errors = watchErrors(page);
  await page.goto('/');
  await waitFresh(page, 0);
  const line = page.locator('#scenario-line');
  await expect(line).toHaveText(
    "Simulating 200 requests at 10 req/s, 2,048 → 256 tokens, on one vLLM worker; Dynamo's polynomial pass time (fitted on an H200).",
  );
  await expect(page.locator('#intro .what a')).toHaveCount(3);
  await expect(page.locator('#try button')).toHaveCount(3);
  // About 15 fields show; the advanced ones wait behind "More settings" and closed sections.
  const visible = await page
    .locator('#form')
    .evaluate((f) => [...f.querySelectorAll('input, select')].filter((e) => (e as HTMLElement).checkVisibility()).length);
  console.log(`visible form controls: ${visible}`);
  expect(visible).toBeLessThanOrEqual(16);
  for (const id of ['#s-slo', '#s-scaling', '#s-offload', '#s-scenario']) await expect(page.locator(id)).not.toHaveAttribute('open', '');
  // No timing note until a model is chosen that the timing ignores.
  await expect(page.locator('#timing-note')).toHaveText('');
  // The summary leads with the key numbers; the rest is one click away.
  const key = await page.locator('#summary-key tbody tr').count();
  expect(key).toBeGreaterThan(8);
  expect(key).toBeLessThanOrEqual(13);
  await expect(page.locator('#all-metrics')).not.toHaveAttribute('open', '');
  await expect(page.locator('#all-metrics > summary')).toHaveText(/All metrics \(\d{2,}\)/);
  await screenshot(page, info, 'people-newcomer-desktop.png', false);

  // Every edit: the sentence follows.
  const before = await runsDone(page);
  await page.locator('#f-cluster-num_workers').fill('3');
  await waitFresh(page, before);
  await expect(line).toContainText('on three vLLM workers behind round robin');
  await page.locator('#f-workload-rate_rps').fill('25');
  await expect(line).toContainText('200 requests at 25 req/s');
  await page.locator('#f-model').selectOption('llama-3.1-70b');
  await expect(line).toContainText('H100 SXM per worker, Llama 3.1 70B, measured kernels (vLLM 0.24.0)');
  // A timing model that ignores the model: now, and only now, the one note says so.
  await page.locator('#f-timing').selectOption('polynomial');
  await page.locator('#f-model').selectOption('llama-3.1-8b');
  await expect(page.locator('#timing-note')).toContainText('ignores the model');
  await expect(page.locator('.effect', { hasText: 'ignores the model' })).toHaveCount(1);

  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto('/');
  await waitRun(page, 0);
  await screenshot(page, info, 'people-newcomer-phone.png', false);
  expect(errors).toEqual([]);
});

test('a student: one click opens a lesson at its first preemption; next finds the others; the log reads as sentences; back to my scenario', async ({
  page,
}, info) => {
  await page.goto('/');
  await waitFresh(page, 0);
  // The student's own scenario first.
  const before = await runsDone(page);
  await page.locator('#f-cluster-num_workers').fill('2');
  await waitFresh(page, before);
  await page.locator('#try-lesson').click();
  const insp = page.locator('[data-inspector]');
  await expect(insp).toHaveAttribute('data-state', 'ready', { timeout: 20_000 });
  await expect(insp).toHaveAttribute('data-moment', 'preempted', { timeout: 20_000 });
  const note = page.locator('#inspector-moment-note');
  await expect(note).toHaveText(/^preemption 1 of \d+, at /);
  const current = page.locator('#inspector-log li[data-moment]');
  await expect(current).toHaveAttribute('data-kind', 'preempted');
  await expect(current).toContainText(/request #\d+ is preempted: it loses its KV blocks/);
  // Shown at the end of its pass: the cursor is that pass's line, the victim's blocks freed.
  await expect(page.locator('#inspector-log li[data-current]')).toHaveAttribute('data-kind', 'pass');
  // The preempted request is selected and shown going back to the queue.
  await expect(page.locator('#inspector-queues [data-list="waiting"] .inspector-chip[aria-pressed="true"]')).toHaveCount(1);
  const t1 = Number(await insp.getAttribute('data-t-ms'));
  await page.locator('#inspector-next-moment').click();
  await expect(note).toHaveText(/^preemption 2 of /);
  expect(Number(await insp.getAttribute('data-t-ms'))).toBeGreaterThanOrEqual(t1);
  await expect(current).toHaveAttribute('data-kind', 'preempted');
  // Hashes are short in the sentences; the raw lines are a toggle away.
  await page.locator('#inspector-log-kind').selectOption('stored');
  await expect(page.locator('#inspector-log li').first()).toContainText(/becomes? cache-visible \(\d{6}…/);
  await page.locator('#inspector-log-raw').check();
  await expect(page.locator('#inspector-log li').first()).toContainText('"hashes":[');
  await screenshot(page, info, 'people-student.png', false);
  // Back to the student's own scenario.
  await page.locator('#lesson-back').click();
  await expect(page.locator('#f-cluster-num_workers')).toHaveValue('2');
  await expect(page.locator('#scenario-line')).toContainText('two vLLM workers');
});

test('trust: a link round trip shows no phantom difference; a bad hash stays in the address bar; a speed-up of 0 is refused', async ({ page, browser }) => {
  const base = { engine: { timing_model: { type: 'roofline', model: 'llama-3.1-70b', gpu: 'h100', tp: 4 } }, cluster: { num_workers: 3 } };
  await page.goto(`/${link(base)}`);
  await waitFresh(page, 0);
  await page.locator('#pin').click();
  const before = await runsDone(page);
  await page.locator('#f-cluster-router_mode').selectOption('kv_router');
  await waitFresh(page, before);
  await expect(page.locator('#runs .run-row[data-label="B"] .diff')).toHaveText('cluster.router_mode: "round_robin" → "kv_router"');
  const url = page.url();
  const fresh = await browser.newPage();
  await fresh.goto(url);
  await waitFresh(fresh, 0);
  await expect(fresh.locator('#runs .run-row[data-label="B"] .diff')).toHaveText('cluster.router_mode: "round_robin" → "kv_router"');
  await fresh.close();

  // A link that cannot be opened keeps its hash, so it can be fixed or reported.
  await page.goto('/#v1.not-a-real-link');
  await waitRun(page, 0);
  await expect(page.locator('#message')).toContainText('This link could not be opened');
  expect(new URL(page.url()).hash).toBe('#v1.not-a-real-link');
  // An edit makes the scenario the user's own again (with its own link).
  await page.locator('#f-cluster-num_workers').fill('2');
  await expect.poll(() => new URL(page.url()).hash).toMatch(/^#v1\.[A-Za-z0-9_-]+$/);

  await page.locator('#f-engine-speedup_ratio').evaluate((i) => i.closest('details')?.setAttribute('open', ''));
  await page.locator('#f-engine-speedup_ratio').fill('0');
  await expect(page.locator('#f-engine-speedup_ratio-error')).toHaveText('must be more than 0');
  await expect(page.locator('#run')).toBeDisabled();
});

test('trust: a trace waits for Run, and a link recipient uploads it from the message', async ({ page }) => {
  await page.goto('/');
  await waitFresh(page, 0);
  const runs = await runsDone(page);
  await page.locator('#f-workload-type').selectOption('trace');
  // Auto-run is on, but a trace being set up neither runs nor flashes "Refused".
  await expect(page.locator('#status')).toHaveAttribute('data-state', 'ready');
  await expect(page.locator('#message')).toContainText('upload it, then Run');
  const lines = Array.from({ length: 50 }, (_, i) => JSON.stringify({ timestamp: i * 50, input_length: 700, output_length: 30, hash_ids: [i % 5, 100 + i] }));
  await page.locator('#f-trace').setInputFiles({ name: 'mine.jsonl', mimeType: 'application/json', buffer: Buffer.from(lines.join('\n')) });
  await page.locator('#f-cluster-num_workers').fill('2');
  await page.waitForTimeout(800);
  expect(await runsDone(page)).toBe(runs);
  await expect(page.locator('#status')).toHaveText('Ready: a trace replays when you press Run');
  await page.locator('#run').click();
  await waitFresh(page, runs);
  await expect(page.locator('#scenario-line')).toContainText('the trace mine.jsonl');

  // A link recipient: the refusal to run comes with the upload button.
  const shared = page.url();
  await page.goto('about:blank');
  await page.goto(shared);
  await expect(page.locator('#message')).toContainText('This scenario replays the trace “mine.jsonl”');
  await expect(page.locator('#message-upload')).toHaveText('Upload mine.jsonl');
  const chooser = page.waitForEvent('filechooser');
  await page.locator('#message-upload').click();
  await (await chooser).setFiles({ name: 'mine.jsonl', mimeType: 'application/json', buffer: Buffer.from(lines.join('\n')) });
  await page.locator('#run').click();
  await waitFresh(page, 0);
});

test('responsiveness: through a 40-point sweep no main-thread task is long, and the results are redrawn at most once a second', async ({ page }, info) => {
  // Long tasks (> 50 ms), as the browser reports them, from the start of the page.
  await page.addInitScript(() => {
    const w = window as unknown as { __long: number[] };
    w.__long = [];
    new PerformanceObserver((l) => {
      for (const e of l.getEntries()) w.__long.push(e.duration);
    }).observe({ type: 'longtask', buffered: true });
  });
  const sweep = {
    vary: [
      { field: 'cluster.num_workers', from: 1, to: 20 },
      { field: 'engine.max_num_seqs', values: [64, 256] },
    ],
    slo: { p99_ttft_ms: 2000 },
  };
  await page.goto(`/${link({ workload: { type: 'synthetic', num_requests: 2000, rate_rps: 40 }, sweep })}`);
  await expect(page.locator('#sweep-status')).toHaveAttribute('data-state', 'running', { timeout: 20_000 });
  await page.evaluate(() => {
    (window as unknown as { __long: number[] }).__long = [];
  });
  const t0 = Date.now();
  // Typing stays quick while the sweep runs.
  const typing: number[] = [];
  for (let k = 0; k < 3; k++) {
    const a = Date.now();
    await page.locator('#f-workload-num_requests').fill(String(2001 + k));
    await page.locator('#f-workload-num_requests').fill('2000');
    typing.push(Date.now() - a);
  }
  await expect(page.locator('#sweep-status')).toHaveAttribute('data-state', 'done', { timeout: 120_000 });
  const secs = (Date.now() - t0) / 1000;
  const long = await page.evaluate(() => (window as unknown as { __long: number[] }).__long);
  const renders = Number(await page.locator('#sweep-results').getAttribute('data-renders'));
  const max = Math.max(0, ...long);
  console.log(
    `sweep-long-tasks: ${long.length} long tasks, max ${max.toFixed(0)} ms (target 100 ms), over ${secs.toFixed(1)} s; ${renders} redraws; typing ${typing.join(', ')} ms`,
  );
  await screenshot(page, info, 'people-sweep.png', false);
  // The figure is printed; the bound is loose (10×) so that a busy machine never fails it.
  expect(max).toBeLessThan(1000);
  // At most once a second while points come in, plus the first and the last.
  expect(renders).toBeLessThanOrEqual(Math.ceil(secs) + 3);
});

test('a docs author: the block map embeds from the builder at the moment shown, with the script apart', async ({ page, context }, info) => {
  await context.grantPermissions(['clipboard-read', 'clipboard-write']);
  const lesson = { engine: { block_size: 16, num_gpu_blocks: 256, max_num_seqs: 16 }, workload: { type: 'synthetic', num_requests: 24, rate_rps: 8 } };
  await page.goto(`/?inspect=800,aggregated/0/0${link(lesson)}`);
  await expect(page.locator('[data-inspector]')).toHaveAttribute('data-state', 'ready', { timeout: 20_000 });
  await page.locator('#embed').click();
  await expect(page.locator('#eb-view')).toHaveValue('inspector');
  const code = page.locator('#eb-snippet');
  await expect(code).toHaveValue(/embed\.html\?inspect=[\d.]+,aggregated\/0\/0#v1\./);
  await expect(code).not.toHaveValue(/<script/);
  await expect(page.locator('#eb-script')).toHaveValue(/^<script src="http:\/\/127\.0\.0\.1:\d+\/embed\.js" async><\/script>$/);
  // The height is taken from the preview only once it shows the recording.
  await expect(page.locator('#embed-dialog')).toHaveAttribute('data-measured', 'true', { timeout: 30_000 });
  const preview = page.frameLocator('#eb-preview');
  await expect(preview.locator('[data-inspector]')).toHaveAttribute('data-state', 'ready');
  await expect(preview.locator('#inspector-blocks canvas')).toBeVisible();
  const height = Number(await page.locator('#eb-height').inputValue());
  const content = await preview.locator('html').evaluate((h) => Math.ceil(h.getBoundingClientRect().height));
  expect(Math.abs(height - content)).toBeLessThanOrEqual(2);
  await screenshot(page, info, 'people-embed-builder.png', false);
  await page.locator('#eb-copy-script').click();
  expect(await page.evaluate(() => navigator.clipboard.readText())).toContain('embed.js');
  // The docs say so.
  const docs = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'embedding.md'), 'utf8');
  expect(docs).toContain('?inspect=');
});

test('the form opens what a link sets: a collapsed section with a value shows it', async ({ page }) => {
  await page.goto(`/${link({ slo: { ttft_ms: 500 }, engine: { preemption_mode: 'fifo' } })}`);
  await waitRun(page, 0);
  await expect(page.locator('#s-slo')).toHaveAttribute('open', '');
  await expect(page.locator('#f-slo-ttft_ms')).toBeVisible();
  await expect(page.locator('#f-engine-preemption_mode')).toBeVisible();
  await expect(page.locator('#s-offload')).not.toHaveAttribute('open', '');
  await expandForm(page);
  await expect(page.locator('#f-engine-g3_offload-scope')).toHaveCount(1);
});
