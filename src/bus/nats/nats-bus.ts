/**
 * @module `NatsBus`: the `MessageBus` on NATS core (`@nats-io/transport-node`).
 *
 * Mapping (see `subjects.ts` for topics):
 * - topic → subject: `request:tg:joke` and `non-persistent://tg/request/joke` → `request.tg.joke`
 *   (behind `subjectPrefix` when set);
 * - subscriber group → NATS queue group (each message reaches one member); no group → plain subscription
 *   (every subscriber gets every message);
 * - message properties → NATS headers (first value of each header on receipt);
 * - `PublishOptions.onUnavailable` → the no-responders signal: the message is published with a reply
 *   subject under one per-bus inbox wildcard, and the server answers that subject with status 503 when no
 *   subscription matched. A later flush (one PING per batch of publishes, not one per message) tells the
 *   bus that every publish before it was delivered, so the watch entries are dropped.
 *
 * The bus holds no tool logic and no request/response correlation (that lives once, in `services/`):
 * subscribe is one NATS subscription, and publish creates no subscription, timer or promise. Costs per
 * message are kept low: each publish goes straight to the client, which writes everything published in
 * one pass of the microtask queue with one socket write (a burst of replies shares one syscall); bodies
 * and header blocks are encoded once with pooled buffers; received header blocks are parsed straight from
 * the bytes (these two header shortcuts only on a nats.js version checked for them, see
 * `nats-internals.ts`; otherwise headers go through the client's public API). A publish the client
 * refuses (the connection closed) rejects. One it accepted while closing, and then dropped, is reported
 * through `onUnavailable` when the publisher asked for it (a tool call's request does); otherwise only the
 * caller's timeout covers it.
 *
 * Reconnect: the client reconnects by itself (forever by default) and re-creates every subscription;
 * messages published while disconnected are buffered and sent on reconnect, but for a call's request
 * (a publish with `onUnavailable`), which is refused at once with `unavailable` saying the bus is
 * disconnected, instead of waiting for a reconnect that may come after the caller's timeout. Calls in
 * flight during a disconnect are bounded by the caller's timeout (`ToolServiceClient` rejects them with
 * `timeout`); `connected` tells the state, and `onStatus` the changes, with the outage's length on reconnect.
 * Status changes reach `hooks.onStatus`.
 */
import {
  createInbox,
  type Msg,
  type NatsConnection,
  type Status,
  type Subscription,
} from '@nats-io/transport-node';
import { ToolbusError, isToolbusError } from '../../errors/index.js';
import { notifyHooks, type Hook } from '../../tools/index.js';
import type {
  BusHandler,
  BusHooks,
  BusMessage,
  BusProperties,
  BusSubscription,
  MessageBus,
  PublishOptions,
  SubscribeOptions,
} from '../index.js';
import { checkSubjectPrefix, topicToSubject } from './subjects.js';
import type { DurableCalls } from '../index.js';
import { JetStreamDurableQueue } from './jetstream-durable-queue.js';
import { NatsKvCallStore } from './kv-call-store.js';
import { connectNats, type NatsConnectOptions } from './connect.js';
import { ConnectionState } from './connection-state.js';
import { FAST_HEADERS, PUBLIC_HEADERS, encodeText, type HeaderCodec } from './headers.js';
import { NATS_PUBLIC_API_ONLY, usesClientInternals, type InternalNatsBusOptions } from './nats-internals.js';

/** A connection status change, as reported to {@link NatsBusHooks.onStatus}. */
export interface NatsBusStatus {
  /**
   * `disconnect`, `reconnecting`, `reconnect`, `error`, `staleConnection`, `ldm` (the server is going into
   * lame-duck mode), `update` (cluster changes), `close`, and other NATS client status types.
   */
  type: string;
  /** The server involved, when known (`host:port`). */
  server?: string;
  /** The error, for `type: 'error'`. */
  error?: Error;
  /** For `type: 'reconnect'`: how long the bus was disconnected, in milliseconds. */
  outageMs?: number;
}

/** Hooks of a {@link NatsBus}. */
export interface NatsBusHooks extends BusHooks {
  /** Connection status changes: disconnect, reconnect, server errors. @default none */
  onStatus?: Hook<NatsBusStatus>;
  /** The bus closed: `error` is set when the connection closed because of one. @default none */
  onClosed?: Hook<{ error?: Error }>;
}

