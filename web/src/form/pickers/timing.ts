// The timing model picker: measured kernels (AIConfigurator's data for the model on the
// GPU), the roofline (an estimate from the GPU's datasheet), Dynamo's polynomial fit, a fixed
// time per pass, or a measured profile (an NPZ upload). Leaving a timing model that reads
// the model keeps the model's KV size and GPUs; the arguments of each model are fields of
// the timing section.

import { getPath, type JsonObject, setPath } from '../../scenario/json';
import { elAttrs as el } from '../../ui/dom';
import { DEFAULT_GPU } from '../presets';
import type { PickerContext } from './context';
import type { ModelChoice } from './model-choice';

export function timingPicker(body: HTMLElement, ctx: PickerContext, m: ModelChoice): void {
  const select = el('select', { id: 'f-timing' });
  const measuredOption = el('option', { value: 'ais' }, 'measured kernels (AIConfigurator data)');
  if (m.catalog) select.append(measuredOption);
  select.append(
    el('option', { value: 'roofline' }, 'roofline estimate (the model on the GPU)'),
    el('option', { value: 'polynomial' }, 'polynomial (Dynamo default, H200 fit)'),
    el('option', { value: 'fixed' }, 'fixed time per pass'),
    el('option', { value: 'profile' }, 'measured profile (NPZ upload)'),
  );
  const timingRow = ctx.row('f-timing', 'Timing', select, '', 'engine.timing_model');
  const up = el('div', { class: 'field upload' });
  const file = el('input', { id: 'f-npz', type: 'file', accept: '.npz' });
  up.append(el('label', { for: 'f-npz' }, 'Profile (.npz)'), file, el('span', { class: 'unit' }));
  body.append(timingRow, up);
  /** The model to time when none is chosen yet: the first the chosen timing can time. */
  const firstModel = (measured: boolean) =>
    (measured ? m.models.find((e) => e.measured !== undefined && m.hasMeasured(e.value))?.value : undefined) ?? ctx.presets.models[0]?.id ?? 'llama-3.1-8b';
  const setTiming = async (t: string) => {
    const cur = m.timingType();
    const wasMeasured = m.measured();
    if (t === 'ais' || t === 'roofline') {
      if ((t === 'ais' && wasMeasured) || (t === 'roofline' && cur === 'roofline')) return;
      m.preferMeasured = t === 'ais';
      const choice = m.choice();
      const pick = choice === '' ? firstModel(t === 'ais') : choice;
      if (t === 'roofline' && !m.gpu()?.roofline) m.gpuId = DEFAULT_GPU;
      await m.fitTp(m.timeChoice(pick), false);
      return;
    }
    if (cur === 'roofline' || wasMeasured) {
      // The model stays what it was: its KV size (as the engine derived it) and its GPUs.
      const tm = m.timingModel() as JsonObject;
      const args = m.measuredArgs();
      // (Measured kernels report the KV bytes one GPU holds: a preset's whole-model figure
      // is the one the other timing models read, where the model is a preset.)
      const preset = args ? m.rooflineModel(m.choice()) : null;
      const kv =
        (typeof preset === 'string' ? m.presetKv(preset, m.kvDtype) : undefined) ??
        ctx.pool()?.kv_bytes_per_token ??
        (typeof tm.model === 'string' ? m.presetKv(tm.model, m.kvDtype) : undefined);
      setPath(ctx.state, 'engine.kv_bytes_per_token', kv ?? null);
      const tp = Number(args ? (args.tp ?? args.tp_size ?? 1) : (tm.tp ?? 1));
      setPath(ctx.state, 'tensor_parallel_size', tp > 1 ? tp : undefined);
      setPath(ctx.state, 'memory_fraction', undefined);
    }
    let tm: JsonObject;
    if (t === 'fixed') tm = { type: 'fixed', prefill_ms: 20, decode_ms: 8 };
    else if (t === 'profile') tm = { type: 'external', provider: 'dynamo_profile', config: { path: ctx.uploads.profile?.name ?? 'profile.npz' } };
    else tm = { type: 'polynomial' };
    setPath(ctx.state, 'engine.timing_model', tm);
  };
  select.addEventListener('change', () => {
    m.timingChosen = true;
    const t = select.value;
    ctx.change(() => setTiming(t));
  });
  const info = el('div', { class: 'hint', id: 'npz-info' });
  up.append(info);
  file.addEventListener('change', async () => {
    const f = file.files?.[0];
    if (!f) return;
    ctx.uploads.profile = { name: f.name, bytes: new Uint8Array(await f.arrayBuffer()) };
    m.timingChosen = true;
    ctx.change(() => setTiming('profile'));
  });
  ctx.onRefresh(() => {
    const type = m.timingType();
    const v = m.measured() ? 'ais' : type === 'external' ? 'profile' : type;
    if ([...select.options].some((o) => o.value === v)) select.value = v;
    // Measured kernels only where the data has the model (or, with none chosen, some model) on the GPU.
    const choice = m.choice();
    measuredOption.disabled = v !== 'ais' && !(choice === '' ? m.gpu()?.system !== undefined : m.hasMeasured(choice));
    up.hidden = v !== 'profile';
    const want = getPath(ctx.state, 'engine.timing_model.config.path');
    info.textContent =
      ctx.uploads.profile && ctx.uploads.profile.name === want
        ? `${ctx.uploads.profile.name}: ${(ctx.uploads.profile.bytes.length / 1024).toFixed(1)} KiB (kept in this tab only)`
        : want
          ? `This scenario needs the profile “${String(want)}”: upload it.`
          : 'A Dynamo planner profile (.npz).';
  });
}
