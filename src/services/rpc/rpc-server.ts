/**
 * @module `RpcServer`: the serving half of request/response over a `MessageBus`, written once for every
 * protocol on the bus (tool services, the agent service). It owns what they share: correlation by the
 * `id` property, the cancel control topic, the `deadline` property, the bounded queue and concurrency,
 * duplicate-id refusal, streamed replies and the start/stop lifecycle. A protocol supplies only its codec
 * and its handler ({@link RpcServerProtocol}).
 */
import type { Attributes, Span } from '@opentelemetry/api';
import { canonicalTopic } from '../../bus/index.js';
import type { BusMessage, BusProperties, BusSubscription, MessageBus } from '../../bus/index.js';
import { ToolbusError, isToolbusError } from '../../errors/index.js';
import { MAX_TIMER_MS, endSpanWithError, errorTypeOf, otel, tracingEnabled } from '../../tools/index.js';
import {
  cancelTopicOf,
  echoPropertiesOf,
  readCancelReason,
  readDeadline,
  readId,
  readTraceparent,
} from './envelope.js';
import { FulfilledPublishes } from './fulfilled-publishes.js';
import { startServerSpan, type RpcSpanTarget } from './rpc-tracing.js';

/**
 * How long past its deadline a running call is aborted, when its caller has not cancelled it first: a
 * live caller gives up at the deadline and cancels, so its own timeout wins the race.
 */
export const DEADLINE_GRACE_MS = 20;

/** What an {@link RpcServer} absorbed instead of answering or crashing, for the protocol to report. */
export type RpcServerEvent =
  /** A request without a readable `id`: nothing to answer, dropped. */
  | { readonly type: 'unreadable'; readonly message: BusMessage }
  /** A request whose body did not decode; it was answered `invalid-request`. */
  | {
      readonly type: 'invalid';
      readonly id: string;
      readonly error: ToolbusError;
      readonly properties: BusProperties;
    }
  /** A request reusing the id of a call in progress: dropped, since any answer would reach that call. */
  | { readonly type: 'duplicate'; readonly id: string; readonly properties: BusProperties }
  /** Publishing a response failed. */
  | { readonly type: 'publish-error'; readonly id: string; readonly error: unknown };

/**
 * What a protocol tells {@link RpcServer}: its codec, its handler and how it names things. `Call` is the
 * protocol's subclass of {@link RpcServerCall}, which carries the decoded request itself (one object per
 * call instead of a call plus a request).
 */
export interface RpcServerProtocol<Call extends RpcServerCall> {
  /** Names the server in messages, e.g. `tool service 'joke'`. */
  readonly name: string;
  /** Names one call in messages, e.g. `call 'a1'` or `agent request 'a1'`. */
  label(id: string): string;
  /**
   * Decodes a request into its call, built with `super(owner, id, message.properties)`.
   * @throws ToolbusError `invalid-request` naming what is wrong.
   */
  decode(message: BusMessage, owner: RpcCallOwner, id: string): Call;
  /** Serves one call: returns its result, a promise of it, or throws. */
  serve(call: Call): unknown;
  /** The body of the last response for what {@link serve} returned. May throw: the call then fails. */
  encodeResult(value: unknown, call: Call): string;
  /** The body of one streamed response for `call.write(chunk)`. May throw: the write rejects. */
  encodeChunk(chunk: unknown): string;
  /**
   * The body of the last response of a failed call. `own` is true for the server's own refusals and
   * aborts, a `ToolbusError` with code `invalid-request`, `unavailable`, `too-many-requests`, `timeout`
   * (the deadline passed) or `cancelled`; false for what {@link serve} threw or rejected with.
   */
  encodeError(id: string, error: unknown, own: boolean): string;
  /**
   * The code running calls are aborted with when a stop stops waiting for them (queued ones are answered
   * with it). @default 'cancelled'
   */
  readonly stopCode?: 'cancelled' | 'unavailable';
  /** Observes what the server absorbed. Must not throw. @default none */
  report?(event: RpcServerEvent): void;
  /** The operation in span names and `rpc.method` (tracing), e.g. `invoke`. @default 'call' */
  readonly method?: string;
  /** A call's span attributes besides the RPC ones; asked only while tracing. @default none */
  spanAttributes?(call: Call): Attributes | undefined;
}

