// The configuration form: renders the field tables of fields.ts and harness-fields.ts plus
// the pickers (pickers/: model and hardware, workload source, timing model), keeps the scenario object in step with the
// inputs, and flags invalid input before a run. Every label and message is set as text,
// never as HTML.
//
// Derived values (the KV pool per rank, KV bytes per token, GPUs) are never computed here:
// the engine reports them for the scenario on screen (`showConfig`, from `inspectScenario`),
// and values the user did not set stay unset in the scenario, so the engine derives them
// again for whatever the settings become.

import type { EffectiveConfig, KernelCatalog, KvPoolArithmetic, PoolConfig, Presets } from '../engine/protocol';
import { clone, deepEqual, getPath, isObject, type Json, type JsonObject, setPath } from '../scenario/json';
import { elAttrs as el } from '../ui/dom';
import { CLUSTER, ENGINE, type Field, formatValue, IMAGES, PERF, parseField, SCENARIO, type Section, WORKLOAD } from './fields';
import { LOAD_FIELDS, OFFLOAD, SCALING, SERVICE } from './harness-fields';
import type { FormEngine, PickerContext, Upload, Uploads } from './pickers/context';
import { modelPicker } from './pickers/model';
import { ModelChoice } from './pickers/model-choice';
import { timingPicker } from './pickers/timing';
import { workloadPicker } from './pickers/workload';

export type { FormEngine, Upload } from './pickers/context';

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

/**
 * The memory model's arithmetic of one rank's KV pool, as the engine did it: the GPU's memory
 * times the framework's fraction (of the whole, or of what the rest leaves for TRT-LLM), less
 * the weights, activations, NCCL's buffers and the runtime's reserve, over the KV bytes per token.
 */
export function kvArithmetic(k: KvPoolArithmetic, blockSize: number, blocks: number): string {
  const g = (b: number) => `${n1(b / 2 ** 30)} GiB`;
  const parts = `${g(k.weights_bytes)} weights − ${g(k.activations_bytes)} activations − ${g(k.nccl_bytes)} NCCL − ${g(k.other_bytes)} runtime`;
  const budget = k.fraction_of === 'of_free' ? `(${g(k.gpu_memory_bytes)} − ${parts}) × ${k.fraction}` : `${g(k.gpu_memory_bytes)} × ${k.fraction} − ${parts}`;
  return `KV memory per GPU: ${budget} = ${g(k.kv_budget_bytes)}; ÷ ${n0(k.kv_bytes_per_token)} B per token per GPU = ${n0(k.kv_tokens)} tokens = ${n0(blocks)} blocks of ${blockSize}`;
}

function idFor(path: string): string {
  return `f-${path.replace(/\./g, '-')}`;
}

const n0 = (v: number) => v.toLocaleString('en-US', { maximumFractionDigits: 0 });
const n1 = (v: number) => v.toLocaleString('en-US', { maximumFractionDigits: 1, minimumFractionDigits: 1 });

/**
 * Test hook: every section and "More settings" group open from the start (the end-to-end tests
 * of individual settings set it; the tests of the page's first look do not).
 */
const OPEN_ALL = (globalThis as { __servesimOpenForm?: boolean }).__servesimOpenForm === true;

interface Row {
  field: Field;
  row: HTMLElement;
  input: HTMLInputElement | HTMLSelectElement;
  error: HTMLElement;
}

export class ConfigForm {
  private rows: Row[] = [];
  private invalid = new Set<string>();
  private state: JsonObject;
  /** The uploaded trace and NPZ profile (kept in memory only; links carry just their names). */
  readonly uploads: Uploads = { trace: null, profile: null };
  private specials: (() => void)[] = [];
  /** The engine's figures for the scenario on screen (null while it is refused). */
  private config: EffectiveConfig | null = null;
  private model: ModelChoice;
  /** Tasks started by an edit that end in a change (a TP pick): tests wait for them. */
  pending: Promise<void> = Promise.resolve();

