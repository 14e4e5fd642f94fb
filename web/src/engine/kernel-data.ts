// Measured-kernel data in a worker: the engine decides which files a scenario reads (the
// index, the bundled model configs, the data file of its GPU × framework × version); when a
// call misses one, the engine names it (`missingKernelData`), this fetches it from the
// site's `data/ais/` once, hands it to the engine, and calls again. Only the files a
// scenario needs are ever fetched, each once per worker (and the browser caches them).

/** The engine's side (the wasm package's exports). */
export interface KernelEngine {
  loadKernelData(name: string, bytes: Uint8Array): void;
  missingKernelData(): string | undefined;
}

/**
 * Where the site keeps the measured-kernel data: `data/ais/` beside the page (absolute, for
 * a worker: its own URL is no guide). Called on the page's side; undefined in a worker.
 */
export function siteDataUrl(): string | undefined {
  return typeof document === 'undefined' ? undefined : new URL('data/ais/', document.baseURI).href;
}

/** The bundled index's and model configs' names (the engine reads them first). */
export const INDEX_FILES = ['index.json', 'models.json'] as const;

/** Files a call may miss one after another: the index, the model configs, a data file per engine. */
const MAX_MISSES = 8;

export class KernelFiles {
  private loads = new Map<string, Promise<void>>();
  /** `data/ais/` of the site, absolute (set by the page: a worker's own URL is no guide). */
  base: string | null = null;

  /** What was handed over, kept while the engine may still be replaced (`switchTo`). */
  private handed: Map<string, Uint8Array> | null;

  /**
   * `ready`: the engine's module is instantiated (a fetch may finish before it is).
   * `replaceable`: the engine may be replaced by another module (`switchTo`), which is then
   * given the files this one had without fetching them again.
   */
  constructor(
    private engine: KernelEngine,
    private ready: Promise<unknown> = Promise.resolve(),
    replaceable = false,
  ) {
    this.handed = replaceable ? new Map() : null;
  }

  /** Hands everything loaded so far to another engine, which is used from now on (once). */
  switchTo(engine: KernelEngine): void {
    this.engine = engine;
    this.ready = Promise.resolve();
    for (const [name, bytes] of this.handed ?? []) engine.loadKernelData(name, bytes);
    this.handed = null;
  }

  /** Fetches and hands over `name` once; later calls share the first one's answer. */
  load(name: string): Promise<void> {
    let p = this.loads.get(name);
    if (!p) {
      p = this.fetchOnce(name);
      this.loads.set(name, p);
      // A failed fetch may be tried again later (a network blip), never in a loop.
      p.catch(() => this.loads.delete(name));
    }
    return p;
  }

  private async fetchOnce(name: string): Promise<void> {
    if (this.base === null) throw new Error(`measured-kernel data \`${name}\` is needed, and this page has no data location`);
    const url = new URL(name, this.base).href;
    let res: Response;
    try {
      res = await fetch(url);
    } catch (e) {
      throw new Error(`measured-kernel data \`${name}\` could not be fetched from ${url}: ${(e as Error).message}`);
    }
    if (!res.ok) throw new Error(`measured-kernel data \`${name}\` could not be fetched from ${url}: HTTP ${res.status}`);
    const bytes = new Uint8Array(await res.arrayBuffer());
    await this.ready;
    this.engine.loadKernelData(name, bytes);
    this.handed?.set(name, bytes);
  }

  /**
   * Runs `call`; while it fails for want of a data file the engine names, fetches that
   * file and runs it again. Other failures (and a file that cannot be fetched) are thrown.
   */
  async with<T>(call: () => T): Promise<T> {
    for (let miss = 0; ; miss++) {
      // A miss left over from a call that recovered by itself must not be taken for this one's.
      this.engine.missingKernelData();
      try {
        return call();
      } catch (e) {
        const name = this.engine.missingKernelData();
        if (name === undefined || miss >= MAX_MISSES) throw e;
        await this.load(name);
      }
    }
  }
}
