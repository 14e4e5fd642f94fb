// Measured GPU timing in the page (issue 30 item 3): a model chosen on a GPU the data has is
// timed by measured kernels, labelled with their source; the page fetches only the data file
// of that GPU and framework, once; the numbers are `servesim run`'s; a link carries the
// choice, and a link made before measured timing keeps its timing and numbers.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, type Page, test } from '@playwright/test';
import { cliRun } from './cli';
import { expectEngineNumbers, link, numbers, openForm, runsDone, screenshot, shownScenario, waitFresh, waitRun, watchErrors } from './helpers';

test.beforeEach(async ({ page }) => openForm(page));

/** Waits for the form's own engine round trips (a TP pick) to settle. */
async function settled(page: Page): Promise<void> {
  await page.evaluate(() => (window as unknown as { __servesimForm?: { pending: Promise<void> } }).__servesimForm?.pending);
}

/** Does something in the form and waits for the auto-run it causes to finish fresh. */
async function andRun(page: Page, act: () => Promise<unknown>, timeout = 30_000): Promise<void> {
  const n = await runsDone(page);
  await act();
  await settled(page);
  await waitFresh(page, n, timeout);
}

/** The measured-kernel files the page asks the site for, by their name under data/ais/. */
function dataRequests(page: Page): string[] {
  const names: string[] = [];
  page.on('request', (r) => {
    const at = r.url().indexOf('/data/ais/');
    if (at >= 0) names.push(r.url().slice(at + '/data/ais/'.length));
  });
  return names;
}

