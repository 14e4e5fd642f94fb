// The configuration form: renders the sections of schema.ts plus the model, workload and
// performance-model pickers, keeps the scenario object in step with the inputs, and flags
// invalid input before a run. Every label and message is set as text, never as HTML.

import { DTYPES, GPUS, kvBytesPerToken, MODELS, type ModelShape, modelPreset, presetFor } from './presets';
import { clone, getPath, type Json, type JsonObject, setPath } from './scenario';
import { CLUSTER, ENGINE, type Field, formatValue, PERF, parseField, SCENARIO, type Section, WORKLOAD } from './schema';

function el<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string> = {}, text?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

function idFor(path: string): string {
  return `f-${path.replace(/\./g, '-')}`;
}

interface Row {
  field: Field;
  row: HTMLElement;
  input: HTMLInputElement | HTMLSelectElement;
  error: HTMLElement;
}

export interface Upload {
  name: string;
  /** The file itself: the worker reads it for each run, the page never holds its text. */
  file: Blob;
}

export class ConfigForm {
  private rows: Row[] = [];
  private invalid = new Set<string>();
  private state: JsonObject;
  /** The uploaded trace (kept in memory only; links carry just its name). */
  trace: Upload | null = null;
  /** The uploaded NPZ profile (kept in memory only; links carry just its name). */
  profile: { name: string; bytes: Uint8Array } | null = null;
  private model: ModelShape = { ...MODELS['llama-3.1-8b'] };
  /** The model preset chosen (roofline needs one); custom shapes fall back to the first. */
  private modelId = 'llama-3.1-8b';
  private specials: (() => void)[] = [];

  constructor(
    private root: HTMLFormElement,
    private defaults: JsonObject,
    private onChange: () => void,
  ) {
    this.state = clone(defaults);
    root.addEventListener('submit', (e) => e.preventDefault());
    this.render(SCENARIO);
    this.section('Model', (body) => this.modelPicker(body));
    this.render(ENGINE);
    this.capacityLine(this.root.querySelector('#s-engine .fields') as HTMLElement);
    this.render(CLUSTER);
    this.section('Workload', (body) => this.workloadPicker(body));
    this.render(WORKLOAD, this.root.querySelector('#s-workload') as HTMLElement);
    this.section('Performance model', (body) => this.perfPicker(body), 'perf');
    this.render(PERF, this.root.querySelector('#s-perf') as HTMLElement);
    this.refresh();
  }

  get scenario(): JsonObject {
    return this.state;
  }

  /** Replaces the scenario (from a link, storage or the engine's normalisation). */
  set(scenario: JsonObject): void {
    this.state = clone(scenario);
    this.invalid.clear();
    this.refresh(true);
  }

  /** Uploaded files the scenario refers to by name (the NPZ profile). */
  files(): Record<string, Uint8Array> | undefined {
    const want = getPath(this.state, 'engine.timing_model.config.path') ?? getPath(this.state, 'engine.planner_profile_data');
    if (this.profile && this.profile.name === want) return { [this.profile.name]: this.profile.bytes };
    return undefined;
  }

  get invalidFields(): string[] {
    return [...this.invalid];
  }

  private section(title: string, build: (body: HTMLElement) => void, id = title.toLowerCase()): HTMLElement {
    const details = el('details', { id: `s-${id}`, open: '' });
    details.append(el('summary', {}, title));
    const body = el('div', { class: 'fields' });
    details.append(body);
    build(body);
    this.root.append(details);
    return body;
  }

  private render(sec: Section, into?: HTMLElement): void {
    const body = into ? (into.querySelector('.fields') as HTMLElement) : this.section(sec.title, () => {}, sec.id);
    for (const field of sec.fields) body.append(this.fieldRow(field));
  }

  private fieldRow(field: Field): HTMLElement {
    const id = idFor(field.path);
    const row = el('div', { class: 'field', 'data-path': field.path });
    const label = el('label', { for: id }, field.label);
    let input: HTMLInputElement | HTMLSelectElement;
    if (field.kind === 'enum') {
      input = el('select', { id, name: field.path });
      for (const o of field.options ?? []) input.append(el('option', { value: o.value }, o.label));
    } else if (field.kind === 'bool') {
      input = el('input', { id, name: field.path, type: 'checkbox' });
    } else {
      const mode = field.kind === 'int' ? 'numeric' : field.kind === 'float' ? 'decimal' : 'text';
      input = el('input', { id, name: field.path, type: 'text', inputmode: mode, autocomplete: 'off', spellcheck: 'false' });
      if (field.nullable) input.setAttribute('placeholder', field.nullable);
    }
    const unit = el('span', { class: 'unit' }, field.unit ?? '');
    const error = el('div', { class: 'error', id: `${id}-error` });
    const hint = el('div', { class: 'hint' });
    row.append(label, input, unit, hint, error);
    input.setAttribute('aria-describedby', `${id}-error`);
    const r: Row = { field, row, input, error };
    const handler = () => this.edit(r);
    input.addEventListener(field.kind === 'enum' || field.kind === 'bool' ? 'change' : 'input', handler);
    this.rows.push(r);
    return row;
  }

