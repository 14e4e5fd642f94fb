// The harness in the page (issues 20 and 21): closed-loop and session workloads with an SLA,
// a planner in the loop, a scaling script, and KV offload tiers, each done as a user would,
// with the page's numbers checked against `servesim run` of the scenario the page shows.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, type Page, test } from '@playwright/test';
import { type CliAnswer, cliRun } from './cli';
import { expectEngineNumbers, link, manual, openForm, runsDone, screenshot, shownScenario, waitFresh, waitRun, watchErrors } from './helpers';

// These tests set individual settings: the whole form is open from the start.
test.beforeEach(async ({ page }) => openForm(page));

/**
 * The summary table equals `servesim run` of the page's scenario.json, key for key: numbers
 * unrounded, and the keys that are not numbers (`meets_slo`, the tier counters) as shown.
 */
async function expectSameSummary(page: Page, files: Record<string, Uint8Array> = {}): Promise<CliAnswer> {
  await expect(page.locator('#results')).toHaveAttribute('data-stale', 'false');
  const native = cliRun(await shownScenario(page), files);
  const shown = await page.locator('#summary tbody tr').evaluateAll((rows) =>
    rows.map((r) => {
      const td = r.querySelector('td.num') as HTMLElement;
      return [r.getAttribute('data-key') ?? '', td.dataset.value ?? null, td.textContent ?? ''] as const;
    }),
  );
  expect(shown.map(([k]) => k)).toEqual(Object.keys(native.summary));
  for (const [k, value, text] of shown) {
    const v: unknown = native.summary[k];
    if (typeof v === 'number') expect(Number(value), k).toBe(v);
    else expect(text, k).toBe(typeof v === 'object' ? JSON.stringify(v) : String(v));
  }
  return native;
}

async function runNow(page: Page, timeout = 60_000): Promise<void> {
  const n = await runsDone(page);
  await page.locator('#run').click();
  await waitFresh(page, n, timeout);
}

test('a closed loop of 32 users with 3-turn sessions shows goodput next to throughput', async ({ page }, info) => {
  test.setTimeout(90_000);
  const errors = watchErrors(page);
  await page.goto('/');
  await waitRun(page, 0);
  await manual(page);
  await page.locator('#f-workload-num_requests').fill('192');
  await page.locator('#f-workload-concurrency').fill('32');
  await page.locator('#f-workload-turns_per_session').fill('3');
  // Think time applies between turns: shown only with more than one turn.
  await expect(page.locator('#f-workload-think_time_ms')).toBeVisible();
  await page.locator('#f-workload-think_time_ms').fill('1500');
  await page.locator('#f-slo-ttft_ms').fill('800');
  await page.locator('#f-slo-itl_ms').fill('30');
  await expect(page.locator('#message')).toBeHidden();
  await runNow(page);
  expect(await shownScenario(page)).toMatchObject({
    workload: { concurrency: 32, turns_per_session: 3, think_time_ms: 1500 },
    slo: { ttft_ms: 800, itl_ms: 30 },
  });
  const native = await expectSameSummary(page);
  expect(native.summary.completed_requests).toBe(192);
  // Goodput stands beside throughput, with the engine's figure.
  const good = page.locator('#h-goodput_output_throughput_tok_s');
  await expect(good).toBeVisible();
  expect(Number(await good.getAttribute('data-value'))).toBe(native.summary.goodput_output_throughput_tok_s);
  expect(native.summary.goodput_output_throughput_tok_s).toBeLessThanOrEqual(Number(native.summary.output_throughput_tok_s));
  // No scaling and no offload: the extra sections stay hidden.
  await expect(page.locator('#harness-results')).toBeHidden();
  await screenshot(page, info, 'harness-closed-loop.png');
  // Clearing the SLA removes it from the scenario (no empty object left in the link).
  await page.locator('#f-slo-ttft_ms').fill('');
  await page.locator('#f-slo-itl_ms').fill('');
  await expect.poll(async () => 'slo' in (await shownScenario(page))).toBe(false);
  expect(errors).toEqual([]);
});

