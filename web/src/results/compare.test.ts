// The comparison of N runs: which way is better per metric, the settings diff, link runs.

import { describe, expect, it } from 'vitest';
import type { RunResult } from '../engine/protocol';
import { better, runLabel, runsFromLink, settingsDiff, styled, verdictClass } from './compare';

describe('comparing runs', () => {
  it('knows which way is better for the report keys where it is clear', () => {
    expect(better('p99_ttft_ms')).toBe('lower');
    expect(better('mean_itl_ms')).toBe('lower');
    expect(better('output_throughput_tok_s')).toBe('higher');
    expect(better('mean_output_token_throughput_per_user')).toBe('higher');
    expect(better('prefix_cache_reused_ratio')).toBe('higher');
    expect(better('total_gpus')).toBe('lower');
    expect(better('num_preemptions')).toBe('lower');
    // Neither: the workload's own counts, the spread of a latency, the duration.
    for (const k of ['num_requests', 'total_input_tokens', 'std_ttft_ms', 'duration_ms']) expect(better(k)).toBeNull();
    expect(verdictClass('p99_ttft_ms', 100, 90)).toBe('better');
    expect(verdictClass('p99_ttft_ms', 100, 110)).toBe('worse');
    expect(verdictClass('output_throughput_tok_s', 100, 110)).toBe('better');
    expect(verdictClass('output_throughput_tok_s', 100, 100)).toBe('');
    expect(verdictClass('num_requests', 100, 110)).toBe('');
    expect(verdictClass('p99_ttft_ms', undefined, 110)).toBe('');
  });

  it('shows what a run changes against the first, by dotted path', () => {
    expect(
      settingsDiff(
        { cluster: { num_workers: 4 }, workload: { rate_rps: 20 } },
        { cluster: { num_workers: 8, router: { mode: 'kv' } }, workload: { rate_rps: 20 } },
      ),
    ).toEqual(['cluster.num_workers: 4 → 8', 'cluster.router.mode: not set → "kv"']);
    expect(settingsDiff({ a: 1 }, {})).toEqual(['a: 1 → not set']);
    expect(settingsDiff({ a: { b: [1, 2] } }, { a: { b: [1, 2] } })).toEqual([]);
  });

  it('gives each pinned run its letter, colour and dash', () => {
    expect([0, 1, 25].map(runLabel)).toEqual(['A', 'B', 'Z']);
    const r = {} as RunResult;
    const [a, b] = [styled('A', r, 0), styled('B', r, 1)];
    expect(a.baseline && b.baseline).toBe(true);
    expect(a.color).not.toBe(b.color);
    expect(a.dash).not.toEqual(b.dash);
    expect(styled('C', r, null)).toEqual({ label: 'C', result: r });
  });

  it("reads a link's runs, relabelled in order, and refuses anything else", () => {
    expect(runsFromLink([{ label: 'Q', scenario: { cluster: { num_workers: 2 } } }, { scenario: {} }])).toEqual([
      { label: 'A', scenario: { cluster: { num_workers: 2 } } },
      { label: 'B', scenario: {} },
    ]);
    expect(() => runsFromLink({})).toThrow(/"runs" must list/);
    expect(() => runsFromLink([{ scenario: 3 }])).toThrow(/"runs" must list/);
    expect(() => runsFromLink(Array.from({ length: 12 }, () => ({ scenario: {} })))).toThrow(/up to 11/);
  });
});
