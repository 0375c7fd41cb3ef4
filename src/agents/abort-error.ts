/**
 * @module Turns an abort reason into the error a cancelled agent operation rejects with.
 */
import { ToolbusError, isToolbusError } from '../tools/index.js';

/**
 * The error for an aborted operation: the reason itself when it is a `ToolbusError`; code `timeout` for
 * an `AbortSignal.timeout` reason; otherwise code `cancelled` with the reason as `cause`.
 */
export function abortError(signal: AbortSignal, what: string): ToolbusError {
  const reason: unknown = signal.reason;
  if (isToolbusError(reason) && reason instanceof ToolbusError) return reason;
  if (reason instanceof DOMException && reason.name === 'TimeoutError') {
    return new ToolbusError('timeout', `${what} timed out`, { cause: reason });
  }
  return new ToolbusError('cancelled', `${what} was cancelled`, { cause: reason });
}
