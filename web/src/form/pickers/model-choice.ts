// Which model, GPU and dtypes the form means, shared by the model picker and the timing
// picker: what the scenario says, plus what it alone cannot say (which of two presets with
// the same KV size a non-roofline scenario means; a custom shape or a pasted config while it
// is not in use; the GPU and framework to time a model on). Also the timing edits both
// pickers make.
//
// Where the measured-kernel data has the chosen model and GPU, the model is timed by
// measured kernels (`{"type": "ais"}`); anything else falls back to the roofline (an
// estimate). A scenario that is opened keeps the timing it names: an old roofline link
// stays a roofline, with its numbers.

import type { KernelCatalog } from '../../engine/protocol';
import { clone, deepEqual, getPath, isObject, type Json, type JsonObject, setPath } from '../../scenario/json';
import { DEFAULT_GPU, GPU_LABELS, MEASURED_MODEL_LABELS, MODEL_LABELS, ROOFLINE_GPU_OF_SYSTEM, ROOFLINE_MODEL_OF_MEASURED, SYSTEM_LABELS } from '../presets';
import type { PickerContext } from './context';

/** A model the form offers: timed by measured kernels (`measured`: its bundled config's name), the roofline, or both. */
export interface ModelEntry {
  value: string;
  label: string;
  measured?: string;
  /** A roofline preset's id, or a shape (a bundled config's, as the roofline reads it). */
  roofline?: Json;
}

/** A GPU the form offers: with measured-kernel data (`system`), a roofline preset, or both. */
export interface GpuEntry {
  value: string;
  label: string;
  system?: string;
  roofline?: string;
}

/** The value of "paste a config.json" in the model list. */
export const CONFIG = 'config';
/** The value of a custom roofline shape in the model list. */
export const CUSTOM = 'custom';

/** A Hugging Face config's shape as the roofline's ModelSpec reads it (dense decoders only). */
export function rooflineSpecOf(cfg: JsonObject): JsonObject | null {
  const n = (k: string) => (typeof cfg[k] === 'number' ? (cfg[k] as number) : undefined);
  const text = isObject(cfg.text_config) ? cfg.text_config : null;
  if (text) return rooflineSpecOf(text);
  const layers = n('num_hidden_layers');
  const hidden = n('hidden_size');
  const heads = n('num_attention_heads');
  const inter = n('intermediate_size');
  const vocab = n('vocab_size');
  if (!layers || !hidden || !heads || !inter || !vocab || n('num_experts') || n('num_local_experts')) return null;
  return {
    num_hidden_layers: layers,
    hidden_size: hidden,
    num_attention_heads: heads,
    num_key_value_heads: n('num_key_value_heads') ?? heads,
    head_dim: n('head_dim') ?? Math.floor(hidden / heads),
    intermediate_size: inter,
    vocab_size: vocab,
  };
}

/** The models on offer: the bundled model configs (measured), then the roofline's presets not among them. */
function modelEntries(ctx: PickerContext): ModelEntry[] {
  const out: ModelEntry[] = [];
  const taken = new Set<string>();
  // In the labels' order (Llama first, then by family and size); configs without a label last.
  const order = Object.keys(MEASURED_MODEL_LABELS);
  const rank = (name: string) => (order.includes(name) ? order.indexOf(name) : order.length);
  const bundled = [...(ctx.kernels?.models ?? [])].sort((a, b) => rank(a.name) - rank(b.name) || a.name.localeCompare(b.name));
  for (const m of bundled) {
    if (m.error || m.layers === undefined) continue;
    const preset = ROOFLINE_MODEL_OF_MEASURED[m.name];
    const spec: JsonObject = {
      num_hidden_layers: m.layers,
      hidden_size: m.hidden_size ?? 0,
      num_attention_heads: m.heads ?? 0,
      num_key_value_heads: m.kv_heads ?? 0,
      head_dim: m.head_size ?? 0,
      intermediate_size: m.intermediate_size ?? 0,
      vocab_size: m.vocab_size ?? 0,
    };
    if (preset) taken.add(preset);
    out.push({ value: preset ?? m.name, label: MEASURED_MODEL_LABELS[m.name] ?? m.name, measured: m.name, roofline: preset ?? spec });
  }
  for (const p of ctx.presets.models) {
    if (!taken.has(p.id)) out.push({ value: p.id, label: MODEL_LABELS[p.id] ?? p.id, roofline: p.id });
  }
  return out;
}

