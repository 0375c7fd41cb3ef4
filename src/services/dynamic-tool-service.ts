/**
 * @module `DynamicToolService`: the server side of the tool-service protocol.
 */
import { defaultServiceQueues, parseTopic } from '../bus/index.js';
import type { BusMessage, BusProperties, BusSubscription, MessageBus } from '../bus/index.js';
import { MAX_TIMER_MS } from '../tools/index.js';
import { isToolbusError, ToolbusError } from '../errors/index.js';
import { runHook, type Hook } from './hooks.js';
import {
  startServiceAnnouncer,
  type Announcer,
  type DynamicToolServiceAnnounceOptions,
} from './announcements.js';
import {
  WireErrorType,
  WireProperty,
  cancelTopicOf,
  checkQueuePair,
  decodeEnvelopeObject,
  decodeRequest,
  encodeResponse,
  readDeadline,
  readId,
  serviceGroupOf,
  toWireError,
  type WireError,
} from './wire.js';

/** Calls run at once per service instance unless `concurrency` says otherwise. */
export const DEFAULT_TOOL_SERVICE_CONCURRENCY = 16;
/** Calls waiting for a free slot per service instance unless `maxQueued` says otherwise. */
export const DEFAULT_TOOL_SERVICE_MAX_QUEUED = 256;
/** The `topic` TrustGraph's `DynamicToolService` uses when none is given. */
export const DEFAULT_TOOL_SERVICE_TOPIC = 'tool';

/** How long past its deadline a running call is aborted, when its caller has not cancelled it first. */
const DEADLINE_GRACE_MS = 20;

/** What `invoke` sees of the call besides `user`, `config` and `arguments`. */
export interface ToolServiceInvokeContext {
  /** Aborted when the caller cancels, the deadline passes, or `stop()` is told to abort. Always present. */
  readonly signal: AbortSignal;
  /** The correlation id of the call. */
  readonly id: string;
  /** Epoch milliseconds after which the caller has given up, when the caller sent one. */
  readonly deadline: number | undefined;
  /** The W3C `traceparent` of the caller, when sent. */
  readonly traceparent: string | undefined;
  /** All properties of the request message. */
  readonly properties: BusProperties;
  /**
   * Sends one chunk of a streamed reply (`end_of_stream: false`) now. A string is sent as is, anything
   * else as JSON. The value `invoke` returns is sent last, with `end_of_stream: true`. Rejects with code
   * `cancelled` once the call has been cancelled or has ended.
   */
  write(chunk: unknown): Promise<void>;
}

/** The function that serves one call. A string result is sent as is, anything else as `JSON.stringify`. */
export type ToolServiceInvoke = (
  user: string,
  config: Record<string, unknown>,
  args: Record<string, unknown>,
  context: ToolServiceInvokeContext,
) => unknown;

/** Context of the {@link DynamicToolServiceHooks.onMalformedMessage} hook. */
export interface MalformedMessageContext {
  /** The service id. */
  service: string;
  /** The id, when it could be read (the caller then got an `invalid-request` response). */
  id: string | undefined;
  /** What was wrong. */
  reason: string;
  properties: BusProperties;
}

/** Context of the {@link DynamicToolServiceHooks.onCallError} hook. */
export interface CallErrorContext {
  service: string;
  id: string;
  /** The wire error sent back. */
  error: WireError;
  /** The thrown value, for `tool-service-error`. */
  cause: unknown;
}

/** Observability hooks of a {@link DynamicToolService}. Each takes one function or an array. */
export interface DynamicToolServiceHooks {
  /** A request could not be decoded, or had no readable `id` (then it is dropped). @default none */
  onMalformedMessage?: Hook<MalformedMessageContext>;
  /** A call ended with an error response (thrown, rejected for capacity, expired, cancelled). @default none */
  onCallError?: Hook<CallErrorContext>;
  /** Publishing a response failed (for example the bus closed). @default none */
  onPublishError?: Hook<{ service: string; id: string; error: unknown }>;
}

