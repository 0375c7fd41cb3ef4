/**
 * @module `SqliteCallStore`: durable call states in one SQLite file (WAL), shared by every process that
 * opens it. Records and claims expire `ttlMs` after their last write; watchers see other processes'
 * writes by polling `PRAGMA data_version`.
 */
import { mkdirSync, statSync } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { ToolbusError, numberOption } from '../../errors/index.js';
import { MAX_TIMER_MS } from '../../tools/index.js';
import {
  DEFAULT_CALL_RESULT_TTL_MS,
  FINAL_CALL_STATUSES,
  type CallRecord,
  type CallStore,
  type StoredCall,
} from '../../bus/index.js';
import { DEFAULT_SQLITE_BUSY_TIMEOUT_MS } from './sqlite-config-store.js';

/** How often watchers check for other connections' commits unless said otherwise. */
const DEFAULT_POLL_MS = 50;
/** Expired rows are deleted by a write at most this often. */
const PRUNE_EVERY_MS = 60_000;

/** Options of {@link SqliteCallStore}. */
export interface SqliteCallStoreOptions {
  /** The database file, created (with its folder) if missing. It may be shared with other stores. */
  path: string;
  /** How long a record or claim is kept after its last write. @default DEFAULT_CALL_RESULT_TTL_MS (24 h) */
  ttlMs?: number;
  /** The clock, in epoch milliseconds. @default Date.now */
  now?: () => number;
  /**
   * How often, while a watch is active, the store checks for commits of other connections (a cheap
   * `PRAGMA data_version` read; rows are read again only after one). @default 50
   */
  pollMs?: number;
}

interface Watcher {
  readonly id: string;
  /** Marks the row as maybe changed and wakes the watch. */
  readonly wake: () => void;
}

interface Statements {
  get: Database.Statement<[string, number], { text: string; revision: number }>;
  current: Database.Statement<[string, number], { revision: number }>;
  nextRevision: Database.Statement<[], { revision: number }>;
  upsert: Database.Statement<[string, string, number, number]>;
  claimed: Database.Statement<[string, string, number], { id: string }>;
  claim: Database.Statement<[string, string, string, number]>;
  pruneRecords: Database.Statement<[number]>;
  pruneClaims: Database.Statement<[number]>;
  dataVersion: Database.Statement<[], { data_version: number }>;
}

/**
 * A {@link CallStore} in a SQLite file (`better-sqlite3`, WAL). Several processes may open the same file:
 * writes are compare-and-set in one immediate transaction, revisions come from one counter of the file
 * (so they grow across records and processes), and a watch sees this store's writes at once and other
 * connections' within about `pollMs`. Expired rows are invisible at once and deleted by a write at most
 * once a minute.
 *
 * Errors: `store-error` (unreadable, unwritable or corrupt file; the message names the file, never its
 * folder), `unavailable` (locked by another writer for longer than the busy timeout), `closed`, `usage`
 * (a bad option).
 *
 * @example
 * ```ts
 * import { SqliteCallStore } from 'toolbus/sqlite';
 * const store = new SqliteCallStore({ path: '.toolbus/calls.db' });
 * const revision = await store.put(record, 0); // undefined: it exists already
 * ```
 */
export class SqliteCallStore implements CallStore {
  /** The absolute path of the database file. */
  readonly path: string;
  readonly ttlMs: number;
  /** The file name alone, for messages: a machine path says too much about the machine. */
  readonly #name: string;
  readonly #now: () => number;
  readonly #pollMs: number;
  readonly #db: Database.Database;
  readonly #stmt: Statements;
  readonly #watchers = new Set<Watcher>();
  #timer: ReturnType<typeof setInterval> | undefined;
  /** `PRAGMA data_version` at the last check: it changes only when another connection commits. */
  #dataVersion: number | undefined;
  #lastPrune = 0;
  #closed = false;

