/**
 * @module audit/sqlite: the embedded audit log in its own SQLite file (`better-sqlite3`). A leaf: only
 * cli/ loads it, and only when the audit log is on.
 */
export {
  SqliteAuditLog,
  DEFAULT_AUDIT_BUSY_TIMEOUT_MS,
  DEFAULT_AUDIT_PRUNE_MS,
  MIN_AUDIT_MAX_BYTES,
} from './sqlite-audit-log.js';
export type { SqliteAuditLogOptions } from './sqlite-audit-log.js';