/** What a call needs of its server (an {@link RpcServer}); protocols only pass it on to the call. */
export interface RpcCallOwner {
  /** Names one call in messages. */
  label(id: string): string;
  /** The clock for deadlines, in epoch milliseconds. */
  readonly now: () => number;
  /** Publishes one chunk of a streamed reply. */
  publishChunk(id: string, properties: BusProperties, chunk: unknown): Promise<void>;
}

/** Options of {@link RpcServer}. */
export interface RpcServerOptions {
  bus: MessageBus;
  /** Where requests arrive (subscribed in {@link group}) and whose control topic carries cancellations. */
  requestQueue: string;
  /** Where responses go. */
  responseQueue: string;
  /** The bus group the replicas share, so each request reaches one of them. */
  group: string;
  /** Calls running at once. */
  concurrency: number;
  /** Calls waiting for a slot; beyond, a request is answered `too-many-requests`. */
  maxQueued: number;
  /** The clock for deadlines, in epoch milliseconds. @default Date.now */
  now?: () => number;
  /**
   * Started once the server has subscribed (a failure fails the start and unsubscribes); the function it
   * resolves with runs first when the server stops (a self-announcing service says goodbye there).
   * @default none
   */
  attach?: () => Promise<() => Promise<void>>;
  /**
   * Takes requests another way than a bus subscription in {@link group} (a durable service consumes its
   * work queue): calls `onRequest` once per request. Its subscription ends first on stop.
   * @default `bus.subscribe(requestQueue, …, { group })`
   */
  intake?: (onRequest: (message: BusMessage) => void) => Promise<BusSubscription>;
  /**
   * Sends a response (`last` for the one that ends a call) instead of publishing it on the response
   * queue (a durable service stores it first). @default `bus.publish(responseQueue, …)`
   */
  respond?: (id: string, body: string, properties: BusProperties, last: boolean) => Promise<void>;
}

/** Counters of an {@link RpcServer}. */
export interface RpcServerStats {
  /** Requests with a readable `id`. */
  received: number;
  /** Calls that ended with a result. */
  completed: number;
  /** Calls whose handler threw (or whose result could not be encoded). */
  failed: number;
  /** Requests answered `too-many-requests`. */
  rejected: number;
  /** Requests whose deadline had passed (skipped) or passed while queued or running. */
  expired: number;
  /** Calls cancelled by the caller or by a stop. */
  cancelled: number;
  /** Requests with a readable `id` but a body that did not decode, or reusing the id of a call in progress. */
  invalid: number;
  /** Messages without a readable `id` (dropped). */
  unreadable: number;
  /** Calls running now. */
  inFlight: number;
  /** Calls waiting for a slot now. */
  queued: number;
}

const ENDED = 1;
const STREAMED = 2;

/** The rarely needed part of a call, made on first use: most calls are never aborted nor look at `signal`. */
interface CallAbort {
  controller: AbortController | undefined;
  reason: ToolbusError | undefined;
  timer: ReturnType<typeof setTimeout> | undefined;
}

/** The server's hands on a call, kept off its public surface (the call is also the handler's context). */
let endCall: (call: RpcServerCall) => void;
let abortCall: (call: RpcServerCall, reason: ToolbusError) => void;
let ownerOf: (call: RpcServerCall) => RpcCallOwner;
let onDeadlineTimer: (call: RpcServerCall, early: boolean) => void;

