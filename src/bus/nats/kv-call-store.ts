/**
 * @module `NatsKvCallStore`: durable call states in a JetStream key-value bucket, shared by every
 * process connected to the same NATS.
 *
 * - Record of call `id` → KV key `call.<id>`; claim of an idempotency key → `claim.<service>.<key>`,
 *   each part escaped (`encodeKeyPart`), so any id is a valid key and never reads as a separator.
 * - Revision → the KV revision (the stream sequence): it grows across the bucket and its writers.
 * - `put` at 0 → `kv.create`, else `kv.update` at that revision; a mismatch resolves undefined.
 * - Expiry → the bucket's max age (`ttlMs`): the server drops a record that long after its last write
 *   (history 1). nats-server before 2.11 has no per-message TTL, so the bucket's is the only one.
 * - `watch` → `kv.watch` of one key, an ordered consumer the client re-creates after a reconnect.
 */
import type { NatsConnection, QueuedIterator } from '@nats-io/transport-node';
import { StorageType } from '@nats-io/jetstream';
import { Kvm, type KV, type KvWatchEntry } from '@nats-io/kv';
import { numberOption, ToolbusError } from '../../errors/index.js';
import { isRevisionConflict, jetStreamStoreError } from './jetstream-errors.js';
import {
  DEFAULT_CALL_RESULT_TTL_MS,
  FINAL_CALL_STATUSES,
  type CallRecord,
  type CallStore,
  type StoredCall,
} from '../index.js';
import { encodeKeyPart } from '../../config/nats-kv/index.js';
import { ConnectionState } from './connection-state.js';

/** The default bucket of call states. */
export const DEFAULT_CALL_BUCKET = 'toolbus-calls';

/** Options of `new NatsKvCallStore(connection, options)`. */
export interface NatsKvCallStoreOptions {
  /** The KV bucket, created if missing (an existing one is used as it is). @default 'toolbus-calls' */
  bucket?: string;
  /**
   * How long a record or claim is kept after its last write: the max age of a bucket this store
   * creates. @default DEFAULT_CALL_RESULT_TTL_MS (24 h)
   */
  ttlMs?: number;
  /** Replicas of a bucket this store creates (1, 3 or 5). @default 1 */
  replicas?: number;
  /** Whether {@link NatsKvCallStore.close} also closes the NATS connection. @default false */
  ownsConnection?: boolean;
}

const BUCKET = /^[A-Za-z0-9_-]+$/;

/**
 * A {@link CallStore} on JetStream key-value: a call's state and result outlive its caller and are
 * readable from any process. The bucket is created (or opened) by the first operation.
 *
 * Errors: `unavailable` (disconnected, JetStream not enabled or not answering), `store-error` (anything
 * else the server refused), `closed`, `invalid-config` (a bad bucket name), `usage` (a bad option).
 *
 * @example
 * ```ts
 * import { NatsKvCallStore, connectNats } from 'toolbus/nats';
 * const store = new NatsKvCallStore(await connectNats({ servers: 'nats://127.0.0.1:4222' }), {
 *   ownsConnection: true,
 * });
 * const revision = await store.put(record, 0); // undefined: it exists already
 * ```
 */
export class NatsKvCallStore implements CallStore {
  readonly ttlMs: number;
  readonly #connection: NatsConnection;
  readonly #state: ConnectionState;
  readonly #bucket: string;
  readonly #replicas: number;
  readonly #ownsConnection: boolean;
  readonly #watchers = new Set<QueuedIterator<KvWatchEntry>>();
  #kv: Promise<KV> | undefined;
  #closed = false;
  #closing: Promise<void> | undefined;

  /** Uses an open NATS connection. @throws ToolbusError `invalid-config` or `usage` for a bad option. */
  constructor(connection: NatsConnection, options: NatsKvCallStoreOptions = {}) {
    this.ttlMs = numberOption('NatsKvCallStore', 'ttlMs', options.ttlMs, DEFAULT_CALL_RESULT_TTL_MS);
    this.#replicas = numberOption('NatsKvCallStore', 'replicas', options.replicas, 1, { integer: true });
    this.#bucket = checkBucket(options.bucket ?? DEFAULT_CALL_BUCKET);
    this.#ownsConnection = options.ownsConnection ?? false;
    this.#connection = connection;
    this.#state = new ConnectionState(connection);
  }

  /** The bucket name. */
  get bucket(): string {
    return this.#bucket;
  }

  async get(id: string): Promise<StoredCall | undefined> {
    const kv = await this.#open();
    try {
      const entry = await kv.get(recordKey(id));
      return entry === null || entry.operation !== 'PUT' ? undefined : this.#stored(id, entry);
    } catch (error) {
      throw jetStreamStoreError(error, `cannot read call '${id}'`);
    }
  }

  async put(record: CallRecord, revision: number): Promise<number | undefined> {
    const kv = await this.#open();
    const data = JSON.stringify(record);
    const key = recordKey(record.id);
    try {
      return revision === 0 ? await kv.create(key, data) : await kv.update(key, data, revision);
    } catch (error) {
      if (isRevisionConflict(error)) return undefined;
      throw jetStreamStoreError(error, `cannot write call '${record.id}'`);
    }
  }