/** The GPUs on offer: the data's, then the roofline's presets not among them. */
function gpuEntries(ctx: PickerContext): GpuEntry[] {
  const out: GpuEntry[] = [];
  const taken = new Set<string>();
  for (const system of Object.keys(ctx.kernels?.systems ?? {})) {
    const preset = ROOFLINE_GPU_OF_SYSTEM[system];
    const roofline = preset && ctx.presets.gpus.some((g) => g.id === preset) ? preset : undefined;
    if (roofline) taken.add(roofline);
    out.push({ value: roofline ?? system, label: SYSTEM_LABELS[system] ?? system, system, roofline });
  }
  for (const g of ctx.presets.gpus) {
    if (!taken.has(g.id)) out.push({ value: g.id, label: GPU_LABELS[g.id] ?? g.id, roofline: g.id });
  }
  return out;
}

export class ModelChoice {
  /** The user picked a timing model on this page: choosing a model then keeps it. */
  timingChosen = false;
  /** Time a chosen model by measured kernels where the data has it (off: the roofline, as chosen or opened). */
  preferMeasured = true;
  modelId = 'llama-3.1-8b';
  kvDtype = 'auto';
  gpuId = DEFAULT_GPU;
  /** The framework (and its version) of the measured kernels: null follows the scheduler, newest data. */
  framework: { backend: string; version: string } | null = null;
  customSpec: JsonObject;
  /** A pasted config.json (kept while another model is chosen). */
  pasted: JsonObject | null = null;
  /** "Paste a config.json" is chosen and nothing is pasted yet. */
  pendingConfig = false;
  /** Why the form set the tensor-parallel size, shown next to it. */
  tpNote: string | null = null;
  readonly models: ModelEntry[];
  readonly gpus: GpuEntry[];
  private tpSeq = 0;

  constructor(private ctx: PickerContext) {
    this.customSpec = clone((ctx.presets.models[0]?.spec ?? {}) as JsonObject);
    this.models = modelEntries(ctx);
    this.gpus = gpuEntries(ctx);
  }

  get catalog(): KernelCatalog | null {
    return this.ctx.kernels;
  }

  /** A scenario was set (a link, storage, a reset): remember what its timing model names. */
  adopt(state: JsonObject): void {
    this.tpNote = null;
    this.pendingConfig = false;
    const tm = getPath(state, 'engine.timing_model');
    this.timingChosen = isObject(tm) && tm.type !== 'polynomial';
    // An opened roofline stays a roofline as its model or GPU change (its numbers are the link's).
    this.preferMeasured = !(isObject(tm) && tm.type === 'roofline');
    if (isObject(tm) && tm.type === 'roofline') {
      if (typeof tm.gpu === 'string') this.gpuId = tm.gpu;
      if (typeof tm.model === 'string') this.modelId = tm.model;
      if (isObject(tm.model)) {
        this.customSpec = clone(tm.model);
        const e = this.models.find((m) => isObject(m.roofline) && deepEqual(m.roofline, tm.model as JsonObject));
        if (e) this.modelId = e.value;
      }
      if (typeof tm.kv_cache_dtype === 'string') this.kvDtype = tm.kv_cache_dtype;
    }
    const ais = this.measuredArgs(state);
    if (ais) {
      const gpu = this.gpus.find((g) => g.system === ais.system);
      if (gpu) this.gpuId = gpu.value;
      if (isObject(ais.model)) this.pasted = clone(ais.model);
      else {
        const e = this.models.find((m) => m.measured === ais.model);
        if (e) this.modelId = e.value;
      }
      this.framework =
        typeof ais.backend === 'string' && typeof ais.backend_version === 'string' ? { backend: ais.backend, version: ais.backend_version } : null;
    }
  }

  timingType(): string {
    return String(getPath(this.ctx.state, 'engine.timing_model.type') ?? 'polynomial');
  }

  timingModel(): JsonObject | null {
    const tm = getPath(this.ctx.state, 'engine.timing_model');
    return isObject(tm) ? tm : null;
  }

