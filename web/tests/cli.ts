// The native engine, for tests that check the page's (or the wasm module's) numbers against
// the same scenario run by `servesim run` (./target/release/servesim, or $SERVESIM_BIN;
// scripts/test.sh builds it before the web tests).

import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '..', '..');
export const SERVESIM = process.env.SERVESIM_BIN ?? join(ROOT, 'target', 'release', 'servesim');

export interface CliAnswer {
  config: { total_gpus: number; pools: Record<string, unknown>[]; no_effect: { field: string; reason: string }[] };
  summary: Record<string, number>;
  per_request: unknown[];
}

/** `servesim run` of a scenario (with the files it names, by name); its printed JSON. */
export function cliRun(scenario: unknown, files: Record<string, Uint8Array> = {}): CliAnswer {
  if (!existsSync(SERVESIM)) throw new Error(`${SERVESIM} is missing: cargo build --release -p servesim_cli`);
  const dir = mkdtempSync(join(tmpdir(), 'servesim-'));
  try {
    writeFileSync(join(dir, 'scenario.json'), typeof scenario === 'string' ? scenario : JSON.stringify(scenario));
    for (const [name, bytes] of Object.entries(files)) writeFileSync(join(dir, name), bytes);
    const out = execFileSync(SERVESIM, ['run', join(dir, 'scenario.json')], { encoding: 'utf8', maxBuffer: 1 << 30 });
    return JSON.parse(out) as CliAnswer;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
