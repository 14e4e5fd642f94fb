// The engine download (issue 34 item 7): the playground fetches the engine's first module
// (under 1.2 MB raw) and nothing bigger for the default scenario; a trace or measured kernels
// bring the full module in, once, and still run.

import { expect, type Page, test } from '@playwright/test';
import { runsDone, waitFresh, watchErrors } from './helpers';

/** Every .wasm the page fetched: its file name (without the hash) and its size. */
function watchWasm(page: Page): { name: string; bytes: number }[] {
  const seen: { name: string; bytes: number }[] = [];
  page.on('response', async (r) => {
    const path = new URL(r.url()).pathname;
    if (!path.endsWith('.wasm')) return;
    const name = (path.split('/').pop() ?? '').replace(/-[A-Za-z0-9_-]{8}\.wasm$/, '.wasm');
    seen.push({ name, bytes: (await r.body()).length });
  });
  return seen;
}

test('the first download is the small engine module; a trace and measured kernels load the full one', async ({ page }) => {
  const errors = watchErrors(page);
  const wasm = watchWasm(page);
  await page.goto('/');
  await waitFresh(page, 0);
  const firstMs = Number(await page.evaluate(() => document.body.dataset.firstResultsMs));
  await expect.poll(() => wasm.length).toBe(1);
  console.log(`engine-size: first results ${firstMs} ms; fetched ${JSON.stringify(wasm)}`);
  expect(wasm[0]?.name).toBe('servesim_first_bg.wasm');
  expect(wasm[0]?.bytes).toBeLessThan(1_200_000);

  // A trace: the first module leaves the reader out; the full module replays it.
  const runs = await runsDone(page);
  await page.locator('#f-workload-type').selectOption('trace');
  const lines = Array.from({ length: 40 }, (_, i) => JSON.stringify({ timestamp: i * 40, input_length: 600, output_length: 20, hash_ids: [i % 4, 100 + i] }));
  await page.locator('#f-trace').setInputFiles({ name: 't.jsonl', mimeType: 'application/json', buffer: Buffer.from(lines.join('\n')) });
  await page.locator('#run').click();
  await waitFresh(page, runs);
  await expect(page.locator('#status')).not.toContainText('Refused');
  await expect.poll(() => wasm.map((w) => w.name)).toContain('servesim_wasm_bg.wasm');
  expect(wasm.filter((w) => w.name === 'servesim_wasm_bg.wasm')).toHaveLength(1);

  // Measured kernels, on the full module now: the model picker's default timing.
  const traced = await runsDone(page);
  await page.locator('#f-workload-type').selectOption('synthetic');
  await page.locator('#f-model').selectOption('llama-3.1-70b');
  await expect(page.locator('#scenario-line')).toContainText('measured kernels');
  await page.locator('#run').click();
  await waitFresh(page, traced, 60_000);
  await expect(page.locator('#message')).not.toContainText('not in this build');
  expect(wasm.filter((w) => w.name === 'servesim_wasm_bg.wasm')).toHaveLength(1);
  expect(errors).toEqual([]);
});

test('measured kernels chosen first load the full module and run', async ({ page }) => {
  const wasm = watchWasm(page);
  await page.goto('/');
  await waitFresh(page, 0);
  const runs = await runsDone(page);
  await page.locator('#f-model').selectOption('llama-3.1-70b');
  await expect(page.locator('#scenario-line')).toContainText('measured kernels');
  await page.locator('#run').click();
  await waitFresh(page, runs, 60_000);
  await expect(page.locator('#message')).not.toContainText('not in this build');
  await expect.poll(() => wasm.map((w) => w.name)).toContain('servesim_wasm_bg.wasm');
  const shown = await page.locator('#summary-key').textContent();
  expect(shown).toMatch(/\d/);
});