  async claim(service: string, key: string, id: string): Promise<string> {
    const kv = await this.#open();
    const kvKey = `claim.${keyPart(service)}.${keyPart(key)}`;
    // A holder that expires between a failed create and the read leaves nothing to read: try again.
    for (let attempt = 0; attempt < 10; attempt++) {
      try {
        await kv.create(kvKey, id);
        return id;
      } catch (error) {
        if (!isRevisionConflict(error))
          throw jetStreamStoreError(error, `cannot claim '${key}' of ${service}`);
      }
      try {
        const held = await kv.get(kvKey);
        if (held !== null && held.operation === 'PUT') return held.string();
      } catch (error) {
        throw jetStreamStoreError(error, `cannot read the claim of '${key}' of ${service}`);
      }
    }
    throw new ToolbusError('store-error', `cannot claim '${key}' of ${service}: it keeps changing`);
  }

  /**
   * Yields the record now (when it exists) and after each change, until it is final, `signal` aborts or
   * the store closes. Survives reconnects; rejects with `store-error` when the watch fails otherwise.
   */
  async *watch(id: string, signal: AbortSignal): AsyncIterable<StoredCall> {
    if (signal.aborted) return;
    const kv = await this.#open();
    let iterator: QueuedIterator<KvWatchEntry>;
    try {
      iterator = await kv.watch({ key: recordKey(id) });
    } catch (error) {
      throw jetStreamStoreError(error, `cannot watch call '${id}'`);
    }
    // Stopping the iterator ends the for-await below, wherever it waits.
    const stop = (): void => iterator.stop();
    this.#watchers.add(iterator);
    signal.addEventListener('abort', stop, { once: true });
    try {
      if (signal.aborted || this.#closed) return;
      let seen = -1;
      for await (const entry of iterator) {
        if (entry.operation !== 'PUT' || entry.revision <= seen) continue;
        seen = entry.revision;
        const stored = this.#stored(id, entry);
        yield stored;
        if (FINAL_CALL_STATUSES.has(stored.record.status)) return;
      }
    } catch (error) {
      if (signal.aborted || this.#closed) return;
      throw jetStreamStoreError(error, `the watch of call '${id}' failed`);
    } finally {
      signal.removeEventListener('abort', stop);
      this.#watchers.delete(iterator);
      iterator.stop();
    }
  }

  /** Ends every watch and, when the store owns it, closes the connection. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      this.#closed = true;
      for (const iterator of this.#watchers) iterator.stop();
      this.#watchers.clear();
      if (this.#ownsConnection && !this.#connection.isClosed()) {
        await this.#connection.close().catch(() => undefined);
      }
    })();
    return this.#closing;
  }

  /** Alias of {@link close}. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /** The bucket, created on the first call; a failed creation is tried again by the next call. */
  async #open(): Promise<KV> {
    if (this.#closed) throw closedError(this.#bucket);
    // While the broker is gone nats.js would hold the request until a reconnect or its timeout.
    if (this.#state.downForMs !== undefined) {
      throw new ToolbusError(
        'unavailable',
        `call store (bucket '${this.#bucket}') is unavailable: ${this.#state.describeOutage()}; it ` +
          'reconnects by itself, so try again once the broker is back',
      );
    }
    if (!this.#kv) {
      // An existing bucket is opened as it is, whatever its max age: Kvm.create does not change it.
      const kv = new Kvm(this.#connection)
        .create(this.#bucket, {
          history: 1,
          ttl: this.ttlMs,
          replicas: this.#replicas,
          storage: StorageType.File,
        })
        .catch((error: unknown) => {
          if (this.#kv === kv) this.#kv = undefined;
          throw jetStreamStoreError(error, `cannot open the call bucket '${this.#bucket}'`);
        });
      this.#kv = kv;
    }
    const kv = await this.#kv;
    if (this.#closed) throw closedError(this.#bucket);
    return kv;
  }

  #stored(id: string, entry: { string(): string; revision: number }): StoredCall {
    try {
      return { record: JSON.parse(entry.string()) as CallRecord, revision: entry.revision };
    } catch (error) {
      throw new ToolbusError(
        'store-error',
        `call '${id}' in bucket '${this.#bucket}' is not JSON (written around toolbus?)`,
        { cause: error },
      );
    }
  }
}

function recordKey(id: string): string {
  return `call.${keyPart(id)}`;
}

/** One escaped key token; `=` for an empty part (no token may be empty, and no escape is a bare `=`). */
function keyPart(part: string): string {
  return part === '' ? '=' : encodeKeyPart(part);
}

function checkBucket(bucket: string): string {
  if (BUCKET.test(bucket)) return bucket;
  throw new ToolbusError(
    'invalid-config',
    `KV bucket '${bucket}' is not valid: expected a name of [A-Za-z0-9_-], e.g. '${DEFAULT_CALL_BUCKET}'`,
  );
}

function closedError(bucket: string): ToolbusError {
  return new ToolbusError('closed', `NatsKvCallStore (bucket '${bucket}') is closed; open a new store`);
}
