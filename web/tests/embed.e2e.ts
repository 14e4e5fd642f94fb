// End-to-end tests of embedding and hosting: the playground's Embed builder, embeds on a
// host page of another origin (auto-resize, lazy start, one engine download), a bad link
// in an embed, click-to-run, and the built site served as deployed: under a sub-path, with
// precompressed files (tests/static-server.mjs).

import { existsSync } from 'node:fs';
import { basename, join } from 'node:path';
import { expect, type FrameLocator, type Page, test } from '@playwright/test';
import { link, openForm, screenshot, waitRun, watchErrors } from './helpers';

// These tests set individual settings: the whole form is open from the start.
test.beforeEach(async ({ page }) => openForm(page));

const SITE_PORT = Number(process.env.SITE_PORT ?? 4174);
/** The deployed site, on 127.0.0.1 (host pages are served from localhost: another origin). */
const SITE = `http://127.0.0.1:${SITE_PORT}/servesim/`;
const HOSTS = `http://localhost:${SITE_PORT}/host/`;

const scenario = { name: 'two workers at 20 req/s', cluster: { num_workers: 2 }, workload: { type: 'synthetic', num_requests: 300, rate_rps: 20 } };

async function frameDone(frame: FrameLocator, timeout = 20_000): Promise<void> {
  await expect(frame.locator('#status')).toHaveAttribute('data-state', 'done', { timeout });
}

/** Requests that reached the static server, by path under /servesim. */
async function hits(page: Page): Promise<Record<string, number>> {
  const r = await page.request.get(`http://127.0.0.1:${SITE_PORT}/__hits`);
  return (await r.json()) as Record<string, number>;
}

function sum(h: Record<string, number>, re: RegExp): number {
  return Object.entries(h)
    .filter(([k]) => re.test(k))
    .reduce((a, [, n]) => a + n, 0);
}

