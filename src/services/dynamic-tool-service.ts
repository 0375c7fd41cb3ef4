/**
 * @module `DynamicToolService`: the server side of the tool-service protocol, a codec over the RPC layer
 * (`rpc/rpc-server.ts`).
 */
import { defaultServiceQueues, parseTopic } from '../bus/index.js';
import type { BusMessage, BusProperties, DurableCalls, DurableMessage, MessageBus } from '../bus/index.js';
import { ToolbusError, numberOption } from '../errors/index.js';
import { contentParts, notifyHooks, partsToText, type Hook } from '../tools/index.js';
import { startServiceAnnouncer, type DynamicToolServiceAnnounceOptions } from './announcements.js';
import type { ToolServiceDelivery } from './descriptors.js';
import {
  DEFAULT_DURABLE_ACK_WAIT_MS,
  DEFAULT_DURABLE_MAX_ATTEMPTS,
  DurableIntake,
} from './durable-intake.js';
import {
  RpcServer,
  RpcServerCall,
  WireProperty,
  type RpcCallOwner,
  type RpcServerEvent,
  type RpcServerProtocol,
  type RpcServerStats,
} from './rpc/index.js';
import {
  WireErrorType,
  checkQueuePair,
  decodeEnvelopeObject,
  decodeRequest,
  encodeResponse,
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
  /** Which delivery of the call this is: 1, or more when a durable call came back after a dead replica. */
  readonly attempt: number;
  /** True when `attempt` > 1: an earlier run of this call may have done part of its work. */
  readonly redelivered: boolean;
  /** The call's idempotency key (the caller's, else the call id) on a durable service; else undefined. */
  readonly idempotencyKey: string | undefined;
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
  /**
   * `durable`: take calls from the bus's work queue for this request queue (`bus.durable`), ack them once
   * their outcome is stored, and keep every state in the call store; a replica that dies mid-call has
   * it redelivered to another after `ackWaitMs`. Callers must use a durable `ToolServiceClient` (a
   * tool-service descriptor with `"delivery": "durable"`). @default 'request-response'
   */
  delivery?: ToolServiceDelivery;
  /** Durable delivery only. @default none of these set */
  durable?: DurableServiceOptions;
}

/** The `durable` option of {@link DynamicToolService}. */
export interface DurableServiceOptions {
  /** How long a call may go without a sign of life before another replica gets it. @default DEFAULT_DURABLE_ACK_WAIT_MS (30 000) */
  ackWaitMs?: number;
  /** Deliveries of one call at most. @default DEFAULT_DURABLE_MAX_ATTEMPTS (10) */
  maxAttempts?: number;
  /** Every call is idempotent: a repeated idempotency key gets the first outcome. @default false (the tool's `idempotent` says) */
  idempotent?: boolean;
  /** Something went wrong in the background (a store write); the call went on. @default ignored */
  onProblem?: (message: string, error: unknown) => void;
}

/** Counters of a {@link DynamicToolService}, as returned by `stats()`. */
export type DynamicToolServiceStats = RpcServerStats;

interface ResolvedOptions {
  bus: MessageBus;
  id: string;
  requestQueue: string;
  responseQueue: string;
  group: string;
  concurrency: number;
  maxQueued: number;
  invoke: ToolServiceInvoke | undefined;
  hooks: DynamicToolServiceHooks;
  now: () => number;
  durable: DurableCalls | undefined;
}

/**
 * One call with its decoded request (the envelope's `user`, its `config` and `arguments` parsed). It is
 * also what `invoke` gets as `ctx`: the RPC call's public side is exactly the context, and one object per
 * call in flight costs less than a call plus a request plus a view of them.
 */
class ToolServiceCall extends RpcServerCall implements ToolServiceInvokeContext {
  readonly user: string;
  readonly config: Record<string, unknown>;
  readonly args: Record<string, unknown>;
  readonly attempt: number;
  readonly #durable: boolean;

