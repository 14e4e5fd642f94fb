// The timing model picker: the roofline (the model on the GPU), Dynamo's polynomial fit, a
// fixed time per pass, or a measured profile (an NPZ upload). Leaving the roofline keeps the
// model's KV size and GPUs; the arguments of each model are fields of the timing section.

import { clone, getPath, type JsonObject, setPath } from '../../scenario/json';
import { elAttrs as el } from '../../ui/dom';
import type { PickerContext } from './context';
import type { ModelChoice } from './model-choice';

export function timingPicker(body: HTMLElement, ctx: PickerContext, m: ModelChoice): void {
  const select = el('select', { id: 'f-timing' });
  select.append(
    el('option', { value: 'roofline' }, 'roofline (the model on the GPU)'),
    el('option', { value: 'polynomial' }, 'polynomial (Dynamo default, H200 fit)'),
    el('option', { value: 'fixed' }, 'fixed time per pass'),
    el('option', { value: 'profile' }, 'measured profile (NPZ upload)'),
  );
  const timingRow = ctx.row('f-timing', 'Timing', select, '', 'engine.timing_model');
  const up = el('div', { class: 'field upload' });
  const file = el('input', { id: 'f-npz', type: 'file', accept: '.npz' });
  up.append(el('label', { for: 'f-npz' }, 'Profile (.npz)'), file, el('span', { class: 'unit' }));
  body.append(timingRow, up);
  const setTiming = async (t: string) => {
    const cur = m.timingModel();
    if (t === 'roofline') {
      if (cur?.type === 'roofline') return;
      const choice = m.choice();
      const model = choice === 'custom' ? clone(m.customSpec) : choice === '' ? (ctx.presets.models[0]?.id ?? 'llama-3.1-8b') : choice;
      const tm = m.useRoofline(model);
      await m.fitTp(tm, false);
      return;
    }
    if (cur?.type === 'roofline') {
      // The model stays what it was: its KV size (as the engine derived it) and its GPUs.
      const kv = ctx.pool()?.kv_bytes_per_token ?? (typeof cur.model === 'string' ? m.presetKv(cur.model, m.kvDtype) : undefined);
      setPath(ctx.state, 'engine.kv_bytes_per_token', kv ?? null);
      const tp = Number(cur.tp ?? 1);
      setPath(ctx.state, 'tensor_parallel_size', tp > 1 ? tp : undefined);
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
    const v = type === 'external' ? 'profile' : type;
    if ([...select.options].some((o) => o.value === v)) select.value = v;
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