/**
 * One accepted call, as the protocol's handler sees it; a protocol extends it with its decoded request.
 * What a call holds stays small, since every call in flight keeps it: its `AbortController` and deadline
 * timer exist only once {@link signal} is read (most handlers never look, and an `AbortSignal` costs more
 * than a trivial call), and `deadline` is read from the properties when asked for.
 */
export class RpcServerCall {
  readonly id: string;
  /** Every property of the request message. */
  readonly properties: BusProperties;
  readonly #owner: RpcCallOwner;
  #state = 0;
  #abort: CallAbort | undefined = undefined;

  constructor(owner: RpcCallOwner, id: string, properties: BusProperties) {
    this.#owner = owner;
    this.id = id;
    this.properties = properties;
  }

  static {
    endCall = (call) => call.#end();
    abortCall = (call, reason) => call.#abortWith(reason);
    ownerOf = (call) => call.#owner;
    onDeadlineTimer = (call, early) => call.#onDeadline(early);
  }

  /** Epoch milliseconds after which the caller has given up, when it sent one. */
  get deadline(): number | undefined {
    return readDeadline(this.properties);
  }

  /** Aborted when the caller cancels, the deadline passes, or a stop aborts the calls. */
  get signal(): AbortSignal {
    const abort = this.#abort;
    if (abort?.controller) return abort.controller.signal;
    const controller = new AbortController();
    if (abort) {
      abort.controller = controller;
      if (abort.reason) controller.abort(abort.reason);
    } else {
      this.#abort = { controller, reason: undefined, timer: undefined };
      const deadline = this.deadline;
      if (deadline !== undefined && !this.ended) this.#armDeadline(deadline);
    }
    return controller.signal;
  }

  /** The W3C `traceparent` of the caller, when sent. */
  get traceparent(): string | undefined {
    return readTraceparent(this.properties);
  }

  /** Why the call was aborted, once it was. */
  get abortReason(): ToolbusError | undefined {
    return this.#abort?.reason;
  }

  /** True once the call's last response has been decided. */
  get ended(): boolean {
    return (this.#state & ENDED) !== 0;
  }

  /** True once a chunk was written. */
  get streamed(): boolean {
    return (this.#state & STREAMED) !== 0;
  }

  /**
   * Sends one chunk of a streamed reply now (encoded by the protocol). Rejects with the abort reason, or
   * `cancelled`, once the call has been aborted or has ended.
   */
  write(chunk: unknown): Promise<void> {
    const reason = this.#abort?.reason;
    if (reason || this.ended) {
      return Promise.reject(
        reason ?? new ToolbusError('cancelled', `${this.#owner.label(this.id)} has already ended`),
      );
    }
    this.#state |= STREAMED;
    return this.#owner.publishChunk(this.id, this.properties, chunk);
  }

  /** Aborts the call (once, and not after it ended): its signal aborts with `reason`. */
  #abortWith(reason: ToolbusError): void {
    if (this.#abort?.reason || this.ended) return;
    if (this.#abort) this.#abort.reason = reason;
    else this.#abort = { controller: undefined, reason, timer: undefined };
    this.#abort.controller?.abort(reason);
  }

  /** Marks the call ended and stops its deadline timer. */
  #end(): void {
    this.#state |= ENDED;
    const timer = this.#abort?.timer;
    if (timer !== undefined) clearTimeout(timer);
  }

  /** Aborts the call a little after its deadline, re-arming in steps Node's timers can hold. */
  #armDeadline(deadline: number): void {
    const delay = Math.max(0, deadline - this.#owner.now()) + DEADLINE_GRACE_MS;
    // Node runs a longer timeout after 1 ms: a far deadline (a timeout of weeks) would abort at once.
    // One shared callback for every call's timer: a per-call closure would cost more than the timer.
    this.#abort!.timer = setTimeout(
      onDeadlineTimer,
      Math.min(delay, MAX_TIMER_MS),
      this,
      delay > MAX_TIMER_MS,
    );
  }

  #onDeadline(early: boolean): void {
    const deadline = this.deadline;
    if (early && deadline !== undefined) this.#armDeadline(deadline);
    else this.#abortWith(new ToolbusError('timeout', `${this.#owner.label(this.id)} passed its deadline`));
  }
}

