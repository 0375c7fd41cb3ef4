/**
 * @module toolbus/sqlite: the SQLite config store (`better-sqlite3`), the embedded default.
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
