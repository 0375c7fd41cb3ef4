/**
 * @module `MemoryDurableQueue`: the work queue of `MemoryBus`'s durable calls. Requests wait in process
 * memory until a consumer takes them, come back when a consumer neither acks nor says it is working
 * within the ack wait, and are given to another consumer when one releases them. Nothing survives the
 * process: crash recovery needs NATS (JetStream).
 */
import { randomUUID } from 'node:crypto';
import { ToolbusError } from '../errors/index.js';
import type { DurableConsumeOptions, DurableMessage, DurableQueue } from './durable.js';
import type { BusProperties, BusSubscription } from './message-bus.js';
import { canonicalTopic } from './topics.js';

/** How long an enqueue's `dedupeId` is remembered (JetStream's default duplicate window: 2 minutes). */
const DEDUPE_WINDOW_MS = 120_000;

interface Pending {
  readonly topic: string;
  readonly body: string;
  readonly properties: BusProperties;
  attempt: number;
}

interface Consumer {
  readonly handler: (message: DurableMessage) => void;
  readonly options: DurableConsumeOptions;
  held: number;
  active: boolean;
}

interface TopicQueue {
  readonly pending: Pending[];
  readonly consumers: Consumer[];
  next: number;
  /** dedupeId → when it was enqueued. */
  readonly seen: Map<string, number>;
}

const encoder = new TextEncoder();

/** One delivery: acks, in-progress acks and releases go back to the queue once. */
class Delivery implements DurableMessage {
  readonly topic: string;
  readonly text: string;
  readonly properties: BusProperties;
  readonly attempt: number;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #settled = false;

  constructor(
    readonly pending: Pending,
    readonly consumer: Consumer,
    private readonly onSettle: (delivery: Delivery, requeue: boolean) => void,
  ) {
    this.topic = pending.topic;
    this.text = pending.body;
    this.properties = pending.properties;
    this.attempt = pending.attempt;
    this.working();
  }

  get body(): Uint8Array {
    return encoder.encode(this.text);
  }

  ack(): Promise<void> {
    this.#settle(false);
    return Promise.resolve();
  }

  working(): void {
    if (this.#settled) return;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.#settle(true), this.consumer.options.ackWaitMs);
    this.#timer.unref?.();
  }

  release(): void {
    this.#settle(true);
  }

  #settle(requeue: boolean): void {
    if (this.#settled) return;
    this.#settled = true;
    clearTimeout(this.#timer);
    this.onSettle(this, requeue);
  }
}

/** A {@link DurableQueue} in process memory (`crashRecovery: false`). */
export class MemoryDurableQueue implements DurableQueue {
  readonly crashRecovery = false;
  /** This process's queue: what it holds dies with it. */
  readonly holder = randomUUID();
  readonly #topics = new Map<string, TopicQueue>();
  #closed = false;

  enqueue(
    topic: string,
    body: string,
    properties: BusProperties,
    options: { dedupeId: string },
  ): Promise<void> {
    if (this.#closed) {
      return Promise.reject(new ToolbusError('closed', `bus is closed: cannot enqueue on '${topic}'`));
    }
    const queue = this.#queue(topic);
    const now = Date.now();
    for (const [id, at] of queue.seen) {
      if (now - at < DEDUPE_WINDOW_MS) break;
      queue.seen.delete(id);
    }
    if (queue.seen.has(options.dedupeId)) return Promise.resolve();
    queue.seen.set(options.dedupeId, now);
    queue.pending.push({ topic, body, properties, attempt: 0 });
    queueMicrotask(() => this.#dispatch(queue));
    return Promise.resolve();
  }

  consume(
    topic: string,
    handler: (message: DurableMessage) => void,
    options: DurableConsumeOptions,
  ): Promise<BusSubscription> {
    if (this.#closed) {
      return Promise.reject(new ToolbusError('closed', `bus is closed: cannot consume from '${topic}'`));
    }
    const queue = this.#queue(topic);
    const consumer: Consumer = { handler, options, held: 0, active: true };
    queue.consumers.push(consumer);
    queueMicrotask(() => this.#dispatch(queue));
    return Promise.resolve({
      // New deliveries stop; what the consumer holds stays its own until it acks, releases or times out.
      unsubscribe: () => {
        consumer.active = false;
        const at = queue.consumers.indexOf(consumer);
        if (at !== -1) queue.consumers.splice(at, 1);
        return Promise.resolve();
      },
    });
  }

  /** Stops every delivery; what is queued is dropped. */
  close(): void {
    this.#closed = true;
    for (const queue of this.#topics.values()) {
      queue.pending.length = 0;
      for (const consumer of queue.consumers) consumer.active = false;
      queue.consumers.length = 0;
    }
    this.#topics.clear();
  }

  #queue(topic: string): TopicQueue {
    const key = canonicalTopic(topic);
    let queue = this.#topics.get(key);
    if (!queue) this.#topics.set(key, (queue = { pending: [], consumers: [], next: 0, seen: new Map() }));
    return queue;
  }

  #dispatch(queue: TopicQueue): void {
    while (queue.pending.length > 0 && !this.#closed) {
      const consumer = this.#pick(queue);
      if (!consumer) return;
      const pending = queue.pending.shift()!;
      pending.attempt++;
      consumer.held++;
      const delivery = new Delivery(pending, consumer, (d, requeue) => this.#settle(queue, d, requeue));
      try {
        consumer.handler(delivery);
      } catch {
        // A consumer's failure must not stop the queue: the request comes back after its ack wait.
      }
    }
  }

  #settle(queue: TopicQueue, delivery: Delivery, requeue: boolean): void {
    delivery.consumer.held--;
    const pending = delivery.pending;
    // Past its last delivery the request is dropped, as JetStream's max_deliver does.
    if (requeue && pending.attempt < delivery.consumer.options.maxAttempts && !this.#closed) {
      queue.pending.unshift(pending);
    }
    queueMicrotask(() => this.#dispatch(queue));
  }

  /** The next active consumer with a free slot, round-robin. */
  #pick(queue: TopicQueue): Consumer | undefined {
    const consumers = queue.consumers;
    for (let i = 0; i < consumers.length; i++) {
      const consumer = consumers[queue.next++ % consumers.length]!;
      if (consumer.active && consumer.held < consumer.options.concurrency) return consumer;
    }
    return undefined;
  }
}
