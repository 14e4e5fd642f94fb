// The workload's source: synthetic, or an uploaded trace (Mooncake JSONL and the other
// formats the trace-format field names). The file stays in the tab; the scenario names it.

import { clone, getPath, type JsonObject, setPath } from '../../scenario/json';
import { elAttrs as el } from '../../ui/dom';
import type { PickerContext } from './context';

export function workloadPicker(body: HTMLElement, ctx: PickerContext): void {
  const select = el('select', { id: 'f-workload-type' });
  select.append(el('option', { value: 'synthetic' }, 'synthetic'), el('option', { value: 'trace' }, 'Mooncake trace (upload)'));
  const up = el('div', { class: 'field upload' });
  const file = el('input', { id: 'f-trace', type: 'file', accept: '.jsonl,.json,.txt,application/json' });
  const info = el('div', { class: 'hint', id: 'trace-info' });
  up.append(el('label', { for: 'f-trace' }, 'Trace file (JSONL)'), file, el('span', { class: 'unit' }), info);
  body.append(ctx.row('f-workload-type', 'Source', select), up);
  select.addEventListener('change', () => {
    if (select.value === 'trace') {
      const cur = getPath(ctx.state, 'workload') as JsonObject;
      if (cur.type !== 'trace') {
        setPath(ctx.state, 'workload', { type: 'trace', path: ctx.uploads.trace?.name ?? null, trace_block_size: 512, arrival_speedup_ratio: 1 });
      }
    } else {
      setPath(ctx.state, 'workload', clone(getPath(ctx.defaults, 'workload') as JsonObject));
    }
    ctx.changed();
  });
  file.addEventListener('change', () => {
    const f = file.files?.[0];
    if (!f) return;
    ctx.uploads.trace = { name: f.name, file: f };
    if (getPath(ctx.state, 'workload.type') !== 'trace') {
      setPath(ctx.state, 'workload', { type: 'trace', path: f.name, trace_block_size: 512, arrival_speedup_ratio: 1 });
    } else {
      setPath(ctx.state, 'workload.path', f.name);
    }
    ctx.changed();
  });
  ctx.onRefresh(() => {
    const type = String(getPath(ctx.state, 'workload.type'));
    select.value = type;
    up.hidden = type !== 'trace';
    const want = getPath(ctx.state, 'workload.path');
    if (ctx.uploads.trace && ctx.uploads.trace.name === want) {
      const size = ctx.uploads.trace.file.size;
      const shown = size >= 1 << 20 ? `${(size / (1 << 20)).toFixed(1)} MiB` : `${(size / 1024).toFixed(1)} KiB`;
      info.textContent = `${ctx.uploads.trace.name}: ${shown} (stays in this tab; read by the engine at each run)`;
    } else {
      info.textContent = want
        ? `This scenario needs the trace “${String(want)}”: upload it.`
        : 'Upload a Mooncake JSONL trace (timestamp, input_length, output_length, hash_ids).';
    }
  });
}
