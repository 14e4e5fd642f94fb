// The playground's state in one object, and one guard against stale replies.
//
// Several kinds of task answer asynchronously (a run, the drawing of its results, the engine's
// check of an edit, the compression of a link); each edit or click starts a newer one of the
// same kind, and an older one's answer must then be dropped. `Latest` hands out one ticket per
// kind: starting a task takes a ticket, which goes stale as soon as the next task of that
// kind takes one.

import type { Job } from '../engine/client';
import type { RunResult } from '../engine/protocol';
import type { Run } from '../results/charts';
import type { Pinned } from '../results/compare';
import type { JsonObject } from '../scenario/json';

export interface Ticket {
  /** A newer task of the same kind has started: this one's answer is no longer wanted. */
  readonly stale: boolean;
}

export class Latest<K extends string> {
  private live = new Map<K, object>();

  /** A ticket for a new task of `kind`; earlier tickets of that kind go stale. */
  take(kind: K): Ticket {
    const token = {};
    this.live.set(kind, token);
    const live = this.live;
    return {
      get stale() {
        return live.get(kind) !== token;
      },
    };
  }

  /** Makes every ticket of `kind` stale (a task cancelled before it answered). */
  drop(kind: K): void {
    this.live.delete(kind);
  }
}

/** The tasks whose answers can arrive after a newer one started. */
export type Task = 'run' | 'render' | 'check' | 'publish';

export interface PageState {
  /** The run on screen (null before the first), and the non-default fields it ran with. */
  current: Run | null;
  currentScenario: JsonObject;
  /** Runs pinned for comparison (A, B, ...); the current run comes after them. */
  pinned: Pinned[];
  /** The run under way; the one being cancelled; whether the engine said it has stopped. */
  job: Job<RunResult> | null;
  cancelling: Job<RunResult> | null;
  stopped: boolean;
  /** Link hash of the form's scenario (kept up to date as it changes). */
  hash: string;
  /** The page's link: the scenario's hash plus what travels with it (sweep, pinned runs). */
  link: string;
  /** The link hash of the scenario the results on screen belong to. */
  resultsHash: string | null;
  /** The results on screen are a trace's replay. */
  resultsOfTrace: boolean;
  /** An edit not yet checked and published. */
  dirty: boolean;
  /** Why the engine refuses the settings on screen (from inspecting them). */
  engineError: string | null;
  /** Why the last run failed (a bad trace line, a crash): it belongs to the settings it ran. */
  runError: string | null;
  /** What the link that opened the page could not carry (shown until the next edit). */
  linkNote: string | null;
  /** The hash of a link that could not be opened: it stays in the address bar until an edit. */
  badLink: string | null;
  /** The user's scenario before the first lesson replaced it ("Back to my scenario"). */
  ownScenario: JsonObject | null;
  /** The non-default fields of the lesson applied last, as JSON (not saved as the user's). */
  lessonPartial: string | null;
  /** The engine check after an edit, waiting for typing to pause. */
  checkTimer: ReturnType<typeof setTimeout> | undefined;
  latest: Latest<Task>;
}

export function initialState(): PageState {
  return {
    current: null,
    currentScenario: {},
    pinned: [],
    job: null,
    cancelling: null,
    stopped: false,
    hash: '',
    link: '',
    resultsHash: null,
    resultsOfTrace: false,
    dirty: false,
    engineError: null,
    runError: null,
    linkNote: null,
    badLink: null,
    ownScenario: null,
    lessonPartial: null,
    checkTimer: undefined,
    latest: new Latest<Task>(),
  };
}