  constructor(
    owner: RpcCallOwner,
    id: string,
    properties: BusProperties,
    user: string,
    config: Record<string, unknown>,
    args: Record<string, unknown>,
    durableAttempt: number | undefined,
  ) {
    super(owner, id, properties);
    this.user = user;
    this.config = config;
    this.args = args;
    this.attempt = durableAttempt ?? 1;
    this.#durable = durableAttempt !== undefined;
  }

  get redelivered(): boolean {
    return this.attempt > 1;
  }

  get idempotencyKey(): string | undefined {
    if (!this.#durable) return undefined;
    return this.properties[WireProperty.IdempotencyKey] || this.id;
  }
}

/** The tool-service codec over the RPC layer: the seed's envelopes, `invoke`, and the service's hooks. */
class ToolServiceProtocol implements RpcServerProtocol<ToolServiceCall> {
  readonly name: string;
  /** Spans: `{request queue}/invoke`. */
  readonly method = 'invoke';
  stopCode: 'cancelled' | 'unavailable' = 'cancelled';
  readonly #service: string;
  /** The hooks given at construction, then those added with {@link DynamicToolService.addHooks}. */
  readonly hookSets: DynamicToolServiceHooks[];
  readonly #invoke: ToolServiceInvoke;
  /**
   * The last `config` text whose values are all primitives, and a private parse of it: a tool sends the
   * same config on every call, and a shallow copy costs far less than parsing it again. Every call still
   * gets an object of its own, the same as a parse would give.
   */
  #configText: string | undefined = undefined;
  #config: Record<string, unknown> = {};

  constructor(service: string, hooks: DynamicToolServiceHooks, invoke: ToolServiceInvoke) {
    this.name = `tool service '${service}'`;
    this.#service = service;
    this.hookSets = [hooks];
    this.#invoke = invoke;
  }

  label(id: string): string {
    return `call '${id}'`;
  }

  decode(message: BusMessage, owner: RpcCallOwner, id: string): ToolServiceCall {
    const request = decodeRequest(message.text ?? message.body);
    return new ToolServiceCall(
      owner,
      id,
      message.properties,
      request.user,
      this.#decodeConfig(request.config),
      decodeEnvelopeObject(request.arguments, 'arguments'),
      // Only a durable delivery has an attempt (and an idempotency key).
      (message as Partial<DurableMessage>).attempt,
    );
  }

  #decodeConfig(text: string): Record<string, unknown> {
    if (text === this.#configText) return { ...this.#config };
    const config = decodeEnvelopeObject(text, 'config');
    if (isFlat(config)) {
      this.#configText = text;
      // A copy: `invoke` may change the object it is given.
      this.#config = { ...config };
    }
    return config;
  }

  serve(call: ToolServiceCall): unknown {
    return this.#invoke(call.user, call.config, call.args, call);
  }