  /**
   * Opens (and creates if needed) the file and its tables.
   * @throws ToolbusError `store-error` when it cannot be opened; `usage` for a bad option.
   */
  constructor(options: SqliteCallStoreOptions) {
    this.ttlMs = numberOption('SqliteCallStore', 'ttlMs', options.ttlMs, DEFAULT_CALL_RESULT_TTL_MS);
    this.#pollMs = numberOption('SqliteCallStore', 'pollMs', options.pollMs, DEFAULT_POLL_MS, {
      max: MAX_TIMER_MS,
    });
    if (typeof options.path !== 'string' || options.path === '') {
      throw new ToolbusError('usage', "SqliteCallStore: option 'path' must be a file path");
    }
    this.#now = options.now ?? Date.now;
    this.path = resolve(options.path);
    this.#name = basename(this.path);
    this.#db = openDatabase(this.path, this.#name);
    this.#stmt = prepare(this.#db);
  }

  get(id: string): Promise<StoredCall | undefined> {
    return this.#run('read', () => this.#read(id));
  }

  put(record: CallRecord, revision: number): Promise<number | undefined> {
    return this.#run('write', () => {
      const text = JSON.stringify(record);
      const next = this.#db
        .transaction((): number | undefined => {
          const now = this.#now();
          this.#pruneIfDue(now);
          const current = this.#stmt.current.get(record.id, now - this.ttlMs)?.revision ?? 0;
          if (current !== revision) return undefined;
          const rev = this.#stmt.nextRevision.get()!.revision;
          this.#stmt.upsert.run(record.id, text, rev, now);
          return rev;
        })
        .immediate();
      // This connection's commits do not move its data_version: tell its own watchers here.
      if (next !== undefined) for (const w of this.#watchers) if (w.id === record.id) w.wake();
      return next;
    });
  }

  claim(service: string, key: string, id: string): Promise<string> {
    return this.#run('write', () =>
      this.#db
        .transaction((): string => {
          const now = this.#now();
          this.#pruneIfDue(now);
          const held = this.#stmt.claimed.get(service, key, now - this.ttlMs);
          if (held) return held.id;
          this.#stmt.claim.run(service, key, id, now);
          return id;
        })
        .immediate(),
    );
  }

  /**
   * Yields the record now and after each change, until it is final, `signal` aborts or the store
   * closes. Changes made in quick succession may be seen as one (the latest).
   */
  async *watch(id: string, signal: AbortSignal): AsyncIterable<StoredCall> {
    if (this.#closed) throw closedError(this.#name);
    let changed = true;
    let resolveWait: (() => void) | undefined;
    const watcher: Watcher = {
      id,
      wake: () => {
        changed = true;
        resolveWait?.();
      },
    };
    const onAbort = (): void => resolveWait?.();
    // Registered (and the poll's baseline taken) before the first read, so no commit falls between.
    this.#addWatcher(watcher);
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      let seen = -1;
      while (!signal.aborted && !this.#closed) {
        if (changed) {
          changed = false;
          let stored: StoredCall | undefined;
          try {
            stored = this.#read(id);
          } catch (error) {
            throw storeError(this.#name, 'read', error);
          }
          if (stored && stored.revision !== seen) {
            seen = stored.revision;
            yield stored;
            if (FINAL_CALL_STATUSES.has(stored.record.status)) return;
          }
          continue;
        }
        await new Promise<void>((resolve) => (resolveWait = resolve));
        resolveWait = undefined;
      }
    } finally {
      signal.removeEventListener('abort', onAbort);
      this.#removeWatcher(watcher);
    }
  }

  /** Ends every watch and closes the file. Idempotent. */
  close(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#closed = true;
    clearInterval(this.#timer);
    this.#timer = undefined;
    for (const w of [...this.#watchers]) w.wake();
    this.#watchers.clear();
    try {
      this.#db.close();
    } catch {
      // already closed: nothing left to release
    }
    return Promise.resolve();
  }

  /** Alias of {@link close}. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  #read(id: string): StoredCall | undefined {
    const row = this.#stmt.get.get(id, this.#now() - this.ttlMs);
    return row && { record: JSON.parse(row.text) as CallRecord, revision: row.revision };
  }

  #pruneIfDue(now: number): void {
    if (now - this.#lastPrune < PRUNE_EVERY_MS) return;
    this.#lastPrune = now;
    this.#stmt.pruneRecords.run(now - this.ttlMs);
    this.#stmt.pruneClaims.run(now - this.ttlMs);
  }

  /** Runs a synchronous database operation, reporting failures by rejecting with a clear error. */
  #run<T>(op: 'read' | 'write', fn: () => T): Promise<T> {
    if (this.#closed) return Promise.reject(closedError(this.#name));
    try {
      return Promise.resolve(fn());
    } catch (error) {
      return Promise.reject(storeError(this.#name, op, error));
    }
  }

  /** One timer per store, shared by its watchers, running only while there is one. */
  #addWatcher(watcher: Watcher): void {
    this.#watchers.add(watcher);
    if (this.#timer) return;
    this.#dataVersion = this.#readDataVersion();
    this.#timer = setInterval(() => this.#poll(), this.#pollMs);
    // A pending watch alone does not keep the process alive.
    this.#timer.unref();
  }

  #removeWatcher(watcher: Watcher): void {
    this.#watchers.delete(watcher);
    if (this.#watchers.size > 0) return;
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** Wakes every watcher when another connection committed (a failing check too: their read reports it). */
  #poll(): void {
    if (this.#closed || this.#watchers.size === 0) return;
    const version = this.#readDataVersion();
    if (version !== undefined && version === this.#dataVersion) return;
    this.#dataVersion = version;
    for (const w of [...this.#watchers]) w.wake();
  }

  #readDataVersion(): number | undefined {
    try {
      return this.#stmt.dataVersion.get()?.data_version;
    } catch {
      return undefined;
    }
  }
}

function closedError(name: string): ToolbusError {
  return new ToolbusError('closed', `call store '${name}' is closed; open it again`);
}

/**
 * A SQLite or file-system failure as a `store-error` (`unavailable` for a lock, which passes by itself),
 * naming the file but not its folder.
 */
function storeError(name: string, op: 'open' | 'read' | 'write', error: unknown): ToolbusError {
  if (error instanceof ToolbusError) return error;
  const code = String((error as { code?: unknown }).code ?? '') || 'error';
  const detail = (error instanceof Error ? error.message : String(error)).replace(
    /(^|[\s'"(=])(?:[A-Za-z]:)?[/\\][^\s'"()]*[/\\]([^\s'"()/\\]+)/g,
    '$1…/$2',
  );
  if (code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED') {
    return new ToolbusError(
      'unavailable',
      `call store '${name}' is locked by another process (${code}); try again shortly`,
      { cause: error },
    );
  }
  const what = op === 'open' ? 'cannot be opened' : op === 'write' ? 'cannot be written' : 'cannot be read';
  const advice = code === 'SQLITE_NOTADB' || code.startsWith('SQLITE_CORRUPT') ? ': move it aside' : '';
  return new ToolbusError('store-error', `call store '${name}' ${what} (${code}: ${detail})${advice}`, {
    cause: error,
  });
}

/** Opens (creating if needed) the file and its tables. @throws ToolbusError `store-error`. */
function openDatabase(path: string, name: string): Database.Database {
  let db: Database.Database | undefined;
  try {
    mkdirSync(dirname(path), { recursive: true });
    if (isDirectory(path)) {
      throw new ToolbusError('store-error', `call store '${name}' is a directory, not a database file`);
    }
    db = new Database(path, { timeout: DEFAULT_SQLITE_BUSY_TIMEOUT_MS });
    if (db.pragma('journal_mode', { simple: true }) !== 'wal') db.pragma('journal_mode = WAL');
    // A crash of the process loses nothing; a power cut may lose the last commits, as it loses the
    // calls running then (no fsync per streamed chunk).
    db.pragma('synchronous = NORMAL');
    const tables = db
      .prepare(
        "SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND " +
          "name IN ('call_records', 'call_claims', 'call_revision')",
      )
      .get() as { n: number };
    if (tables.n !== 3) {
      // IMMEDIATE: two processes creating the same new file do it one after the other.
      db.exec(`
        BEGIN IMMEDIATE;
        CREATE TABLE IF NOT EXISTS call_records (
          id TEXT PRIMARY KEY, text TEXT NOT NULL, revision INTEGER NOT NULL, written_at INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS call_records_written_at ON call_records (written_at);
        CREATE TABLE IF NOT EXISTS call_claims (
          service TEXT NOT NULL, key TEXT NOT NULL, id TEXT NOT NULL, written_at INTEGER NOT NULL,
          PRIMARY KEY (service, key)
        ) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS call_claims_written_at ON call_claims (written_at);
        CREATE TABLE IF NOT EXISTS call_revision (
          one INTEGER PRIMARY KEY CHECK (one = 1), revision INTEGER NOT NULL
        );
        INSERT OR IGNORE INTO call_revision (one, revision) VALUES (1, 0);
        COMMIT;
      `);
    }
    return db;
  } catch (error) {
    db?.close();
    throw storeError(name, 'open', error);
  }
}

function prepare(db: Database.Database): Statements {
  return {
    get: db.prepare('SELECT text, revision FROM call_records WHERE id = ? AND written_at > ?'),
    current: db.prepare('SELECT revision FROM call_records WHERE id = ? AND written_at > ?'),
    nextRevision: db.prepare(
      'UPDATE call_revision SET revision = revision + 1 WHERE one = 1 RETURNING revision',
    ),
    upsert: db.prepare(
      'INSERT INTO call_records (id, text, revision, written_at) VALUES (?, ?, ?, ?) ' +
        'ON CONFLICT (id) DO UPDATE SET text = excluded.text, revision = excluded.revision, ' +
        'written_at = excluded.written_at',
    ),
    claimed: db.prepare('SELECT id FROM call_claims WHERE service = ? AND key = ? AND written_at > ?'),
    claim: db.prepare(
      'INSERT INTO call_claims (service, key, id, written_at) VALUES (?, ?, ?, ?) ' +
        'ON CONFLICT (service, key) DO UPDATE SET id = excluded.id, written_at = excluded.written_at',
    ),
    pruneRecords: db.prepare('DELETE FROM call_records WHERE written_at <= ?'),
    pruneClaims: db.prepare('DELETE FROM call_claims WHERE written_at <= ?'),
    dataVersion: db.prepare('PRAGMA data_version'),
  };
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}