/** Options of `new NatsBus(connection, options)`. */
export interface NatsBusOptions {
  /**
   * Subject tokens put in front of every mapped topic, e.g. `toolbus` → `toolbus.request.tg.joke`; lets
   * several toolbus installations share one NATS account. @default '' (none)
   */
  subjectPrefix?: string;
  /** Hooks for handler errors, status changes and close. @default none */
  hooks?: NatsBusHooks;
  /**
   * Whether {@link NatsBus.close} also drains and closes the NATS connection. @default false for the
   * constructor (the caller owns the connection); `NatsBus.connect` sets it to true.
   */
  ownsConnection?: boolean;
  /** Where durable calls ({@link NatsBus.durable}) keep their states. @default the defaults below */
  durable?: NatsDurableOptions;
}

/** Options of a {@link NatsBus}'s durable calls. */
export interface NatsDurableOptions {
  /** The KV bucket of call states. @default DEFAULT_CALL_BUCKET ('toolbus-calls') */
  bucket?: string;
  /** How long a call's state is kept after its last write (the bucket's max age). @default 24 h */
  resultTtlMs?: number;
  /** Stream and bucket replicas in a JetStream cluster. @default 1 */
  replicas?: number;
}

/** Options of {@link NatsBus.connect}: the connection's ({@link NatsConnectOptions}) and the bus's. */
export interface NatsBusConnectOptions extends Omit<NatsBusOptions, 'ownsConnection'>, NatsConnectOptions {}

type OnUnavailable = NonNullable<PublishOptions['onUnavailable']>;

/**
 * The no-responders watches of a run of consecutive publishes, by token: slot `token - base`. Two
 * arrays instead of an object and a Map entry per publish: every request is watched, and a batch holds
 * every publish of one settle interval.
 */
class WatchBatch {
  readonly base: number;
  callbacks: (OnUnavailable | undefined)[] = [];
  topics: string[] = [];
  /** Watches not yet taken. */
  live = 0;

  constructor(base: number) {
    this.base = base;
  }

  /** Watches `token` (at least `base`: tokens only grow, and a batch begins at the next one). */
  add(token: number, onUnavailable: OnUnavailable, topic: string): void {
    const slot = token - this.base;
    this.callbacks[slot] = onUnavailable;
    this.topics[slot] = topic;
    this.live++;
  }

  /** Removes and returns the watch of `token`, when this batch holds it. */
  take(token: number): { onUnavailable: OnUnavailable; topic: string } | undefined {
    const slot = token - this.base;
    const onUnavailable = this.callbacks[slot];
    if (onUnavailable === undefined) return undefined;
    this.callbacks[slot] = undefined;
    this.live--;
    return { onUnavailable, topic: this.topics[slot]! };
  }

  /** The watches not yet taken. */
  remaining(): { onUnavailable: OnUnavailable; topic: string }[] {
    const out: { onUnavailable: OnUnavailable; topic: string }[] = [];
    this.callbacks.forEach((onUnavailable, slot) => {
      if (onUnavailable !== undefined) out.push({ onUnavailable, topic: this.topics[slot]! });
    });
    return out;
  }

  clear(): void {
    this.callbacks = [];
    this.topics = [];
    this.live = 0;
  }
}

const RESOLVED: Promise<void> = Promise.resolve();
/** NATS queue group names are one protocol token: anything but whitespace. */
const GROUP = /^\S+$/;
const MAX_SUBJECT_CACHE = 4_096;
/**
 * How long no-responders watches gather before one flush settles them all. Bounds the watch table (one
 * entry per publish in this window) while keeping the PING traffic to one per window.
 */
const SETTLE_INTERVAL_MS = 50;
/** How long `unsubscribe` waits for its drain round trip (longer only while disconnected). */
const DRAIN_TIMEOUT_MS = 2_000;

