/**
 * @module `AuditBuffer`: what every audit store shares. Entries wait in memory and are written in
 * batches, on a short timer or once a batch is full, so recording a call never waits on a disk or a
 * server; a failed write keeps its entries for the next one (bounded), is counted and reported, and
 * the retries back off so a store that keeps failing costs little.
 */
import { numberOption } from '../errors/index.js';
import { notifyHooks, type Hook } from '../tools/index.js';
import type { AuditEntry, AuditErrorEvent, AuditRecoverEvent, AuditStats } from './audit-log.js';

/** How long an entry waits before its batch is written, by default. */
export const DEFAULT_AUDIT_FLUSH_MS = 250;
/** A batch this large is written at once, by default. */
export const DEFAULT_AUDIT_BATCH_SIZE = 500;
/** Entries kept in memory while the store fails, by default; beyond it the oldest are dropped. */
export const DEFAULT_AUDIT_MAX_PENDING = 10_000;
/** The longest wait between retries of a failing store (the wait doubles from `flushMs` up to it). */
export const MAX_AUDIT_RETRY_MS = 30_000;

/**
 * Writes one batch. Returns the entries it could not write (to try again), or nothing when all were
 * written; throwing means none were.
 */
export type AuditBatchWriter = (
  batch: readonly AuditEntry[],
) => readonly AuditEntry[] | void | Promise<readonly AuditEntry[] | void>;

/** Options of {@link AuditBuffer} (and of the audit stores built on it). */
export interface AuditBufferOptions {
  /** How long an entry may wait before its batch is written. @default DEFAULT_AUDIT_FLUSH_MS (250) */
  flushMs?: number;
  /** A batch is written as soon as it has this many entries. @default DEFAULT_AUDIT_BATCH_SIZE (500) */
  batchSize?: number;
  /**
   * Entries kept while writes fail; beyond it the oldest are dropped (counted in `stats().dropped`).
   * @default DEFAULT_AUDIT_MAX_PENDING (10 000)
   */
  maxPending?: number;
  /** Told of each failed write. @default none */
  onError?: Hook<AuditErrorEvent>;
  /** Told when a write succeeds after failures. @default none */
  onRecover?: Hook<AuditRecoverEvent>;
}

/**
 * The batching half of an audit store. Single-flight: one write at a time, in the order recorded.
 *
 * @example
 * ```ts
 * const buffer = new AuditBuffer((batch) => insertAll(batch), { flushMs: 100 });
 * buffer.push(entry); // returns at once; written within 100 ms
 * await buffer.close();
 * ```
 */
export class AuditBuffer {
  readonly #write: AuditBatchWriter;
  readonly #flushMs: number;
  readonly #batchSize: number;
  readonly #maxPending: number;
  readonly #onError: Hook<AuditErrorEvent> | undefined;
  readonly #onRecover: Hook<AuditRecoverEvent> | undefined;
  #pending: AuditEntry[] = [];
  #timer: ReturnType<typeof setTimeout> | undefined;
  #writing: Promise<void> | undefined;
  #closed = false;
  #recorded = 0;
  #written = 0;
  #dropped = 0;
  #failures = 0;
  #consecutive = 0;
  #droppedAtFirstFailure = 0;
  #lastError: string | undefined;

