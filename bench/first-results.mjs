#!/usr/bin/env node
// First results of the default scenario, cold: opens the built site (web/dist, served as
// deployed by web/tests/static-server.mjs) in a fresh Chromium context N times and prints the
// page's own figure, `document.body.dataset.firstResultsMs` (ms from navigation start to the
// first results on screen), each run and the median. `--no-data` refuses the measured-kernel
// data requests (the page then offers the roofline only), alternating with normal runs, so
// the cost of fetching the data's lists is measured side by side in one run.
//
// `--compare DIR` serves a second built site (another commit's web/dist, copied aside) and
// alternates the two, so a change's cost or gain is measured side by side in one run.
//
//   npm run build && node bench/first-results.mjs [--runs 5] [--no-data] [--compare DIR]
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const args = process.argv.slice(2);
const runs = Number(args[args.indexOf('--runs') + 1] || 5) || 5;
const both = args.includes('--no-data');
const port = 4190 + Math.floor(Math.random() * 50);
const root = join(import.meta.dirname, '..');
const compare = args.includes('--compare') ? args[args.indexOf('--compare') + 1] : null;
const serve = (p, dist) =>
  spawn(process.execPath, [join(root, 'web', 'tests', 'static-server.mjs'), String(p), ...(dist ? [dist] : [])], { stdio: 'ignore' });
const servers = [serve(port)];
if (compare) servers.push(serve(port + 1, compare));
const url = `http://127.0.0.1:${port}/servesim/`;
const urlOf = (kind) => (kind === 'compared' ? `http://127.0.0.1:${port + 1}/servesim/` : url);

async function waitUp(url) {
  for (let i = 0; i < 100; i++) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {}
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the static server on ${port} did not start`);
}

const median = (v) => {
  const s = [...v].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

try {
  await waitUp(url);
  if (compare) await waitUp(urlOf('compared'));
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
  });
  const kinds = both ? ['with data', 'no data'] : ['with data'];
  if (compare) kinds.push('compared');
  const figures = Object.fromEntries(kinds.map((k) => [k, []]));
  for (let i = 0; i < runs; i++) {
    for (const kind of kinds) {
      const context = await browser.newContext();
      const page = await context.newPage();
      if (kind === 'no data') await page.route('**/data/ais/**', (r) => r.abort());
      await page.goto(urlOf(kind));
      await page.waitForFunction(() => document.body.dataset.firstResultsMs !== undefined, null, { timeout: 60_000 });
      const ms = Number(await page.evaluate(() => document.body.dataset.firstResultsMs));
      figures[kind].push(ms);
      console.log(`${kind}: run ${i + 1}: ${ms} ms`);
      await context.close();
    }
  }
  for (const kind of kinds) console.log(`${kind}: median of ${runs}: ${median(figures[kind])} ms (${figures[kind].join(', ')})`);
  if (both) console.log(`ratio with data / no data: ${(median(figures['with data']) / median(figures['no data'])).toFixed(2)}`);
  if (compare) console.log(`ratio this build / ${compare}: ${(median(figures['with data']) / median(figures.compared)).toFixed(2)}`);
  await browser.close();
} finally {
  for (const s of servers) s.kill();
}
