// The comparison of N named runs (Chromium): pinning several runs, their settings diff, GPU
// counts and coloured deltas, and the comparison restored from a share link.

import { expect, test } from '@playwright/test';
import { cliRun } from './cli';
import { link, manual, openForm, runsDone, screenshot, waitRun, watchErrors } from './helpers';

// These tests set individual settings: the whole form is open from the start.
test.beforeEach(async ({ page }) => openForm(page));

test('three runs compared: each with its settings diff, GPUs and colour, deltas coloured, and the set in the link', async ({ page }, info) => {
  const errors = watchErrors(page);
  await page.goto(`/${link({ cluster: { num_workers: 1 } })}`);
  await waitRun(page, 0);
  await manual(page);
  await page.locator('#pin').click();
  await expect(page.locator('#pin')).toHaveText('Pin this run as B');
  let n = await runsDone(page);
  await page.locator('#f-cluster-num_workers').fill('2');
  await page.locator('#run').click();
  await waitRun(page, n);
  await page.locator('#pin').click();
  n = await runsDone(page);
  await page.locator('#f-cluster-num_workers').fill('4');
  await page.locator('#run').click();
  await waitRun(page, n);

  const rows = page.locator('#runs .run-row');
  await expect(rows).toHaveCount(3);
  await expect(rows.nth(0)).toContainText('A');
  await expect(rows.nth(0)).toContainText('1 GPU');
  await expect(rows.nth(1)).toContainText('cluster.num_workers: 1 → 2');
  await expect(rows.nth(1)).toContainText('2 GPUs');
  await expect(rows.nth(2)).toContainText('C (current)');
  await expect(rows.nth(2)).toContainText('cluster.num_workers: 1 → 4');
  await expect(page.locator('#summary thead')).toContainText('C vs A');
  // More workers on the same load: p99 TTFT is no worse, and the GPU count is (coloured so).
  const native = [1, 4].map((w) => cliRun({ cluster: { num_workers: w } }).summary);
  const [a, c] = native as [Record<string, number>, Record<string, number>];
  const expected = (key: string, dir: 'lower' | 'higher') =>
    a[key] === c[key] ? '' : (c[key] as number) > (a[key] as number) === (dir === 'higher') ? 'better' : 'worse';
  const gpuCells = page.locator('#summary tr[data-key="total_gpus"] td.num');
  await expect(gpuCells.last()).toHaveAttribute('data-verdict', 'worse');
  await expect(page.locator('#summary tr[data-key="p99_ttft_ms"] td.num').last()).toHaveAttribute('data-verdict', expected('p99_ttft_ms', 'lower'));
  await expect(page.locator('#summary tr[data-key="num_requests"] td.num').last()).toHaveAttribute('data-verdict', '');
  await expect(page.locator('#chart-dist-ttft .u-legend')).toContainText('B TTFT');
  await screenshot(page, info, 'compare-three-runs.png');

  // The link carries A and B; a fresh page reruns them and shows the same comparison.
  const url = page.url();
  const fresh = await page.context().newPage();
  await fresh.goto(url);
  await expect(fresh.locator('#runs .run-row')).toHaveCount(3, { timeout: 15_000 });
  await expect(fresh.locator('#runs .run-row').nth(1)).toContainText('cluster.num_workers: 1 → 2');
  await expect(fresh.locator('#f-cluster-num_workers')).toHaveValue('4');
  await expect(fresh.locator('#summary thead')).toContainText('C vs A');
  const values = async (p: typeof page) => p.locator('#summary tr[data-key="p99_ttft_ms"] td.num').evaluateAll((tds) => tds.map((td) => td.textContent));
  expect(await values(fresh)).toEqual(await values(page));
  await fresh.close();

  // Removing B relabels; clearing leaves one run.
  await page.locator('#runs .run-row[data-label="B"] .remove').click();
  await expect(page.locator('#runs .run-row')).toHaveCount(2);
  await expect(page.locator('#summary thead')).toContainText('B vs A');
  await page.locator('#unpin').click();
  await expect(page.locator('#runs')).toBeHidden();
  await expect(page.locator('#summary thead')).not.toContainText('vs');
  expect(errors).toEqual([]);
});

test('a link whose runs cannot run says so and opens the scenario', async ({ page }) => {
  await page.goto(`/${link({ cluster: { num_workers: 2 }, runs: [{ scenario: { cluster: { num_workers: 0 } } }] })}`);
  await waitRun(page, 0);
  await expect(page.locator('#message')).toContainText('Run A of this link cannot run');
  await expect(page.locator('#f-cluster-num_workers')).toHaveValue('2');
  await expect(page.locator('#runs')).toBeHidden();
});
