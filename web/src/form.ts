// The configuration form: renders the sections of schema.ts plus the model and hardware,
// workload and performance-model pickers, keeps the scenario object in step with the
// inputs, and flags invalid input before a run. Every label and message is set as text,
// never as HTML.
//
// Derived values (the KV pool per rank, KV bytes per token, GPUs) are never computed here:
// the engine reports them for the scenario on screen (`showConfig`, from `inspectScenario`),
// and values the user did not set stay unset in the scenario, so the engine derives them
// again for whatever the settings become.

import { elAttrs as el } from './dom';
import { DEFAULT_GPU, GPU_LABELS, KV_DTYPE_LABELS, MODEL_LABELS, SHAPE_FIELDS, WEIGHT_DTYPE_LABELS } from './presets';
import type { EffectiveConfig, PoolConfig, Presets } from './protocol';
import { clone, getPath, isObject, type Json, type JsonObject, setPath } from './scenario';
import { CLUSTER, ENGINE, type Field, formatValue, IMAGES, PERF, parseField, SCENARIO, type Section, WORKLOAD } from './schema';
import { LOAD_FIELDS, OFFLOAD, SCALING, SERVICE } from './schema-harness';

/** The five face of a die, in SVG (an emoji die would depend on the platform's fonts). */
function dieIcon(): SVGSVGElement {
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('viewBox', '0 0 16 16');
  svg.setAttribute('aria-hidden', 'true');
  const face = document.createElementNS(ns, 'rect');
  for (const [k, v] of Object.entries({
    x: '1.5',
    y: '1.5',
    width: '13',
    height: '13',
    rx: '3',
    fill: 'none',
    stroke: 'currentColor',
    'stroke-width': '1.4',
  })) {
    face.setAttribute(k, v);
  }
  svg.append(face);
  for (const [cx, cy] of [
    [5, 5],
    [11, 5],
    [8, 8],
    [5, 11],
    [11, 11],
  ]) {
    const dot = document.createElementNS(ns, 'circle');
    dot.setAttribute('cx', String(cx));
    dot.setAttribute('cy', String(cy));
    dot.setAttribute('r', '1.3');
    dot.setAttribute('fill', 'currentColor');
    svg.append(dot);
  }
  return svg;
}

function idFor(path: string): string {
  return `f-${path.replace(/\./g, '-')}`;
}

const n0 = (v: number) => v.toLocaleString('en-US', { maximumFractionDigits: 0 });
const n1 = (v: number) => v.toLocaleString('en-US', { maximumFractionDigits: 1, minimumFractionDigits: 1 });

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

/** What the form asks of the engine. */
export interface FormEngine {
  /** The smallest tensor-parallel size at which a roofline timing model leaves room for KV. */
  smallestTp(timingModel: JsonObject): Promise<number | null>;
  /** A fresh seed in [0, 2^53) from the engine's random source. */
  randomSeed(): Promise<number>;
}

export class ConfigForm {
  private rows: Row[] = [];
  private invalid = new Set<string>();
  private state: JsonObject;
  /** The uploaded trace (kept in memory only; links carry just its name). */
  trace: Upload | null = null;
  /** The uploaded NPZ profile (kept in memory only; links carry just its name). */
  profile: { name: string; bytes: Uint8Array } | null = null;
  private specials: (() => void)[] = [];
  /** The engine's figures for the scenario on screen (null while it is refused). */
  private config: EffectiveConfig | null = null;
  /** The user picked a timing model on this page: choosing a model then keeps it. */
  private timingChosen = false;
  /** Remembered choices, for what the scenario alone cannot say (which of two presets with
   * the same KV size a non-roofline scenario means; a custom shape while not in use). */
  private modelId = 'llama-3.1-8b';
  private kvDtype = 'auto';
  private gpuId = DEFAULT_GPU;
  private customSpec: JsonObject;
  /** Why the form set the tensor-parallel size, shown next to it. */
  private tpNote: string | null = null;
  private tpSeq = 0;
  /** Tasks started by an edit that end in a change (a TP pick): tests wait for them. */
  pending: Promise<void> = Promise.resolve();

