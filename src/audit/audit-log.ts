/**
 * @module The audit log contract: one entry per tool call and per denied request, a store that records
 * without making a call wait, and a reader that answers filtered queries.
 */

/** What an entry records: a finished tool call, or a request the gateway refused (401/403). */
export const AuditKind = {
  Call: 'call',
  Denied: 'denied',
} as const;
/** One of {@link AuditKind}'s values. */
export type AuditKind = (typeof AuditKind)[keyof typeof AuditKind];

/** What was asked of the gateway, on a `denied` entry. */
export interface AuditRequest {
  method: string;
  /** The path asked for (at most 200 characters). */
  path: string;
  /** 401, 403 or 429. */
  status: number;
}

/** One audit entry, as stored and as `GET /api/v1/audit` answers it. */
export interface AuditEntry {
  /** When the call finished or the request was refused: ISO 8601 in UTC, with milliseconds. */
  time: string;
  kind: AuditKind;
  /**
   * Who called: the entry point and its principal, e.g. `http:admin@127.0.0.1`, `cli:admin@127.0.0.1`,
   * `mcp:ci-bot@127.0.0.1`, `agent`; `unknown` when the call did not say.
   */
  caller: string;
  /** The end user the call ran for; null when none was given (or a denied request named none). */
  user: string | null;
  /** The tool called; null when a denied request named none. */
  tool: string | null;
  callId: string | null;
  /** `ok`, or the error code (`invalid-arguments`, `timeout`, `unauthorized`, ...). */
  outcome: string;
  /** Wall time of the call, queueing included; 0 on denied requests. */
  durationMs: number;
  /** UTF-8 bytes of the argument text (0 on denied requests). */
  argsBytes: number;
  /** SHA-256 of the argument text, lowercase hex; null on denied requests. */
  argsSha256: string | null;
  /** The argument text itself, only when recording arguments was asked for. */
  args?: string;
  /** What was asked, on denied requests. */
  request?: AuditRequest;
}

/** A filter over the audit log. Every field is optional; the answer is the latest entries that match. */
export interface AuditQuery {
  /** Only calls of this tool. @default any (denied requests included) */
  tool?: string;
  /** Only calls for this end user. @default any */
  user?: string;
  /** Only entries at or after this time (epoch ms). @default no bound */
  since?: number;
  /** At most this many entries, the latest ones. @default DEFAULT_AUDIT_QUERY_LIMIT (100) */
  limit?: number;
}

/** What reading the audit log takes: a filtered query, oldest entry first. */
export interface AuditReader {
  /**
   * The latest `limit` entries matching `query`, oldest first. Entries recorded just before are
   * included: what is buffered is written first.
   *
   * Rejects with `usage` for a bad query value, `store-error` or `unavailable` when the store cannot
   * be read.
   */
  query(query?: AuditQuery): Promise<AuditEntry[]>;
}

/** How an audit log has fared since it opened. */
export interface AuditStats {
  /** Entries handed to `record`. */
  recorded: number;
  /** Entries the store has accepted. */
  written: number;
  /** Entries waiting to be written (retried after a failed write). */
  pending: number;
  /** Entries given up on: the buffer was full while the store failed. */
  dropped: number;
  /** Writes that failed. */
  failures: number;
  /** What the last failed write said, until a write succeeds again. */
  lastError?: string;
}

/**
 * An audit log: `record` never throws and never waits (entries are buffered and written in batches),
 * a failing store is counted and reported, never passed on to the call being recorded.
 */
export interface AuditLog extends AuditReader {
  /** Buffers one entry for writing. Never throws, never blocks. */
  record(entry: AuditEntry): void;
  /** Writes what is buffered now. Never rejects: a failure is counted in {@link stats}. */
  flush(): Promise<void>;
  /** Counts since the log opened. */
  stats(): AuditStats;
  /** Writes what is buffered, then closes the store. Idempotent. */
  close(): Promise<void>;
}

/** What the `onError` hook of an audit log hears: a write that failed. */
export interface AuditErrorEvent {
  /** Why the write failed (no machine paths). */
  error: Error;
  /** Entries of the batch that were not written (kept for the next write while there is room). */
  entries: number;
  /** Failed writes in a row, this one included: 1 on the first failure after a success. */
  consecutive: number;
}

/** What the `onRecover` hook of an audit log hears: a write succeeded after failures. */
export interface AuditRecoverEvent {
  /** Failed writes before this success. */
  failures: number;
  /** Entries given up on meanwhile. */
  dropped: number;
}

/** Entries older than this are pruned, by default (7 days). */
export const DEFAULT_AUDIT_MAX_AGE_MS = 7 * 24 * 60 * 60 * 1000;
/** The store is kept under this size, by default (100 MiB). */
export const DEFAULT_AUDIT_MAX_BYTES = 100 * 1024 * 1024;
/** Entries a query answers when it gives no limit. */
export const DEFAULT_AUDIT_QUERY_LIMIT = 100;
/** The most entries one query answers. */
export const MAX_AUDIT_QUERY_LIMIT = 10_000;