  private defaultOf(field: Field): Json | undefined {
    const d = getPath(this.defaults, field.path);
    return d === undefined ? field.fallback : d;
  }

  private edit(r: Row): void {
    const { field, input } = r;
    const raw = input instanceof HTMLInputElement && input.type === 'checkbox' ? input.checked : input.value;
    const parsed = parseField(field, raw);
    if ('error' in parsed) {
      this.invalid.add(field.path);
      r.error.textContent = parsed.error;
      input.setAttribute('aria-invalid', 'true');
      r.row.classList.add('invalid');
    } else {
      this.invalid.delete(field.path);
      r.error.textContent = '';
      input.removeAttribute('aria-invalid');
      r.row.classList.remove('invalid');
      // A field the engine does not know yet is only written when set away from its fallback.
      const absent = getPath(this.defaults, field.path) === undefined;
      const unset = absent && (parsed.value === field.fallback || (field.kind === 'text' && parsed.value === null));
      setPath(this.state, field.path, unset ? undefined : parsed.value);
      if (field.path === 'engine.backend' && parsed.value !== 'sglang' && getPath(this.state, 'engine.sglang') != null) {
        setPath(this.state, 'engine.sglang', getPath(this.defaults, 'engine.sglang') ?? null);
      }
    }
    this.refresh();
    this.onChange();
  }

  /** Puts the state's values into the inputs and shows only the fields that apply. */
  refresh(all = false): void {
    for (const r of this.rows) {
      const { field, input, row } = r;
      const visible = !field.when || field.when(this.state);
      row.hidden = !visible;
      const d = this.defaultOf(field);
      const hint = row.querySelector('.hint') as HTMLElement;
      const unsupported = getPath(this.defaults, field.path) === undefined && field.fallback !== undefined && !field.path.startsWith('engine.sglang.');
      hint.textContent = [
        field.help ?? '',
        `default ${d == null ? (field.nullable ?? 'none') : String(d)}${unsupported ? ' (not in this engine build yet)' : ''}`,
      ]
        .filter(Boolean)
        .join(' · ');
      if (!all && document.activeElement === input) continue;
      if (this.invalid.has(field.path)) continue;
      const v = getPath(this.state, field.path);
      const shown = v === undefined ? field.fallback : v;
      if (input instanceof HTMLInputElement && input.type === 'checkbox') input.checked = Boolean(shown);
      else input.value = formatValue(shown);
      if (all) {
        r.error.textContent = '';
        input.removeAttribute('aria-invalid');
        row.classList.remove('invalid');
      }
    }
    for (const s of this.specials) s();
  }

  /** KV capacity per rank, in tokens (and bytes when the model is known). */
  private capacityLine(body: HTMLElement): void {
    const out = el('div', { class: 'derived', id: 'kv-capacity' });
    body.prepend(out);
    this.specials.push(() => {
      const blocks = Number(getPath(this.state, 'engine.num_gpu_blocks'));
      const bs = Number(getPath(this.state, 'engine.block_size')) || (getPath(this.state, 'engine.backend') === 'sglang' ? 1 : 64);
      const tokens = blocks * bs;
      const bytes = getPath(this.state, 'engine.kv_bytes_per_token') as number | null;
      const mem = bytes ? `, ${((tokens * bytes) / 2 ** 30).toFixed(1)} GiB` : '';
      out.textContent = Number.isFinite(tokens)
        ? `KV capacity per rank: ${tokens.toLocaleString('en-US')} tokens (${blocks.toLocaleString('en-US')} blocks × ${bs})${mem}`
        : '';
    });
  }

  // ---- model: presets or custom shape → engine.kv_bytes_per_token

