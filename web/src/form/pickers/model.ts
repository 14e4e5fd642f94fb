// The model and hardware picker: a preset model or a custom shape (as the engine's
// ModelSpec), and with the roofline the GPU, tensor parallelism, dtypes and memory share.
// Choosing a model times that model (a roofline on the chosen GPU) unless the user picked
// another timing model, which then keeps it and gets only the model's KV size.

import type { PoolConfig } from '../../engine/protocol';
import { clone, getPath, isObject, type Json, type JsonObject, setPath } from '../../scenario/json';
import { elAttrs as el } from '../../ui/dom';
import { formatValue } from '../fields';
import { GPU_LABELS, KV_DTYPE_LABELS, MODEL_LABELS, SHAPE_FIELDS, WEIGHT_DTYPE_LABELS } from '../presets';
import type { PickerContext } from './context';
import type { ModelChoice } from './model-choice';

const n0 = (v: number) => v.toLocaleString('en-US', { maximumFractionDigits: 0 });
const n1 = (v: number) => v.toLocaleString('en-US', { maximumFractionDigits: 1, minimumFractionDigits: 1 });

export function modelPicker(body: HTMLElement, ctx: PickerContext, m: ModelChoice): void {
  const select = el('select', { id: 'f-model' });
  select.append(el('option', { value: '' }, 'not set'));
  for (const m of ctx.presets.models) select.append(el('option', { value: m.id }, MODEL_LABELS[m.id] ?? m.id));
  select.append(el('option', { value: 'custom' }, 'custom…'));
  body.append(ctx.row('f-model', 'Model', select));
  const timingNote = el('div', { class: 'effect timing-note', id: 'timing-note' });
  body.append(timingNote);

  const custom = customShape(ctx, m);
  body.append(custom.root);

  // A custom KV size (any other timing model: the only thing it reads of a model).
  const kvInput = el('input', { id: 'f-engine-kv_bytes_per_token', type: 'text', inputmode: 'numeric', autocomplete: 'off', placeholder: 'not set' });
  const kvRow = ctx.row(kvInput.id, 'KV bytes per token', kvInput, 'B', 'engine.kv_bytes_per_token');
  kvInput.addEventListener('input', () => {
    const t = kvInput.value.trim();
    const ok = t === '' || (/^\d+$/.test(t) && Number(t) > 0);
    ctx.flag(kvRow, kvInput, 'engine.kv_bytes_per_token', ok ? null : 'a whole number above 0, or empty');
    if (ok) setPath(ctx.state, 'engine.kv_bytes_per_token', t === '' ? null : Number(t));
    ctx.changed();
  });
  body.append(kvRow);

  const wsel = el('select', { id: 'f-weight-dtype' });
  for (const d of ['', ...ctx.presets.weight_dtypes]) wsel.append(el('option', { value: d }, WEIGHT_DTYPE_LABELS[d] ?? d));
  const wRow = ctx.row('f-weight-dtype', 'Weight dtype', wsel, '', 'engine.timing_model.weight_dtype');
  const ksel = el('select', { id: 'f-kv-dtype' });
  for (const d of ctx.presets.kv_dtypes) ksel.append(el('option', { value: d }, KV_DTYPE_LABELS[d] ?? d));
  const kRow = ctx.row('f-kv-dtype', 'KV cache dtype', ksel, '', 'engine.timing_model.kv_cache_dtype');
  const gsel = el('select', { id: 'f-gpu' });
  for (const g of ctx.presets.gpus) {
    const s = g.spec;
    gsel.append(el('option', { value: g.id }, `${GPU_LABELS[g.id] ?? g.id} (${s.hbm_gb} GB, ${s.hbm_gb_per_s / 1000} TB/s, ${s.bf16_tflops} TFLOP/s)`));
  }
  const gRow = ctx.row('f-gpu', 'GPU', gsel, '', 'engine.timing_model.gpu');
  const tpInput = el('input', { id: 'f-tp', type: 'text', inputmode: 'numeric', autocomplete: 'off' });
  const tpRow = ctx.row('f-tp', 'Tensor parallel', tpInput, 'GPUs', 'tensor_parallel_size');
  const memInput = el('input', { id: 'f-gpu-mem', type: 'text', inputmode: 'decimal', autocomplete: 'off' });
  const memRow = ctx.row('f-gpu-mem', 'GPU memory used', memInput, '×', 'engine.timing_model.gpu_memory_utilization');
  body.append(gRow, tpRow, wRow, kRow, memRow);
  const derived = el('div', { class: 'derived', id: 'model-derived' });
  body.append(derived);

  select.addEventListener('change', () => {
    const v = select.value;
    ctx.change(async () => {
      const before = m.choice();
      if (v !== '' && v !== 'custom') m.modelId = v;
      // A custom shape starts from the preset on screen, for the user to edit.
      const from = ctx.presets.models.find((m) => m.id === before)?.spec;
      if (v === 'custom' && from) m.customSpec = clone(from as JsonObject);
      const roofline = m.timingType() === 'roofline';
      if (v === '') {
        setPath(ctx.state, 'engine.kv_bytes_per_token', null);
        return;
      }
      // A model choice times the model (a roofline on the chosen GPU), unless the user
      // picked another timing model: then it sets only the KV size, and a line says so.
      if (roofline || (!m.timingChosen && m.timingType() === 'polynomial')) {
        const tm = m.useRoofline(v === 'custom' ? clone(m.customSpec) : v);
        await m.fitTp(tm, true);
      } else if (v !== 'custom') {
        setPath(ctx.state, 'engine.kv_bytes_per_token', m.presetKv(v, m.kvDtype) ?? null);
      }
    });
  });
  const rooflineArg = (key: string, value: Json | undefined) =>
    ctx.change(async () => {
      const tm = m.timingModel();
      if (tm?.type !== 'roofline') return;
      if (value === undefined) delete tm[key];
      else tm[key] = value;
      await m.fitTp(tm, false);
    });
  gsel.addEventListener('change', () => {
    m.gpuId = gsel.value;
    rooflineArg('gpu', gsel.value);
  });
  wsel.addEventListener('change', () => rooflineArg('weight_dtype', wsel.value === '' ? undefined : wsel.value));
  ksel.addEventListener('change', () => {
    m.kvDtype = ksel.value;
    if (m.timingType() === 'roofline') {
      rooflineArg('kv_cache_dtype', ksel.value);
    } else {
      ctx.change(() => {
        const choice = m.choice();
        if (choice !== '' && choice !== 'custom') setPath(ctx.state, 'engine.kv_bytes_per_token', m.presetKv(m.modelId, ksel.value) ?? null);
      });
    }
  });
  memInput.addEventListener('input', () => {
    const t = memInput.value.trim();
    const v = Number(t);
    const ok = t !== '' && Number.isFinite(v) && v > 0 && v <= 1;
    ctx.flag(memRow, memInput, 'engine.timing_model.gpu_memory_utilization', ok ? null : 'a share of the memory, above 0 and at most 1');
    if (ok) rooflineArg('gpu_memory_utilization', v);
    else ctx.publish();
  });
  tpInput.addEventListener('input', () => {
    const t = tpInput.value.trim();
    const ok = /^\d+$/.test(t) && Number(t) >= 1 && Number(t) <= 1024;
    ctx.flag(tpRow, tpInput, 'tensor_parallel_size', ok ? null : 'a whole number from 1 to 1024');
    if (!ok) {
      ctx.publish();
      return;
    }
    const v = Number(t);
    m.tpNote = null;
    const tm = m.timingModel();
    if (tm?.type === 'roofline') {
      tm.tp = v;
      setPath(ctx.state, 'tensor_parallel_size', undefined);
    } else {
      setPath(ctx.state, 'tensor_parallel_size', v === 1 ? undefined : v);
    }
    ctx.changed();
  });

  ctx.onRefresh(() => {
    const tm = m.timingModel();
    const roofline = tm?.type === 'roofline';
    const choice = m.choice();
    if (document.activeElement !== select) {
      select.value = choice;
    }
    // "not set" only where a model is optional.
    (select.querySelector('option[value=""]') as HTMLOptionElement).hidden = roofline;
    custom.root.hidden = !(roofline && choice === 'custom');
    kvRow.hidden = roofline || choice !== 'custom';
    if (roofline && isObject(tm.model)) m.customSpec = clone(tm.model);
    custom.update();
    if (document.activeElement !== kvInput && !kvRow.classList.contains('invalid'))
      kvInput.value = formatValue(getPath(ctx.state, 'engine.kv_bytes_per_token'));
    gRow.hidden = !roofline;
    wRow.hidden = !roofline;
    memRow.hidden = !roofline;
    kRow.hidden = !roofline && (choice === '' || choice === 'custom');
    if (roofline) {
      if (typeof tm.gpu === 'string') gsel.value = tm.gpu;
      wsel.value = typeof tm.weight_dtype === 'string' ? tm.weight_dtype : '';
      ksel.value = typeof tm.kv_cache_dtype === 'string' ? tm.kv_cache_dtype : 'auto';
      if (document.activeElement !== memInput && !memRow.classList.contains('invalid')) {
        memInput.value = formatValue((tm.gpu_memory_utilization as number | undefined) ?? 0.9);
      }
    } else {
      ksel.value = m.kvDtype;
    }
    const tp = roofline ? Number(tm.tp ?? 1) : Number(getPath(ctx.state, 'tensor_parallel_size') ?? 1);
    if (document.activeElement !== tpInput && !tpRow.classList.contains('invalid')) tpInput.value = String(tp);
    const p = ctx.pool();
    (tpRow.querySelector('.hint') as HTMLElement).textContent = [
      m.tpNote ?? '',
      p ? `${p.gpus_per_worker} GPU${p.gpus_per_worker > 1 ? 's' : ''} per worker (× ${p.dp_size} DP rank${p.dp_size > 1 ? 's' : ''})` : '',
    ]
      .filter(Boolean)
      .join(' · ');
    derived.textContent = modelLine(p, roofline, choice);
  });
}