  constructor(
    private root: HTMLFormElement,
    private defaults: JsonObject,
    presets: Presets,
    private engine: FormEngine,
    private onChange: () => void,
    kernels: KernelCatalog | null = null,
  ) {
    this.state = clone(defaults);
    const form = this;
    const ctx: PickerContext = {
      get state() {
        return form.state;
      },
      defaults,
      presets,
      kernels,
      engine,
      uploads: this.uploads,
      row: (id, label, control, unit, path) => this.row(id, label, control, unit, path),
      flag: (row, input, key, error) => this.flag(row, input, key, error),
      changed: () => this.changed(),
      publish: () => this.onChange(),
      change: (task) => this.change(task),
      onRefresh: (update) => this.specials.push(update),
      config: () => this.config,
      pool: () => this.pool(),
    };
    this.model = new ModelChoice(ctx);
    root.addEventListener('submit', (e) => e.preventDefault());
    this.section('Model and hardware', (body) => modelPicker(body, ctx, this.model), 'model');
    this.render(ENGINE);
    this.capacityLine(this.root.querySelector('#s-engine .fields') as HTMLElement);
    this.render(CLUSTER);
    this.gpuLine(this.root.querySelector('#s-cluster .fields') as HTMLElement);
    this.section('Workload', (body) => workloadPicker(body, ctx));
    this.render(WORKLOAD, this.root.querySelector('#s-workload') as HTMLElement);
    this.section('Performance model', (body) => timingPicker(body, ctx, this.model), 'perf');
    this.render(PERF, this.root.querySelector('#s-perf') as HTMLElement);
    this.render(LOAD_FIELDS, this.root.querySelector('#s-workload') as HTMLElement);
    this.render(IMAGES, this.root.querySelector('#s-workload') as HTMLElement);
    for (const sec of [SERVICE, SCALING, OFFLOAD, SCENARIO]) this.render(sec);
    const other = el('div', { class: 'effect', id: 'other-effects' });
    this.root.append(other);
    this.refresh();
  }

  /** The uploaded trace (links carry just its name). */
  get trace(): Upload | null {
    return this.uploads.trace;
  }

  get scenario(): JsonObject {
    return this.state;
  }

  /** Replaces the scenario (from a link, storage or a reset). */
  set(scenario: JsonObject): void {
    this.state = clone(scenario);
    this.invalid.clear();
    this.model.adopt(this.state);
    this.refresh(true);
    this.openUsed();
  }

  /** The engine's figures for the scenario on screen, or null while it is refused. */
  showConfig(config: EffectiveConfig | null): void {
    this.config = config;
    this.refresh();
  }

  /** Uploaded files the scenario refers to by name (the NPZ profile). */
  files(): Record<string, Uint8Array> | undefined {
    const want = getPath(this.state, 'engine.timing_model.config.path') ?? getPath(this.state, 'engine.planner_profile_data');
    const profile = this.uploads.profile;
    if (profile && profile.name === want) return { [profile.name]: profile.bytes };
    return undefined;
  }

  /** Switches the workload to an uploaded trace and puts the file picker in view (`pick`: opens it). */
  showTraceUpload(pick = false): void {
    const select = this.root.querySelector<HTMLSelectElement>('#f-workload-type');
    if (select && select.value !== 'trace') {
      select.value = 'trace';
      select.dispatchEvent(new Event('change'));
    }
    const file = this.root.querySelector<HTMLInputElement>('#f-trace');
    if (!file) return;
    for (let d = file.closest('details'); d; d = d.parentElement?.closest('details') ?? null) d.open = true;
    file.scrollIntoView({ block: 'center' });
    file.focus();
    if (pick) file.click();
  }

  get invalidFields(): string[] {
    return [...this.invalid];
  }

  private section(title: string, build: (body: HTMLElement) => void, id = title.toLowerCase(), collapsed = false): HTMLElement {
    const details = el('details', { id: `s-${id}` });
    details.open = !collapsed || OPEN_ALL;
    details.append(el('summary', {}, title));
    const body = el('div', { class: 'fields' });
    details.append(body);
    build(body);
    this.root.append(details);
    return body;
  }

  /** The "More settings" group at the end of a section's body (made on first use). */
  private moreOf(body: HTMLElement): HTMLElement {
    const existing = body.querySelector<HTMLElement>(':scope > details.more > .fields');
    if (existing) return existing;
    const details = el('details', { class: 'more' });
    details.open = OPEN_ALL;
    details.append(el('summary', {}, 'More settings'));
    const more = el('div', { class: 'fields' });
    details.append(more);
    body.append(details);
    return more;
  }

