// The pages' links: the scenario a hash opens (normalised by the engine), the hash of a
// scenario and what travels with it, and the address of the other page for the same scenario.

import type { Boot } from '../engine/boot';
import { diff, type Json, type JsonObject } from './json';
import { decodeLink, encodeLink, LinkError } from './link';

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

export function pageUrl(page: 'index.html' | 'embed.html', hash: string): string {
  const u = new URL(page, location.href);
  // The inspector's state (`?inspect=time,rank,request`, docs/inspector.md) travels too.
  const inspect = new URLSearchParams(location.search).get('inspect');
  if (inspect !== null) u.searchParams.set('inspect', inspect);
  u.hash = hash;
  return u.href;
}