  /** The measured-kernel arguments of the scenario's timing model (either spelling), or null. */
  measuredArgs(state: JsonObject = this.ctx.state): JsonObject | null {
    const tm = getPath(state, 'engine.timing_model');
    if (!isObject(tm)) return null;
    if (tm.type === 'ais') return tm;
    if (tm.type === 'external' && tm.provider === 'ais' && isObject(tm.config)) return tm.config;
    return null;
  }

  /** Whether the scenario is timed by measured kernels. */
  measured(): boolean {
    return this.measuredArgs() !== null;
  }

  /** A preset's KV bytes per token in a KV dtype (the engine's figure, from its presets). */
  presetKv(id: string, dtype: string): number | undefined {
    return this.ctx.presets.models.find((m) => m.id === id)?.kv_bytes_per_token[dtype];
  }

  model(value = this.modelId): ModelEntry | undefined {
    return this.models.find((m) => m.value === value);
  }

  gpu(value = this.gpuId): GpuEntry | undefined {
    return this.gpus.find((g) => g.value === value);
  }

  /** The model the scenario means: an entry's value, 'custom', 'config', or '' (none). */
  choice(): string {
    const ais = this.measuredArgs();
    if (ais) {
      if (isObject(ais.model)) return CONFIG;
      return this.models.find((m) => m.measured === ais.model)?.value ?? CONFIG;
    }
    const tm = this.timingModel();
    if (tm?.type === 'roofline') {
      if (typeof tm.model === 'string') return this.models.some((m) => m.value === tm.model) ? tm.model : CUSTOM;
      const e = isObject(tm.model) ? this.models.find((m) => isObject(m.roofline) && deepEqual(m.roofline, tm.model as JsonObject)) : undefined;
      return e?.value ?? CUSTOM;
    }
    const kv = getPath(this.ctx.state, 'engine.kv_bytes_per_token');
    if (typeof kv !== 'number') return '';
    // Several presets (and dtypes) can share a KV size: the remembered one first.
    const { models, kv_dtypes } = this.ctx.presets;
    const pairs: [string, string][] = [[this.modelId, this.kvDtype]];
    for (const m of models) pairs.push([m.id, 'auto']);
    for (const m of models) for (const d of kv_dtypes) pairs.push([m.id, d]);
    for (const [id, d] of pairs) {
      if (this.presetKv(id, d) === kv) {
        this.modelId = id;
        this.kvDtype = d;
        return id;
      }
    }
    return CUSTOM;
  }

  /** What measured kernels would time for `choice` (a bundled config's name, or a pasted config), or null. */
  measuredModel(choice: string): Json | null {
    if (choice === CONFIG) return this.pasted;
    return this.model(choice)?.measured ?? null;
  }

  /** What the roofline would time for `choice` (a preset id or a shape), or null. */
  rooflineModel(choice: string): Json | null {
    if (choice === CUSTOM) return clone(this.customSpec);
    if (choice === CONFIG) return this.pasted ? rooflineSpecOf(this.pasted) : null;
    return this.model(choice)?.roofline ?? null;
  }

  /** Whether the data has measured kernels for a model choice on a GPU (its set for the framework). */
  hasMeasured(choice: string, gpu: GpuEntry | undefined = this.gpu()): boolean {
    return this.measuredModel(choice) !== null && gpu?.system !== undefined;
  }

  /** The data's frameworks for a GPU: [backend, versions newest first]. */
  frameworks(system: string): [string, string[]][] {
    return Object.entries(this.ctx.kernels?.systems[system] ?? {});
  }

  /** The framework and version measured kernels use on `system`: the one chosen, else the scheduler's, newest data. */
  frameworkFor(system: string): { backend: string; version: string } | null {
    const have = this.frameworks(system);
    const pick = (backend: string, version?: string) => {
      const versions = have.find(([b]) => b === backend)?.[1] ?? [];
      const v = version && versions.includes(version) ? version : versions[0];
      return v === undefined ? null : { backend, version: v };
    };
    const scheduler = String(getPath(this.ctx.state, 'engine.backend') ?? 'vllm');
    return (
      (this.framework ? pick(this.framework.backend, this.framework.version) : null) ??
      pick(scheduler) ??
      (have[0] ? { backend: have[0][0], version: have[0][1][0] ?? '' } : null)
    );
  }

