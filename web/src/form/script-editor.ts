// The scaling script as a list editor: one row per step (at what time, which pool, how many
// workers), add and remove buttons. The rows write `scaling` in the scenario; the engine
// checks the list (pool names, time order, counts) and its message names the step.

import { isObject, type Json, type JsonObject } from '../scenario/json';
import { elAttrs as el } from '../ui/dom';
import type { WidgetContext } from './fields';

/** The pools a script may name for the cluster on screen. */
export function scriptPools(s: JsonObject): string[] {
  const c = isObject(s.cluster) ? s.cluster : {};
  return Number(c.num_prefill_workers ?? 0) > 0 || Number(c.num_decode_workers ?? 0) > 0 ? ['prefill', 'decode'] : ['agg'];
}

/** Checks one step's inputs: the value, or what is wrong with it. */
export function parseStep(at: string, count: string): { at_s: number; count: number } | { error: string; which: 'at_s' | 'count' } {
  const a = Number(at.trim());
  if (at.trim() === '' || !Number.isFinite(a) || a < 0) return { error: 'a time in seconds, 0 or more', which: 'at_s' };
  const c = count.trim();
  if (!/^\d+$/.test(c) || Number(c) < 1 || Number(c) > 4096) return { error: 'a whole number of workers from 1 to 4096', which: 'count' };
  return { at_s: a, count: Number(c) };
}

export function scriptEditor(body: HTMLElement, ctx: WidgetContext): () => void {
  const box = el('div', { class: 'script-editor', id: 'scaling-script' });
  const list = el('div', { class: 'script-rows' });
  const add = el('button', { type: 'button', id: 'scaling-add' }, 'Add a step');
  box.append(el('div', { class: 'hint' }, 'At each time, set the pool to that many workers (scale-down drains the newest first).'), list, add);
  body.append(box);
  /** The rows' keys for error flags, so removing a row clears its flags. */
  let keys: string[] = [];
  const detached = el('div');
  detached.append(el('div', { class: 'error' }));

  const steps = (): JsonObject[] => {
    const v = ctx.scenario().scaling;
    return Array.isArray(v) ? (v.filter(isObject) as JsonObject[]) : [];
  };

  const build = () => {
    const s = ctx.scenario();
    const pools = scriptPools(s);
    for (const k of keys) ctx.flag(detached, detached, k, null);
    keys = [];
    list.replaceChildren();
    steps().forEach((step, i) => {
      const row = el('div', { class: 'field script-row' });
      row.dataset.step = String(i);
      const at = el('input', { type: 'text', inputmode: 'decimal', id: `scaling-${i}-at`, 'aria-label': `step ${i + 1}: at (s)` });
      at.value = String(step.at_s ?? '');
      const pool = el('select', { id: `scaling-${i}-pool`, 'aria-label': `step ${i + 1}: pool` });
      for (const p of new Set([...pools, String(step.pool ?? pools[0])])) pool.append(el('option', { value: p }, p));
      pool.value = String(step.pool ?? pools[0]);
      const count = el('input', { type: 'text', inputmode: 'numeric', id: `scaling-${i}-count`, 'aria-label': `step ${i + 1}: workers` });
      count.value = String(step.count ?? '');
      const remove = el('button', { type: 'button', class: 'remove', 'aria-label': `remove step ${i + 1}` }, '×');
      const error = el('div', { class: 'error', id: `scaling-${i}-error` });
      row.append(
        el('span', { class: 'unit' }, 'at'),
        at,
        el('span', { class: 'unit' }, 's'),
        pool,
        count,
        el('span', { class: 'unit' }, 'workers'),
        remove,
        error,
      );
      const key = `scaling[${i}]`;
      keys.push(key);
      const edit = () => {
        const parsed = parseStep(at.value, count.value);
        if ('error' in parsed) {
          ctx.flag(row, parsed.which === 'at_s' ? at : count, key, parsed.error);
          ctx.changed();
          return;
        }
        ctx.flag(row, at, key, null);
        const next = steps();
        next[i] = { at_s: parsed.at_s, pool: pool.value, count: parsed.count };
        ctx.scenario().scaling = next as Json;
        ctx.changed();
      };
      at.addEventListener('input', edit);
      count.addEventListener('input', edit);
      pool.addEventListener('change', edit);
      remove.addEventListener('click', () => {
        const next = steps();
        next.splice(i, 1);
        ctx.scenario().scaling = next as Json;
        build();
        ctx.changed();
      });
      list.append(row);
    });
  };

  add.addEventListener('click', () => {
    const all = steps();
    const last = all.at(-1);
    const s = ctx.scenario();
    all.push({ at_s: Number(last?.at_s ?? 0) + 10, pool: String(last?.pool ?? scriptPools(s)[0]), count: Number(last?.count ?? 1) + 1 });
    s.scaling = all as Json;
    build();
    ctx.changed();
  });

  let shown = '';
  return () => {
    const s = ctx.scenario();
    box.hidden = !Array.isArray(s.scaling);
    // Rebuilt only when the list changed from outside (a link, a reset), never while typing.
    const now = JSON.stringify([s.scaling ?? null, scriptPools(s)]);
    if (now !== shown && !box.contains(document.activeElement)) build();
    shown = now;
  };
}