/** Options of {@link DynamicToolService}. */
export interface DynamicToolServiceOptions {
  /** The bus the service listens on. */
  bus: MessageBus;
  /** The service id (TrustGraph's processor id). @default the `topic`, or the last part of the request queue */
  id?: string;
  /**
   * Builds the queues as TrustGraph does: `non-persistent://tg/request/{topic}` and
   * `non-persistent://tg/response/{topic}`. Ignored when both queues are given.
   * @default DEFAULT_TOOL_SERVICE_TOPIC ('tool')
   */
  topic?: string;
  /** The request queue, in any topic form. @default from `topic` */
  requestQueue?: string;
  /** The response queue, in any topic form. @default from `topic` */
  responseQueue?: string;
  /** Calls run at once. @default DEFAULT_TOOL_SERVICE_CONCURRENCY (16) */
  concurrency?: number;
  /**
   * Calls waiting for a free slot; beyond that a request is answered `too-many-requests` at once.
   * @default DEFAULT_TOOL_SERVICE_MAX_QUEUED (256)
   */
  maxQueued?: number;
  /** Serves the calls; a subclass may override {@link DynamicToolService.invoke} instead. @default none */
  invoke?: ToolServiceInvoke;
  /** @default none */
  hooks?: DynamicToolServiceHooks;
  /** The clock used for deadlines, in epoch milliseconds. @default Date.now */
  now?: () => number;
  /**
   * Self-announce: publish this service's descriptor and `tools` on the `tool-descriptors` topic at
   * start, as a heartbeat, and when a registry asks; say goodbye on stop. @default none
   */
  announce?: DynamicToolServiceAnnounceOptions;
}

/** Counters of a {@link DynamicToolService}, as returned by `stats()`. */
export interface DynamicToolServiceStats {
  /** Requests with a readable `id`. */
  received: number;
  /** Calls that ended with a result. */
  completed: number;
  /** Calls that ended with `tool-service-error`. */
  failed: number;
  /** Requests answered `too-many-requests`. */
  rejected: number;
  /** Requests whose deadline had passed (skipped) or passed while running. */
  expired: number;
  /** Calls cancelled by the caller. */
  cancelled: number;
  /** Requests with a readable `id` but a malformed body (answered `invalid-request`). */
  invalid: number;
  /** Messages without a readable `id` (dropped, reported through `onMalformedMessage`). */
  unreadable: number;
  /** Calls running now. */
  inFlight: number;
  /** Calls waiting for a slot now. */
  queued: number;
}

interface ResolvedOptions {
  bus: MessageBus;
  id: string;
  requestQueue: string;
  responseQueue: string;
  cancelTopic: string;
  group: string;
  concurrency: number;
  maxQueued: number;
  invoke: ToolServiceInvoke | undefined;
  hooks: DynamicToolServiceHooks;
  now: () => number;
}

/** One accepted call. The AbortController (and the deadline timer) exist only once `ctx.signal` is read. */
class Call {
  controller: AbortController | undefined;
  abortReason: ToolbusError | undefined;
  timer: ReturnType<typeof setTimeout> | undefined;
  ended = false;
  streamed = false;
  responseProperties: BusProperties | undefined;

  constructor(
    readonly id: string,
    readonly user: string,
    readonly config: Record<string, unknown>,
    readonly args: Record<string, unknown>,
    readonly properties: BusProperties,
    readonly deadline: number | undefined,
    readonly now: () => number,
  ) {}

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.abortReason) this.controller.abort(this.abortReason);
      else if (this.deadline !== undefined && !this.ended) {
        // A backstop for a caller that is gone: a live one gives up at the deadline and cancels, so
        // wait a little longer and let its own timeout win the race.
        this.#armDeadline(this.deadline);
      }
    }
    return this.controller.signal;
  }

  /** Aborts the call a little after `deadline`, re-arming in steps Node's timers can hold. */
  #armDeadline(deadline: number): void {
    const delay = Math.max(0, deadline - this.now()) + DEADLINE_GRACE_MS;
    // Node runs a longer timeout after 1 ms: a far deadline (a timeout of weeks) would abort at once.
    this.timer = setTimeout(
      () =>
        delay > MAX_TIMER_MS
          ? this.#armDeadline(deadline)
          : this.abort(new ToolbusError('timeout', `call '${this.id}' passed its deadline`)),
      Math.min(delay, MAX_TIMER_MS),
    );
  }

  abort(reason: ToolbusError): void {
    if (this.abortReason || this.ended) return;
    this.abortReason = reason;
    this.controller?.abort(reason);
  }

  /** The response properties: the `id`, plus the trace context when the request carried one. */
  get echo(): BusProperties {
    return (this.responseProperties ??= echoPropertiesOf(this.id, this.properties));
  }
}

