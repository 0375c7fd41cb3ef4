/**
 * @module `RebuildScheduler`: runs the registry's rebuild one at a time, debounced for changes that
 * arrive by themselves, at once for a caller that waits for it.
 */

/** Options of {@link RebuildScheduler}; all required (the registry resolves its defaults). */
export interface RebuildSchedulerOptions {
  /** Changes scheduled within this time share one rebuild, in ms (0: the next macrotask). */
  debounceMs: number;
  /** When it aborts, a scheduled rebuild is cancelled and no new one is scheduled or repeated. */
  signal: AbortSignal;
}

/**
 * Serialises one async rebuild: a {@link run} while one is running marks it dirty and shares its
 * promise, and a dirty rebuild runs again right after it, so the last change is always built from.
 */
export class RebuildScheduler {
  readonly #rebuild: () => Promise<void>;
  readonly #debounceMs: number;
  readonly #signal: AbortSignal;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #running: Promise<void> | undefined;
  #dirty = false;

  constructor(rebuild: () => Promise<void>, options: RebuildSchedulerOptions) {
    this.#rebuild = rebuild;
    this.#debounceMs = options.debounceMs;
    this.#signal = options.signal;
    this.#signal.addEventListener('abort', () => this.cancelScheduled(), { once: true });
  }

  /** Runs a rebuild after `debounceMs`, unless one is already scheduled. Nothing once aborted. */
  schedule(): void {
    if (this.#signal.aborted || this.#timer) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.run();
    }, this.#debounceMs);
  }

  /** Cancels a scheduled rebuild, for a caller about to {@link run} one itself. */
  cancelScheduled(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** Rebuilds now, or after the running rebuild (sharing its promise). Rejects if the rebuild does. */
  run(): Promise<void> {
    if (this.#running) {
      this.#dirty = true;
      return this.#running;
    }
    this.#running = (async () => {
      try {
        do {
          this.#dirty = false;
          await this.#rebuild();
        } while (this.#dirty && !this.#signal.aborted);
      } finally {
        this.#running = undefined;
      }
    })();
    return this.#running;
  }

  /** The rebuild in progress, if any. */
  get running(): Promise<void> | undefined {
    return this.#running;
  }
}
