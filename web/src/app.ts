// Shared start-up for both pages: the engine worker, reading the scenario from a link, and
// the status line.

import type { Early } from './early';
import { Engine } from './engine';
import type { Presets } from './protocol';
import { diff, type Json, type JsonObject } from './scenario';
import { decodeLink, encodeLink, LinkError } from './share';

export { STORAGE_KEY } from './early';

/** `refused`: the engine refuses the settings on screen (or a field is invalid); `cancelling`:
 * a cancelled run has stopped and its results are being gathered; `cancelled`: a run stopped
 * before it had results. Only `done` means the results shown are a finished run's. */
export type State = 'loading' | 'ready' | 'running' | 'cancelling' | 'done' | 'error' | 'refused' | 'cancelled';

export class Status {
  runs = 0;
  constructor(private node: HTMLElement) {}
  set(state: State, text: string): void {
    this.node.dataset.state = state;
    this.node.textContent = text;
    if (state === 'done') {
      this.runs += 1;
      this.node.dataset.runs = String(this.runs);
    }
  }
}

/** The page's element for a selector: the markup has it, so a missing one is a bug and throws. */
export function element<T extends HTMLElement = HTMLElement>(selector: string): T {
  const found = document.querySelector<T>(selector);
  if (!found) throw new Error(`the page has no ${selector}`);
  return found;
}

export function showMessage(node: HTMLElement, text: string | null, kind: 'error' | 'info' = 'error'): void {
  node.hidden = !text;
  node.dataset.kind = kind;
  node.textContent = text ?? '';
}

export interface Boot {
  engine: Engine;
  defaults: JsonObject;
  version: string;
  presets: Presets;
}

/** Starts the worker and waits for the engine's defaults. */
export async function boot(): Promise<Boot> {
  const early = (globalThis as { __servesimEarly?: Early }).__servesimEarly;
  const engine = early?.engine ?? new Engine();
  const hello = await (early?.hello ?? engine.hello());
  return { engine, defaults: JSON.parse(hello.defaults) as JsonObject, version: hello.version, presets: JSON.parse(hello.presets) as Presets };
}

/**
 * Keys a link may carry next to the scenario's fields (`"sweep": {"vary", "slo"}`, the
 * comparison's `"runs"`); they are no scenario fields, so they are taken out before the
 * engine reads the scenario. Links without them open as they always did.
 */
export const LINK_EXTRAS = ['sweep', 'runs'] as const;
export type LinkExtras = Partial<Record<(typeof LINK_EXTRAS)[number], Json>>;

/**
 * The scenario a hash opens: the engine-normalised full scenario, or the defaults with a
 * message saying why the link was refused. `null` scenario: no link. `extras`: what the
 * link carries next to the scenario.
 */
export async function scenarioFromHash(b: Boot, hash: string): Promise<{ scenario: JsonObject | null; error: string | null; extras: LinkExtras }> {
  let partial: JsonObject | null;
  const extras: LinkExtras = {};
  try {
    partial = await decodeLink(hash);
  } catch (e) {
    const why = e instanceof LinkError ? e.message : 'the link could not be read';
    return { scenario: null, error: `This link could not be opened: ${why}. Showing the default scenario.`, extras };
  }
  if (partial === null) return { scenario: null, error: null, extras };
  for (const key of LINK_EXTRAS) {
    if (key in partial) {
      extras[key] = partial[key] as Json;
      delete partial[key];
    }
  }
  try {
    const full = await b.engine.normalize(JSON.stringify(partial));
    return { scenario: JSON.parse(full) as JsonObject, error: null, extras };
  } catch (e) {
    return { scenario: null, error: `This link's scenario is not valid: ${(e as Error).message}. Showing the default scenario.`, extras: {} };
  }
}

/** The share hash for a scenario's non-default fields and the extras that travel with it. */
export async function linkHash(partial: JsonObject, extras: LinkExtras): Promise<string> {
  const all: JsonObject = { ...partial };
  for (const [k, v] of Object.entries(extras)) if (v !== undefined) all[k] = v;
  return Object.keys(all).length === 0 ? '' : encodeLink(all);
}

/** The share hash for a scenario: `#v1.…` of its non-default fields ('' for the defaults). */
export async function hashFor(scenario: JsonObject, defaults: JsonObject): Promise<string> {
  const partial = diff(scenario, defaults);
  if (Object.keys(partial).length === 0) return '';
  return encodeLink(partial);
}

/**
 * The time-series window to ask for: automatic (about 80 windows) unless the scenario sets
 * its own `timeseries_interval_ms`.
 */
export function intervalFor(scenario: JsonObject, defaults: JsonObject): number | undefined {
  return scenario.timeseries_interval_ms === defaults.timeseries_interval_ms ? 0 : undefined;
}

export function pageUrl(page: 'index.html' | 'embed.html', hash: string): string {
  const u = new URL(page, location.href);
  // The inspector's state (`?inspect=time,rank,request`, docs/inspector.md) travels too.
  const inspect = new URLSearchParams(location.search).get('inspect');
  if (inspect !== null) u.searchParams.set('inspect', inspect);
  u.hash = hash;
  return u.href;
}
