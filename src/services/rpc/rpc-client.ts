/**
 * @module `RpcClient`: the calling half of request/response over a `MessageBus`, written once for every
 * protocol on the bus (tool services, the agent service). It owns what they share: unique ids and
 * correlation by the `id` property, one budget per call (the caller's absolute deadline and the call's
 * own timeout, whichever comes first) that sets both the local timer and the wire `deadline`,
 * cancellation on the control topic, fail-fast `unavailable`, late and duplicate responses, and close.
 * A protocol supplies its codec ({@link RpcClientProtocol}) and what a call does with its responses
 * ({@link RpcClientCall}).
 */
import { randomUUID } from 'node:crypto';
import type { Attributes, Span } from '@opentelemetry/api';
import { canonicalTopic } from '../../bus/index.js';
import type { BusMessage, BusProperties, BusSubscription, MessageBus } from '../../bus/index.js';
import { abortError, isToolbusError, type ToolbusError, type ToolbusErrorCode } from '../../errors/index.js';
import {
  CallDeadlines,
  endSpanWithFailure,
  onAbort,
  tracingEnabled,
  type Schedulable,
} from '../../tools/index.js';
import { WireProperty, cancelReasonOf, cancelTopicOf, readId } from './envelope.js';
import { FulfilledPublishes } from './fulfilled-publishes.js';
import { startClientSpan, type RpcSpanTarget } from './rpc-tracing.js';

/** Settled call ids remembered to tell late and duplicate responses apart from unknown ones. */
const RECENT_IDS = 4096;
/**
 * How long past a caller's deadline the local timer of a call bounded by it fires. The caller that set
 * the deadline has its own timer for it (a `ToolSet` call aborts the signal it passed): this one is the
 * backstop, and lets the caller's timeout, with its own message, win the race. The wire `deadline` is the
 * caller's, unchanged; services abort a little later still (`DEADLINE_GRACE_MS`).
 */
const CALLER_DEADLINE_GRACE_MS = 10;
const SETTLED_DONE = 1;
const SETTLED_ABANDONED = 2;
/** {@link RpcClientCall.flags}: the request was handed to the bus, so a cancellation is worth sending. */
const SENT = 1;
/** {@link RpcClientCall.flags}: the budget ends at the caller's deadline, not at the call's own timeout. */
const BOUNDED = 2;

/** Why a response was dropped. */
export type DroppedResponseReason = 'late' | 'duplicate' | 'unknown' | 'malformed';

/**
 * One call in flight, as the client tracks it: the bookkeeping lives on the object itself (one object per
 * call instead of several closures). A protocol extends it with what the call does with its responses.
 */
export abstract class RpcClientCall<Response> implements Schedulable {
  /** The correlation id, set when the call starts. */
  id = '';
  /** The call's sequence number within its client. */
  seq = 0;
  #dueAt = 0;
  dueQueue: unknown = undefined;
  /** Stops listening to the caller's signal. */
  unwatch: (() => void) | undefined = undefined;
  /** What the client knows of the call, as bits (one field: there is one call object per call in flight). */
  flags = 0;

  /**
   * When its timer is due, kept by `CallDeadlines`: stored as whole milliseconds, rounded up (never
   * early), because V8 keeps a small integer inside the object and a fractional time in a separate
   * 16-byte box, one more per call in flight.
   */
  get dueAt(): number {
    return this.#dueAt;
  }

  set dueAt(value: number) {
    this.#dueAt = Math.ceil(value);
  }

  /** A response that decoded; `last` when it ends the call (which is already settled then). */
  abstract receive(response: Response, last: boolean): void;

  /** The call failed, locally or by an error the protocol read from a response. Called at most once. */
  abstract fail(error: ToolbusError): void;
}

/** What a protocol tells {@link RpcClient}. */
export interface RpcClientProtocol<Response, Call extends RpcClientCall<Response>> {
  /** Names the service in messages, e.g. `tool service 'request:tg:joke'`. */
  readonly name: string;
  /**
   * Decodes a response of `call`. Throwing ends the call with that error (a malformed response, or an
   * error reply the protocol turns into an exception).
   */
  decode(message: BusMessage, call: Call): Response;
  /** True when `response` is the last of its call. */
  isLast(response: Response): boolean;
  /** Builds an error of `call` (e.g. a `ToolError` naming the tool). */
  error(code: ToolbusErrorCode, message: string, call: Call, cause?: unknown): ToolbusError;
  /** The operation in span names and `rpc.method` (tracing), e.g. `invoke`. @default 'call' */
  readonly method?: string;
  /** A call's span attributes besides the RPC ones, e.g. the tool's name; asked only while tracing. @default none */
  spanAttributes?(call: Call): Attributes | undefined;
}

