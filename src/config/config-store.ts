/**
 * @module The `ConfigStore` contract: typed items addressed as `type/key`, with revisions and a watch.
 */
import type { JsonValue } from '../schema/index.js';

/** One stored item. */
export interface ConfigItem {
  /** E.g. `tool-service`, `tool`, `mcp`. */
  type: string;
  /** E.g. `joke-service`, `tell-joke`. */
  key: string;
  /** The parsed JSON value. */
  value: JsonValue;
  /** The store revision at which this item was last written. */
  revision: number;
}

/** A change seen by {@link ConfigStore.watch}. */
export interface ConfigChange {
  kind: 'put' | 'delete';
  type: string;
  key: string;
  /** The new value for `put`; undefined for `delete`. */
  value?: JsonValue;
  /** The store revision of this change. */
  revision: number;
}

/** Options of {@link ConfigStore.put} and {@link ConfigStore.delete}. */
export interface ConfigWriteOptions {
  /**
   * Write only if the item's current revision is exactly this (0: only if the item does not exist).
   * Otherwise the write rejects with code `config-conflict`. @default undefined (unconditional)
   */
  ifRevision?: number;
}

/** Options of {@link ConfigStore.watch}. */
export interface ConfigWatchOptions {
  /** Ends the iteration. @default none */
  signal?: AbortSignal;
  /**
   * First yield a `put` for every existing item, in revision order (oldest write first, not sorted by
   * key), as a consumer replaying changes expects. @default false
   */
  includeExisting?: boolean;
}

/**
 * Where tool descriptors and other config live. Backends: `MemoryConfigStore`, `SqliteConfigStore`
 * (`toolbus/sqlite`, the embedded default), `NatsKvConfigStore` (`toolbus/nats`).
 *
 * A value is JSON: pass a parsed value, or JSON text as a string — a string is always parsed as JSON
 * text, and bad text rejects with code `invalid-config` and the position of the error.
 */
export interface ConfigStore {
  /** Writes an item and resolves with the new revision. */
  put(type: string, key: string, value: string | JsonValue, options?: ConfigWriteOptions): Promise<number>;
  get(type: string, key: string): Promise<ConfigItem | undefined>;
  /** Every item of one type, or of all types; sorted by type, then key. */
  list(type?: string): Promise<ConfigItem[]>;
  /** Resolves true if the item existed. */
  delete(type: string, key: string, options?: ConfigWriteOptions): Promise<boolean>;
  /** Changes in revision order, as they happen. One consumer per iterable. */
  watch(options?: ConfigWatchOptions): AsyncIterable<ConfigChange>;
  /** The latest revision of the whole store. */
  revision(): Promise<number>;
  /** Idempotent. */
  close(): Promise<void>;
}
