// Which model, GPU and dtypes the form means, shared by the model picker and the timing
// picker: what the scenario says, plus what it alone cannot say (which of two presets with
// the same KV size a non-roofline scenario means; a custom shape while it is not in use; the
// GPU to put a roofline on). Also the roofline edits both pickers make.

import { clone, getPath, isObject, type Json, type JsonObject, setPath } from '../../scenario/json';
import { DEFAULT_GPU, GPU_LABELS } from '../presets';
import type { PickerContext } from './context';

export class ModelChoice {
  /** The user picked a timing model on this page: choosing a model then keeps it. */
  timingChosen = false;
  modelId = 'llama-3.1-8b';
  kvDtype = 'auto';
  gpuId = DEFAULT_GPU;
  customSpec: JsonObject;
  /** Why the form set the tensor-parallel size, shown next to it. */
  tpNote: string | null = null;
  private tpSeq = 0;

  constructor(private ctx: PickerContext) {
    this.customSpec = clone((ctx.presets.models[0]?.spec ?? {}) as JsonObject);
  }

  /** A scenario was set (a link, storage, a reset): remember what its timing model names. */
  adopt(state: JsonObject): void {
    this.tpNote = null;
    const tm = getPath(state, 'engine.timing_model');
    this.timingChosen = isObject(tm) && tm.type !== 'polynomial';
    if (isObject(tm) && tm.type === 'roofline') {
      if (typeof tm.gpu === 'string') this.gpuId = tm.gpu;
      if (typeof tm.model === 'string') this.modelId = tm.model;
      if (isObject(tm.model)) this.customSpec = clone(tm.model);
      if (typeof tm.kv_cache_dtype === 'string') this.kvDtype = tm.kv_cache_dtype;
    }
  }

  timingType(): string {
    return String(getPath(this.ctx.state, 'engine.timing_model.type') ?? 'polynomial');
  }

  timingModel(): JsonObject | null {
    const tm = getPath(this.ctx.state, 'engine.timing_model');
    return isObject(tm) ? tm : null;
  }

  /** A preset's KV bytes per token in a KV dtype (the engine's figure, from its presets). */
  presetKv(id: string, dtype: string): number | undefined {
    return this.ctx.presets.models.find((m) => m.id === id)?.kv_bytes_per_token[dtype];
  }

  /** The model the scenario means: a preset id, 'custom', or '' (none). */
  choice(): string {
    const tm = this.timingModel();
    if (tm?.type === 'roofline') {
      if (typeof tm.model === 'string') return this.ctx.presets.models.some((m) => m.id === tm.model) ? tm.model : 'custom';
      return 'custom';
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
    return 'custom';
  }

  /** A new roofline timing model for `model` on the remembered GPU and dtypes. */
  private newRoofline(model: Json): JsonObject {
    const tp = Number(getPath(this.ctx.state, 'tensor_parallel_size') ?? 1);
    return { type: 'roofline', model, gpu: this.gpuId, tp, kv_cache_dtype: this.kvDtype };
  }

  /** Makes the timing model a roofline of `model` (keeping its other arguments). */
  useRoofline(model: Json): JsonObject {
    const state = this.ctx.state;
    const cur = this.timingModel();
    const tm = cur?.type === 'roofline' ? cur : this.newRoofline(model);
    tm.model = model;
    setPath(state, 'engine.timing_model', tm);
    // Derived from the model from now on.
    setPath(state, 'engine.kv_bytes_per_token', null);
    setPath(state, 'tensor_parallel_size', undefined);
    return tm;
  }

  /**
   * Sets the roofline's tensor-parallel size to the smallest that leaves room for the KV
   * cache (the engine's answer): always, or only when the current one does not.
   */
  async fitTp(tm: JsonObject, always: boolean): Promise<void> {
    const seq = ++this.tpSeq;
    const smallest = await this.ctx.engine.smallestTp(tm).catch(() => null);
    if (seq !== this.tpSeq || this.timingModel() !== tm || smallest === null) return;
    const cur = Number(tm.tp ?? 1);
    if (always ? cur !== smallest : cur < smallest) {
      tm.tp = smallest;
      const gpu = GPU_LABELS[String(tm.gpu)] ?? 'the GPU';
      this.tpNote = `TP ${smallest} is the smallest that leaves room for the KV cache on ${gpu} (a tenth of the memory)`;
    }
  }
}