  private render(sec: Section, into?: HTMLElement): void {
    const body = into ? (into.querySelector('.fields') as HTMLElement) : this.section(sec.title, () => {}, sec.id, sec.collapsed);
    for (const field of sec.fields) {
      const row = this.fieldRow(field);
      if (field.advanced) this.moreOf(body).append(row);
      else body.insertBefore(row, body.querySelector(':scope > details.more'));
    }
    const ctx = { scenario: () => this.state, changed: () => this.changed(), flag: this.flag.bind(this) };
    for (const w of sec.widgets ?? []) this.specials.push(w(body, ctx));
  }

  /**
   * Opens the collapsed groups (a closed section, a "More settings") whose fields the
   * scenario sets away from their defaults: a link or a lesson shows what it changed.
   */
  private openUsed(): void {
    const used = (f: Field) => {
      const v = f.get ? f.get(this.state) : getPath(this.state, f.path);
      const d = f.get ? f.get(this.defaults) : this.defaultOf(f);
      return v !== undefined && !deepEqual(v, d ?? null);
    };
    for (const r of this.rows) {
      if (r.row.hidden || !used(r.field)) continue;
      for (let d = r.row.closest('details'); d; d = d.parentElement?.closest('details') ?? null) d.open = true;
    }
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
      // An invalid field is never hidden in a closed group (the message names it).
      for (let d = row.closest('details'); d; d = d.parentElement?.closest('details') ?? null) d.open = true;
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
      if (n.field === 'engine.timing_model') {
        // One note, beside the model, and only once a model is chosen that the timing ignores.
        const note = this.root.querySelector<HTMLElement>('#timing-note');
        if (note && this.model.choice() !== '') note.textContent = n.reason;
        continue;
      }
      const rows = [...this.root.querySelectorAll<HTMLElement>('.field[data-path]')].filter((r) => r.dataset.path === n.field && !r.hidden);
      const target = rows.map((r) => r.querySelector<HTMLElement>('.effect'));
      const shown = target.filter((t): t is HTMLElement => t !== null);
      if (shown.length === 0 && other) other.textContent += `${n.field}: ${n.reason}. `;
      for (const t of shown) t.textContent = n.reason;
    }
  }

  /** The pool the engine section describes: the aggregated one, or the prefill pool. */
  private pool(): PoolConfig | null {
    return this.config?.pools[0] ?? null;
  }

  // ---- derived figures, as the engine reports them

  /**
   * KV pool per rank: blocks, tokens, GiB (and the blocks field's placeholder); for measured
   * kernels also the memory model's arithmetic, term by term, as the engine did it.
   */
  private capacityLine(body: HTMLElement): void {
    const out = el('div', { class: 'derived', id: 'kv-capacity' });
    const sum = el('div', { class: 'derived', id: 'kv-arithmetic' });
    body.prepend(out, sum);
    this.specials.push(() => {
      const p = this.pool();
      const input = this.root.querySelector<HTMLInputElement>('#f-engine-num_gpu_blocks');
      const unset = getPath(this.state, 'engine.num_gpu_blocks') == null;
      const roofline = this.model.timingType() === 'roofline';
      const measured = this.model.measured();
      const why = unset
        ? roofline
          ? 'what fits in GPU memory after the weights'
          : measured
            ? "the framework's memory model, below"
            : "Dynamo's default"
        : 'as set';
      if (input) input.placeholder = p ? n0(p.num_gpu_blocks) : 'automatic';
      sum.textContent = p?.kv_pool ? kvArithmetic(p.kv_pool, p.block_size, p.num_gpu_blocks) : '';
      sum.hidden = !p?.kv_pool;
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

  /** Runs an edit that may wait for the engine, then publishes it as one change. */
  private change(task: () => Promise<void> | void): void {
    const run = async () => {
      await task();
      this.refresh();
      this.onChange();
    };
    this.pending = this.pending.then(run, run).catch((e: unknown) => console.error(e));
  }
}
