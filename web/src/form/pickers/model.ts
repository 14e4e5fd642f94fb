// The model and hardware picker: a model (the measured-kernel data's bundled configs, the
// roofline's presets, a custom shape, or a pasted config.json), and with a timing model that
// reads it the GPU, the framework whose kernels were measured, tensor parallelism, dtypes
// and memory share. Choosing a model times it on the chosen GPU (measured kernels where the
// data has both, else a roofline estimate; the line under the model says which) unless the
// user picked another timing model, which then keeps it and gets only the model's KV size.

import type { PoolConfig } from '../../engine/protocol';
import { clone, getPath, isObject, type Json, type JsonObject, setPath } from '../../scenario/json';
import { elAttrs as el } from '../../ui/dom';
import { formatValue } from '../fields';
import {
  FRAMEWORK_LABELS,
  GEMM_DTYPE_LABELS,
  GPU_LABELS,
  KV_DTYPE_LABELS,
  KV_QUANT_LABELS,
  SHAPE_FIELDS,
  SYSTEM_LABELS,
  WEIGHT_DTYPE_LABELS,
} from '../presets';
import type { PickerContext } from './context';
import { CONFIG, CUSTOM, type ModelChoice } from './model-choice';

const n0 = (v: number) => v.toLocaleString('en-US', { maximumFractionDigits: 0 });
const n1 = (v: number) => v.toLocaleString('en-US', { maximumFractionDigits: 1, minimumFractionDigits: 1 });

/** Largest pasted config.json accepted (a real one is a few KB; a link carries it). */
const MAX_CONFIG_CHARS = 32 * 1024;

/** Sets a measured-kernel argument under the name the scenario already uses for it (its alias too). */
function setArg(args: JsonObject, key: string, alias: string, value: Json | undefined): void {
  const k = alias in args && !(key in args) ? alias : key;
  if (value === undefined) delete args[k];
  else args[k] = value;
}

/** The measured-kernel label: "measured kernels: H200 SXM · vLLM 0.24.0". */
export function measuredLabel(system: string, backend: string, version: string): string {
  return `measured kernels: ${SYSTEM_LABELS[system] ?? system} · ${FRAMEWORK_LABELS[backend] ?? backend} ${version}`;
}

