// Scenario objects as plain JSON: paths, the non-default diff that share links carry, and
// merging a partial scenario back over the defaults. Validation itself is the engine's
// (`normalizeScenario` in the worker); this module never decides what is valid.

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
export type JsonObject = { [k: string]: Json };

export function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function clone<T extends Json>(v: T): T {
  return JSON.parse(JSON.stringify(v)) as T;
}

export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((x, i) => deepEqual(x, b[i]));
  }
  if (isObject(a) && isObject(b)) {
    const ka = Object.keys(a);
    const kb = Object.keys(b);
    return ka.length === kb.length && ka.every((k) => k in b && deepEqual(a[k], b[k]));
  }
  return false;
}

/** Reads `a.b.c`; undefined when any step is missing. */
export function getPath(obj: unknown, path: string): Json | undefined {
  let cur: unknown = obj;
  for (const key of path.split('.')) {
    if (!isObject(cur) || !(key in cur)) return undefined;
    cur = cur[key];
  }
  return cur as Json;
}

/** Writes `a.b.c`, creating objects on the way; `undefined` deletes the leaf. */
export function setPath(obj: JsonObject, path: string, value: Json | undefined): void {
  const keys = path.split('.');
  const leaf = keys.pop();
  if (leaf === undefined) return; // unreachable: split always returns at least one part
  let cur: JsonObject = obj;
  for (const key of keys) {
    const next = cur[key];
    if (!isObject(next)) cur[key] = {};
    cur = cur[key] as JsonObject;
  }
  if (value === undefined) delete cur[leaf];
  else cur[leaf] = value;
}

/** An object whose values are all plain (no nested objects or arrays): `{mean, stddev}`. */
function isLeafObject(v: JsonObject): boolean {
  return Object.values(v).every((x) => x === null || typeof x !== 'object');
}

/**
 * The fields of `cur` that differ from `def`, as a partial scenario. Objects are compared
 * field by field; a tagged object (one with a `type` key, such as `workload` or
 * `timing_model`) keeps its `type` whenever anything in it differs, and is carried whole
 * when its type changed; an object of plain values (a length's `{mean, stddev}`, the router's
 * knobs) is carried whole when any of its values differs. So the partial scenario parses on
 * its own to exactly `cur`, whatever defaults the engine gives the fields it leaves out
 * (`{"mean": 4096}` alone means a fixed length to the engine).
 */
export function diff(cur: JsonObject, def: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(cur)) {
    const d = def[k];
    if (deepEqual(v, d)) continue;
    if (isObject(v) && isObject(d)) {
      if (('type' in v && v.type !== d.type) || (isLeafObject(v) && !('type' in v))) {
        out[k] = clone(v);
        continue;
      }
      const sub = diff(v, d);
      if (Object.keys(sub).length === 0) continue;
      if ('type' in v) sub.type = v.type;
      out[k] = sub;
    } else {
      out[k] = clone(v);
    }
  }
  return out;
}

/** Overlays a partial scenario on a full one (the inverse of `diff`). */
export function merge(base: JsonObject, partial: JsonObject): JsonObject {
  const out = clone(base);
  for (const [k, v] of Object.entries(partial)) {
    const b = out[k];
    if (isObject(v) && isObject(b) && (!('type' in v) || v.type === b.type)) out[k] = merge(b, v);
    else out[k] = clone(v);
  }
  return out;
}

/** A stable, human-friendly JSON text: keys in the order the engine writes them. */
export function pretty(v: Json): string {
  return JSON.stringify(v, null, 2);
}
