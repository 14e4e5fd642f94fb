#!/usr/bin/env node
// `servesim replay CASE.json`, run by the wasm engine in Node (web/pkg, built by
// scripts/build-wasm.sh). Prints the same JSON as the native command, so the two can be
// compared byte for byte:  node scripts/replay-wasm.mjs CASE.json
// With --check, runs every case given against ./target/release/servesim (or $SERVESIM_BIN)
// and reports any difference.
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const wasm = await import(join(root, 'web/pkg/servesim_wasm.js'));
wasm.initSync({ module: readFileSync(join(root, 'web/pkg/servesim_wasm_bg.wasm')) });

function replay(casePath) {
  const text = readFileSync(casePath, 'utf8');
  const spec = JSON.parse(text);
  const base = dirname(casePath);
  const files = {};
  // NPZ profiles the case names (timing_model dynamo_profile or planner_profile_data).
  const engines = [spec.replay?.extra_engine_args, spec.replay?.prefill_engine_args, spec.replay?.decode_engine_args];
  for (const args of engines) {
    const e = args?.engine ?? {};
    for (const p of [e.timing_model?.config?.path, e.planner_profile_data]) {
      if (typeof p === 'string') files[p] = new Uint8Array(readFileSync(join(base, p)));
    }
  }
  // Bytes in and out: the trace and the answer never become JS strings (megabytes each).
  const trace = readFileSync(join(base, spec.trace));
  return wasm.replayCase(text, casePath, trace, files);
}

const args = process.argv.slice(2);
if (args[0] === '--check') {
  let bad = 0;
  for (const c of args.slice(1)) {
    const t0 = performance.now();
    const ours = new TextDecoder().decode(replay(c)).trim();
    const ms = performance.now() - t0;
    const native = execFileSync(process.env.SERVESIM_BIN ?? join(root, 'target/release/servesim'), ['replay', c], { encoding: 'utf8' }).trim();
    const same = ours === native;
    if (!same) bad++;
    console.log(`${same ? 'same' : 'DIFFERENT'}  ${c}  (wasm ${ms.toFixed(0)} ms)`);
  }
  process.exit(bad ? 1 : 0);
} else if (args.length === 1) {
  process.stdout.write(replay(args[0]));
} else {
  console.error('usage: node scripts/replay-wasm.mjs CASE.json | --check CASE.json...');
  process.exit(2);
}
