/**
 * @module The contracts between agents and the runtime that hosts them: `MessageContext`, `Agent`,
 * `Subscription` and `AgentRuntime`.
 */
import type { CancellationToken } from '../tools/index.js';
import type { AgentId, AgentType, TopicId } from './agent-id.js';

/** What a handler sees of the message it serves, besides the message itself. */
export interface MessageContext {
  /** The agent that sent the message, when an agent sent it. */
  readonly sender?: AgentId;
  /** The topic, for published messages. */
  readonly topic?: TopicId;
  /** True for `sendMessage` (a reply is awaited), false for `publishMessage`. */
  readonly isRpc: boolean;
  /** Aborted when the sender cancels, or the runtime stops. Always present. */
  readonly signal: AbortSignal;
  /** The same cancellation as {@link signal}, for code ported from the guide. */
  readonly cancellationToken: CancellationToken;
  /** Unique per delivery. */
  readonly messageId: string;
}

/** Something the runtime can deliver messages to. `RoutedAgent` is the usual implementation. */
export interface Agent {
  /** What the agent does, for people and for routing decisions. */
  readonly description: string;
  /**
   * Called once by the runtime right after the factory created the agent, before any message.
   * @internal the runtime's hook; user code does not call it.
   */
  bindRuntime?(runtime: AgentRuntime, id: AgentId): void;
  /** Handles one message; the resolved value is the reply of an RPC. */
  onMessage(message: unknown, ctx: MessageContext): Promise<unknown>;
  /** Called by the runtime when it is closed. @default nothing */
  close?(): Promise<void>;
}

/** Creates the agent for one id; called lazily, once per key. */
export type AgentFactory<A extends Agent = Agent> = (context: {
  id: AgentId;
  runtime: AgentRuntime;
}) => A | Promise<A>;

/** Decides which agent receives a published message. */
export interface Subscription {
  /** Unique id, used by `removeSubscription`. */
  readonly id: string;
  isMatch(topic: TopicId): boolean;
  /** The recipient of a matching topic. */
  mapToAgent(topic: TopicId): AgentId;
}

/** Options of {@link AgentRuntime.sendMessage}. */
export interface SendMessageOptions {
  /** The sending agent, when an agent sends. @default undefined */
  sender?: AgentId;
  /** Cancels the request and the handler's work. @default none */
  signal?: AbortSignal;
  /** @default a generated id */
  messageId?: string;
}

/** Options of {@link AgentRuntime.publishMessage}. */
export interface PublishMessageOptions {
  /** The publishing agent; it does not receive its own message. @default undefined */
  sender?: AgentId;
  /** Cancels the deliveries not yet finished. @default none */
  signal?: AbortSignal;
  /** @default a generated id */
  messageId?: string;
}

/** A runtime hosting agents: direct messages (RPC) and published messages (topics). */
export interface AgentRuntime {
  register(type: string, factory: AgentFactory): Promise<AgentType>;
  sendMessage<R = unknown>(message: unknown, recipient: AgentId, options?: SendMessageOptions): Promise<R>;
  publishMessage(message: unknown, topic: TopicId, options?: PublishMessageOptions): Promise<void>;
  addSubscription(subscription: Subscription): Promise<void>;
  removeSubscription(id: string): Promise<void>;
}
