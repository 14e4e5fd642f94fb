#!/usr/bin/env node
// A static host as a deployment would be: web/dist under a sub-path (/servesim/), its
// precompressed .br/.gz files served to browsers that accept them, hashed assets cached as
// immutable, `application/wasm` for the engine. Also serves test host pages (/host/NAME.html
// from web/tests/hosts, with {{SITE}} replaced by the site's address on 127.0.0.1, so a host
// page opened on localhost embeds from another origin), and counts requests per path
// (GET /__hits) so tests can see what was downloaded.
//
//   node web/tests/static-server.mjs [PORT] [DIST]      (default 4174, web/dist)
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import sirv from 'sirv';

const port = Number(process.argv[2] ?? process.env.PORT ?? 4174);
const BASE = '/servesim';
const here = import.meta.dirname;
const site = sirv(process.argv[3] ?? join(here, '..', 'dist'), {
  brotli: true,
  gzip: true,
  etag: true,
  setHeaders(res, pathname) {
    // Vite's hashed file names change with their content: cache them for good.
    res.setHeader('Cache-Control', pathname.startsWith('/assets/') ? 'public, max-age=31536000, immutable' : 'no-cache');
  },
});
const hits = new Map();

createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://x');
  if (url.pathname === '/__hits') {
    res.setHeader('Content-Type', 'application/json');
    res.setHeader('Cache-Control', 'no-store');
    res.end(JSON.stringify(Object.fromEntries(hits)));
    return;
  }
  if (url.pathname.startsWith(`${BASE}/`)) {
    const key = url.pathname.slice(BASE.length);
    hits.set(key, (hits.get(key) ?? 0) + 1);
    req.url = key + url.search;
    site(req, res, () => {
      res.statusCode = 404;
      res.end('not found');
    });
    return;
  }
  const host = /^\/host\/([a-z0-9-]+\.html)$/.exec(url.pathname);
  if (host) {
    try {
      const page = readFileSync(join(here, 'hosts', host[1]), 'utf8').replaceAll('{{SITE}}', `http://127.0.0.1:${port}${BASE}/`);
      res.setHeader('Content-Type', 'text/html; charset=utf-8');
      res.end(page);
    } catch {
      res.statusCode = 404;
      res.end('no such host page');
    }
    return;
  }
  res.statusCode = 404;
  res.end('the site is under /servesim/');
}).listen(port, '127.0.0.1', () => console.log(`static server: http://127.0.0.1:${port}${BASE}/`));
