#!/usr/bin/env node
// Runs a servesim scenario with the engine's npm package (the WebAssembly build, no native
// binary) and prints exactly what `servesim run SCENARIO.json` prints:
//
//   npm run build                      # at the repository root: builds the package in web/pkg
//   cd examples/node && npm install    # links it here as `servesim`
//   node run.mjs ../scenario.json
//
// Files the scenario names (a trace's `workload.path`, an NPZ profile's `path`) are read
// beside the scenario file, as the command line reads them.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { initSync, normalizeScenario, Simulation } from 'servesim';

// The package is built for browsers (`--target web`), which fetch the module; Node hands
// over its bytes instead.
initSync({ module: readFileSync(new URL(import.meta.resolve('servesim/servesim_wasm_bg.wasm'))) });

/** What the command line does with a bad input: `servesim: why` on stderr, exit status 2. */
function fail(message) {
  process.stderr.write(`servesim: ${message}\n`);
  process.exit(2);
}

/** The engine's errors are JS `Error`s whose message names the field or the trace line. */
const why = (e) => (e instanceof Error ? e.message : String(e));

const [path, ...extra] = process.argv.slice(2);
if (!path || extra.length > 0) {
  process.stderr.write('usage: node run.mjs SCENARIO.json\n');
  process.exit(2);
}

/** A file's bytes, or the command line's message for a file it cannot read. */
function readOrFail(file) {
  try {
    return readFileSync(file);
  } catch (e) {
    fail(`${file}: ${e.code === 'ENOENT' ? 'No such file or directory (os error 2)' : why(e)}`);
  }
}

const text = readOrFail(path).toString('utf8');

let scenario;
try {
  scenario = JSON.parse(normalizeScenario(text));
} catch (e) {
  fail(`${path}: ${why(e)}`);
}

const base = dirname(path);
// A trace workload's JSONL, as text; other files (NPZ profiles) on demand, by name.
const trace = scenario.workload.type === 'trace' ? readOrFail(join(base, scenario.workload.path)).toString('utf8') : undefined;
const files = new Proxy({}, { get: (_, name) => (typeof name === 'string' ? new Uint8Array(readOrFail(join(base, name))) : undefined) });

let sim;
try {
  // `undefined` interval: the scenario's own time-series window, as the command line uses.
  sim = new Simulation(text, trace, undefined, files);
  while (!sim.advance(100_000)) {}
  process.stdout.write(`${sim.reportJson()}\n`);
} catch (e) {
  fail(why(e));
} finally {
  sim?.free();
}