function modelLine(p: PoolConfig | null, roofline: boolean, choice: string): string {
  if (!p) return '';
  const kv =
    p.kv_bytes_per_token == null ? 'KV bytes per token: not set' : `KV: ${n0(p.kv_bytes_per_token)} B per token (${n0(p.kv_bytes_per_token / 1024)} KiB)`;
  const t = p.timing;
  if (!roofline || t.params_billion === undefined) return choice === '' ? kv : `${kv}`;
  return `${n1(t.params_billion)} B parameters, ${n1(t.weight_gb ?? 0)} GB of weights (${n1(t.weight_gb_per_gpu ?? 0)} GB per GPU at TP ${t.tp}) · ${kv}`;
}

/** A custom shape (roofline), as the engine's ModelSpec: one row per dimension. */
function customShape(ctx: PickerContext, m: ModelChoice): { root: HTMLElement; update: () => void } {
  const root = el('div', { class: 'custom-model', id: 'custom-shape' });
  const inputs: [string, HTMLInputElement, HTMLElement][] = [];
  for (const [key, label, required] of SHAPE_FIELDS) {
    const id = `f-model-${key}`;
    const input = el('input', { id, type: 'text', inputmode: 'numeric', autocomplete: 'off' });
    const row = ctx.row(id, label, input);
    inputs.push([key, input, row]);
    input.addEventListener('input', () => {
      const t = input.value.trim();
      const v = Number(t);
      const ok = (t === '' && !required) || (/^\d+$/.test(t) && (v > 0 || !required));
      ctx.flag(row, input, `model.${key}`, ok ? null : required ? 'a whole number above 0' : 'a whole number');
      if (!ok) {
        ctx.publish();
        return;
      }
      if (t === '') delete m.customSpec[key];
      else m.customSpec[key] = v;
      ctx.change(() => {
        const tm = m.timingModel();
        if (tm?.type === 'roofline' && isObject(tm.model)) return m.fitTp(m.useRoofline(clone(m.customSpec)), false);
      });
    });
    root.append(row);
  }
  const update = () => {
    for (const [key, input, row] of inputs) {
      if (document.activeElement !== input && !row.classList.contains('invalid')) input.value = formatValue(m.customSpec[key] ?? '');
    }
  };
  return { root, update };
}
