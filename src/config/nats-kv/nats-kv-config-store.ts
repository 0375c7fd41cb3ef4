/**
 * @module `NatsKvConfigStore`: the `ConfigStore` on NATS JetStream key-value, shared by every process and
 * machine connected to the same NATS.
 *
 * - Item `type/key` → KV key `<type>.<key>`, each part escaped (see `key-codec.ts`), in one bucket
 *   (default `toolbus-config`, history 1, file storage).
 * - Value → its JSON text. Revision → the KV revision (the stream sequence), so revisions grow across
 *   all writers and `revision()` is the stream's last sequence.
 * - `ifRevision` → `kv.create` (0: must not exist; a deleted item counts as absent) or `kv.update`
 *   (expected last sequence of that key); a mismatch rejects with `config-conflict`.
 * - `delete` writes a KV delete marker, so watchers in other processes see it.
 * - `watch` is a JetStream ordered consumer on the bucket: it sees writes of every process, and the NATS
 *   client re-creates it after a reconnect, resuming where it stopped.
 */
import type { NatsConnection, QueuedIterator } from '@nats-io/transport-node';
import { Kvm, KvWatchInclude, type KV, type KvWatchEntry } from '@nats-io/kv';
import type { JsonValue } from '../../schema/index.js';
import { isToolbusError, numberOption, ToolbusError } from '../../errors/index.js';
import {
  ChangeQueue,
  DEFAULT_WATCH_BUFFER,
  assertConfigName,
  checkRevision,
  parseStoredValue,
  toConfigValue,
  type ConfigChange,
  type ConfigItem,
  type ConfigStore,
  type ConfigWatchOptions,
  type ConfigWriteOptions,
} from '../index.js';
import { fromKvKey, toKvKey, encodeKeyPart } from './key-codec.js';
// The same client family (toolbus/nats): one way to connect, one set of connection errors.
import { connectNats, type NatsConnectOptions } from '../../bus/nats/connect.js';
import { ConnectionState } from '../../bus/nats/connection-state.js';
import { isRevisionConflict, jetStreamStoreError } from '../../bus/nats/jetstream-errors.js';

/** The default bucket name. */
export const DEFAULT_CONFIG_BUCKET = 'toolbus-config';

/** Options of `new NatsKvConfigStore(connectionOrKv, options)`. */
export interface NatsKvConfigStoreOptions {
  /** The KV bucket, created if missing (ignored when a `KV` is passed). @default 'toolbus-config' */
  bucket?: string;
  /** Changes a watch buffers for a slow consumer before it fails with `store-error`. @default 10 000 */
  maxWatchBuffer?: number;
  /** Whether {@link NatsKvConfigStore.close} also closes the NATS connection. @default false */
  ownsConnection?: boolean;
}

/**
 * Options of {@link NatsKvConfigStore.connect}: the connection's ({@link NatsConnectOptions}; the client
 * name defaults to `toolbus-config` here) and the store's.
 */
export interface NatsKvConfigStoreConnectOptions
  extends Omit<NatsKvConfigStoreOptions, 'ownsConnection'>, NatsConnectOptions {}

const BUCKET = /^[A-Za-z0-9_-]+$/;

/**
 * A {@link ConfigStore} on JetStream key-value: hot reload across processes and machines.
 *
 * @example
 * ```ts
 * import { NatsKvConfigStore } from 'toolbus/nats';
 * const store = await NatsKvConfigStore.connect({ servers: 'nats://127.0.0.1:4222' });
 * await store.put('tool', 'tell-joke', { type: 'tool-service', service: 'joke-service' });
 * for await (const change of store.watch()) console.log(change.kind, change.type, change.key);
 * ```
 */
export class NatsKvConfigStore implements ConfigStore {
  readonly #ready: Promise<KV>;
  readonly #connection: NatsConnection | undefined;
  /** The connection's state, when the store was given one (an opened `KV` hides its connection). */
  readonly #state: ConnectionState | undefined;
  readonly #ownsConnection: boolean;
  readonly #maxWatchBuffer: number;
  readonly #bucket: string;
  readonly #watches = new Set<ChangeQueue<ConfigChange>>();
  /** The highest revision this store has seen; a watch starts right after it. */
  #lastKnown = 0;
  #closed = false;
  #closing: Promise<void> | undefined;

