// What the sweep and search panels share: their buttons, their status line and message, and
// a redraw held to at most one per interval while results come in (a redraw per result would
// be quadratic, and each is main-thread work while every core runs points).

import { el } from './dom';

/** While results come in, a panel's answer, table and charts are redrawn at most this often. */
export const REDRAW_MS = 1000;

export function button(id: string, text: string, onClick: () => void): HTMLButtonElement {
  const b = el('button', { id, type: 'button', textContent: text });
  b.addEventListener('click', onClick);
  return b;
}

/** A panel's status line (`data-state` for tests and styles) and its message (hidden when empty). */
export class PanelStatus {
  constructor(
    readonly status: HTMLElement,
    readonly message: HTMLElement,
  ) {
    status.dataset.state = 'idle';
  }

  say(text: string | null): void {
    this.message.hidden = !text;
    this.message.textContent = text ?? '';
  }

  set(state: string, text: string): void {
    this.status.dataset.state = state;
    this.status.textContent = text;
  }
}

/** Calls `draw` at most once per `ms` for any number of `schedule` calls; `now` draws at once. */
export class Throttled {
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly draw: () => void,
    private readonly ms = REDRAW_MS,
  ) {}

  schedule(): void {
    if (this.timer !== undefined) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.draw();
    }, this.ms);
  }

  /** Drops a scheduled draw (the caller draws now, or there is nothing left to draw). */
  cancel(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}
