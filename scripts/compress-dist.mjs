#!/usr/bin/env node
// Precompresses the static site: writes NAME.br (Brotli, quality 11) and NAME.gz (gzip -9)
// beside every text or wasm file of web/dist over 1 KiB, for hosts that serve precompressed
// files (nginx gzip_static / brotli_static, Caddy `precompressed br gzip`, sirv, ...).
// Usage: node scripts/compress-dist.mjs [DIR]   (default web/dist)
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { extname, join, resolve } from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

const COMPRESSIBLE = new Set(['.html', '.js', '.mjs', '.css', '.wasm', '.json', '.svg', '.txt', '.map']);
const MIN_BYTES = 1024;
const dir = resolve(process.argv[2] ?? 'web/dist');

function* files(d) {
  for (const entry of readdirSync(d, { withFileTypes: true })) {
    const p = join(d, entry.name);
    if (entry.isDirectory()) yield* files(p);
    else if (COMPRESSIBLE.has(extname(entry.name))) yield p;
  }
}

let raw = 0;
let br = 0;
let gz = 0;
for (const file of files(dir)) {
  if (statSync(file).size < MIN_BYTES) continue;
  const bytes = readFileSync(file);
  const b = brotliCompressSync(bytes, {
    params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: bytes.length },
  });
  const g = gzipSync(bytes, { level: 9 });
  writeFileSync(`${file}.br`, b);
  writeFileSync(`${file}.gz`, g);
  raw += bytes.length;
  br += b.length;
  gz += g.length;
}
const kb = (n) => `${(n / 1024).toFixed(0)} KiB`;
console.log(`compress-dist: ${kb(raw)} of assets → ${kb(br)} brotli, ${kb(gz)} gzip`);
