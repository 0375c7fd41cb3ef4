/**
 * @module `ToolServiceClient`: the caller side of the tool-service protocol, a codec over the RPC layer
 * (`rpc/rpc-client.ts`).
 */
import { randomUUID } from 'node:crypto';
import { FINAL_CALL_STATUSES, canonicalTopic } from '../bus/index.js';
import type { BusMessage, BusProperties, CallRecord, DurableCalls, MessageBus } from '../bus/index.js';
import { ToolbusError, numberOption, type ToolbusErrorCode } from '../errors/index.js';
import type { Attributes } from '@opentelemetry/api';
import { ToolError, TraceAttribute, notifyHooks, type ContentPart, type Hook } from '../tools/index.js';
import {
  RpcClient,
  RpcClientCall,
  StreamCall,
  WireProperty,
  type DroppedResponseReason,
  type RpcClientProtocol,
} from './rpc/index.js';
import {
  WireErrorType,
  checkQueuePair,
  decodeResponse,
  encodeRequest,
  encodeResponse,
  fromWireError,
  type ToolServiceResponse,
} from './wire.js';
import { cancelStoredCall } from './call-state.js';

/** The key of {@link ToolServiceClient}'s call for `ToolServiceTool`, which wants parts as the value. */
export const callForValue = Symbol('toolbus.callForValue');

/** How long a call waits for its last response unless `timeoutMs` says otherwise (60 s). */
export const DEFAULT_TOOL_SERVICE_TIMEOUT_MS = 60_000;
/** Chunks a `stream()` buffers for a slow consumer before it fails with `too-large`. */
export const DEFAULT_MAX_BUFFERED_CHUNKS = 1024;

export type { DroppedResponseReason };

/** Context of the {@link ToolServiceClientHooks.onDroppedResponse} hook. */
export interface DroppedResponseContext {
  /** The canonical request queue of the client. */
  service: string;
  id: string | undefined;
  /**
   * `late`: the call had timed out or been cancelled; `duplicate`: the call had already ended;
   * `unknown`: an id this client never issued (or forgot); `malformed`: no readable id.
   */
  reason: DroppedResponseReason;
}

/** Observability hooks of a {@link ToolServiceClient}. Each takes one function or an array. */
export interface ToolServiceClientHooks {
  /** A response matched no pending call of this client and was dropped. @default none */
  onDroppedResponse?: Hook<DroppedResponseContext>;
}

/** Options of {@link ToolServiceClient}. */
export interface ToolServiceClientOptions {
  /** The service's request queue, in any topic form. */
  requestQueue: string;
  /**
   * The service's response queue. Many clients may share it: each filters the responses by its own ids.
   */
  responseQueue: string;
  /** The timeout of calls that set none. @default DEFAULT_TOOL_SERVICE_TIMEOUT_MS (60 000) */
  timeoutMs?: number;
  /** Chunks buffered per `stream()` before it fails with `too-large`. @default DEFAULT_MAX_BUFFERED_CHUNKS (1024) */
  maxBufferedChunks?: number;
  /** @default none */
  hooks?: ToolServiceClientHooks;
  /** The clock used for the `deadline` property, in epoch milliseconds. @default Date.now */
  now?: () => number;
  /**
   * `durable`: calls are enqueued on the bus's work queue for the service (`bus.durable`), so they wait
   * for a replica, survive a dead one, and leave their outcome in the call store ({@link
   * ToolServiceClient.result}). The service must be durable too. @default 'request-response'
   */
  delivery?: 'request-response' | 'durable';
}