test('a load planner grows a pool under a rising load, from the form', async ({ page }, info) => {
  test.setTimeout(120_000);
  const errors = watchErrors(page);
  await page.goto('/');
  await waitRun(page, 0);
  await manual(page);
  await page.locator('#f-engine-num_gpu_blocks').fill('2048');
  await page.locator('#f-engine-block_size').fill('16');
  await page.locator('#f-workload-num_requests').fill('600');
  await page.locator('#f-workload-rate_rps').fill('12');
  await page.locator('#f-workload-input_tokens-mean').fill('1024');
  await page.locator('#f-workload-input_tokens-stddev').fill('256');
  await page.locator('#f-scaling-mode').selectOption('planner');
  await expect(page.locator('#f-planner-optimization_target')).toHaveValue('load');
  await expect(page.locator('#f-planner-decode_scale_up_kv_rate')).toHaveValue('60');
  await page.locator('#f-startup_time').fill('10');
  // Thresholds the planner refuses: the engine's message names the setting.
  await page.locator('#f-planner-decode_scale_down_kv_rate').fill('70');
  await expect(page.locator('#message')).toContainText('decode_scale_up_kv_rate must be greater than decode_scale_down_kv_rate');
  await page.locator('#f-planner-decode_scale_down_kv_rate').fill('20');
  await expect(page.locator('#message')).toBeHidden();
  await runNow(page);
  const native = await expectEngineNumbers(page);
  // The replica chart, GPU-hours and the decision log, from the run's planner record.
  await expect(page.locator('#scaling-results')).toBeVisible();
  await expect(page.locator('#chart-replicas canvas')).toHaveCount(1);
  expect(Number(await page.locator('#chart-replicas .plot').getAttribute('data-max'))).toBeGreaterThan(1);
  expect(Number(await page.locator('#gpu-hours').getAttribute('data-value'))).toBe(native.summary.gpu_hours);
  const events = page.locator('#scaling-events tbody tr');
  expect(await events.count()).toBeGreaterThan(0);
  await expect(events.first()).toContainText('scale_up');
  await page.locator('#planner-ticks summary').click();
  expect(await page.locator('#planner-tick-log tbody tr').count()).toBeGreaterThan(0);
  await screenshot(page, info, 'harness-planner.png');
  await page.locator('#scaling-results').screenshot({ path: info.outputPath('scaling-section.png') });
  await page.locator('#s-scaling').screenshot({ path: info.outputPath('scaling-form.png') });
  await page.setViewportSize({ width: 390, height: 844 });
  await page.locator('#scaling-results').scrollIntoViewIfNeeded();
  await screenshot(page, info, 'harness-planner-phone.png', false);
  expect(errors).toEqual([]);
});

for (const [id, section] of [
  ['planner', '#scaling-results'],
  ['offload', '#offload-results'],
  ['closed-loop', '#h-goodput_output_throughput_tok_s'],
] as const) {
  test(`the ${id} example link opens and runs as the CLI does`, async ({ page }, info) => {
    test.setTimeout(90_000);
    const errors = watchErrors(page);
    await page.goto('/');
    await waitRun(page, 0);
    const n = await runsDone(page);
    await page.locator(`#examples a[data-example="${id}"]`).click();
    await waitFresh(page, n, 60_000);
    await expectSameSummary(page);
    await expect(page.locator(section)).toBeVisible();
    await expect(page.locator('#harness-results')).toBeVisible({ visible: id !== 'closed-loop' });
    await page.locator(section).scrollIntoViewIfNeeded();
    await screenshot(page, info, `harness-example-${id}.png`, false);
    expect(errors).toEqual([]);
  });
}

test('a scaling script is a list: add, edit, refuse a bad step, remove', async ({ page }) => {
  test.setTimeout(90_000);
  const errors = watchErrors(page);
  await page.goto(`/${link({ workload: { num_requests: 400, rate_rps: 8 }, startup_time: 5 })}`);
  await waitRun(page, 0);
  await manual(page);
  await page.locator('#f-scaling-mode').selectOption('script');
  await expect(page.locator('#scaling-script .script-row')).toHaveCount(1);
  await page.locator('#scaling-add').click();
  await expect(page.locator('#scaling-script .script-row')).toHaveCount(2);
  await page.locator('#scaling-1-count').fill('0');
  await expect(page.locator('#scaling-1-error')).toContainText('from 1 to 4096');
  await expect(page.locator('#message')).toContainText('scaling[1]');
  await expect(page.locator('#run')).toBeDisabled();
  await page.locator('#scaling-1-count').fill('1');
  // Out of time order: the engine refuses it and names the step.
  await page.locator('#scaling-1-at').fill('5');
  await expect(page.locator('#message')).toContainText('scaling[1]: steps must be in time order');
  await page.locator('#scaling-1-at').fill('30');
  await expect(page.locator('#message')).toBeHidden();
  expect((await shownScenario(page)) as { scaling: unknown }).toMatchObject({
    scaling: [
      { at_s: 10, pool: 'agg', count: 2 },
      { at_s: 30, pool: 'agg', count: 1 },
    ],
  });
  await runNow(page);
  await expectEngineNumbers(page);
  await expect(page.locator('#scaling-events tbody tr')).toHaveCount(2);
  await page.locator('#scaling-script .script-row >> nth=1 >> button.remove').click();
  await expect(page.locator('#scaling-script .script-row')).toHaveCount(1);
  await expect.poll(async () => ((await shownScenario(page)) as { scaling: unknown[] }).scaling.length).toBe(1);
  expect(errors).toEqual([]);
});

