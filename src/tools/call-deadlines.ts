/**
 * @module Per-call timeouts on one timer per timeout value, instead of a `setTimeout` per call. Used by
 * `ToolSet` and by `ToolServiceClient` (through `tools/index.ts`).
 *
 * A `setTimeout`/`clearTimeout` pair and its garbage cost about as much as the rest of a call's
 * bookkeeping. Calls with the same `timeoutMs` expire in the order they started, so each timeout value
 * needs one FIFO list and one timer armed for its oldest live entry; settled entries are skipped lazily.
 * The timer holds the process open only while a live entry exists, as a per-call timer would.
 *
 * The bookkeeping lives on the scheduled object itself ({@link Schedulable}): with hundreds of calls in
 * flight, every object a call keeps alive until its response survives a young-generation collection and
 * gets copied, so one object fewer per call is measurably less GC work.
 */
// Imported, not the global: `globalThis.performance` is a lazy getter, read on every use.
import { performance } from 'node:perf_hooks';

/** The fields a scheduled object carries for {@link CallDeadlines}; start with `dueAt: 0, dueQueue: undefined`. */
export interface Schedulable {
  /** When it expires, in `performance.now()` time. */
  dueAt: number;
  /** The queue it waits in; undefined when not scheduled, expired or cancelled. */
  dueQueue: unknown;
}

interface DeadlineQueue<T extends Schedulable> {
  readonly ms: number;
  readonly entries: T[];
  head: number;
  timer: ReturnType<typeof setTimeout> | undefined;
  /** Whether the timer holds the process open (only while a live entry exists). */
  held: boolean;
  /** When the armed timer is due: a timer that fired proves at least this much time passed. */
  armedUntil: number;
}

/** Node timers may fire up to ~1 ms before `performance.now()` agrees. */
const SLACK_MS = 1;
/**
 * The longest delay `setTimeout` and `setInterval` honour (2^31 - 1 ms, about 24.8 days). Node runs a
 * longer one after 1 ms, so every timer built from a user's timeout is capped or re-armed at this.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;
/** Distinct timeout values kept; a client rarely sees more than a handful. */
const MAX_QUEUES = 64;

/** Calls `expire(target, ms)` once `ms` milliseconds after {@link add}, unless cancelled first. */
export class CallDeadlines<T extends Schedulable> {
  readonly #queues = new Map<number, DeadlineQueue<T>>();
  readonly #expire: (target: T, ms: number) => void;

  constructor(expire: (target: T, ms: number) => void) {
    this.#expire = expire;
  }

  /** Schedules `target`, which must not be scheduled already. */
  add(ms: number, target: T): void {
    let queue = this.#queues.get(ms);
    if (queue === undefined) {
      if (this.#queues.size >= MAX_QUEUES) this.#dropIdleQueues();
      queue = { ms, entries: [], head: 0, timer: undefined, held: false, armedUntil: 0 };
      this.#queues.set(ms, queue);
    }
    const now = performance.now();
    target.dueAt = now + ms;
    target.dueQueue = queue;
    queue.entries.push(target);
    if (queue.timer === undefined) this.#arm(queue, ms, now);
    else if (!queue.held) {
      queue.timer.ref();
      queue.held = true;
    }
  }

  /** Forgets a target's timeout (idempotent). */
  cancel(target: T): void {
    const queue = target.dueQueue as DeadlineQueue<T> | undefined;
    if (queue === undefined) return;
    target.dueQueue = undefined;
    // The newest entry (a call that settled before any later one started, as sequential calls do)
    // leaves at once: a pop is far cheaper than emptying the list by setting its length.
    const entries = queue.entries;
    if (entries[entries.length - 1] === target) entries.pop();
    compact(queue);
  }

  #arm(queue: DeadlineQueue<T>, delay: number, base: number): void {
    // Node fires a longer timer after 1 ms instead; a capped one re-arms until the entry is due.
    const ms = Math.min(Math.max(0, delay), MAX_TIMER_MS);
    queue.armedUntil = base + ms;
    queue.timer = setTimeout(this.#onTimer, ms, queue);
    queue.held = true;
  }

  readonly #onTimer = (queue: DeadlineQueue<T>): void => {
    queue.timer = undefined;
    // Trust the timer as a clock too, so fake timers (node:test `mock.timers`) expire calls.
    const now = Math.max(performance.now(), queue.armedUntil);
    while (queue.head < queue.entries.length) {
      const target = queue.entries[queue.head] as T;
      if (target.dueQueue !== queue) {
        queue.head++;
        continue;
      }
      if (target.dueAt > now + SLACK_MS) break;
      queue.head++;
      target.dueQueue = undefined;
      this.#expire(target, queue.ms);
    }
    compact(queue);
    const next = queue.entries[queue.head];
    if (next !== undefined && queue.timer === undefined) this.#arm(queue, next.dueAt - now, now);
  };

  /** Stops the timers of queues with no live entry, so odd timeout values cannot pile up. */
  #dropIdleQueues(): void {
    for (const [ms, queue] of this.#queues) {
      if (queue.head < queue.entries.length) continue;
      if (queue.timer !== undefined) clearTimeout(queue.timer);
      this.#queues.delete(ms);
    }
  }
}

/** Drops settled entries from the front; resets the list when empty so it never grows without bound. */
function compact<T extends Schedulable>(queue: DeadlineQueue<T>): void {
  const entries = queue.entries;
  while (queue.head < entries.length && (entries[queue.head] as T).dueQueue !== queue) queue.head++;
  if (queue.head === entries.length) {
    // Setting `length` costs a runtime call even on an empty array.
    if (entries.length !== 0) entries.length = 0;
    queue.head = 0;
    // Nothing live: keep the timer (re-arming per call costs more) but let the process exit.
    if (queue.held && queue.timer !== undefined) {
      queue.timer.unref();
      queue.held = false;
    }
  } else if (queue.head > 1024 && queue.head * 2 > entries.length) {
    entries.splice(0, queue.head);
    queue.head = 0;
  }
}
