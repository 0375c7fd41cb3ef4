/**
 * @module toolbus/sqlite: the SQLite config store (`better-sqlite3`), the embedded default.
 */
export {
  SqliteConfigStore,
  defaultConfigPath,
  DEFAULT_SQLITE_POLL_MS,
  DEFAULT_SQLITE_BUSY_TIMEOUT_MS,
  SQLITE_CHANGES_KEPT,
} from './sqlite-config-store.js';
export type { SqliteConfigStoreOptions } from './sqlite-config-store.js';
