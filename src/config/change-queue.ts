/**
 * @module A bounded, single-consumer async queue: the iterator behind `ConfigStore.watch()`.
 */
import { ToolbusError } from '../errors/index.js';

/** How many undelivered items a watch buffers by default before it fails. */
export const DEFAULT_WATCH_BUFFER = 10_000;

/** Options of {@link ChangeQueue}. */
export interface ChangeQueueOptions {
  /** Ends the iteration (without an error) when aborted. @default none */
  signal?: AbortSignal;
  /**
   * Undelivered items kept before the queue fails with `store-error` (the consumer fell behind; a
   * consumer such as the registry then re-reads everything). @default DEFAULT_WATCH_BUFFER (10 000)
   */
  maxBuffered?: number;
  /** Called once when the iteration ends for any reason: release subscriptions here. */
  onClose?: () => void;
  /** Names the source in errors. @default 'watch' */
  what?: string;
}

/**
 * A push-to-pull bridge: producers call {@link push}/{@link fail}/{@link end}; one consumer iterates.
 * Leaving a `for await` early closes the queue and calls `onClose`. A second iteration throws.
 */
export class ChangeQueue<T> implements AsyncIterable<T> {
  #items: T[] = [];
  #waiter: { resolve: (r: IteratorResult<T>) => void; reject: (e: unknown) => void } | undefined;
  #done = false;
  #error: unknown;
  #iterated = false;
  readonly #max: number;
  readonly #onClose: (() => void) | undefined;
  readonly #what: string;
  readonly #signal: AbortSignal | undefined;
  readonly #onAbort = (): void => this.end();

  constructor(options: ChangeQueueOptions = {}) {
    this.#max = options.maxBuffered ?? DEFAULT_WATCH_BUFFER;
    this.#onClose = options.onClose;
    this.#what = options.what ?? 'watch';
    this.#signal = options.signal;
    if (this.#signal?.aborted) queueMicrotask(() => this.end());
    else this.#signal?.addEventListener('abort', this.#onAbort, { once: true });
  }

  /** True once the queue has ended or failed. */
  get closed(): boolean {
    return this.#done;
  }

  /** Adds an item; fails the queue when the consumer is more than `maxBuffered` items behind. */
  push(item: T): void {
    if (this.#done) return;
    if (this.#waiter) {
      const w = this.#waiter;
      this.#waiter = undefined;
      w.resolve({ value: item, done: false });
      return;
    }
    if (this.#items.length >= this.#max) {
      this.fail(
        new ToolbusError(
          'store-error',
          `${this.#what}: the consumer fell more than ${this.#max} changes behind; ` +
            'watch again (with includeExisting) to resynchronise',
        ),
      );
      return;
    }
    this.#items.push(item);
  }

  /** Ends the iteration after the buffered items with `error`. */
  fail(error: unknown): void {
    if (this.#done) return;
    this.#error = error;
    this.#finish();
  }

  /** Ends the iteration after the buffered items. Idempotent. */
  end(): void {
    if (this.#done) return;
    this.#finish();
  }

  #finish(): void {
    this.#done = true;
    this.#signal?.removeEventListener('abort', this.#onAbort);
    this.#onClose?.();
    const w = this.#waiter;
    this.#waiter = undefined;
    if (w) {
      if (this.#error !== undefined) w.reject(this.#error);
      else w.resolve({ value: undefined, done: true });
    }
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    if (this.#iterated) {
      throw new ToolbusError(
        'invalid-request',
        `${this.#what}: this iterable has one consumer and is already iterated`,
      );
    }
    this.#iterated = true;
    return {
      next: () => {
        if (this.#items.length > 0) return Promise.resolve({ value: this.#items.shift() as T, done: false });
        if (this.#done) {
          if (this.#error !== undefined) {
            const e = this.#error;
            this.#error = undefined;
            return Promise.reject(e);
          }
          return Promise.resolve({ value: undefined, done: true });
        }
        return new Promise((resolve, reject) => {
          this.#waiter = { resolve, reject };
        });
      },
      return: () => {
        this.#items = [];
        this.end();
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }
}
