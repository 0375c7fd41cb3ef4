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
export { MemoryCallStore, DEFAULT_CALL_RESULT_TTL_MS } from './memory-call-store.js';
export type { MemoryCallStoreOptions } from './memory-call-store.js';
export { MemoryDurableQueue } from './memory-durable-queue.js';
export { FINAL_CALL_STATUSES, CALL_LEASE_MS } from './durable.js';
export type {
  CallStatus,
  CallRecord,
  StoredCall,
  CallStore,
  DurableMessage,
  DurableConsumeOptions,
  DurableQueue,
  DurableCalls,
} from './durable.js';
export type { MemoryBusOptions } from './memory-bus.js';