  constructor(
    private root: HTMLFormElement,
    private defaults: JsonObject,
    private presets: Presets,
    private engine: FormEngine,
    private onChange: () => void,
  ) {
    this.state = clone(defaults);
    this.customSpec = clone((this.presets.models[0]?.spec ?? {}) as JsonObject);
    root.addEventListener('submit', (e) => e.preventDefault());
    this.render(SCENARIO);
    this.section('Model and hardware', (body) => this.modelPicker(body), 'model');
    this.render(ENGINE);
    this.capacityLine(this.root.querySelector('#s-engine .fields') as HTMLElement);
    this.render(CLUSTER);
    this.gpuLine(this.root.querySelector('#s-cluster .fields') as HTMLElement);
    this.section('Workload', (body) => this.workloadPicker(body));
    this.render(WORKLOAD, this.root.querySelector('#s-workload') as HTMLElement);
    this.section('Performance model', (body) => this.perfPicker(body), 'perf');
    this.render(PERF, this.root.querySelector('#s-perf') as HTMLElement);
    this.render(LOAD_FIELDS, this.root.querySelector('#s-workload') as HTMLElement);
    this.render(IMAGES, this.root.querySelector('#s-workload') as HTMLElement);
    for (const sec of [SERVICE, SCALING, OFFLOAD]) this.render(sec);
    const other = el('div', { class: 'effect', id: 'other-effects' });
    this.root.append(other);
    this.refresh();
  }

  get scenario(): JsonObject {
    return this.state;
  }

  /** Replaces the scenario (from a link, storage or a reset). */
  set(scenario: JsonObject): void {
    this.state = clone(scenario);
    this.invalid.clear();
    this.tpNote = null;
    const tm = getPath(this.state, 'engine.timing_model');
    this.timingChosen = isObject(tm) && tm.type !== 'polynomial';
    if (isObject(tm) && tm.type === 'roofline') {
      if (typeof tm.gpu === 'string') this.gpuId = tm.gpu;
      if (typeof tm.model === 'string') this.modelId = tm.model;
      if (isObject(tm.model)) this.customSpec = clone(tm.model);
      if (typeof tm.kv_cache_dtype === 'string') this.kvDtype = tm.kv_cache_dtype;
    }
    this.refresh(true);
  }

  /** The engine's figures for the scenario on screen, or null while it is refused. */
  showConfig(config: EffectiveConfig | null): void {
    this.config = config;
    this.refresh();
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
    const ctx = { scenario: () => this.state, changed: () => this.changed(), flag: this.flag.bind(this) };
    for (const w of sec.widgets ?? []) this.specials.push(w(body, ctx));
  }

  /** Removes the objects a field's removal left empty, where the defaults have none (`slo: {}`). */
  private prune(path: string): void {
    const keys = path.split('.');
    for (let n = keys.length - 1; n > 0; n--) {
      const parent = keys.slice(0, n).join('.');
      const v = getPath(this.state, parent);
      if (!isObject(v) || Object.keys(v).length > 0 || getPath(this.defaults, parent) !== undefined) return;
      setPath(this.state, parent, undefined);
    }
  }

  private changed(): void {
    this.refresh();
    this.onChange();
  }

  /** A labelled row: label, control, unit, then hint, error and "no effect" lines. */
  private row(id: string, label: string, control: HTMLElement, unit = '', path?: string): HTMLElement {
    const row = el('div', { class: 'field' });
    if (path) row.dataset.path = path;
    const error = el('div', { class: 'error', id: `${id}-error` });
    row.append(
      el('label', { for: id }, label),
      control,
      el('span', { class: 'unit' }, unit),
      el('div', { class: 'hint' }),
      error,
      el('div', { class: 'effect' }),
    );
    control.setAttribute('aria-describedby', `${id}-error`);
    return row;
  }

  private fieldRow(field: Field): HTMLElement {
    const id = idFor(field.path);
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
    const row = this.row(id, field.label, input, field.unit ?? '', field.path);
    const r: Row = { field, row, input, error: row.querySelector('.error') as HTMLElement };
    const handler = () => this.edit(r);
    input.addEventListener(field.kind === 'enum' || field.kind === 'bool' ? 'change' : 'input', handler);
    if (field.reseed && input instanceof HTMLInputElement) (row.querySelector('.unit') as HTMLElement).append(this.reseedButton(r, input));
    this.rows.push(r);
    return row;
  }