  private modelPicker(body: HTMLElement): void {
    const row = el('div', { class: 'field' });
    const select = el('select', { id: 'f-model' });
    select.append(el('option', { value: '' }, 'not set (engine default)'));
    for (const [id, m] of Object.entries(MODELS)) select.append(el('option', { value: id }, m.label));
    select.append(el('option', { value: 'custom' }, 'custom…'));
    row.append(el('label', { for: 'f-model' }, 'Model'), select, el('span', { class: 'unit' }));
    body.append(row);
    const custom = el('div', { class: 'custom-model' });
    const nums: [keyof ModelShape, string, string][] = [
      ['layers', 'Layers', ''],
      ['kv_heads', 'KV heads', ''],
      ['head_dim', 'Head dim', ''],
      ['params_b', 'Parameters', 'B'],
    ];
    const inputs: [keyof ModelShape, HTMLInputElement][] = [];
    for (const [key, label, unit] of nums) {
      const r = el('div', { class: 'field' });
      const input = el('input', { id: `f-model-${key}`, type: 'text', inputmode: 'numeric' });
      inputs.push([key, input]);
      input.addEventListener('input', () => {
        const n = Number(input.value);
        const ok = input.value.trim() !== '' && Number.isFinite(n) && n > 0 && (key === 'params_b' || Number.isInteger(n));
        input.toggleAttribute('aria-invalid', !ok);
        r.classList.toggle('invalid', !ok);
        if (ok) this.model[key] = n;
        if (ok) this.invalid.delete(`model.${key}`);
        else this.invalid.add(`model.${key}`);
        if (ok) this.applyModel();
        this.onChange();
      });
      r.append(el('label', { for: input.id }, label), input, el('span', { class: 'unit' }, unit));
      custom.append(r);
    }
    const dt = el('div', { class: 'field' });
    const dsel = el('select', { id: 'f-model-dtype' });
    for (const d of DTYPES) dsel.append(el('option', { value: String(d.value) }, d.label));
    dsel.addEventListener('change', () => {
      this.model.dtype_bytes = Number(dsel.value);
      this.applyModel();
      this.onChange();
    });
    dt.append(el('label', { for: 'f-model-dtype' }, 'KV dtype'), dsel, el('span', { class: 'unit' }));
    custom.append(dt);
    body.append(custom);
    const out = el('div', { class: 'derived', id: 'kv-bytes' });
    body.append(out);
    select.addEventListener('change', () => {
      if (select.value === '') {
        setPath(this.state, 'engine.kv_bytes_per_token', null);
      } else {
        // A preset replaces the shape; `custom` keeps it (its inputs edit it).
        const preset = modelPreset(select.value);
        if (preset) {
          this.model = { ...preset };
          this.modelId = select.value;
        }
        this.applyModel();
      }
      custom.hidden = select.value !== 'custom';
      this.refresh();
      this.onChange();
    });
    this.specials.push(() => {
      const bytes = getPath(this.state, 'engine.kv_bytes_per_token') as number | null;
      if (document.activeElement !== select && select.value !== 'custom') {
        const p = presetFor(bytes);
        select.value = bytes == null ? '' : (p ?? 'custom');
      }
      custom.hidden = select.value !== 'custom';
      for (const [key, input] of inputs) if (document.activeElement !== input) input.value = String(this.model[key]);
      dsel.value = String(this.model.dtype_bytes);
      out.textContent =
        bytes == null ? 'KV bytes per token: not set' : `KV bytes per token: ${bytes.toLocaleString('en-US')} B (${(bytes / 1024).toFixed(0)} KiB)`;
    });
  }

  private applyModel(): void {
    setPath(this.state, 'engine.kv_bytes_per_token', kvBytesPerToken(this.model));
    if (getPath(this.state, 'engine.timing_model.type') === 'roofline') {
      setPath(this.state, 'engine.timing_model.model', this.modelId);
    }
    this.refresh();
  }

  // ---- workload: synthetic or an uploaded Mooncake trace

