/**
 * @module `SingleThreadedAgentRuntime`: an in-process runtime with one message queue, lazily created
 * agents, RPC (`sendMessage`) and topics (`publishMessage`).
 */
import { randomUUID } from 'node:crypto';
import { CancellationToken, notifyHooks, onAbort, type Hook } from '../tools/index.js';
import { abortError, ToolbusError } from '../errors/index.js';
import { AgentId } from './agent-id.js';
import type { AgentType, TopicId } from './agent-id.js';
import type {
  Agent,
  AgentFactory,
  AgentRuntime,
  MessageContext,
  PublishMessageOptions,
  SendMessageOptions,
  Subscription,
} from './agent-runtime.js';
import { TypeSubscription } from './type-subscription.js';

/** Where a published message failed, reported to {@link RuntimeHooks.onHandlerError}. */
export interface HandlerErrorContext {
  /** What the handler threw. */
  error: unknown;
  message: unknown;
  recipient: AgentId;
  topic: TopicId;
}

/** Hooks the runtime calls to report what it absorbed. Each takes one function or a list. */
export interface RuntimeHooks {
  /** A handler of a published message threw (RPC errors go to the caller instead). @default ignored */
  onHandlerError?: Hook<HandlerErrorContext>;
}

/** Options of {@link SingleThreadedAgentRuntime}. */
export interface SingleThreadedAgentRuntimeOptions {
  /** @default {} */
  hooks?: RuntimeHooks;
}

/** Options of {@link SingleThreadedAgentRuntime.start}. */
export interface RuntimeStartOptions {
  /** Stops the runtime when aborted. @default none */
  signal?: AbortSignal;
}

interface Envelope {
  readonly kind: 'send' | 'publish';
  readonly message: unknown;
  readonly recipient?: AgentId;
  readonly topic?: TopicId;
  readonly sender: AgentId | undefined;
  readonly messageId: string;
  readonly controller: AbortController;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Hosts agents in this process. Messages wait in one queue until {@link start}; each is then handled in
 * its own task, so a slow handler does not hold the others back.
 *
 * - `sendMessage` is an RPC: the handler's return value resolves it and its error rejects it.
 * - `publishMessage` goes to every matching subscription except the sender; handler errors go to
 *   `hooks.onHandlerError`.
 * - A caller's `signal` aborts the handler's `ctx.signal`; `stop()` aborts every handler in flight.
 *
 * @example
 * ```ts
 * const runtime = new SingleThreadedAgentRuntime();
 * await ToolUseAgent.register(runtime, 'tool_use_agent', () => new ToolUseAgent(modelClient, tools));
 * runtime.start();
 * const reply = await runtime.sendMessage(new Message('hi'), new AgentId('tool_use_agent', 'default'));
 * await runtime.stop();
 * ```
 */
export class SingleThreadedAgentRuntime implements AgentRuntime {
  readonly #hooks: RuntimeHooks;
  readonly #factories = new Map<string, AgentFactory>();
  readonly #instances = new Map<string, Promise<Agent>>();
  readonly #subscriptions = new Map<string, Subscription>();
  readonly #queue: Envelope[] = [];
  readonly #inFlight = new Set<Envelope>();
  #idleWaiters: (() => void)[] = [];
  #running = false;
  #closed = false;
  #startSignalCleanup: (() => void) | undefined;

  constructor(options: SingleThreadedAgentRuntimeOptions = {}) {
    this.#hooks = { ...options.hooks };
  }

  /** True between {@link start} and {@link stop}. */
  get running(): boolean {
    return this.#running;
  }