  /** A die beside a seed: puts a fresh random seed in the field, as if typed. */
  private reseedButton(r: Row, input: HTMLInputElement): HTMLButtonElement {
    const name = `New random ${r.field.label.toLowerCase()}`;
    const button = el('button', { type: 'button', class: 'reseed', 'aria-label': name, title: name, 'aria-controls': input.id });
    button.append(dieIcon());
    button.addEventListener('click', () => {
      const draw = async () => {
        try {
          input.value = String(await this.engine.randomSeed());
        } catch (e) {
          r.error.textContent = `No random seed: ${(e as Error).message}`;
          return;
        }
        this.edit(r);
      };
      this.pending = this.pending.then(draw, draw);
    });
    return button;
  }

  private defaultOf(field: Field): Json | undefined {
    const d = getPath(this.defaults, field.path);
    return d === undefined ? field.fallback : d;
  }

  private flag(row: HTMLElement, input: HTMLElement, key: string, error: string | null): void {
    const box = row.querySelector('.error') as HTMLElement;
    box.textContent = error ?? '';
    if (error) {
      this.invalid.add(key);
      input.setAttribute('aria-invalid', 'true');
      row.classList.add('invalid');
    } else {
      this.invalid.delete(key);
      input.removeAttribute('aria-invalid');
      row.classList.remove('invalid');
    }
  }

