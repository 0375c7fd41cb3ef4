/**
 * @module `MemoryConfigStore`: the in-process config store, for tests and single-process use.
 */
import type { JsonValue } from '../schema/index.js';
import { ToolbusError } from '../errors/index.js';
import { ChangeQueue } from './change-queue.js';
import { assertConfigName } from './config-names.js';
import type {
  ConfigChange,
  ConfigItem,
  ConfigStore,
  ConfigWatchOptions,
  ConfigWriteOptions,
} from './config-store.js';
import { toConfigValue } from './json-value.js';

/**
 * A {@link ConfigStore} held in memory. Revisions start at 0 and grow by one per write or delete.
 *
 * @example
 * ```ts
 * const store = new MemoryConfigStore();
 * await store.put('tool-service', 'joke-service', '{"id":"joke-service", ...}');
 * for await (const change of store.watch()) console.log(change.kind, change.type, change.key);
 * ```
 */
export class MemoryConfigStore implements ConfigStore {
  #items = new Map<string, ConfigItem>();
  #revision = 0;
  #watchers = new Set<ChangeQueue<ConfigChange>>();
  #closed = false;

  put(
    type: string,
    key: string,
    value: string | JsonValue,
    options: ConfigWriteOptions = {},
  ): Promise<number> {
    try {
      this.#open();
      assertConfigName(type, key);
      const parsed = toConfigValue(type, key, value);
      const id = `${type}/${key}`;
      checkRevision(id, this.#items.get(id)?.revision ?? 0, options.ifRevision);
      const revision = ++this.#revision;
      this.#items.set(id, { type, key, value: parsed, revision });
      this.#emit({ kind: 'put', type, key, value: parsed, revision });
      return Promise.resolve(revision);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  get(type: string, key: string): Promise<ConfigItem | undefined> {
    try {
      this.#open();
      assertConfigName(type, key);
      const item = this.#items.get(`${type}/${key}`);
      return Promise.resolve(item && copyItem(item));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  list(type?: string): Promise<ConfigItem[]> {
    try {
      this.#open();
      if (type !== undefined) assertConfigName(type);
      return Promise.resolve(this.#snapshot(type));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  delete(type: string, key: string, options: ConfigWriteOptions = {}): Promise<boolean> {
    try {
      this.#open();
      assertConfigName(type, key);
      const id = `${type}/${key}`;
      const existing = this.#items.get(id);
      checkRevision(id, existing?.revision ?? 0, options.ifRevision);
      if (!existing) return Promise.resolve(false);
      this.#items.delete(id);
      const revision = ++this.#revision;
      this.#emit({ kind: 'delete', type, key, revision });
      return Promise.resolve(true);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  watch(options: ConfigWatchOptions = {}): AsyncIterable<ConfigChange> {
    const queue: ChangeQueue<ConfigChange> = new ChangeQueue<ConfigChange>({
      signal: options.signal,
      what: 'MemoryConfigStore.watch',
      onClose: () => this.#watchers.delete(queue),
    });
    if (this.#closed) {
      queue.end();
      return queue;
    }
    if (options.includeExisting) {
      // Oldest write first, as the contract says: a consumer replays them like the live changes.
      for (const item of this.#snapshot().sort((a, b) => a.revision - b.revision)) {
        queue.push({
          kind: 'put',
          type: item.type,
          key: item.key,
          value: item.value,
          revision: item.revision,
        });
      }
    }
    if (!queue.closed) this.#watchers.add(queue);
    return queue;
  }

  revision(): Promise<number> {
    return this.#closed ? Promise.reject(closedError()) : Promise.resolve(this.#revision);
  }

  /** Ends every watch. Idempotent. */
  close(): Promise<void> {
    this.#closed = true;
    for (const w of [...this.#watchers]) w.end();
    this.#watchers.clear();
    return Promise.resolve();
  }

  /** Alias of {@link close}. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  #snapshot(type?: string): ConfigItem[] {
    return [...this.#items.values()]
      .filter((i) => type === undefined || i.type === type)
      .sort((a, b) => (a.type === b.type ? cmp(a.key, b.key) : cmp(a.type, b.type)))
      .map(copyItem);
  }

  #emit(change: ConfigChange): void {
    for (const w of this.#watchers)
      w.push(change.value === undefined ? change : { ...change, value: structuredClone(change.value) });
  }

  #open(): void {
    if (this.#closed) throw closedError();
  }
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function copyItem(item: ConfigItem): ConfigItem {
  return { ...item, value: structuredClone(item.value) };
}

function closedError(): ToolbusError {
  return new ToolbusError('closed', 'MemoryConfigStore is closed; create a new store');
}

/**
 * Enforces `ifRevision` for a conditional write.
 * @throws ToolbusError `config-conflict` naming the item, the expected and the actual revision.
 */
export function checkRevision(id: string, current: number, expected: number | undefined): void {
  if (expected === undefined || expected === current) return;
  throw new ToolbusError(
    'config-conflict',
    `config item '${id}' is at revision ${current}, not ${expected}` +
      (current === 0 ? ' (it does not exist)' : expected === 0 ? ' (expected it not to exist)' : '') +
      '; read it again and retry',
  );
}
