/**
 * @module An abort controller that creates its `AbortSignal` only when someone asks for it.
 *
 * Creating an `AbortSignal` costs several microseconds in Node 20 (it is an `EventTarget`), more than a
 * whole trivial tool call. Most tools never read `ctx.signal`, so `ToolSet` hands them this object and
 * the signal is built on first read; once built, it aborts exactly like a normal one.
 */
export class LazyAbortController {
  #controller: AbortController | undefined;
  #aborted = false;
  #reason: unknown;

  /** The signal (created now if needed; already aborted if {@link abort} ran first). */
  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#aborted) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  /** True once {@link abort} has been called. */
  get aborted(): boolean {
    return this.#aborted;
  }

  /** The reason given to {@link abort}. */
  get reason(): unknown {
    return this.#reason;
  }

  /** Aborts (once); the signal, if it exists, aborts with `reason`. */
  abort(reason: unknown): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason;
    this.#controller?.abort(reason);
  }
}
