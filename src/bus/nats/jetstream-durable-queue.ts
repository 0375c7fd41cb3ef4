/**
 * @module `JetStreamDurableQueue`: the work queue of `NatsBus`'s durable calls.
 *
 * - One stream per service, named after its request queue (`request:tg:joke` → stream
 *   `toolbus-calls-request:tg:joke`), taking that request subject, with work-queue retention (a
 *   request is gone once acked), file storage and a duplicate window for `Nats-Msg-Id`. A plain publish to
 *   the request subject (a TrustGraph peer) is queued too.
 * - One durable pull consumer per group (the replicas of a service share it), explicit acks, `ack_wait`
 *   and `max_deliver` from the consume options. Each replica keeps `concurrency` pull requests of one
 *   message open: a replica takes only what it can run, and the others get the rest.
 * - A request neither acked nor marked in progress within the ack wait (its replica died) is delivered
 *   again, to whichever replica asks next; the server keeps the stream and the consumer across restarts.
 */
import { headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import {
  AckPolicy,
  DeliverPolicy,
  JetStreamApiError,
  RetentionPolicy,
  StorageType,
  jetstream,
  jetstreamManager,
  type Consumer,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
} from '@nats-io/jetstream';
import { ToolbusError } from '../../errors/index.js';
import { jetStreamStoreError } from './jetstream-errors.js';
import type {
  BusProperties,
  BusSubscription,
  DurableConsumeOptions,
  DurableMessage,
  DurableQueue,
} from '../index.js';

/** Stream names start with this, then the request subject with `.` as `:`. */
export const DURABLE_STREAM_PREFIX = 'toolbus-calls-';
/** How long a pull request waits for a message before it is renewed. */
const PULL_EXPIRES_MS = 10_000;
/** How long a failed pull waits before the next try (the server is restarting, say). */
const PULL_RETRY_MS = 250;
/** How long one request may wait in a stream for a replica (7 days): JetStream's `max_age`. */
const MAX_QUEUED_AGE_MS = 7 * 24 * 3_600_000;
/** JetStream's "stream name already in use" (with another config). */
const STREAM_NAME_IN_USE = 10058;
const NS_PER_MS = 1_000_000;
const decoder = new TextDecoder();

/** Options of {@link JetStreamDurableQueue}. */
export interface JetStreamDurableQueueOptions {
  /** Maps a topic to its NATS subject (the bus's, prefix included). */
  subjectOf: (topic: string) => string;
  /** Stream replicas in a JetStream cluster. @default 1 */
  replicas?: number;
}

/** One delivery of a JetStream message, settled once. */
class JetStreamDelivery implements DurableMessage {
  readonly topic: string;
  readonly properties: BusProperties;
  readonly attempt: number;
  readonly #msg: JsMsg;
  readonly #settled: () => void;
  #text: string | undefined;
  #done = false;

  constructor(topic: string, msg: JsMsg, settled: () => void) {
    this.topic = topic;
    this.#msg = msg;
    this.#settled = settled;
    this.attempt = msg.info.deliveryCount;
    const properties: Record<string, string> = {};
    const h = msg.headers;
    if (h) {
      for (const key of h.keys()) {
        // JetStream's own headers (Nats-Msg-Id, …) are not the caller's properties.
        if (!key.startsWith('Nats-')) properties[key] = h.get(key);
      }
    }
    this.properties = properties;
  }

  get body(): Uint8Array {
    return this.#msg.data;
  }

  /** Decoded once: the intake reads the request's user from it, then the server decodes it. */
  get text(): string {
    return (this.#text ??= decoder.decode(this.#msg.data));
  }

  async ack(): Promise<void> {
    if (this.#settle()) {
      // Confirmed: a lost ack (a broker restart) would only redeliver a call whose outcome is stored.
      await this.#msg.ackAck({ timeout: 5_000 }).catch(() => this.#msg.ack());
    }
  }

  working(): void {
    if (!this.#done) this.#msg.working();
  }

  release(): void {
    if (this.#settle()) this.#msg.nak();
  }

  #settle(): boolean {
    if (this.#done) return false;
    this.#done = true;
    this.#settled();
    return true;
  }
}

/** A {@link DurableQueue} on JetStream (`crashRecovery: true`). */
export class JetStreamDurableQueue implements DurableQueue {
  readonly crashRecovery = true;
  readonly #connection: NatsConnection;
  readonly #js: JetStreamClient;
  readonly #subjectOf: (topic: string) => string;
  readonly #replicas: number;
  #jsm: Promise<JetStreamManager> | undefined;
  readonly #streams = new Map<string, Promise<string>>();

  constructor(connection: NatsConnection, options: JetStreamDurableQueueOptions) {
    this.#connection = connection;
    this.#js = jetstream(connection);
    this.#subjectOf = options.subjectOf;
    this.#replicas = options.replicas ?? 1;
  }

  /** The stream of `topic`'s durable calls. */
  streamOf(topic: string): string {
    return streamNameOf(this.#subjectOf(topic));
  }

  async enqueue(
    topic: string,
    body: string,
    properties: BusProperties,
    options: { dedupeId: string },
  ): Promise<void> {
    const subject = this.#subjectOf(topic);
    await this.#stream(subject);
    const h = natsHeaders();
    try {
      for (const [key, value] of Object.entries(properties)) h.set(key, value);
    } catch (error) {
      throw new ToolbusError(
        'invalid-request',
        `a property cannot travel as a NATS header: ${message(error)}`,
      );
    }
    try {
      await this.#js.publish(subject, body, { headers: h, msgID: options.dedupeId });
    } catch (error) {
      throw this.#failure(error, `queueing a call on '${subject}'`);
    }
  }

  async consume(
    topic: string,
    handler: (message: DurableMessage) => void,
    options: DurableConsumeOptions,
  ): Promise<BusSubscription> {
    const subject = this.#subjectOf(topic);
    const stream = await this.#stream(subject);
    const name = options.group.replaceAll('.', ':');
    const jsm = await this.#manager();
    const config = {
      durable_name: name,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
      ack_wait: options.ackWaitMs * NS_PER_MS,
      max_deliver: options.maxAttempts,
      // Each replica bounds itself (one pull per free slot); the consumer need not.
      max_ack_pending: -1,
    };
    try {
      await jsm.consumers.add(stream, config);
    } catch (error) {
      // It exists with other settings (another replica's ack wait): this replica's win.
      try {
        await jsm.consumers.update(stream, name, config);
      } catch {
        throw this.#failure(error, `creating the consumer of '${subject}'`);
      }
    }
    const consumer = await this.#js.consumers.get(stream, name);
    const state = { active: true };
    for (let slot = 0; slot < options.concurrency; slot++) {
      void this.#pull(consumer, topic, handler, state);
    }
    return {
      unsubscribe: () => {
        state.active = false;
        return Promise.resolve();
      },
    };
  }

  /** One slot: one open pull request; the next one once the message it got is acked or released. */
  async #pull(
    consumer: Consumer,
    topic: string,
    handler: (message: DurableMessage) => void,
    state: { active: boolean },
  ): Promise<void> {
    while (state.active && !this.#connection.isClosed()) {
      let msg: JsMsg | null;
      try {
        msg = await consumer.next({ expires: PULL_EXPIRES_MS });
      } catch {
        await sleep(PULL_RETRY_MS);
        continue;
      }
      if (msg === null) continue;
      if (!state.active) {
        // Unsubscribed while the pull was open: back to the queue at once, for another replica.
        msg.nak();
        return;
      }
      let settle!: () => void;
      const settled = new Promise<void>((resolve) => (settle = resolve));
      try {
        handler(new JetStreamDelivery(topic, msg, settle));
      } catch {
        // The handler must not stop the slot; the message comes back after its ack wait.
        settle();
      }
      await settled;
    }
  }

  #manager(): Promise<JetStreamManager> {
    this.#jsm ??= jetstreamManager(this.#connection).catch((error: unknown) => {
      this.#jsm = undefined;
      throw this.#failure(error, 'opening JetStream');
    });
    return this.#jsm;
  }

  /** Creates (once per process) the stream of `subject`, or finds it. */
  #stream(subject: string): Promise<string> {
    let ready = this.#streams.get(subject);
    if (ready === undefined) {
      ready = this.#createStream(subject);
      this.#streams.set(subject, ready);
      ready.catch(() => this.#streams.delete(subject));
    }
    return ready;
  }

  async #createStream(subject: string): Promise<string> {
    const name = streamNameOf(subject);
    const jsm = await this.#manager();
    try {
      await jsm.streams.add({
        name,
        subjects: [subject],
        retention: RetentionPolicy.Workqueue,
        storage: StorageType.File,
        num_replicas: this.#replicas,
        max_age: MAX_QUEUED_AGE_MS * NS_PER_MS,
        duplicate_window: 120_000 * NS_PER_MS,
      });
    } catch (error) {
      // Made by another process (maybe with other limits): use it as it is.
      if (!(error instanceof JetStreamApiError && error.code === STREAM_NAME_IN_USE)) {
        throw this.#failure(error, `creating the durable stream '${name}'`);
      }
    }
    return name;
  }

  #failure(error: unknown, what: string): ToolbusError {
    return jetStreamStoreError(error, what);
  }
}

/** The stream name for a request subject: the prefix, then the subject with `.` as `:`. */
export function streamNameOf(subject: string): string {
  return DURABLE_STREAM_PREFIX + subject.replaceAll('.', ':');
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref?.());
}