  encodeResult(value: unknown): string {
    // Content parts go in `parts`, with their text in `response` for peers that read only that.
    const parts =
      typeof value === 'object' && value !== null ? contentParts(this.#service, value) : undefined;
    if (parts !== undefined) {
      return encodeResponse({ error: null, response: partsToText(parts), end_of_stream: true, parts });
    }
    return encodeResponse({ error: null, response: stringify(value), end_of_stream: true });
  }

  encodeChunk(chunk: unknown): string {
    return encodeResponse({ error: null, response: stringify(chunk), end_of_stream: false });
  }

  encodeError(id: string, error: unknown, own: boolean): string {
    let wire: WireError;
    if (own) {
      // The server's own refusals and aborts: their codes are wire types, but a passed deadline.
      const reason = error as ToolbusError;
      const type = reason.code === 'timeout' ? WireErrorType.DeadlineExceeded : reason.code;
      wire = { type, message: reason.message };
    } else {
      wire = toWireError(error);
    }
    const event = { service: this.#service, id, error: wire, cause: error };
    for (const hooks of this.hookSets) notifyHooks(hooks.onCallError, event);
    return encodeResponse({ error: wire, response: '', end_of_stream: true });
  }

  report(event: RpcServerEvent): void {
    for (const hooks of this.hookSets) this.#report(event, hooks);
  }

  #report(event: RpcServerEvent, hooks: DynamicToolServiceHooks): void {
    const service = this.#service;
    switch (event.type) {
      case 'unreadable':
        notifyHooks(hooks.onMalformedMessage, {
          service,
          id: undefined,
          reason: `request on '${event.message.topic}' has no readable 'id' property; dropped`,
          properties: event.message.properties,
        });
        break;
      case 'invalid':
        notifyHooks(hooks.onMalformedMessage, {
          service,
          id: event.id,
          reason: event.error.message,
          properties: event.properties,
        });
        break;
      case 'duplicate':
        notifyHooks(hooks.onMalformedMessage, {
          service,
          id: event.id,
          reason: `request '${event.id}' reuses the id of a call in progress; dropped (ids must be unique per call)`,
          properties: event.properties,
        });
        break;
      case 'publish-error':
        notifyHooks(hooks.onPublishError, { service, id: event.id, error: event.error });
        break;
    }
  }
}

/**
 * Serves a tool service on a bus (TrustGraph's `DynamicToolService`, working on any bus).
 *
 * Replicas constructed with the same request queue share it through a bus group derived from it, so
 * each request is handled by exactly one of them. Cancellations arrive on a broadcast control topic
 * (see `cancelTopicOf` in wire.ts), so they reach the replica running the call. Correlation, deadlines,
 * the bounded queue and the lifecycle are the RPC layer's (`rpc/rpc-server.ts`), shared with the agent
 * service.
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
  readonly #server: RpcServer<ToolServiceCall>;
  readonly #protocol: ToolServiceProtocol;
  readonly #intake: DurableIntake | undefined;

  /**
   * @throws ToolbusError `invalid-config` for a bad queue name, one topic for both queues, `concurrency` or
   * `maxQueued`.
   */
  constructor(options: DynamicToolServiceOptions) {
    const resolved = resolveOptions(options);
    this.#options = resolved;
    const announce = options.announce;
    const invoke: ToolServiceInvoke =
      resolved.invoke ?? ((user, config, args, context) => this.invoke(user, config, args, context));
    const intake = resolved.durable
      ? this.#durableIntake(resolved, resolved.durable, options.durable)
      : undefined;
    this.#intake = intake;
    this.#protocol = new ToolServiceProtocol(resolved.id, resolved.hooks, invoke);
    // A stop that cannot wait gives a durable call back to the queue (`unavailable`), not a failure.
    if (intake) this.#protocol.stopCode = 'unavailable';
    this.#server = new RpcServer<ToolServiceCall>(
      {
        bus: resolved.bus,
        requestQueue: resolved.requestQueue,
        responseQueue: resolved.responseQueue,
        group: resolved.group,
        concurrency: resolved.concurrency,
        maxQueued: resolved.maxQueued,
        now: resolved.now,
        ...(announce
          ? {
              attach: async () => {
                const announcer = await startServiceAnnouncer(resolved.bus, this, announce);
                return () => announcer.stop();
              },
            }
          : {}),
        ...(intake
          ? {
              intake: (onRequest: (message: BusMessage) => void) => intake.subscribe(onRequest),
              respond: (id: string, body: string, properties: BusProperties, last: boolean) =>
                intake.respond(id, body, properties, last),
            }
          : {}),
      },
      this.#protocol,
    );
    intake?.bind(this.#server);
  }

  #durableIntake(
    resolved: ResolvedOptions,
    durable: DurableCalls,
    options: DurableServiceOptions = {},
  ): DurableIntake {
    return new DurableIntake({
      bus: resolved.bus,
      durable,
      requestQueue: resolved.requestQueue,
      responseQueue: resolved.responseQueue,
      group: resolved.group,
      concurrency: resolved.concurrency,
      ackWaitMs: numberOption(
        'DynamicToolService',
        'durable.ackWaitMs',
        options.ackWaitMs,
        DEFAULT_DURABLE_ACK_WAIT_MS,
      ),
      maxAttempts: numberOption(
        'DynamicToolService',
        'durable.maxAttempts',
        options.maxAttempts,
        DEFAULT_DURABLE_MAX_ATTEMPTS,
        { integer: true },
      ),
      idempotent: options.idempotent === true,
      onProblem: options.onProblem ?? (() => undefined),
    });
  }

