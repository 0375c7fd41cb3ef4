/**
 * @module audit: the audit log contract (`AuditLog`, `AuditEntry`, queries), the hooks that feed it from
 * a `ToolSet` and the gateway, the write buffer every store shares, and the in-memory log. The SQLite
 * store is the leaf `audit/sqlite`, the JetStream one `audit/nats`; only cli/ wires them.
 */
export {
  AuditKind,
  DEFAULT_AUDIT_MAX_AGE_MS,
  DEFAULT_AUDIT_MAX_BYTES,
  DEFAULT_AUDIT_QUERY_LIMIT,
  MAX_AUDIT_QUERY_LIMIT,
} from './audit-log.js';
export type {
  AuditEntry,
  AuditErrorEvent,
  AuditLog,
  AuditQuery,
  AuditReader,
  AuditRecoverEvent,
  AuditRequest,
  AuditStats,
} from './audit-log.js';
export {
  AuditBuffer,
  DEFAULT_AUDIT_BATCH_SIZE,
  DEFAULT_AUDIT_FLUSH_MS,
  DEFAULT_AUDIT_MAX_PENDING,
  MAX_AUDIT_RETRY_MS,
} from './audit-buffer.js';
export type { AuditBatchWriter, AuditBufferOptions } from './audit-buffer.js';
export { UNKNOWN_CALLER, auditDeniedHook, auditToolSetHooks, sha256Hex } from './audit-hooks.js';
export type { AuditDeniedRequest, AuditHookOptions, AuditToolSetHooks } from './audit-hooks.js';
export {
  matchesAuditQuery,
  parseDuration,
  parseLimit,
  parseSince,
  resolveAuditQuery,
  toAuditEntry,
} from './audit-query.js';
export type { ResolvedAuditQuery } from './audit-query.js';
export { DEFAULT_MEMORY_AUDIT_ENTRIES, MemoryAuditLog } from './memory-audit-log.js';
export type { MemoryAuditLogOptions } from './memory-audit-log.js';
