// The engine's npm package (web/pkg, built by wasm-pack): its package.json declares what it
// holds, and its bindings are typed end to end (the compile-time checks below run in tsc).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, expectTypeOf, it } from 'vitest';
import type {
  EffectiveConfig,
  EngineTimeSeries,
  EventRecording,
  KvBlockCounts,
  LatencyCdfs,
  Reason,
  RecordColumns,
  randomSeed,
  ServesimEvent,
  ServesimEventKind,
  Simulation,
  Summary,
  SweepPoint,
} from '../../pkg/servesim_wasm.js';

const pkg = join(import.meta.dirname, '..', '..', 'pkg');

describe('the npm package', () => {
  it('has a real package.json', () => {
    const p = JSON.parse(readFileSync(join(pkg, 'package.json'), 'utf8'));
    expect(p.name).toBe('servesim');
    expect(p.type).toBe('module');
    expect(p.types).toBe('servesim_wasm.d.ts');
    expect(p.exports['.']).toEqual({ types: './servesim_wasm.d.ts', default: './servesim_wasm.js' });
    expect(p.exports['./servesim_wasm_bg.wasm']).toBe('./servesim_wasm_bg.wasm');
    expect(p.files).toEqual(expect.arrayContaining(['servesim_wasm_bg.wasm', 'servesim_wasm.js', 'servesim_wasm.d.ts']));
    // The workspace's version: the page's footer and the package agree.
    const cargo = readFileSync(join(import.meta.dirname, '..', '..', '..', 'Cargo.toml'), 'utf8');
    expect(cargo).toContain(`version = "${p.version}"`);
  });

  it('types every export: no `any` in the declarations', () => {
    const dts = readFileSync(join(pkg, 'servesim_wasm.d.ts'), 'utf8').replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '');
    expect(dts).not.toMatch(/[:(<|,]\s*any\b/);
    // Nor a bare `object`: uploads are typed as what the engine reads (name → bytes).
    expect(dts).not.toMatch(/:\s*object\b/);
    expect(dts).toContain('summary(): Summary;');
    expect(dts).toContain('timeseries(): EngineTimeSeries;');
  });

  it('names the result types in the signatures', () => {
    expectTypeOf<ReturnType<Simulation['summary']>>().toEqualTypeOf<Summary>();
    expectTypeOf<ReturnType<Simulation['config']>>().toEqualTypeOf<EffectiveConfig>();
    expectTypeOf<ReturnType<Simulation['timeseries']>>().toEqualTypeOf<EngineTimeSeries>();
    expectTypeOf<ReturnType<Simulation['records']>>().toEqualTypeOf<RecordColumns>();
    expectTypeOf<ReturnType<Simulation['latencyCdfs']>>().toEqualTypeOf<LatencyCdfs>();
    expectTypeOf<ReturnType<Simulation['reasons']>>().toEqualTypeOf<Reason[]>();
    expectTypeOf<Summary['mean_ttft_ms']>().toEqualTypeOf<number>();
    expectTypeOf<Summary['p99_e2e_latency_ms']>().toEqualTypeOf<number>();
    // Every key declared, none behind a string index (summary.wasm.test.ts holds real runs to them).
    expectTypeOf<Summary['meets_slo']>().toEqualTypeOf<boolean | undefined>();
    expectTypeOf<Summary>().not.toHaveProperty('not_a_summary_key');
    expectTypeOf<RecordColumns['end_ms']>().toEqualTypeOf<Float64Array>();
    // Uploaded files, by the name the scenario gives them, wherever a run is built.
    type Files = Record<string, Uint8Array>;
    expectTypeOf<NonNullable<ConstructorParameters<typeof Simulation>[3]>>().toEqualTypeOf<Files>();
    expectTypeOf<NonNullable<ConstructorParameters<typeof EventRecording>[2]>>().toEqualTypeOf<Files>();
    expectTypeOf<NonNullable<ConstructorParameters<typeof SweepPoint>[3]>>().toEqualTypeOf<Files>();
  });

  it('types the event stream line by line, and the seed as a number', () => {
    expectTypeOf<ServesimEventKind>().toEqualTypeOf<
      | 'arrived'
      | 'routed'
      | 'admitted'
      | 'preempted'
      | 'retracted'
      | 'transfer_start'
      | 'transfer_end'
      | 'first_token'
      | 'finished'
      | 'stored'
      | 'removed'
      | 'blocks'
      | 'pass'
    >();
    expectTypeOf<Extract<ServesimEvent, { kind: 'pass' }>['blocks']>().toEqualTypeOf<KvBlockCounts>();
    // Hashes are numbers as JSON.parse reads them, or the type a precise reader chooses.
    expectTypeOf<Extract<ServesimEvent, { kind: 'stored' }>['hashes']>().toEqualTypeOf<number[]>();
    expectTypeOf<Extract<ServesimEvent<string>, { kind: 'blocks' }>['set'][number][1]>().toEqualTypeOf<string | null>();
    expectTypeOf<ReturnType<typeof randomSeed>>().toEqualTypeOf<number>();
  });
});