/** Options of one {@link ToolServiceClient.call} or {@link ToolServiceClient.stream}. */
export interface ToolServiceCallOptions {
  /** Cancels the call; the service is told to stop. @default none */
  signal?: AbortSignal;
  /** Gives up (code `timeout`) and tells the service to stop after this long. @default the client's `timeoutMs` */
  timeoutMs?: number;
  /**
   * The absolute deadline (epoch ms) set by the outermost caller, e.g. `ToolCallContext.deadline`. The
   * call's budget is whichever ends first, this or `timeoutMs` from now: it sets both the local timer and
   * the `deadline` property the service honours. @default none (the timeout alone)
   */
  deadline?: number;
  /** Extra message properties, e.g. `{ traceparent }`. `id` and `deadline` are set by the client. @default none */
  properties?: BusProperties;
  /** Names the tool in errors (`ToolError.toolName`), and in a durable call's state. @default undefined */
  toolName?: string;
  /** Durable calls: the call id, when the caller picks it (unique; e.g. to find it again). @default generated */
  id?: string;
  /**
   * Durable calls: the idempotency key. A service whose tool is `idempotent` answers a repeated key with
   * the first call's outcome. @default the call id
   */
  idempotencyKey?: string;
  /** Durable calls: the tool declares that repeating a key is safe. @default false */
  idempotent?: boolean;
  /**
   * `call()` only: hears each chunk of a streamed reply as it arrives (the result is still all of them
   * joined), e.g. to report progress. @default none
   */
  onChunk?: (chunk: string) => void;
  /**
   * Hears the result's content parts (images, audio, resources), when the service sent them (the
   * `parts` field), just before the call resolves with their text. @default none
   */
  onParts?: (parts: ContentPart[]) => void;
}

/** Options of {@link ToolServiceClient.start}. */
export interface ToolServiceStartOptions extends Omit<ToolServiceCallOptions, 'signal' | 'deadline'> {
  /** Gives up after this long (the service answers `deadline-exceeded`). @default none: the task runs until done */
  timeoutMs?: number;
}

/** Counters of a {@link ToolServiceClient}. */
export interface ToolServiceClientStats {
  /** Calls waiting for their last response now. */
  pending: number;
  /** Requests published. */
  sent: number;
  /** Calls that ended with a result. */
  completed: number;
  /** Calls that ended with a remote error (`tool-error`). */
  failed: number;
  timedOut: number;
  cancelled: number;
  unavailable: number;
  /** Responses dropped, by reason. */
  dropped: Record<DroppedResponseReason, number>;
  /** Responses for other clients sharing the response queue (ignored, not an error). */
  foreign: number;
}

/** The options of calls that pass none: shared, since a call never writes to its options. */
const NO_OPTIONS: ToolServiceCallOptions = Object.freeze({});

/** A call of a tool service, in either mode. */
type ToolCall = CollectCall | ToolStreamCall;

/**
 * Settles a promise with a rejection through its resolve function: resolving with a thenable makes the
 * promise call `then` with a fresh pair of settlers (one microtask later). A call in flight so keeps one
 * settler instead of two, 64 bytes fewer per call; only failures pay the extra microtask.
 */
class Rejection {
  readonly #error: unknown;
  constructor(error: unknown) {
    this.#error = error;
  }
  then(_resolve: unknown, reject: (error: unknown) => void): void {
    reject(this.#error);
  }
}

/** A `call()`: collects the chunks and settles its promise. */
class CollectCall extends RpcClientCall<ToolServiceResponse> {
  readonly toolName: string | undefined;
  /** Characters received so far (a durable call's stored result is read past them). */
  received = 0;
  /** Durable calls: when the store is next asked for this call's outcome (epoch ms), and how often. */
  checkAt = 0;
  checkEvery = 0;
  #resolve: (result: string | ContentPart[] | Rejection) => void = ignore;
  /** The response text so far: one chunk, or several once a reply streams. */
  #text: string | string[] | undefined = undefined;

  readonly #onChunk: ((chunk: string) => void) | undefined;
  readonly #onParts: ((parts: ContentPart[]) => void) | undefined;
  /** Resolve with the parts, when the service sent them, rather than their text. */
  readonly #partsAsResult: boolean;

  constructor(
    toolName: string | undefined,
    onChunk?: (chunk: string) => void,
    onParts?: (parts: ContentPart[]) => void,
    partsAsResult = false,
  ) {
    super();
    this.toolName = toolName;
    this.#onChunk = onChunk;
    this.#onParts = onParts;
    this.#partsAsResult = partsAsResult;
  }

  /** The executor of the call's promise, bound to the call: no closure and context per call. */
  takeResolver(resolve: (result: string) => void): void {
    // The promise resolves to a string (or parts) only: a `Rejection` is a thenable that rejects it.
    this.#resolve = resolve as (result: string | ContentPart[] | Rejection) => void;
  }

