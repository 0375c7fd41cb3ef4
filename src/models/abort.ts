/**
 * @module Turning an aborted signal into the error toolbus rejects with, and racing work against a signal.
 */
import { ToolbusError, isToolbusError, onAbort } from '../tools/index.js';

/**
 * The error to reject with when `signal` has aborted: its reason when that is a toolbus error, a
 * `timeout` error when the reason is a `TimeoutError` (from `AbortSignal.timeout`), otherwise
 * `cancelled` with the reason as `cause`.
 */
export function abortError(signal: AbortSignal, what: string): ToolbusError {
  const reason: unknown = signal.reason;
  if (reason instanceof ToolbusError || isToolbusError(reason)) return reason as ToolbusError;
  if (reason instanceof DOMException && reason.name === 'TimeoutError') {
    return new ToolbusError('timeout', `${what}: timed out`, { cause: reason });
  }
  return new ToolbusError('cancelled', `${what}: cancelled`, { cause: reason });
}

/**
 * Resolves like `work`, or rejects with {@link abortError} as soon as `signal` aborts. The listener is
 * removed when either settles.
 */
export async function raceSignal<T>(
  work: Promise<T>,
  signal: AbortSignal | undefined,
  what: string,
): Promise<T> {
  if (!signal) return work;
  if (signal.aborted) throw abortError(signal, what);
  let unwatch: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    unwatch = onAbort(signal, () => reject(abortError(signal, what)));
  });
  try {
    return await Promise.race([work, aborted]);
  } finally {
    unwatch?.();
  }
}
