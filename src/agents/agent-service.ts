/**
 * @module `AgentService`: an agent on the bus. Takes `AgentRequest`s from the request queue and answers
 * each with a stream of `AgentResponse`s, correlated by the `id` property.
 */
import type { BusMessage, BusProperties, BusSubscription, MessageBus } from '../bus/index.js';
import { canonicalTopic } from '../bus/index.js';
import { WireProperty, cancelTopicOf } from '../services/index.js';
import { MAX_TIMER_MS } from '../tools/index.js';
import { ToolbusError } from '../errors/index.js';
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
}

interface Run {
  id: string;
  request: AgentRequest;
  properties: BusProperties;
  controller: AbortController;
  deadline: number | undefined;
}

/**
 * Serves an agent on the bus. Any number of replicas may run on one request queue: they share a bus
 * group, so each request reaches exactly one. Each request gets its own run with the request's `user`
 * (forwarded to every tool call; the model cannot change it); its thoughts, observations and answer are
 * published as they happen, ending with `end_of_dialog: true`. A cancellation on the control topic, a
 * passed `deadline`, or {@link close} aborts the run and its tool calls, remote ones included.
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
  readonly #bus: MessageBus;
  readonly #agent: AgentServiceOptions['agent'];
  readonly #requestQueue: string;
  readonly #responseQueue: string;
  readonly #cancelTopic: string;
  readonly #group: string;
  readonly #concurrency: number;
  readonly #maxQueued: number;
  readonly #hooks: AgentServiceHooks;
  readonly #running = new Map<string, Run>();
  readonly #queued: Run[] = [];
  readonly #tasks = new Set<Promise<void>>();
  #subscriptions: BusSubscription[] = [];
  #starting: Promise<void> | undefined;
  #closing: Promise<void> | undefined;

  /**
   * @throws ToolbusError `invalid-config` for an invalid queue name, a `concurrency` that is not a
   * positive integer, or a `maxQueued` that is not an integer >= 0.
   */
  constructor(options: AgentServiceOptions) {
    this.#bus = options.bus;
    this.#agent = options.agent;
    this.#requestQueue = options.requestQueue ?? DEFAULT_AGENT_REQUEST_QUEUE;
    this.#responseQueue = options.responseQueue ?? DEFAULT_AGENT_RESPONSE_QUEUE;
    canonicalTopic(this.#responseQueue); // validates
    this.#cancelTopic = cancelTopicOf(this.#requestQueue);
    this.#group = options.group ?? `agent-service:${canonicalTopic(this.#requestQueue)}`;
    this.#concurrency = options.concurrency ?? DEFAULT_AGENT_SERVICE_CONCURRENCY;
    this.#maxQueued = options.maxQueued ?? DEFAULT_AGENT_SERVICE_MAX_QUEUED;
    if (!Number.isInteger(this.#concurrency) || this.#concurrency < 1) {
      throw new ToolbusError(
        'invalid-config',
        `AgentService: 'concurrency' must be a positive integer, got ${String(this.#concurrency)}`,
      );
    }
    // A negative or NaN limit would answer too-many-requests to every request beyond `concurrency`.
    if (!Number.isInteger(this.#maxQueued) || this.#maxQueued < 0) {
      throw new ToolbusError(
        'invalid-config',
        `AgentService: 'maxQueued' must be an integer >= 0, got ${String(this.#maxQueued)}`,
      );
    }
    this.#hooks = { ...options.hooks };
  }

  /** The request queue served. */
  get requestQueue(): string {
    return this.#requestQueue;
  }

  /** Runs in flight in this replica. */
  get runningCount(): number {
    return this.#running.size;
  }

  /** Subscribes to the request queue and the control topic. Idempotent. Rejects with `closed` after close. */
  start(): Promise<void> {
    if (this.#closing) return Promise.reject(new ToolbusError('closed', 'agent service is closed'));
    this.#starting ??= this.#subscribe();
    return this.#starting;
  }

  /** Unsubscribes, aborts the runs in flight (their tool calls too) and waits for them. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  /** Alias of {@link close}. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  async #subscribe(): Promise<void> {
    const cancel = await this.#bus.subscribe(this.#cancelTopic, (m) => this.#onCancel(m));
    try {
      const requests = await this.#bus.subscribe(this.#requestQueue, (m) => this.#onRequest(m), {
        group: this.#group,
      });
      this.#subscriptions = [cancel, requests];
    } catch (error) {
      await cancel.unsubscribe();
      throw error;
    }
  }

  async #close(): Promise<void> {
    if (this.#starting) await this.#starting.catch(() => undefined);
    await Promise.allSettled(this.#subscriptions.map((s) => s.unsubscribe()));
    const reason = new ToolbusError('unavailable', 'agent service is closing');
    for (const run of this.#queued.splice(0)) this.#sendError(run.id, run.properties, reason);
    for (const run of this.#running.values()) run.controller.abort(reason);
    await Promise.allSettled([...this.#tasks]);
  }

  #onCancel(message: BusMessage): void {
    const id = message.properties[WireProperty.Id];
    if (!id) return;
    const why = message.properties[WireProperty.Cancel];
    const reason = new ToolbusError(
      'cancelled',
      `agent request '${id}' was cancelled by the caller${why ? `: ${why}` : ''}`,
    );
    const queued = this.#queued.findIndex((r) => r.id === id);
    if (queued >= 0) {
      const [run] = this.#queued.splice(queued, 1);
      if (run) this.#sendError(run.id, run.properties, reason);
    }
    this.#running.get(id)?.controller.abort(reason);
  }

  #onRequest(message: BusMessage): void {
    const properties = message.properties;
    const id = properties[WireProperty.Id];
    if (!id) {
      this.#problem({
        id: undefined,
        reason: `agent request on '${message.topic}' has no 'id' property; dropped`,
      });
      return;
    }
    let request: AgentRequest;
    try {
      request = decodeAgentRequest(message.body);
    } catch (error) {
      this.#problem({ id, reason: error instanceof Error ? error.message : String(error), error });
      this.#sendError(id, properties, error);
      return;
    }
    if (this.#closing) {
      this.#sendError(id, properties, new ToolbusError('unavailable', 'agent service is closing'));
      return;
    }
    if (this.#running.has(id) || this.#queued.some((r) => r.id === id)) {
      // A redelivered or repeated request: a second run would interleave its responses with the first's
      // under the same id, and its entry would replace the first's (breaking cancel and the concurrency
      // count). An error reply would end the caller's dialog, so the duplicate is only reported.
      this.#problem({
        id,
        reason: `agent request '${id}' is already being handled; the duplicate was dropped`,
      });
      return;
    }
    const rawDeadline = properties[WireProperty.Deadline];
    const deadline =
      rawDeadline !== undefined && Number.isFinite(Number(rawDeadline)) ? Number(rawDeadline) : undefined;
    const run: Run = { id, request, properties, controller: new AbortController(), deadline };
    if (this.#running.size < this.#concurrency) this.#launch(run);
    else if (this.#queued.length < this.#maxQueued) this.#queued.push(run);
    else {
      this.#sendError(
        id,
        properties,
        new ToolbusError(
          'too-many-requests',
          `agent service is at capacity (${this.#concurrency} running, ${this.#maxQueued} queued); retry later`,
        ),
      );
    }
  }

  #launch(run: Run): void {
    this.#running.set(run.id, run);
    const task = this.#run(run).finally(() => {
      this.#running.delete(run.id);
      this.#tasks.delete(task);
      const next = this.#queued.shift();
      if (next) this.#launch(next);
    });
    this.#tasks.add(task);
  }

  async #run(run: Run): Promise<void> {
    const { id, request, properties } = run;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const delay = run.deadline === undefined ? undefined : Math.max(0, run.deadline - Date.now());
    // A delay beyond setTimeout's maximum (about 24.8 days) would fire after 1 ms; no timer is needed then.
    if (delay !== undefined && delay <= MAX_TIMER_MS) {
      timer = setTimeout(
        () => run.controller.abort(new ToolbusError('timeout', `agent request '${id}' passed its deadline`)),
        delay,
      );
    }
    let chain: Promise<void> = Promise.resolve();
    const send = (response: AgentResponse): void => {
      chain = chain.then(() => this.#publish(id, properties, response));
    };
    let streamedAnswer = false;
    try {
      const agent = typeof this.#agent === 'function' ? this.#agent(request) : this.#agent;
      const answer = await agent.run(request.question, {
        // `""` on the wire means no user: the agent's own default (its `user` option) applies then.
        ...(request.user !== '' ? { user: request.user } : {}),
        streaming: request.streaming,
        signal: run.controller.signal,
        ...(request.history ? { history: request.history } : {}),
        onEvent: (event: AgentEvent) => {
          if (event.type === 'error') return; // sent once, below, from the rejection
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
      send({
        messageType: 'answer',
        content: streamedAnswer ? '' : answer,
        endOfMessage: true,
        endOfDialog: true,
        error: null,
      });
    } catch (error) {
      const failure = run.controller.signal.aborted ? (run.controller.signal.reason as unknown) : error;
      send({
        messageType: 'error',
        content: failure instanceof Error ? failure.message : String(failure),
        endOfMessage: true,
        endOfDialog: true,
        error: toAgentWireError(failure),
      });
    } finally {
      clearTimeout(timer);
      await chain;
    }
  }

  #sendError(id: string, properties: BusProperties, error: unknown): void {
    void this.#publish(id, properties, {
      messageType: 'error',
      content: error instanceof Error ? error.message : String(error),
      endOfMessage: true,
      endOfDialog: true,
      error: toAgentWireError(error),
    });
  }

  async #publish(id: string, request: BusProperties, response: AgentResponse): Promise<void> {
    const properties: Record<string, string> = { [WireProperty.Id]: id };
    for (const key of [WireProperty.Traceparent, WireProperty.Tracestate]) {
      const value = request[key];
      if (value !== undefined) properties[key] = value;
    }
    try {
      await this.#bus.publish(this.#responseQueue, encodeAgentResponse(response), properties);
    } catch (error) {
      this.#problem({ id, reason: `could not publish the response: ${String(error)}`, error });
    }
  }

  #problem(problem: AgentServiceProblem): void {
    try {
      this.#hooks.onProblem?.(problem);
    } catch {
      // a broken hook must not stop the service
    }
  }
}