test('Llama 3.1 70B on H100 at TP 4: measured kernels by default, labelled, the KV pool shown, the CLI’s numbers', async ({ page, browser }, info) => {
  test.setTimeout(120_000);
  const errors = watchErrors(page);
  const fetched = dataRequests(page);
  await page.goto('/');
  await waitRun(page, 0);
  // The default scenario needs no data: only the index and the model configs (the lists).
  expect([...fetched].sort()).toEqual(['index.json', 'models.json']);
  // The lists come from the data: its GPUs and the bundled model configs.
  await expect(page.locator('#f-gpu option')).toHaveCount(9);
  await expect(page.locator('#f-gpu option', { hasText: 'GB200' })).toContainText('measured kernels');
  await expect(page.locator('#f-gpu option', { hasText: 'A100' })).toContainText('roofline only');
  await expect(page.locator('#f-model option', { hasText: 'Qwen3 8B' })).toHaveCount(1);
  await expect(page.locator('#f-model option[value="config"]')).toHaveText('paste a config.json…');

  await andRun(page, () => page.locator('#f-model').selectOption('llama-3.1-70b'));
  await expect(page.locator('#f-timing')).toHaveValue('ais');
  await expect(page.locator('#f-gpu')).toHaveValue('h100');
  await expect(page.locator('#timing-source')).toHaveText('measured kernels: H100 SXM · vLLM 0.24.0');
  await expect(page.locator('#scenario-line')).toContainText('Llama 3.1 70B, measured kernels (vLLM 0.24.0)');
  await andRun(page, () => page.locator('#f-tp').fill('4'));
  await expect(page.locator('#message')).toBeHidden();
  await expect(page.locator('#gpu-count')).toContainText('= 4 in total');
  // The pool from the GPU's memory, the weights and vLLM's memory fraction, term by term.
  await expect(page.locator('#kv-arithmetic')).toContainText('KV memory per GPU: 80.0 GiB × 0.9 − 32.9 GiB weights');
  await expect(page.locator('#model-derived')).toContainText('32.9 GiB per GPU at TP 4');
  const scenario = await shownScenario(page);
  expect(scenario).toMatchObject({
    engine: { timing_model: { type: 'ais', model: 'meta-llama/Meta-Llama-3.1-70B', system: 'h100_sxm', backend: 'vllm', backend_version: '0.24.0', tp: 4 } },
  });
  // The page's numbers are the CLI's for the scenario it shows, key for key.
  const native = await expectEngineNumbers(page);
  expect(native.config.pools[0]).toMatchObject({ tensor_parallel_size: 4, timing: { type: 'ais', system: 'h100_sxm', tp: 4 } });
  const pool = native.config.pools[0] as { num_gpu_blocks: number; kv_pool: { kv_tokens: number } };
  await expect(page.locator('#kv-capacity')).toContainText(`${pool.num_gpu_blocks.toLocaleString('en-US')} blocks`);
  await expect(page.locator('#kv-arithmetic')).toContainText(`${pool.kv_pool.kv_tokens.toLocaleString('en-US')} tokens`);
  // One data file fetched: H100 × vLLM, once for all the runs and checks so far.
  expect([...fetched].sort()).toEqual(['h100_sxm/vllm-0.24.0.zip', 'index.json', 'models.json']);
  await screenshot(page, info, 'measured-70b-h100-desktop.png');

  // Another framework's kernels: the label follows, and only that file is added.
  await andRun(page, () => page.locator('#f-framework').selectOption('trtllm@1.3.0rc20'));
  await expect(page.locator('#timing-source')).toHaveText('measured kernels: H100 SXM · TRT-LLM 1.3.0rc20');
  await expect(page.locator('#kv-arithmetic')).toContainText('(80.0 GiB − 32.9 GiB weights');
  const trt = await expectEngineNumbers(page);
  expect(trt.summary.mean_ttft_ms).not.toBe(native.summary.mean_ttft_ms);
  expect(fetched.filter((f) => f.endsWith('.zip')).sort()).toEqual(['h100_sxm/trtllm-1.3.0rc20.zip', 'h100_sxm/vllm-0.24.0.zip']);

  // A price per GPU-hour: the cost per million output tokens, the CLI's.
  await andRun(page, () => page.locator('#f-gpu_hour_usd').fill('2.5'));
  const priced = await expectEngineNumbers(page);
  expect(priced.summary.cost_per_million_output_tokens_usd).toBeGreaterThan(0);
  await expect(page.locator('#h-cost_per_million_output_tokens_usd')).toHaveAttribute('data-value', String(priced.summary.cost_per_million_output_tokens_usd));

  // The link carries the choice: a fresh page opens to the same timing and numbers.
  const url = page.url();
  const fresh = await (await browser.newContext()).newPage();
  await fresh.addInitScript(() => {
    (globalThis as { __servesimOpenForm?: boolean }).__servesimOpenForm = true;
  });
  await fresh.goto(url);
  await waitFresh(fresh, 0, 30_000);
  await expect(fresh.locator('#timing-source')).toHaveText('measured kernels: H100 SXM · TRT-LLM 1.3.0rc20');
  await expect(fresh.locator('#f-tp')).toHaveValue('4');
  expect(await numbers(fresh)).toEqual(priced.summary);

  // At phone size, the same page.
  await page.setViewportSize({ width: 390, height: 844 });
  await page.locator('#s-model').scrollIntoViewIfNeeded();
  await screenshot(page, info, 'measured-70b-h100-phone.png');
  expect(errors).toEqual([]);
});

test('anything the data lacks falls back to the roofline, labelled as an estimate; back on a measured GPU it is measured again', async ({ page }) => {
  test.setTimeout(90_000);
  await page.goto('/');
  await waitRun(page, 0);
  await andRun(page, () => page.locator('#f-model').selectOption('llama-3.1-8b'));
  await expect(page.locator('#f-timing')).toHaveValue('ais');
  // A100: no measured kernels, a roofline estimate that says why.
  await andRun(page, () => page.locator('#f-gpu').selectOption('a100'));
  await expect(page.locator('#f-timing')).toHaveValue('roofline');
  await expect(page.locator('#timing-source')).toHaveText(/^estimate: roofline .*no measured kernels on A100/);
  await expectEngineNumbers(page);
  // A model the data has no config of (a MoE): the roofline, on a GPU it has figures for.
  await andRun(page, () => page.locator('#f-gpu').selectOption('h200'));
  await expect(page.locator('#timing-source')).toHaveText('measured kernels: H200 SXM · vLLM 0.24.0');
  await andRun(page, () => page.locator('#f-model').selectOption('mixtral-8x7b'));
  await expect(page.locator('#f-timing')).toHaveValue('roofline');
  await expect(page.locator('#timing-source')).toContainText('no measured kernels for this model');
  // Such a model cannot go on a GPU with measured data only (no roofline figures for it).
  await expect(page.locator('#f-gpu option[value="gb200"]')).toBeDisabled();
  await expectEngineNumbers(page);
  // A measured-only model on a measured-only GPU.
  await andRun(page, () => page.locator('#f-model').selectOption('Qwen/Qwen3-8B'));
  await andRun(page, () => page.locator('#f-gpu').selectOption('gb200'));
  await expect(page.locator('#timing-source')).toHaveText('measured kernels: GB200 · vLLM 0.24.0');
  await expectEngineNumbers(page);
});

