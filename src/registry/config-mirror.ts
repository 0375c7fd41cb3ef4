/**
 * @module `ConfigMirror`: a copy of a config store's items, by type and key, kept current by watching
 * the store (again after a failure) and by explicit re-reads that agree with the watch. Run state is
 * left out, but for whether the state tools depend on is there (`STATE_CONFIG_DEPENDENCIES`).
 */
import {
  STATE_CONFIG_DEPENDENCIES,
  STATE_CONFIG_TYPES,
  type ConfigChange,
  type ConfigItem,
  type ConfigStore,
} from '../config/index.js';
import type { JsonValue } from '../schema/index.js';
import { closedError, problemOf } from './registry-errors.js';
import type { ConfigSnapshot } from './tool-set-plan.js';
import type { RegistryProblem } from './tool-type.js';

/** Options of {@link ConfigMirror}; all required (the registry resolves its defaults). */
export interface ConfigMirrorOptions {
  /** Wait before watching the store again after the watch (or its list) failed, in ms; positive. */
  retryMs: number;
  /** Stops following the store when it aborts; a first load still waiting rejects with `closed`. */
  signal: AbortSignal;
  /**
   * Called whenever the copy changed by itself: a watched change, or a reload after the watch failed.
   * Not called for the first load nor for {@link ConfigMirror.refresh}, whose callers wait for them.
   */
  onChange: () => void;
}

interface StoredItem {
  value: JsonValue;
  revision: number;
}

type ItemsByType = Map<string, Map<string, StoredItem>>;

/**
 * A copy of every item of a {@link ConfigStore}, following its watch.
 *
 * Changes reach the copy two ways, and they must agree: the watch, which may deliver a change late (a
 * NATS watcher, another process writing a SQLite file), and {@link refresh}, which reads the store
 * itself. A refresh records the store revision it read at (the floor), so a watched change at or below
 * it is not applied again, and keeps the watched changes that arrive while it reads. Every item keeps
 * its revision, so a change older than what the copy holds is ignored.
 */
export class ConfigMirror implements ConfigSnapshot {
  readonly #store: ConfigStore;
  readonly #retryMs: number;
  readonly #signal: AbortSignal;
  readonly #onChange: () => void;
  #items: ItemsByType = new Map();
  /** Watched changes at or below this store revision are already in `#items` (from a refresh). */
  #floor = 0;
  /** Buffers collecting watched changes while a refresh reads the store. */
  readonly #recording = new Set<ConfigChange[]>();
  #loaded = false;
  #problem: RegistryProblem | undefined;

  constructor(store: ConfigStore, options: ConfigMirrorOptions) {
    this.#store = store;
    this.#retryMs = options.retryMs;
    this.#signal = options.signal;
    this.#onChange = options.onChange;
  }

  /**
   * Starts following the store (call once). Resolves when the first load is in. Rejects with the
   * store's error when the first load fails (and stops: the caller decides whether to try again), or
   * with `closed` when the signal aborts first. Later failures are retried every `retryMs` and shown
   * in {@link problem} meanwhile.
   */
  follow(): Promise<void> {
    let first!: { resolve: () => void; reject: (e: unknown) => void };
    const loaded = new Promise<void>((resolve, reject) => (first = { resolve, reject }));
    void this.#watchLoop(first);
    return loaded;
  }

