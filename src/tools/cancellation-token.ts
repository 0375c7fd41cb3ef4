/**
 * @module `CancellationToken`, kept for parity with the Saptiva-Agents guide.
 */
import { onAbort } from './abort-fanout.js';

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
  /** Stops following the signal given to {@link fromSignal}; `undefined` when there is none. */
  #unlink: (() => void) | undefined;

  /** The signal that aborts when {@link cancel} is called. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** Cancels; callbacks run once. Calling it again does nothing. */
  cancel(reason?: unknown): void {
    this.dispose();
    this.#controller.abort(reason);
  }

  /**
   * Stops following the signal this token was made from ({@link fromSignal}); call it when the
   * operation the token was for has ended, so a long-lived signal keeps nothing of it. The token itself
   * stays usable: {@link cancel} still works. Also `using token = CancellationToken.fromSignal(s)`.
   */
  dispose(): void {
    const unlink = this.#unlink;
    this.#unlink = undefined;
    unlink?.();
  }

  /** Same as {@link dispose}. */
  [Symbol.dispose](): void {
    this.dispose();
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

  /**
   * A token cancelled when `signal` aborts (with its reason). It follows `signal` until it is cancelled
   * or {@link dispose}d: dispose it when done if `signal` outlives the operation (an agent run's or a
   * server's signal), or each token stays attached to it.
   */
  static fromSignal(signal: AbortSignal): CancellationToken {
    const token = new CancellationToken();
    if (signal.aborted) token.cancel(signal.reason);
    // Through the fan-out: many tokens on one signal share one listener (no MaxListeners warning).
    else token.#unlink = onAbort(signal, () => token.cancel(signal.reason));
    return token;
  }
}