  receive(response: ToolServiceResponse, last: boolean): void {
    const text = response.response;
    this.received += text.length;
    if (!last && this.#onChunk !== undefined && text !== '') {
      try {
        this.#onChunk(text);
      } catch {
        // A listener must not change the call's outcome.
      }
    }
    const sofar = this.#text;
    if (sofar === undefined) this.#text = text;
    else if (typeof sofar === 'string') this.#text = [sofar, text];
    else sofar.push(text);
    if (last) {
      if (response.parts !== undefined) {
        if (this.#partsAsResult) return this.#resolve(response.parts);
        try {
          this.#onParts?.(response.parts);
        } catch {
          // As for onChunk.
        }
      }
      const all = this.#text!;
      this.#resolve(typeof all === 'string' ? all : all.join(''));
    }
  }

  fail(error: unknown): void {
    this.#resolve(new Rejection(error));
  }
}

function ignore(): void {}

/** A `stream()`: yields each non-empty chunk. */
class ToolStreamCall extends StreamCall<ToolServiceResponse, string> {
  readonly toolName: string | undefined;
  received = 0;
  checkAt = 0;
  checkEvery = 0;

  constructor(
    rpc: RpcClient<ToolServiceResponse, ToolCall>,
    service: string,
    max: number,
    toolName?: string,
  ) {
    super(rpc, { name: `tool service '${service}'`, maxBuffered: max, unit: 'chunks' });
    this.toolName = toolName;
  }

  receive(response: ToolServiceResponse, last: boolean): void {
    this.received += response.response.length;
    this.push(response.response === '' ? undefined : response.response, last);
  }

  protected tooLarge(message: string): ToolbusError {
    return new ToolError('too-large', message, { toolName: this.toolName });
  }
}

/** The tool-service codec for the RPC client: the seed's response envelope and its errors. */
class ToolClientProtocol implements RpcClientProtocol<ToolServiceResponse, ToolCall> {
  readonly name: string;
  /** Spans: `{request queue}/invoke`. */
  readonly method = 'invoke';
  readonly #service: string;

  constructor(service: string) {
    this.#service = service;
    this.name = `tool service '${service}'`;
  }

  decode(message: BusMessage, call: ToolCall): ToolServiceResponse {
    const service = this.#service;
    let response: ToolServiceResponse;
    try {
      response = decodeResponse(message.text ?? message.body);
    } catch (error) {
      throw new ToolError(
        'tool-error',
        `tool service '${service}' sent a malformed response to call '${call.id}': ` +
          (error instanceof Error ? error.message : String(error)),
        { cause: error, toolName: call.toolName },
      );
    }
    if (response.error === null) return response;
    const remote = fromWireError(response.error, service, call.toolName);
    if (response.error.type !== WireErrorType.DeadlineExceeded) throw remote;
    // The service gave up at the deadline this client set from its budget (its clock may run a little
    // ahead): to the caller that is a timeout.
    throw new ToolError(
      'timeout',
      `tool service '${service}': no result within the timeout of call '${call.id}' ` +
        `(the service answered 'deadline-exceeded': ${response.error.message})`,
      { cause: remote, toolName: call.toolName },
    );
  }

  isLast(response: ToolServiceResponse): boolean {
    // Error responses never get here: decode turned them into the call's failure.
    return response.end_of_stream;
  }

  spanAttributes(call: ToolCall): Attributes | undefined {
    return call.toolName === undefined ? undefined : { [TraceAttribute.ToolName]: call.toolName };
  }

  error(code: ToolbusErrorCode, message: string, call: ToolCall, cause?: unknown): ToolbusError {
    return new ToolError(
      code,
      message,
      cause === undefined ? { toolName: call.toolName } : { cause, toolName: call.toolName },
    );
  }
}

/**
 * Calls a tool service over a bus. Correlates responses by `id`, enforces one budget per call (the
 * caller's deadline or the timeout, whichever ends first, also sent as the `deadline` property),
 * propagates cancellation to whichever replica runs the call, and fails fast with `unavailable` when no
 * service is subscribed to the request queue.
 *
 * @example
 * ```ts
 * const client = new ToolServiceClient(bus, {
 *   requestQueue: 'non-persistent://tg/request/joke',
 *   responseQueue: 'non-persistent://tg/response/joke',
 * });
 * const joke = await client.call('alice', { style: 'pun' }, { topic: 'cats' }, { timeoutMs: 5_000 });
 * for await (const chunk of client.stream('alice', { style: 'pun' }, { topic: 'cats' })) process.stdout.write(chunk);
 * await client.close();
 * ```
 */
export class ToolServiceClient {
  readonly #requestQueue: string;
  readonly #responseQueue: string;
  readonly #service: string;
  readonly #timeoutMs: number;
  readonly #maxBufferedChunks: number;
  readonly #rpc: RpcClient<ToolServiceResponse, ToolCall>;
  readonly #bus: MessageBus;
  /** The bus's durable calls, when this client's delivery is durable. */
  readonly #durable: DurableCalls | undefined;
  /** Asks the store for the outcome of durable calls whose response may have been lost (a broker restart). */
  #checkTimer: ReturnType<typeof setInterval> | undefined;
  #checking = false;

