// The status line of both pages: what the page is doing, as text and as `data-state` (what
// the tests and the styles read), and how many runs have finished (`data-runs`).

/** `refused`: the engine refuses the settings on screen (or a field is invalid); `cancelling`:
 * a cancelled run has stopped and its results are being gathered; `cancelled`: a run stopped
 * before it had results. Only `done` means the results shown are a finished run's. */
export type State = 'loading' | 'ready' | 'running' | 'cancelling' | 'done' | 'error' | 'refused' | 'cancelled';

export class Status {
  runs = 0;
  constructor(private node: HTMLElement) {}
  set(state: State, text: string): void {
    this.node.dataset.state = state;
    this.node.textContent = text;
    if (state === 'done') {
      this.runs += 1;
      this.node.dataset.runs = String(this.runs);
    }
  }
}