  /**
   * Times `choice` on the chosen GPU: measured kernels where the data has both (unless the
   * roofline was chosen or opened), else the roofline. Keeps the timing model's other
   * arguments (TP, dtypes) where it stays of its kind. Returns the new timing model, or
   * null when neither can time it (the picker offers no such pair).
   */
  timeChoice(choice: string): JsonObject | null {
    const gpu = this.gpu();
    const measured = this.measuredModel(choice);
    if (this.preferMeasured && measured !== null && gpu?.system) return this.useMeasured(measured, gpu.system);
    const roofline = this.rooflineModel(choice);
    if (roofline !== null && gpu?.roofline) return this.useRoofline(roofline, gpu.roofline);
    if (measured !== null && gpu?.system) return this.useMeasured(measured, gpu.system);
    return null;
  }

  /** The TP to start a new timing model with: the one on screen. */
  private currentTp(): number {
    const tm = this.timingModel();
    const ais = this.measuredArgs();
    const tp = ais?.tp ?? ais?.tp_size ?? (tm?.type === 'roofline' ? tm.tp : undefined) ?? getPath(this.ctx.state, 'tensor_parallel_size') ?? 1;
    return Number(tp);
  }

  /** Makes the timing model measured kernels of `model` on `system` (keeping its other arguments). */
  useMeasured(model: Json, system: string): JsonObject {
    const state = this.ctx.state;
    const cur = this.timingModel();
    const fw = this.frameworkFor(system);
    const tm: JsonObject = cur?.type === 'ais' ? cur : { type: 'ais', tp: this.currentTp() };
    tm.model = clone(model);
    tm.system = system;
    // Framework and version stated, so a link keeps its numbers when newer data arrives.
    if (fw) {
      tm.backend = fw.backend;
      tm.backend_version = fw.version;
    }
    setPath(state, 'engine.timing_model', tm);
    // Derived from the model and the GPU's memory from now on.
    setPath(state, 'engine.kv_bytes_per_token', null);
    setPath(state, 'tensor_parallel_size', undefined);
    return tm;
  }

  /** Makes the timing model a roofline of `model` on `gpu` (keeping its other arguments). */
  useRoofline(model: Json, gpu: string = this.gpu()?.roofline ?? DEFAULT_GPU): JsonObject {
    const state = this.ctx.state;
    const cur = this.timingModel();
    const tm: JsonObject = cur?.type === 'roofline' ? cur : { type: 'roofline', tp: this.currentTp(), kv_cache_dtype: this.kvDtype };
    tm.model = clone(model);
    tm.gpu = gpu;
    setPath(state, 'engine.timing_model', tm);
    // Derived from the model from now on.
    setPath(state, 'engine.kv_bytes_per_token', null);
    setPath(state, 'tensor_parallel_size', undefined);
    setPath(state, 'memory_fraction', undefined);
    return tm;
  }

  /**
   * Sets the timing model's tensor-parallel size to the smallest that leaves room for the
   * KV cache (the engine's answer): always, or only when the current one does not.
   */
  async fitTp(tm: JsonObject | null, always: boolean): Promise<void> {
    if (!tm) return;
    const seq = ++this.tpSeq;
    const smallest = await this.ctx.engine.smallestTp(tm).catch(() => null);
    if (seq !== this.tpSeq || this.timingModel() !== tm || smallest === null) return;
    const cur = Number(tm.tp ?? 1);
    if (always ? cur !== smallest : cur < smallest) {
      tm.tp = smallest;
      if (tm.type === 'ais') {
        const gpu = SYSTEM_LABELS[String(tm.system)] ?? 'the GPU';
        this.tpNote = `TP ${smallest} is the smallest that leaves room for the KV cache on ${gpu}`;
      } else {
        const gpu = GPU_LABELS[String(tm.gpu)] ?? 'the GPU';
        this.tpNote = `TP ${smallest} is the smallest that leaves room for the KV cache on ${gpu} (a tenth of the memory)`;
      }
    }
  }
}
