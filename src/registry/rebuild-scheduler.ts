/**
 * @module `RebuildScheduler`: runs the registry's rebuild one at a time, debounced for changes that
 * arrive by themselves, at once for a caller that waits for it.
 */
// Imported, not the global: `globalThis.performance` is a lazy getter, read on every use.
import { performance } from 'node:perf_hooks';

/**
 * A debounced rebuild waits at least this many times the work (in ms) of the last rebuild, up to
 * {@link MAX_REBUILD_SPACING_MS}: under a stream of changes (a flood of announcements) rebuilding takes
 * about a fifth of the time however many tools there are, and each rebuild takes in more changes.
 */
export const REBUILD_SPACING_FACTOR = 4;
/** The longest a debounced rebuild is put off for the work of the last one, in ms. */
export const MAX_REBUILD_SPACING_MS = 1_000;

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
 *
 * The rebuild may resolve with how long it kept the CPU busy, in ms (its own work, not the time it
 * waited for factories): a {@link schedule}d rebuild then starts no sooner than
 * {@link REBUILD_SPACING_FACTOR} times that (at most {@link MAX_REBUILD_SPACING_MS}) after the last one
 * ended.
 */
export class RebuildScheduler {
  readonly #rebuild: () => Promise<number | void>;
  readonly #debounceMs: number;
  readonly #signal: AbortSignal;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #running: Promise<void> | undefined;
  #dirty = false;
  /** A scheduled rebuild came due while one was running: schedule it again once that one ends. */
  #due = false;
  /** No scheduled rebuild starts before this (`performance.now()` time). */
  #spacedUntil = 0;

  constructor(rebuild: () => Promise<number | void>, options: RebuildSchedulerOptions) {
    this.#rebuild = rebuild;
    this.#debounceMs = options.debounceMs;
    this.#signal = options.signal;
    this.#signal.addEventListener('abort', () => this.cancelScheduled(), { once: true });
  }

  /**
   * Runs a rebuild after `debounceMs` (or later, see the class), unless one is already scheduled.
   * Nothing once aborted.
   */
  schedule(): void {
    if (this.#signal.aborted || this.#timer) return;
    const delay = Math.max(this.#debounceMs, this.#spacedUntil - performance.now());
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      // Not right after the running one (as run() would): it is spaced from it once it ends.
      if (this.#running) this.#due = true;
      else void this.run();
    }, delay);
  }

  /** Cancels a scheduled rebuild, for a caller about to {@link run} one itself. */
  cancelScheduled(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#due = false;
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
          const work = await this.#rebuild();
          if (typeof work === 'number' && work > 0) {
            const spacingMs = Math.min(REBUILD_SPACING_FACTOR * work, MAX_REBUILD_SPACING_MS);
            this.#spacedUntil = performance.now() + spacingMs;
          }
        } while (this.#dirty && !this.#signal.aborted);
      } finally {
        this.#running = undefined;
        if (this.#due) {
          this.#due = false;
          this.schedule();
        }
      }
    })();
    return this.#running;
  }

  /** The rebuild in progress, if any. */
  get running(): Promise<void> | undefined {
    return this.#running;
  }
}