export function modelPicker(body: HTMLElement, ctx: PickerContext, m: ModelChoice): void {
  const select = el('select', { id: 'f-model' });
  select.append(el('option', { value: '' }, 'not set'));
  const measuredGroup = el('optgroup', { label: 'Measured kernels where the GPU has data' });
  const rooflineGroup = el('optgroup', { label: 'Roofline estimate only' });
  for (const e of m.models) (e.measured ? measuredGroup : rooflineGroup).append(el('option', { value: e.value }, e.label));
  if (measuredGroup.childElementCount) select.append(measuredGroup, rooflineGroup);
  else select.append(...rooflineGroup.children);
  select.append(el('option', { value: CUSTOM }, 'custom shape (roofline)…'));
  if (m.catalog) select.append(el('option', { value: CONFIG }, 'paste a config.json…'));
  body.append(ctx.row('f-model', 'Model', select));
  // Where the pass times come from: measured kernels (and whose), or an estimate.
  const source = el('div', { class: 'derived timing-source', id: 'timing-source' });
  const timingNote = el('div', { class: 'effect timing-note', id: 'timing-note' });
  body.append(source, timingNote);

  // "Paste a config.json": a Hugging Face model config, timed as the CLI times it.
  const paste = el('div', { class: 'field config-paste', id: 'config-paste' });
  const area = el('textarea', {
    id: 'f-model-config',
    rows: '6',
    spellcheck: 'false',
    placeholder: '{"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 32, ...}',
  });
  const pasteError = el('div', { class: 'error', id: 'f-model-config-error' });
  area.setAttribute('aria-describedby', 'f-model-config-error');
  paste.append(
    el('label', { for: 'f-model-config' }, 'config.json'),
    area,
    el('span', { class: 'unit' }),
    el('div', { class: 'hint' }, "A Hugging Face model's config.json: dense Llama, Qwen2/Qwen3, Mistral and MiMo shapes are timed by measured kernels"),
    pasteError,
  );
  body.append(paste);
  area.addEventListener('input', () => {
    const text = area.value.trim();
    let cfg: unknown = null;
    let why: string | null = null;
    if (text === '') why = 'paste the JSON of a config.json';
    else if (text.length > MAX_CONFIG_CHARS) why = `at most ${MAX_CONFIG_CHARS / 1024} KB`;
    else {
      try {
        cfg = JSON.parse(text);
        if (!isObject(cfg as Json)) why = 'a JSON object ({...})';
      } catch (e) {
        why = `not JSON: ${(e as Error).message}`;
      }
    }
    ctx.flag(paste, area, 'model config.json', why);
    if (why) {
      ctx.publish();
      return;
    }
    m.pasted = cfg as JsonObject;
    m.pendingConfig = false;
    ctx.change(async () => {
      const tm = m.timeChoice(CONFIG);
      await m.fitTp(tm, true);
    });
  });

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

  const gsel = el('select', { id: 'f-gpu' });
  for (const g of m.gpus) {
    const spec = ctx.presets.gpus.find((p) => p.id === g.roofline)?.spec;
    const set = ctx.kernels?.sets.find((s) => s.system === g.system);
    const gb = spec?.hbm_gb ?? (set?.gpu_memory_bytes ? Math.round(set.gpu_memory_bytes / 2 ** 30) : undefined);
    const figures = [gb === undefined ? '' : `${gb} GB`, spec ? `${spec.hbm_gb_per_s / 1000} TB/s` : ''].filter(Boolean).join(', ');
    const kind = g.system ? 'measured kernels' : 'roofline only';
    gsel.append(el('option', { value: g.value }, `${g.label} (${figures}) · ${kind}`));
  }
  const gRow = ctx.row('f-gpu', 'GPU', gsel, '', 'engine.timing_model.gpu');
  const fsel = el('select', { id: 'f-framework' });
  const fRow = ctx.row('f-framework', 'Kernels measured with', fsel, '', 'engine.timing_model.backend');
  const tpInput = el('input', { id: 'f-tp', type: 'text', inputmode: 'numeric', autocomplete: 'off' });
  const tpRow = ctx.row('f-tp', 'Tensor parallel', tpInput, 'GPUs', 'tensor_parallel_size');
  const wsel = el('select', { id: 'f-weight-dtype' });
  for (const d of ['', ...ctx.presets.weight_dtypes]) wsel.append(el('option', { value: d }, WEIGHT_DTYPE_LABELS[d] ?? d));
  const wRow = ctx.row('f-weight-dtype', 'Weight dtype', wsel, '', 'engine.timing_model.weight_dtype');
  const gemmSel = el('select', { id: 'f-gemm-dtype' });
  for (const [d, label] of Object.entries(GEMM_DTYPE_LABELS)) gemmSel.append(el('option', { value: d }, label));
  const gemmRow = ctx.row('f-gemm-dtype', 'Weight dtype', gemmSel, '', 'engine.timing_model.gemm_quant_mode');
  const ksel = el('select', { id: 'f-kv-dtype' });
  for (const d of ctx.presets.kv_dtypes) ksel.append(el('option', { value: d }, KV_DTYPE_LABELS[d] ?? d));
  const kRow = ctx.row('f-kv-dtype', 'KV cache dtype', ksel, '', 'engine.timing_model.kv_cache_dtype');
  const kqSel = el('select', { id: 'f-kv-quant' });
  for (const [d, label] of Object.entries(KV_QUANT_LABELS)) kqSel.append(el('option', { value: d }, label));
  const kqRow = ctx.row('f-kv-quant', 'KV cache dtype', kqSel, '', 'engine.timing_model.kvcache_quant_mode');
  const memInput = el('input', { id: 'f-gpu-mem', type: 'text', inputmode: 'decimal', autocomplete: 'off' });
  const memRow = ctx.row('f-gpu-mem', 'GPU memory used', memInput, '×', 'engine.timing_model.gpu_memory_utilization');
  const fracInput = el('input', { id: 'f-memory_fraction', type: 'text', inputmode: 'decimal', autocomplete: 'off' });
  const fracRow = ctx.row('f-memory_fraction', 'GPU memory used', fracInput, '×', 'memory_fraction');
  // Parallelism beyond TP (issue 31): attention data parallelism (both timing models), and
  // for measured kernels the experts' parallelism and pipeline stages, as the engine reads them.
  const adpInput = el('input', { id: 'f-attention-dp', type: 'text', inputmode: 'numeric', autocomplete: 'off' });
  const adpRow = ctx.row('f-attention-dp', 'Attention data parallel', adpInput, 'ranks', 'engine.timing_model.attention_dp');
  const epInput = el('input', { id: 'f-moe-ep', type: 'text', inputmode: 'numeric', autocomplete: 'off', placeholder: '1' });
  const epRow = ctx.row('f-moe-ep', 'Expert parallel (EP)', epInput, 'GPUs', 'engine.timing_model.moe_ep_size');
  const ppInput = el('input', { id: 'f-pp', type: 'text', inputmode: 'numeric', autocomplete: 'off' });
  const ppRow = ctx.row('f-pp', 'Pipeline parallel', ppInput, 'stages', 'engine.timing_model.pp');
  const parallel = el('div', { class: 'derived', id: 'parallel-arithmetic' });
  body.append(gRow, fRow, tpRow, adpRow, epRow, ppRow, parallel, wRow, gemmRow, kRow, kqRow, memRow, fracRow);
  /** A count field of the timing model: `key` (or the alias the arguments already use); 1 or empty unsets it. */
  const countField = (input: HTMLInputElement, row: HTMLElement, key: string, alias: string, path: string): void => {
    input.addEventListener('input', () => {
      const t = input.value.trim();
      const ok = t === '' || (/^\d+$/.test(t) && Number(t) >= 1 && Number(t) <= 1024);
      ctx.flag(row, input, path, ok ? null : 'a whole number from 1 to 1024');
      if (!ok) {
        ctx.publish();
        return;
      }
      const v = t === '' || Number(t) === 1 ? undefined : Number(t);
      const args = m.measuredArgs();
      const tm = m.timingModel();
      if (args) setArg(args, key, alias, v);
      else if (tm?.type === 'roofline' && key === 'attention_dp') {
        if (v === undefined) delete tm.attention_dp;
        else tm.attention_dp = v;
      }
      ctx.changed();
    });
  };
  countField(adpInput, adpRow, 'attention_dp', 'attention_dp_size', 'engine.timing_model.attention_dp');
  countField(epInput, epRow, 'moe_ep_size', 'moe_ep_size', 'engine.timing_model.moe_ep_size');
  countField(ppInput, ppRow, 'pp', 'pp_size', 'engine.timing_model.pp');
  const derived = el('div', { class: 'derived', id: 'model-derived' });
  body.append(derived);

  /** Whether the chosen timing reads the model (the roofline or measured kernels). */
  const modelTimed = () => m.timingType() === 'roofline' || m.measured();

  select.addEventListener('change', () => {
    const v = select.value;
    m.pendingConfig = v === CONFIG && m.pasted === null;
    if (v !== CONFIG) ctx.flag(paste, area, 'model config.json', null);
    if (m.pendingConfig) {
      // Nothing to time until a config is pasted: the area opens for it.
      ctx.changed();
      area.focus();
      return;
    }
    ctx.change(async () => {
      const before = m.choice();
      if (v !== '' && v !== CUSTOM && v !== CONFIG) m.modelId = v;
      // A custom shape starts from the model on screen, for the user to edit.
      const from = m.rooflineModel(before);
      if (v === CUSTOM && from !== null)
        m.customSpec = clone((typeof from === 'string' ? ctx.presets.models.find((p) => p.id === from)?.spec : from) as JsonObject);
      if (v === '') {
        setPath(ctx.state, 'engine.kv_bytes_per_token', null);
        return;
      }
      // A model choice times the model (measured kernels or a roofline on the chosen GPU),
      // unless the user picked another timing model: then it sets only the KV size, and a
      // line says so.
      if (modelTimed() || (!m.timingChosen && m.timingType() === 'polynomial')) {
        await m.fitTp(m.timeChoice(v), true);
      } else if (v !== CUSTOM && v !== CONFIG) {
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
  const measuredArg = (key: string, alias: string, value: Json | undefined) =>
    ctx.change(async () => {
      const args = m.measuredArgs();
      if (!args) return;
      setArg(args, key, alias, value);
      const tm = m.timingModel();
      if (tm?.type === 'ais') await m.fitTp(tm, false);
    });
  gsel.addEventListener('change', () => {
    m.gpuId = gsel.value;
    ctx.change(async () => {
      if (!modelTimed()) return;
      await m.fitTp(m.timeChoice(m.choice()), false);
    });
  });
  fsel.addEventListener('change', () => {
    const [backend = '', version = ''] = fsel.value.split('@');
    m.framework = { backend, version };
    ctx.change(async () => {
      const args = m.measuredArgs();
      if (!args) return;
      args.backend = backend;
      args.backend_version = version;
      const tm = m.timingModel();
      if (tm?.type === 'ais') await m.fitTp(tm, false);
    });
  });
  wsel.addEventListener('change', () => rooflineArg('weight_dtype', wsel.value === '' ? undefined : wsel.value));
  gemmSel.addEventListener('change', () => measuredArg('gemm_quant_mode', 'gemm_dtype', gemmSel.value === '' ? undefined : gemmSel.value));
  kqSel.addEventListener('change', () => measuredArg('kvcache_quant_mode', 'kv_cache_dtype', kqSel.value === '' ? undefined : kqSel.value));
  ksel.addEventListener('change', () => {
    m.kvDtype = ksel.value;
    if (m.timingType() === 'roofline') {
      rooflineArg('kv_cache_dtype', ksel.value);
    } else {
      ctx.change(() => {
        const choice = m.choice();
        if (choice !== '' && choice !== CUSTOM) setPath(ctx.state, 'engine.kv_bytes_per_token', m.presetKv(m.modelId, ksel.value) ?? null);
      });
    }
  });
  const share = (input: HTMLInputElement, row: HTMLElement, key: string, apply: (v: number | undefined) => void, optional: boolean) =>
    input.addEventListener('input', () => {
      const t = input.value.trim();
      const v = Number(t);
      const ok = (optional && t === '') || (t !== '' && Number.isFinite(v) && v > 0 && v <= 1);
      ctx.flag(row, input, key, ok ? null : 'a share of the memory, above 0 and at most 1');
      if (ok) apply(t === '' ? undefined : v);
      else ctx.publish();
    });
  share(memInput, memRow, 'engine.timing_model.gpu_memory_utilization', (v) => rooflineArg('gpu_memory_utilization', v), false);
  share(
    fracInput,
    fracRow,
    'memory_fraction',
    (v) =>
      ctx.change(async () => {
        setPath(ctx.state, 'memory_fraction', v);
      }),
    true,
  );
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
    const args = m.measuredArgs();
    if (args) {
      setArg(args, 'tp', 'tp_size', v);
      setPath(ctx.state, 'tensor_parallel_size', undefined);
    } else if (tm?.type === 'roofline') {
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
    const args = m.measuredArgs();
    const measured = args !== null;
    const timed = roofline || measured;
    const choice = m.pendingConfig ? CONFIG : m.choice();
    if (document.activeElement !== select) select.value = choice;
    // "not set" only where a model is optional.
    (select.querySelector('option[value=""]') as HTMLOptionElement).hidden = timed;
    // Only what the GPU on screen can time (the roofline needs a preset of the GPU).
    const gpu = m.gpu();
    // Under a timing model the user chose that ignores the model, a choice sets only its KV
    // size: only the roofline's presets have one to offer.
    const kvOnly = !timed && m.timingChosen;
    for (const o of select.querySelectorAll('option')) {
      if (o.value === '') continue;
      const ok = kvOnly
        ? o.value === CUSTOM || m.presetKv(o.value, 'auto') !== undefined
        : o.value === CONFIG || !timed || m.hasMeasured(o.value, gpu) || (m.rooflineModel(o.value) !== null && gpu?.roofline !== undefined);
      o.disabled = !ok;
      o.title = ok
        ? ''
        : kvOnly
          ? 'this timing model reads only a KV size: choose measured kernels or the roofline to time this model'
          : `no measured kernels and no roofline figures for this model on ${gpu?.label ?? 'this GPU'}`;
    }
    for (const o of gsel.querySelectorAll('option')) {
      const g = m.gpu(o.value);
      const ok = !timed || m.hasMeasured(choice, g) || (m.rooflineModel(choice) !== null && g?.roofline !== undefined);
      o.disabled = !ok;
    }
    paste.hidden = choice !== CONFIG;
    if (document.activeElement !== area && !paste.classList.contains('invalid') && m.pasted && area.value.trim() === '') {
      area.value = JSON.stringify(m.pasted, null, 1);
    }
    custom.root.hidden = !(roofline && choice === CUSTOM);
    kvRow.hidden = timed || choice !== CUSTOM;
    if (roofline && isObject(tm.model) && choice === CUSTOM) m.customSpec = clone(tm.model);
    custom.update();
    if (document.activeElement !== kvInput && !kvRow.classList.contains('invalid'))
      kvInput.value = formatValue(getPath(ctx.state, 'engine.kv_bytes_per_token'));
    gRow.hidden = !timed;
    fRow.hidden = !measured;
    wRow.hidden = !roofline;
    gemmRow.hidden = !measured;
    memRow.hidden = !roofline;
    fracRow.hidden = !measured;
    kqRow.hidden = !measured;
    kRow.hidden = measured || (!roofline && (choice === '' || choice === CUSTOM || choice === CONFIG));
    const p = ctx.pool();
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
    if (args) {
      const system = String(args.system ?? '');
      const g = m.gpus.find((e) => e.system === system);
      if (g) gsel.value = g.value;
      fsel.replaceChildren();
      for (const [backend, versions] of m.frameworks(system)) {
        for (const v of versions) fsel.append(el('option', { value: `${backend}@${v}` }, `${FRAMEWORK_LABELS[backend] ?? backend} ${v}`));
      }
      const backend = String(args.backend ?? getPath(ctx.state, 'engine.backend') ?? 'vllm');
      const version = String(args.backend_version ?? m.frameworks(system).find(([b]) => b === backend)?.[1][0] ?? '');
      fsel.value = `${backend}@${version}`;
      const scheduler = String(getPath(ctx.state, 'engine.backend') ?? 'vllm');
      (fRow.querySelector('.hint') as HTMLElement).textContent =
        backend === scheduler ? '' : `the scheduler is ${FRAMEWORK_LABELS[scheduler] ?? scheduler}'s (Engine section)`;
      gemmSel.value = String(args.gemm_quant_mode ?? args.gemm_dtype ?? '');
      kqSel.value = String(args.kvcache_quant_mode ?? args.kv_cache_dtype ?? '');
      const fraction = p?.kv_pool?.fraction;
      fracInput.placeholder = fraction === undefined ? '' : `${fraction} (the framework's default)`;
      if (document.activeElement !== fracInput && !fracRow.classList.contains('invalid')) fracInput.value = formatValue(getPath(ctx.state, 'memory_fraction'));
    }
    const tp = args ? Number(args.tp ?? args.tp_size ?? 1) : roofline ? Number(tm.tp ?? 1) : Number(getPath(ctx.state, 'tensor_parallel_size') ?? 1);
    if (document.activeElement !== tpInput && !tpRow.classList.contains('invalid')) tpInput.value = String(tp);
    (tpRow.querySelector('.hint') as HTMLElement).textContent = [
      m.tpNote ?? '',
      p ? `${p.gpus_per_worker} GPU${p.gpus_per_worker > 1 ? 's' : ''} per worker (× ${p.dp_size} DP rank${p.dp_size > 1 ? 's' : ''})` : '',
    ]
      .filter(Boolean)
      .join(' · ');
    const count = (v: unknown): number => (typeof v === 'number' && v >= 1 ? v : 1);
    const adp = args ? count(args.attention_dp ?? args.attention_dp_size) : roofline ? count(tm.attention_dp) : 1;
    const ep = args ? count(args.moe_ep_size) : tp * adp;
    const pp = args ? count(args.pp ?? args.pp_size) : 1;
    for (const [input, row, v] of [
      [adpInput, adpRow, adp],
      [epInput, epRow, args ? ep : undefined],
      [ppInput, ppRow, pp],
    ] as const) {
      if (document.activeElement !== input && !row.classList.contains('invalid')) input.value = v === undefined ? '' : String(v);
    }
    adpRow.hidden = !timed;
    epRow.hidden = !measured;
    ppRow.hidden = !measured;
    (adpRow.querySelector('.hint') as HTMLElement).textContent = adp > 1 ? `each rank runs attention on its own requests over TP ${tp}` : '';
    (epRow.querySelector('.hint') as HTMLElement).textContent = args
      ? `expert TP ${args.moe_tp_size ?? Math.max(1, (tp * adp) / ep)} × EP ${ep} must equal TP × attention DP`
      : '';
    parallel.hidden = !timed;
    parallel.textContent = timed ? parallelLine(p, tp, adp, ep, pp, measured) : '';
    derived.textContent = modelLine(p, roofline, measured, choice);
    source.textContent = sourceLine(m, p, roofline, args, choice);
    source.dataset.kind = measured ? 'measured' : roofline ? 'estimate' : '';
    source.hidden = !timed;
  });
}

/**
 * The parallelism's arithmetic, from the engine's own figures where it gives them: GPUs per
 * worker (TP × attention DP × PP), where the experts run, and the KV cache per attention-DP
 * rank (one scheduler holds every rank's requests, so the engine's pool is their sum).
 */
export function parallelLine(p: PoolConfig | null, tp: number, adp: number, ep: number, pp: number, measured: boolean): string {
  const gpus = p?.gpus_per_worker ?? tp * adp * pp;
  const terms = [`TP ${tp}`, `attention DP ${adp}`, ...(pp > 1 ? [`PP ${pp}`] : [])];
  const parts = [`GPUs per worker: ${terms.join(' × ')} = ${gpus}`];
  const width = tp * adp;
  parts.push(
    measured
      ? `experts: expert TP ${Math.max(1, width / ep)} × EP ${ep} = ${width} GPUs`
      : `experts spread over all ${width} GPU${width > 1 ? 's' : ''} (EP ${width})`,
  );
  if (p && adp > 1) {
    const tokens = Math.floor(p.kv_tokens_per_rank / adp);
    const gib = p.kv_gib_per_rank === null ? '' : ` (${(p.kv_gib_per_rank / adp).toFixed(1)} GiB)`;
    parts.push(
      `KV per attention-DP rank: ${tokens.toLocaleString('en-US')} tokens${gib}, the engine's ${p.kv_tokens_per_rank.toLocaleString('en-US')} ÷ ${adp}`,
    );
  } else if (p) {
    parts.push(
      `KV per rank: ${p.kv_tokens_per_rank.toLocaleString('en-US')} tokens${p.kv_gib_per_rank === null ? '' : ` (${p.kv_gib_per_rank.toFixed(1)} GiB)`}`,
    );
  }
  return parts.join(' · ');
}

/** Where the pass times come from, in one line: measured kernels (whose) or an estimate (and why). */
function sourceLine(m: ModelChoice, p: PoolConfig | null, roofline: boolean, args: JsonObject | null, choice: string): string {
  if (args) {
    const t = p?.timing;
    if (t?.system && t.backend_version) return measuredLabel(t.system, String(p?.timing.backend ?? args.backend ?? ''), t.backend_version);
    return measuredLabel(String(args.system ?? ''), String(args.backend ?? ''), String(args.backend_version ?? 'newest'));
  }
  if (!roofline) return '';
  const gpu = m.gpu();
  const why = !m.catalog
    ? 'this site has no measured-kernel data'
    : m.measuredModel(choice) === null
      ? 'no measured kernels for this model'
      : !gpu?.system
        ? `no measured kernels on ${gpu?.label ?? 'this GPU'}`
        : 'measured kernels exist for this model and GPU: choose them under Performance model';
  return `estimate: roofline from ${GPU_LABELS[gpu?.roofline ?? ''] ?? 'the GPU'}'s datasheet peaks × efficiencies (${why})`;
}

function modelLine(p: PoolConfig | null, roofline: boolean, measured: boolean, choice: string): string {
  if (!p) return '';
  const kv =
    p.kv_bytes_per_token == null ? 'KV bytes per token: not set' : `KV: ${n0(p.kv_bytes_per_token)} B per token (${n0(p.kv_bytes_per_token / 1024)} KiB)`;
  const t = p.timing;
  if (measured && t.weight_gib_per_gpu !== undefined) {
    return `${t.architecture ?? 'model'}, ${t.gemm_quant_mode} weights: ${n1(t.weight_gib_per_gpu)} GiB per GPU at TP ${t.tp} · ${kv}, ${t.kvcache_quant_mode}`;
  }
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
