/**
 * @module Call ids for calls that come without one: a random prefix per source plus a counter.
 *
 * A `randomUUID()` per call cost about a third of a trivial `ToolSet.call`. An id only has to be unique
 * (results, hooks and logs are matched by it, across processes too), not unguessable, so each source
 * draws 64 random bits once and counts from there.
 */
import { randomUUID } from 'node:crypto';

const DIGITS = '0123456789abcdefghijklmnopqrstuvwxyz';

/**
 * Hands out call ids `<16 hex digits>-<counter in base 36, at least two digits>`, unique per source and
 * (by the random prefix) across sources.
 */
export class CallIdSource {
  readonly #prefix = `${randomUUID().replaceAll('-', '').slice(0, 16)}-`;
  /** The prefix and every counter digit but the last, renewed every 36 ids. */
  #block = '';
  #count = 0;

  /** The next id. */
  next(): string {
    // Number-to-text in base 36 is a runtime call: pay it once per 36 ids, and take the last digit from
    // a table (one-character strings are cached, so that costs no allocation).
    const last = this.#count % 36;
    if (last === 0) this.#block = this.#prefix + (this.#count / 36).toString(36);
    this.#count++;
    return this.#block + DIGITS.charAt(last);
  }
}

/** The shape of a task's call id: `task-` and a UUID. */
const TASK_ID = /^task-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * A new call id for a call that runs as a task (an async call, fetched later by its id): `task-` and a
 * UUID. A tool on a durable service keeps such a call's state under this id, so it can be read after
 * the caller, or the process that started it, went away.
 */
export function newTaskId(): string {
  return `task-${randomUUID()}`;
}

/** True when `callId` is a task's (see {@link newTaskId}). */
export function isTaskId(callId: string): boolean {
  return TASK_ID.test(callId);
}
