// Share links: `#v1.` + base64url (no padding) of the deflate-raw-compressed UTF-8 JSON of the
// scenario's non-default fields. Links are untrusted input: the text is size-capped before
// decompression, the inflated size is capped while it streams, and the JSON must be an
// object; the engine validates the scenario itself afterwards.

import type { JsonObject } from './json';
import { isObject } from './json';

export const LINK_PREFIX = '#v1.';
/** Largest encoded payload accepted (characters after the prefix). */
export const MAX_LINK_CHARS = 64 * 1024;
/** Largest inflated JSON accepted, in bytes. */
export const MAX_JSON_BYTES = 1024 * 1024;

export class LinkError extends Error {}

type Codec = TransformStream<Uint8Array, Uint8Array>;

export function toBase64Url(bytes: Uint8Array): string {
  let bin = '';
  for (let i = 0; i < bytes.length; i += 0x8000) {
    bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(bin).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

export function fromBase64Url(text: string): Uint8Array {
  if (!/^[A-Za-z0-9_-]*$/.test(text) || text.length % 4 === 1) {
    throw new LinkError('the link is not valid base64url');
  }
  const b64 = text.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (text.length % 4)) % 4);
  const bin = atob(b64);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

async function pump(stream: ReadableStream<Uint8Array>, limit: number): Promise<Uint8Array> {
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.length;
    if (total > limit) {
      await reader.cancel().catch(() => {});
      throw new LinkError(`the link inflates to more than ${limit} bytes`);
    }
    chunks.push(value);
  }
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

function streamOf(bytes: Uint8Array): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(controller) {
      controller.enqueue(bytes);
      controller.close();
    },
  });
}

export async function deflateRaw(bytes: Uint8Array): Promise<Uint8Array> {
  return pump(streamOf(bytes).pipeThrough(new CompressionStream('deflate-raw') as unknown as Codec), Infinity);
}

export async function inflateRaw(bytes: Uint8Array, limit = MAX_JSON_BYTES): Promise<Uint8Array> {
  try {
    return await pump(streamOf(bytes).pipeThrough(new DecompressionStream('deflate-raw') as unknown as Codec), limit);
  } catch (e) {
    if (e instanceof LinkError) throw e;
    throw new LinkError('the link is not valid compressed data');
  }
}

/** `#v1.…` for a partial scenario. */
export async function encodeLink(partial: JsonObject): Promise<string> {
  const json = new TextEncoder().encode(JSON.stringify(partial));
  return LINK_PREFIX + toBase64Url(await deflateRaw(json));
}

/**
 * The partial scenario in a hash. `null` for an empty hash (no link); throws `LinkError` with
 * a readable reason for anything malformed.
 */
export async function decodeLink(hash: string): Promise<JsonObject | null> {
  if (hash === '' || hash === '#') return null;
  if (!hash.startsWith(LINK_PREFIX)) {
    throw new LinkError('the link is not a servesim v1 scenario link');
  }
  const payload = hash.slice(LINK_PREFIX.length);
  if (payload.length > MAX_LINK_CHARS) {
    throw new LinkError(`the link is longer than ${MAX_LINK_CHARS} characters`);
  }
  const raw = await inflateRaw(fromBase64Url(payload));
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(raw));
  } catch {
    throw new LinkError('the link does not hold valid JSON');
  }
  if (!isObject(value)) throw new LinkError('the link does not hold a scenario object');
  return value;
}
