/**
 * @module `ToolServiceClient`: the caller side of the tool-service protocol.
 */
import { randomUUID } from 'node:crypto';
import { canonicalTopic } from '../bus/index.js';
import type { BusMessage, BusProperties, BusSubscription, MessageBus } from '../bus/index.js';
import { ToolbusError, abortError, isToolbusError } from '../errors/index.js';
import { CallDeadlines, ToolError, asToolError, onAbort, type Schedulable } from '../tools/index.js';

import { runHook, type Hook } from './hooks.js';
import {
  WireErrorType,
  WireProperty,
  cancelTopicOf,
  checkQueuePair,
  decodeResponse,
  encodeRequest,
  fromWireError,
  readId,
  type ToolServiceResponse,
} from './wire.js';

/** How long a call waits for its last response unless `timeoutMs` says otherwise (60 s). */
export const DEFAULT_TOOL_SERVICE_TIMEOUT_MS = 60_000;
/** Chunks a `stream()` buffers for a slow consumer before it fails with `too-large`. */
export const DEFAULT_MAX_BUFFERED_CHUNKS = 1024;
/** Settled call ids remembered to tell late and duplicate responses apart from unknown ones. */
const RECENT_IDS = 4096;

/** Why a response was dropped. */
export type DroppedResponseReason = 'late' | 'duplicate' | 'unknown' | 'malformed';

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

const SETTLED_DONE = 1;
const SETTLED_ABANDONED = 2;

/** Where a call's responses go: `call()` collects them, `stream()` hands them to its iterator. */
interface Sink {
  chunk(text: string, last: boolean): void;
  fail(error: ToolbusError): void;
}

/** One call waiting for responses. */
class Pending implements Schedulable {
  /** Its timeout, kept by {@link CallDeadlines}. */
  dueAt = 0;
  dueQueue: unknown = undefined;
  /** Stops listening to the caller's signal. */
  unwatch: (() => void) | undefined;
  /** `call()` mode: the promise's settlers and the chunks so far. */
  resolve: ((text: string) => void) | undefined;
  reject: ((error: ToolbusError) => void) | undefined;
  first: string | undefined;
  rest: string[] | undefined;
  /** `stream()` mode. */
  sink: Sink | undefined;

  constructor(
    readonly id: string,
    readonly seq: number,
    readonly toolName: string | undefined,
  ) {}

  /** A chunk (`end_of_stream: false`) or the last response's text. */
  chunk(text: string, last: boolean): void {
    if (this.sink) {
      this.sink.chunk(text, last);
      return;
    }
    if (this.first === undefined) this.first = text;
    else (this.rest ??= []).push(text);
    if (last) this.resolve!(this.rest ? this.first + this.rest.join('') : this.first);
  }

  fail(error: ToolbusError): void {
    if (this.sink) this.sink.fail(error);
    else this.reject!(error);
  }
}