/** Maps an error thrown by the NATS client to a toolbus error. */
function toBusError(error: unknown, what: string): ToolbusError {
  if (isToolbusError(error)) return error as ToolbusError;
  const err = error instanceof Error ? error : new Error(String(error));
  const name = err.name;
  if (name === 'ClosedConnectionError' || name === 'DrainingConnectionError') {
    return new ToolbusError('closed', `${what}: the NATS connection is closed`, { cause: err });
  }
  if (/max_payload/i.test(err.message)) {
    return new ToolbusError('too-large', `${what}: the message exceeds the server's max_payload`, {
      cause: err,
    });
  }
  if (name === 'InvalidArgumentError' || name === 'InvalidSubjectError' || name === 'TypeError') {
    return new ToolbusError('invalid-request', `${what}: ${err.message}`, { cause: err });
  }
  return new ToolbusError('unavailable', `${what}: ${err.message}`, { cause: err });
}

/**
 * The `MessageBus` on NATS. Create it with {@link NatsBus.connect}, or wrap a connection you manage with
 * `new NatsBus(connection)`.
 *
 * @example
 * ```ts
 * import { NatsBus } from 'toolbus/nats';
 * const bus = await NatsBus.connect({ servers: 'nats://127.0.0.1:4222' });
 * await bus.subscribe('request:tg:joke', (m) => handle(m), { group: 'joke-service' });
 * await bus.publish('request:tg:joke', '{"user":"alice"}', { id: '1' });
 * await bus.close();
 * ```
 */
export class NatsBus implements MessageBus {
  /** The underlying NATS connection (shareable, e.g. with `NatsKvConfigStore`). */
  readonly connection: NatsConnection;
  /** Resolves when the bus is closed: with the error that closed the connection, if any. Never rejects. */
  readonly closed: Promise<void | Error>;

  readonly #prefix: string;
  readonly #hooks: NatsBusHooks;
  readonly #ownsConnection: boolean;
  /** Client internals when the installed nats.js is a checked version (see nats-internals.ts). */
  readonly #headers: HeaderCodec;
  readonly #subjects = new Map<string, string>();
  readonly #subscriptions = new Set<Subscription>();
  #closing: Promise<void> | undefined;
  #resolveClosed!: (value: void | Error) => void;

  // No-responders tracking: publishes since the last flush started, and the batch being flushed.
  #inbox: string | undefined;
  #inboxSubscription: Subscription | undefined;
  #sequence = 0;
  #watching = new WatchBatch(0);
  #settling: WatchBatch | undefined;
  #settleTimer: ReturnType<typeof setTimeout> | undefined;
  readonly #state: ConnectionState;
  readonly #durableOptions: NatsDurableOptions;
  #durable: { queue: JetStreamDurableQueue; store: NatsKvCallStore } | undefined;