  /**
   * @throws ToolbusError `invalid-config` for a bad queue name, one topic for both queues, or a bad
   * `timeoutMs` or `maxBufferedChunks`.
   */
  constructor(bus: MessageBus, options: ToolServiceClientOptions) {
    this.#requestQueue = options.requestQueue;
    this.#responseQueue = options.responseQueue;
    const service = canonicalTopic(options.requestQueue);
    this.#service = service;
    checkQueuePair(options.requestQueue, options.responseQueue, `tool service client of '${service}'`);
    this.#timeoutMs = checkTimeout(options.timeoutMs, DEFAULT_TOOL_SERVICE_TIMEOUT_MS);
    // NaN would buffer without bound, 0 or less fail every streamed reply.
    this.#maxBufferedChunks = numberOption(
      'ToolServiceClient',
      'maxBufferedChunks',
      options.maxBufferedChunks,
      DEFAULT_MAX_BUFFERED_CHUNKS,
      { integer: true },
    );
    const hooks = { ...options.hooks };
    this.#bus = bus;
    const delivery: unknown = options.delivery ?? 'request-response';
    if (delivery !== 'request-response' && delivery !== 'durable') {
      throw new ToolbusError(
        'invalid-config',
        `tool service client of '${service}': option 'delivery' must be 'request-response' or 'durable', got ${JSON.stringify(delivery)}`,
      );
    }
    if (delivery === 'durable' && bus.durable === undefined) {
      throw new ToolbusError(
        'invalid-config',
        `tool service client of '${service}': delivery 'durable' needs a bus with durable calls (MemoryBus or NatsBus)`,
      );
    }
    const durable = delivery === 'durable' ? bus.durable : undefined;
    this.#durable = durable;
    const requestQueue = options.requestQueue;
    this.#rpc = new RpcClient<ToolServiceResponse, ToolCall>(
      bus,
      {
        requestQueue,
        responseQueue: options.responseQueue,
        ...(durable
          ? {
              send: (body: string, properties: BusProperties) =>
                durable.queue.enqueue(requestQueue, body, properties, { dedupeId: properties['id']! }),
            }
          : {}),
        ...(options.now ? { now: options.now } : {}),
        ...(hooks.onDroppedResponse
          ? { onDropped: (id, reason) => notifyHooks(hooks.onDroppedResponse, { service, id, reason }) }
          : {}),
      },
      new ToolClientProtocol(service),
    );
  }

  /** How calls reach the service. */
  get delivery(): 'request-response' | 'durable' {
    return this.#durable ? 'durable' : 'request-response';
  }

  /** The request queue as given. */
  get requestQueue(): string {
    return this.#requestQueue;
  }

  /** The response queue as given. */
  get responseQueue(): string {
    return this.#responseQueue;
  }

  /** Calls waiting for their last response. */
  get pendingCount(): number {
    return this.#rpc.pendingCount;
  }

