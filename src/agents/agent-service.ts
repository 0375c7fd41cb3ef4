/**
 * @module `AgentService`: an agent on the bus. Takes `AgentRequest`s from the request queue and answers
 * each with a stream of `AgentResponse`s, correlated by the `id` property. The agent codec over the RPC
 * layer (`services/rpc/`), which it shares with tool services.
 */
import type { BusMessage, MessageBus } from '../bus/index.js';
import { canonicalTopic } from '../bus/index.js';
import {
  RpcServer,
  RpcServerCall,
  checkQueuePair,
  type RpcCallOwner,
  type RpcServerEvent,
  type RpcServerProtocol,
} from '../services/index.js';
import { ToolbusError, numberOption } from '../errors/index.js';
import type { RunStore } from '../runs/index.js';
import { RunResumer } from './run-resumer.js';
import type { AgentEvent, RunnableAgent } from './agent.js';
import { decodeAgentRequest, encodeAgentResponse, toAgentWireError } from './wire.js';
import type { AgentRequest, AgentResponse } from './wire.js';

/** The request queue of the agent service, as TrustGraph names it. */
export const DEFAULT_AGENT_REQUEST_QUEUE = 'non-persistent://tg/request/agent';
/** The response queue of the agent service, as TrustGraph names it. */
export const DEFAULT_AGENT_RESPONSE_QUEUE = 'non-persistent://tg/response/agent';
/** Runs one replica serves at once. */
export const DEFAULT_AGENT_SERVICE_CONCURRENCY = 8;
/** Requests one replica holds while all its runs are busy; beyond, it answers `too-many-requests`. */
export const DEFAULT_AGENT_SERVICE_MAX_QUEUED = 64;

/** What the service reports through {@link AgentServiceHooks}. */
export interface AgentServiceProblem {
  /** The request id, when it could be read. */
  id: string | undefined;
  /** What was wrong. */
  reason: string;
  error?: unknown;
}

/** Hooks of {@link AgentService}. */
export interface AgentServiceHooks {
  /** A request could not be read (no `id`, bad body), or a response could not be published. @default ignored */
  onProblem?: (problem: AgentServiceProblem) => void;
}

/** Options of {@link AgentService}. */
export interface AgentServiceOptions {
  /** The bus to serve on. */
  bus: MessageBus;
  /**
   * The agent, or a factory called once per request (e.g. to give each request its own model client or
   * tool set).
   */
  agent: RunnableAgent | ((request: AgentRequest) => RunnableAgent);
  /** @default DEFAULT_AGENT_REQUEST_QUEUE ('non-persistent://tg/request/agent') */
  requestQueue?: string;
  /** @default DEFAULT_AGENT_RESPONSE_QUEUE ('non-persistent://tg/response/agent') */
  responseQueue?: string;
  /** Runs at once in this replica. @default DEFAULT_AGENT_SERVICE_CONCURRENCY (8) */
  concurrency?: number;
  /** Requests waiting for a run slot. @default DEFAULT_AGENT_SERVICE_MAX_QUEUED (64) */
  maxQueued?: number;
  /** The bus group replicas share, so each request reaches one of them. @default 'agent-service:' + canonical request queue */
  group?: string;
  /** @default {} */
  hooks?: AgentServiceHooks;
  /**
   * The run store the agent keeps its runs in (the same one as the agent's `runs`). With it, the
   * service also resumes saved runs that nobody runs any more: a paused run once one of its approvals
   * is decided, a run a stopped process left mid-step at once. The agent must have `resume`. @default none
   */
  runs?: RunStore;
}

/** One agent request being served: the RPC call with its decoded request. */
class AgentCall extends RpcServerCall {
  readonly request: AgentRequest;

  constructor(owner: RpcCallOwner, message: BusMessage, id: string, request: AgentRequest) {
    super(owner, id, message.properties);
    this.request = request;
  }
}

/** The agent codec for the RPC server: `AgentRequest` in, `AgentResponse`s out, the run in between. */
class AgentProtocol implements RpcServerProtocol<AgentCall> {
  readonly name = 'agent service';
  /** Spans: `{request queue}/ask`. */
  readonly method = 'ask';
  /** A stopped replica tells its callers to go elsewhere, not that they cancelled. */
  readonly stopCode = 'unavailable';
  readonly #agent: AgentServiceOptions['agent'];
  readonly #hooks: AgentServiceHooks;

  constructor(agent: AgentServiceOptions['agent'], hooks: AgentServiceHooks) {
    this.#agent = agent;
    this.#hooks = hooks;
  }