test('host offload: the tiers as form fields, per-tier hits and onboarding charts', async ({ page }, info) => {
  test.setTimeout(90_000);
  const errors = watchErrors(page);
  await page.goto('/');
  await waitRun(page, 0);
  await manual(page);
  await page.locator('#f-engine-block_size').fill('16');
  await page.locator('#f-engine-num_gpu_blocks').fill('512');
  await page.locator('#f-workload-num_requests').fill('300');
  await page.locator('#f-workload-rate_rps').fill('4');
  await page.locator('#f-workload-input_tokens-stddev').fill('0');
  await page.locator('#f-workload-num_prefix_groups').fill('12');
  await page.locator('#f-workload-shared_prefix_ratio').fill('0.75');
  await page.locator('#f-workload-block_tokens').fill('16');
  await page.locator('#f-offload-g2').check();
  await expect(page.locator('#f-engine-native_host_offload-num_host_blocks')).toHaveValue('16384');
  await page.locator('#f-engine-native_host_offload-num_host_blocks').fill('8192');
  await page.locator('#f-engine-native_host_offload-h2d_bandwidth_gbps').fill('16');
  await expect(page.locator('#message')).toBeHidden();
  await runNow(page);
  expect(await shownScenario(page)).toMatchObject({
    engine: { native_host_offload: { num_host_blocks: 8192, h2d_bandwidth_gbps: 16 }, kv_cache_bytes_per_token: 131072 },
  });
  const native = await expectEngineNumbers(page);
  await expect(page.locator('#offload-results')).toBeVisible();
  expect(Number(await page.locator('#tier-totals').getAttribute('data-host'))).toBeGreaterThan(0);
  await expect(page.locator('#chart-tier-hits canvas')).toHaveCount(1);
  await expect(page.locator('#chart-tier-onboard canvas')).toHaveCount(1);
  await screenshot(page, info, 'harness-offload.png');
  await page.locator('#offload-results').screenshot({ path: info.outputPath('offload-section.png') });
  await page.locator('#s-offload').screenshot({ path: info.outputPath('offload-form.png') });
  await page.locator('#s-slo').screenshot({ path: info.outputPath('slo-form.png') });

  // G3 behind it: its counters come from the report (a table, not the summary's numbers).
  await page.locator('#f-offload-g3').check();
  await page.locator('#f-engine-g3_offload-num_g3_blocks').fill('20000');
  await runNow(page);
  const withG3 = await expectSameSummary(page);
  const g3 = withG3.summary.g3_offload as unknown as Record<string, unknown>;
  expect(g3).toBeDefined();
  await expect(page.locator('#g3-counters')).toContainText('lookup_probes');
  await expect(page.locator('#g3-counters tr', { hasText: 'lookup_hits' }).locator('td.num')).toHaveText(String(g3.lookup_hits));
  // A host tier under SGLang: the engine's clear refusal, naming the setting.
  await page.locator('#f-engine-backend').selectOption('sglang');
  await expect(page.locator('#message')).toContainText('offload');
  await page.locator('#f-engine-backend').selectOption('vllm');
  await page.locator('#f-offload-g2').uncheck();
  await expect(page.locator('#f-offload-g3')).toBeHidden();
  expect(native.summary.completed_requests).toBe(300);
  expect(errors).toEqual([]);
});