  private edit(r: Row): void {
    const { field, input } = r;
    const raw = input instanceof HTMLInputElement && input.type === 'checkbox' ? input.checked : input.value;
    const parsed = parseField(field, raw);
    if ('error' in parsed) {
      this.flag(r.row, input, field.path, parsed.error);
    } else {
      this.flag(r.row, input, field.path, null);
      if (field.set) {
        field.set(this.state, parsed.value);
        this.refresh();
        this.onChange();
        return;
      }
      // A field the engine does not know yet is only written when set away from its fallback.
      const absent = getPath(this.defaults, field.path) === undefined;
      const unset = absent && (parsed.value === field.fallback || (field.kind === 'text' && parsed.value === null));
      setPath(this.state, field.path, unset ? undefined : parsed.value);
      if (unset) this.prune(field.path);
      // A scheduler's own knobs are refused under another scheduler: leaving it drops them.
      for (const own of ['sglang', 'trtllm'] as const) {
        if (field.path === 'engine.backend' && parsed.value !== own && getPath(this.state, `engine.${own}`) != null) {
          setPath(this.state, `engine.${own}`, getPath(this.defaults, `engine.${own}`) ?? null);
        }
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
      // Fields of optional objects (SGLang's knobs, a timing model's arguments) are absent
      // from the defaults without being unknown to the engine.
      const optional = field.optional || field.get !== undefined || field.path.startsWith('engine.sglang.') || field.path.startsWith('engine.timing_model.');
      const unsupported = getPath(this.defaults, field.path) === undefined && field.fallback !== undefined && !optional;
      hint.textContent = [
        field.help ?? '',
        // An optional object's required key has no default to show.
        d == null && field.optional && !field.nullable
          ? ''
          : `default ${d == null ? (field.nullable ?? 'none') : String(d)}${unsupported ? ' (not in this engine build yet)' : ''}`,
      ]
        .filter(Boolean)
        .join(' · ');
      if (!all && document.activeElement === input) continue;
      if (this.invalid.has(field.path)) continue;
      const v = field.get ? field.get(this.state) : getPath(this.state, field.path);
      const shown = v === undefined ? field.fallback : v;
      if (input instanceof HTMLInputElement && input.type === 'checkbox') input.checked = Boolean(shown);
      else input.value = formatValue(shown);
      if (all) this.flag(row, input, field.path, null);
    }
    for (const s of this.specials) s();
    this.showEffects();
  }

  /** Each setting without effect says so next to it (the engine's reasons). */
  private showEffects(): void {
    for (const e of this.root.querySelectorAll<HTMLElement>('.effect')) e.textContent = '';
    const other = this.root.querySelector('#other-effects') as HTMLElement | null;
    for (const n of this.config?.no_effect ?? []) {
      const rows = [...this.root.querySelectorAll<HTMLElement>('.field[data-path]')].filter((r) => r.dataset.path === n.field && !r.hidden);
      const target = rows.map((r) => r.querySelector<HTMLElement>('.effect'));
      if (n.field === 'engine.timing_model') target.push(this.root.querySelector<HTMLElement>('#timing-note'));
      const shown = target.filter((t): t is HTMLElement => t !== null);
      if (shown.length === 0 && other) other.textContent += `${n.field}: ${n.reason}. `;
      for (const t of shown) t.textContent = n.reason;
    }
  }

  /** The pool the engine section describes: the aggregated one, or the prefill pool. */
  private pool(): PoolConfig | null {
    return this.config?.pools[0] ?? null;
  }

  private timingType(): string {
    return String(getPath(this.state, 'engine.timing_model.type') ?? 'polynomial');
  }

  private timingModel(): JsonObject | null {
    const tm = getPath(this.state, 'engine.timing_model');
    return isObject(tm) ? tm : null;
  }

  // ---- derived figures, as the engine reports them

  /** KV pool per rank: blocks, tokens, GiB (and the blocks field's placeholder). */
  private capacityLine(body: HTMLElement): void {
    const out = el('div', { class: 'derived', id: 'kv-capacity' });
    body.prepend(out);
    this.specials.push(() => {
      const p = this.pool();
      const input = this.root.querySelector<HTMLInputElement>('#f-engine-num_gpu_blocks');
      const unset = getPath(this.state, 'engine.num_gpu_blocks') == null;
      const roofline = this.timingType() === 'roofline';
      const why = unset ? (roofline ? 'what fits in GPU memory after the weights' : "Dynamo's default") : 'as set';
      if (input) input.placeholder = p ? n0(p.num_gpu_blocks) : 'automatic';
      if (!p) {
        out.textContent = 'KV pool per rank: — (the engine refuses these settings)';
        return;
      }
      const gib = p.kv_gib_per_rank == null ? '' : `, ${n1(p.kv_gib_per_rank)} GiB`;
      out.textContent = `KV pool per rank: ${n0(p.num_gpu_blocks)} blocks × ${p.block_size} = ${n0(p.kv_tokens_per_rank)} tokens${gib} (${why})`;
      out.dataset.blocks = String(p.num_gpu_blocks);
    });
  }

  /** GPUs per worker and in total. */
  private gpuLine(body: HTMLElement): void {
    const out = el('div', { class: 'derived', id: 'gpu-count' });
    body.append(out);
    this.specials.push(() => {
      const c = this.config;
      if (!c) {
        out.textContent = 'GPUs: —';
        return;
      }
      const parts = c.pools.map((p) => {
        const name = p.pool === 'aggregated' ? '' : `${p.pool}: `;
        return `${name}${p.gpus_per_worker} per worker (TP ${p.tensor_parallel_size} × ${p.dp_size} DP rank${p.dp_size > 1 ? 's' : ''}) × ${p.workers} worker${p.workers > 1 ? 's' : ''}`;
      });
      out.textContent = `GPUs: ${parts.join('; ')} = ${n0(c.total_gpus)} in total`;
      out.dataset.total = String(c.total_gpus);
    });
  }

  // ---- model and hardware

  private presetKv(id: string, dtype: string): number | undefined {
    return this.presets.models.find((m) => m.id === id)?.kv_bytes_per_token[dtype];
  }

  /** The model the scenario means: a preset id, 'custom', or '' (none). */
  private modelChoice(): string {
    const tm = this.timingModel();
    if (tm?.type === 'roofline') {
      if (typeof tm.model === 'string') return this.presets.models.some((m) => m.id === tm.model) ? tm.model : 'custom';
      return 'custom';
    }
    const kv = getPath(this.state, 'engine.kv_bytes_per_token');
    if (typeof kv !== 'number') return '';
    // Several presets (and dtypes) can share a KV size: the remembered one first.
    const pairs: [string, string][] = [[this.modelId, this.kvDtype]];
    for (const m of this.presets.models) pairs.push([m.id, 'auto']);
    for (const m of this.presets.models) for (const d of this.presets.kv_dtypes) pairs.push([m.id, d]);
    for (const [id, d] of pairs) {
      if (this.presetKv(id, d) === kv) {
        this.modelId = id;
        this.kvDtype = d;
        return id;
      }
    }
    return 'custom';
  }

  /** A new roofline timing model for `model` on the remembered GPU and dtypes. */
  private newRoofline(model: Json): JsonObject {
    const tp = Number(getPath(this.state, 'tensor_parallel_size') ?? 1);
    return { type: 'roofline', model, gpu: this.gpuId, tp, kv_cache_dtype: this.kvDtype };
  }

  /** Makes the timing model a roofline of `model` (keeping its other arguments). */
  private useRoofline(model: Json): JsonObject {
    const cur = this.timingModel();
    const tm = cur?.type === 'roofline' ? cur : this.newRoofline(model);
    tm.model = model;
    setPath(this.state, 'engine.timing_model', tm);
    // Derived from the model from now on.
    setPath(this.state, 'engine.kv_bytes_per_token', null);
    setPath(this.state, 'tensor_parallel_size', undefined);
    return tm;
  }

  /**
   * Sets the roofline's tensor-parallel size to the smallest that leaves room for the KV
   * cache (the engine's answer): always, or only when the current one does not.
   */
  private async fitTp(tm: JsonObject, always: boolean): Promise<void> {
    const seq = ++this.tpSeq;
    const smallest = await this.engine.smallestTp(tm).catch(() => null);
    if (seq !== this.tpSeq || this.timingModel() !== tm || smallest === null) return;
    const cur = Number(tm.tp ?? 1);
    if (always ? cur !== smallest : cur < smallest) {
      tm.tp = smallest;
      const gpu = GPU_LABELS[String(tm.gpu)] ?? 'the GPU';
      this.tpNote = `TP ${smallest} is the smallest that leaves room for the KV cache on ${gpu} (a tenth of the memory)`;
    }
  }

  /** Runs an edit that may wait for the engine, then publishes it as one change. */
  private change(task: () => Promise<void> | void): void {
    const run = async () => {
      await task();
      this.refresh();
      this.onChange();
    };
    this.pending = this.pending.then(run, run).catch((e: unknown) => console.error(e));
  }

  private modelPicker(body: HTMLElement): void {
    const select = el('select', { id: 'f-model' });
    select.append(el('option', { value: '' }, 'not set'));
    for (const m of this.presets.models) select.append(el('option', { value: m.id }, MODEL_LABELS[m.id] ?? m.id));
    select.append(el('option', { value: 'custom' }, 'custom…'));
    body.append(this.row('f-model', 'Model', select));
    const timingNote = el('div', { class: 'effect timing-note', id: 'timing-note' });
    body.append(timingNote);

    // A custom shape (roofline), as the engine's ModelSpec.
    const custom = el('div', { class: 'custom-model', id: 'custom-shape' });
    const shapeInputs: [string, HTMLInputElement, HTMLElement][] = [];
    for (const [key, label, required] of SHAPE_FIELDS) {
      const id = `f-model-${key}`;
      const input = el('input', { id, type: 'text', inputmode: 'numeric', autocomplete: 'off' });
      const row = this.row(id, label, input);
      shapeInputs.push([key, input, row]);
      input.addEventListener('input', () => {
        const t = input.value.trim();
        const v = Number(t);
        const ok = (t === '' && !required) || (/^\d+$/.test(t) && (v > 0 || !required));
        this.flag(row, input, `model.${key}`, ok ? null : required ? 'a whole number above 0' : 'a whole number');
        if (!ok) {
          this.onChange();
          return;
        }
        if (t === '') delete this.customSpec[key];
        else this.customSpec[key] = v;
        this.change(() => {
          const tm = this.timingModel();
          if (tm?.type === 'roofline' && isObject(tm.model)) return this.fitTp(this.useRoofline(clone(this.customSpec)), false);
        });
      });
      custom.append(row);
    }
    body.append(custom);

    // A custom KV size (any other timing model: the only thing it reads of a model).
    const kvInput = el('input', { id: 'f-engine-kv_bytes_per_token', type: 'text', inputmode: 'numeric', autocomplete: 'off', placeholder: 'not set' });
    const kvRow = this.row(kvInput.id, 'KV bytes per token', kvInput, 'B', 'engine.kv_bytes_per_token');
    kvInput.addEventListener('input', () => {
      const t = kvInput.value.trim();
      const ok = t === '' || (/^\d+$/.test(t) && Number(t) > 0);
      this.flag(kvRow, kvInput, 'engine.kv_bytes_per_token', ok ? null : 'a whole number above 0, or empty');
      if (ok) setPath(this.state, 'engine.kv_bytes_per_token', t === '' ? null : Number(t));
      this.refresh();
      this.onChange();
    });
    body.append(kvRow);

    const wsel = el('select', { id: 'f-weight-dtype' });
    for (const d of ['', ...this.presets.weight_dtypes]) wsel.append(el('option', { value: d }, WEIGHT_DTYPE_LABELS[d] ?? d));
    const wRow = this.row('f-weight-dtype', 'Weight dtype', wsel, '', 'engine.timing_model.weight_dtype');
    const ksel = el('select', { id: 'f-kv-dtype' });
    for (const d of this.presets.kv_dtypes) ksel.append(el('option', { value: d }, KV_DTYPE_LABELS[d] ?? d));
    const kRow = this.row('f-kv-dtype', 'KV cache dtype', ksel, '', 'engine.timing_model.kv_cache_dtype');
    const gsel = el('select', { id: 'f-gpu' });
    for (const g of this.presets.gpus) {
      const s = g.spec;
      gsel.append(el('option', { value: g.id }, `${GPU_LABELS[g.id] ?? g.id} (${s.hbm_gb} GB, ${s.hbm_gb_per_s / 1000} TB/s, ${s.bf16_tflops} TFLOP/s)`));
    }
    const gRow = this.row('f-gpu', 'GPU', gsel, '', 'engine.timing_model.gpu');
    const tpInput = el('input', { id: 'f-tp', type: 'text', inputmode: 'numeric', autocomplete: 'off' });
    const tpRow = this.row('f-tp', 'Tensor parallel', tpInput, 'GPUs', 'tensor_parallel_size');
    const memInput = el('input', { id: 'f-gpu-mem', type: 'text', inputmode: 'decimal', autocomplete: 'off' });
    const memRow = this.row('f-gpu-mem', 'GPU memory used', memInput, '×', 'engine.timing_model.gpu_memory_utilization');
    body.append(gRow, tpRow, wRow, kRow, memRow);
    const derived = el('div', { class: 'derived', id: 'model-derived' });
    body.append(derived);

    select.addEventListener('change', () => {
      const v = select.value;
      this.change(async () => {
        const before = this.modelChoice();
        if (v !== '' && v !== 'custom') this.modelId = v;
        // A custom shape starts from the preset on screen, for the user to edit.
        const from = this.presets.models.find((m) => m.id === before)?.spec;
        if (v === 'custom' && from) this.customSpec = clone(from as JsonObject);
        const roofline = this.timingType() === 'roofline';
        if (v === '') {
          setPath(this.state, 'engine.kv_bytes_per_token', null);
          return;
        }
        // A model choice times the model (a roofline on the chosen GPU), unless the user
        // picked another timing model: then it sets only the KV size, and a line says so.
        if (roofline || (!this.timingChosen && this.timingType() === 'polynomial')) {
          const tm = this.useRoofline(v === 'custom' ? clone(this.customSpec) : v);
          await this.fitTp(tm, true);
        } else if (v !== 'custom') {
          setPath(this.state, 'engine.kv_bytes_per_token', this.presetKv(v, this.kvDtype) ?? null);
        }
      });
    });
    const rooflineArg = (key: string, value: Json | undefined) =>
      this.change(async () => {
        const tm = this.timingModel();
        if (tm?.type !== 'roofline') return;
        if (value === undefined) delete tm[key];
        else tm[key] = value;
        await this.fitTp(tm, false);
      });
    gsel.addEventListener('change', () => {
      this.gpuId = gsel.value;
      rooflineArg('gpu', gsel.value);
    });
    wsel.addEventListener('change', () => rooflineArg('weight_dtype', wsel.value === '' ? undefined : wsel.value));
    ksel.addEventListener('change', () => {
      this.kvDtype = ksel.value;
      if (this.timingType() === 'roofline') {
        rooflineArg('kv_cache_dtype', ksel.value);
      } else {
        this.change(() => {
          const m = this.modelChoice();
          if (m !== '' && m !== 'custom') setPath(this.state, 'engine.kv_bytes_per_token', this.presetKv(this.modelId, ksel.value) ?? null);
        });
      }
    });
    memInput.addEventListener('input', () => {
      const t = memInput.value.trim();
      const v = Number(t);
      const ok = t !== '' && Number.isFinite(v) && v > 0 && v <= 1;
      this.flag(memRow, memInput, 'engine.timing_model.gpu_memory_utilization', ok ? null : 'a share of the memory, above 0 and at most 1');
      if (ok) rooflineArg('gpu_memory_utilization', v);
      else this.onChange();
    });
    tpInput.addEventListener('input', () => {
      const t = tpInput.value.trim();
      const ok = /^\d+$/.test(t) && Number(t) >= 1 && Number(t) <= 1024;
      this.flag(tpRow, tpInput, 'tensor_parallel_size', ok ? null : 'a whole number from 1 to 1024');
      if (!ok) {
        this.onChange();
        return;
      }
      const v = Number(t);
      this.tpNote = null;
      const tm = this.timingModel();
      if (tm?.type === 'roofline') {
        tm.tp = v;
        setPath(this.state, 'tensor_parallel_size', undefined);
      } else {
        setPath(this.state, 'tensor_parallel_size', v === 1 ? undefined : v);
      }
      this.refresh();
      this.onChange();
    });

    this.specials.push(() => {
      const tm = this.timingModel();
      const roofline = tm?.type === 'roofline';
      const choice = this.modelChoice();
      if (document.activeElement !== select) {
        select.value = choice;
      }
      // "not set" only where a model is optional.
      (select.querySelector('option[value=""]') as HTMLOptionElement).hidden = roofline;
      custom.hidden = !(roofline && choice === 'custom');
      kvRow.hidden = roofline || choice !== 'custom';
      if (roofline && isObject(tm.model)) this.customSpec = clone(tm.model);
      for (const [key, input, row] of shapeInputs) {
        if (document.activeElement !== input && !row.classList.contains('invalid')) input.value = formatValue(this.customSpec[key] ?? '');
      }
      if (document.activeElement !== kvInput && !kvRow.classList.contains('invalid'))
        kvInput.value = formatValue(getPath(this.state, 'engine.kv_bytes_per_token'));
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
        ksel.value = this.kvDtype;
      }
      const tp = roofline ? Number(tm.tp ?? 1) : Number(getPath(this.state, 'tensor_parallel_size') ?? 1);
      if (document.activeElement !== tpInput && !tpRow.classList.contains('invalid')) tpInput.value = String(tp);
      const p = this.pool();
      (tpRow.querySelector('.hint') as HTMLElement).textContent = [
        this.tpNote ?? '',
        p ? `${p.gpus_per_worker} GPU${p.gpus_per_worker > 1 ? 's' : ''} per worker (× ${p.dp_size} DP rank${p.dp_size > 1 ? 's' : ''})` : '',
      ]
        .filter(Boolean)
        .join(' · ');
      derived.textContent = this.modelLine(p, roofline, choice);
    });
  }