  /**
   * Uses an open NATS connection (the bucket is created if missing) or an opened `KV`.
   * @throws ToolbusError `invalid-config` for a bad bucket name or `maxWatchBuffer`.
   */
  constructor(connectionOrKv: NatsConnection | KV, options: NatsKvConfigStoreOptions = {}) {
    this.#maxWatchBuffer = checkMaxWatchBuffer(options.maxWatchBuffer ?? DEFAULT_WATCH_BUFFER);
    this.#ownsConnection = options.ownsConnection ?? false;
    this.#bucket = checkBucket(options.bucket ?? DEFAULT_CONFIG_BUCKET);
    let kv: Promise<KV>;
    if (isConnection(connectionOrKv)) {
      this.#connection = connectionOrKv;
      this.#state = new ConnectionState(connectionOrKv);
      kv = new Kvm(connectionOrKv).create(this.#bucket, { history: 1 });
    } else {
      kv = Promise.resolve(connectionOrKv);
    }
    this.#ready = kv
      .then(async (bucket) => {
        this.#see((await bucket.status()).streamInfo.state.last_seq);
        return bucket;
      })
      .catch((error: unknown) => {
        throw jetStreamStoreError(error, `cannot open the config bucket '${this.#bucket}'`);
      });
    // Failures surface on the first call; never as an unhandled rejection.
    this.#ready.catch(() => undefined);
  }

  /**
   * Connects to NATS, creates or opens the bucket and returns a store that owns the connection.
   * Rejects with `unavailable` (no server, or JetStream not enabled), `cancelled` on abort,
   * `invalid-config` (bad bucket name or `maxWatchBuffer`, before connecting).
   */
  static async connect(options: NatsKvConfigStoreConnectOptions): Promise<NatsKvConfigStore> {
    const { signal } = options;
    const cancelled = (): ToolbusError =>
      isToolbusError(signal?.reason)
        ? (signal?.reason as ToolbusError)
        : new ToolbusError('cancelled', 'connecting to the NATS config store was cancelled', {
            cause: signal?.reason,
          });
    if (signal?.aborted) throw cancelled();
    checkBucket(options.bucket ?? DEFAULT_CONFIG_BUCKET);
    // Before connecting: the constructor throwing after it would leave the connection open.
    checkMaxWatchBuffer(options.maxWatchBuffer ?? DEFAULT_WATCH_BUFFER);
    const connection = await connectNats({ ...options, name: options.name ?? 'toolbus-config' });
    const store = new NatsKvConfigStore(connection, {
      bucket: options.bucket,
      maxWatchBuffer: options.maxWatchBuffer,
      ownsConnection: true,
    });
    try {
      if (signal?.aborted) throw cancelled();
      await store.#ready;
      if (signal?.aborted) throw cancelled();
      return store;
    } catch (error) {
      await store.close();
      throw error;
    }
  }

  /** The bucket name. */
  get bucket(): string {
    return this.#bucket;
  }

  /** Writes an item; rejects with `invalid-config`, `config-conflict`, `closed` or `store-error`. */
  async put(
    type: string,
    key: string,
    value: string | JsonValue,
    options: ConfigWriteOptions = {},
  ): Promise<number> {
    const kv = await this.#open();
    assertConfigName(type, key);
    const data = JSON.stringify(toConfigValue(type, key, value));
    const kvKey = toKvKey(type, key);
    const expected = options.ifRevision;
    try {
      let revision: number;
      if (expected === undefined) revision = await kv.put(kvKey, data);
      else if (expected === 0) revision = await kv.create(kvKey, data);
      else revision = await kv.update(kvKey, data, expected);
      return this.#see(revision);
    } catch (error) {
      if (expected !== undefined && isRevisionConflict(error)) {
        const id = `${type}/${key}`;
        const current = (await this.get(type, key).catch(() => undefined))?.revision ?? 0;
        checkRevision(id, current, expected);
        throw new ToolbusError(
          'config-conflict',
          `config item '${id}' changed while it was written (expected revision ${expected}); read it again and retry`,
          { cause: error },
        );
      }
      throw jetStreamStoreError(error, `cannot write config item '${type}/${key}'`);
    }
  }

  /** Reads an item; resolves undefined when it does not exist. */
  async get(type: string, key: string): Promise<ConfigItem | undefined> {
    const kv = await this.#open();
    assertConfigName(type, key);
    try {
      const entry = await kv.get(toKvKey(type, key));
      if (entry === null || entry.operation !== 'PUT') return undefined;
      this.#see(entry.revision);
      return {
        type,
        key,
        value: parseStoredValue(entry.string(), type, key, "'nats kv put'"),
        revision: entry.revision,
      };
    } catch (error) {
      throw jetStreamStoreError(error, `cannot read config item '${type}/${key}'`);
    }
  }

  /** Every item of one type (or all), sorted by type, then key. */
  async list(type?: string): Promise<ConfigItem[]> {
    const kv = await this.#open();
    if (type !== undefined) assertConfigName(type);
    try {
      const keys: string[] = [];
      const iterator = await kv.keys(type === undefined ? '>' : `${encodeKeyPart(type)}.*`);
      for await (const kvKey of iterator) keys.push(kvKey);
      const items = await Promise.all(
        keys.map(async (kvKey): Promise<ConfigItem | undefined> => {
          const name = fromKvKey(kvKey);
          if (!name) return undefined;
          const entry = await kv.get(kvKey);
          if (entry === null || entry.operation !== 'PUT') return undefined;
          this.#see(entry.revision);
          return {
            ...name,
            value: parseStoredValue(entry.string(), name.type, name.key, "'nats kv put'"),
            revision: entry.revision,
          };
        }),
      );
      return items
        .filter((item): item is ConfigItem => item !== undefined)
        .sort((a, b) => (a.type === b.type ? compare(a.key, b.key) : compare(a.type, b.type)));
    } catch (error) {
      throw jetStreamStoreError(
        error,
        `cannot list config items${type === undefined ? '' : ` of type '${type}'`}`,
      );
    }
  }

  /** Deletes an item; resolves true if it existed. Rejects like {@link put}. */
  async delete(type: string, key: string, options: ConfigWriteOptions = {}): Promise<boolean> {
    await this.#open();
    assertConfigName(type, key);
    const kv = await this.#ready;
    const kvKey = toKvKey(type, key);
    // Delete exactly the revision we read, so `true` means this call removed an existing item.
    for (let attempt = 0; attempt < 100; attempt++) {
      const current = await this.get(type, key);
      checkRevision(`${type}/${key}`, current?.revision ?? 0, options.ifRevision);
      if (current === undefined) return false;
      try {
        await kv.delete(kvKey, { previousSeq: current.revision });
        return true;
      } catch (error) {
        // Changed meanwhile: read again (checkRevision then reports a conditional delete's conflict).
        if (!isRevisionConflict(error))
          throw jetStreamStoreError(error, `cannot delete config item '${type}/${key}'`);
      }
    }
    throw new ToolbusError('store-error', `cannot delete config item '${type}/${key}': it keeps changing`);
  }

  /**
   * Changes made by any process, in revision order. Without `includeExisting` the watch starts right
   * after the latest revision this store has seen (writes it made, reads, or the bucket state when it
   * opened), so a change written after `watch()` returns is never missed. Buffers up to `maxWatchBuffer`
   * changes for a slow consumer, then fails with `store-error`. An item whose stored text is not JSON
   * (written around toolbus) fails the watch, as it fails `list`, with `store-error` naming the item.
   */
  watch(options: ConfigWatchOptions = {}): AsyncIterable<ConfigChange> {
    let iterator: QueuedIterator<KvWatchEntry> | undefined;
    const queue: ChangeQueue<ConfigChange> = new ChangeQueue<ConfigChange>({
      signal: options.signal,
      maxBuffered: this.#maxWatchBuffer,
      what: `NatsKvConfigStore.watch (bucket '${this.#bucket}')`,
      onClose: () => {
        this.#watches.delete(queue);
        iterator?.stop();
      },
    });
    if (this.#closed) {
      queue.end();
      return queue;
    }
    this.#watches.add(queue);
    const resumeFrom = this.#lastKnown + 1;
    void (async () => {
      try {
        const kv = await this.#ready;
        const opened = await kv.watch(
          options.includeExisting
            ? { include: KvWatchInclude.LastValue }
            : { include: KvWatchInclude.AllHistory, resumeFromRevision: resumeFrom },
        );
        if (queue.closed) {
          opened.stop();
          return;
        }
        iterator = opened;
        for await (const entry of opened) {
          const name = fromKvKey(entry.key);
          if (!name) continue;
          this.#see(entry.revision);
          if (entry.operation === 'PUT') {
            // Text that is not JSON (e.g. a typo in `nats kv put`) fails the watch naming the item, as
            // list() does: skipping it would leave watchers on the item's old value without a word.
            const value = parseStoredValue(entry.string(), name.type, name.key, "'nats kv put'");
            queue.push({ kind: 'put', ...name, value, revision: entry.revision });
          } else if (entry.isUpdate || !options.includeExisting) {
            // A delete marker among the existing items is an absent item, not a change.
            queue.push({ kind: 'delete', ...name, revision: entry.revision });
          }
        }
        queue.end();
      } catch (error) {
        queue.fail(jetStreamStoreError(error, `config watch on bucket '${this.#bucket}' failed`));
      }
    })();
    return queue;
  }

  /** The latest revision of the bucket (its stream's last sequence). */
  async revision(): Promise<number> {
    const kv = await this.#open();
    try {
      return this.#see((await kv.status()).streamInfo.state.last_seq);
    } catch (error) {
      throw jetStreamStoreError(error, `cannot read the revision of bucket '${this.#bucket}'`);
    }
  }

  /** Ends every watch and, when the store owns it, closes the connection. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      this.#closed = true;
      for (const watch of [...this.#watches]) watch.end();
      this.#watches.clear();
      if (this.#ownsConnection && this.#connection && !this.#connection.isClosed()) {
        await this.#connection.close().catch(() => undefined);
      }
    })();
    return this.#closing;
  }

  /** Alias of {@link close}. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  async #open(): Promise<KV> {
    if (this.#closed) throw closedError(this.#bucket);
    // While the broker is gone nats.js would hold the request until a reconnect or its timeout.
    if (this.#state?.downForMs !== undefined) {
      throw new ToolbusError(
        'unavailable',
        `config store (bucket '${this.#bucket}') is unavailable: ${this.#state.describeOutage()}; it ` +
          `reconnects by itself, so try again once the broker is back`,
      );
    }
    const kv = await this.#ready;
    if (this.#closed) throw closedError(this.#bucket);
    return kv;
  }

  #see(revision: number): number {
    if (revision > this.#lastKnown) this.#lastKnown = revision;
    return revision;
  }
}

function checkBucket(bucket: string): string {
  if (BUCKET.test(bucket)) return bucket;
  throw new ToolbusError(
    'invalid-config',
    `KV bucket '${bucket}' is not valid: expected a name of [A-Za-z0-9_-], e.g. 'toolbus-config'`,
  );
}

/**
 * `maxWatchBuffer` must be an integer >= 1: 0 or a negative value fails every watch on its first
 * buffered change, and NaN never trips the limit, so a stuck consumer buffers without end.
 */
function checkMaxWatchBuffer(value: number): number {
  return numberOption('NatsKvConfigStore', 'maxWatchBuffer', value, value, { integer: true });
}

function isConnection(value: NatsConnection | KV): value is NatsConnection {
  return typeof (value as NatsConnection).subscribe === 'function';
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function closedError(bucket: string): ToolbusError {
  return new ToolbusError('closed', `NatsKvConfigStore (bucket '${bucket}') is closed; open a new store`);
}
