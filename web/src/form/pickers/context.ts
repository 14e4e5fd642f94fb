// What a picker (a hand-built part of the form: the model and hardware, the workload's
// source, the timing model) gets from the form. Pickers edit the form's scenario object in
// place and publish through `changed` / `change`, exactly as the table-driven fields do.

import type { EffectiveConfig, KernelCatalog, PoolConfig, Presets } from '../../engine/protocol';
import type { JsonObject } from '../../scenario/json';

/** What the form asks of the engine. */
export interface FormEngine {
  /** The smallest tensor-parallel size at which a roofline timing model leaves room for KV. */
  smallestTp(timingModel: JsonObject): Promise<number | null>;
  /** A fresh seed in [0, 2^53) from the engine's random source. */
  randomSeed(): Promise<number>;
}

export interface Upload {
  name: string;
  /** The file itself: the worker reads it for each run, the page never holds its text. */
  file: Blob;
}

/** Files the user uploaded (kept in this tab only; links carry just their names). */
export interface Uploads {
  trace: Upload | null;
  profile: { name: string; bytes: Uint8Array } | null;
}

export interface PickerContext {
  /** The scenario being edited (replaced when the form is set: read it each time). */
  readonly state: JsonObject;
  readonly defaults: JsonObject;
  readonly presets: Presets;
  /** The measured-kernel data the site has (null: none; the roofline remains). */
  readonly kernels: KernelCatalog | null;
  readonly engine: FormEngine;
  readonly uploads: Uploads;
  /** A labelled row: label, control, unit, then hint, error and "no effect" lines. */
  row(id: string, label: string, control: HTMLElement, unit?: string, path?: string): HTMLElement;
  /** Marks (or clears, with null) an input as invalid, naming `key` in the page's message. */
  flag(row: HTMLElement, input: HTMLElement, key: string, error: string | null): void;
  /** The scenario changed: refresh the inputs and publish. */
  changed(): void;
  /** Publishes without refreshing the inputs (an input just became invalid). */
  publish(): void;
  /** Runs an edit that may wait for the engine, then publishes it as one change. */
  change(task: () => Promise<void> | void): void;
  /** Registers what to run whenever the form puts the scenario's values into the inputs. */
  onRefresh(update: () => void): void;
  /** The engine's figures for the scenario on screen (null while it is refused). */
  config(): EffectiveConfig | null;
  /** The pool the engine section describes: the aggregated one, or the prefill pool. */
  pool(): PoolConfig | null;
}