/** Options of {@link RpcClient}. */
export interface RpcClientOptions {
  requestQueue: string;
  responseQueue: string;
  /** The clock for the `deadline` property, in epoch milliseconds. @default Date.now */
  now?: () => number;
  /** A response matched no pending call of this client and was dropped. @default none */
  onDropped?: (id: string | undefined, reason: DroppedResponseReason) => void;
  /**
   * Sends a request instead of publishing it on the request queue (a durable call enqueues it). A
   * rejection fails the call as `unavailable` (or with the error's own `too-large`/`invalid-request`).
   * @default a bus publish that fails fast when nobody is subscribed
   */
  send?: (body: string, properties: BusProperties) => Promise<void>;
}

/** Options of one {@link RpcClient.start}. */
export interface RpcCallOptions {
  /** Cancels the call; the service is told to stop. */
  signal?: AbortSignal | undefined;
  /** The call's own timeout in ms; `Infinity` for none. */
  timeoutMs: number;
  /** The correlation id, when the caller chose one (unique, e.g. a task id). @default generated */
  id?: string | undefined;
  /** The caller's absolute deadline (epoch ms): the call's budget ends there if that is sooner. */
  deadline?: number | undefined;
  /** Extra message properties; `id` and `deadline` are set by the client. */
  properties?: BusProperties | undefined;
}

/** Counters of an {@link RpcClient}. */
export interface RpcClientCounters {
  /** Requests published. */
  sent: number;
  /** Calls that ended with their last response. */
  completed: number;
  /** Calls that ended with an error the protocol read from a response (other than `timeout`). */
  failed: number;
  /** Calls that ran out of budget, locally or as the service reported it. */
  timedOut: number;
  cancelled: number;
  unavailable: number;
  /** Responses for other clients sharing the response queue (ignored, not an error). */
  foreign: number;
  /** Responses dropped, by reason. */
  dropped: Record<DroppedResponseReason, number>;
}

/**
 * Calls one service over a bus. Ids are unique across clients sharing a response queue (a random prefix
 * plus a counter); each client subscribes to the response queue and keeps its own responses.
 */
export class RpcClient<Response, Call extends RpcClientCall<Response>> {
  readonly #bus: MessageBus;
  readonly #protocol: RpcClientProtocol<Response, Call>;
  readonly #requestQueue: string;
  readonly #responseQueue: string;
  readonly #cancelTopic: string;
  readonly #now: () => number;
  readonly #onDropped: RpcClientOptions['onDropped'];
  readonly #sendRequest: RpcClientOptions['send'];
  readonly #prefix: string;
  #seq = 0;
  readonly #pending = new Map<string, Call>();
  readonly #deadlines = new CallDeadlines<Call>((call, ms) => this.#onTimeout(call, ms));
  readonly #fulfilled = new FulfilledPublishes();
  #deadlineMs = NaN;
  #deadlineText = '';
  /**
   * Ring of recently settled calls, by sequence number: tells late and duplicate responses apart. Made
   * by the first settled call: a client that is never called (a registry keeps one per announced
   * service) should not hold its 36 KB.
   */
  #recent: { seq: Float64Array; how: Uint8Array } | undefined;
  #subscription: BusSubscription | undefined;
  #ready: Promise<void> | undefined;
  #closed = false;
  /** What this client's spans are named for (tracing). */
  readonly #spanTarget: RpcSpanTarget;
  /** The span of each traced call in flight; made by the first call started while tracing is on. */
  #spans: Map<Call, Span> | undefined;
  /** The counters, updated in place. */
  readonly counters: RpcClientCounters = {
    sent: 0,
    completed: 0,
    failed: 0,
    timedOut: 0,
    cancelled: 0,
    unavailable: 0,
    foreign: 0,
    dropped: { late: 0, duplicate: 0, unknown: 0, malformed: 0 },
  };

