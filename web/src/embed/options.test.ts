import { describe, expect, it } from 'vitest';
import type { EffectiveConfig } from '../engine/protocol';
import { DEFAULT_OPTIONS, embedUrl, estimateHeight, keySettings, optionsQuery, parseOptions, scriptTag, snippet } from './options';

describe('embed options', () => {
  it('round-trips through the query string, defaults left out', () => {
    expect(optionsQuery(DEFAULT_OPTIONS)).toBe('');
    const o = { panels: ['kv', 'cards'] as const, theme: 'dark', clickToRun: true } as const;
    const q = optionsQuery({ ...o, panels: [...o.panels] });
    expect(q).toBe('?panels=cards,kv&theme=dark&run=click');
    expect(parseOptions(q)).toEqual({ options: { panels: ['cards', 'kv'], theme: 'dark', clickToRun: true }, problems: [] });
  });

  it('says what it does not understand, and keeps the rest', () => {
    const { options, problems } = parseOptions('?panels=kv,bogus&theme=neon&run=later');
    expect(options).toEqual({ panels: ['kv'], theme: 'light', clickToRun: false });
    expect(problems.join('\n')).toMatch(/unknown panel “bogus”[\s\S]*unknown theme “neon”[\s\S]*unknown run mode “later”/);
    expect(parseOptions('?panels=').options.panels).toEqual(DEFAULT_OPTIONS.panels);
    expect(parseOptions('?panels=__proto__').problems[0]).toMatch(/unknown panel/);
  });

  it('builds the embed address beside the playground, under any sub-path', () => {
    expect(embedUrl('https://docs.example/servesim/index.html?x=1#v1.old', '#v1.abc', { ...DEFAULT_OPTIONS, theme: 'dark' })).toBe(
      'https://docs.example/servesim/embed.html?theme=dark#v1.abc',
    );
  });

  it('writes a snippet with a title, escaped, and the script apart (once per page)', () => {
    const s = snippet({ url: 'https://h/embed.html?a=1&b=2#v1.x', title: 'A "quoted" <name>', width: 600, height: 420 });
    expect(s).toContain('src="https://h/embed.html?a=1&amp;b=2#v1.x"');
    expect(s).toContain('title="A &quot;quoted&quot; &lt;name&gt;" width="600" height="420"');
    expect(s).not.toContain('<script');
    expect(scriptTag('https://h/embed.js')).toBe('<script src="https://h/embed.js" async></script>');
  });

  it('addresses the inspector view with its moment, and no results options', () => {
    const o = { ...DEFAULT_OPTIONS, panels: ['kv' as const], clickToRun: true, inspect: '1522.5,aggregated/0/0,5' };
    expect(embedUrl('https://h/index.html', '#v1.abc', o)).toBe('https://h/embed.html?inspect=1522.5,aggregated/0/0,5#v1.abc');
    expect(embedUrl('https://h/index.html', '#v1.abc', { ...o, inspect: '', theme: 'dark' })).toBe('https://h/embed.html?inspect=&theme=dark#v1.abc');
  });

  it('estimates taller frames for narrower widths and more panels', () => {
    const all = { ...DEFAULT_OPTIONS, panels: [...DEFAULT_OPTIONS.panels, 'kv' as const, 'hit' as const] };
    expect(estimateHeight(DEFAULT_OPTIONS, 360)).toBeGreaterThan(estimateHeight(DEFAULT_OPTIONS, 900));
    expect(estimateHeight(all, 720)).toBeGreaterThan(estimateHeight(DEFAULT_OPTIONS, 720));
  });

  it('states the key settings from the scenario and the engine’s figures', () => {
    const config = {
      total_gpus: 3,
      no_effect: [],
      pools: [
        { pool: 'prefill', workers: 1, backend: 'sglang', num_gpu_blocks: 1000, block_size: 16 },
        { pool: 'decode', workers: 2, backend: 'sglang', num_gpu_blocks: 2000, block_size: 16 },
      ],
    } as unknown as EffectiveConfig;
    const s = {
      cluster: { router_mode: 'kv_router' },
      workload: { type: 'synthetic', num_requests: 1200, rate_rps: 7.5, input_tokens: { mean: 1024 }, output_tokens: { mean: 64 } },
    };
    expect(keySettings(s, config)).toEqual([
      'SGLang',
      '1 prefill + 2 decode workers, KV-aware router',
      '1,000 KV blocks × 16 tokens',
      '1,200 requests at 7.5 req/s, 1,024 → 64 tokens',
    ]);
    expect(keySettings({ workload: { type: 'trace', path: 'data/mooncake.jsonl' } }, null)).toEqual(['vLLM', '1 worker', 'trace mooncake.jsonl']);
  });
});
