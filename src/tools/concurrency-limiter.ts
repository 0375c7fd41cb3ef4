/**
 * @module A FIFO concurrency limiter whose waiters can be cancelled.
 */

interface Waiter {
  resolve: () => void;
  cancelled: boolean;
}

/**
 * Lets at most `limit` holders in at once; the others wait in arrival order. A slot is handed straight
 * from the releasing holder to the next waiter, so a late arrival cannot overtake the queue.
 */
export class ConcurrencyLimiter {
  readonly #limit: number;
  #active = 0;
  readonly #queue: Waiter[] = [];
  #head = 0;

  constructor(limit: number) {
    this.#limit = limit;
  }

  /** Calls holding a slot now. */
  get active(): number {
    return this.#active;
  }

  /** Calls waiting for a slot now. */
  get waiting(): number {
    let n = 0;
    for (let i = this.#head; i < this.#queue.length; i++) if (!(this.#queue[i] as Waiter).cancelled) n++;
    return n;
  }

  /** Takes a slot at once if one is free; returns false otherwise. */
  tryAcquire(): boolean {
    if (this.#active < this.#limit && this.#head === this.#queue.length) {
      this.#active++;
      return true;
    }
    return false;
  }

  /**
   * Waits for a slot. Resolves when the caller holds it; rejects with `signal.reason` if the signal
   * aborts first (the waiter leaves the queue).
   */
  acquire(signal: AbortSignal): Promise<void> {
    if (this.tryAcquire()) return Promise.resolve();
    if (signal.aborted) return Promise.reject(signal.reason);
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        resolve: () => {
          signal.removeEventListener('abort', onAbort);
          resolve();
        },
        cancelled: false,
      };
      const onAbort = (): void => {
        waiter.cancelled = true;
        this.#compact();
        reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.#queue.push(waiter);
    });
  }

  /** Gives a slot back, handing it to the next waiter if any. */
  release(): void {
    // Nobody waiting (the usual case): nothing to hand over or compact.
    if (this.#head === this.#queue.length) {
      this.#active--;
      return;
    }
    while (this.#head < this.#queue.length) {
      const next = this.#queue[this.#head] as Waiter;
      this.#head++;
      if (!next.cancelled) {
        this.#compact();
        next.resolve();
        return;
      }
    }
    this.#compact();
    this.#active--;
  }

  /** Drops consumed and cancelled entries from the front so the queue does not grow without bound. */
  #compact(): void {
    while (this.#head < this.#queue.length && (this.#queue[this.#head] as Waiter).cancelled) this.#head++;
    if (this.#head === this.#queue.length) {
      // Setting `length` costs a runtime call even on an empty array.
      if (this.#head !== 0) this.#queue.length = 0;
      this.#head = 0;
    } else if (this.#head > 1024 && this.#head * 2 > this.#queue.length) {
      this.#queue.splice(0, this.#head);
      this.#head = 0;
    }
  }
}
