/**
 * @module Per-call deadlines on one timer per timeout value, instead of one `setTimeout` per call.
 *
 * A `setTimeout`/`clearTimeout` pair plus its garbage costs more than a whole trivial tool call, so a
 * `ToolSet` keeps its deadlines here. Calls with the same `timeoutMs` expire in the order they started,
 * so each timeout value needs one FIFO list and one timer armed for its oldest live entry. Settled
 * entries are dropped from the front as they settle. The timer holds the process open only while a live
 * deadline exists (it is `unref`'d when the list empties), and it stops by itself once it fires with
 * no live entry left.
 */

/** One scheduled deadline; pass it back to {@link DeadlineScheduler.cancel} when the call settles. */
export interface Deadline {
  readonly at: number;
  /** @internal */
  done: boolean;
  /** @internal */
  readonly target: DeadlineTarget;
  /** @internal */
  readonly queue: DeadlineQueue;
}

/** What a deadline calls when it passes (an object, so callers need not allocate a closure). */
export interface DeadlineTarget {
  onDeadline(): void;
}

interface DeadlineQueue {
  readonly entries: Deadline[];
  head: number;
  timer: ReturnType<typeof setTimeout> | undefined;
  /** Whether the timer holds the process open (only while a live deadline exists). */
  held: boolean;
  /** When the armed timer is due: a timer that fired proves at least this much time passed. */
  armedUntil: number;
}

/** Timer granularity tolerance: Node timers may fire up to ~1 ms before `performance.now()` agrees. */
const SLACK_MS = 1;

/** Schedules callbacks at `now + ms`, sharing one timer per distinct `ms`. */
export class DeadlineScheduler {
  readonly #queues = new Map<number, DeadlineQueue>();

  /** Calls `target.onDeadline()` once after `ms` milliseconds unless {@link cancel} is called first. */
  add(ms: number, target: DeadlineTarget): Deadline {
    let queue = this.#queues.get(ms);
    if (queue === undefined) {
      queue = { entries: [], head: 0, timer: undefined, held: false, armedUntil: 0 };
      this.#queues.set(ms, queue);
    }
    const entry: Deadline = { at: performance.now() + ms, done: false, target, queue };
    queue.entries.push(entry);
    if (queue.timer === undefined) this.#arm(queue, ms);
    else if (!queue.held) {
      queue.timer.ref();
      queue.held = true;
    }
    return entry;
  }

  /** Forgets a deadline (idempotent). */
  cancel(entry: Deadline): void {
    if (entry.done) return;
    entry.done = true;
    compact(entry.queue);
  }

  /** Live deadlines (for tests and stats). */
  get pending(): number {
    let n = 0;
    for (const queue of this.#queues.values()) {
      for (let i = queue.head; i < queue.entries.length; i++) if (!(queue.entries[i] as Deadline).done) n++;
    }
    return n;
  }

  #arm(queue: DeadlineQueue, delay: number, base = performance.now()): void {
    queue.armedUntil = base + Math.max(0, delay);
    queue.timer = setTimeout(() => this.#expire(queue), Math.max(0, delay));
    queue.held = true;
  }

  #expire(queue: DeadlineQueue): void {
    queue.timer = undefined;
    // Trust the timer as a clock too, so fake timers (node:test `mock.timers`) expire deadlines.
    const now = Math.max(performance.now(), queue.armedUntil);
    while (queue.head < queue.entries.length) {
      const entry = queue.entries[queue.head] as Deadline;
      if (entry.done) {
        queue.head++;
        continue;
      }
      if (entry.at > now + SLACK_MS) break;
      queue.head++;
      entry.done = true;
      entry.target.onDeadline();
    }
    compact(queue);
    const next = queue.entries[queue.head];
    if (next !== undefined && queue.timer === undefined) this.#arm(queue, next.at - now, now);
  }
}

/** Drops settled entries from the front; resets the list when empty so it never grows without bound. */
function compact(queue: DeadlineQueue): void {
  const entries = queue.entries;
  while (queue.head < entries.length && (entries[queue.head] as Deadline).done) queue.head++;
  if (queue.head === entries.length) {
    entries.length = 0;
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
