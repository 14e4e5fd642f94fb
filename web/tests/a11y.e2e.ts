// Accessibility with axe-core (from npm): the playground with results, the sweep with its
// answer, the inspector with a recording, and an embed, each at zero violations. Every chart
// has a name and a data table; progress bars, the scrubber and the log's filters have names.

import { createRequire } from 'node:module';
import { expect, type Page, test } from '@playwright/test';
import { link, waitFresh, waitRun } from './helpers';

// axe is injected as a script: the pages' Content-Security-Policy would refuse it.
test.use({ bypassCSP: true });

const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

interface Violation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[] }[];
}

/** axe's violations on the page as it is now (WCAG 2 A and AA and best practices). */
async function violations(page: Page, context = 'document'): Promise<string[]> {
  await page.addScriptTag({ path: AXE });
  const found = await page.evaluate(async (ctx) => {
    const axe = (window as unknown as { axe: { run: (c: unknown, o: unknown) => Promise<{ violations: Violation[] }> } }).axe;
    const r = await axe.run(ctx === 'document' ? document : ctx, { resultTypes: ['violations'] });
    return r.violations;
  }, context);
  return found.map((v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
}

test('the playground with results: no axe violations; every chart named, with a data table', async ({ page }) => {
  await page.goto('/');
  await waitFresh(page, 0);
  // Charts are drawn one per task after the results: wait for the last.
  await expect(page.locator('#chart-pass canvas')).toHaveCount(1);
  const charts = page.locator('#results figure.chart');
  const n = await charts.count();
  expect(n).toBe(10);
  for (let i = 0; i < n; i++) {
    const fig = charts.nth(i);
    await expect(fig.locator('canvas[role="img"]').first()).toHaveAttribute('aria-label', /lines? over \d+ points/);
    await expect(fig.locator('.table-toggle')).toHaveAttribute('aria-expanded', 'false');
  }
  // A data table lists what a chart drew.
  await page.locator('#chart-throughput .table-toggle').click();
  await expect(page.locator('#chart-throughput .chart-table table th[scope="col"]')).toHaveText(['time (s)', 'output tok/s', 'input tok/s']);
  expect(await page.locator('#chart-throughput .chart-table tbody tr').count()).toBeGreaterThan(10);
  await expect(page.locator('#progress')).toHaveAttribute('aria-label', 'Run progress');
  const found = await violations(page);
  console.log(`axe playground: ${found.length} violations`);
  expect(found).toEqual([]);
});

test('the sweep with its answer: no axe violations', async ({ page }) => {
  const sweep = { vary: [{ field: 'cluster.num_workers', values: [1, 2, 3] }], slo: { p99_ttft_ms: 2000 } };
  await page.goto(`/${link({ sweep })}`);
  await expect(page.locator('#sweep-status')).toHaveAttribute('data-state', 'done', { timeout: 30_000 });
  await expect(page.locator('#sweep-chart-pareto canvas')).toHaveCount(1);
  await expect(page.locator('#sweep-progress')).toHaveAttribute('aria-label', 'Sweep progress');
  await expect(page.locator('#sweep-chart-ttft canvas[role="img"]')).toHaveAttribute('aria-label', /over 3 points/);
  const found = await violations(page);
  console.log(`axe sweep: ${found.length} violations`);
  expect(found).toEqual([]);
});

test('the inspector with a recording: no axe violations; its scrubber and filters are named', async ({ page }) => {
  await page.goto('/');
  await waitRun(page, 0);
  await page.locator('#open-inspector').click();
  await expect(page.locator('[data-inspector]')).toHaveAttribute('data-state', 'ready', { timeout: 20_000 });
  await expect(page.locator('#inspector-scrub')).toHaveAccessibleName('Time in the recording');
  await expect(page.locator('#inspector-log-kind')).toHaveAccessibleName('Show one kind of event');
  await expect(page.locator('#inspector-log-request')).toHaveAccessibleName('Show one request');
  await expect(page.locator('#inspector-moment')).toHaveAccessibleName('Kind of event to jump to');
  const found = await violations(page, '#inspector');
  console.log(`axe inspector: ${found.length} violations`);
  expect(found).toEqual([]);
});

test('an embed: no axe violations', async ({ page }) => {
  await page.goto(`/embed.html?panels=cards,throughput,kv${link({ cluster: { num_workers: 2 } })}`);
  await waitRun(page, 0);
  await expect(page.locator('#chart-kv canvas')).toHaveCount(1);
  const found = await violations(page);
  console.log(`axe embed: ${found.length} violations`);
  expect(found).toEqual([]);
});
