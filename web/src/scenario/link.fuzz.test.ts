// Fuzzing the share-link decoder (it is written in TypeScript, so cargo-fuzz cannot reach it):
// whatever a link holds, decodeLink returns a scenario object or null, or refuses it with a
// LinkError; it never throws anything else and never hangs. The JSON a link decodes to is then
// validated by the engine, which the `scenario` cargo-fuzz target covers.
//
// CI runs a fixed number of cases from a fixed seed. To fuzz for a set time:
//   SHARE_FUZZ_SECONDS=60 [SHARE_FUZZ_SEED=7] npx vitest run --config web/vite.config.ts share.fuzz

import { deflateRawSync } from 'node:zlib';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { decodeLink, encodeLink, LINK_PREFIX, LinkError } from './link';

const seconds = Number(process.env.SHARE_FUZZ_SECONDS ?? 0);
const seed = Number(process.env.SHARE_FUZZ_SEED ?? 20261201);
const settings =
  seconds > 0 ? { seed, numRuns: Number.MAX_SAFE_INTEGER, interruptAfterTimeLimit: seconds * 1000, markInterruptAsFailure: false } : { seed, numRuns: 300 };
const timeout = seconds > 0 ? seconds * 1000 * 2 + 10_000 : 30_000;

let decoded = 0;
afterAll(() => {
  if (seconds > 0) console.log(`share-link fuzzing: ${decoded} links decoded (seed ${seed})`);
});

/** Decodes `hash`; the outcome must be an object, null, or a LinkError. */
async function decodesCleanly(hash: string): Promise<void> {
  decoded++;
  try {
    const v = await decodeLink(hash);
    expect(v === null || (typeof v === 'object' && !Array.isArray(v))).toBe(true);
  } catch (e) {
    if (!(e instanceof LinkError)) throw new Error(`decodeLink(${JSON.stringify(hash.slice(0, 80))}) threw ${String(e)}`);
  }
}

const base64urlChar = fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_=+/%.'.split(''));
const link = (bytes: Uint8Array) => LINK_PREFIX + Buffer.from(bytes).toString('base64url');

describe('share-link decoder under fuzzing', () => {
  it(
    'any text after the hash',
    async () => {
      await fc.assert(
        fc.asyncProperty(fc.string({ unit: 'binary', maxLength: 300 }), (s) => decodesCleanly(`#${s}`)),
        settings,
      );
    },
    timeout,
  );

  it(
    'any base64url-like text after the prefix',
    async () => {
      await fc.assert(
        fc.asyncProperty(fc.string({ unit: base64urlChar, maxLength: 600 }), (s) => decodesCleanly(LINK_PREFIX + s)),
        settings,
      );
    },
    timeout,
  );

  it(
    'any bytes, raw or deflated',
    async () => {
      await fc.assert(
        fc.asyncProperty(fc.uint8Array({ maxLength: 2000 }), fc.boolean(), (bytes, deflate) => decodesCleanly(link(deflate ? deflateRawSync(bytes) : bytes))),
        settings,
      );
    },
    timeout,
  );

  it(
    'any JSON value, deflated',
    async () => {
      await fc.assert(
        fc.asyncProperty(fc.jsonValue({ maxDepth: 6 }), (v) => decodesCleanly(link(deflateRawSync(Buffer.from(JSON.stringify(v) ?? 'null'))))),
        settings,
      );
    },
    timeout,
  );

  it(
    'valid links cut short or with a character changed',
    async () => {
      const good = await encodeLink({ engine: { num_gpu_blocks: 12345, block_size: 32 }, name: 'fuzz ✓', workload: { type: 'synthetic', rate_rps: 20 } });
      await fc.assert(
        fc.asyncProperty(fc.nat(good.length), base64urlChar, fc.boolean(), (at, c, cut) =>
          decodesCleanly(cut ? good.slice(0, at) : good.slice(0, at) + c + good.slice(at + 1)),
        ),
        settings,
      );
    },
    timeout,
  );
});