/**
 * The settle handlers of a call whose handler returned a promise. They are bound to the call (48 bytes
 * each, against two closures and their context), and reach the server's `#finish` from its static block.
 */
let served: (this: RpcServerCall, value: unknown) => void;
let serveFailed: (this: RpcServerCall, error: unknown) => void;

/** One start: the subscribing, which may go on after a stop gave up waiting for it, and its outcome. */
class StartAttempt {
  settled = false;
  abandoned = false;
  readonly work: Promise<void>;
  /** What `start()` returns: the work's outcome, or `closed` once abandoned. */
  readonly result: Promise<void>;
  #reject!: (error: ToolbusError) => void;

  constructor(run: (attempt: StartAttempt) => Promise<void>, onFailure: (attempt: StartAttempt) => void) {
    this.work = run(this);
    // Registered first, so a failed start is forgotten before callers see the failure.
    this.work.then(
      () => (this.settled = true),
      () => {
        this.settled = true;
        if (!this.abandoned) onFailure(this);
      },
    );
    this.result = new Promise<void>((resolve, reject) => {
      this.#reject = reject;
      this.work.then(resolve, reject);
    });
  }

  abandon(error: ToolbusError): void {
    this.abandoned = true;
    this.#reject(error);
  }
}

/**
 * Serves one request queue for a protocol. Replicas on the same queue share the bus group, so each
 * request reaches one of them; cancellations arrive on the broadcast control topic, so they reach the
 * replica running the call.
 *
 * Per request, in order: no readable `id` → dropped and reported; the id of a call in progress → dropped
 * and reported (an answer would reach that call's caller); a body that does not decode → `invalid-request`;
 * stopping → `unavailable`; a passed `deadline` → `timeout`; then run, queue, or `too-many-requests`.
 */
