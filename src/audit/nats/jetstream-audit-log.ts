/**
 * @module `JetStreamAuditLog`: the distributed audit log, a JetStream stream (default `TOOLBUS_AUDIT`)
 * that every `toolbus up --nats` process appends to, kept by the stream's own age and size limits.
 *
 * - A call of tool `t` → subject `toolbus.audit.call.t` (a name that is not a subject token →
 *   `toolbus.audit.other`); a denied request → `toolbus.audit.denied` (one naming a tool goes with that tool's calls). The stream takes `toolbus.audit.>`.
 * - Body → the entry's JSON ({@link AuditEntry}, the same shape `GET /api/v1/audit` answers).
 * - Limits → `max_age` and `max_bytes`, `discard: old`: the server drops the oldest entries itself.
 * - A query reads with an ordered consumer (filtered by the tool's subject, from `since`) and keeps the
 *   latest `limit` entries that match.
 */
import type { NatsConnection } from '@nats-io/transport-node';
import {
  DeliverPolicy,
  DiscardPolicy,
  JetStreamApiError,
  RetentionPolicy,
  StorageType,
  jetstream,
  jetstreamManager,
  type JetStreamClient,
  type JetStreamManager,
  type StreamConfig,
} from '@nats-io/jetstream';
import { ToolbusError, isToolbusError, numberOption } from '../../errors/index.js';
import {
  AuditBuffer,
  DEFAULT_AUDIT_MAX_AGE_MS,
  DEFAULT_AUDIT_MAX_BYTES,
  matchesAuditQuery,
  resolveAuditQuery,
  toAuditEntry,
  type AuditBufferOptions,
  type AuditEntry,
  type AuditLog,
  type AuditQuery,
  type AuditStats,
} from '../index.js';
import { connectNats, type NatsConnectOptions } from '../../bus/nats/index.js';

/** The default stream name. */
export const DEFAULT_AUDIT_STREAM = 'TOOLBUS_AUDIT';
/** The default subject prefix: entries go to `<prefix>.call.<tool>` and `<prefix>.denied`. */
export const DEFAULT_AUDIT_SUBJECT_PREFIX = 'toolbus.audit';