  /**
   * Registers a factory for agents of `type`; one instance is created lazily per key.
   * Rejects with `invalid-request` when the type is already registered, `invalid-name` when it is invalid.
   */
  async register(type: string, factory: AgentFactory): Promise<AgentType> {
    new AgentId(type); // validates the name
    if (this.#closed)
      throw new ToolbusError('closed', `runtime is closed: cannot register agent type '${type}'`);
    if (this.#factories.has(type)) {
      throw new ToolbusError('invalid-request', `agent type '${type}' is already registered`);
    }
    this.#factories.set(type, factory);
    return { type };
  }

  /** Adds a subscription for published messages. */
  async addSubscription(subscription: Subscription): Promise<void> {
    this.#subscriptions.set(subscription.id, subscription);
  }

  /**
   * Subscribes agents of `agentType` to topics of `topicType` (a {@link TypeSubscription}: the topic's
   * source becomes the agent's key). Resolves with the subscription, for `removeSubscription(sub.id)`.
   */
  async subscribe(topicType: string, agentType: string): Promise<Subscription> {
    const subscription = new TypeSubscription(topicType, agentType);
    await this.addSubscription(subscription);
    return subscription;
  }

  /** Removes a subscription. Rejects with `invalid-request` when there is no subscription with that id. */
  async removeSubscription(id: string): Promise<void> {
    if (!this.#subscriptions.delete(id)) {
      throw new ToolbusError('invalid-request', `no subscription with id '${id}'`);
    }
  }

  /** The instance for `id`, created now if needed. Rejects with `invalid-request` for an unknown type. */
  async getAgent<A extends Agent = Agent>(id: AgentId): Promise<A> {
    return (await this.#instance(id)) as A;
  }

  /**
   * Sends `message` to `recipient` and resolves with the handler's reply.
   *
   * Rejects with the handler's own error; with `invalid-request` for an unknown agent type; with
   * `cancelled` (or the signal's `ToolbusError` reason) when `signal` aborts; with `closed` when the
   * runtime stops or is closed before the message is handled.
   */
  sendMessage<R = unknown>(
    message: unknown,
    recipient: AgentId,
    options: SendMessageOptions = {},
  ): Promise<R> {
    const error = this.#refuse(recipient);
    if (error) return Promise.reject(error);
    return new Promise<unknown>((resolve, reject) => {
      this.#enqueue({ kind: 'send', message, recipient, options, resolve, reject });
    }) as Promise<R>;
  }

  /**
   * Queues `message` for every subscription matching `topic`, except the sender. Resolves once queued.
   * Rejects with `closed` after {@link close}.
   */
  publishMessage(message: unknown, topic: TopicId, options: PublishMessageOptions = {}): Promise<void> {
    if (this.#closed)
      return Promise.reject(new ToolbusError('closed', `runtime is closed: cannot publish to '${topic}'`));
    this.#enqueue({ kind: 'publish', message, topic, options, resolve: () => {}, reject: () => {} });
    return Promise.resolve();
  }

  /** Starts processing the queue. Calling it while running does nothing. */
  start(options: RuntimeStartOptions = {}): void {
    if (this.#closed) throw new ToolbusError('closed', 'runtime is closed: cannot start it again');
    if (this.#running) return;
    this.#running = true;
    const signal = options.signal;
    if (signal) {
      const onAbort = (): void => void this.stop();
      if (signal.aborted) {
        queueMicrotask(onAbort);
      } else {
        signal.addEventListener('abort', onAbort, { once: true });
        this.#startSignalCleanup = () => signal.removeEventListener('abort', onAbort);
      }
    }
    this.#drain();
  }

  /**
   * Stops at once: handlers in flight are aborted (their `ctx.signal` fires) and awaited; queued direct
   * messages are rejected with `closed`; queued published messages are dropped. The runtime can be
   * started again.
   */
  async stop(): Promise<void> {
    this.#running = false;
    this.#startSignalCleanup?.();
    this.#startSignalCleanup = undefined;
    const stopped = new ToolbusError('cancelled', 'agent runtime stopped');
    for (const envelope of this.#queue.splice(0)) {
      envelope.reject(
        new ToolbusError(
          'closed',
          `agent runtime stopped before message '${envelope.messageId}' was handled`,
        ),
      );
      envelope.controller.abort(stopped);
    }
    for (const envelope of this.#inFlight) envelope.controller.abort(stopped);
    await this.#idle();
  }

  /** Waits until the queue is empty and no handler runs (handlers may queue more), then stops. */
  async stopWhenIdle(): Promise<void> {
    if (this.#running) await this.#idle();
    await this.stop();
  }

  /** Stops, closes every agent instance, and refuses further messages. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.stop();
    const agents = await Promise.allSettled([...this.#instances.values()]);
    this.#instances.clear();
    await Promise.allSettled(agents.map((a) => (a.status === 'fulfilled' ? a.value.close?.() : undefined)));
  }

  /** Alias of {@link close}. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  #refuse(recipient: AgentId): ToolbusError | undefined {
    if (this.#closed)
      return new ToolbusError('closed', `runtime is closed: cannot send to agent '${recipient}'`);
    if (!this.#factories.has(recipient.type)) return this.#unknownType(recipient);
    return undefined;
  }

  #unknownType(recipient: AgentId): ToolbusError {
    const known = [...this.#factories.keys()].map((t) => `'${t}'`).join(', ') || 'none';
    return new ToolbusError(
      'invalid-request',
      `no agent type '${recipient.type}' is registered (for agent '${recipient}'); registered types: ${known}`,
    );
  }

  #enqueue(init: {
    kind: 'send' | 'publish';
    message: unknown;
    recipient?: AgentId;
    topic?: TopicId;
    options: SendMessageOptions;
    resolve: (value: unknown) => void;
    reject: (error: unknown) => void;
  }): void {
    const controller = new AbortController();
    const callerSignal = init.options.signal;
    let unwatch: (() => void) | undefined;
    const cleanup = (): void => unwatch?.();
    const envelope: Envelope = {
      kind: init.kind,
      message: init.message,
      ...(init.recipient ? { recipient: init.recipient } : {}),
      ...(init.topic ? { topic: init.topic } : {}),
      sender: init.options.sender,
      messageId: init.options.messageId ?? randomUUID(),
      controller,
      resolve: (value) => {
        cleanup();
        init.resolve(value);
      },
      reject: (error) => {
        cleanup();
        init.reject(error);
      },
    };
    if (callerSignal) {
      const what = init.recipient
        ? `message to agent '${init.recipient}'`
        : `message on topic '${init.topic}'`;
      if (callerSignal.aborted) {
        envelope.reject(abortError(callerSignal, what));
        return;
      }
      // One listener on the caller's signal however many messages share it.
      unwatch = onAbort(callerSignal, () => {
        const error = abortError(callerSignal, what);
        controller.abort(error);
        const queued = this.#queue.indexOf(envelope);
        if (queued >= 0) this.#queue.splice(queued, 1);
        envelope.reject(error);
      });
    }
    this.#queue.push(envelope);
    this.#drain();
  }

  #drain(): void {
    while (this.#running && this.#queue.length > 0) {
      const envelope = this.#queue.shift() as Envelope;
      this.#inFlight.add(envelope);
      void this.#dispatch(envelope).finally(() => {
        this.#inFlight.delete(envelope);
        // Stopped: what a finishing handler queued waits for the next start, so stop() must not wait
        // for it (the same rule as #idle).
        if (this.#inFlight.size === 0 && (this.#queue.length === 0 || !this.#running)) {
          for (const wake of this.#idleWaiters.splice(0)) wake();
        }
      });
    }
  }

  async #dispatch(envelope: Envelope): Promise<void> {
    if (envelope.kind === 'send') {
      const recipient = envelope.recipient as AgentId;
      try {
        const agent = await this.#instance(recipient);
        const reply = await agent.onMessage(envelope.message, this.#context(envelope, true));
        envelope.resolve(reply);
      } catch (error) {
        envelope.reject(error);
      }
      return;
    }
    const topic = envelope.topic as TopicId;
    const recipients = new Map<string, AgentId>();
    for (const subscription of this.#subscriptions.values()) {
      if (!subscription.isMatch(topic)) continue;
      const id = subscription.mapToAgent(topic);
      if (id.equals(envelope.sender)) continue;
      recipients.set(String(id), id);
    }
    await Promise.all(
      [...recipients.values()].map(async (recipient) => {
        try {
          const agent = await this.#instance(recipient);
          await agent.onMessage(envelope.message, this.#context(envelope, false));
        } catch (error) {
          try {
            notifyHooks(this.#hooks.onHandlerError, { error, message: envelope.message, recipient, topic });
          } catch {
            // A broken hook must not become an unhandled rejection that ends the process.
          }
        }
      }),
    );
    envelope.resolve(undefined);
  }

  #context(envelope: Envelope, isRpc: boolean): MessageContext {
    const signal = envelope.controller.signal;
    return {
      ...(envelope.sender ? { sender: envelope.sender } : {}),
      ...(envelope.topic ? { topic: envelope.topic } : {}),
      isRpc,
      signal,
      cancellationToken: CancellationToken.fromSignal(signal),
      messageId: envelope.messageId,
    };
  }

  #instance(id: AgentId): Promise<Agent> {
    const key = String(id);
    let instance = this.#instances.get(key);
    if (!instance) {
      const factory = this.#factories.get(id.type);
      if (!factory) return Promise.reject(this.#unknownType(id));
      instance = (async () => {
        const agent = await factory({ id, runtime: this });
        agent.bindRuntime?.(this, id);
        return agent;
      })();
      // A failed factory is retried on the next message instead of caching the failure.
      instance.catch(() => this.#instances.delete(key));
      this.#instances.set(key, instance);
    }
    return instance;
  }

  #idle(): Promise<void> {
    if (this.#inFlight.size === 0 && (this.#queue.length === 0 || !this.#running)) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }
}