  label(id: string): string {
    return `agent request '${id}'`;
  }

  decode(message: BusMessage, owner: RpcCallOwner, id: string): AgentCall {
    return new AgentCall(owner, message, id, decodeAgentRequest(message.text ?? message.body));
  }

  /** Runs the agent, streaming its events as responses; resolves with the closing answer's content. */
  async serve(call: AgentCall): Promise<string> {
    const request = call.request;
    // One response at a time, in order; the closing one is sent by the server once the run settles.
    let chain: Promise<void> = Promise.resolve();
    const send = (response: AgentResponse): void => {
      chain = chain.then(() =>
        call.write(response).catch((error: unknown) => {
          // A write after the call ended or was aborted is dropped on purpose; anything else is the bus.
          if (call.ended || error === call.abortReason) return;
          this.problem({ id: call.id, reason: `could not publish the response: ${String(error)}`, error });
        }),
      );
    };
    let streamedAnswer = false;
    try {
      const agent = typeof this.#agent === 'function' ? this.#agent(request) : this.#agent;
      const answer = await agent.run(request.question, {
        // `""` on the wire means no user: the agent's own default (its `user` option) applies then.
        ...(request.user !== '' ? { user: request.user } : {}),
        streaming: request.streaming,
        signal: call.signal,
        // The caller's budget reaches every tool call of the run, remote ones on the wire too.
        ...(call.deadline !== undefined ? { deadline: call.deadline } : {}),
        ...(request.history ? { history: request.history } : {}),
        ...(request.runId !== undefined ? { runId: request.runId } : {}),
        ...(request.principal !== undefined ? { principal: request.principal } : {}),
        ...(request.tools ? { toolPolicy: request.tools } : {}),
        ...(request.profile !== undefined ? { profile: request.profile } : {}),
        // Only a request that asked gets progress (TrustGraph clients do not know the message type);
        // for the others, tools are not even asked to report.
        progress: request.progress === true,
        onEvent: (event: AgentEvent) => {
          if (event.type === 'error') return; // sent once, by the server, from the rejection
          if (event.type === 'progress' && request.progress !== true) return; // an agent that reports anyway
          if (event.type === 'answer') {
            // The closing answer is sent after the run resolves, with end_of_dialog.
            if (event.endOfMessage) return;
            streamedAnswer = true;
          }
          send({
            messageType: event.type,
            content: event.content,
            endOfMessage: event.endOfMessage,
            endOfDialog: false,
            error: null,
          });
        },
      });
      return streamedAnswer ? '' : answer;
    } finally {
      await chain;
    }
  }

  encodeResult(value: unknown): string {
    return encodeAgentResponse({
      messageType: 'answer',
      content: String(value),
      endOfMessage: true,
      endOfDialog: true,
      error: null,
    });
  }

  encodeChunk(chunk: unknown): string {
    return encodeAgentResponse(chunk as AgentResponse);
  }

  encodeError(_id: string, error: unknown): string {
    return encodeAgentResponse({
      messageType: 'error',
      content: error instanceof Error ? error.message : String(error),
      endOfMessage: true,
      endOfDialog: true,
      error: toAgentWireError(error),
    });
  }

  report(event: RpcServerEvent): void {
    switch (event.type) {
      case 'unreadable':
        this.problem({
          id: undefined,
          reason: `agent request on '${event.message.topic}' has no 'id' property; dropped`,
        });
        break;
      case 'invalid':
        this.problem({ id: event.id, reason: event.error.message, error: event.error });
        break;
      case 'duplicate':
        // A redelivered or repeated request: a second run would interleave its responses with the first's
        // under the same id. An error reply would end the caller's dialog, so it is only reported.
        this.problem({
          id: event.id,
          reason: `agent request '${event.id}' is already being handled; the duplicate was dropped`,
        });
        break;
      case 'publish-error':
        this.problem({
          id: event.id,
          reason: `could not publish the response: ${String(event.error)}`,
          error: event.error,
        });
        break;
    }
  }

  problem(problem: AgentServiceProblem): void {
    try {
      this.#hooks.onProblem?.(problem);
    } catch {
      // a broken hook must not stop the service
    }
  }
}

