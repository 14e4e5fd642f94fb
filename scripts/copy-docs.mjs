#!/usr/bin/env node
// Publishes the documentation with the site: each docs/NAME.md as DIST/docs/NAME.html, its
// Markdown text as it is written (in a <pre>, UTF-8), so the playground's "what is this" line
// can link to it on any static host.
// Usage: node scripts/copy-docs.mjs [DIST]   (default web/dist)
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');
const out = join(resolve(process.argv[2] ?? 'web/dist'), 'docs');
const escapeHtml = (t) => t.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
mkdirSync(out, { recursive: true });
const docs = readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md'));
for (const f of docs) {
  const text = readFileSync(join(root, 'docs', f), 'utf8');
  const title = /^# (.+)$/m.exec(text)?.[1] ?? basename(f, '.md');
  const page = `<!doctype html>
<html lang="en"><head><meta charset="utf-8" /><meta name="viewport" content="width=device-width, initial-scale=1" />
<title>servesim: ${escapeHtml(title)}</title>
<style>body { font: 14px/1.5 system-ui, sans-serif; max-width: 920px; margin: 16px auto; padding: 0 12px; color: #111827; } pre { white-space: pre-wrap; font: 13px/1.5 ui-monospace, monospace; }</style>
</head><body><p><a href="../index.html">← servesim playground</a> · the documents: ${docs.map((d) => `<a href="${basename(d, '.md')}.html">${basename(d, '.md')}</a>`).join(' · ')}</p>
<pre>${escapeHtml(text)}</pre></body></html>
`;
  writeFileSync(join(out, `${basename(f, '.md')}.html`), page);
}
console.log(`copy-docs: ${docs.length} documents into ${out}`);
