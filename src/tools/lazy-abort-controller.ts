/**
 * @module An abort controller that creates its `AbortSignal` only when someone asks for it.
 *
 * Creating an `AbortSignal` costs several microseconds in Node 20 (it is an `EventTarget`), more than a
 * whole trivial tool call. Most tools never read `ctx.signal`, so `ToolSet` hands them this object and
 * the signal is built on first read; once built, it aborts exactly like a normal one.
 *
 * It also carries the call's race: whoever waits on the call's work sets {@link stop} to the `reject`
 * of the promise it waits on, and {@link abort} calls it, so the call ends even when the tool ignores
 * its signal.
 */
export class LazyAbortController {
  #controller: AbortController | undefined;
  #aborted = false;
  #reason: unknown;
  /** Rejects the promise the call waits on now; {@link abort} calls it with the reason. */
  stop: ((reason: unknown) => void) | undefined = undefined;
  /**
   * Set by `BaseTool[startRun]`: true when what it returned is the tool's own `run` result, whose
   * rejections still need mapping to the `ToolError` that `runJson` would give.
   */
  rawRun = false;

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

  /** Aborts (once); the signal, if it exists, aborts with `reason`, then {@link stop} runs. */
  abort(reason: unknown): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason;
    this.#controller?.abort(reason);
    this.stop?.(reason);
  }

  /**
   * Resolves like `running`, or rejects with the abort reason as soon as {@link abort} runs (at once if
   * it already has). `running` must be a promise: anything else rejects, as awaiting its `then` would.
   */
  race(running: Promise<unknown>): Promise<unknown> {
    return new Promise<unknown>((resolve, reject) => {
      this.stop = reject;
      if (this.#aborted) reject(this.#reason);
      running.then(resolve, reject);
    });
  }
}
