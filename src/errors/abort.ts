/**
 * @module What an aborted call rejects with, in every layer: the signal's reason when it is a toolbus
 * error, `timeout` when it came from `AbortSignal.timeout()`, `cancelled` for any other abort.
 */
import { ToolbusError, isToolbusError } from './toolbus-error.js';

/** Anything with an abort reason: an `AbortSignal`, or a controller-like object. */
export interface AbortState {
  readonly aborted: boolean;
  readonly reason: unknown;
}

/**
 * The error to reject with when `signal` has aborted: its reason when that is a toolbus error, a
 * `timeout` error when the reason is a `TimeoutError` (from `AbortSignal.timeout`), otherwise
 * `cancelled` with the reason as `cause`. `what` names the call, e.g. `tool 'tell-joke'`.
 *
 * @example
 * ```ts
 * if (signal.aborted) throw abortError(signal, `tool service 'joke'`);
 * ```
 */
export function abortError(signal: AbortState, what: string): ToolbusError {
  const reason: unknown = signal.reason;
  if (isToolbusError(reason)) return reason;
  if (
    typeof reason === 'object' &&
    reason !== null &&
    (reason as { name?: unknown }).name === 'TimeoutError'
  ) {
    return new ToolbusError('timeout', `${what} timed out`, { cause: reason });
  }
  return new ToolbusError('cancelled', `${what} was cancelled`, { cause: reason });
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
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(abortError(signal, what));
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([work, aborted]);
  } finally {
    signal.removeEventListener('abort', onAbort!);
  }
}