  constructor(bus: MessageBus, options: RpcClientOptions, protocol: RpcClientProtocol<Response, Call>) {
    this.#bus = bus;
    this.#protocol = protocol;
    this.#requestQueue = options.requestQueue;
    this.#responseQueue = options.responseQueue;
    this.#cancelTopic = cancelTopicOf(options.requestQueue);
    this.#now = options.now ?? Date.now;
    this.#onDropped = options.onDropped;
    this.#sendRequest = options.send;
    this.#prefix = `${randomUUID().replaceAll('-', '').slice(0, 16)}-`;
    this.#spanTarget = { service: canonicalTopic(options.requestQueue), method: protocol.method ?? 'call' };
  }

  /** Calls waiting for their last response. */
  get pendingCount(): number {
    return this.#pending.size;
  }

  /** The calls waiting for their last response now. */
  pendingCalls(): IterableIterator<Call> {
    return this.#pending.values();
  }

  /**
   * Handles a response that came another way than the response queue (a durable call's result read
   * from its store), as if it had arrived there.
   */
  deliver(message: BusMessage): void {
    this.#onResponse(message);
  }

  /**
   * Starts `call`: registers it, arms its budget, and publishes `body`. Every failure, early ones
   * included, reaches `call.fail`; every path ends in {@link #settle}, the one cleanup.
   */
  start(call: Call, body: string, options: RpcCallOptions): void {
    const protocol = this.#protocol;
    if (this.#closed) {
      call.fail(protocol.error('closed', `${protocol.name}: client is closed`, call));
      return;
    }
    const signal = options.signal;
    if (signal?.aborted) {
      this.counters.cancelled++;
      call.fail(this.#abortError(signal, call));
      return;
    }
    const now = this.#now();
    let deadline = now + options.timeoutMs;
    if (options.deadline !== undefined && options.deadline < deadline) {
      deadline = options.deadline;
      call.flags |= BOUNDED;
    }
    const budgetMs = deadline - now;
    const seq = ++this.#seq;
    const id = options.id ?? this.#prefix + seq.toString(36);
    call.seq = seq;
    call.id = id;
    if (options.id !== undefined && this.#pending.has(id)) {
      call.fail(protocol.error('usage', `${protocol.name}: call '${id}' is already in flight`, call));
      return;
    }
    if (!(budgetMs > 0)) {
      this.counters.timedOut++;
      call.fail(
        protocol.error(
          'timeout',
          `${protocol.name}: the caller's deadline passed before call '${id}' was sent`,
          call,
        ),
      );
      return;
    }
    this.#pending.set(id, call);
    if (budgetMs !== Infinity) {
      this.#deadlines.add(call.flags & BOUNDED ? budgetMs + CALLER_DEADLINE_GRACE_MS : budgetMs, call);
    }
    // One listener on the caller's signal however many calls share it (see tools/abort-fanout.ts).
    if (signal) call.unwatch = onAbort(signal, () => this.#onAbort(call, signal));
    const extra = options.properties;
    let properties: BusProperties;
    if (deadline === Infinity) properties = extra ? { ...extra, id } : { id };
    else {
      // Whole milliseconds on the wire (decimal text, as peers parse it), never later than the budget.
      const ms = Math.floor(deadline);
      // Calls started in the same millisecond with the same timeout share the text.
      if (ms !== this.#deadlineMs) {
        this.#deadlineMs = ms;
        this.#deadlineText = String(ms);
      }
      const text = this.#deadlineText;
      properties = extra ? { ...extra, id, deadline: text } : { id, deadline: text };
    }
    // One cheap test per call. `properties` is the fresh object built above: the span's trace context
    // is written into it.
    if (tracingEnabled()) this.#startSpan(call, properties as Record<string, string>);
    if (this.#subscription) this.#send(call, body, properties);
    else {
      this.#subscribe().then(
        () => {
          // Still pending: it may have been cancelled or timed out while the client subscribed.
          if (this.#pending.get(call.id) === call) this.#send(call, body, properties);
        },
        (error: unknown) => this.#unavailable(call, error),
      );
    }
  }

  /**
   * Ends a call without its last response, and tells the service to stop it. `notify: false` ends it
   * without calling `call.fail` (the consumer left on its own).
   */
  abandon(call: RpcClientCall<Response>, error: ToolbusError, notify = true): void {
    const own = this.#pending.get(call.id);
    if (own !== call || own === undefined) return;
    this.#settle(own, SETTLED_ABANDONED, notify ? error : undefined);
    if (!(own.flags & SENT)) return;
    this.#bus
      .publish(this.#cancelTopic, '', {
        [WireProperty.Id]: own.id,
        [WireProperty.Cancel]: cancelReasonOf(error.message),
      })
      .catch(() => undefined);
  }

  /**
   * Stops listening; pending calls fail with `code` (`cancelled` or `closed`) and the services are told
   * to stop them. Idempotent.
   */
  async close(code: 'cancelled' | 'closed'): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const protocol = this.#protocol;
    for (const call of [...this.#pending.values()]) {
      this.abandon(call, protocol.error(code, `${protocol.name}: client closed`, call));
    }
    const subscription = this.#subscription;
    this.#subscription = undefined;
    await subscription?.unsubscribe();
  }

  /** Starts `call`'s CLIENT span and puts its trace context on the request (see rpc-tracing.ts). */
  #startSpan(call: Call, properties: Record<string, string>): void {
    const protocol = this.#protocol;
    const extra = protocol.spanAttributes ? () => protocol.spanAttributes?.(call) : undefined;
    const span = startClientSpan(this.#spanTarget, call.id, properties, extra);
    (this.#spans ??= new Map()).set(call, span);
  }

  #send(call: Call, body: string, properties: BusProperties): void {
    this.counters.sent++;
    call.flags |= SENT;
    if (this.#sendRequest) {
      const id = call.id;
      this.#sendRequest(body, properties).catch((error: unknown) => {
        const pending = this.#pending.get(id);
        if (pending !== undefined) this.#unavailable(pending, error, true);
      });
      return;
    }
    const onUnavailable = this.#unavailableHandler(call.id);
    const sent = this.#bus.publish(this.#requestQueue, body, properties, { onUnavailable });
    if (!this.#fulfilled.known(sent)) sent.catch(onUnavailable);
  }

  /**
   * The per-call `onUnavailable` callback, returned from a function so that it is anonymous: esbuild's
   * `keepNames` (tsx, bundles) would otherwise wrap every named closure in a costly `__name` call.
   * It holds the call's id, not the call: the bus keeps it until its next no-responders flush (tens of
   * milliseconds), and a held call (with its promise, settlers and response text) would outlive
   * young-generation collections and be copied and promoted by each of them.
   */
  #unavailableHandler(id: string): (error: unknown) => void {
    return (error) => {
      const call = this.#pending.get(id);
      if (call !== undefined) this.#unavailable(call, error);
    };
  }