/**
 * Calls a tool service over a bus. Correlates responses by `id`, enforces the timeout, propagates
 * cancellation to whichever replica runs the call, and fails fast with `unavailable` when no service is
 * subscribed to the request queue.
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
  readonly #bus: MessageBus;
  readonly #requestQueue: string;
  readonly #responseQueue: string;
  readonly #cancelTopic: string;
  readonly #service: string;
  readonly #timeoutMs: number;
  readonly #maxBufferedChunks: number;
  readonly #hooks: ToolServiceClientHooks;
  readonly #now: () => number;
  readonly #prefix: string;
  #seq = 0;
  readonly #pending = new Map<string, Pending>();
  readonly #deadlines = new CallDeadlines<Pending>((pending, timeoutMs) =>
    this.#onTimeout(pending, timeoutMs),
  );
  /** Ring of recently settled calls, by sequence number: tells late and duplicate responses apart. */
  readonly #recentSeq = new Float64Array(RECENT_IDS).fill(-1);
  readonly #recentHow = new Uint8Array(RECENT_IDS);
  #subscription: BusSubscription | undefined;
  #ready: Promise<void> | undefined;
  #closed = false;
  readonly #stats = {
    sent: 0,
    completed: 0,
    failed: 0,
    timedOut: 0,
    cancelled: 0,
    unavailable: 0,
    foreign: 0,
  };
  readonly #dropped: Record<DroppedResponseReason, number> = {
    late: 0,
    duplicate: 0,
    unknown: 0,
    malformed: 0,
  };

  /**
   * @throws ToolbusError `invalid-config` for a bad queue name, one topic for both queues, or a bad
   * `timeoutMs` or `maxBufferedChunks`.
   */
  constructor(bus: MessageBus, options: ToolServiceClientOptions) {
    this.#bus = bus;
    this.#requestQueue = options.requestQueue;
    this.#responseQueue = options.responseQueue;
    this.#service = canonicalTopic(options.requestQueue);
    checkQueuePair(options.requestQueue, options.responseQueue, `tool service client of '${this.#service}'`);
    this.#cancelTopic = cancelTopicOf(options.requestQueue);
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TOOL_SERVICE_TIMEOUT_MS;
    checkTimeout(this.#timeoutMs, 'timeoutMs');
    this.#maxBufferedChunks = options.maxBufferedChunks ?? DEFAULT_MAX_BUFFERED_CHUNKS;
    // NaN would buffer without bound, 0 or less fail every streamed reply.
    if (!(Number.isInteger(this.#maxBufferedChunks) && this.#maxBufferedChunks >= 1)) {
      throw new ToolbusError(
        'invalid-config',
        `tool service client: option 'maxBufferedChunks' must be an integer >= 1, got ${String(this.#maxBufferedChunks)}`,
      );
    }
    this.#hooks = { ...options.hooks };
    this.#now = options.now ?? Date.now;
    // Ids are unique across clients sharing a response queue: a random prefix plus a counter.
    this.#prefix = `${randomUUID().replaceAll('-', '').slice(0, 16)}-`;
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
    return this.#pending.size;
  }

  /** A snapshot of the counters. */
  stats(): ToolServiceClientStats {
    return { ...this.#stats, pending: this.#pending.size, dropped: { ...this.#dropped } };
  }

  /**
   * Calls the service and resolves with its response text (the chunks of a streamed reply joined).
   * `config` and `args` are objects (sent as JSON text) or JSON text already.
   *
   * Rejects with a `ToolError`: `timeout`, `cancelled` (or the signal's reason when it is a
   * `ToolbusError`), `unavailable` (nobody subscribed, or the bus failed), `tool-error` (the service
   * replied with an error: a `RemoteToolError` with `remoteType`), `too-large` (the bus refused the
   * request's size, e.g. NATS max_payload), `invalid-request` (the bus refused the request's
   * `properties`, e.g. a key NATS headers cannot carry), `closed` after {@link close}.
   */
  call(
    user: string,
    config: Record<string, unknown> | string,
    args: Record<string, unknown> | string,
    options: ToolServiceCallOptions = NO_OPTIONS,
  ): Promise<string> {
    return new Promise<string>((resolve, reject) => {
      const pending = this.#start(user, config, args, options, undefined, reject);
      if (pending) {
        pending.resolve = resolve;
        pending.reject = reject;
      }
    });
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
        return this.#iterate(user, config, args, options);
      },
    };
  }

  /**
   * Stops listening; pending calls reject with `cancelled` and the services are told to stop them.
   * Idempotent.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const pending of [...this.#pending.values()]) {
      this.#abandon(pending, new ToolError('cancelled', `tool service '${this.#service}': client closed`));
    }
    const subscription = this.#subscription;
    this.#subscription = undefined;
    await subscription?.unsubscribe();
  }

  /** Alias of {@link close}. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  #iterate(
    user: string,
    config: Record<string, unknown> | string,
    args: Record<string, unknown> | string,
    options: ToolServiceCallOptions,
  ): AsyncIterator<string> {
    const buffer: string[] = [];
    let head = 0;
    let done = false;
    let failure: ToolbusError | undefined;
    let waiter: { resolve: (r: IteratorResult<string>) => void; reject: (e: unknown) => void } | undefined;
    const wake = (): void => {
      if (!waiter) return;
      const w = waiter;
      if (head < buffer.length) {
        waiter = undefined;
        w.resolve({ value: buffer[head++]!, done: false });
      } else if (failure) {
        waiter = undefined;
        w.reject(failure);
      } else if (done) {
        waiter = undefined;
        w.resolve({ value: undefined, done: true });
      }
    };
    const pending = this.#start(
      user,
      config,
      args,
      options,
      {
        chunk: (text, last) => {
          if (text !== '') {
            // The last response has already settled the call (nothing left to cancel): it is always
            // kept, one over the limit, so the stream ends instead of waiting forever.
            if (!last && buffer.length - head >= this.#maxBufferedChunks && pending !== undefined) {
              this.#abandon(
                pending,
                new ToolError(
                  'too-large',
                  `tool service '${this.#service}': stream consumer fell more than ` +
                    `${this.#maxBufferedChunks} chunks behind; the call was cancelled`,
                  { toolName: options.toolName },
                ),
              );
              return;
            }
            buffer.push(text);
          }
          if (last) done = true;
          wake();
        },
        fail: (error) => {
          failure = error;
          wake();
        },
      },
      undefined,
    );
    return {
      next: () =>
        new Promise<IteratorResult<string>>((resolve, reject) => {
          if (waiter) {
            reject(new ToolbusError('usage', `tool service '${this.#service}': next() called concurrently`));
            return;
          }
          waiter = { resolve, reject };
          wake();
        }),
      return: () => {
        if (!done && !failure && pending !== undefined) {
          done = true;
          this.#abandon(
            pending,
            new ToolError('cancelled', `tool service '${this.#service}': the stream consumer stopped early`),
            false,
          );
        }
        buffer.length = 0;
        head = 0;
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }

  /**
   * Registers a pending call and publishes the request. Returns the pending call (undefined when the call
   * failed before it was sent). Every path ends in {@link #settle}, the one cleanup.
   */
  #start(
    user: string,
    config: Record<string, unknown> | string,
    args: Record<string, unknown> | string,
    options: ToolServiceCallOptions,
    sink: Sink | undefined,
    reject: ((error: ToolbusError) => void) | undefined,
  ): Pending | undefined {
    const toolName = options.toolName;
    if (this.#closed) {
      failEarly(
        sink,
        reject,
        new ToolError('closed', `tool service '${this.#service}': client is closed`, { toolName }),
      );
      return undefined;
    }
    const signal = options.signal;
    if (signal?.aborted) {
      this.#stats.cancelled++;
      failEarly(sink, reject, cancelledError(signal, this.#service, toolName));
      return undefined;
    }
    const timeoutMs = options.timeoutMs ?? this.#timeoutMs;
    let body: string;
    try {
      if (options.timeoutMs !== undefined) checkTimeout(timeoutMs, 'timeoutMs');
      body = encodeRequest({
        user,
        config: typeof config === 'string' ? config : JSON.stringify(config),
        arguments: typeof args === 'string' ? args : JSON.stringify(args),
      });
    } catch (error) {
      failEarly(
        sink,
        reject,
        error instanceof ToolbusError
          ? error
          : new ToolError('invalid-arguments', `tool service '${this.#service}': cannot encode the request`, {
              cause: error,
              toolName,
            }),
      );
      return undefined;
    }
    const seq = ++this.#seq;
    const id = this.#prefix + seq.toString(36);
    const pending = new Pending(id, seq, toolName);
    pending.sink = sink;
    this.#pending.set(id, pending);
    this.#deadlines.add(timeoutMs, pending);
    if (signal) {
      // One listener on the caller's signal however many calls share it (see tools/abort-fanout.ts).
      pending.unwatch = onAbort(signal, () => {
        this.#stats.cancelled++;
        this.#abandon(pending, cancelledError(signal, this.#service, toolName));
      });
    }
    const extra = options.properties;
    const deadline = String(this.#now() + timeoutMs);
    const properties: BusProperties = extra ? { ...extra, id, deadline } : { id, deadline };
    if (this.#subscription) this.#send(pending, body, properties);
    else {
      this.#subscribe().then(
        () => this.#send(pending, body, properties),
        (error: unknown) => this.#unavailable(pending, error),
      );
    }
    return pending;
  }

  #send(pending: Pending, body: string, properties: BusProperties): void {
    if (this.#pending.get(pending.id) !== pending) return;
    this.#stats.sent++;
    const onUnavailable = this.#unavailableHandler(pending.id);
    this.#bus.publish(this.#requestQueue, body, properties, { onUnavailable }).catch(onUnavailable);
  }

  /**
   * The per-call `onUnavailable` callback, returned from a function so that it is anonymous: esbuild's
   * `keepNames` (tsx, bundles) would otherwise wrap every named closure in a costly `__name` call.
   * It holds the call's id, not the call: the bus keeps it until its next no-responders flush (tens of
   * milliseconds), and a held `Pending` (with its promise, settlers and response text) would outlive
   * young-generation collections and be copied and promoted by each of them.
   */
  #unavailableHandler(id: string): (error: unknown) => void {
    return (error) => {
      const pending = this.#pending.get(id);
      if (pending !== undefined) this.#unavailable(pending, error);
    };
  }

  #onTimeout(pending: Pending, timeoutMs: number): void {
    this.#stats.timedOut++;
    this.#abandon(
      pending,
      new ToolError(
        'timeout',
        `tool service '${this.#service}': no response within ${timeoutMs} ms (call '${pending.id}')`,
        { toolName: pending.toolName },
      ),
    );
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
          this.#ready = undefined;
          throw error;
        },
      );
    return this.#ready;
  }

  #unavailable(pending: Pending, error: unknown): void {
    if (this.#pending.get(pending.id) !== pending) return;
    if (isToolbusError(error) && (error.code === 'too-large' || error.code === 'invalid-request')) {
      // The bus refused the request itself (NATS max_payload, or a `properties` key NATS headers cannot
      // carry): the caller's input is at fault, not the service, and a retry elsewhere would fail the
      // same way. Say what was wrong instead of blaming the service with `unavailable`.
      const what = error.code === 'too-large' ? 'is too large to send' : 'cannot be sent';
      this.#settle(
        pending,
        SETTLED_ABANDONED,
        new ToolError(error.code, `tool service '${this.#service}': the request ${what}: ${error.message}`, {
          cause: error,
          toolName: pending.toolName,
        }),
      );
      return;
    }
    this.#stats.unavailable++;
    this.#settle(
      pending,
      SETTLED_ABANDONED,
      new ToolError(
        'unavailable',
        isToolbusError(error) && error.code === 'unavailable'
          ? `tool service '${this.#service}' is unavailable: nothing is subscribed to request queue '${this.#requestQueue}'`
          : `tool service '${this.#service}' is unavailable: sending to '${this.#requestQueue}' failed: ` +
              (error instanceof Error ? error.message : String(error)),
        { cause: error, toolName: pending.toolName },
      ),
    );
  }

  /** Ends a call without its last response, and tells the service to stop it. */
  #abandon(pending: Pending, error: ToolbusError, notify = true): void {
    if (this.#pending.get(pending.id) !== pending) return;
    this.#settle(pending, SETTLED_ABANDONED, notify ? error : undefined);
    this.#bus
      .publish(this.#cancelTopic, '', {
        [WireProperty.Id]: pending.id,
        [WireProperty.Cancel]: cancelReasonOf(error.message),
      })
      .catch(() => undefined);
  }

  /** The one cleanup of a call: pending entry, deadline, abort listener; then the outcome. */
  #settle(pending: Pending, how: number, error?: ToolbusError): void {
    this.#pending.delete(pending.id);
    this.#deadlines.cancel(pending);
    pending.unwatch?.();
    const slot = pending.seq % RECENT_IDS;
    this.#recentSeq[slot] = pending.seq;
    this.#recentHow[slot] = how;
    if (error) pending.fail(error);
  }

  /** Why a response for an id of ours that is not pending is dropped. */
  #dropReason(id: string): DroppedResponseReason {
    const seq = parseInt(id.slice(this.#prefix.length), 36);
    if (!(seq > 0 && seq <= this.#seq) || id !== this.#prefix + seq.toString(36)) return 'unknown';
    const slot = seq % RECENT_IDS;
    // Settled long ago (evicted from the ring): a late response.
    if (this.#recentSeq[slot] !== seq) return 'late';
    return this.#recentHow[slot] === SETTLED_DONE ? 'duplicate' : 'late';
  }

  #onResponse(message: BusMessage): void {
    const id = readId(message.properties);
    if (id === undefined) {
      this.#drop(undefined, 'malformed');
      return;
    }
    const pending = this.#pending.get(id);
    if (!pending) {
      if (!id.startsWith(this.#prefix)) {
        this.#stats.foreign++;
        return;
      }
      this.#drop(id, this.#dropReason(id));
      return;
    }
    let response: ToolServiceResponse;
    try {
      response = decodeResponse(message.text ?? message.body);
    } catch (error) {
      this.#stats.failed++;
      this.#settle(
        pending,
        SETTLED_DONE,
        new ToolError(
          'tool-error',
          `tool service '${this.#service}' sent a malformed response to call '${id}': ` +
            (error instanceof Error ? error.message : String(error)),
          { cause: error, toolName: pending.toolName },
        ),
      );
      return;
    }
    if (response.error !== null) {
      const remote = fromWireError(response.error, this.#service, pending.toolName);
      if (response.error.type === WireErrorType.DeadlineExceeded) {
        // The service gave up at the deadline this client set from its timeout (its clock may run a
        // little ahead): to the caller that is a timeout.
        this.#stats.timedOut++;
        this.#settle(
          pending,
          SETTLED_DONE,
          new ToolError(
            'timeout',
            `tool service '${this.#service}': no result within the timeout of call '${id}' ` +
              `(the service answered 'deadline-exceeded': ${response.error.message})`,
            { cause: remote, toolName: pending.toolName },
          ),
        );
        return;
      }
      this.#stats.failed++;
      this.#settle(pending, SETTLED_DONE, remote);
      return;
    }
    if (response.end_of_stream) {
      this.#stats.completed++;
      this.#settle(pending, SETTLED_DONE);
    }
    pending.chunk(response.response, response.end_of_stream);
  }

  #drop(id: string | undefined, reason: DroppedResponseReason): void {
    this.#dropped[reason]++;
    runHook(this.#hooks.onDroppedResponse, { service: this.#service, id, reason });
  }
}

/** What an aborted call rejects with: `timeout` for `AbortSignal.timeout`, else `cancelled` (see `abortError`). */
function cancelledError(signal: AbortSignal, service: string, toolName: string | undefined): ToolbusError {
  const error = abortError(signal, `the call of tool service '${service}'`);
  return toolName === undefined ? error : asToolError(error, toolName);
}

/**
 * The `cancel` property for a reason: one line (NATS headers cannot carry a line break, and a refused
 * cancellation would be lost silently, leaving the service running until the deadline), at most 500
 * characters.
 */
function cancelReasonOf(message: string): string {
  const line = message.replace(/\s*[\r\n]+\s*/g, ' ');
  return line.length > 500 ? `${line.slice(0, 500)}…` : line;
}

function checkTimeout(value: number, name: string): void {
  if (!(typeof value === 'number' && value > 0 && Number.isFinite(value))) {
    throw new ToolbusError(
      'invalid-config',
      `tool service client: option '${name}' must be a positive number of milliseconds, got ${String(value)}`,
    );
  }
}

function failEarly(
  sink: Sink | undefined,
  reject: ((error: ToolbusError) => void) | undefined,
  error: ToolbusError,
): void {
  if (sink) sink.fail(error);
  else reject?.(error);
}