  private workloadPicker(body: HTMLElement): void {
    const row = el('div', { class: 'field' });
    const select = el('select', { id: 'f-workload-type' });
    select.append(el('option', { value: 'synthetic' }, 'synthetic'), el('option', { value: 'trace' }, 'Mooncake trace (upload)'));
    row.append(el('label', { for: 'f-workload-type' }, 'Source'), select, el('span', { class: 'unit' }));
    const up = el('div', { class: 'field upload' });
    const file = el('input', { id: 'f-trace', type: 'file', accept: '.jsonl,.json,.txt,application/json' });
    const info = el('div', { class: 'hint', id: 'trace-info' });
    up.append(el('label', { for: 'f-trace' }, 'Trace file (JSONL)'), file, el('span', { class: 'unit' }), info);
    body.append(row, up);
    select.addEventListener('change', () => {
      if (select.value === 'trace') {
        const cur = getPath(this.state, 'workload') as JsonObject;
        if (cur.type !== 'trace') {
          setPath(this.state, 'workload', { type: 'trace', path: this.trace?.name ?? null, trace_block_size: 512, arrival_speedup_ratio: 1 });
        }
      } else {
        setPath(this.state, 'workload', clone(getPath(this.defaults, 'workload') as JsonObject));
      }
      this.refresh();
      this.onChange();
    });
    file.addEventListener('change', () => {
      const f = file.files?.[0];
      if (!f) return;
      this.trace = { name: f.name, file: f };
      if (getPath(this.state, 'workload.type') !== 'trace') {
        setPath(this.state, 'workload', { type: 'trace', path: f.name, trace_block_size: 512, arrival_speedup_ratio: 1 });
      } else {
        setPath(this.state, 'workload.path', f.name);
      }
      this.refresh();
      this.onChange();
    });
    this.specials.push(() => {
      const type = String(getPath(this.state, 'workload.type'));
      select.value = type;
      up.hidden = type !== 'trace';
      const want = getPath(this.state, 'workload.path');
      if (this.trace && this.trace.name === want) {
        const size = this.trace.file.size;
        const shown = size >= 1 << 20 ? `${(size / (1 << 20)).toFixed(1)} MiB` : `${(size / 1024).toFixed(1)} KiB`;
        info.textContent = `${this.trace.name}: ${shown} (stays in this tab; read by the engine at each run)`;
      } else {
        info.textContent = want
          ? `This scenario needs the trace “${String(want)}”: upload it.`
          : 'Upload a Mooncake JSONL trace (timestamp, input_length, output_length, hash_ids).';
      }
    });
  }

  // ---- performance model: polynomial, fixed, NPZ profile, roofline

  private perfPicker(body: HTMLElement): void {
    const row = el('div', { class: 'field' });
    const select = el('select', { id: 'f-timing' });
    select.append(
      el('option', { value: 'polynomial' }, 'polynomial (Dynamo default, H200 fit)'),
      el('option', { value: 'fixed' }, 'fixed time per pass'),
      el('option', { value: 'profile' }, 'measured profile (NPZ upload)'),
      el('option', { value: 'roofline' }, 'roofline (model + GPU)'),
    );
    row.append(el('label', { for: 'f-timing' }, 'Model'), select, el('span', { class: 'unit' }));
    const up = el('div', { class: 'field upload' });
    const file = el('input', { id: 'f-npz', type: 'file', accept: '.npz' });
    up.append(el('label', { for: 'f-npz' }, 'Profile (.npz)'), file, el('span', { class: 'unit' }));
    const gpuRow = el('div', { class: 'field' });
    const gpu = el('select', { id: 'f-gpu' });
    for (const [id, g] of Object.entries(GPUS)) gpu.append(el('option', { value: id }, `${g.label} (${g.tflops} TFLOP/s, ${g.hbm_tb_s} TB/s)`));
    gpuRow.append(el('label', { for: 'f-gpu' }, 'GPU'), gpu, el('span', { class: 'unit' }));
    body.append(row, up, gpuRow);
    const setTiming = () => {
      const t = select.value;
      let tm: JsonObject;
      if (t === 'fixed') tm = { type: 'fixed', prefill_ms: 20, decode_ms: 8 };
      else if (t === 'profile') tm = { type: 'external', provider: 'dynamo_profile', config: { path: this.profile?.name ?? 'profile.npz' } };
      else if (t === 'roofline') tm = { type: 'roofline', model: this.modelId, gpu: gpu.value };
      else tm = { type: 'polynomial' };
      setPath(this.state, 'engine.timing_model', tm);
      this.refresh();
      this.onChange();
    };
    select.addEventListener('change', setTiming);
    gpu.addEventListener('change', setTiming);
    const info = el('div', { class: 'hint', id: 'npz-info' });
    up.append(info);
    file.addEventListener('change', async () => {
      const f = file.files?.[0];
      if (!f) return;
      this.profile = { name: f.name, bytes: new Uint8Array(await f.arrayBuffer()) };
      select.value = 'profile';
      setTiming();
    });
    this.specials.push(() => {
      const type = String(getPath(this.state, 'engine.timing_model.type') ?? 'polynomial');
      const v = type === 'external' ? 'profile' : type;
      if ([...select.options].some((o) => o.value === v)) select.value = v;
      up.hidden = v !== 'profile';
      gpuRow.hidden = v !== 'roofline';
      const g = getPath(this.state, 'engine.timing_model.gpu');
      if (typeof g === 'string' && g in GPUS) gpu.value = g;
      const want = getPath(this.state, 'engine.timing_model.config.path');
      info.textContent =
        this.profile && this.profile.name === want
          ? `${this.profile.name}: ${(this.profile.bytes.length / 1024).toFixed(1)} KiB (kept in this tab only)`
          : want
            ? `This scenario needs the profile “${String(want)}”: upload it.`
            : 'A Dynamo planner profile (.npz).';
    });
  }
}
