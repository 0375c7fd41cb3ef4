/**
 * @module `ToolServiceClient`: the caller side of the tool-service protocol, a codec over the RPC layer
 * (`rpc/rpc-client.ts`).
 */
import { canonicalTopic } from '../bus/index.js';
import type { BusMessage, BusProperties, MessageBus } from '../bus/index.js';
import { ToolbusError, numberOption, type ToolbusErrorCode } from '../errors/index.js';
import type { Attributes } from '@opentelemetry/api';
import { ToolError, TraceAttribute, notifyHooks, type Hook } from '../tools/index.js';
import {
  RpcClient,
  RpcClientCall,
  StreamCall,
  type DroppedResponseReason,
  type RpcClientProtocol,
} from './rpc/index.js';
import {
  WireErrorType,
  checkQueuePair,
  decodeResponse,
  encodeRequest,
  fromWireError,
  type ToolServiceResponse,
} from './wire.js';

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
  /** Names the tool in errors (`ToolError.toolName`). @default undefined */
  toolName?: string;
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
  #resolve: (result: string | Rejection) => void = ignore;
  /** The response text so far: one chunk, or several once a reply streams. */
  #text: string | string[] | undefined = undefined;

  constructor(toolName: string | undefined) {
    super();
    this.toolName = toolName;
  }

  /** The executor of the call's promise, bound to the call: no closure and context per call. */
  takeResolver(resolve: (result: string) => void): void {
    // The promise resolves to a string only: a `Rejection` is a thenable that rejects it.
    this.#resolve = resolve as (result: string | Rejection) => void;
  }

  receive(response: ToolServiceResponse, last: boolean): void {
    const text = response.response;
    const sofar = this.#text;
    if (sofar === undefined) this.#text = text;
    else if (typeof sofar === 'string') this.#text = [sofar, text];
    else sofar.push(text);
    if (last) {
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
    this.#rpc = new RpcClient<ToolServiceResponse, ToolCall>(
      bus,
      {
        requestQueue: options.requestQueue,
        responseQueue: options.responseQueue,
        ...(options.now ? { now: options.now } : {}),
        ...(hooks.onDroppedResponse
          ? { onDropped: (id, reason) => notifyHooks(hooks.onDroppedResponse, { service, id, reason }) }
          : {}),
      },
      new ToolClientProtocol(service),
    );
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
    const call = new CollectCall(options.toolName);
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
   * Stops listening; pending calls reject with `cancelled` and the services are told to stop them.
   * Idempotent.
   */
  close(): Promise<void> {
    return this.#rpc.close('cancelled');
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
    this.#rpc.start(call, body, {
      signal: options.signal,
      timeoutMs: options.timeoutMs ?? this.#timeoutMs,
      deadline: options.deadline,
      properties: options.properties,
    });
  }
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
