// Shared steps of the end-to-end tests: links, waiting for runs, reading what the page shows,
// and checking it against the native engine.

import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { deflateRawSync } from 'node:zlib';
import { expect, type Page, type TestInfo } from '@playwright/test';
import { type CliAnswer, cliRun } from './cli';

/**
 * Opens the whole form from the start (every section and "More settings" group), for tests of
 * individual settings; call in `test.beforeEach`.
 */
export async function openForm(page: Page): Promise<void> {
  await page.addInitScript(() => {
    (globalThis as { __servesimOpenForm?: boolean }).__servesimOpenForm = true;
  });
}

/** A share link for a partial scenario, built independently of the page's own encoder. */
export function link(partial: object): string {
  return `#v1.${deflateRawSync(Buffer.from(JSON.stringify(partial), 'utf8')).toString('base64url')}`;
}

const SCREENSHOTS = join(import.meta.dirname, '..', 'test-results', 'screenshots');

export async function screenshot(page: Page, info: TestInfo, name: string, fullPage = true): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  const path = join(SCREENSHOTS, name);
  await page.screenshot({ path, fullPage });
  await info.attach(name, { path, contentType: 'image/png' });
}

/** Collects console errors and page errors; the test asserts there are none. */
export function watchErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  page.on('pageerror', (e) => errors.push(e.message));
  return errors;
}

export async function runsDone(page: Page): Promise<number> {
  return Number((await page.locator('#status').getAttribute('data-runs')) ?? 0);
}

export async function waitRun(page: Page, after: number, timeout = 15_000): Promise<void> {
  await expect.poll(() => runsDone(page), { timeout }).toBeGreaterThan(after);
  await expect(page.locator('#status')).toHaveAttribute('data-state', 'done', { timeout });
}

/** Waits until the results on screen are a finished run of the settings on screen. */
export async function waitFresh(page: Page, after: number, timeout = 15_000): Promise<void> {
  await waitRun(page, after, timeout);
  await expect(page.locator('#results')).toHaveAttribute('data-stale', 'false', { timeout });
  await expect(page.locator('#status')).toHaveAttribute('data-state', 'done');
}

/** The summary table as {key: text}. */
export async function summary(page: Page): Promise<Record<string, string>> {
  return page
    .locator('#summary tbody tr')
    .evaluateAll((rows) => Object.fromEntries(rows.map((r) => [r.getAttribute('data-key'), r.querySelector('td.num')?.textContent ?? ''])));
}

/** The summary table's numbers, unrounded ({key: value}). */
export async function numbers(page: Page): Promise<Record<string, number>> {
  return page
    .locator('#summary tbody tr')
    .evaluateAll((rows) =>
      Object.fromEntries(rows.map((r) => [r.getAttribute('data-key'), Number((r.querySelector('td.num') as HTMLElement | null)?.dataset.value)])),
    );
}

/** The scenario the page says it runs (its scenario.json view). */
export async function shownScenario(page: Page): Promise<object> {
  return JSON.parse((await page.locator('#scenario-file').textContent()) ?? '{}') as object;
}

/**
 * The numbers on screen are the engine's for the settings on screen: the summary equals
 * `servesim run` of the page's own scenario.json, key for key. Returns the native answer.
 */
export async function expectEngineNumbers(page: Page, files: Record<string, Uint8Array> = {}): Promise<CliAnswer> {
  await expect(page.locator('#results')).toHaveAttribute('data-stale', 'false');
  const native = cliRun(await shownScenario(page), files);
  expect(await numbers(page)).toEqual(native.summary);
  return native;
}

export async function manual(page: Page): Promise<void> {
  await page.locator('#autorun').uncheck();
}