/** What `invoke` gets as `ctx`: a view of the call without its internals. */
class InvokeContext implements ToolServiceInvokeContext {
  readonly #call: Call;
  readonly #send: (call: Call, text: string) => Promise<void>;

  constructor(call: Call, send: (call: Call, text: string) => Promise<void>) {
    this.#call = call;
    this.#send = send;
  }

  get signal(): AbortSignal {
    return this.#call.signal;
  }

  get id(): string {
    return this.#call.id;
  }

  get deadline(): number | undefined {
    return this.#call.deadline;
  }

  get traceparent(): string | undefined {
    return this.#call.properties[WireProperty.Traceparent];
  }

  get properties(): BusProperties {
    return this.#call.properties;
  }

  write(chunk: unknown): Promise<void> {
    const call = this.#call;
    if (call.ended || call.abortReason) {
      return Promise.reject(
        call.abortReason ?? new ToolbusError('cancelled', `call '${call.id}' has already ended`),
      );
    }
    let text: string;
    try {
      text = stringify(chunk);
    } catch (error) {
      return Promise.reject(error);
    }
    call.streamed = true;
    return this.#send(call, text);
  }
}

/**
 * Serves a tool service on a bus (TrustGraph's `DynamicToolService`, working on any bus).
 *
 * Replicas constructed with the same request queue share it through a bus group derived from it, so
 * each request is handled by exactly one of them. Cancellations arrive on a broadcast control topic
 * (see `cancelTopicOf` in wire.ts), so they reach the replica running the call.
 *
 * @example
 * ```ts
 * const service = new DynamicToolService({
 *   bus,
 *   id: 'joke-service',
 *   topic: 'joke',
 *   invoke: (user, config, args) => `Hey ${user}! A ${String(config.style)} about ${String(args.topic)}`,
 * });
 * await service.start();
 * // ...
 * await service.stop();
 * ```
 */
export class DynamicToolService {
  readonly #options: ResolvedOptions;
  readonly #running = new Map<string, Call>();
  readonly #queue: (Call | undefined)[] = [];
  #queueHead = 0;
  readonly #queuedById = new Map<string, Call>();
  #requestSubscription: BusSubscription | undefined;
  #cancelSubscription: BusSubscription | undefined;
  /** What `start()` returns; rejected with `closed` when a stop gives up waiting for it. */
  #starting: Promise<void> | undefined;
  /** The subscribing itself, which may go on after a stop has given up waiting for it. */
  #startWork: Promise<void> | undefined;
  #abandonStart: ((error: ToolbusError) => void) | undefined;
  /** The start has succeeded or failed. */
  #startSettled = false;
  /** A stop gave up waiting for the start: whatever the start still subscribes is released. */
  #startAbandoned = false;
  #stopping: Promise<void> | undefined;
  /** Aborted when the signal of any `stop()` call aborts. */
  readonly #forceStop = new AbortController();
  #idleWaiters: (() => void)[] = [];
  #draining = false;
  readonly #announce: DynamicToolServiceAnnounceOptions | undefined;
  #announcer: Announcer | undefined;
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

  /**
   * @throws ToolbusError `invalid-config` for a bad queue name, one topic for both queues, `concurrency` or
   * `maxQueued`.
   */
  constructor(options: DynamicToolServiceOptions) {
    this.#options = resolveOptions(options);
    this.#announce = options.announce;
  }

  /** The service id. */
  get id(): string {
    return this.#options.id;
  }

