/**
 * @module `RoutedAgent`: an agent whose handlers are chosen by the class of the incoming message.
 */
import { ToolbusError } from '../errors/index.js';
import type { AgentId, AgentType } from './agent-id.js';
import type {
  Agent,
  AgentRuntime,
  MessageContext,
  PublishMessageOptions,
  SendMessageOptions,
} from './agent-runtime.js';
import type { TopicId } from './agent-id.js';

/** A message class: handlers are looked up by the constructor of the message. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- constructor parameters vary per class
export type MessageClass<T> = abstract new (...args: any[]) => T;

/** A handler of one message class. The resolved value is the RPC reply. */
export type MessageHandler<T, R = unknown> = (message: T, ctx: MessageContext) => R | Promise<R>;

/** Which deliveries a handler accepts. */
export const HandlerKind = {
  /** Both `sendMessage` and `publishMessage`. */
  Any: 'any',
  /** Only `sendMessage`. */
  Rpc: 'rpc',
  /** Only `publishMessage`. */
  Event: 'event',
} as const;
/** One of {@link HandlerKind}'s values. */
export type HandlerKind = (typeof HandlerKind)[keyof typeof HandlerKind];

/** Options of {@link RoutedAgent.messageHandler}. */
export interface MessageHandlerOptions<T> {
  /** @default 'any' */
  kind?: HandlerKind;
  /** Secondary routing: the handler applies only when this returns true. @default always */
  match?: (message: T, ctx: MessageContext) => boolean;
}

interface Route {
  cls: MessageClass<unknown>;
  handler: MessageHandler<unknown>;
  kind: HandlerKind;
  match: ((message: unknown, ctx: MessageContext) => boolean) | undefined;
}

/**
 * The base of agents hosted by a runtime. Handlers are registered in the constructor with
 * {@link messageHandler}, one per message class; a message is routed by its constructor, then by the
 * constructors it inherits from. A message nobody handles is refused with code `unsupported`.
 *
 * @example
 * ```ts
 * class Message { constructor(readonly content: string) {} }
 * class Echo extends RoutedAgent {
 *   constructor() {
 *     super('Echoes');
 *     this.messageHandler(Message, (m) => new Message(m.content));
 *   }
 * }
 * await Echo.register(runtime, 'echo', () => new Echo());
 * ```
 */
export class RoutedAgent implements Agent {
  /** What the agent does. */
  readonly description: string;
  readonly #routes = new Map<MessageClass<unknown>, Route[]>();
  #runtime: AgentRuntime | undefined;
  #id: AgentId | undefined;

  constructor(description: string) {
    this.description = description;
  }

  /**
   * Registers a factory for this agent type on `runtime`, as in the guide:
   * `await ToolUseAgent.register(runtime, 'tool_use_agent', () => new ToolUseAgent(...))`.
   */
  static register(
    runtime: AgentRuntime,
    type: string,
    factory: () => Agent | Promise<Agent>,
  ): Promise<AgentType> {
    return runtime.register(type, () => factory());
  }

  /** This agent's id. @throws ToolbusError `closed` before the runtime created it. */
  get id(): AgentId {
    if (!this.#id)
      throw new ToolbusError('closed', `agent '${this.description}' is not hosted by a runtime yet`);
    return this.#id;
  }

  /** The hosting runtime. @throws ToolbusError `closed` before the runtime created it. */
  get runtime(): AgentRuntime {
    if (!this.#runtime) {
      throw new ToolbusError('closed', `agent '${this.description}' is not hosted by a runtime yet`);
    }
    return this.#runtime;
  }

  /** @internal Called by the runtime once, right after creation. */
  bindRuntime(runtime: AgentRuntime, id: AgentId): void {
    if (this.#runtime && (this.#runtime !== runtime || !this.#id?.equals(id))) {
      throw new ToolbusError('invalid-request', `agent '${String(this.#id)}' is already hosted by a runtime`);
    }
    this.#runtime = runtime;
    this.#id = id;
  }

  /**
   * Routes messages of class `cls` (and its subclasses) to `handler`. Handlers for one class are tried in
   * registration order; the first whose `kind` and `match` accept the message runs.
   */
  protected messageHandler<T, R>(
    cls: MessageClass<T>,
    handler: MessageHandler<T, R>,
    options: MessageHandlerOptions<T> = {},
  ): void {
    const routes = this.#routes.get(cls) ?? [];
    routes.push({
      cls,
      handler: handler as MessageHandler<unknown>,
      kind: options.kind ?? HandlerKind.Any,
      match: options.match as Route['match'],
    });
    this.#routes.set(cls, routes);
  }

  /** Dispatches to the handler of the message's class. Rejects with `unsupported` when there is none. */
  async onMessage(message: unknown, ctx: MessageContext): Promise<unknown> {
    const route = this.#find(message, ctx);
    if (route) return route.handler.call(this, message, ctx);
    return this.onUnhandledMessage(message, ctx);
  }

  /**
   * Called for a message no handler accepts. The default rejects with `unsupported`, naming the class and
   * the classes handled.
   */
  protected onUnhandledMessage(message: unknown, _ctx: MessageContext): Promise<unknown> {
    const name = (message as { constructor?: { name?: string } } | null)?.constructor?.name ?? typeof message;
    const handled = [...this.#routes.keys()].map((c) => `'${c.name}'`).join(', ') || 'none';
    return Promise.reject(
      new ToolbusError(
        'unsupported',
        `agent '${this.#id ? String(this.#id) : this.description}' has no handler for message class '${name}'; ` +
          `it handles: ${handled}`,
      ),
    );
  }

  /** Sends a direct message as this agent. */
  protected sendMessage<R = unknown>(
    message: unknown,
    recipient: AgentId,
    options: SendMessageOptions = {},
  ): Promise<R> {
    return this.runtime.sendMessage<R>(message, recipient, { ...options, sender: this.id });
  }

  /** Publishes as this agent; it does not receive its own message. */
  protected publishMessage(
    message: unknown,
    topic: TopicId,
    options: PublishMessageOptions = {},
  ): Promise<void> {
    return this.runtime.publishMessage(message, topic, { ...options, sender: this.id });
  }

  /** Releases resources; called by the runtime on close. @default nothing */
  async close(): Promise<void> {}

  #find(message: unknown, ctx: MessageContext): Route | undefined {
    if (message === null || typeof message !== 'object') return undefined;
    let proto: unknown = Object.getPrototypeOf(message);
    while (proto && proto !== Object.prototype) {
      const cls = (proto as { constructor: MessageClass<unknown> }).constructor;
      for (const route of this.#routes.get(cls) ?? []) {
        if (route.kind === HandlerKind.Rpc && !ctx.isRpc) continue;
        if (route.kind === HandlerKind.Event && ctx.isRpc) continue;
        if (route.match && !route.match(message, ctx)) continue;
        return route;
      }
      proto = Object.getPrototypeOf(proto);
    }
    return undefined;
  }
}
