/**
 * @module `MemoryBus`: the in-process `MessageBus`, the embedded default and the test double.
 */
import { ToolbusError } from '../errors/index.js';
import { notifyHooks } from '../tools/index.js';
import type {
  BusHandler,
  BusHooks,
  BusMessage,
  BusProperties,
  BusSubscription,
  MessageBus,
  PublishOptions,
  SubscribeOptions,
} from './message-bus.js';
import { canonicalTopic } from './topics.js';
import type { CallStore, DurableCalls } from './durable.js';
import { MemoryCallStore } from './memory-call-store.js';
import { MemoryDurableQueue } from './memory-durable-queue.js';

/** Options of {@link MemoryBus}. */
export interface MemoryBusOptions {
  /** Reports handler failures the bus absorbed. @default no hooks */
  hooks?: BusHooks;
  /**
   * Where durable calls keep their states and results (`toolbus up` gives a SQLite one, so `async`
   * calls can be fetched after a restart). Not closed by the bus. @default a `MemoryCallStore`
   */
  callStore?: CallStore;
}

interface Subscriber {
  readonly handler: BusHandler;
  readonly topic: string;
  active: boolean;
}

/** The members of one group on one topic, served round-robin. */
interface Group {
  members: Subscriber[];
  next: number;
}

/** Everything subscribed to one canonical topic. */
interface TopicEntry {
  broadcast: Subscriber[];
  groups: Map<string, Group>;
}

const EMPTY_PROPERTIES: BusProperties = Object.freeze({});
/** What every accepted publish returns: one settled promise, so callers can tell it needs no handler. */
const RESOLVED: Promise<void> = Promise.resolve();
/** Canonical names remembered per bus; beyond this many distinct names the cache starts over. */
const MAX_CACHED_TOPICS = 1024;
const encoder = new TextEncoder();

/** A delivered message. A string body stays a string until a subscriber reads `body`. */
class MemoryMessage implements BusMessage {
  #body: Uint8Array | undefined;
  readonly text: string | undefined;

  constructor(
    readonly topic: string,
    body: Uint8Array | string,
    readonly properties: BusProperties,
  ) {
    if (typeof body === 'string') this.text = body;
    else this.#body = body;
  }

  get body(): Uint8Array {
    return (this.#body ??= encoder.encode(this.text));
  }
}

/**
 * An in-process {@link MessageBus}.
 *
 * - Subscribers sharing a `group` compete: each message goes to one of them, round-robin. Subscribers
 *   without a group each get every message.
 * - Delivery is asynchronous (a microtask after `publish`), never re-entrant inside `publish`.
 * - A handler that throws or rejects is reported through `hooks.onHandlerError`; delivery goes on.
 * - `publish` to a topic nobody subscribes to calls `options.onUnavailable` with code `unavailable`; so
 *   does a message whose every subscriber left before it was delivered.
 * - Topic names are mapped by `canonicalTopic`, so `non-persistent://tg/request/joke` and
 *   `request:tg:joke` are the same topic.
 *
 * @example
 * ```ts
 * const bus = new MemoryBus();
 * await bus.subscribe('request:tg:joke', (m) => console.log(new TextDecoder().decode(m.body)), {
 *   group: 'joke',
 * });
 * await bus.publish('non-persistent://tg/request/joke', '{"user":"alice"}', { id: '1' });
 * ```
 */
export class MemoryBus implements MessageBus {
  readonly #topics = new Map<string, TopicEntry>();
  readonly #hooks: BusHooks;
  readonly #canonical = new Map<string, string>();
  #closed = false;
  #resolveClosed!: (value: void | Error) => void;

  /** Resolves (never rejects) once {@link close} has run. */
  readonly closed: Promise<void | Error>;
  /** Durable calls in process: a queue in memory (no crash recovery) and `options.callStore`. */
  readonly durable: DurableCalls;
  readonly #queue = new MemoryDurableQueue();

