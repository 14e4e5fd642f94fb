// Shared start-up for both pages: the engine worker (started early by early.ts when it can
// be) and its defaults, and how a run asks for its time-series windows.

import type { JsonObject } from '../scenario/json';
import { Engine } from './client';
import type { Early } from './early';
import type { KernelCatalog, Presets } from './protocol';

export interface Boot {
  engine: Engine;
  defaults: JsonObject;
  version: string;
  presets: Presets;
  /** The measured-kernel data the site has (null: none; the roofline remains). */
  kernels: KernelCatalog | null;
}

/** Starts the worker and waits for the engine's defaults. */
export async function boot(): Promise<Boot> {
  const early = (globalThis as { __servesimEarly?: Early }).__servesimEarly;
  const engine = early?.engine ?? new Engine();
  const hello = await (early?.hello ?? engine.hello());
  return {
    engine,
    defaults: JSON.parse(hello.defaults) as JsonObject,
    version: hello.version,
    presets: JSON.parse(hello.presets) as Presets,
    kernels: hello.kernels === null ? null : (JSON.parse(hello.kernels) as KernelCatalog),
  };
}

/**
 * The time-series window to ask for: automatic (about 80 windows) unless the scenario sets
 * its own `timeseries_interval_ms`.
 */
export function intervalFor(scenario: JsonObject, defaults: JsonObject): number | undefined {
  return scenario.timeseries_interval_ms === defaults.timeseries_interval_ms ? 0 : undefined;
}
