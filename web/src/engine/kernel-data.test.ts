// The worker's measured-kernel loader: fetches what the engine says it misses, each file once,
// and gives up on other errors and on files the site does not have.

import { afterEach, describe, expect, it, vi } from 'vitest';
import { KernelFiles } from './kernel-data';

/** An engine that needs `wants` loaded before its call succeeds, and names the first it misses. */
function fakeEngine(wants: string[]) {
  const loaded = new Map<string, Uint8Array>();
  let missing: string | undefined;
  return {
    loaded,
    engine: {
      loadKernelData: (name: string, bytes: Uint8Array) => void loaded.set(name, bytes),
      missingKernelData: () => {
        const m = missing;
        missing = undefined;
        return m;
      },
    },
    call: () => {
      const need = wants.find((w) => !loaded.has(w));
      if (need) {
        missing = need;
        throw new Error(`measured-kernel data \`${need}\` is not loaded`);
      }
      return 'ran';
    },
  };
}

function serve(files: Record<string, string>): string[] {
  const asked: string[] = [];
  vi.stubGlobal('fetch', async (url: string) => {
    const name = url.replace('https://site.test/data/ais/', '');
    asked.push(name);
    const body = files[name];
    return body === undefined ? new Response('no', { status: 404 }) : new Response(new TextEncoder().encode(body));
  });
  return asked;
}

afterEach(() => vi.unstubAllGlobals());

describe('KernelFiles', () => {
  it('hands what it loaded to a replacing engine without fetching again (the full module)', async () => {
    const asked = serve({ 'index.json': '{}', 'models.json': '{}', 'h100_sxm/vllm-0.24.0.zip': 'zip' });
    const first = fakeEngine(['index.json', 'models.json']);
    const files = new KernelFiles(first.engine, Promise.resolve(), true);
    files.base = 'https://site.test/data/ais/';
    expect(await files.with(first.call)).toBe('ran');
    const full = fakeEngine(['index.json', 'models.json', 'h100_sxm/vllm-0.24.0.zip']);
    files.switchTo(full.engine);
    expect([...full.loaded.keys()]).toEqual(['index.json', 'models.json']);
    expect(await files.with(full.call)).toBe('ran');
    expect(asked).toEqual(['index.json', 'models.json', 'h100_sxm/vllm-0.24.0.zip']);
    // The new engine's files are not kept for another switch.
    expect(first.loaded.has('h100_sxm/vllm-0.24.0.zip')).toBe(false);
  });

  it('fetches each file the engine misses, once, and runs the call again', async () => {
    const asked = serve({ 'index.json': '{}', 'h100_sxm/vllm-0.24.0.zip': 'zip' });
    const f = fakeEngine(['index.json', 'h100_sxm/vllm-0.24.0.zip']);
    const files = new KernelFiles(f.engine);
    files.base = 'https://site.test/data/ais/';
    expect(await files.with(f.call)).toBe('ran');
    expect(await files.with(f.call)).toBe('ran');
    expect(asked).toEqual(['index.json', 'h100_sxm/vllm-0.24.0.zip']);
    expect(new TextDecoder().decode(f.loaded.get('h100_sxm/vllm-0.24.0.zip'))).toBe('zip');
  });

  it('shares one fetch between calls that miss the same file at once', async () => {
    const asked = serve({ 'index.json': '{}' });
    const files = new KernelFiles(fakeEngine([]).engine);
    files.base = 'https://site.test/data/ais/';
    await Promise.all([files.load('index.json'), files.load('index.json')]);
    expect(asked).toEqual(['index.json']);
  });

  it('names the file and the address when the site does not have it', async () => {
    serve({});
    const f = fakeEngine(['gb200/vllm-0.24.0.zip']);
    const files = new KernelFiles(f.engine);
    files.base = 'https://site.test/data/ais/';
    await expect(files.with(f.call)).rejects.toThrow(
      '`gb200/vllm-0.24.0.zip` could not be fetched from https://site.test/data/ais/gb200/vllm-0.24.0.zip: HTTP 404',
    );
  });

  it('passes other errors through without fetching', async () => {
    const asked = serve({});
    const files = new KernelFiles(fakeEngine([]).engine);
    files.base = 'https://site.test/data/ais/';
    await expect(
      files.with(() => {
        throw new Error('engine.timing_model.tp: expected a non-negative integer');
      }),
    ).rejects.toThrow('engine.timing_model.tp');
    expect(asked).toEqual([]);
  });
});