  /** The request queue as given (or built from `topic`). */
  get requestQueue(): string {
    return this.#options.requestQueue;
  }

  /** The response queue as given (or built from `topic`). */
  get responseQueue(): string {
    return this.#options.responseQueue;
  }

  /** A snapshot of the counters. */
  stats(): DynamicToolServiceStats {
    return { ...this.#stats, inFlight: this.#running.size, queued: this.#queuedById.size };
  }

  /**
   * Subscribes to the request queue (in the service's group) and the control topic. Idempotent; after a
   * failed start, calling it again tries again. Rejects with `closed` when the bus is closed, or when
   * called after {@link stop}.
   */
  start(): Promise<void> {
    if (this.#stopping) {
      return Promise.reject(
        new ToolbusError('closed', `tool service '${this.id}' was stopped; create a new one`),
      );
    }
    if (!this.#starting) {
      this.#startSettled = false;
      const work = this.#subscribe()
        .then(() => this.#startAnnouncing())
        .finally(() => (this.#startSettled = true));
      // A failed start leaves nothing subscribed: forget it, so that a later start() tries again
      // (e.g. once NATS is back) instead of repeating the old failure. Runs before callers see it.
      work.catch(() => {
        if (this.#startWork !== work || this.#startAbandoned) return;
        this.#startWork = undefined;
        this.#starting = undefined;
      });
      this.#startWork = work;
      this.#starting = new Promise<void>((resolve, reject) => {
        this.#abandonStart = reject;
        work.then(resolve, reject);
      });
    }
    return this.#starting;
  }

  /**
   * Graceful stop: takes no new calls (late requests are answered `unavailable`), lets the running and
   * queued calls finish, then unsubscribes. If `options.signal` (of this call, or of a later one while
   * the stop is under way) aborts first, the calls still running are aborted (they see `ctx.signal`
   * abort) and stop resolves once they have settled. A `start()` still waiting on the bus is waited for
   * until that signal aborts: then the stop goes on without it, that start rejects with `closed`, and
   * what it subscribes later is released. Idempotent.
   */
  stop(options: { signal?: AbortSignal } = {}): Promise<void> {
    // Every stop's signal counts, not only the first one's: a graceful stop() already under way can
    // still be cut short by a later stop({ signal }).
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

  /** Alias of {@link stop} with no abort signal. */
  close(): Promise<void> {
    return this.stop();
  }

  /** Alias of {@link close}. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /**
   * Serves one call. Override it in a subclass, or pass `invoke` in the options. Return a string (sent as
   * is) or any JSON value (sent as `JSON.stringify`); throw to send `tool-service-error`.
   */
  protected invoke(
    _user: string,
    _config: Record<string, unknown>,
    _args: Record<string, unknown>,
    _context: ToolServiceInvokeContext,
  ): unknown {
    throw new ToolbusError(
      'unsupported',
      `tool service '${this.id}' has no invoke: pass 'invoke' in the options or override invoke()`,
    );
  }

  async #subscribe(): Promise<void> {
    const { bus, requestQueue, cancelTopic, group } = this.#options;
    this.#cancelSubscription = await bus.subscribe(cancelTopic, (m) => this.#onCancel(m));
    try {
      this.#requestSubscription = await bus.subscribe(requestQueue, (m) => this.#onRequest(m), { group });
    } catch (error) {
      await this.#cancelSubscription.unsubscribe();
      this.#cancelSubscription = undefined;
      throw error;
    }
  }

  async #startAnnouncing(): Promise<void> {
    if (!this.#announce || this.#startAbandoned) return;
    try {
      this.#announcer = await startServiceAnnouncer(this.#options.bus, this, this.#announce);
    } catch (error) {
      await this.#requestSubscription?.unsubscribe();
      await this.#cancelSubscription?.unsubscribe();
      throw error;
    }
  }

  async #stop(signal: AbortSignal | undefined): Promise<void> {
    const work = this.#startWork;
    // During a bus outage the start can wait without limit: the stop's signal cuts that wait short.
    if (work && !this.#startSettled && !(await settledUnlessAborted(work, signal))) {
      this.#startAbandoned = true;
      this.#abandonStart?.(
        new ToolbusError('closed', `tool service '${this.id}' was stopped before it finished starting`),
      );
      // What it subscribes after this stop is done is released when it arrives; the rest below.
      void work.then(
        () => this.#releaseSubscriptions(),
        () => undefined,
      );
    }
    // Goodbye first, so registries withdraw the tools before requests start being refused.
    await this.#announcer?.stop().catch(() => undefined);
    await this.#requestSubscription?.unsubscribe();
    const abortAll = (): void => {
      const reason = new ToolbusError('cancelled', `tool service '${this.id}' is stopping`);
      for (const call of [...this.#queuedById.values()]) this.#dropQueued(call, reason);
      for (const call of this.#running.values()) call.abort(reason);
    };
    if (signal?.aborted) abortAll();
    else signal?.addEventListener('abort', abortAll, { once: true });
    try {
      if (this.#running.size > 0 || this.#queuedById.size > 0) {
        await new Promise<void>((resolve) => this.#idleWaiters.push(resolve));
      }
    } finally {
      signal?.removeEventListener('abort', abortAll);
      await this.#cancelSubscription?.unsubscribe();
    }
  }

  /** Releases what a start abandoned by {@link #stop} subscribed after that stop. Idempotent. */
  async #releaseSubscriptions(): Promise<void> {
    await this.#announcer?.stop().catch(() => undefined);
    await this.#requestSubscription?.unsubscribe().catch(() => undefined);
    await this.#cancelSubscription?.unsubscribe().catch(() => undefined);
  }

  #onCancel(message: BusMessage): void {
    const id = readId(message.properties);
    if (id === undefined) return;
    const running = this.#running.get(id);
    const queued = running ? undefined : this.#queuedById.get(id);
    if (!running && !queued) return;
    const why = message.properties[WireProperty.Cancel];
    const reason = new ToolbusError(
      'cancelled',
      `call '${id}' was cancelled by the caller${why ? `: ${why}` : ''}`,
    );
    if (running) running.abort(reason);
    else if (queued) this.#dropQueued(queued, reason);
  }

  /** Answers a queued call now, freeing its queue slot, instead of when a running call ends. */
  #dropQueued(call: Call, reason: ToolbusError): void {
    if (this.#queuedById.get(call.id) !== call) return;
    this.#queuedById.delete(call.id);
    call.abort(reason);
    this.#finish(call, undefined, undefined, false);
  }

  #onRequest(message: BusMessage): void {
    const properties = message.properties;
    const id = readId(properties);
    if (id === undefined) {
      this.#stats.unreadable++;
      runHook(this.#options.hooks.onMalformedMessage, {
        service: this.id,
        id: undefined,
        reason: `request on '${message.topic}' has no readable 'id' property; dropped`,
        properties,
      });
      return;
    }
    this.#stats.received++;
    let user: string;
    let config: Record<string, unknown>;
    let args: Record<string, unknown>;
    try {
      const request = decodeRequest(message.text ?? message.body);
      user = request.user;
      config = decodeEnvelopeObject(request.config, 'config');
      args = decodeEnvelopeObject(request.arguments, 'arguments');
    } catch (error) {
      this.#stats.invalid++;
      const reason = error instanceof Error ? error.message : String(error);
      runHook(this.#options.hooks.onMalformedMessage, { service: this.id, id, reason, properties });
      this.#sendError(id, properties, { type: WireErrorType.InvalidRequest, message: reason }, error);
      return;
    }
    if (this.#stopping) {
      this.#sendError(
        id,
        properties,
        { type: WireErrorType.Unavailable, message: `tool service '${this.id}' is stopping` },
        undefined,
      );
      return;
    }
    const deadline = readDeadline(properties);
    if (deadline !== undefined && deadline <= this.#options.now()) {
      this.#stats.expired++;
      this.#sendError(id, properties, deadlineError(id), undefined);
      return;
    }
    if (this.#running.has(id) || this.#queuedById.has(id)) {
      // Its response would be indistinguishable from the first call's; the tables are keyed by id.
      this.#stats.invalid++;
      runHook(this.#options.hooks.onMalformedMessage, {
        service: this.id,
        id,
        reason: `request '${id}' reuses the id of a call in progress; dropped (ids must be unique per call)`,
        properties,
      });
      return;
    }
    const call = new Call(id, user, config, args, properties, deadline, this.#options.now);
    if (this.#running.size < this.#options.concurrency) {
      this.#run(call);
    } else if (this.#queuedById.size < this.#options.maxQueued) {
      this.#queue.push(call);
      this.#queuedById.set(id, call);
    } else {
      this.#stats.rejected++;
      this.#sendError(
        id,
        properties,
        {
          type: WireErrorType.TooManyRequests,
          message:
            `tool service '${this.id}' is at capacity (${this.#options.concurrency} running, ` +
            `${this.#options.maxQueued} queued); retry later`,
        },
        undefined,
      );
    }
  }