  /** A snapshot of the counters. */
  stats(): ToolServiceClientStats {
    const { dropped, ...counters } = this.#rpc.counters;
    return { ...counters, pending: this.#rpc.pendingCount, dropped: { ...dropped } };
  }

  /**
   * Calls the service and resolves with its response text (the chunks of a streamed reply joined).
   * `config` and `args` are objects (sent as JSON text) or JSON text already.
   *
   * Rejects with a `ToolError`: `timeout` (the budget ran out, here or as the service reported it),
   * `cancelled` (or the signal's reason when it is a `ToolbusError`), `unavailable` (nobody subscribed,
   * or the bus failed), `tool-error` (the service replied with an error: a `RemoteToolError` with
   * `remoteType`), `too-large` (the bus refused the request's size, e.g. NATS max_payload),
   * `invalid-request` (the bus refused the request's `properties`, e.g. a key NATS headers cannot carry),
   * `closed` after {@link close}; and with `invalid-config` for a bad `timeoutMs` or `deadline`.
   */
  call(
    user: string,
    config: Record<string, unknown> | string,
    args: Record<string, unknown> | string,
    options: ToolServiceCallOptions = NO_OPTIONS,
  ): Promise<string> {
    return this.#collect(
      new CollectCall(options.toolName, options.onChunk, options.onParts),
      user,
      config,
      args,
      options,
    );
  }

