/**
 * @module toolbus/sqlite: the SQLite config store (`better-sqlite3`), the embedded default, and the
 * SQLite store of durable call states.
 */
export {
  SqliteConfigStore,
  defaultConfigPath,
  DEFAULT_SQLITE_POLL_MS,
  DEFAULT_SQLITE_BUSY_TIMEOUT_MS,
  SQLITE_CHANGES_KEPT,
  SQLITE_FILE_EVENTS_POLL_MS,
} from './sqlite-config-store.js';
export type { SqliteConfigStoreOptions, SqliteWatchStats } from './sqlite-config-store.js';
export { SqliteCallStore } from './sqlite-call-store.js';
export type { SqliteCallStoreOptions } from './sqlite-call-store.js';