  private modelLine(p: PoolConfig | null, roofline: boolean, choice: string): string {
    if (!p) return '';
    const kv =
      p.kv_bytes_per_token == null ? 'KV bytes per token: not set' : `KV: ${n0(p.kv_bytes_per_token)} B per token (${n0(p.kv_bytes_per_token / 1024)} KiB)`;
    const t = p.timing;
    if (!roofline || t.params_billion === undefined) return choice === '' ? kv : `${kv}`;
    return `${n1(t.params_billion)} B parameters, ${n1(t.weight_gb ?? 0)} GB of weights (${n1(t.weight_gb_per_gpu ?? 0)} GB per GPU at TP ${t.tp}) · ${kv}`;
  }

  // ---- workload: synthetic or an uploaded Mooncake trace

  private workloadPicker(body: HTMLElement): void {
    const select = el('select', { id: 'f-workload-type' });
    select.append(el('option', { value: 'synthetic' }, 'synthetic'), el('option', { value: 'trace' }, 'Mooncake trace (upload)'));
    const up = el('div', { class: 'field upload' });
    const file = el('input', { id: 'f-trace', type: 'file', accept: '.jsonl,.json,.txt,application/json' });
    const info = el('div', { class: 'hint', id: 'trace-info' });
    up.append(el('label', { for: 'f-trace' }, 'Trace file (JSONL)'), file, el('span', { class: 'unit' }), info);
    body.append(this.row('f-workload-type', 'Source', select), up);
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
    const select = el('select', { id: 'f-timing' });
    select.append(
      el('option', { value: 'roofline' }, 'roofline (the model on the GPU)'),
      el('option', { value: 'polynomial' }, 'polynomial (Dynamo default, H200 fit)'),
      el('option', { value: 'fixed' }, 'fixed time per pass'),
      el('option', { value: 'profile' }, 'measured profile (NPZ upload)'),
    );
    const timingRow = this.row('f-timing', 'Timing', select, '', 'engine.timing_model');
    const up = el('div', { class: 'field upload' });
    const file = el('input', { id: 'f-npz', type: 'file', accept: '.npz' });
    up.append(el('label', { for: 'f-npz' }, 'Profile (.npz)'), file, el('span', { class: 'unit' }));
    body.append(timingRow, up);
    const setTiming = async (t: string) => {
      const cur = this.timingModel();
      if (t === 'roofline') {
        if (cur?.type === 'roofline') return;
        const choice = this.modelChoice();
        const model = choice === 'custom' ? clone(this.customSpec) : choice === '' ? (this.presets.models[0]?.id ?? 'llama-3.1-8b') : choice;
        const tm = this.useRoofline(model);
        await this.fitTp(tm, false);
        return;
      }
      if (cur?.type === 'roofline') {
        // The model stays what it was: its KV size (as the engine derived it) and its GPUs.
        const kv = this.pool()?.kv_bytes_per_token ?? (typeof cur.model === 'string' ? this.presetKv(cur.model, this.kvDtype) : undefined);
        setPath(this.state, 'engine.kv_bytes_per_token', kv ?? null);
        const tp = Number(cur.tp ?? 1);
        setPath(this.state, 'tensor_parallel_size', tp > 1 ? tp : undefined);
      }
      let tm: JsonObject;
      if (t === 'fixed') tm = { type: 'fixed', prefill_ms: 20, decode_ms: 8 };
      else if (t === 'profile') tm = { type: 'external', provider: 'dynamo_profile', config: { path: this.profile?.name ?? 'profile.npz' } };
      else tm = { type: 'polynomial' };
      setPath(this.state, 'engine.timing_model', tm);
    };
    select.addEventListener('change', () => {
      this.timingChosen = true;
      const t = select.value;
      this.change(() => setTiming(t));
    });
    const info = el('div', { class: 'hint', id: 'npz-info' });
    up.append(info);
    file.addEventListener('change', async () => {
      const f = file.files?.[0];
      if (!f) return;
      this.profile = { name: f.name, bytes: new Uint8Array(await f.arrayBuffer()) };
      this.timingChosen = true;
      this.change(() => setTiming('profile'));
    });
    this.specials.push(() => {
      const type = this.timingType();
      const v = type === 'external' ? 'profile' : type;
      if ([...select.options].some((o) => o.value === v)) select.value = v;
      up.hidden = v !== 'profile';
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
