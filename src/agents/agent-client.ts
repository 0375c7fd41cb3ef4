/**
 * @module `AgentClient`: asks an `AgentService` on the bus and follows its stream of responses.
 */
import { randomUUID } from 'node:crypto';
import type { BusMessage, BusSubscription, MessageBus } from '../bus/index.js';
import { canonicalTopic } from '../bus/index.js';
import { WireProperty, cancelTopicOf } from '../services/index.js';
import { MAX_TIMER_MS } from '../tools/index.js';
import { abortError, isToolbusError, ToolbusError } from '../errors/index.js';
import type { AgentHistoryItem } from './agent.js';
import { DEFAULT_AGENT_REQUEST_QUEUE, DEFAULT_AGENT_RESPONSE_QUEUE } from './agent-service.js';
import { decodeAgentResponse, encodeAgentRequest, fromAgentWireError } from './wire.js';
import type { AgentMessageType, AgentResponse } from './wire.js';

/** How long a question may run before the client gives up and cancels it. */
export const DEFAULT_AGENT_TIMEOUT_MS = 600_000;
/** Events a `stream()` holds for a slow consumer before it fails with `too-large`. */
export const DEFAULT_MAX_BUFFERED_EVENTS = 10_000;

/** One response of the agent service, as the client reports it. */
export interface AgentStreamEvent {
  type: AgentMessageType;
  content: string;
  endOfMessage: boolean;
  endOfDialog: boolean;
}

/** Options of {@link AgentClient}. */
export interface AgentClientOptions {
  /** @default DEFAULT_AGENT_REQUEST_QUEUE ('non-persistent://tg/request/agent') */
  requestQueue?: string;
  /** @default DEFAULT_AGENT_RESPONSE_QUEUE ('non-persistent://tg/response/agent') */
  responseQueue?: string;
  /** Positive ms; `Infinity` (or more than ~24.8 days) sets no local timer. @default DEFAULT_AGENT_TIMEOUT_MS (600 000) */
  timeoutMs?: number;
  /** @default DEFAULT_MAX_BUFFERED_EVENTS (10 000) */
  maxBufferedEvents?: number;
}

/** Options of {@link AgentClient.ask} and {@link AgentClient.stream}. */
export interface AgentAskOptions {
  /** The end user, forwarded by the service to every tool call. @default '' */
  user?: string;
  /** Earlier turns. @default none */
  history?: readonly AgentHistoryItem[];
  /** Cancels the question, in the service too (its tool calls included). @default none */
  signal?: AbortSignal;
  /**
   * Ask the service to stream thoughts and answers in pieces (a `ReActAgent` does; a `ToolUseAgent`
   * sends whole events). @default false
   */
  streaming?: boolean;
  /** @default the client's timeoutMs */
  timeoutMs?: number;
  /** `ask` only: receives thought, observation and answer events (errors reject instead). @default none */
  onEvent?: (event: AgentStreamEvent) => void;
}

interface Pending {
  onResponse(response: AgentResponse): void;
}

/**
 * Calls an {@link AgentService} over the bus. Requests carry a unique `id`; responses are matched by it
 * (every client instance subscribes to the response queue and keeps its own). A cancelled, timed-out or
 * abandoned question is cancelled in the service too.
 *
 * @example
 * ```ts
 * const client = new AgentClient(bus);
 * const answer = await client.ask('Tell me a joke about cats', { user: 'alice', onEvent: console.log });
 * for await (const event of client.stream('And one about dogs?', { user: 'alice', streaming: true })) {
 *   process.stdout.write(event.content);
 * }
 * ```
 */
export class AgentClient {
  readonly #bus: MessageBus;
  readonly #requestQueue: string;
  readonly #responseQueue: string;
  readonly #cancelTopic: string;
  readonly #timeoutMs: number;
  readonly #maxBuffered: number;
  readonly #pending = new Map<string, Pending>();
  #subscription: Promise<BusSubscription> | undefined;
  #closed = false;

