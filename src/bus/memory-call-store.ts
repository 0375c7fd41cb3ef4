/**
 * @module `MemoryCallStore`: call states in process memory, the default store of `MemoryBus`'s durable
 * calls. Records expire `ttlMs` after their last write.
 */
import { numberOption } from '../errors/index.js';
import { FINAL_CALL_STATUSES, type CallRecord, type CallStore, type StoredCall } from './durable.js';

/** How long call records are kept after their last write unless said otherwise (24 hours). */
export const DEFAULT_CALL_RESULT_TTL_MS = 24 * 3_600_000;

/** Options of {@link MemoryCallStore}. */
export interface MemoryCallStoreOptions {
  /** @default DEFAULT_CALL_RESULT_TTL_MS (24 h) */
  ttlMs?: number;
  /** The clock, in epoch milliseconds. @default Date.now */
  now?: () => number;
}

interface Entry {
  /** The record as JSON text: readers get a copy, as from any other store. */
  text: string;
  revision: number;
  writtenAt: number;
}

/** A {@link CallStore} in memory: what one process keeps, lost when it exits. */
export class MemoryCallStore implements CallStore {
  readonly ttlMs: number;
  readonly #now: () => number;
  readonly #records = new Map<string, Entry>();
  readonly #claims = new Map<string, { id: string; writtenAt: number }>();
  readonly #watchers = new Map<string, Set<() => void>>();
  #revision = 0;
  #lastPrune = 0;

  constructor(options: MemoryCallStoreOptions = {}) {
    this.ttlMs = numberOption('MemoryCallStore', 'ttlMs', options.ttlMs, DEFAULT_CALL_RESULT_TTL_MS);
    this.#now = options.now ?? Date.now;
  }

  get(id: string): Promise<StoredCall | undefined> {
    return Promise.resolve(this.#read(id));
  }

  put(record: CallRecord, revision: number): Promise<number | undefined> {
    this.#prune();
    const current = this.#live(record.id);
    if ((current?.revision ?? 0) !== revision) return Promise.resolve(undefined);
    const next = ++this.#revision;
    this.#records.set(record.id, { text: JSON.stringify(record), revision: next, writtenAt: this.#now() });
    for (const wake of this.#watchers.get(record.id) ?? []) wake();
    return Promise.resolve(next);
  }

  claim(service: string, key: string, id: string): Promise<string> {
    this.#prune();
    const name = `${service}\u0000${key}`;
    const held = this.#claims.get(name);
    if (held && this.#now() - held.writtenAt < this.ttlMs) return Promise.resolve(held.id);
    this.#claims.set(name, { id, writtenAt: this.#now() });
    return Promise.resolve(id);
  }

  async *watch(id: string, signal: AbortSignal): AsyncIterable<StoredCall> {
    let wake: (() => void) | undefined;
    let changed = true;
    const onChange = (): void => {
      changed = true;
      wake?.();
    };
    const onAbort = (): void => wake?.();
    let set = this.#watchers.get(id);
    if (!set) this.#watchers.set(id, (set = new Set()));
    set.add(onChange);
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      let seen = -1;
      while (!signal.aborted) {
        if (changed) {
          changed = false;
          const stored = this.#read(id);
          if (stored && stored.revision !== seen) {
            seen = stored.revision;
            yield stored;
            if (FINAL_CALL_STATUSES.has(stored.record.status)) return;
          }
          continue;
        }
        await new Promise<void>((resolve) => (wake = resolve));
        wake = undefined;
      }
    } finally {
      signal.removeEventListener('abort', onAbort);
      set.delete(onChange);
      if (set.size === 0) this.#watchers.delete(id);
    }
  }

  close(): Promise<void> {
    return Promise.resolve();
  }

  #read(id: string): StoredCall | undefined {
    const entry = this.#live(id);
    return entry ? { record: JSON.parse(entry.text) as CallRecord, revision: entry.revision } : undefined;
  }

  #live(id: string): Entry | undefined {
    const entry = this.#records.get(id);
    if (entry && this.#now() - entry.writtenAt >= this.ttlMs) {
      this.#records.delete(id);
      return undefined;
    }
    return entry;
  }

  /** Drops expired records, at most once a minute (a write does it, so memory stays bounded). */
  #prune(): void {
    const now = this.#now();
    if (now - this.#lastPrune < 60_000) return;
    this.#lastPrune = now;
    for (const [id, entry] of this.#records)
      if (now - entry.writtenAt >= this.ttlMs) this.#records.delete(id);
    for (const [name, held] of this.#claims)
      if (now - held.writtenAt >= this.ttlMs) this.#claims.delete(name);
  }
}
