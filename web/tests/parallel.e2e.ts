// Issue 31 on the page: the DeepSeek-R1 preset (8 × H200, SGLang, EP 8, attention DP 8) opens
// with its parallelism and arithmetic shown, labelled as the roofline's estimate, with the
// CLI's numbers; attention DP is editable and the arithmetic follows.

import { expect, test } from '@playwright/test';
import { expectEngineNumbers, openForm, runsDone, screenshot, waitFresh, watchErrors } from './helpers';

test('DeepSeek-R1 on 8 × H200: attention DP 8, the experts over all eight GPUs, KV per rank shown', async ({ page }, info) => {
  test.setTimeout(90_000);
  const errors = watchErrors(page);
  await openForm(page);
  await page.goto('/');
  await waitFresh(page, 0);
  let runs = await runsDone(page);
  await page.locator('#examples a[data-example="deepseek-r1"]').click();
  await waitFresh(page, runs, 30_000);
  await expect(page.locator('#f-model')).toHaveValue('deepseek-r1');
  await expect(page.locator('#f-attention-dp')).toHaveValue('8');
  await expect(page.locator('#f-moe-ep')).toBeHidden();
  const line = page.locator('#parallel-arithmetic');
  await expect(line).toContainText('GPUs per worker: TP 1 × attention DP 8 = 8');
  await expect(line).toContainText('experts spread over all 8 GPUs (EP 8)');
  await expect(line).toContainText(/KV per attention-DP rank: [\d,]+ tokens \([\d.]+ GiB\), the engine's [\d,]+ ÷ 8/);
  await expect(page.locator('#timing-source')).toHaveAttribute('data-kind', 'estimate');
  const native = await expectEngineNumbers(page);
  expect(native.config.total_gpus).toBe(8);
  const kv = (native.config.pools[0] as { kv_tokens_per_rank: number }).kv_tokens_per_rank;
  await expect(line).toContainText(`${Math.floor(kv / 8).toLocaleString('en-US')} tokens`);
  await page.locator('#s-model').scrollIntoViewIfNeeded();
  await screenshot(page, info, 'deepseek-r1-desktop.png', false);

  // Four ranks at TP 1: four GPUs cannot hold the weights, and the engine says so; at TP 2 the
  // same eight GPUs hold them, four ranks of two, and the arithmetic and numbers follow.
  await page.locator('#f-attention-dp').fill('4');
  await expect(line).toContainText('GPUs per worker: TP 1 × attention DP 4 = 4');
  await expect(page.locator('#message')).toContainText('leave no GPU memory for the KV cache');
  runs = await runsDone(page);
  await page.locator('#f-tp').fill('2');
  await waitFresh(page, runs, 30_000);
  await expect(line).toContainText('GPUs per worker: TP 2 × attention DP 4 = 8');
  await expect(line).toContainText('÷ 4');
  const four = await expectEngineNumbers(page);
  expect(four.config.total_gpus).toBe(8);
  expect(four.summary.mean_tpot_ms).not.toBe(native.summary.mean_tpot_ms);
  await page.locator('#f-attention-dp').fill('0');
  await expect(page.locator('#f-attention-dp-error')).toContainText('a whole number');

  await page.setViewportSize({ width: 390, height: 844 });
  await page.locator('#s-model').scrollIntoViewIfNeeded();
  await screenshot(page, info, 'deepseek-r1-phone.png', false);
  expect(errors).toEqual([]);
});