/**
 * Serves an agent on the bus. Any number of replicas may run on one request queue: they share a bus
 * group, so each request reaches exactly one. Each request gets its own run with the request's `user`
 * (forwarded to every tool call; the model cannot change it); its thoughts, observations and answer are
 * published as they happen, ending with `end_of_dialog: true`, and, for a request with `progress: true`,
 * its tool calls' progress too (`progress` messages). A cancellation on the control topic, a
 * passed `deadline`, or {@link close} aborts the run and its tool calls, remote ones included; the
 * request's `deadline` also bounds every tool call of the run. Correlation, deadlines, the bounded queue
 * and the lifecycle are the RPC layer's, shared with `DynamicToolService`.
 *
 * @example
 * ```ts
 * const service = new AgentService({ bus, agent: new ToolUseAgent({ model, tools: registry.tools }) });
 * await service.start();
 * const client = new AgentClient(bus);
 * const answer = await client.ask('Tell me a joke about cats', { user: 'alice' });
 * ```
 */
export class AgentService {
  readonly #requestQueue: string;
  readonly #server: RpcServer<AgentCall>;
  readonly #resumer: RunResumer | undefined;

  /**
   * @throws ToolbusError `invalid-config` for an invalid queue name, one topic for both queues, a
   * `concurrency` that is not a positive integer, or a `maxQueued` that is not an integer >= 0.
   */
  constructor(options: AgentServiceOptions) {
    const requestQueue = options.requestQueue ?? DEFAULT_AGENT_REQUEST_QUEUE;
    const responseQueue = options.responseQueue ?? DEFAULT_AGENT_RESPONSE_QUEUE;
    checkQueuePair(requestQueue, responseQueue, 'AgentService');
    const concurrency = numberOption(
      'AgentService',
      'concurrency',
      options.concurrency,
      DEFAULT_AGENT_SERVICE_CONCURRENCY,
      { integer: true },
    );
    // A negative or NaN limit would answer too-many-requests to every request beyond `concurrency`.
    const maxQueued = numberOption(
      'AgentService',
      'maxQueued',
      options.maxQueued,
      DEFAULT_AGENT_SERVICE_MAX_QUEUED,
      {
        integer: true,
        zero: true,
      },
    );
    this.#requestQueue = requestQueue;
    const agent = options.agent;
    if (options.runs) {
      const hooks = options.hooks ?? {};
      this.#resumer = new RunResumer({
        runs: options.runs,
        concurrency,
        resume: (state, signal) => {
          // The agent the run was started with: the same tool policy.
          const request: AgentRequest = {
            question: state.question,
            user: state.user ?? '',
            streaming: false,
            ...(state.tools ? { tools: state.tools } : {}),
            ...(state.profile !== undefined ? { profile: state.profile } : {}),
          };
          const runner = typeof agent === 'function' ? agent(request) : agent;
          if (!runner.resume) {
            throw new ToolbusError(
              'usage',
              'AgentService: the agent cannot resume runs (it has no resume method)',
            );
          }
          return runner.resume(state.id, { signal });
        },
        onProblem: (reason, error) => {
          try {
            hooks.onProblem?.({ id: undefined, reason, error });
          } catch {
            // a broken hook must not stop the service
          }
        },
      });
    }
    this.#server = new RpcServer<AgentCall>(
      {
        bus: options.bus,
        requestQueue,
        responseQueue,
        group: options.group ?? `agent-service:${canonicalTopic(requestQueue)}`,
        concurrency,
        maxQueued,
      },
      new AgentProtocol(options.agent, { ...options.hooks }),
    );
  }

  /** The request queue served. */
  get requestQueue(): string {
    return this.#requestQueue;
  }

  /** Runs in flight in this replica. */
  get runningCount(): number {
    return this.#server.inFlight;
  }

  /**
   * Subscribes to the control topic and the request queue. Idempotent; after a failed start, calling it
   * again tries again. Rejects with `closed` after {@link stop} or {@link close}.
   */
  async start(): Promise<void> {
    await this.#server.start();
    await this.#resumer?.start();
  }

  /**
   * Graceful stop: takes no new requests (they are answered `unavailable`), lets the runs in flight and
   * the queued requests finish, then unsubscribes. When `options.signal` aborts first, it goes on as
   * {@link close} does. Idempotent.
   */
  stop(options: { signal?: AbortSignal } = {}): Promise<void> {
    this.#resumer?.close();
    return this.#server.stop(options);
  }

  /**
   * Unsubscribes, answers the queued requests and aborts the runs in flight (their tool calls too) with
   * `unavailable`, and waits for them. Idempotent.
   */
  close(): Promise<void> {
    this.#resumer?.close();
    return this.#server.stop({ signal: AbortSignal.abort() });
  }

  /** Alias of {@link close}. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}