const STREAM_NAME = /^[A-Za-z0-9_-]{1,255}$/;
const SUBJECT_PREFIX = /^[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*$/;
const SUBJECT_TOKEN = /^[A-Za-z0-9_-]{1,64}$/;
/** JetStream's "stream name already in use" (with another config). */
const STREAM_NAME_IN_USE = 10058;
const STREAM_NOT_FOUND = 10059;
/** Messages one fetch of a query asks for. */
const FETCH_BATCH = 1000;

/** Options of `new JetStreamAuditLog(connection, options)`. */
export interface JetStreamAuditLogOptions extends AuditBufferOptions {
  /** The stream. @default DEFAULT_AUDIT_STREAM ('TOOLBUS_AUDIT') */
  stream?: string;
  /** Subjects the stream takes are `<subjectPrefix>.>`. @default DEFAULT_AUDIT_SUBJECT_PREFIX ('toolbus.audit') */
  subjectPrefix?: string;
  /** The stream's `max_age`. `Infinity` for none. @default DEFAULT_AUDIT_MAX_AGE_MS (7 days) */
  maxAgeMs?: number;
  /** The stream's `max_bytes`. `Infinity` for none. @default DEFAULT_AUDIT_MAX_BYTES (100 MiB) */
  maxBytes?: number;
  /**
   * Only read an existing stream (`toolbus audit --nats`): the stream is neither created nor updated,
   * and `record` drops what it is given. @default false
   */
  readOnly?: boolean;
  /** Whether {@link JetStreamAuditLog.close} also closes the connection. @default false */
  ownsConnection?: boolean;
}

/** Options of {@link JetStreamAuditLog.connect}: the connection's and the log's. */
export interface JetStreamAuditLogConnectOptions
  extends Omit<JetStreamAuditLogOptions, 'ownsConnection'>, NatsConnectOptions {}

/**
 * An {@link AuditLog} on a JetStream stream. `record` buffers; each batch is published with acks, and
 * entries the server did not acknowledge are retried with the next batch (bounded), counted and told
 * to `onError`. Every process of a distributed toolbus appends to the same stream; any of them (or
 * `toolbus audit --nats`) reads all of it.
 *
 * @example
 * ```ts
 * const log = await JetStreamAuditLog.connect({ servers: 'nats://127.0.0.1:4222', maxAgeMs: 86_400_000 });
 * const tools = new ToolSet([echo], { hooks: auditToolSetHooks(log) });
 * ```
 */
export class JetStreamAuditLog implements AuditLog {
  readonly #connection: NatsConnection;
  readonly #js: JetStreamClient;
  readonly #ready: Promise<JetStreamManager>;
  readonly #buffer: AuditBuffer;
  readonly #stream: string;
  readonly #prefix: string;
  readonly #readOnly: boolean;
  readonly #ownsConnection: boolean;
  #closing: Promise<void> | undefined;

  /**
   * Uses an open connection; the stream is created (or its limits updated) in the background, and a
   * failure there surfaces on the first write or query.
   * @throws ToolbusError `usage` for a bad option.
   */
  constructor(connection: NatsConnection, options: JetStreamAuditLogOptions = {}) {
    this.#stream = checkName(options.stream ?? DEFAULT_AUDIT_STREAM);
    this.#prefix = checkPrefix(options.subjectPrefix ?? DEFAULT_AUDIT_SUBJECT_PREFIX);
    const maxAgeMs = numberOption(
      'JetStreamAuditLog',
      'maxAgeMs',
      options.maxAgeMs,
      DEFAULT_AUDIT_MAX_AGE_MS,
      {
        infinity: true,
      },
    );
    const maxBytes = numberOption(
      'JetStreamAuditLog',
      'maxBytes',
      options.maxBytes,
      DEFAULT_AUDIT_MAX_BYTES,
      {
        integer: true,
        infinity: true,
      },
    );
    this.#readOnly = options.readOnly === true;
    this.#ownsConnection = options.ownsConnection === true;
    this.#connection = connection;
    this.#js = jetstream(connection);
    this.#ready = this.#open(maxAgeMs, maxBytes);
    // Failures surface on the first call; never as an unhandled rejection.
    this.#ready.catch(() => undefined);
    this.#buffer = new AuditBuffer((batch) => this.#publish(batch), options);
  }

  /**
   * Connects, creates or opens the stream, and returns a log that owns the connection. Rejects with
   * `unavailable` (no server, JetStream off), `store-error` (with `readOnly`: no such stream; or the
   * server refused the stream's config), `cancelled` on abort, `usage` for a bad option.
   */
  static async connect(options: JetStreamAuditLogConnectOptions): Promise<JetStreamAuditLog> {
    checkName(options.stream ?? DEFAULT_AUDIT_STREAM);
    checkPrefix(options.subjectPrefix ?? DEFAULT_AUDIT_SUBJECT_PREFIX);
    const connection = await connectNats({ ...options, name: options.name ?? 'toolbus-audit' });
    const log = new JetStreamAuditLog(connection, { ...options, ownsConnection: true });
    try {
      await log.#ready;
      return log;
    } catch (error) {
      await log.close();
      throw error;
    }
  }

  /** The stream's name. */
  get stream(): string {
    return this.#stream;
  }

  record(entry: AuditEntry): void {
    if (this.#readOnly || this.#closing) return;
    this.#buffer.push(entry);
  }

  async query(query?: AuditQuery): Promise<AuditEntry[]> {
    const resolved = resolveAuditQuery(query);
    if (this.#closing) throw new ToolbusError('closed', `audit stream '${this.#stream}' is closed`);
    await this.#buffer.flush();
    const jsm = await this.#ready;
    try {
      const last = (await jsm.streams.info(this.#stream)).state.last_seq;
      if (last === 0) return [];
      const consumer = await this.#js.consumers.get(this.#stream, {
        filter_subjects: resolved.tool === undefined ? `${this.#prefix}.>` : this.#subjectOf(resolved.tool),
        ...(resolved.since === undefined
          ? { deliver_policy: DeliverPolicy.All }
          : {
              deliver_policy: DeliverPolicy.StartTime,
              opt_start_time: new Date(resolved.since).toISOString(),
            }),
      });
      const found: AuditEntry[] = [];
      try {
        let pending = (await consumer.info(true)).num_pending;
        let done = pending === 0;
        while (!done) {
          const messages = await consumer.fetch({
            max_messages: Math.min(pending, FETCH_BATCH),
            expires: 2_000,
          });
          let got = 0;
          for await (const m of messages) {
            got += 1;
            pending = m.info.pending;
            // Entries appended after the query began are left for the next one: the read ends.
            if (m.seq >= last || pending === 0) done = true;
            const entry = parseEntry(m.string());
            if (entry && matchesAuditQuery(entry, resolved)) {
              found.push(entry);
              if (found.length > resolved.limit * 2) found.splice(0, found.length - resolved.limit);
            }
          }
          if (got === 0) done = true;
        }
      } finally {
        await consumer.delete().catch(() => undefined);
      }
      return found.slice(-resolved.limit);
    } catch (error) {
      throw streamError(this.#stream, 'read', error);
    }
  }

  flush(): Promise<void> {
    return this.#buffer.flush();
  }

  stats(): AuditStats {
    return this.#buffer.stats();
  }

  /** Publishes what is buffered (one try), then closes the connection if the log owns it. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      await this.#buffer.close();
      if (this.#ownsConnection) await this.#connection.close().catch(() => undefined);
    })();
    return this.#closing;
  }

  /** Alias of {@link close}. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /** The subject of a tool's calls. */
  #subjectOf(tool: string): string {
    return SUBJECT_TOKEN.test(tool) ? `${this.#prefix}.call.${tool}` : `${this.#prefix}.other`;
  }

  async #publish(batch: readonly AuditEntry[]): Promise<readonly AuditEntry[]> {
    if (this.#readOnly) return [];
    await this.#ready.catch((error: unknown) => {
      throw streamError(this.#stream, 'write', error);
    });
    const acks = await Promise.allSettled(
      batch.map((entry) =>
        this.#js.publish(
          // A denied call of a tool goes with the tool's calls, so a query by tool finds it as SQLite does.
          entry.kind === 'denied' && entry.tool === null
            ? `${this.#prefix}.denied`
            : this.#subjectOf(entry.tool ?? ''),
          JSON.stringify(entry),
        ),
      ),
    );
    const left = batch.filter((_, i) => acks[i]!.status === 'rejected');
    if (left.length === batch.length) {
      throw streamError(this.#stream, 'write', (acks[0] as PromiseRejectedResult).reason);
    }
    return left;
  }

  /** Opens the stream: checks it exists (`readOnly`), else creates it or brings its limits up to date. */
  async #open(maxAgeMs: number, maxBytes: number): Promise<JetStreamManager> {
    let jsm: JetStreamManager;
    try {
      jsm = await jetstreamManager(this.#connection);
    } catch (error) {
      throw streamError(this.#stream, 'open', error);
    }
    try {
      if (this.#readOnly) {
        await jsm.streams.info(this.#stream);
        return jsm;
      }
      const limits: Partial<StreamConfig> = {
        subjects: [`${this.#prefix}.>`],
        max_age: Number.isFinite(maxAgeMs) ? Math.round(maxAgeMs * 1_000_000) : 0,
        max_bytes: Number.isFinite(maxBytes) ? maxBytes : -1,
        discard: DiscardPolicy.Old,
      };
      try {
        await jsm.streams.add({
          name: this.#stream,
          retention: RetentionPolicy.Limits,
          storage: StorageType.File,
          ...limits,
        });
      } catch (error) {
        // Made by another process (or an earlier start) with other limits: this start's limits win.
        if (!(error instanceof JetStreamApiError) || error.code !== STREAM_NAME_IN_USE) throw error;
        await jsm.streams.update(this.#stream, limits);
      }
      return jsm;
    } catch (error) {
      throw streamError(this.#stream, 'open', error);
    }
  }
}

function parseEntry(text: string): AuditEntry | undefined {
  try {
    return toAuditEntry(JSON.parse(text));
  } catch {
    return undefined; // not JSON: someone else's message on our subjects
  }
}

function checkName(name: string): string {
  if (!STREAM_NAME.test(name)) {
    throw new ToolbusError(
      'usage',
      `JetStreamAuditLog: option 'stream' must be letters, digits, '-' and '_', got '${name.slice(0, 100)}'`,
    );
  }
  return name;
}

function checkPrefix(prefix: string): string {
  if (!SUBJECT_PREFIX.test(prefix)) {
    throw new ToolbusError(
      'usage',
      `JetStreamAuditLog: option 'subjectPrefix' must be dot-separated tokens without wildcards, got '${prefix.slice(0, 100)}'`,
    );
  }
  return prefix;
}

/** A JetStream failure as a toolbus error that says which stream and what to do. */
function streamError(stream: string, op: 'open' | 'read' | 'write', error: unknown): ToolbusError {
  if (isToolbusError(error)) return error;
  const detail = error instanceof Error ? error.message : String(error);
  if (error instanceof JetStreamApiError && error.code === STREAM_NOT_FOUND) {
    return new ToolbusError(
      'store-error',
      `there is no audit stream '${stream}' on this NATS server: 'toolbus up --nats' creates it when it starts`,
      { cause: error },
    );
  }
  if (error instanceof JetStreamApiError) {
    return new ToolbusError(
      'store-error',
      `audit stream '${stream}': the server refused to ${op} it (${detail})`,
      {
        cause: error,
      },
    );
  }
  return new ToolbusError(
    'unavailable',
    `audit stream '${stream}' cannot be ${op === 'open' ? 'opened' : op === 'read' ? 'read' : 'written'}: ` +
      `${detail}; expected a nats-server with JetStream enabled (-js)`,
    { cause: error },
  );
}
