import { deflateRawSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { decodeLink, encodeLink, fromBase64Url, LINK_PREFIX, LinkError, toBase64Url } from './link';

describe('share links', () => {
  it('round-trip a partial scenario', async () => {
    const partial = { engine: { num_gpu_blocks: 12345, block_size: 32 }, name: 'ünïcode ✓' };
    const h = await encodeLink(partial);
    expect(h.startsWith(LINK_PREFIX)).toBe(true);
    expect(h).toMatch(/^#v1\.[A-Za-z0-9_-]+$/);
    expect(await decodeLink(h)).toEqual(partial);
  });

  it('read links made by another deflate-raw implementation (zlib)', async () => {
    const json = '{"engine": {"num_gpu_blocks": 12345, "block_size": 32}}';
    const h = `#v1.${deflateRawSync(Buffer.from(json)).toString('base64url')}`;
    expect(await decodeLink(h)).toEqual({ engine: { num_gpu_blocks: 12345, block_size: 32 } });
  });

  it('treat an empty hash as no link', async () => {
    expect(await decodeLink('')).toBeNull();
    expect(await decodeLink('#')).toBeNull();
  });

  it('refuse malformed links with a reason', async () => {
    const cases: [string, RegExp][] = [
      ['#v2.abc', /not a servesim v1/],
      ['#v1.%%%', /base64url/],
      [`#v1.${Buffer.from('plain text').toString('base64url')}`, /compressed/],
      [`#v1.${deflateRawSync(Buffer.from('[1, 2]')).toString('base64url')}`, /scenario object/],
      [`#v1.${deflateRawSync(Buffer.from('{nope')).toString('base64url')}`, /valid JSON/],
      [`#v1.${deflateRawSync(Buffer.from([0xff, 0xfe, 0x7b])).toString('base64url')}`, /valid JSON/],
      [`#v1.${'A'.repeat(64 * 1024 + 1)}`, /longer than/],
      [`#v1.${deflateRawSync(Buffer.from(`{"name":"${'x'.repeat(1_100_000)}"}`)).toString('base64url')}`, /inflates to more than/],
    ];
    for (const [h, why] of cases) {
      await expect(decodeLink(h), h.slice(0, 40)).rejects.toThrow(LinkError);
      await expect(decodeLink(h)).rejects.toThrow(why);
    }
  });

  it('base64url has no padding and survives every byte', () => {
    const bytes = new Uint8Array(256).map((_, i) => i);
    const text = toBase64Url(bytes);
    expect(text).not.toMatch(/[=+/]/);
    expect(fromBase64Url(text)).toEqual(bytes);
  });
});
