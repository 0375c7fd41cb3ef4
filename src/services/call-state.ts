/**
 * @module Writes of a call's state shared by its readers and writers (`ToolServiceClient`, `CallTasks`):
 * a compare-and-set update, and the one way to cancel a call kept in a call store.
 */
import type { CallRecord, CallStore, MessageBus } from '../bus/index.js';
import { FINAL_CALL_STATUSES } from '../bus/index.js';
import { ToolbusError } from '../errors/index.js';
import { WireProperty, cancelReasonOf, cancelTopicOf } from './rpc/index.js';

/** Tries of one compare-and-set write that keeps meeting another writer. */
const MAX_WRITE_TRIES = 8;

/** The most characters of result (text and parts) a call record keeps: stores hold about 1 MB per value. */
export const MAX_STORED_RESPONSE_CHARS = 900_000;

/** The characters a completed record's result takes: its text, and its parts (base64 media) as JSON. */
export function storedResultSize(response: string, parts: CallRecord['parts']): number {
  return response.length + (parts === undefined ? 0 : JSON.stringify(parts).length);
}
/** The `service` of a task that runs in the process that started it (not on a tool service). */
export const LOCAL_TASK_SERVICE = 'local';

/**
 * Cancels durable call `id` as kept in `store`: a queued call ends `cancelled` at once (no replica will
 * run it); a running one is marked `cancelRequested` and its replica is told on the service's cancel
 * topic. A final call is left as it is. Resolves with the state after the request, or undefined when
 * there is none.
 */
export async function cancelStoredCall(
  bus: MessageBus,
  store: CallStore,
  id: string,
  reason: string,
): Promise<CallRecord | undefined> {
  const next = await updateCall(store, id, (record) => {
    if (FINAL_CALL_STATUSES.has(record.status)) return undefined;
    const changed: CallRecord = { ...record, cancelRequested: true, updatedAt: Date.now() };
    if (record.status === 'queued') {
      changed.status = 'cancelled';
      changed.error = { type: 'cancelled', message: `call '${id}' was cancelled before it ran: ${reason}` };
    }
    return changed;
  });
  if (next?.status === 'running' && next.service !== LOCAL_TASK_SERVICE) {
    await bus
      .publish(cancelTopicOf(next.service), '', {
        [WireProperty.Id]: id,
        [WireProperty.Cancel]: cancelReasonOf(reason),
      })
      .catch(() => undefined);
  }
  return next;
}

/**
 * A compare-and-set update of record `id`: `change` returns the new record, or undefined to leave it.
 * Resolves with the record as stored after it, or undefined when there is none.
 */
export async function updateCall(
  store: CallStore,
  id: string,
  change: (record: CallRecord) => CallRecord | undefined,
): Promise<CallRecord | undefined> {
  for (let tries = 0; tries < MAX_WRITE_TRIES; tries++) {
    const stored = await store.get(id);
    if (stored === undefined) return undefined;
    const next = change(stored.record);
    if (next === undefined) return stored.record;
    if ((await store.put(next, stored.revision)) !== undefined) return next;
  }
  throw new ToolbusError('store-error', `call '${id}': its state kept changing; try again`);
}