export class RpcServer<Call extends RpcServerCall> implements RpcCallOwner {
  readonly #bus: MessageBus;
  readonly #protocol: RpcServerProtocol<Call>;
  readonly #requestQueue: string;
  readonly #responseQueue: string;
  readonly #cancelTopic: string;
  readonly #group: string;
  readonly #concurrency: number;
  readonly #maxQueued: number;
  readonly #attach: (() => Promise<() => Promise<void>>) | undefined;
  readonly #intake: RpcServerOptions['intake'];
  readonly #respond: RpcServerOptions['respond'];
  /** The clock for deadlines, in epoch milliseconds. */
  readonly now: () => number;
  readonly #running = new Map<string, Call>();
  readonly #queue: (Call | undefined)[] = [];
  #queueHead = 0;
  readonly #queuedById = new Map<string, Call>();
  #draining = false;
  #requests: BusSubscription | undefined;
  #cancels: BusSubscription | undefined;
  #detach: (() => Promise<void>) | undefined;
  #start: StartAttempt | undefined;
  #stopping: Promise<void> | undefined;
  /** Aborted when the signal of any `stop()` call aborts. */
  readonly #forceStop = new AbortController();
  readonly #fulfilled = new FulfilledPublishes();
  #onIdle: (() => void) | undefined;
  /** What this server's spans are named for (tracing). */
  readonly #spanTarget: RpcSpanTarget;
  /** The span of each traced call running; made by the first call served while tracing is on. */
  #spans: Map<Call, Span> | undefined;
  readonly #stats = {
    received: 0,
    completed: 0,
    failed: 0,
    rejected: 0,
    expired: 0,
    cancelled: 0,
    invalid: 0,
    unreadable: 0,
  };

  constructor(options: RpcServerOptions, protocol: RpcServerProtocol<Call>) {
    this.#bus = options.bus;
    this.#protocol = protocol;
    this.#requestQueue = options.requestQueue;
    this.#responseQueue = options.responseQueue;
    this.#cancelTopic = cancelTopicOf(options.requestQueue);
    this.#group = options.group;
    this.#concurrency = options.concurrency;
    this.#maxQueued = options.maxQueued;
    this.#attach = options.attach;
    this.#intake = options.intake;
    this.#respond = options.respond;
    this.now = options.now ?? Date.now;
    this.#spanTarget = { service: canonicalTopic(options.requestQueue), method: protocol.method ?? 'call' };
  }

  /** Calls running now. */
  get inFlight(): number {
    return this.#running.size;
  }

  /** A snapshot of the counters. */
  stats(): RpcServerStats {
    return { ...this.#stats, inFlight: this.#running.size, queued: this.#queuedById.size };
  }

  /** Names one call in messages (the protocol's label). */
  label(id: string): string {
    return this.#protocol.label(id);
  }

  /**
   * Subscribes to the control topic and the request queue, then starts `attach`. Idempotent; after a
   * failed start, calling it again tries again. Rejects with `closed` after {@link stop}.
   */
  start(): Promise<void> {
    if (this.#stopping) {
      return Promise.reject(
        new ToolbusError('closed', `${this.#protocol.name} was stopped; create a new one`),
      );
    }
    this.#start ??= new StartAttempt(
      (attempt) => this.#subscribe(attempt),
      (attempt) => {
        if (this.#start === attempt) this.#start = undefined;
      },
    );
    return this.#start.result;
  }

  /**
   * Graceful stop: takes no new calls (late requests are answered `unavailable`), lets the running and
   * queued calls finish, then unsubscribes. If `options.signal` (of this call, or of a later one while
   * the stop is under way) aborts first, queued calls are answered and running ones aborted with the
   * protocol's stop code, and the stop resolves once they have settled. A `start()` still waiting on the
   * bus is waited for until that signal aborts: then that start rejects with `closed`, and what it
   * subscribes later is released. Idempotent.
   */
  stop(options: { signal?: AbortSignal } = {}): Promise<void> {
    const signal = options.signal;
    if (signal?.aborted) this.#forceStop.abort(signal.reason);
    this.#stopping ??= this.#stop(this.#forceStop.signal);
    if (signal && !signal.aborted) {
      const force = (): void => this.#forceStop.abort(signal.reason);
      const release = (): void => signal.removeEventListener('abort', force);
      signal.addEventListener('abort', force, { once: true });
      void this.#stopping.then(release, release);
    }
    return this.#stopping;
  }

  /** @internal Publishes one chunk of `id`'s streamed reply (see {@link RpcServerCall.write}). */
  publishChunk(id: string, properties: BusProperties, chunk: unknown): Promise<void> {
    let body: string;
    try {
      body = this.#protocol.encodeChunk(chunk);
    } catch (error) {
      return Promise.reject(error);
    }
    const echo = echoPropertiesOf(id, properties);
    if (this.#respond) return this.#respond(id, body, echo, false);
    return this.#bus.publish(this.#responseQueue, body, echo);
  }

  async #subscribe(attempt: StartAttempt): Promise<void> {
    const bus = this.#bus;
    this.#cancels = await bus.subscribe(this.#cancelTopic, (m) => this.#onCancel(m));
    try {
      this.#requests = this.#intake
        ? await this.#intake((m) => this.#onRequest(m))
        : await bus.subscribe(this.#requestQueue, (m) => this.#onRequest(m), { group: this.#group });
      if (this.#attach && !attempt.abandoned) this.#detach = await this.#attach();
    } catch (error) {
      await this.#requests?.unsubscribe().catch(() => undefined);
      await this.#cancels.unsubscribe().catch(() => undefined);
      this.#requests = undefined;
      this.#cancels = undefined;
      throw error;
    }
  }

  async #stop(force: AbortSignal): Promise<void> {
    const start = this.#start;
    // During a bus outage the start can wait without limit: the stop's signal cuts that wait short.
    if (start && !start.settled && !(await settledUnlessAborted(start.work, force))) {
      start.abandon(
        new ToolbusError('closed', `${this.#protocol.name} was stopped before it finished starting`),
      );
      // What it subscribes after this stop is done is released when it arrives; the rest below.
      void start.work.then(
        () => this.#release(),
        () => undefined,
      );
    }
    // Detach first (a self-announcing service says goodbye before requests start being refused).
    const detach = this.#detach;
    this.#detach = undefined;
    await detach?.().catch(() => undefined);
    await this.#requests?.unsubscribe();
    const abortAll = (): void => {
      const code = this.#protocol.stopCode ?? 'cancelled';
      const reason = new ToolbusError(code, `${this.#protocol.name} is stopping`);
      for (const call of [...this.#queuedById.values()]) this.#dropQueued(call, reason);
      for (const call of this.#running.values()) abortCall(call, reason);
    };
    if (force.aborted) abortAll();
    else force.addEventListener('abort', abortAll, { once: true });
    try {
      if (this.#running.size > 0 || this.#queuedById.size > 0) {
        await new Promise<void>((resolve) => (this.#onIdle = resolve));
      }
    } finally {
      force.removeEventListener('abort', abortAll);
      await this.#cancels?.unsubscribe();
    }
  }

  /** Releases what a start abandoned by a stop subscribed after that stop. Idempotent. */
  async #release(): Promise<void> {
    const detach = this.#detach;
    this.#detach = undefined;
    await detach?.().catch(() => undefined);
    await this.#requests?.unsubscribe().catch(() => undefined);
    await this.#cancels?.unsubscribe().catch(() => undefined);
  }

  #onCancel(message: BusMessage): void {
    const id = readId(message.properties);
    if (id !== undefined) this.cancel(id, readCancelReason(message.properties));
  }

  /**
   * Cancels call `id` if it is running or queued here, as a cancellation message from its caller
   * would. Returns whether it was.
   */
  cancel(id: string, why?: string): boolean {
    const running = this.#running.get(id);
    const queued = running ? undefined : this.#queuedById.get(id);
    if (!running && !queued) return false;
    const reason = new ToolbusError(
      'cancelled',
      `${this.#protocol.label(id)} was cancelled by the caller${why ? `: ${why}` : ''}`,
    );
    if (running) abortCall(running, reason);
    else if (queued) this.#dropQueued(queued, reason);
    return true;
  }

  #onRequest(message: BusMessage): void {
    const protocol = this.#protocol;
    const properties = message.properties;
    const id = readId(properties);
    if (id === undefined) {
      this.#stats.unreadable++;
      protocol.report?.({ type: 'unreadable', message });
      return;
    }
    this.#stats.received++;
    if (this.#running.has(id) || (this.#queuedById.size > 0 && this.#queuedById.has(id))) {
      // Any answer, even an error, would carry that id and reach the first call's caller.
      this.#stats.invalid++;
      protocol.report?.({ type: 'duplicate', id, properties });
      return;
    }
    let call: Call;
    try {
      call = protocol.decode(message, this, id);
    } catch (error) {
      this.#stats.invalid++;
      const reason = isToolbusError(error)
        ? error
        : new ToolbusError('invalid-request', `${protocol.label(id)}: ${String(error)}`, { cause: error });
      protocol.report?.({ type: 'invalid', id, error: reason, properties });
      this.#refuse(id, properties, reason);
      return;
    }
    if (this.#stopping) {
      this.#refuse(id, properties, new ToolbusError('unavailable', `${protocol.name} is stopping`));
      return;
    }
    const deadline = readDeadline(properties);
    if (deadline !== undefined && deadline <= this.now()) {
      this.#stats.expired++;
      this.#refuse(id, properties, new ToolbusError('timeout', `${protocol.label(id)} passed its deadline`));
      return;
    }
    if (this.#running.size < this.#concurrency) {
      this.#run(call);
    } else if (this.#queuedById.size < this.#maxQueued) {
      this.#queue.push(call);
      this.#queuedById.set(id, call);
    } else {
      this.#stats.rejected++;
      this.#refuse(
        id,
        properties,
        new ToolbusError(
          'too-many-requests',
          `${protocol.name} is at capacity (${this.#concurrency} running, ${this.#maxQueued} queued); retry later`,
        ),
      );
    }
  }

  /** Answers a queued call now, freeing its queue slot, instead of when a running call ends. */
  #dropQueued(call: Call, reason: ToolbusError): void {
    if (this.#queuedById.get(call.id) !== call) return;
    this.#queuedById.delete(call.id);
    abortCall(call, reason);
    this.#finish(call, undefined, undefined, false);
  }

  #run(call: Call): void {
    this.#running.set(call.id, call);
    // One cheap test per call: with no OpenTelemetry SDK the call is served as before, with no span.
    if (tracingEnabled()) this.#serveTraced(call);
    else this.#serve(call);
  }

  /**
   * Serves `call` inside its SERVER span, a child of the trace context the request carried: what the
   * handler calls (an agent's model and tools, another service) traces below it.
   */
  #serveTraced(call: Call): void {
    const protocol = this.#protocol;
    const extra = protocol.spanAttributes?.(call);
    const { span, context: serving } = startServerSpan(this.#spanTarget, call.id, call.properties, extra);
    // Set before serving: a synchronous handler finishes (and ends the span) inside #serve.
    (this.#spans ??= new Map()).set(call, span);
    otel().context.with(serving, () => this.#serve(call));
  }

  #serve(call: Call): void {
    let result: unknown;
    let thenable: boolean;
    try {
      if (call.abortReason) throw call.abortReason;
      result = this.#protocol.serve(call);
      // Inside the try: a `then` getter may throw too.
      thenable =
        result !== null &&
        (typeof result === 'object' || typeof result === 'function') &&
        typeof (result as PromiseLike<unknown>).then === 'function';
    } catch (error) {
      this.#finish(call, undefined, error, true);
      return;
    }
    // A synchronous result is answered at once, without a detour through the microtask queue.
    if (!thenable) {
      this.#finish(call, result, undefined, false);
      return;
    }
    // Adopt through a real promise: a foreign thenable's `then` may throw or call back twice, which
    // would otherwise leave the call running forever (blocking a graceful stop) or finish it twice.
    Promise.resolve(result).then(served.bind(call), serveFailed.bind(call));
  }

  static {
    // Methods of an object literal: esbuild's `keepNames` (tsx, bundles) leaves them alone, while a named
    // function gets an own `name` property, which sends every `bind` of it down V8's slow path (an own
    // `name` and `length` on each bound function, some 300 bytes).
    const settlers = {
      served(this: RpcServerCall, value: unknown): void {
        (ownerOf(this) as RpcServer<RpcServerCall>).#finish(this, value, undefined, false);
      },
      failed(this: RpcServerCall, error: unknown): void {
        (ownerOf(this) as RpcServer<RpcServerCall>).#finish(this, undefined, error, true);
      },
    };
    served = settlers.served;
    serveFailed = settlers.failed;
  }

  /** The one cleanup of a call (timer, running entry), then its last response, then the next call. */
  #finish(call: Call, value: unknown, error: unknown, failed: boolean): void {
    if (call.ended) return;
    const protocol = this.#protocol;
    endCall(call);
    this.#running.delete(call.id);
    const reason = call.abortReason;
    let body: string;
    let result = false;
    if (reason) {
      if (reason.code === 'timeout') this.#stats.expired++;
      else this.#stats.cancelled++;
      body = protocol.encodeError(call.id, reason, true);
    } else if (failed) {
      this.#stats.failed++;
      body = protocol.encodeError(call.id, error, false);
    } else {
      try {
        body = protocol.encodeResult(value, call);
        this.#stats.completed++;
        result = true;
      } catch (encodeError) {
        this.#stats.failed++;
        body = protocol.encodeError(call.id, encodeError, false);
      }
    }
    if (this.#spans !== undefined) this.#endSpan(this.#spans, call, reason, result, failed, error);
    this.#publish(call.id, body, echoPropertiesOf(call.id, call.properties), result);
    this.#next();
  }

  /** Ends a traced call's span: ok, or with the abort's code, or the handler's failure, as `error.type`. */
  #endSpan(
    spans: Map<Call, Span>,
    call: Call,
    reason: ToolbusError | undefined,
    result: boolean,
    failed: boolean,
    error: unknown,
  ): void {
    const span = spans.get(call);
    if (span === undefined) return;
    spans.delete(call);
    if (result) span.end();
    else if (reason) endSpanWithError(span, reason.code, reason.message);
    else if (failed) endSpanWithError(span, errorTypeOf(error), errorMessage(error));
    // The result could not be encoded.
    else endSpanWithError(span, 'invalid-response', undefined);
  }

  #next(): void {
    // A synchronous call finishes inside #run and calls #next again: the outer loop keeps draining.
    if (this.#draining) return;
    this.#draining = true;
    try {
      while (this.#running.size < this.#concurrency && this.#queueHead < this.#queue.length) {
        const call = this.#queue[this.#queueHead];
        this.#queue[this.#queueHead++] = undefined;
        // Skip calls answered while queued (cancelled, or dropped by a stop).
        if (!call || this.#queuedById.get(call.id) !== call) continue;
        this.#queuedById.delete(call.id);
        // It may have waited past its deadline: answer that instead of doing the work.
        const deadline = call.deadline;
        if (deadline !== undefined && deadline <= this.now()) {
          abortCall(
            call,
            new ToolbusError('timeout', `${this.#protocol.label(call.id)} passed its deadline while queued`),
          );
        }
        this.#run(call);
      }
    } finally {
      this.#draining = false;
    }
    if (this.#queueHead === this.#queue.length) {
      this.#queue.length = 0;
      this.#queueHead = 0;
    }
    if (this.#onIdle && this.#running.size === 0 && this.#queuedById.size === 0) {
      const resolve = this.#onIdle;
      this.#onIdle = undefined;
      resolve();
    }
  }

  /** Answers a request the server itself refuses (never run). */
  #refuse(id: string, properties: BusProperties, reason: ToolbusError): void {
    this.#publish(id, this.#protocol.encodeError(id, reason, true), echoPropertiesOf(id, properties), false);
  }

  /**
   * Publishes a last response. A result the bus refuses as too large (NATS max_payload) is answered with
   * a short error instead, so the caller learns why at once rather than at its timeout.
   */
  #publish(id: string, body: string, properties: BusProperties, result: boolean): void {
    const sent = this.#respond
      ? this.#respond(id, body, properties, true)
      : this.#bus.publish(this.#responseQueue, body, properties);
    if (this.#fulfilled.known(sent)) return;
    sent.catch((error: unknown) => {
      this.#protocol.report?.({ type: 'publish-error', id, error });
      if (result && isToolbusError(error) && error.code === 'too-large') {
        const failure = new ToolbusError(
          'too-large',
          `${this.#protocol.name}: the result could not be sent: ${error.message}`,
          { cause: error },
        );
        this.#publish(id, this.#protocol.encodeError(id, failure, false), properties, false);
      }
    });
  }
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Resolves true once `work` settles, or false as soon as `signal` aborts (if it does first). */
function settledUnlessAborted(work: Promise<unknown>, signal: AbortSignal): Promise<boolean> {
  const settled = work.then(
    () => true,
    () => true,
  );
  if (signal.aborted) return Promise.resolve(false);
  return new Promise<boolean>((resolve) => {
    const onAbort = (): void => resolve(false);
    signal.addEventListener('abort', onAbort, { once: true });
    void settled.then(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(true);
    });
  });
}