test('the Embed builder gives a titled snippet whose default size fits, and copies it', async ({ page, context }, info) => {
  await context.grantPermissions(['clipboard-read', 'clipboard-write']);
  const errors = watchErrors(page);
  await page.goto(`/${link(scenario)}`);
  await waitRun(page, 0);
  await page.locator('#embed').click();
  const dialog = page.locator('#embed-dialog');
  await expect(dialog).toBeVisible();
  await page.locator('#eb-width').fill('560');
  await page.locator('#eb-panel-latency').uncheck();
  await page.locator('#eb-panel-kv').check();
  await page.locator('#eb-theme').selectOption('dark');
  await expect(dialog).toHaveAttribute('data-measured', 'true', { timeout: 20_000 });
  // The preview ran: its height is the content's.
  const preview = page.frameLocator('#eb-preview');
  await frameDone(preview);
  await expect(preview.locator('#chart-kv canvas')).toBeVisible();
  await expect(preview.locator('#chart-latency')).toHaveCount(0);
  await expect(dialog).toHaveAttribute('data-measured', 'true');
  const code = await page.locator('#eb-snippet').inputValue();
  const height = Number(await page.locator('#eb-height').inputValue());
  expect(height).toBeGreaterThan(300);
  expect(code).toContain('title="servesim simulation: two workers at 20 req/s"');
  expect(code).toContain(`width="560" height="${height}"`);
  expect(code).toMatch(/embed\.html\?panels=cards,throughput,kv&amp;theme=dark#v1\.[A-Za-z0-9_-]+"/);
  expect(code).toContain('loading="lazy"');
  // The script is apart: once per page, whatever the number of embeds.
  expect(code).not.toContain('<script');
  await expect(page.locator('#eb-script')).toHaveValue(/^<script src="http:\/\/127\.0\.0\.1:\d+\/embed\.js" async><\/script>$/);
  await screenshot(page, info, 'embed-builder.png', false);

  await page.locator('#eb-copy').click();
  await expect(page.locator('#eb-copied')).toHaveText('Copied to the clipboard.');
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(code);

  // Click-to-run goes into the address.
  await page.locator('#eb-click').check();
  await expect(page.locator('#eb-snippet')).toHaveValue(/&amp;run=click#v1\./);
  expect(errors).toEqual([]);

  // Without embed.js the frame keeps the snippet's size, and the content fits in it.
  const plain = await page.context().newPage();
  await plain.setViewportSize({ width: 900, height: 900 });
  await plain.setContent(`<!doctype html><body style="margin:0">${code.replace(/<script[^>]*><\/script>/, '').replace('&amp;run=click', '')}</body>`);
  const frame = plain.frameLocator('iframe');
  await frameDone(frame);
  const fit = await frame.locator('html').evaluate((h) => ({ scroll: h.scrollHeight, client: h.clientHeight }));
  expect(fit.scroll).toBeLessThanOrEqual(fit.client + 1);
  expect(fit.client).toBe(height);
  await plain.close();
});

test('two embeds on a phone-sized host page: sized to content, lazy, one engine download', async ({ page }, info) => {
  await page.setViewportSize({ width: 390, height: 844 });
  const before = await hits(page);
  await page.goto(`${HOSTS}two.html`);
  const a = page.frameLocator('#a');
  await frameDone(a);
  await expect(a.locator('#settings')).toContainText('600 KV blocks × 64 tokens');
  await expect(a.locator('#settings')).toContainText('300 requests at 20 req/s');
  await expect(a.locator('#chart-kv canvas')).toBeVisible();
  await expect(a.locator('#chart-throughput')).toHaveCount(0);
  // embed.js set the frame's height to the content's (not the snippet's 520).
  const sized = page.locator('#a');
  await expect(sized).toHaveAttribute('data-servesim-height', /^\d+$/);
  const content = await a.locator('html').evaluate((h) => h.getBoundingClientRect().height);
  const frameHeight = await sized.evaluate((f) => f.getBoundingClientRect().height);
  expect(Math.abs(frameHeight - Math.ceil(content))).toBeLessThanOrEqual(1);
  expect(frameHeight).not.toBe(520);
  const inner = await a.locator('html').evaluate((h) => h.scrollHeight - h.clientHeight);
  expect(inner).toBeLessThanOrEqual(1);
  await screenshot(page, info, 'host-phone-top.png', false);

  // The second embed is off screen: it has not started an engine.
  await page.waitForTimeout(500);
  const b = page.frameLocator('#b');
  const wasmSoFar = sum(await hits(page), /\.wasm$/) - sum(before, /\.wasm$/);
  expect(wasmSoFar).toBe(1);
  await expect(b.locator('#status')).toHaveAttribute('data-state', 'loading');

  await page.locator('#b').scrollIntoViewIfNeeded();
  await frameDone(b);
  await expect(b.locator('#title')).toHaveText('two workers, KV-aware router');
  await expect(b.locator('#settings')).toContainText('2 workers, KV-aware router');
  await expect(page.locator('#b')).toHaveAttribute('data-servesim-height', /^\d+$/);
  // The second engine came from the HTTP cache: the server saw one download in all.
  const after = await hits(page);
  expect(sum(after, /\.wasm$/) - sum(before, /\.wasm$/)).toBe(1);
  await screenshot(page, info, 'host-phone-second.png', false);
  await screenshot(page, info, 'host-phone-full.png', true);
});

test('a bad link in an embed shows the message and no numbers', async ({ page }, info) => {
  const cases: [string, string][] = [
    ['#v1.not-a-link!', 'This link could not be opened: the link is not valid base64url.'],
    [link({ engine: { num_gpu_blockz: 1 } }), "This link's scenario is not valid: engine.num_gpu_blockz: unknown field"],
  ];
  for (const [hash, said] of cases) {
    await page.goto(`${SITE}embed.html${hash}`);
    await expect(page.locator('#status')).toHaveAttribute('data-state', 'error', { timeout: 15_000 });
    await expect(page.locator('#message')).toContainText(said);
    await expect(page.locator('#headline')).toBeHidden();
    await expect(page.locator('#headline .card')).toHaveCount(0);
    await expect(page.locator('canvas')).toHaveCount(0);
  }
  await screenshot(page, info, 'embed-bad-link.png');
});

test('click-to-run: the embed states the key settings and runs on a click', async ({ page }) => {
  await page.goto(`/embed.html?run=click&panels=cards,dist-ttft${link(scenario)}`);
  await expect(page.locator('#status')).toHaveAttribute('data-state', 'ready', { timeout: 15_000 });
  await expect(page.locator('#settings')).toHaveText(/vLLM.*2 workers, round robin.*16,384 KV blocks × 64 tokens.*300 requests at 20 req\/s/);
  // Until the click: cards without numbers, holding the results' room.
  await expect(page.locator('#headline .card:not(.placeholder)')).toHaveCount(0);
  await expect(page.locator('#headline .card.placeholder')).toHaveCount(7);
  await page.locator('#run').click();
  await waitRun(page, 0);
  await expect(page.locator('#headline .card').first()).toBeVisible();
  await expect(page.locator('#chart-dist-ttft canvas')).toBeVisible();
  await expect(page.locator('#chart-throughput')).toHaveCount(0);
  // An option the embed does not know is said, not silently dropped.
  await page.goto(`/embed.html?panels=cards,nope${link(scenario)}`);
  await waitRun(page, 0);
  await expect(page.locator('#message')).toContainText('unknown panel “nope”');
});

test('the site works under a sub-path, with precompressed, cacheable assets', async ({ page }) => {
  const seen = new Map<string, { encoding?: string; type?: string; cache?: string }>();
  page.on('response', (r) => {
    const h = r.headers();
    seen.set(new URL(r.url()).pathname, { encoding: h['content-encoding'], type: h['content-type'], cache: h['cache-control'] });
  });
  const errors = watchErrors(page);
  await page.goto(`${SITE}${link(scenario)}`);
  await waitRun(page, 0);
  expect(errors).toEqual([]);
  const wasm = [...seen].find(([p]) => p.endsWith('.wasm'));
  expect(wasm?.[0]).toMatch(/^\/servesim\/assets\//);
  expect(wasm?.[1]).toMatchObject({ encoding: 'br', type: 'application/wasm', cache: 'public, max-age=31536000, immutable' });
  // The scripts with a precompressed copy (files under 1 KiB are not worth compressing).
  const dist = join(import.meta.dirname, '..', 'dist', 'assets');
  const js = [...seen].filter(([p]) => p.endsWith('.js') && existsSync(join(dist, `${basename(p)}.br`)));
  expect(js.length).toBeGreaterThanOrEqual(3);
  for (const [, h] of js) expect(h.encoding).toBe('br');

  // Each encoding decodes to the same bytes as the plain file (fetch decodes both itself).
  const url = `http://127.0.0.1:${SITE_PORT}${wasm?.[0]}`;
  const plain = await page.request.get(url, { headers: { 'Accept-Encoding': 'identity' } });
  expect(plain.headers()['content-encoding']).toBeUndefined();
  const body = await plain.body();
  expect(body.subarray(0, 4)).toEqual(Buffer.from([0, 0x61, 0x73, 0x6d]));
  for (const encoding of ['br', 'gzip']) {
    const r = await fetch(url, { headers: { 'Accept-Encoding': encoding } });
    expect(r.headers.get('content-encoding')).toBe(encoding);
    expect(Number(r.headers.get('content-length'))).toBeLessThan(body.length / 2);
    expect(Buffer.from(await r.arrayBuffer()).equals(body)).toBe(true);
  }

  // The embed page and embed.js are there too, and the playground's link to the embed.
  await page.goto(`${SITE}embed.html${link(scenario)}`);
  await waitRun(page, 0);
  const script = await page.request.get(`${SITE}embed.js`);
  expect(script.ok()).toBe(true);
  expect(await script.text()).toContain('servesim:resize');
});