  /** @throws ToolbusError `usage` for a bad option. */
  constructor(write: AuditBatchWriter, options: AuditBufferOptions = {}) {
    this.#write = write;
    this.#flushMs = numberOption('AuditBuffer', 'flushMs', options.flushMs, DEFAULT_AUDIT_FLUSH_MS, {
      max: 60_000,
    });
    this.#batchSize = numberOption('AuditBuffer', 'batchSize', options.batchSize, DEFAULT_AUDIT_BATCH_SIZE, {
      integer: true,
    });
    this.#maxPending = numberOption(
      'AuditBuffer',
      'maxPending',
      options.maxPending,
      DEFAULT_AUDIT_MAX_PENDING,
      { integer: true },
    );
    this.#onError = options.onError;
    this.#onRecover = options.onRecover;
  }

  /** Buffers an entry; never throws. After `close`, entries are counted as dropped. */
  push(entry: AuditEntry): void {
    this.#recorded += 1;
    if (this.#closed) {
      this.#dropped += 1;
      return;
    }
    this.#pending.push(entry);
    this.#trim();
    if (this.#consecutive > 0) {
      // The store fails: wait for the retry already planned instead of hammering it.
      this.#schedule(this.#retryMs());
    } else if (this.#pending.length >= this.#batchSize) {
      // Not inline: the hook that recorded must return before any writing starts.
      this.#schedule(0);
    } else {
      this.#schedule(this.#flushMs);
    }
  }

  /** Writes everything buffered now (waiting for a write in progress first). Never rejects. */
  async flush(): Promise<void> {
    if (this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    while (this.#writing) await this.#writing;
    if (this.#pending.length === 0) return;
    this.#writing = this.#writeAll().finally(() => {
      this.#writing = undefined;
    });
    await this.#writing;
  }

  /** Counts since the buffer was made. */
  stats(): AuditStats {
    return {
      recorded: this.#recorded,
      written: this.#written,
      pending: this.#pending.length,
      dropped: this.#dropped,
      failures: this.#failures,
      ...(this.#lastError !== undefined ? { lastError: this.#lastError } : {}),
    };
  }

  /** Writes what is buffered (one try), then refuses new entries. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    await this.flush();
    this.#closed = true;
    this.#dropped += this.#pending.length;
    this.#pending = [];
  }

  #schedule(delayMs: number): void {
    if (this.#timer !== undefined) {
      if (delayMs > 0) return;
      clearTimeout(this.#timer);
    }
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.flush();
    }, delayMs);
    // A buffered entry must not keep a process alive that is otherwise done; close() writes it.
    this.#timer.unref?.();
  }

  /** Keeps at most `maxPending` entries, dropping the oldest. */
  #trim(): void {
    const over = this.#pending.length - this.#maxPending;
    if (over > 0) {
      this.#pending.splice(0, over);
      this.#dropped += over;
    }
  }

  async #writeAll(): Promise<void> {
    while (this.#pending.length > 0) {
      const batch = this.#pending.splice(0, this.#batchSize);
      let left: readonly AuditEntry[];
      let failure: unknown;
      try {
        left = (await this.#write(batch)) ?? [];
      } catch (error) {
        left = batch;
        failure = error;
      }
      this.#written += batch.length - left.length;
      if (left.length === 0) {
        this.#succeeded();
        continue;
      }
      // Put back in front, so the order is kept; the next timer tries again.
      this.#pending.unshift(...left);
      this.#trim();
      this.#failed(failure ?? new Error(`${left.length} of ${batch.length} entries were not written`), left);
      if (!this.#closed) this.#schedule(this.#retryMs());
      return;
    }
  }

  /** `flushMs`, doubled for each failed write in a row, at most {@link MAX_AUDIT_RETRY_MS}. */
  #retryMs(): number {
    return Math.min(this.#flushMs * 2 ** Math.min(this.#consecutive - 1, 16), MAX_AUDIT_RETRY_MS);
  }

  #succeeded(): void {
    if (this.#consecutive === 0) return;
    const event: AuditRecoverEvent = {
      failures: this.#consecutive,
      dropped: this.#dropped - this.#droppedAtFirstFailure,
    };
    this.#consecutive = 0;
    this.#lastError = undefined;
    notifyHooks(this.#onRecover, event);
  }

  #failed(error: unknown, left: readonly AuditEntry[]): void {
    if (this.#consecutive === 0) this.#droppedAtFirstFailure = this.#dropped;
    this.#failures += 1;
    this.#consecutive += 1;
    const err = error instanceof Error ? error : new Error(String(error));
    this.#lastError = err.message;
    notifyHooks(this.#onError, { error: err, entries: left.length, consecutive: this.#consecutive });
  }
}