  /**
   * Replaces the copy with a fresh read of the store, keeping the watched changes that arrive
   * meanwhile. Does nothing before the first load or once stopped. Never rejects: a failing store is
   * reported by the watch loop, and the copy stays as it was.
   */
  async refresh(): Promise<void> {
    if (!this.#loaded || this.#signal.aborted) return;
    await this.#resync().catch(() => undefined);
  }

  /** The value of one item, or undefined when there is none. */
  get(type: string, key: string): JsonValue | undefined {
    return this.#items.get(type)?.get(key)?.value;
  }

  /** The items of one type as `[key, value]`, in no particular order. */
  *entries(type: string): IterableIterator<[string, JsonValue]> {
    for (const [key, item] of this.#items.get(type) ?? []) yield [key, item.value];
  }

  /** The store's failure while it is being retried (key `store`), or undefined. */
  get problem(): RegistryProblem | undefined {
    return this.#problem;
  }

  async #resync(): Promise<void> {
    const meanwhile: ConfigChange[] = [];
    this.#recording.add(meanwhile);
    try {
      // Every change up to `base` is in the list that follows; the watch may still deliver them.
      const base = await this.#store.revision();
      const items = await this.#store.list();
      // A concurrent refresh may already have put a newer snapshot in place: keep that one.
      if (this.#signal.aborted || base < this.#floor) return;
      this.#items = byType(items);
      this.#floor = Math.max(this.#floor, base);
      for (const change of meanwhile) this.#apply(change);
    } finally {
      this.#recording.delete(meanwhile);
    }
  }

  /** Follows the store: snapshot + watch, and again after a failure (the full snapshot resyncs). */
  async #watchLoop(first: { resolve: () => void; reject: (e: unknown) => void } | undefined): Promise<void> {
    const signal = this.#signal;
    // A settled promise ignores a later reject: this only reaches a first load still waiting (stopped
    // before it finished), which must settle or whoever awaits it would hang.
    const initial = first;
    try {
      while (!signal.aborted) {
        try {
          // Watch before listing, so no change between the two is missed.
          const watch = this.#store.watch({ signal });
          let items: ConfigItem[];
          try {
            items = await this.#store.list();
          } catch (error) {
            // End the watch opened for this attempt, or every retry would leave one open (buffering
            // changes, or holding a consumer on the server) until the mirror stops.
            await Promise.resolve(watch[Symbol.asyncIterator]().return?.()).catch(() => undefined);
            throw error;
          }
          this.#items = byType(items);
          this.#floor = 0; // a new watch on a (possibly replaced) store: its revisions count afresh
          this.#loaded = true;
          this.#problem = undefined;
          if (first) {
            first.resolve();
            first = undefined;
          } else this.#onChange();
          for await (const change of watch) {
            for (const buffer of this.#recording) buffer.push(change);
            if (this.#apply(change)) this.#onChange();
          }
          return; // the watch ended without error: the store or the mirror stopped
        } catch (error) {
          if (signal.aborted) return;
          if (first) {
            first.reject(error);
            return;
          }
          this.#problem = problemOf(
            'store',
            error,
            `the config store failed; retrying every ${this.#retryMs} ms: ${(error as Error).message}`,
          );
          await this.#retryDelay();
        }
      }
    } finally {
      initial?.reject(closedError());
    }
  }

  /** Waits `retryMs`, or until the signal aborts. */
  #retryDelay(): Promise<void> {
    const signal = this.#signal;
    return new Promise<void>((resolve) => {
      const onAbort = (): void => (clearTimeout(timer), resolve());
      // Removed when the timer fires, or every retry would leave a listener on the signal.
      const timer = setTimeout(
        () => (signal.removeEventListener('abort', onAbort), resolve()),
        this.#retryMs,
      );
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Applies one watched change to the copy; false when nothing the copy shows changed. */
  #apply(change: ConfigChange): boolean {
    if (change.revision <= this.#floor) return false;
    let byKey = this.#items.get(change.type);
    const known = byKey?.get(change.key);
    if (known && known.revision >= change.revision) return false;
    const value = change.kind === 'delete' ? undefined : mirrored(change.type, change.value ?? null);
    if (value === undefined) {
      if (!known) return false;
      byKey!.delete(change.key);
      return true;
    }
    if (known && STATE_CONFIG_DEPENDENCIES.has(change.type)) {
      known.revision = change.revision; // still there (a refresh): nothing a tool depends on changed
      return false;
    }
    if (!byKey) this.#items.set(change.type, (byKey = new Map()));
    byKey.set(change.key, { value, revision: change.revision });
    return true;
  }
}

/**
 * What the copy holds for an item: its value; for a state type tools depend on, `true` while the item
 * holds the field they depend on (see `STATE_CONFIG_DEPENDENCIES`); for other run state, nothing.
 */
function mirrored(type: string, value: JsonValue): JsonValue | undefined {
  const field = STATE_CONFIG_DEPENDENCIES.get(type);
  if (field !== undefined) {
    const held = value !== null && typeof value === 'object' && !Array.isArray(value) && field in value;
    return held ? true : undefined;
  }
  return STATE_CONFIG_TYPES.has(type) ? undefined : value;
}

function byType(items: ConfigItem[]): ItemsByType {
  const out: ItemsByType = new Map();
  for (const item of items) {
    const value = mirrored(item.type, item.value);
    if (value === undefined) continue;
    let byKey = out.get(item.type);
    if (!byKey) out.set(item.type, (byKey = new Map()));
    byKey.set(item.key, { value, revision: item.revision });
  }
  return out;
}