  /**
   * {@link call} for `ToolServiceTool`: resolves with the result's content parts when the service sent
   * them (`parts`), else with the text. Package-internal (not exported from the services index).
   */
  [callForValue](
    user: string,
    config: Record<string, unknown> | string,
    args: Record<string, unknown> | string,
    options: ToolServiceCallOptions,
  ): Promise<string | ContentPart[]> {
    return this.#collect(
      new CollectCall(options.toolName, options.onChunk, undefined, true),
      user,
      config,
      args,
      options,
    );
  }

  /** Starts a collecting call; it resolves with text, or with parts for a call made to (see `callForValue`). */
  #collect(
    call: CollectCall,
    user: string,
    config: Record<string, unknown> | string,
    args: Record<string, unknown> | string,
    options: ToolServiceCallOptions,
  ): Promise<string> {
    const promise = new Promise<string>(call.takeResolver.bind(call));
    try {
      this.#start(call, user, config, args, options);
    } catch (error) {
      // As a throwing executor would: the promise rejects (a bad `signal`, say), call() never throws.
      call.fail(error);
    }
    return promise;
  }

  /**
   * Calls the service and yields each non-empty response chunk as it arrives. The call starts when the
   * iteration does; leaving the `for await` early cancels the remote call. One consumer only. A consumer
   * that falls `maxBufferedChunks` behind fails with `too-large` (and the call is cancelled).
   * Fails with the same errors as {@link call}.
   */
  stream(
    user: string,
    config: Record<string, unknown> | string,
    args: Record<string, unknown> | string,
    options: ToolServiceCallOptions = NO_OPTIONS,
  ): AsyncIterable<string> {
    let iterated = false;
    return {
      [Symbol.asyncIterator]: (): AsyncIterator<string> => {
        if (iterated) {
          throw new ToolbusError(
            'usage',
            `tool service '${this.#service}': a stream() result can be iterated once; call stream() again`,
          );
        }
        iterated = true;
        const call = new ToolStreamCall(this.#rpc, this.#service, this.#maxBufferedChunks, options.toolName);
        this.#start(call, user, config, args, options);
        return call;
      },
    };
  }

  /**
   * Starts a durable call and resolves with its id as soon as it is queued, without waiting for it: its
   * progress and outcome are read later with {@link result} or {@link watch} (from any process on the
   * same bus), and {@link cancel} stops it.
   * @throws ToolbusError `unsupported` unless the client is durable; `usage` when `options.id` was used.
   */
  async start(
    user: string,
    config: Record<string, unknown> | string,
    args: Record<string, unknown> | string,
    options: ToolServiceStartOptions = {},
  ): Promise<string> {
    const durable = this.#requireDurable('start');
    const id = options.id ?? randomUUID();
    const body = encodeRequest({
      user,
      config: typeof config === 'string' ? config : JSON.stringify(config),
      arguments: typeof args === 'string' ? args : JSON.stringify(args),
    });
    const now = Date.now();
    const record: CallRecord = {
      id,
      service: this.#service,
      status: 'queued',
      attempt: 0,
      idempotencyKey: options.idempotencyKey ?? id,
      chunks: [],
      chunkCount: 0,
      createdAt: now,
      updatedAt: now,
    };
    if (options.toolName !== undefined) record.tool = options.toolName;
    if (user !== '') record.user = user;
    if (durable.queue.holder !== undefined) record.holder = durable.queue.holder;
    // Stored first, so the call can be read (`queued`) the moment its id is known.
    let revision = await durable.store.put(record, 0);
    if (revision === undefined) {
      // A task's id, stored `queued` by whoever started it (`CallTasks`): this call takes it over.
      const stored = await durable.store.get(id);
      if (stored?.record.status === 'queued' && stored.record.attempt === 0) {
        record.createdAt = stored.record.createdAt;
        revision = await durable.store.put(record, stored.revision);
      }
      if (revision === undefined) {
        throw new ToolError('usage', `tool service '${this.#service}': call id '${id}' is already taken`, {
          toolName: options.toolName,
        });
      }
    }
    const properties: Record<string, string> = {
      ...options.properties,
      ...this.#durableProperties(options),
      [WireProperty.Id]: id,
      [WireProperty.Task]: '1',
    };
    if (options.timeoutMs !== undefined) {
      const timeoutMs = checkTimeout(options.timeoutMs, this.#timeoutMs);
      properties[WireProperty.Deadline] = String(Math.floor(Date.now() + timeoutMs));
    }
    try {
      await durable.queue.enqueue(this.#requestQueue, body, properties, { dedupeId: id });
    } catch (error) {
      const failed: CallRecord = {
        ...record,
        status: 'failed',
        error: { type: 'unavailable', message: `the call could not be queued: ${errorText(error)}` },
        updatedAt: Date.now(),
      };
      await durable.store.put(failed, revision).catch(() => undefined);
      throw new ToolError('unavailable', `tool service '${this.#service}': ${failed.error!.message}`, {
        cause: error,
        toolName: options.toolName,
      });
    }
    return id;
  }

  /**
   * The state of durable call `callId` as its store keeps it: `queued`, `running` (with the chunks so
   * far), or final with its `response` or `error`; undefined when the store has no such call (never
   * made, or older than the store's TTL). Any process on the same bus can read it.
   * @throws ToolbusError `unsupported` on a bus without durable calls.
   */
  async result(callId: string): Promise<CallRecord | undefined> {
    return (await this.#store('result').get(callId))?.record;
  }

  /**
   * Yields the state of durable call `callId` now and after every change, until it is final or `signal`
   * aborts.
   */
  async *watch(callId: string, options: { signal?: AbortSignal } = {}): AsyncIterable<CallRecord> {
    const store = this.#store('watch');
    for await (const stored of store.watch(callId, options.signal ?? new AbortController().signal)) {
      yield stored.record;
    }
  }

  /**
   * Cancels durable call `callId`: a queued call ends `cancelled` at once; a running one is told to stop
   * (its replica answers `cancelled`). Resolves with the state after the request, or undefined when the
   * store has no such call. A final call is left as it is.
   */
  async cancel(callId: string, reason = 'cancelled by the caller'): Promise<CallRecord | undefined> {
    return cancelStoredCall(this.#bus, this.#store('cancel'), callId, reason);
  }

  /**
   * Stops listening; pending calls reject with `cancelled` and the services are told to stop them.
   * Idempotent.
   */
  close(): Promise<void> {
    clearInterval(this.#checkTimer);
    this.#checkTimer = undefined;
    return this.#rpc.close('cancelled');
  }

  #requireDurable(what: string): DurableCalls {
    if (this.#durable) return this.#durable;
    throw new ToolbusError(
      'unsupported',
      `tool service '${this.#service}': ${what}() needs durable delivery (a tool-service descriptor with "delivery": "durable")`,
    );
  }

  #store(what: string): DurableCalls['store'] {
    const store = this.#durable?.store ?? this.#bus.durable?.store;
    if (store) return store;
    throw new ToolbusError(
      'unsupported',
      `tool service '${this.#service}': ${what}() needs a bus with durable calls`,
    );
  }

  /** The request properties only a durable call carries (none for request/response: the wire is unchanged). */
  #durableProperties(options: ToolServiceCallOptions): Record<string, string> {
    const properties: Record<string, string> = {};
    if (options.idempotencyKey !== undefined)
      properties[WireProperty.IdempotencyKey] = options.idempotencyKey;
    if (options.idempotent === true) properties[WireProperty.Idempotent] = 'true';
    if (options.toolName !== undefined) properties[WireProperty.Tool] = options.toolName;
    return properties;
  }

  /**
   * Durable calls in flight longer than a second are looked up in the store now and then: a response
   * published while this client was cut off from the broker is lost, but the outcome is kept there.
   */
  #watchStored(call: ToolCall): void {
    call.checkEvery = STORED_CHECK_FIRST_MS;
    call.checkAt = Date.now() + STORED_CHECK_FIRST_MS;
    this.#checkTimer ??= setInterval(() => void this.#checkStored(), STORED_CHECK_TICK_MS);
    this.#checkTimer.unref?.();
  }

  async #checkStored(): Promise<void> {
    if (this.#checking) return;
    this.#checking = true;
    try {
      await this.#checkStoredOnce();
    } finally {
      this.#checking = false;
    }
  }

  async #checkStoredOnce(): Promise<void> {
    const store = this.#durable?.store;
    if (store === undefined || this.#rpc.pendingCount === 0) {
      clearInterval(this.#checkTimer);
      this.#checkTimer = undefined;
      return;
    }
    const now = Date.now();
    const due = [...this.#rpc.pendingCalls()].filter((call) => call.checkAt <= now);
    for (const call of due) {
      // Less often as a call ages: a long call is looked up every 10 s at most.
      call.checkEvery = Math.min(STORED_CHECK_MAX_MS, call.checkEvery * 2);
      call.checkAt = now + call.checkEvery;
      const stored = await store.get(call.id).catch(() => undefined);
      const record = stored?.record;
      if (record === undefined || !FINAL_CALL_STATUSES.has(record.status)) continue;
      const body =
        record.status === 'completed'
          ? encodeResponse({
              error: null,
              response: (record.response ?? '').slice(call.received),
              end_of_stream: true,
              ...(record.parts !== undefined ? { parts: record.parts } : {}),
            })
          : encodeResponse({
              error: record.error ?? { type: WireErrorType.ToolServiceError, message: 'the call failed' },
              response: '',
              end_of_stream: true,
            });
      this.#rpc.deliver({
        topic: this.#responseQueue,
        body: new TextEncoder().encode(body),
        text: body,
        properties: { [WireProperty.Id]: call.id },
      });
    }
  }

  /** Alias of {@link close}. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /** Encodes the request and hands the call to the RPC layer; a failure here fails the call at once. */
  #start(
    call: ToolCall,
    user: string,
    config: Record<string, unknown> | string,
    args: Record<string, unknown> | string,
    options: ToolServiceCallOptions,
  ): void {
    let body: string;
    try {
      if (options.timeoutMs !== undefined) checkTimeout(options.timeoutMs, this.#timeoutMs);
      if (options.deadline !== undefined) checkDeadline(options.deadline);
      body = encodeRequest({
        user,
        config: typeof config === 'string' ? config : JSON.stringify(config),
        arguments: typeof args === 'string' ? args : JSON.stringify(args),
      });
    } catch (error) {
      call.fail(
        error instanceof ToolbusError
          ? error
          : new ToolError('invalid-arguments', `tool service '${this.#service}': cannot encode the request`, {
              cause: error,
              toolName: options.toolName,
            }),
      );
      return;
    }
    const durable = this.#durable !== undefined;
    this.#rpc.start(call, body, {
      signal: options.signal,
      timeoutMs: options.timeoutMs ?? this.#timeoutMs,
      deadline: options.deadline,
      properties: durable
        ? { ...options.properties, ...this.#durableProperties(options) }
        : options.properties,
      id: durable ? options.id : undefined,
    });
    if (durable && this.#rpc.pendingCount > 0) this.#watchStored(call);
  }
}

/** When a durable call in flight is first looked up in the store, and how often the lookups are due. */
const STORED_CHECK_FIRST_MS = 1_000;
const STORED_CHECK_TICK_MS = 500;
const STORED_CHECK_MAX_MS = 10_000;

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** A positive, finite number of milliseconds: a remote call always has a timer. */
function checkTimeout(value: number | undefined, fallback: number): number {
  return numberOption('ToolServiceClient', 'timeoutMs', value, fallback);
}

function checkDeadline(value: number): void {
  if (typeof value !== 'number' || Number.isNaN(value)) {
    throw new ToolbusError(
      'invalid-config',
      `tool service client: option 'deadline' must be epoch milliseconds (a number), got ${String(value)}`,
    );
  }
}