  /**
   * Wraps an open NATS connection.
   * @throws ToolbusError `invalid-config` for a bad `subjectPrefix`.
   */
  constructor(connection: NatsConnection, options: NatsBusOptions = {}) {
    this.connection = connection;
    this.#prefix = options.subjectPrefix ? checkSubjectPrefix(options.subjectPrefix) : '';
    this.#hooks = options.hooks ?? {};
    this.#ownsConnection = options.ownsConnection ?? false;
    this.#durableOptions = { ...options.durable };
    this.#headers = usesClientInternals(options) ? FAST_HEADERS : PUBLIC_HEADERS;
    this.closed = new Promise((resolve) => (this.#resolveClosed = resolve));
    void connection.closed().then((error) => this.#onConnectionClosed(error ?? undefined));
    this.#state = new ConnectionState(connection, ({ status, outageMs }) => {
      if (status.type === 'disconnect') this.#dropWatches();
      const event = toStatus(status);
      if (outageMs !== undefined) event.outageMs = outageMs;
      notifyHooks(this.#hooks.onStatus, event);
    });
  }

  /**
   * Connects to NATS and returns a bus that owns the connection.
   * Rejects with code `unavailable` when no server answers within `connectTimeoutMs`, `cancelled` on abort,
   * `invalid-config` for bad options.
   */
  static async connect(options: NatsBusConnectOptions): Promise<NatsBus> {
    const subjectPrefix = options.subjectPrefix ? checkSubjectPrefix(options.subjectPrefix) : '';
    const connection = await connectNats(options);
    const busOptions: NatsBusOptions & InternalNatsBusOptions = {
      subjectPrefix,
      hooks: options.hooks,
      ownsConnection: true,
      [NATS_PUBLIC_API_ONLY]: (options as InternalNatsBusOptions)[NATS_PUBLIC_API_ONLY],
    };
    return new NatsBus(connection, busOptions);
  }

  /** Maps a topic to its subject on this bus (prefix included). */
  subjectOf(topic: string): string {
    let subject = this.#subjects.get(topic);
    if (subject === undefined) {
      subject = topicToSubject(topic, this.#prefix);
      if (this.#subjects.size >= MAX_SUBJECT_CACHE) this.#subjects.clear();
      this.#subjects.set(topic, subject);
    }
    return subject;
  }

  /**
   * Publishes one message. Rejects with `closed` after close, `too-large` above the server's max payload,
   * `invalid-config` for a bad topic, `invalid-request` for a property NATS cannot carry as a header.
   */
  publish(
    topic: string,
    body: Uint8Array | string,
    properties?: BusProperties,
    options?: PublishOptions,
  ): Promise<void> {
    if (this.#closing) {
      return Promise.reject(
        new ToolbusError('closed', `cannot publish to topic '${topic}': the bus is closed`),
      );
    }
    try {
      const subject = this.subjectOf(topic);
      const encodedHeaders = properties ? this.#headers.encode(topic, properties) : undefined;
      this.#checkSize(topic, body, encodedHeaders?.byteLength ?? 0);
      const onUnavailable = options?.onUnavailable;
      // A watched publish is a call's request: while the broker is gone, say so now rather than buffer it
      // for a reconnect that may come after the caller's timeout (the caller then learns nothing).
      if (onUnavailable !== undefined && this.#state.downForMs !== undefined) {
        return Promise.reject(this.#disconnectedError(topic));
      }
      const headers = encodedHeaders?.headers;
      const encoded = typeof body === 'string' ? encodeText(body) : body;
      if (onUnavailable === undefined) {
        this.connection.publish(subject, encoded, headers ? { headers } : undefined);
        return RESOLVED;
      }
      const token = this.#sequence++;
      const inbox = this.#inbox ?? this.#openInbox();
      this.connection.publish(subject, encoded, { headers, reply: `${inbox}.${token.toString(36)}` });
      // Registered after the publish: a 503 can only arrive in a later turn of the event loop. A publish
      // that threw leaves its slot empty.
      this.#watching.add(token, onUnavailable, topic);
      this.#scheduleSettle();
      return RESOLVED;
    } catch (error) {
      return Promise.reject(toBusError(error, `cannot publish to topic '${topic}'`));
    }
  }

  /** Rejects early what the server would refuse: a message above its max_payload. */
  #checkSize(topic: string, body: Uint8Array | string, headerBytes: number): void {
    const max = this.connection.info?.max_payload;
    if (max === undefined) return;
    // Strings: UTF-8 is at most 3 bytes per UTF-16 unit; measure exactly only when it may matter.
    let size = typeof body === 'string' ? body.length : body.byteLength;
    if (typeof body === 'string' && size * 3 > max) size = Buffer.byteLength(body);
    // The client counts the whole header block against max_payload, framing included.
    size += headerBytes;
    if (size > max) {
      throw new ToolbusError(
        'too-large',
        `cannot publish to topic '${topic}': the message is ${size} bytes, above the server's max_payload ` +
          `of ${max} bytes`,
      );
    }
  }

  /**
   * Subscribes `handler` to a topic; resolves once the server has registered the subscription. Rejects
   * with `closed` after close, `invalid-config` for a bad topic or group name.
   */
  async subscribe(
    topic: string,
    handler: BusHandler,
    options: SubscribeOptions = {},
  ): Promise<BusSubscription> {
    if (this.#closing) {
      throw new ToolbusError('closed', `cannot subscribe to topic '${topic}': the bus is closed`);
    }
    const subject = this.subjectOf(topic);
    const group = options.group;
    if (group !== undefined && !GROUP.test(group)) {
      throw new ToolbusError(
        'invalid-config',
        `subscriber group '${group}' is not valid: expected a non-empty name without whitespace`,
      );
    }
    const hooks = this.#hooks;
    const codec = this.#headers;
    const onError = (error: unknown, message: BusMessage): void => {
      notifyHooks(hooks.onHandlerError, { error, message });
    };
    let subscription: Subscription;
    try {
      subscription = this.connection.subscribe(subject, {
        queue: group,
        callback: (error, msg) => {
          // The client ends the subscription with an error and an empty `msg` (a permissions violation,
          // also reported through `hooks.onStatus`): there is no message to deliver.
          if (error) {
            this.#subscriptions.delete(subscription);
            return;
          }
          const message: BusMessage = { topic, body: msg.data, properties: codec.decode(msg) };
          try {
            const result = handler(message);
            if (result !== undefined && typeof (result as Promise<void>).then === 'function') {
              (result as Promise<void>).then(undefined, (error: unknown) => onError(error, message));
            }
          } catch (error) {
            onError(error, message);
          }
        },
      });
    } catch (error) {
      throw toBusError(error, `cannot subscribe to topic '${topic}'`);
    }
    this.#subscriptions.add(subscription);
    // Resolve once the server has processed the SUB, so a publish right after reaches this subscriber.
    // While disconnected this waits for the reconnect (the client re-sends the SUB then).
    try {
      await this.connection.flush();
    } catch (error) {
      this.#subscriptions.delete(subscription);
      throw toBusError(error, `cannot subscribe to topic '${topic}'`);
    }
    const subscriptions = this.#subscriptions;
    return {
      unsubscribe: async () => {
        if (!subscriptions.delete(subscription)) return;
        await leave(subscription);
      },
    };
  }

  /**
   * Closes the bus: stops every subscription and, when the bus owns the connection, drains and closes it.
   * Idempotent; later publishes reject with `closed`.
   */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  /** Alias of {@link close}. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /**
   * Durable calls on JetStream, made on first use: a work-queue stream per service (named after its
   * request queue) and call states in a KV bucket with a TTL. Needs nats-server with JetStream (`-js`).
   */
  get durable(): DurableCalls {
    if (this.#durable === undefined) {
      const o = this.#durableOptions;
      this.#durable = {
        queue: new JetStreamDurableQueue(this.connection, {
          subjectOf: (topic) => this.subjectOf(topic),
          ...(o.replicas !== undefined ? { replicas: o.replicas } : {}),
        }),
        store: new NatsKvCallStore(this.connection, {
          ...(o.bucket !== undefined ? { bucket: o.bucket } : {}),
          ...(o.resultTtlMs !== undefined ? { ttlMs: o.resultTtlMs } : {}),
          ...(o.replicas !== undefined ? { replicas: o.replicas } : {}),
        }),
      };
    }
    return this.#durable;
  }

  async #close(): Promise<void> {
    await this.#durable?.store.close().catch(() => undefined);
    if (this.#ownsConnection) {
      if (!this.connection.isClosed()) {
        try {
          await this.connection.drain();
        } catch {
          await this.connection.close().catch(() => undefined);
        }
      }
    } else {
      for (const subscription of this.#subscriptions) {
        if (!subscription.isClosed()) subscription.unsubscribe();
      }
      this.#inboxSubscription?.unsubscribe();
    }
    this.#subscriptions.clear();
    this.#onConnectionClosed(undefined);
  }

  #onConnectionClosed(error: Error | undefined): void {
    this.#closing ??= RESOLVED;
    this.#failWatches();
    const resolve = this.#resolveClosed;
    if (!resolve) return;
    this.#resolveClosed = undefined as never;
    resolve(error);
    notifyHooks(this.#hooks.onClosed, error ? { error } : {});
  }

  /** Whether the connection is up: false from a disconnect until the reconnect, and once closed. */
  get connected(): boolean {
    return this.#closing === undefined && this.#state.downForMs === undefined;
  }

  #disconnectedError(topic: string): ToolbusError {
    return new ToolbusError(
      'unavailable',
      `cannot send to topic '${topic}': the bus is ${this.#state.describeOutage()}; it reconnects by ` +
        `itself, so try again once the broker is back`,
    );
  }

  #openInbox(): string {
    const inbox = createInbox();
    this.#inboxSubscription = this.connection.subscribe(`${inbox}.*`, {
      // On an error (no permission for the inbox) `msg` is empty; callers' timeouts still apply.
      callback: (error, msg) => {
        if (!error) this.#onNoResponders(msg);
      },
    });
    this.#inbox = inbox;
    return inbox;
  }

  #onNoResponders(msg: Msg): void {
    const suffix = msg.subject.slice((this.#inbox?.length ?? 0) + 1);
    const token = parseInt(suffix, 36);
    // Only a token this bus wrote (parseInt would also read a prefix of anything else).
    if (!(token >= 0) || token.toString(36) !== suffix) return;
    const watch = token >= this.#watching.base ? this.#watching.take(token) : this.#settling?.take(token);
    if (watch === undefined) return;
    if (msg.headers?.code !== 503) return;
    try {
      watch.onUnavailable(
        new ToolbusError(
          'unavailable',
          `nobody is subscribed to topic '${watch.topic}' (NATS subject '${this.subjectOf(watch.topic)}'): ` +
            `expected a running service or subscriber`,
        ),
      );
    } catch {
      // The caller's callback must not break the bus.
    }
  }

  /** At most one settling flush per {@link SETTLE_INTERVAL_MS}: one PING covers every publish before it. */
  #scheduleSettle(): void {
    if (this.#settleTimer !== undefined || this.#settling !== undefined || this.#watching.live === 0) return;
    this.#settleTimer = setTimeout(() => {
      this.#settleTimer = undefined;
      if (this.#closing === undefined) this.#settle();
    }, SETTLE_INTERVAL_MS);
    this.#settleTimer.unref?.();
  }

  /**
   * Starts one flush for every publish watched so far. The server handles a connection's messages in
   * order, so any 503 for them arrives before the flush's PONG: when the flush settles, the rest had
   * subscribers and their entries are dropped.
   */
  #settle(): void {
    const batch = this.#watching;
    this.#watching = new WatchBatch(this.#sequence);
    this.#settling = batch;
    const done = (): void => {
      if (this.#settling === batch) this.#settling = undefined;
      batch.clear();
      if (this.#closing === undefined) this.#scheduleSettle();
    };
    this.connection.flush().then(done, done);
  }

  /**
   * The connection closed: a watched publish not yet confirmed by a flush may never have left (the client
   * accepts publishes while it is closing and drops them), and no reply can come any more. Its caller
   * hears `closed` now rather than a timeout later.
   */
  #failWatches(): void {
    const unsettled = [...this.#watching.remaining(), ...(this.#settling?.remaining() ?? [])];
    this.#dropWatches();
    for (const watch of unsettled) {
      try {
        watch.onUnavailable(
          new ToolbusError(
            'closed',
            `cannot publish to topic '${watch.topic}': the NATS connection closed before the message was ` +
              `confirmed sent`,
          ),
        );
      } catch {
        // A caller's callback must not break the bus.
      }
    }
  }

  /** Unknowable after a disconnect: drop every watch (callers' timeouts still apply). */
  #dropWatches(): void {
    if (this.#settleTimer !== undefined) clearTimeout(this.#settleTimer);
    this.#settleTimer = undefined;
    this.#watching = new WatchBatch(this.#sequence);
    this.#settling?.clear();
  }

  /** Publishes watched for the no-responders signal and not yet settled (for tests and diagnostics). */
  get pendingUnavailableWatches(): number {
    return this.#watching.live + (this.#settling?.live ?? 0);
  }
}

/**
 * Ends a subscription without losing what the server already routed to it: a queue group's message
 * goes to one member only, so one dropped on its way to a member that is leaving is lost (a tool call
 * would hang until its timeout). Drains (UNSUB, then a round trip delivering everything sent before
 * it); a drain stuck behind a disconnect gives up after {@link DRAIN_TIMEOUT_MS} and unsubscribes.
 */
async function leave(subscription: Subscription): Promise<void> {
  if (subscription.isClosed()) return;
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    await Promise.race([
      subscription.drain(),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, DRAIN_TIMEOUT_MS);
        timer.unref?.();
      }),
    ]);
  } catch {
    // The connection closed: nothing more can arrive.
  } finally {
    clearTimeout(timer);
    if (!subscription.isClosed()) subscription.unsubscribe();
  }
}

function toStatus(status: Status): NatsBusStatus {
  const out: NatsBusStatus = { type: status.type };
  if ('server' in status && typeof status.server === 'string') out.server = status.server;
  if (status.type === 'error') out.error = status.error;
  return out;
}
