/**
 * @module The one base class of every error toolbus raises, and the check that recognises it across
 * copies of the package (a brand, not the shape: a Node `ENOENT` has a string `code` too).
 */
import type { ToolbusErrorCode } from './codes.js';

/** The brand every toolbus error carries, shared by every copy of the package in a process. */
const BRAND: unique symbol = Symbol.for('toolbus.ToolbusError') as never;

/**
 * The one base class of every error toolbus raises. `code` is stable; `cause` keeps the underlying error.
 *
 * @example
 * ```ts
 * try { await client.call('alice', {}, {}) } catch (e) {
 *   if (isToolbusError(e) && e.code === 'timeout') retry();
 * }
 * ```
 */
export class ToolbusError extends Error {
  /** The stable code of this failure. */
  readonly code: ToolbusErrorCode;

  constructor(code: ToolbusErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }

  /** @internal The brand {@link isToolbusError} looks for. */
  get [BRAND](): true {
    return true;
  }
}

/**
 * True when `error` is a {@link ToolbusError}, from this copy of the package or another one loaded in the
 * same process. False for any other error, whatever fields it has.
 */
export function isToolbusError(error: unknown): error is ToolbusError {
  return (
    error instanceof ToolbusError ||
    (typeof error === 'object' && error !== null && (error as { [BRAND]?: unknown })[BRAND] === true)
  );
}