  readonly #sendChunk = (call: Call, text: string): Promise<void> =>
    this.#options.bus.publish(
      this.#options.responseQueue,
      encodeResponse({ error: null, response: text, end_of_stream: false }),
      call.echo,
    );

  #run(call: Call): void {
    this.#running.set(call.id, call);
    let result: unknown;
    let thenable: boolean;
    try {
      if (call.abortReason) throw call.abortReason;
      const context = new InvokeContext(call, this.#sendChunk);
      const invoke = this.#options.invoke;
      result = invoke
        ? invoke(call.user, call.config, call.args, context)
        : this.invoke(call.user, call.config, call.args, context);
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
    Promise.resolve(result).then(
      (value) => this.#finish(call, value, undefined, false),
      (error: unknown) => this.#finish(call, undefined, error, true),
    );
  }

  /** The one cleanup of a call (timer, running entry), then its last response, then the next call. */
  #finish(call: Call, value: unknown, error: unknown, failed: boolean): void {
    let wire: WireError | undefined;
    let cause: unknown;
    let text = '';
    if (failed) {
      cause = error;
      wire = toWireError(error);
    } else {
      try {
        text = value === undefined && call.streamed ? '' : stringify(value);
      } catch (stringifyError) {
        cause = stringifyError;
        wire = toWireError(stringifyError);
      }
    }
    call.ended = true;
    if (call.timer !== undefined) clearTimeout(call.timer);
    this.#running.delete(call.id);
    if (call.abortReason) {
      if (call.abortReason.code === 'timeout') {
        this.#stats.expired++;
        wire = deadlineError(call.id);
      } else {
        this.#stats.cancelled++;
        wire = { type: WireErrorType.Cancelled, message: call.abortReason.message };
      }
      cause = call.abortReason;
    }
    if (wire) {
      if (wire.type === WireErrorType.ToolServiceError) this.#stats.failed++;
      this.#sendError(call.id, call.properties, wire, cause, call.echo);
    } else {
      this.#stats.completed++;
      this.#publish(
        call.id,
        encodeResponse({ error: null, response: text, end_of_stream: true }),
        call.echo,
        true,
      );
    }
    this.#next();
  }

  #next(): void {
    // A synchronous call finishes inside #run and calls #next again: the outer loop keeps draining.
    if (this.#draining) return;
    this.#draining = true;
    try {
      while (this.#running.size < this.#options.concurrency && this.#queueHead < this.#queue.length) {
        const call = this.#queue[this.#queueHead];
        this.#queue[this.#queueHead++] = undefined;
        // Skip calls answered while queued (cancelled, or dropped by stop()).
        if (!call || this.#queuedById.get(call.id) !== call) continue;
        this.#queuedById.delete(call.id);
        // It may have waited past its deadline: answer deadline-exceeded instead of doing the work.
        if (call.deadline !== undefined && call.deadline <= this.#options.now()) {
          call.abort(new ToolbusError('timeout', `call '${call.id}' passed its deadline while queued`));
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
    if (this.#running.size === 0 && this.#queuedById.size === 0 && this.#idleWaiters.length > 0) {
      const waiters = this.#idleWaiters;
      this.#idleWaiters = [];
      for (const resolve of waiters) resolve();
    }
  }

  #sendError(
    id: string,
    properties: BusProperties,
    error: WireError,
    cause: unknown,
    responseProperties?: BusProperties,
  ): void {
    runHook(this.#options.hooks.onCallError, { service: this.id, id, error, cause });
    this.#publish(
      id,
      encodeResponse({ error, response: '', end_of_stream: true }),
      responseProperties ?? echoPropertiesOf(id, properties),
    );
  }

  /**
   * Publishes a response. A result the bus refuses as too large (NATS max_payload) is answered with a
   * short error instead, so the caller learns why at once rather than at its timeout.
   */
  #publish(id: string, body: string, properties: BusProperties, result = false): void {
    this.#options.bus.publish(this.#options.responseQueue, body, properties).catch((error: unknown) => {
      runHook(this.#options.hooks.onPublishError, { service: this.id, id, error });
      if (result && isToolbusError(error) && error.code === 'too-large') {
        this.#sendError(
          id,
          properties,
          {
            type: WireErrorType.ToolServiceError,
            message: `tool service '${this.id}': the result could not be sent: ${error.message}`,
          },
          error,
          properties,
        );
      }
    });
  }
}

