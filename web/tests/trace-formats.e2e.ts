// The page's trace formats (issue 33): an agentic Mooncake v2 trace and a Dynamo request trace
// with `agent_context` (both request graphs) uploaded and replayed; the numbers on screen are
// `servesim run`'s for the page's own scenario.json and the same file.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, type Page, test } from '@playwright/test';
import { expectEngineNumbers, runsDone, waitFresh, watchErrors } from './helpers';

const AGENTIC = join(import.meta.dirname, '..', '..', 'tests', 'variants', 'agentic');

async function replay(page: Page, format: string, file: string, blockSize?: number): Promise<Uint8Array> {
  const bytes = readFileSync(join(AGENTIC, file));
  const runs = await runsDone(page);
  await page.locator('#f-workload-type').selectOption('trace');
  await page.locator('#f-workload-format').selectOption(format);
  if (blockSize !== undefined) await page.locator('#f-workload-trace_block_size').fill(String(blockSize));
  await page.locator('#f-trace').setInputFiles({ name: file, mimeType: 'application/json', buffer: bytes });
  await page.locator('#run').click();
  await waitFresh(page, runs, 30_000);
  return new Uint8Array(bytes);
}

test('request-graph traces: agentic_mooncake and Dynamo agent_context upload and replay as the CLI does', async ({ page }) => {
  const errors = watchErrors(page);
  await page.goto('/');
  await waitFresh(page, 0);
  const formats = await page.locator('#f-workload-format option').evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value));
  expect(formats).toEqual(expect.arrayContaining(['mooncake', 'mooncake-delta', 'applied_compute_agentic', 'dynamo', 'agentic_mooncake']));

  const am = await replay(page, 'agentic_mooncake', 'am-growing-context.jsonl');
  await expect(page.locator('#message')).toHaveText('');
  const native = await expectEngineNumbers(page, { 'am-growing-context.jsonl': am });
  expect(native.summary.total_trajectories).toBe(1);
  expect(native.summary.completed_requests).toBe(5);
  // The trajectory figures are on screen with the rest.
  await expect(page.locator('#summary tr[data-key="completed_trajectories"] td.num')).toHaveText('1');

  // Its records say 4 tokens per hash (`trace_block_size`), and so must the page.
  const dy = await replay(page, 'dynamo', 'dy-inferred-edges.jsonl', 4);
  await expect(page.locator('#message')).toHaveText('');
  const graph = await expectEngineNumbers(page, { 'dy-inferred-edges.jsonl': dy });
  expect(graph.summary.total_trajectories).toBeGreaterThan(0);
  expect(errors).toEqual([]);
});
