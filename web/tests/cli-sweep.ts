// `servesim sweep` of a sweep file, for tests that check the page's sweep output against the
// native command byte for byte (./target/release/servesim, or $SERVESIM_BIN).

import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SERVESIM } from './cli';

/** The exact stdout of `servesim sweep SWEEP.json [--jobs N]` (the file is written as given). */
export function cliSweep(sweepFileText: string, jobs = 2): string {
  if (!existsSync(SERVESIM)) throw new Error(`${SERVESIM} is missing: cargo build --release -p servesim_cli`);
  const dir = mkdtempSync(join(tmpdir(), 'servesim-sweep-'));
  try {
    writeFileSync(join(dir, 'sweep.json'), sweepFileText);
    return execFileSync(SERVESIM, ['sweep', join(dir, 'sweep.json'), '--jobs', String(jobs)], { encoding: 'utf8', maxBuffer: 1 << 30 });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