function resolveOptions(options: DynamicToolServiceOptions): ResolvedOptions {
  const topic = options.topic ?? DEFAULT_TOOL_SERVICE_TOPIC;
  const defaults = defaultServiceQueues(topic);
  const requestQueue = options.requestQueue ?? defaults.requestQueue;
  const responseQueue = options.responseQueue ?? defaults.responseQueue;
  const requestParts = parseTopic(requestQueue).parts;
  checkQueuePair(requestQueue, responseQueue, `tool service '${options.id ?? requestQueue}'`);
  const concurrency = options.concurrency ?? DEFAULT_TOOL_SERVICE_CONCURRENCY;
  const maxQueued = options.maxQueued ?? DEFAULT_TOOL_SERVICE_MAX_QUEUED;
  if (!Number.isInteger(concurrency) || concurrency < 1) {
    throw new ToolbusError(
      'invalid-config',
      `tool service: option 'concurrency' must be an integer >= 1, got ${String(concurrency)}`,
    );
  }
  if (!Number.isInteger(maxQueued) || maxQueued < 0) {
    throw new ToolbusError(
      'invalid-config',
      `tool service: option 'maxQueued' must be an integer >= 0, got ${String(maxQueued)}`,
    );
  }
  const id =
    options.id ??
    options.topic ??
    (options.requestQueue ? requestParts[requestParts.length - 1] : undefined) ??
    topic;
  return {
    bus: options.bus,
    id,
    requestQueue,
    responseQueue,
    cancelTopic: cancelTopicOf(requestQueue),
    group: serviceGroupOf(requestQueue),
    concurrency,
    maxQueued,
    invoke: options.invoke,
    hooks: { ...options.hooks },
    now: options.now ?? Date.now,
  };
}

/** Resolves true once `work` settles, or false as soon as `signal` aborts (if it does first). */
function settledUnlessAborted(work: Promise<unknown>, signal: AbortSignal | undefined): Promise<boolean> {
  const settled = work.then(
    () => true,
    () => true,
  );
  if (!signal) return settled;
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

function stringify(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === undefined) return '';
  const text = JSON.stringify(value) as string | undefined;
  return text ?? '';
}

function deadlineError(id: string): WireError {
  return { type: WireErrorType.DeadlineExceeded, message: `call '${id}' passed its deadline` };
}

/** The response properties: the `id`, plus the trace context when the request carried one. */
function echoPropertiesOf(id: string, properties: BusProperties): BusProperties {
  const traceparent = properties[WireProperty.Traceparent];
  if (traceparent === undefined) return { id };
  const tracestate = properties[WireProperty.Tracestate];
  return tracestate === undefined ? { id, traceparent } : { id, traceparent, tracestate };
}
