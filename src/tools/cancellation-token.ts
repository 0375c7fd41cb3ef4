/**
 * @module `CancellationToken`, kept for parity with the Saptiva-Agents guide.
 */

/**
 * A cancellation handle wrapping an `AbortController`. Every toolbus API takes an `AbortSignal`; pass
 * `token.signal` (or the token itself where an API accepts either).
 *
 * @example
 * ```ts
 * const token = new CancellationToken();
 * const pending = tool.runJson({ ticker: 'AAPL' }, token);
 * token.cancel();
 * ```
 */
export class CancellationToken {
  readonly #controller = new AbortController();

  /** The signal that aborts when {@link cancel} is called. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** Cancels; callbacks run once. Calling it again does nothing. */
  cancel(reason?: unknown): void {
    this.#controller.abort(reason);
  }

  /** True once {@link cancel} has been called. */
  isCancelled(): boolean {
    return this.#controller.signal.aborted;
  }

  /** Runs `callback` on cancellation, or at once if already cancelled. */
  addCallback(callback: () => void): void {
    if (this.isCancelled()) {
      callback();
      return;
    }
    this.#controller.signal.addEventListener('abort', () => callback(), { once: true });
  }

  /** Links this token to a promise-returning operation's signal. */
  static fromSignal(signal: AbortSignal): CancellationToken {
    const token = new CancellationToken();
    if (signal.aborted) token.cancel(signal.reason);
    else signal.addEventListener('abort', () => token.cancel(signal.reason), { once: true });
    return token;
  }
}
