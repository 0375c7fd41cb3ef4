/**
 * @module `SqliteConfigStore`: the embedded default config store, one SQLite file in WAL mode, whose
 * watchers also see changes written by other processes on the same file.
 */
import { mkdirSync, statSync, watch as watchDirectory, type FSWatcher } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import type { JsonValue } from '../../schema/index.js';
import { MAX_TIMER_MS } from '../../tools/index.js';
import { ToolbusError, numberOption } from '../../errors/index.js';
import {
  ChangeQueue,
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

/**
 * How often watchers check the file for commits of other processes, by default, where no file events
 * tell them (disabled, unsupported, or failed): a check reads `PRAGMA data_version` (microseconds; the
 * change table is read only when another connection committed), so it can be frequent.
 */
export const DEFAULT_SQLITE_POLL_MS = 20;
/**
 * How often watchers check anyway while file events wake them: only a safety net for a lost event, so
 * an idle watcher costs next to nothing.
 */
export const SQLITE_FILE_EVENTS_POLL_MS = 250;
/**
 * Where `fs.watch` on a directory reports writes to the files in it (inotify, FSEvents,
 * ReadDirectoryChangesW). Elsewhere (kqueue) it reports only entries added or removed, so the poll runs.
 */
const DIRECTORY_EVENTS_PLATFORMS: ReadonlySet<string> = new Set(['linux', 'darwin', 'win32']);
/**
 * The gaps between the checks that follow a file event, in ms: another process's commit becomes
 * visible only once it has synced the WAL (with `synchronous=full`, a disk flush, slow on a loaded
 * disk) and updated the WAL index, after the writes that raised the event. All of them run, even after
 * one finds a commit: one burst of events can stand for several commits, the last still syncing.
 */
const SETTLE_GAPS_MS = [2, 5, 10, 20, 40, 80, 160, 320, 640] as const;
/** How long a write waits for another process's lock before failing, by default. */
export const DEFAULT_SQLITE_BUSY_TIMEOUT_MS = 5_000;
/** How many past changes the file keeps for watchers that read them later. */
export const SQLITE_CHANGES_KEPT = 10_000;
const SCHEMA_VERSION = 1;

/** Options of {@link SqliteConfigStore}. */
export interface SqliteConfigStoreOptions {
  /** The database file. @default `<home>/config.db` (see {@link defaultConfigPath}) */
  path?: string;
  /** The toolbus home directory. @default `$TOOLBUS_HOME`, else `./.toolbus` */
  home?: string;
  /**
   * How often watchers check for changes made by other processes when no file events tell them (a
   * cheap `PRAGMA data_version` read; the change table is read only when another connection
   * committed). With file events, they check every {@link SQLITE_FILE_EVENTS_POLL_MS} (or `pollMs`,
   * if longer) besides each event. @default DEFAULT_SQLITE_POLL_MS (20)
   */
  pollMs?: number;
  /**
   * Wake watchers on file-system events of the database and its WAL (`fs.watch` on its directory), so
   * another process's write is seen within milliseconds and an idle watcher barely polls. Where that
   * is not available (the watch fails, e.g. at the inotify limit, or the platform only has kqueue),
   * watchers poll every `pollMs`. @default true
   */
  fileEvents?: boolean;
  /** How long a write waits for another writer's lock. @default DEFAULT_SQLITE_BUSY_TIMEOUT_MS (5000) */
  busyTimeoutMs?: number;
  /**
   * `full` syncs every commit to disk (an acknowledged put survives a power cut); `normal` survives a
   * process crash only and is faster. @default 'full'
   */
  synchronous?: 'full' | 'normal';
}

/**
 * The config file path used when none is given: `<home>/config.db`, where home is `options.home`, else
 * the `TOOLBUS_HOME` environment variable, else `./.toolbus` (relative to the working directory).
 */
export function defaultConfigPath(options: { home?: string; env?: NodeJS.ProcessEnv } = {}): string {
  const home = options.home ?? (options.env ?? process.env).TOOLBUS_HOME ?? '.toolbus';
  return resolve(join(home, 'config.db'));
}

interface Row {
  type: string;
  key: string;
  value: string;
  revision: number;
}
interface ChangeRow {
  revision: number;
  kind: 'put' | 'delete';
  type: string;
  key: string;
  value: string | null;
}

interface Watcher {
  queue: ChangeQueue<ConfigChange>;
  /** Changes at or below this revision were already delivered (or predate the watch). */
  after: number;
}

/** Counters of how a {@link SqliteConfigStore} looked for other processes' writes. */
export interface SqliteWatchStats {
  /** Checks of the file (by the poll or a file event), each a `PRAGMA data_version` read. */
  checks: number;
  /** Checks that then read the change table, because another connection had committed. */
  reads: number;
  /** File-system events of the database or its WAL that woke the watchers. */
  fileEvents: number;
  /** Whether file events are being listened to now (false: no watcher, disabled, or unsupported here). */
  listening: boolean;
}

/**
 * A {@link ConfigStore} in one SQLite file (`better-sqlite3`, WAL). Several processes may open the same
 * file: writes are serialised by SQLite, conditional puts use `ifRevision`, and watchers read a change
 * table when another process committed, which they notice by a file event of the WAL (within
 * milliseconds) or by a cheap check every `pollMs`; writes of this process reach its own watchers at
 * once. When another program replaces or deletes the file (e.g. moves a corrupt one aside), the store
 * reopens the path: its watchers fail with `store-error` and must watch again.
 *
 * Errors: `invalid-config` (bad JSON, with line/column/position; bad type or key), `config-conflict`
 * (`ifRevision` did not match), `store-error` (corrupt, unreadable or unwritable file: the message names
 * the path and what to do), `closed`.
 *
 * @example
 * ```ts
 * import { SqliteConfigStore } from 'toolbus/sqlite';
 * const store = new SqliteConfigStore(); // ./.toolbus/config.db or $TOOLBUS_HOME/config.db
 * const rev = await store.put('tool', 'tell-joke', { type: 'tool-service', name: 'tell-joke', ... });
 * await store.put('tool', 'tell-joke', { ... }, { ifRevision: rev }); // config-conflict if changed since
 * ```
 */
export class SqliteConfigStore implements ConfigStore {
  /** The absolute path of the database file. */
  readonly path: string;
  readonly #options: SqliteConfigStoreOptions;
  #db: Database.Database;
  #stmt: Statements;
  /** The file's device and inode when opened, to notice another program replacing or deleting it. */
  #identity: string | undefined;
  readonly #pollMs: number;
  readonly #fileEvents: boolean;
  readonly #watchers = new Set<Watcher>();
  #timer: ReturnType<typeof setInterval> | undefined;
  /** The period of `#timer`, in ms. */
  #timerMs = 0;
  /** Listening to file events failed once: this store polls every `pollMs` from then on. */
  #noFileEvents = false;
  /** Watches the file's directory for writes of other processes while someone watches the store. */
  #fileWatcher: FSWatcher | undefined;
  /** The next of the checks that follow a file event, and which of {@link SETTLE_GAPS_MS} it is. */
  #settle: ReturnType<typeof setTimeout> | undefined;
  #settleStep = 0;
  /** A check is queued for this turn of the event loop already. */
  #wakeQueued = false;
  /** `PRAGMA data_version` at the last check: it changes only when another connection commits. */
  #dataVersion: number | undefined;
  readonly #stats = { checks: 0, reads: 0, fileEvents: 0 };
  #closed = false;

  /**
   * Opens (and creates if needed) the file.
   * @throws ToolbusError `store-error` naming the path; `invalid-config` for a bad `pollMs` or
   * `busyTimeoutMs`.
   */
  constructor(options: SqliteConfigStoreOptions = {}) {
    this.path =
      options.path !== undefined ? resolve(options.path) : defaultConfigPath({ home: options.home });
    this.#pollMs = checkPollMs(options.pollMs ?? DEFAULT_SQLITE_POLL_MS);
    this.#fileEvents = (options.fileEvents ?? true) && DIRECTORY_EVENTS_PLATFORMS.has(process.platform);
    checkBusyTimeoutMs(options.busyTimeoutMs ?? DEFAULT_SQLITE_BUSY_TIMEOUT_MS);
    this.#options = options;
    ({ db: this.#db, stmt: this.#stmt } = openDatabase(this.path, options));
    this.#identity = fileIdentity(this.path);
  }

  /**
   * Reopens the path when the file there is no longer the one opened (moved aside, deleted, restored
   * from a backup): a handle on the old file would never see the new file's writes, and a store that
   * failed on a corrupt file would keep failing after the user replaced it. Watchers fail with
   * `store-error` (their revisions belonged to the old file) and must watch again.
   *
   * @param reopen false for a watcher's check: a deleted file is not made again by a watcher (one that
   *   woke while the folder was being removed would recreate it), only by the next read or write.
   */
  #followFile(reopen = true): void {
    const identity = fileIdentity(this.path);
    if (identity === this.#identity && identity !== undefined) return;
    const failure = new ToolbusError(
      'store-error',
      `config store '${this.path}' was replaced or deleted by another program; watch again ` +
        '(with includeExisting) to read the file now at that path',
    );
    for (const w of [...this.#watchers]) w.queue.fail(failure);
    if (identity === undefined && !reopen) return;
    try {
      this.#db.close(); // first: the old and the new file share the -wal and -shm names
    } catch {
      // already closed by a reopen that failed: nothing left to release
    }
    ({ db: this.#db, stmt: this.#stmt } = openDatabase(this.path, this.#options));
    this.#identity = fileIdentity(this.path);
    this.#dataVersion = undefined; // a new connection counts afresh
  }

  /** How watchers looked for other processes' writes so far (a snapshot). */
  get watchStats(): SqliteWatchStats {
    return { ...this.#stats, listening: this.#fileWatcher !== undefined };
  }

  put(
    type: string,
    key: string,
    value: string | JsonValue,
    options: ConfigWriteOptions = {},
  ): Promise<number> {
    return this.#run('write', () => {
      assertConfigName(type, key);
      const text = JSON.stringify(toConfigValue(type, key, value));
      const revision = this.#db
        .transaction(() => {
          checkRevision(`${type}/${key}`, this.#stmt.get.get(type, key)?.revision ?? 0, options.ifRevision);
          const rev = Number(this.#stmt.addChange.run('put', type, key, text).lastInsertRowid);
          this.#stmt.upsert.run(type, key, text, rev);
          if (rev % 1000 === 0) this.#stmt.prune.run(rev - SQLITE_CHANGES_KEPT);
          return rev;
        })
        .immediate();
      this.#pump();
      return revision;
    });
  }

  get(type: string, key: string): Promise<ConfigItem | undefined> {
    return this.#run('read', () => {
      assertConfigName(type, key);
      const row = this.#stmt.get.get(type, key);
      return row && toItem(row);
    });
  }

  list(type?: string): Promise<ConfigItem[]> {
    return this.#run('read', () => {
      if (type !== undefined) assertConfigName(type);
      return (type === undefined ? this.#stmt.listAll.all() : this.#stmt.listType.all(type)).map(toItem);
    });
  }

  delete(type: string, key: string, options: ConfigWriteOptions = {}): Promise<boolean> {
    return this.#run('write', () => {
      assertConfigName(type, key);
      const existed = this.#db
        .transaction(() => {
          const current = this.#stmt.get.get(type, key)?.revision ?? 0;
          checkRevision(`${type}/${key}`, current, options.ifRevision);
          if (current === 0) return false;
          this.#stmt.remove.run(type, key);
          this.#stmt.addChange.run('delete', type, key, null);
          return true;
        })
        .immediate();
      this.#pump();
      return existed;
    });
  }

  /**
   * Changes in revision order, from now on (and first every existing item, oldest write first, with
   * `includeExisting`). Sees writes of other processes within milliseconds where file events arrive,
   * else within about `pollMs`. A watcher more than
   * 10 000 changes behind fails with `store-error`; watch again with `includeExisting` to resynchronise.
   */
  watch(options: ConfigWatchOptions = {}): AsyncIterable<ConfigChange> {
    const queue: ChangeQueue<ConfigChange> = new ChangeQueue<ConfigChange>({
      signal: options.signal,
      what: `SqliteConfigStore.watch('${this.path}')`,
      onClose: () => {
        this.#watchers.delete(watcher);
        this.#schedule();
      },
    });
    const watcher: Watcher = { queue, after: 0 };
    if (this.#closed) {
      queue.end();
      return queue;
    }
    try {
      this.#followFile();
      // One read transaction: the snapshot and its revision agree.
      this.#db
        .transaction(() => {
          watcher.after = this.#revisionNow();
          if (options.includeExisting) {
            // Oldest write first, as the contract says: a consumer replays them like the live changes.
            for (const item of this.#stmt.listByRevision.all().map(toItem)) {
              queue.push({
                kind: 'put',
                type: item.type,
                key: item.key,
                value: item.value,
                revision: item.revision,
              });
            }
          }
        })
        .deferred();
    } catch (error) {
      queue.fail(error instanceof ToolbusError ? error : storeError(this.path, 'read', error));
      return queue;
    }
    if (!queue.closed) {
      this.#watchers.add(watcher);
      this.#schedule();
    }
    return queue;
  }

  revision(): Promise<number> {
    return this.#run('read', () => this.#revisionNow());
  }

  /** Ends every watch and closes the file. Idempotent. */
  close(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#closed = true;
    for (const w of [...this.#watchers]) w.queue.end();
    this.#watchers.clear();
    this.#schedule();
    try {
      this.#db.close();
    } catch {
      // closing twice or a failed open: nothing left to release
    }
    return Promise.resolve();
  }

  /** Alias of {@link close}. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  #revisionNow(): number {
    return this.#stmt.revision.get()?.seq ?? 0;
  }

  /** Runs a synchronous database operation, reporting failures by rejecting with a clear error. */
  #run<T>(op: 'read' | 'write', fn: () => T): Promise<T> {
    if (this.#closed) {
      return Promise.reject(
        new ToolbusError('closed', `config store '${this.path}' is closed; open it again`),
      );
    }
    try {
      this.#followFile();
      return Promise.resolve(fn());
    } catch (error) {
      return Promise.reject(error instanceof ToolbusError ? error : storeError(this.path, op, error));
    }
  }

  /** Polls and listens to file events only while someone watches, so an idle store keeps nothing. */
  #schedule(): void {
    if (this.#watchers.size === 0 || this.#closed) {
      clearInterval(this.#timer);
      this.#timer = undefined;
      clearTimeout(this.#settle);
      this.#settle = undefined;
      this.#fileWatcher?.close();
      this.#fileWatcher = undefined;
      return;
    }
    this.#listen();
    const everyMs = this.#fileWatcher ? Math.max(this.#pollMs, SQLITE_FILE_EVENTS_POLL_MS) : this.#pollMs;
    if (this.#timer && this.#timerMs === everyMs) return;
    clearInterval(this.#timer);
    // Not unref'd: an open watch keeps the process alive, as a subscription does.
    this.#timer = setInterval(() => this.#poll(), everyMs);
    this.#timerMs = everyMs;
  }

  /**
   * Listens to the directory (not the files: the WAL may be deleted and made again, and a replaced
   * database is a new file) for writes to the database or its WAL. If that fails, now or later, the
   * store polls every `pollMs` instead.
   */
  #listen(): void {
    if (!this.#fileEvents || this.#noFileEvents || this.#fileWatcher) return;
    const names = new Set([basename(this.path), `${basename(this.path)}-wal`]);
    let watcher: FSWatcher;
    try {
      // Not persistent: the poll's timer is what keeps the process alive, and it always runs.
      watcher = watchDirectory(dirname(this.path), { persistent: false }, (_event, name) => {
        if (name === null || names.has(name)) this.#wake();
      });
    } catch {
      this.#noFileEvents = true; // e.g. ENOSPC (the inotify watch limit) or EMFILE
      return;
    }
    watcher.on('error', () => {
      watcher.close();
      if (this.#fileWatcher !== watcher) return;
      this.#fileWatcher = undefined;
      this.#noFileEvents = true;
      this.#schedule(); // the fast poll from now on
    });
    this.#fileWatcher = watcher;
    // A commit between the watch's snapshot and now raised its event before anyone listened.
    this.#queueCheck();
  }

  /**
   * A file event: checks in this turn of the event loop (one check for a burst of events), then after
   * each of {@link SETTLE_GAPS_MS}. Events of this process's own writes cost a few checks that find
   * nothing (each a `PRAGMA data_version` read).
   */
  #wake(): void {
    this.#stats.fileEvents++;
    this.#queueCheck();
    this.#settleStep = 0;
    this.#armSettle();
  }

  #queueCheck(): void {
    if (this.#wakeQueued) return;
    this.#wakeQueued = true;
    setImmediate(() => {
      this.#wakeQueued = false;
      this.#poll();
    });
  }

  #armSettle(): void {
    clearTimeout(this.#settle);
    const gap = SETTLE_GAPS_MS[this.#settleStep];
    if (gap === undefined || this.#watchers.size === 0) {
      this.#settle = undefined;
      return;
    }
    this.#settle = setTimeout(() => {
      this.#settleStep++;
      this.#poll();
      this.#armSettle();
    }, gap);
    this.#settle.unref();
  }

  /**
   * A check: notice a replaced file (its watchers fail), else deliver what other processes wrote.
   * True when another connection had committed.
   */
  #poll(): boolean {
    if (this.#watchers.size === 0 || this.#closed) return false;
    this.#stats.checks++;
    try {
      this.#followFile(false);
    } catch {
      return false; // the watchers have failed; the next operation reports why the new file cannot be opened
    }
    if (!this.#committedElsewhere()) return false;
    this.#stats.reads++;
    this.#pump();
    return true;
  }

  /**
   * Whether another connection committed since the last check. Commits of this connection do not count:
   * they are delivered by the write itself. A failing read counts as a change, so the pump reports it.
   */
  #committedElsewhere(): boolean {
    let version: number | undefined;
    try {
      version = this.#stmt.dataVersion.get()?.data_version;
    } catch {
      return true;
    }
    if (version !== undefined && version === this.#dataVersion) return false;
    this.#dataVersion = version;
    return true;
  }

  /** Delivers every change newer than what each watcher has seen. */
  #pump(): void {
    if (this.#watchers.size === 0 || this.#closed) return;
    try {
      let from = Math.min(...[...this.#watchers].map((w) => w.after));
      const oldest = this.#stmt.oldest.get()?.revision;
      for (;;) {
        const rows = this.#stmt.changesAfter.all(from);
        if (rows.length === 0) break;
        for (const w of this.#watchers) {
          if (oldest !== undefined && w.after + 1 < oldest) {
            w.queue.fail(
              new ToolbusError(
                'store-error',
                `config store '${this.path}': a watcher missed changes that were already pruned; ` +
                  'watch again with includeExisting to resynchronise',
              ),
            );
          }
        }
        for (const row of rows) {
          const change: ConfigChange =
            row.kind === 'put'
              ? {
                  kind: 'put',
                  type: row.type,
                  key: row.key,
                  value: parseStoredValue(row.value ?? 'null', row.type, row.key, 'sqlite3'),
                  revision: row.revision,
                }
              : { kind: 'delete', type: row.type, key: row.key, revision: row.revision };
          for (const w of this.#watchers) {
            if (row.revision > w.after) {
              w.after = row.revision;
              w.queue.push(
                change.value === undefined ? change : { ...change, value: structuredClone(change.value) },
              );
            }
          }
        }
        from = rows[rows.length - 1]!.revision;
        if (rows.length < 1000) break;
      }
    } catch (error) {
      const failure = error instanceof ToolbusError ? error : storeError(this.path, 'read', error);
      for (const w of [...this.#watchers]) w.queue.fail(failure);
    }
  }
}

/**
 * `pollMs` must be a positive, finite number that setInterval honours: 0 or a negative value polls
 * about every millisecond, and so does one above setInterval's maximum (2^31 - 1 ms).
 */
function checkPollMs(pollMs: number): number {
  return numberOption('SqliteConfigStore', 'pollMs', pollMs, pollMs, { max: MAX_TIMER_MS });
}

/**
 * `busyTimeoutMs` must be an integer from 0 to 2^31 - 1, as better-sqlite3 requires; checked here so a
 * bad value is reported as the option, not as a file that failed to open.
 */
function checkBusyTimeoutMs(busyTimeoutMs: number): void {
  numberOption('SqliteConfigStore', 'busyTimeoutMs', busyTimeoutMs, busyTimeoutMs, {
    integer: true,
    zero: true,
    max: MAX_TIMER_MS,
  });
}

function toItem(row: Row): ConfigItem {
  return {
    type: row.type,
    key: row.key,
    value: parseStoredValue(row.value, row.type, row.key, 'sqlite3'),
    revision: row.revision,
  };
}

/** `device:inode` of the file at `path`, or undefined when there is none. */
function fileIdentity(path: string): string | undefined {
  try {
    const stat = statSync(path);
    return `${stat.dev}:${stat.ino}`;
  } catch {
    return undefined;
  }
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/**
 * Turns a SQLite or file-system failure into a `store-error` that names the path and what to do; a
 * locked file (another writer past `busyTimeoutMs`) is `unavailable`, since it passes by itself.
 */
function storeError(path: string, op: 'open' | 'read' | 'write', error: unknown): ToolbusError {
  const code = String((error as { code?: unknown }).code ?? '');
  const detail = error instanceof Error ? error.message : String(error);
  let advice: string;
  if (code === 'SQLITE_NOTADB' || code.startsWith('SQLITE_CORRUPT')) {
    advice =
      `is not a SQLite database or is corrupt (${code}: ${detail}). Move it aside ` +
      `(mv '${path}' '${path}.bad') to start an empty store, or choose another file with --store or TOOLBUS_HOME`;
  } else if (code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED') {
    // Busy is an outage of the store, not a fault in it: it passes once the other writer is done.
    return new ToolbusError(
      'unavailable',
      `config store '${path}' is locked by another process (${code}: ${detail}); retry, or raise busyTimeoutMs`,
      { cause: error },
    );
  } else if (code.startsWith('SQLITE_READONLY') && op === 'write') {
    advice =
      `is read-only and cannot be written (${code}: ${detail}). Make the file and its directory ` +
      `writable, or choose another file with --store or TOOLBUS_HOME`;
  } else if (
    code.startsWith('SQLITE_READONLY') ||
    code.startsWith('SQLITE_CANTOPEN') ||
    code === 'SQLITE_PERM' ||
    code.startsWith('SQLITE_IOERR') ||
    code === 'SQLITE_FULL' ||
    code === 'EACCES' ||
    code === 'EPERM' ||
    code === 'ENOTDIR' ||
    code === 'EROFS' ||
    code === 'EEXIST'
  ) {
    advice =
      `cannot be ${op === 'write' ? 'written' : 'opened'} (${code}: ${detail}). Check that its directory ` +
      `exists and is writable and that the disk is not full, or choose another file with --store or TOOLBUS_HOME`;
  } else {
    advice = `failed to ${op} (${code || 'error'}: ${detail})`;
  }
  return new ToolbusError('store-error', `config store '${path}' ${advice}`, { cause: error });
}

interface Statements {
  get: Database.Statement<[string, string], Row>;
  listAll: Database.Statement<[], Row>;
  listType: Database.Statement<[string], Row>;
  listByRevision: Database.Statement<[], Row>;
  upsert: Database.Statement<[string, string, string, number]>;
  remove: Database.Statement<[string, string]>;
  addChange: Database.Statement<[string, string, string, string | null]>;
  prune: Database.Statement<[number]>;
  changesAfter: Database.Statement<[number], ChangeRow>;
  revision: Database.Statement<[], { seq: number }>;
  oldest: Database.Statement<[], { revision: number }>;
  dataVersion: Database.Statement<[], { data_version: number }>;
}

/** Opens (creating if needed) the file and its tables. @throws ToolbusError `store-error` naming the path. */
function openDatabase(
  path: string,
  options: SqliteConfigStoreOptions,
): { db: Database.Database; stmt: Statements } {
  let db: Database.Database | undefined;
  try {
    try {
      mkdirSync(dirname(path), { recursive: true });
    } catch (error) {
      throw storeError(path, 'open', error);
    }
    if (isDirectory(path)) {
      throw new ToolbusError(
        'store-error',
        `config store '${path}' is a directory, not a database file; pass a file path (e.g. ` +
          `'${join(path, 'config.db')}')`,
      );
    }
    db = new Database(path, { timeout: options.busyTimeoutMs ?? DEFAULT_SQLITE_BUSY_TIMEOUT_MS });
    const version = db.pragma('user_version', { simple: true }) as number;
    if (version > SCHEMA_VERSION) {
      throw new ToolbusError(
        'store-error',
        `config store '${path}' was written by a newer toolbus (schema ${version}, this one reads ` +
          `${SCHEMA_VERSION}); upgrade toolbus or use another file`,
      );
    }
    // Write only what is missing, so a read-only file (a config baked into an image or mounted
    // read-only) can still be read; only writes to it then fail.
    const tables = db
      .prepare(
        "SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name IN ('items', 'changes')",
      )
      .get() as { n: number };
    if (version !== SCHEMA_VERSION || tables.n !== 2) {
      // WAL first and the tables in one transaction: a new file costs one sync, not one per statement.
      if (db.pragma('journal_mode', { simple: true }) !== 'wal') db.pragma('journal_mode = WAL');
      db.exec(`
        BEGIN;
        CREATE TABLE IF NOT EXISTS items (
          type TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, revision INTEGER NOT NULL,
          PRIMARY KEY (type, key)
        ) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS changes (
          revision INTEGER PRIMARY KEY AUTOINCREMENT,
          kind TEXT NOT NULL, type TEXT NOT NULL, key TEXT NOT NULL, value TEXT
        );
        PRAGMA user_version = ${SCHEMA_VERSION};
        COMMIT;
      `);
    }
    if (db.pragma('journal_mode', { simple: true }) !== 'wal') db.pragma('journal_mode = WAL');
    db.pragma(`synchronous = ${options.synchronous === 'normal' ? 'NORMAL' : 'FULL'}`);
    return { db, stmt: prepare(db) };
  } catch (error) {
    db?.close();
    throw error instanceof ToolbusError ? error : storeError(path, 'open', error);
  }
}

function prepare(db: Database.Database): Statements {
  return {
    get: db.prepare('SELECT type, key, value, revision FROM items WHERE type = ? AND key = ?'),
    listAll: db.prepare('SELECT type, key, value, revision FROM items ORDER BY type, key'),
    listType: db.prepare('SELECT type, key, value, revision FROM items WHERE type = ? ORDER BY key'),
    listByRevision: db.prepare('SELECT type, key, value, revision FROM items ORDER BY revision'),
    upsert: db.prepare(
      'INSERT INTO items (type, key, value, revision) VALUES (?, ?, ?, ?) ' +
        'ON CONFLICT (type, key) DO UPDATE SET value = excluded.value, revision = excluded.revision',
    ),
    remove: db.prepare('DELETE FROM items WHERE type = ? AND key = ?'),
    addChange: db.prepare('INSERT INTO changes (kind, type, key, value) VALUES (?, ?, ?, ?)'),
    prune: db.prepare('DELETE FROM changes WHERE revision <= ?'),
    changesAfter: db.prepare(
      'SELECT revision, kind, type, key, value FROM changes WHERE revision > ? ORDER BY revision LIMIT 1000',
    ),
    revision: db.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'changes'"),
    oldest: db.prepare('SELECT revision FROM changes ORDER BY revision LIMIT 1'),
    dataVersion: db.prepare('PRAGMA data_version'),
  };
}
