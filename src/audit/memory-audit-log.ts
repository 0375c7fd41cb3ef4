/**
 * @module `MemoryAuditLog`: the audit log in memory, bounded by age and count. The test double, and the
 * log of a process that keeps no files.
 */
import { ToolbusError, numberOption } from '../errors/index.js';
import {
  DEFAULT_AUDIT_MAX_AGE_MS,
  type AuditEntry,
  type AuditLog,
  type AuditQuery,
  type AuditStats,
} from './audit-log.js';
import { matchesAuditQuery, resolveAuditQuery } from './audit-query.js';

/** Entries a {@link MemoryAuditLog} keeps, by default. */
export const DEFAULT_MEMORY_AUDIT_ENTRIES = 10_000;

/** Options of {@link MemoryAuditLog}. */
export interface MemoryAuditLogOptions {
  /** Entries older than this are forgotten. @default DEFAULT_AUDIT_MAX_AGE_MS (7 days) */
  maxAgeMs?: number;
  /** The most entries kept; the oldest go first. @default DEFAULT_MEMORY_AUDIT_ENTRIES (10 000) */
  maxEntries?: number;
  /** The clock. @default Date.now */
  now?: () => number;
}

/**
 * An {@link AuditLog} in memory. Records synchronously (nothing to wait for), so `flush` has nothing to do.
 *
 * @example
 * ```ts
 * const log = new MemoryAuditLog();
 * const tools = new ToolSet([echo], { hooks: auditToolSetHooks(log) });
 * await tools.call('echo', '{"text":"hi"}', { caller: 'test' });
 * console.log(await log.query({ tool: 'echo' }));
 * ```
 */
export class MemoryAuditLog implements AuditLog {
  readonly #entries: AuditEntry[] = [];
  readonly #maxAgeMs: number;
  readonly #maxEntries: number;
  readonly #now: () => number;
  #recorded = 0;
  #dropped = 0;
  #closed = false;

  /** @throws ToolbusError `usage` for a bad option. */
  constructor(options: MemoryAuditLogOptions = {}) {
    this.#maxAgeMs = numberOption('MemoryAuditLog', 'maxAgeMs', options.maxAgeMs, DEFAULT_AUDIT_MAX_AGE_MS, {
      infinity: true,
    });
    this.#maxEntries = numberOption(
      'MemoryAuditLog',
      'maxEntries',
      options.maxEntries,
      DEFAULT_MEMORY_AUDIT_ENTRIES,
      { integer: true },
    );
    this.#now = options.now ?? Date.now;
  }

  record(entry: AuditEntry): void {
    this.#recorded += 1;
    if (this.#closed) {
      this.#dropped += 1;
      return;
    }
    this.#entries.push(structuredClone(entry));
    if (this.#entries.length > this.#maxEntries) this.#entries.shift();
  }

  query(query?: AuditQuery): Promise<AuditEntry[]> {
    try {
      const resolved = resolveAuditQuery(query);
      if (this.#closed) throw new ToolbusError('closed', 'the audit log is closed');
      this.#prune();
      const found: AuditEntry[] = [];
      // Newest first until the limit, then back to oldest first.
      for (let i = this.#entries.length - 1; i >= 0 && found.length < resolved.limit; i -= 1) {
        const entry = this.#entries[i]!;
        if (matchesAuditQuery(entry, resolved)) found.push(structuredClone(entry));
      }
      return Promise.resolve(found.reverse());
    } catch (error) {
      return Promise.reject(error);
    }
  }

  flush(): Promise<void> {
    return Promise.resolve();
  }

  stats(): AuditStats {
    return {
      recorded: this.#recorded,
      written: this.#recorded - this.#dropped,
      pending: 0,
      dropped: this.#dropped,
      failures: 0,
    };
  }

  close(): Promise<void> {
    this.#closed = true;
    return Promise.resolve();
  }

  /** Alias of {@link close}. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  #prune(): void {
    if (!Number.isFinite(this.#maxAgeMs)) return;
    const cutoff = this.#now() - this.#maxAgeMs;
    let old = 0;
    while (old < this.#entries.length && Date.parse(this.#entries[old]!.time) < cutoff) old += 1;
    if (old > 0) this.#entries.splice(0, old);
  }
}