test('an uploaded trace with sessions, replayed closed-loop, in two formats', async ({ page }) => {
  test.setTimeout(90_000);
  const errors = watchErrors(page);
  // A conformance trace of multi-turn sessions (session_id), as a user would upload it.
  const bytes = readFileSync(join(import.meta.dirname, '..', '..', 'tests', 'conformance', 'dynosim', 'traces', 'sessions-small.jsonl'));
  const files = { 'sessions.jsonl': new Uint8Array(bytes) };
  await page.goto('/');
  await waitRun(page, 0);
  await manual(page);
  await page.locator('#f-engine-block_size').fill('16');
  await page.locator('#f-workload-type').selectOption('trace');
  await page.locator('#f-trace').setInputFiles({ name: 'sessions.jsonl', mimeType: 'application/json', buffer: bytes });
  await page.locator('#f-workload-trace_block_size').fill('16');
  await expect(page.locator('#f-workload-format')).toHaveValue('mooncake');
  await expect(page.locator('#f-workload-turns_per_session')).toBeHidden();
  await page.locator('#f-workload-concurrency').fill('2');
  await runNow(page);
  expect(await shownScenario(page)).toMatchObject({ workload: { type: 'trace', concurrency: 2, trace_block_size: 16 } });
  const full = await expectSameSummary(page, files);
  // The same rows read as mooncake-delta: later turns add to the conversation so far.
  await page.locator('#f-workload-format').selectOption('mooncake-delta');
  await runNow(page);
  expect(await shownScenario(page)).toMatchObject({ workload: { format: 'mooncake-delta' } });
  const delta = await expectSameSummary(page, files);
  expect(delta.summary.total_input_tokens).toBeGreaterThan(Number(full.summary.total_input_tokens));
  expect(errors).toEqual([]);
});

test('links made before these fields open unchanged, with no scaling or tier views', async ({ page }) => {
  const old = { cluster: { num_workers: 2 }, workload: { num_requests: 50, rate_rps: 20 } };
  await page.goto(`/${link(old)}`);
  await waitRun(page, 0);
  // As before these fields: the workload keeps its type, nothing else is added.
  expect(await shownScenario(page)).toEqual({ ...old, workload: { type: 'synthetic', ...old.workload } });
  await expect(page.locator('#f-scaling-mode')).toHaveValue('off');
  await expect(page.locator('#f-offload-g2')).not.toBeChecked();
  await expect(page.locator('#harness-results')).toBeHidden();
  await expectEngineNumbers(page);
});

test('an image workload from the form: encoder cards, the encoder line of the pass-time chart, the CLI’s numbers', async ({ page }, info) => {
  test.setTimeout(90_000);
  const errors = watchErrors(page);
  await page.goto('/');
  await waitRun(page, 0);
  await manual(page);
  // The encoder settings appear only once requests carry images.
  await expect(page.locator('#f-workload-images-tokens_per_image')).toBeHidden();
  await page.locator('#f-workload-images-per_request').fill('2');
  await expect(page.locator('#f-workload-images-tokens_per_image')).toHaveValue('576');
  await page.locator('#f-workload-images-distinct').fill('4');
  // A text-only model's roofline cannot time a vision encoder: the engine says so, naming
  // the field. (Measured kernels time the encoder per image token, as the polynomial does.)
  await page.locator('#f-timing').selectOption('roofline');
  await page.locator('#f-model').selectOption('llama-3.1-8b');
  await expect(page.locator('#message')).toContainText('vision tower');
  await page.locator('#f-model').selectOption('qwen2.5-vl-7b');
  await expect(page.locator('#message')).toBeHidden();
  await runNow(page);
  expect(await shownScenario(page)).toMatchObject({ workload: { images: { per_request: 2, tokens_per_image: 576, distinct: 4 } } });
  const native = await expectSameSummary(page);
  expect(native.summary.num_images).toBe(2 * Number(native.summary.completed_requests));
  // Four distinct images: most lookups hit the encoder cache (misses: an image evicted
  // meanwhile by the others).
  expect(Number(native.summary.encoder_cache_hit_ratio)).toBeGreaterThan(0.5);
  await expect(page.locator('#h-mean_encoder_time_ms')).toHaveAttribute('data-value', String(native.summary.mean_encoder_time_ms));
  await expect(page.locator('#h-encoder_cache_hit_ratio')).toHaveAttribute('data-value', String(native.summary.encoder_cache_hit_ratio));
  // The pass-time chart has a rank's line and its dotted encoder line.
  const legend = page.locator('#chart-pass .u-legend .u-series th');
  await expect(legend.filter({ hasText: /worker 0$/ })).toHaveCount(1);
  await expect(legend.filter({ hasText: 'worker 0 encoder' })).toHaveCount(1);
  await screenshot(page, info, 'images-desktop.png');
  // Back to text only: the images object is gone, and so are the encoder cards and line.
  await page.locator('#f-workload-images-per_request').fill('0');
  await runNow(page);
  expect(await shownScenario(page)).not.toHaveProperty('workload.images');
  await expect(page.locator('#h-mean_encoder_time_ms')).toHaveCount(0);
  await expect(legend.filter({ hasText: 'encoder' })).toHaveCount(0);
  expect(errors).toEqual([]);
});