  constructor(bus: MessageBus, options: AgentClientOptions = {}) {
    this.#bus = bus;
    this.#requestQueue = options.requestQueue ?? DEFAULT_AGENT_REQUEST_QUEUE;
    this.#responseQueue = options.responseQueue ?? DEFAULT_AGENT_RESPONSE_QUEUE;
    canonicalTopic(this.#responseQueue);
    this.#cancelTopic = cancelTopicOf(this.#requestQueue);
    this.#timeoutMs = checkTimeout(options.timeoutMs ?? DEFAULT_AGENT_TIMEOUT_MS, 'AgentClient');
    this.#maxBuffered = options.maxBufferedEvents ?? DEFAULT_MAX_BUFFERED_EVENTS;
  }

  /** Questions in flight. */
  get pendingCount(): number {
    return this.#pending.size;
  }

  /**
   * Asks a question and resolves with the final answer (streamed pieces joined). `onEvent` sees each
   * thought, observation and answer piece as it arrives.
   *
   * Rejects with `cancelled` when the signal aborts, `timeout` after `timeoutMs`, `unavailable` when no
   * service listens, `service-error` when the agent failed (the service's message included), and
   * `invalid-request`, `too-many-requests` as the service reports them; `closed` after {@link close}.
   */
  async ask(question: string, options: AgentAskOptions = {}): Promise<string> {
    const parts: string[] = [];
    for await (const event of this.#iterate(question, options)) {
      if (event.type === 'answer') parts.push(event.content);
      try {
        options.onEvent?.(event);
      } catch {
        // the listener's problem
      }
    }
    return parts.join('');
  }

  /**
   * Asks a question and yields every response as it arrives, the error included (the iteration then
   * ends; it does not throw for an agent error). Leaving the loop early cancels the question in the
   * service. Throws for local failures: `cancelled`, `timeout`, `unavailable`, `too-large` (more than
   * `maxBufferedEvents` unread), `closed`. One consumer per call.
   */
  stream(question: string, options: AgentAskOptions = {}): AsyncIterable<AgentStreamEvent> {
    const iterable = this.#iterate(question, options, true);
    let used = false;
    return {
      [Symbol.asyncIterator]: () => {
        if (used)
          throw new ToolbusError(
            'invalid-request',
            'AgentClient.stream(): this stream has already been iterated',
          );
        used = true;
        return iterable[Symbol.asyncIterator]();
      },
    };
  }

  /** Stops listening; questions in flight reject with `closed` and are cancelled in the service. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const subscription = this.#subscription;
    this.#subscription = undefined;
    for (const pending of this.#pending.values()) {
      pending.onResponse({
        messageType: 'error',
        content: 'agent client closed',
        endOfMessage: true,
        endOfDialog: true,
        error: { type: 'closed', message: 'agent client closed' },
      });
    }
    if (subscription) await (await subscription.catch(() => undefined))?.unsubscribe();
  }

  /** Alias of {@link close}. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  async *#iterate(
    question: string,
    options: AgentAskOptions,
    yieldErrors = false,
  ): AsyncGenerator<AgentStreamEvent, void, undefined> {
    const trace = new Error();
    if (this.#closed) throw new ToolbusError('closed', 'agent client is closed');
    const timeoutMs =
      options.timeoutMs === undefined ? this.#timeoutMs : checkTimeout(options.timeoutMs, 'AgentClient.ask');
    const signal = AbortSignal.any([
      ...(options.signal ? [options.signal] : []),
      // A longer timer would fire after 1 ms (Node clamps it); beyond ~24.8 days means no local timer.
      ...(timeoutMs <= MAX_TIMER_MS ? [AbortSignal.timeout(timeoutMs)] : []),
    ]);
    if (signal.aborted) throw abortError(signal, 'agent question');
    if (!this.#subscription) {
      const subscribing = this.#bus.subscribe(this.#responseQueue, (m) => this.#onResponse(m));
      this.#subscription = subscribing;
      // A failed subscribe is retried by the next question instead of being cached.
      subscribing.catch(() => {
        if (this.#subscription === subscribing) this.#subscription = undefined;
      });
    }
    await this.#subscription;
    // close() ran while this question was subscribing: it saw no pending entry to fail, and no response
    // can arrive any more, so without this the question would never settle.
    if (this.#closed) throw new ToolbusError('closed', 'agent client closed while the question was starting');

    const id = randomUUID();
    const buffer: AgentResponse[] = [];
    let wake: (() => void) | undefined;
    let failure: ToolbusError | undefined;
    let finished = false;
    const notify = (): void => {
      wake?.();
      wake = undefined;
    };
    const fail = (error: ToolbusError): void => {
      if (failure || finished) return;
      failure = error;
      notify();
    };
    this.#pending.set(id, {
      onResponse: (response) => {
        if (response.error?.type === 'closed') {
          fail(new ToolbusError('closed', 'agent client closed while the question was in flight'));
          return;
        }
        if (buffer.length >= this.#maxBuffered) {
          fail(
            new ToolbusError(
              'too-large',
              `agent question '${id}': more than ${this.#maxBuffered} unread events`,
            ),
          );
          return;
        }
        buffer.push(response);
        notify();
      },
    });
    const onAbort = (): void => fail(abortError(signal, `agent question '${id}'`));
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      const deadline = Date.now() + timeoutMs;
      const properties: Record<string, string> = { [WireProperty.Id]: id };
      if (Number.isFinite(deadline)) properties[WireProperty.Deadline] = String(deadline);
      await this.#bus.publish(
        this.#requestQueue,
        encodeAgentRequest({
          question,
          user: options.user ?? '',
          ...(options.history ? { history: [...options.history] } : {}),
          streaming: options.streaming ?? false,
        }),
        properties,
        {
          onUnavailable: (error) =>
            fail(
              isToolbusError(error) && error.code === 'unavailable'
                ? error
                : new ToolbusError('unavailable', `no agent service listens on '${this.#requestQueue}'`),
            ),
        },
      );
      for (;;) {
        const next = buffer.shift();
        if (next) {
          if (next.messageType === 'error' && next.endOfDialog) {
            finished = true;
            if (yieldErrors) {
              yield toEvent(next);
              return;
            }
            throw withStack(
              fromAgentWireError(
                next.error ?? { type: 'agent-error', message: next.content },
                this.#requestQueue,
              ),
              trace,
            );
          }
          yield toEvent(next);
          if (next.endOfDialog) {
            finished = true;
            return;
          }
          continue;
        }
        if (failure) throw withStack(failure, trace);
        await new Promise<void>((resolve) => (wake = resolve));
      }
    } finally {
      signal.removeEventListener('abort', onAbort);
      this.#pending.delete(id);
      if (!finished) {
        // Abandoned, failed locally, or left early: tell the service to stop working on it.
        const why = failure?.message ?? 'the caller stopped reading';
        void this.#bus
          .publish(this.#cancelTopic, '', { [WireProperty.Id]: id, [WireProperty.Cancel]: why })
          .catch(() => undefined);
      }
    }
  }

  #onResponse(message: BusMessage): void {
    const id = message.properties[WireProperty.Id];
    const pending = id ? this.#pending.get(id) : undefined;
    if (!pending) return; // another client's, or late
    let response: AgentResponse;
    try {
      response = decodeAgentResponse(message.body);
    } catch (error) {
      response = {
        messageType: 'error',
        content: String(error),
        endOfMessage: true,
        endOfDialog: true,
        error: { type: 'invalid-request', message: error instanceof Error ? error.message : String(error) },
      };
    }
    pending.onResponse(response);
  }
}

/** A timeout must be a positive number of ms (`Infinity`: none); anything else fails with a clear error. */
function checkTimeout(value: number, who: string): number {
  if (typeof value !== 'number' || Number.isNaN(value) || value <= 0) {
    throw new ToolbusError(
      'invalid-arguments',
      `${who}: 'timeoutMs' must be a positive number of milliseconds (Infinity for none), got ${String(value)}`,
    );
  }
  return value;
}

function toEvent(response: AgentResponse): AgentStreamEvent {
  return {
    type: response.messageType,
    content: response.content,
    endOfMessage: response.endOfMessage,
    endOfDialog: response.endOfDialog,
  };
}

/** Gives an error that arrives later the stack of the call that started the question. */
function withStack<E extends Error>(error: E, trace: Error): E {
  if (trace.stack && !error.stack?.includes(trace.stack)) {
    error.stack = `${error.name}: ${error.message}\n${trace.stack.split('\n').slice(1).join('\n')}`;
  }
  return error;
}