test('a pasted config.json is timed by measured kernels, with the CLI’s numbers', async ({ page }) => {
  test.setTimeout(90_000);
  await page.goto('/');
  await waitRun(page, 0);
  await page.locator('#f-model').selectOption('config');
  await expect(page.locator('#f-model-config')).toBeVisible();
  await page.locator('#f-model-config').fill('{"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 32');
  await expect(page.locator('#f-model-config-error')).toContainText('not JSON');
  // A shape the measured-kernel model does not time is refused in the engine's words...
  const mistral = JSON.parse(readFileSync(join(import.meta.dirname, '..', '..', 'tests', 'ais', 'models', 'mistral-7b', 'config.json'), 'utf8'));
  await page.locator('#f-model-config').fill(JSON.stringify({ ...mistral, architectures: ['MistralForCausalLM'] }));
  await expect(page.locator('#message')).toContainText('`MistralForCausalLM` is not a dense decoder the measured-kernel model times', {
    timeout: 30_000,
  });
  // ...and Mistral 7B's shape as AIConfigurator reads it (a Llama) is timed.
  await andRun(page, () => page.locator('#f-model-config').fill(JSON.stringify(mistral)));
  await expect(page.locator('#f-model-config-error')).toHaveText('');
  await expect(page.locator('#f-timing')).toHaveValue('ais');
  await expect(page.locator('#timing-source')).toHaveText('measured kernels: H100 SXM · vLLM 0.24.0');
  expect(await shownScenario(page)).toMatchObject({ engine: { timing_model: { type: 'ais', model: mistral } } });
  await expectEngineNumbers(page);
});

test('links made before measured timing keep their timing and their numbers', async ({ page }) => {
  test.setTimeout(90_000);
  // main's links of a model (before this page had measured kernels): a roofline, and a
  // model's KV size under the default polynomial timing.
  const roofline = { engine: { timing_model: { type: 'roofline', model: 'llama-3.1-70b', gpu: 'h100', tp: 4 } }, workload: { num_requests: 100 } };
  await page.goto(`/${link(roofline)}`);
  await waitFresh(page, 0);
  await expect(page.locator('#f-timing')).toHaveValue('roofline');
  await expect(page.locator('#timing-source')).toContainText('estimate: roofline');
  await expect(page.locator('#timing-source')).toContainText('measured kernels exist for this model and GPU');
  expect(await numbers(page)).toEqual(cliRun(roofline).summary);
  // Editing it keeps the roofline it opened with: another GPU, the same kind of numbers.
  await andRun(page, () => page.locator('#f-gpu').selectOption('h200'));
  await expect(page.locator('#f-timing')).toHaveValue('roofline');
  await expectEngineNumbers(page);

  const polynomial = { engine: { kv_bytes_per_token: 131072 } };
  await page.goto(`/${link(polynomial)}`);
  await waitFresh(page, 0);
  await expect(page.locator('#f-timing')).toHaveValue('polynomial');
  await expect(page.locator('#f-model')).toHaveValue('llama-3.1-8b');
  expect(await numbers(page)).toEqual(cliRun(polynomial).summary);
});
