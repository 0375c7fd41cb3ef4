/**
 * @module `AgentClient`: asks an `AgentService` on the bus and follows its stream of responses. The agent
 * codec over the RPC layer (`services/rpc/`), which it shares with `ToolServiceClient`.
 */
import type { BusMessage, MessageBus } from '../bus/index.js';
import { canonicalTopic } from '../bus/index.js';
import { RpcClient, StreamCall, checkQueuePair, type RpcClientProtocol } from '../services/index.js';
import { ToolbusError, numberOption, type ToolbusErrorCode } from '../errors/index.js';
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
  /**
   * Globs of the tools the run may use (the service offers the model only those, and refuses others).
   * @default every tool of the service's agent
   */
  tools?: readonly string[];
  /** Cancels the question, in the service too (its tool calls included). @default none */
  signal?: AbortSignal;
  /**
   * Ask the service to stream thoughts and answers in pieces (a `ReActAgent` does; a `ToolUseAgent`
   * sends whole events). @default false
   */
  streaming?: boolean;
  /** @default the client's timeoutMs */
  timeoutMs?: number;
  /**
   * The absolute deadline (epoch ms) set by an outer caller: the question's budget is whichever ends
   * first, this or `timeoutMs` from now. The service gets it as the `deadline` property, and so does every
   * tool call of the run. @default none (the timeout alone)
   */
  deadline?: number;
  /** `ask` only: receives thought, observation and answer events (errors reject instead). @default none */
  onEvent?: (event: AgentStreamEvent) => void;
}

/** One question: its responses, read with `for await`, with a bounded buffer. */
class Question extends StreamCall<AgentResponse, AgentResponse> {
  receive(response: AgentResponse, last: boolean): void {
    this.push(response, last);
  }

  protected tooLarge(message: string): ToolbusError {
    return new ToolbusError('too-large', message);
  }
}

/** The agent codec for the RPC client. */
class AgentClientProtocol implements RpcClientProtocol<AgentResponse, Question> {
  readonly name: string;
  /** Spans: `{request queue}/ask`. */
  readonly method = 'ask';

  constructor(requestQueue: string) {
    this.name = `agent service '${canonicalTopic(requestQueue)}'`;
  }

  /** Never throws: a malformed response ends the dialog as an `invalid-request` error response. */
  decode(message: BusMessage): AgentResponse {
    try {
      return decodeAgentResponse(message.text ?? message.body);
    } catch (error) {
      return {
        messageType: 'error',
        content: String(error),
        endOfMessage: true,
        endOfDialog: true,
        error: { type: 'invalid-request', message: error instanceof Error ? error.message : String(error) },
      };
    }
  }

  isLast(response: AgentResponse): boolean {
    return response.endOfDialog;
  }

  error(code: ToolbusErrorCode, message: string, _call: Question, cause?: unknown): ToolbusError {
    return new ToolbusError(code, message, cause === undefined ? undefined : { cause });
  }
}

/**
 * Calls an {@link AgentService} over the bus. Requests carry a unique `id`; responses are matched by it
 * (every client instance subscribes to the response queue and keeps its own). A cancelled, timed-out or
 * abandoned question is cancelled in the service too. A question's budget (its timeout, or an outer
 * caller's `deadline` when sooner) travels as the `deadline` property and bounds the run's tool calls.
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
  readonly #requestQueue: string;
  readonly #timeoutMs: number;
  readonly #maxBuffered: number;
  readonly #rpc: RpcClient<AgentResponse, Question>;
  readonly #name: string;

  /**
   * @throws ToolbusError `invalid-config` for an invalid queue name or one topic for both queues,
   * `invalid-arguments` for a bad `timeoutMs`.
   */
  constructor(bus: MessageBus, options: AgentClientOptions = {}) {
    this.#requestQueue = options.requestQueue ?? DEFAULT_AGENT_REQUEST_QUEUE;
    const responseQueue = options.responseQueue ?? DEFAULT_AGENT_RESPONSE_QUEUE;
    checkQueuePair(this.#requestQueue, responseQueue, 'AgentClient');
    this.#timeoutMs = checkTimeout(options.timeoutMs, DEFAULT_AGENT_TIMEOUT_MS, 'AgentClient');
    this.#maxBuffered = options.maxBufferedEvents ?? DEFAULT_MAX_BUFFERED_EVENTS;
    const protocol = new AgentClientProtocol(this.#requestQueue);
    this.#name = protocol.name;
    this.#rpc = new RpcClient(bus, { requestQueue: this.#requestQueue, responseQueue }, protocol);
  }

  /** Questions in flight. */
  get pendingCount(): number {
    return this.#rpc.pendingCount;
  }

  /**
   * Asks a question and resolves with the final answer (streamed pieces joined). `onEvent` sees each
   * thought, observation and answer piece as it arrives.
   *
   * Rejects with `cancelled` when the signal aborts, `timeout` when the budget runs out, `unavailable`
   * when no service listens, `service-error` when the agent failed (the service's message included), and
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
  close(): Promise<void> {
    return this.#rpc.close('closed');
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
    // Errors arrive later, from the bus: give them the stack of the call that asked.
    const trace = new Error();
    const timeoutMs = checkTimeout(options.timeoutMs, this.#timeoutMs, 'AgentClient.ask');
    const call = new Question(this.#rpc, {
      name: this.#name,
      maxBuffered: this.#maxBuffered,
      unit: 'events',
    });
    this.#rpc.start(
      call,
      encodeAgentRequest({
        question,
        user: options.user ?? '',
        ...(options.history ? { history: [...options.history] } : {}),
        ...(options.tools ? { tools: [...options.tools] } : {}),
        streaming: options.streaming ?? false,
      }),
      { signal: options.signal, timeoutMs, deadline: options.deadline },
    );
    try {
      for (;;) {
        let next: IteratorResult<AgentResponse>;
        try {
          next = await call.next();
        } catch (error) {
          throw withStack(error as ToolbusError, trace);
        }
        if (next.done) return;
        const response = next.value;
        if (response.messageType === 'error' && response.endOfDialog) {
          if (yieldErrors) {
            yield toEvent(response);
            return;
          }
          throw withStack(
            fromAgentWireError(
              response.error ?? { type: 'agent-error', message: response.content },
              this.#requestQueue,
            ),
            trace,
          );
        }
        yield toEvent(response);
        if (response.endOfDialog) return;
      }
    } finally {
      // Abandoned, failed locally, or left early: the question is cancelled in the service too.
      await call.return();
    }
  }
}

/** A timeout must be a positive number of ms (`Infinity`: none). */
function checkTimeout(value: number | undefined, fallback: number, who: string): number {
  return numberOption(who, 'timeoutMs', value, fallback, { infinity: true });
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
