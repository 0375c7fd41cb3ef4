/**
 * @module bus: the MessageBus contract, topic names, and the in-process MemoryBus.
 */
export type {
  MessageBus,
  BusMessage,
  BusHandler,
  BusProperties,
  BusSubscription,
  BusHooks,
  BusHandlerErrorEvent,
  PublishOptions,
  SubscribeOptions,
} from './message-bus.js';
export { parseTopic, canonicalTopic, topicParts, defaultServiceQueues } from './topics.js';
export type { TopicName } from './topics.js';
export { MemoryBus } from './memory-bus.js';
export type { MemoryBusOptions } from './memory-bus.js';