  constructor(options: MemoryBusOptions = {}) {
    this.#hooks = { ...options.hooks };
    this.durable = { queue: this.#queue, store: options.callStore ?? new MemoryCallStore() };
    this.closed = new Promise((resolve) => {
      this.#resolveClosed = resolve;
    });
  }

  /** Rejects with code `closed` after {@link close}, and `invalid-config` for a malformed topic name. */
  publish(
    topic: string,
    body: Uint8Array | string,
    properties: BusProperties = EMPTY_PROPERTIES,
    options?: PublishOptions,
  ): Promise<void> {
    if (this.#closed) {
      return Promise.reject(new ToolbusError('closed', `bus is closed: cannot publish to topic '${topic}'`));
    }
    let key: string;
    try {
      key = this.#key(topic);
    } catch (error) {
      return Promise.reject(error);
    }
    const entry = this.#topics.get(key);
    const message = new MemoryMessage(topic, body, properties);
    const onUnavailable = options?.onUnavailable;
    // With a caller to tell, count what the message reaches: when every subscriber it was routed to has
    // left before its turn, it reached nobody, which is `unavailable` too (not a silent loss).
    const tracker: DeliveryTracker | undefined = onUnavailable
      ? { left: 0, reached: false, report: () => onUnavailable(unavailable(topic, key)) }
      : undefined;
    let targets = 0;
    if (entry) {
      for (const sub of entry.broadcast) {
        targets++;
        queueMicrotask(() => this.#deliver(sub, message, tracker));
      }
      for (const group of entry.groups.values()) {
        const member = pick(group);
        if (!member) continue;
        targets++;
        queueMicrotask(() =>
          this.#deliver(member.active ? member : (pick(group) ?? member), message, tracker),
        );
      }
    }
    if (tracker) {
      tracker.left = targets;
      if (targets === 0) queueMicrotask(tracker.report);
    }
    return RESOLVED;
  }

  /** Rejects with code `closed` after {@link close}, and `invalid-config` for a malformed topic name. */
  subscribe(topic: string, handler: BusHandler, options: SubscribeOptions = {}): Promise<BusSubscription> {
    if (this.#closed) {
      return Promise.reject(
        new ToolbusError('closed', `bus is closed: cannot subscribe to topic '${topic}'`),
      );
    }
    let key: string;
    try {
      key = this.#key(topic);
    } catch (error) {
      return Promise.reject(error);
    }
    let entry = this.#topics.get(key);
    if (!entry) {
      entry = { broadcast: [], groups: new Map() };
      this.#topics.set(key, entry);
    }
    const sub: Subscriber = { handler, topic, active: true };
    const groupName = options.group;
    if (groupName === undefined) {
      entry.broadcast.push(sub);
    } else {
      let group = entry.groups.get(groupName);
      if (!group) {
        group = { members: [], next: 0 };
        entry.groups.set(groupName, group);
      }
      group.members.push(sub);
    }
    const subscription: BusSubscription = {
      unsubscribe: () => {
        this.#remove(key, sub, groupName);
        return Promise.resolve();
      },
    };
    return Promise.resolve(subscription);
  }

  /** Drops every subscription; later `publish`/`subscribe` reject with `closed`. Idempotent. */
  close(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      this.#queue.close();
      for (const entry of this.#topics.values()) {
        for (const sub of entry.broadcast) sub.active = false;
        for (const group of entry.groups.values()) for (const sub of group.members) sub.active = false;
      }
      this.#topics.clear();
      this.#resolveClosed();
    }
    return Promise.resolve();
  }

  /** Alias of {@link close}. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /** The canonical name of a topic, cached: publish is the hot path. */
  #key(topic: string): string {
    let key = this.#canonical.get(topic);
    if (key === undefined) {
      key = canonicalTopic(topic);
      if (this.#canonical.size >= MAX_CACHED_TOPICS) this.#canonical.clear();
      this.#canonical.set(topic, key);
    }
    return key;
  }

  #remove(key: string, sub: Subscriber, groupName: string | undefined): void {
    if (!sub.active) return;
    sub.active = false;
    const entry = this.#topics.get(key);
    if (!entry) return;
    if (groupName === undefined) {
      entry.broadcast = entry.broadcast.filter((s) => s !== sub);
    } else {
      const group = entry.groups.get(groupName);
      if (group) {
        group.members = group.members.filter((s) => s !== sub);
        if (group.members.length === 0) entry.groups.delete(groupName);
      }
    }
    if (entry.broadcast.length === 0 && entry.groups.size === 0) this.#topics.delete(key);
  }

  #deliver(sub: Subscriber, message: BusMessage, tracker: DeliveryTracker | undefined): void {
    if (tracker) {
      if (sub.active) tracker.reached = true;
      if (--tracker.left === 0 && !tracker.reached) tracker.report();
    }
    // A subscriber that left after the message was routed (and, in a group, with no member left to
    // take it) drops it; the publisher heard of it through `onUnavailable` when it asked.
    if (!sub.active) return;
    try {
      const result = sub.handler(message);
      if (result !== undefined && typeof (result as Promise<void>).then === 'function') {
        (result as Promise<void>).then(undefined, (error: unknown) => this.#report(error, message));
      }
    } catch (error) {
      this.#report(error, message);
    }
  }

  #report(error: unknown, message: BusMessage): void {
    try {
      notifyHooks(this.#hooks.onHandlerError, { error, message });
    } catch {
      // A failing hook must not take the bus down either.
    }
  }
}

/** Counts the deliveries of one message whose publisher asked to hear when it reaches nobody. */
interface DeliveryTracker {
  left: number;
  reached: boolean;
  report: () => void;
}

function unavailable(topic: string, key: string): ToolbusError {
  return new ToolbusError('unavailable', `no subscriber on topic '${topic}' (canonical '${key}')`);
}

/** The next active member of a group, round-robin. */
function pick(group: Group): Subscriber | undefined {
  const members = group.members;
  const n = members.length;
  for (let i = 0; i < n; i++) {
    const member = members[group.next % n]!;
    group.next = (group.next + 1) % n;
    if (member.active) return member;
  }
  return undefined;
}