  /** How calls reach this service. */
  get delivery(): ToolServiceDelivery {
    return this.#intake ? 'durable' : 'request-response';
  }

  /**
   * Adds hooks after construction, e.g. for a host that runs a module's service and logs its errors
   * (`toolbus service`). Returns a function that removes them again.
   */
  addHooks(hooks: DynamicToolServiceHooks): () => void {
    const sets = this.#protocol.hookSets;
    sets.push(hooks);
    return () => {
      const at = sets.indexOf(hooks);
      if (at > 0) sets.splice(at, 1);
    };
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
    return this.#server.stats();
  }

  /**
   * Subscribes to the request queue (in the service's group) and the control topic, then announces the
   * service when `announce` is set. Idempotent; after a failed start, calling it again tries again.
   * Rejects with `closed` when the bus is closed, or when called after {@link stop}.
   */
  start(): Promise<void> {
    return this.#server.start();
  }

  /**
   * Graceful stop: says goodbye (when announcing), takes no new calls (late requests are answered
   * `unavailable`), lets the running and queued calls finish, then unsubscribes. If `options.signal` (of
   * this call, or of a later one while the stop is under way) aborts first, the calls still running are
   * aborted (they see `ctx.signal` abort, and their callers get `cancelled`) and stop resolves once they
   * have settled. A `start()` still waiting on the bus is waited for until that signal aborts: then the
   * stop goes on without it, that start rejects with `closed`, and what it subscribes later is released.
   * Idempotent.
   */
  stop(options: { signal?: AbortSignal } = {}): Promise<void> {
    this.#intake?.stopping();
    return this.#server.stop(options);
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
}

/** True when no value is an object or array, so a shallow copy shares nothing that can be changed. */
function isFlat(value: Record<string, unknown>): boolean {
  for (const key in value) {
    const item = value[key];
    if (item !== null && typeof item === 'object') return false;
  }
  return true;
}

function resolveOptions(options: DynamicToolServiceOptions): ResolvedOptions {
  const topic = options.topic ?? DEFAULT_TOOL_SERVICE_TOPIC;
  const defaults = defaultServiceQueues(topic);
  const requestQueue = options.requestQueue ?? defaults.requestQueue;
  const responseQueue = options.responseQueue ?? defaults.responseQueue;
  const requestParts = parseTopic(requestQueue).parts;
  checkQueuePair(requestQueue, responseQueue, `tool service '${options.id ?? requestQueue}'`);
  const concurrency = numberOption(
    'DynamicToolService',
    'concurrency',
    options.concurrency,
    DEFAULT_TOOL_SERVICE_CONCURRENCY,
    { integer: true },
  );
  const maxQueued = numberOption(
    'DynamicToolService',
    'maxQueued',
    options.maxQueued,
    DEFAULT_TOOL_SERVICE_MAX_QUEUED,
    {
      integer: true,
      zero: true,
    },
  );
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
    group: serviceGroupOf(requestQueue),
    concurrency,
    maxQueued,
    invoke: options.invoke,
    hooks: { ...options.hooks },
    now: options.now ?? Date.now,
    durable: durableOption(options, id),
  };
}

/** The bus's durable calls, for a service that asked for them. */
function durableOption(options: DynamicToolServiceOptions, id: string): DurableCalls | undefined {
  const delivery: unknown = options.delivery ?? 'request-response';
  if (delivery === 'request-response') return undefined;
  if (delivery !== 'durable') {
    throw new ToolbusError(
      'invalid-config',
      `tool service '${id}': option 'delivery' must be 'request-response' or 'durable', got ${JSON.stringify(delivery)}`,
    );
  }
  if (options.bus.durable) return options.bus.durable;
  throw new ToolbusError(
    'invalid-config',
    `tool service '${id}': delivery 'durable' needs a bus with durable calls (MemoryBus or NatsBus); ` +
      `this bus has none ('durable' is undefined)`,
  );
}

function stringify(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === undefined) return '';
  const text = JSON.stringify(value) as string | undefined;
  return text ?? '';
}
