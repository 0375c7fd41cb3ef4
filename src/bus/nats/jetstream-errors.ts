/**
 * @module How JetStream and key-value failures become toolbus errors, once for every store on NATS (the
 * config store, the call store): an outage is `unavailable`, a closed connection `closed`, the rest
 * `store-error`; and which failure is a compare-and-set conflict.
 */
import { ToolbusError, isToolbusError } from '../../errors/index.js';

/** JetStream's "wrong last sequence" codes: a compare-and-set write met another writer's revision. */
const WRONG_LAST_SEQUENCE = new Set([10071, 10164]);

/** True when `error` is a key-value write refused for a revision that did not match (another writer came first). */
export function isRevisionConflict(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return (
    (typeof code === 'number' && WRONG_LAST_SEQUENCE.has(code)) ||
    /wrong last sequence/i.test(String((error as Error | null)?.message))
  );
}

/** The toolbus error for a failure of `what` (e.g. `cannot write call 'x'`) on JetStream. */
export function jetStreamStoreError(error: unknown, what: string): ToolbusError {
  if (isToolbusError(error)) return error as ToolbusError;
  const err = error instanceof Error ? error : new Error(String(error));
  if (err.name === 'ClosedConnectionError' || err.name === 'DrainingConnectionError') {
    return new ToolbusError('closed', `${what}: the NATS connection is closed`, { cause: err });
  }
  if (/jetstream not enabled|JetStreamNotEnabled|no responders/i.test(`${err.name} ${err.message}`)) {
    return new ToolbusError(
      'unavailable',
      `${what}: JetStream is not available (${err.message}); expected nats-server running with -js ` +
        `(just after a restart it takes a few seconds to come back)`,
      { cause: err },
    );
  }
  // The server took the request but JetStream did not answer in time, or said it is not ready (a
  // restart, a leader election): a matter of waiting, not a fault of the store or of the request.
  if (err.name === 'TimeoutError' || /temporarily unavailable|\b10008\b/i.test(err.message)) {
    return new ToolbusError(
      'unavailable',
      `${what}: JetStream did not answer (${err.message}); the NATS server may be restarting, try again shortly`,
      { cause: err },
    );
  }
  return new ToolbusError('store-error', `${what}: ${err.message}`, { cause: err });
}
