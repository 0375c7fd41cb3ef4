/**
 * @module `SqliteAuditLog`: the embedded audit log, one SQLite file of its own (`$TOOLBUS_HOME/audit.db`)
 * in WAL mode. Entries are written in batches off the call path, and the file is kept within an age and
 * a size limit.
 */
import { closeSync, existsSync, mkdirSync, openSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { ToolbusError, numberOption } from '../../errors/index.js';
import {
  AuditBuffer,
  DEFAULT_AUDIT_MAX_AGE_MS,
  DEFAULT_AUDIT_MAX_BYTES,
  resolveAuditQuery,
  type AuditBufferOptions,
  type AuditEntry,
  type AuditKind,
  type AuditLog,
  type AuditQuery,
  type AuditStats,
} from '../index.js';

/** How often retention runs at most (after a write), by default. */
export const DEFAULT_AUDIT_PRUNE_MS = 10_000;
/**
 * How long a write waits for another process's lock, by default. Short on purpose: better-sqlite3 waits
 * synchronously, and the process serves calls meanwhile; a write that gives up is retried.
 */
export const DEFAULT_AUDIT_BUSY_TIMEOUT_MS = 100;
/** The smallest size limit accepted (64 KiB): an empty file with its indexes takes a few pages. */
export const MIN_AUDIT_MAX_BYTES = 64 * 1024;
const SCHEMA_VERSION = 1;

/** Options of {@link SqliteAuditLog}. */
export interface SqliteAuditLogOptions extends AuditBufferOptions {
  /** The database file. @default `<home>/audit.db` */
  path?: string;
  /** The toolbus home directory. @default `$TOOLBUS_HOME`, else `./.toolbus` */
  home?: string;
  /** Entries older than this are pruned. `Infinity` keeps them. @default DEFAULT_AUDIT_MAX_AGE_MS (7 days) */
  maxAgeMs?: number;
  /**
   * The file's data is kept under this many bytes: the oldest entries are pruned first. At least
   * {@link MIN_AUDIT_MAX_BYTES}; `Infinity` for no limit. @default DEFAULT_AUDIT_MAX_BYTES (100 MiB)
   */
  maxBytes?: number;
  /** Retention runs after a write at most this often. @default DEFAULT_AUDIT_PRUNE_MS (10 000) */
  pruneMs?: number;
  /** How long a write waits for another process's lock. @default DEFAULT_AUDIT_BUSY_TIMEOUT_MS (100) */
  busyTimeoutMs?: number;
  /**
   * Open an existing file only to read it (`toolbus audit`): nothing is created, pruned or written, and
   * `record` drops what it is given. @default false
   */
  readOnly?: boolean;
  /** The clock. @default Date.now */
  now?: () => number;
}

interface Row {
  id: number;
  time_ms: number;
  kind: AuditKind;
  caller: string;
  user: string | null;
  tool: string | null;
  call_id: string | null;
  outcome: string;
  duration_ms: number;
  args_bytes: number;
  args_sha256: string | null;
  args: string | null;
  method: string | null;
  path: string | null;
  status: number | null;
}

type InsertParams = [
  number,
  string,
  string,
  string | null,
  string | null,
  string | null,
  string,
  number,
  number,
  string | null,
  string | null,
  string | null,
  string | null,
  number | null,
];

/**
 * An {@link AuditLog} in a SQLite file (`better-sqlite3`, WAL, prepared statements). `record` buffers;
 * batches are written on a short timer (`flushMs`) or once `batchSize` entries wait, in one transaction
 * each. A failed write (a full disk, a lock held too long) is counted, told to `onError` and retried
 * with the next batch; calls never see it. Retention deletes entries older than `maxAgeMs` and, while the
 * data is over `maxBytes`, the oldest ones, and gives the freed pages back to the file system.
 *
 * @example
 * ```ts
 * import { SqliteAuditLog } from './audit/sqlite/index.js';
 * const log = new SqliteAuditLog({ home: '.toolbus', maxAgeMs: 24 * 3600_000 });
 * const tools = new ToolSet([echo], { hooks: auditToolSetHooks(log) });
 * ```
 */
export class SqliteAuditLog implements AuditLog {
  /** The absolute path of the database file. */
  readonly path: string;
  readonly #name: string;
  readonly #db: Database.Database;
  readonly #insertAll: (batch: readonly AuditEntry[]) => void;
  readonly #queries = new Map<string, Database.Statement<unknown[], Row>>();
  readonly #buffer: AuditBuffer;
  readonly #maxAgeMs: number;
  readonly #maxBytes: number;
  readonly #pruneMs: number;
  readonly #readOnly: boolean;
  readonly #now: () => number;
  #lastPrune = Number.NEGATIVE_INFINITY;
  #closing: Promise<void> | undefined;

  /**
   * Opens (and unless `readOnly`, creates) the file.
   * @throws ToolbusError `store-error` when it cannot be opened (the message names the file, not its
   * folder); `usage` for a bad option.
   */
  constructor(options: SqliteAuditLogOptions = {}) {
    this.path = resolve(
      options.path ?? join(options.home ?? process.env.TOOLBUS_HOME ?? '.toolbus', 'audit.db'),
    );
    this.#name = basename(this.path);
    this.#maxAgeMs = numberOption('SqliteAuditLog', 'maxAgeMs', options.maxAgeMs, DEFAULT_AUDIT_MAX_AGE_MS, {
      infinity: true,
    });
    this.#maxBytes = numberOption('SqliteAuditLog', 'maxBytes', options.maxBytes, DEFAULT_AUDIT_MAX_BYTES, {
      min: MIN_AUDIT_MAX_BYTES,
      infinity: true,
    });
    this.#pruneMs = numberOption('SqliteAuditLog', 'pruneMs', options.pruneMs, DEFAULT_AUDIT_PRUNE_MS, {
      zero: true,
    });
    const busyTimeoutMs = numberOption(
      'SqliteAuditLog',
      'busyTimeoutMs',
      options.busyTimeoutMs,
      DEFAULT_AUDIT_BUSY_TIMEOUT_MS,
      { integer: true, zero: true, max: 2 ** 31 - 1 },
    );
    this.#readOnly = options.readOnly === true;
    this.#now = options.now ?? Date.now;
    this.#db = this.#open(busyTimeoutMs);
    const insert = this.#db.prepare<InsertParams>(
      'INSERT INTO audit (time_ms, kind, caller, user, tool, call_id, outcome, duration_ms, args_bytes, ' +
        'args_sha256, args, method, path, status) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
    );
    const insertAll = this.#db.transaction((batch: readonly AuditEntry[]) => {
      for (const e of batch) {
        insert.run(
          timeOf(e.time, this.#now),
          e.kind,
          e.caller,
          e.user,
          e.tool,
          e.callId,
          e.outcome,
          e.durationMs,
          e.argsBytes,
          e.argsSha256,
          e.args ?? null,
          e.request?.method ?? null,
          e.request?.path ?? null,
          e.request?.status ?? null,
        );
      }
    });
    this.#insertAll = (batch) => insertAll.immediate(batch);
    this.#buffer = new AuditBuffer((batch) => this.#write(batch), options);
    if (!this.#readOnly) this.#pruneIfDue();
  }

  record(entry: AuditEntry): void {
    this.#buffer.push(entry);
  }

  async query(query?: AuditQuery): Promise<AuditEntry[]> {
    const resolved = resolveAuditQuery(query);
    if (this.#closing) throw new ToolbusError('closed', `audit log '${this.#name}' is closed`);
    await this.#buffer.flush();
    // Entries past the age limit that the next prune would remove are not shown meanwhile.
    const ageBound =
      this.#readOnly || !Number.isFinite(this.#maxAgeMs) ? undefined : this.#now() - this.#maxAgeMs;
    const since =
      resolved.since === undefined ? ageBound : Math.max(resolved.since, ageBound ?? resolved.since);
    const params: unknown[] = [];
    const where: string[] = [];
    if (since !== undefined) {
      where.push('time_ms >= ?');
      params.push(since);
    }
    if (resolved.tool !== undefined) {
      where.push('tool = ?');
      params.push(resolved.tool);
    }
    if (resolved.user !== undefined) {
      where.push('user = ?');
      params.push(resolved.user);
    }
    const key = where.join(' AND ');
    let statement = this.#queries.get(key);
    try {
      if (!statement) {
        statement = this.#db.prepare<unknown[], Row>(
          `SELECT * FROM audit ${key ? `WHERE ${key}` : ''} ORDER BY id DESC LIMIT ?`,
        );
        this.#queries.set(key, statement);
      }
      return statement
        .all(...params, resolved.limit)
        .reverse()
        .map(toEntry);
    } catch (error) {
      throw storeError(this.#name, 'read', error);
    }
  }

  flush(): Promise<void> {
    return this.#buffer.flush();
  }

  stats(): AuditStats {
    return this.#buffer.stats();
  }

  /**
   * Applies retention now: deletes entries older than `maxAgeMs`, then the oldest while the data is over
   * `maxBytes`. Returns how many entries were deleted.
   * @throws ToolbusError `store-error` when the file cannot be written.
   */
  prune(): number {
    if (this.#readOnly) return 0;
    try {
      this.#lastPrune = this.#now();
      let deleted = 0;
      if (Number.isFinite(this.#maxAgeMs)) {
        deleted += this.#db
          .prepare('DELETE FROM audit WHERE time_ms < ?')
          .run(this.#now() - this.#maxAgeMs).changes;
      }
      if (Number.isFinite(this.#maxBytes)) {
        // Freed pages join the free list at once, so the used size drops as rows go; a few rounds
        // converge even though indexes do not shrink in proportion.
        for (let round = 0; round < 8 && this.#usedBytes() > this.#maxBytes; round += 1) {
          const used = this.#usedBytes();
          const count = (this.#db.prepare('SELECT count(*) AS n FROM audit').get() as { n: number }).n;
          if (count === 0) break;
          const target = this.#maxBytes * 0.9;
          const excess = Math.min(count, Math.max(1, Math.ceil((count * (used - target)) / used)));
          deleted += this.#db
            .prepare('DELETE FROM audit WHERE id IN (SELECT id FROM audit ORDER BY id LIMIT ?)')
            .run(excess).changes;
        }
      }
      if (deleted > 0) this.#db.pragma('incremental_vacuum');
      return deleted;
    } catch (error) {
      throw storeError(this.#name, 'write', error);
    }
  }

  /** Writes what is buffered (one try), then closes the file. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      await this.#buffer.close();
      try {
        this.#db.close();
      } catch {
        // already closed: nothing left to release
      }
    })();
    return this.#closing;
  }

  /** Alias of {@link close}. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  #write(batch: readonly AuditEntry[]): void {
    if (this.#readOnly) return;
    try {
      this.#insertAll(batch);
    } catch (error) {
      throw storeError(this.#name, 'write', error);
    }
    // A failing prune must not count the written batch as failed; the next due prune tries again.
    try {
      this.#pruneIfDue();
    } catch {
      // reported by the next write that fails, if the file is really unwritable
    }
  }

  #pruneIfDue(): void {
    if (this.#now() - this.#lastPrune >= this.#pruneMs) this.prune();
  }

  /** Bytes of the file's pages in use (what retention keeps under `maxBytes`). */
  #usedBytes(): number {
    const pages = this.#db.pragma('page_count', { simple: true }) as number;
    const free = this.#db.pragma('freelist_count', { simple: true }) as number;
    const size = this.#db.pragma('page_size', { simple: true }) as number;
    return (pages - free) * size;
  }

  #open(busyTimeoutMs: number): Database.Database {
    const path = this.path;
    let db: Database.Database | undefined;
    try {
      if (this.#readOnly) {
        if (!existsSync(path)) {
          throw new ToolbusError(
            'store-error',
            `there is no audit log '${this.#name}' in that folder: 'toolbus up' creates it in its home ` +
              '($TOOLBUS_HOME, ./.toolbus by default) when it starts',
          );
        }
      } else {
        // The log may hold arguments: only the owner reads it (the -wal and -shm files get the same mode).
        mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
        if (!existsSync(path)) closeSync(openSync(path, 'a', 0o600));
      }
      if (statSync(path).isDirectory()) {
        throw new ToolbusError(
          'store-error',
          `audit log '${this.#name}' is a directory, not a database file`,
        );
      }
      db = new Database(path, { timeout: busyTimeoutMs, fileMustExist: true });
      const version = db.pragma('user_version', { simple: true }) as number;
      if (version > SCHEMA_VERSION) {
        throw new ToolbusError(
          'store-error',
          `audit log '${this.#name}' was written by a newer toolbus (schema ${version}, this one reads ` +
            `${SCHEMA_VERSION}); upgrade toolbus or move the file aside`,
        );
      }
      if (version < SCHEMA_VERSION && this.#readOnly) {
        throw new ToolbusError('store-error', `audit log '${this.#name}' is empty: no entry was written yet`);
      }
      if (version < SCHEMA_VERSION) {
        // Before the first table: incremental auto-vacuum lets pruning give pages back to the disk.
        db.pragma('auto_vacuum = INCREMENTAL');
        // Then WAL, and the tables in one transaction: a new file costs one sync, not one per statement.
        if (db.pragma('journal_mode', { simple: true }) !== 'wal') db.pragma('journal_mode = WAL');
        db.exec(`
          BEGIN;
          CREATE TABLE IF NOT EXISTS audit (
            id INTEGER PRIMARY KEY,
            time_ms INTEGER NOT NULL,
            kind TEXT NOT NULL,
            caller TEXT NOT NULL,
            user TEXT,
            tool TEXT,
            call_id TEXT,
            outcome TEXT NOT NULL,
            duration_ms REAL NOT NULL,
            args_bytes INTEGER NOT NULL,
            args_sha256 TEXT,
            args TEXT,
            method TEXT,
            path TEXT,
            status INTEGER
          );
          CREATE INDEX IF NOT EXISTS audit_time ON audit (time_ms);
          CREATE INDEX IF NOT EXISTS audit_tool ON audit (tool, id);
          CREATE INDEX IF NOT EXISTS audit_user ON audit (user, id);
          PRAGMA user_version = ${SCHEMA_VERSION};
          COMMIT;
        `);
      }
      if (!this.#readOnly) {
        if (db.pragma('journal_mode', { simple: true }) !== 'wal') db.pragma('journal_mode = WAL');
        // A crash loses at most the last batches; a commit then costs no fsync on the serving thread.
        db.pragma('synchronous = NORMAL');
      }
      return db;
    } catch (error) {
      db?.close();
      throw error instanceof ToolbusError ? error : storeError(this.#name, 'open', error);
    }
  }
}

/** The entry's time in epoch ms; a malformed time (a caller's own entry) becomes now. */
function timeOf(time: string, now: () => number): number {
  const ms = Date.parse(time);
  return Number.isNaN(ms) ? now() : ms;
}

function toEntry(row: Row): AuditEntry {
  return {
    time: new Date(row.time_ms).toISOString(),
    kind: row.kind,
    caller: row.caller,
    user: row.user,
    tool: row.tool,
    callId: row.call_id,
    outcome: row.outcome,
    durationMs: row.duration_ms,
    argsBytes: row.args_bytes,
    argsSha256: row.args_sha256,
    ...(row.args !== null ? { args: row.args } : {}),
    ...(row.method !== null
      ? { request: { method: row.method, path: row.path ?? '', status: row.status ?? 0 } }
      : {}),
  };
}

/**
 * A SQLite or file-system failure as a `store-error` (`unavailable` for a lock, which passes by itself),
 * naming the file but not the folder it is in.
 */
function storeError(name: string, op: 'open' | 'read' | 'write', error: unknown): ToolbusError {
  if (error instanceof ToolbusError) return error;
  const code = String((error as { code?: unknown }).code ?? '') || 'error';
  const detail =
    error instanceof Error
      ? error.message.replace(/(^|[\s'"(=])\/[\w.-]+(?:\/[\w.-]+)+/g, '$1…')
      : String(error);
  if (code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED') {
    return new ToolbusError(
      'unavailable',
      `audit log '${name}' is locked by another process (${code}); the write is retried`,
      { cause: error },
    );
  }
  const what = op === 'open' ? 'cannot be opened' : op === 'write' ? 'cannot be written' : 'cannot be read';
  return new ToolbusError('store-error', `audit log '${name}' ${what} (${code}: ${detail})`, {
    cause: error,
  });
}
