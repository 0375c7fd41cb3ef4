/**
 * @module toolbus/runtime: the agent runtime of the Saptiva-Agents/AutoGen guide. Agents with ids,
 * handlers chosen by message class, direct messages and topic subscriptions, on one event loop.
 */
export {
  AgentId,
  TopicId,
  RoutedAgent,
  HandlerKind,
  SingleThreadedAgentRuntime,
  TypeSubscription,
} from '../agents/index.js';
export type {
  AgentType,
  Agent,
  AgentFactory,
  AgentRuntime,
  MessageContext,
  PublishMessageOptions,
  SendMessageOptions,
  Subscription,
  MessageClass,
  MessageHandler,
  MessageHandlerOptions,
  SingleThreadedAgentRuntimeOptions,
  RuntimeHooks,
  RuntimeStartOptions,
  HandlerErrorContext,
} from '../agents/index.js';