  #subscribe(): Promise<void> {
    this.#ready ??= this.#bus
      .subscribe(this.#responseQueue, (m) => this.#onResponse(m))
      .then(
        (subscription) => {
          if (this.#closed) {
            void subscription.unsubscribe();
            return;
          }
          this.#subscription = subscription;
        },
        (error: unknown) => {
          // A failed subscribe is retried by the next call instead of being cached.
          this.#ready = undefined;
          throw error;
        },
      );
    return this.#ready;
  }

  #onAbort(call: Call, signal: AbortSignal): void {
    if (this.#pending.get(call.id) !== call) return;
    this.counters.cancelled++;
    this.abandon(call, this.#abortError(signal, call));
  }

  /** `timeout` for `AbortSignal.timeout`, else `cancelled`; a toolbus error reason as it is. */
  #abortError(signal: AbortSignal, call: Call): ToolbusError {
    const error = abortError(signal, `the call of ${this.#protocol.name}`);
    if (error === signal.reason) return error;
    return this.#protocol.error(error.code, error.message, call, error.cause);
  }

  #onTimeout(call: Call, ms: number): void {
    this.counters.timedOut++;
    const protocol = this.#protocol;
    const when = call.flags & BOUNDED ? "by the caller's deadline" : `within ${ms} ms`;
    this.abandon(
      call,
      protocol.error('timeout', `${protocol.name}: no response ${when} (call '${call.id}')`, call),
    );
  }

  /** `sent`: the failure is the protocol's own `send`'s, whose words say what failed (not no-responders). */
  #unavailable(call: Call, error: unknown, sent = false): void {
    if (this.#pending.get(call.id) !== call) return;
    const name = this.#protocol.name;
    if (isToolbusError(error) && (error.code === 'too-large' || error.code === 'invalid-request')) {
      // The bus refused the request itself (NATS max_payload, or a `properties` key NATS headers cannot
      // carry): the caller's input is at fault, not the service, and a retry elsewhere would fail the
      // same way. Say what was wrong instead of blaming the service with `unavailable`.
      const what = error.code === 'too-large' ? 'is too large to send' : 'cannot be sent';
      this.#settle(
        call,
        SETTLED_ABANDONED,
        this.#protocol.error(error.code, `${name}: the request ${what}: ${error.message}`, call, error),
      );
      return;
    }
    this.counters.unavailable++;
    this.#settle(
      call,
      SETTLED_ABANDONED,
      this.#protocol.error(
        'unavailable',
        isToolbusError(error) && error.code === 'unavailable'
          ? // The bus's own words when it has lost its broker, or the send's; else no-responders: nobody listens.
            this.#bus.connected === false || sent
            ? `${name} is unavailable: ${error.message}`
            : `${name} is unavailable: nothing is subscribed to request queue '${this.#requestQueue}'`
          : `${name} is unavailable: sending to '${this.#requestQueue}' failed: ` +
              (error instanceof Error ? error.message : String(error)),
        call,
        error,
      ),
    );
  }

  /** The one cleanup of a call: pending entry, timer, abort listener; then the failure, if any. */
  #settle(call: Call, how: number, error?: ToolbusError): void {
    this.#pending.delete(call.id);
    this.#deadlines.cancel(call);
    call.unwatch?.();
    call.unwatch = undefined;
    const slot = call.seq % RECENT_IDS;
    const recent = (this.#recent ??= {
      seq: new Float64Array(RECENT_IDS).fill(-1),
      how: new Uint8Array(RECENT_IDS),
    });
    recent.seq[slot] = call.seq;
    recent.how[slot] = how;
    if (this.#spans !== undefined) this.#endSpan(this.#spans, call, error);
    if (error) call.fail(error);
  }

  /** Ends a traced call's span: ok, or with the error's code as `error.type`. */
  #endSpan(spans: Map<Call, Span>, call: Call, error: ToolbusError | undefined): void {
    const span = spans.get(call);
    if (span === undefined) return;
    spans.delete(call);
    if (error) endSpanWithFailure(span, error);
    else span.end();
  }

  /** Why a response for an id of ours that is not pending is dropped. */
  #dropReason(id: string): DroppedResponseReason {
    const seq = parseInt(id.slice(this.#prefix.length), 36);
    if (!(seq > 0 && seq <= this.#seq) || id !== this.#prefix + seq.toString(36)) return 'unknown';
    const slot = seq % RECENT_IDS;
    // Settled long ago (evicted from the ring), or never settled: a late response.
    if (this.#recent?.seq[slot] !== seq) return 'late';
    return this.#recent.how[slot] === SETTLED_DONE ? 'duplicate' : 'late';
  }

  #onResponse(message: BusMessage): void {
    const id = readId(message.properties);
    if (id === undefined) {
      this.#drop(undefined, 'malformed');
      return;
    }
    const call = this.#pending.get(id);
    if (!call) {
      if (!id.startsWith(this.#prefix)) {
        this.counters.foreign++;
        return;
      }
      this.#drop(id, this.#dropReason(id));
      return;
    }
    let response: Response;
    try {
      response = this.#protocol.decode(message, call);
    } catch (error) {
      const failure = isToolbusError(error)
        ? error
        : this.#protocol.error('tool-error', String(error), call, error);
      if (failure.code === 'timeout') this.counters.timedOut++;
      else this.counters.failed++;
      this.#settle(call, SETTLED_DONE, failure);
      return;
    }
    const last = this.#protocol.isLast(response);
    if (last) {
      this.counters.completed++;
      this.#settle(call, SETTLED_DONE);
    }
    call.receive(response, last);
  }

  #drop(id: string | undefined, reason: DroppedResponseReason): void {
    this.counters.dropped[reason]++;
    try {
      this.#onDropped?.(id, reason);
    } catch {
      // Observers must not change the outcome of a call.
    }
  }
}
