/**
 * @module toolbus/nats: the distributed engine. `NatsBus` (the `MessageBus` on NATS core),
 * `NatsKvConfigStore` (the `ConfigStore` on JetStream key-value) and `NatsKvCallStore` (the durable
 * calls' `CallStore` on JetStream key-value). Imports `@nats-io/*`; the root `toolbus` entry never loads
 * this module.
 */
export { NatsBus } from './nats-bus.js';
export { connectNats, DEFAULT_NATS_RECONNECT_WAIT_MS, DEFAULT_NATS_CONNECT_TIMEOUT_MS } from './connect.js';
export type { NatsConnectOptions } from './connect.js';
export { NatsSecurityError, NatsSecurityProblem, redactServerUrl } from './security.js';
export type {
  NatsAuth,
  NatsUserAuth,
  NatsTokenAuth,
  NatsCredsAuth,
  NatsNkeyAuth,
  NatsTlsOptions,
} from './security.js';
export type {
  NatsBusOptions,
  NatsBusConnectOptions,
  NatsBusHooks,
  NatsBusStatus,
  NatsDurableOptions,
} from './nats-bus.js';
export { JetStreamDurableQueue, DURABLE_STREAM_PREFIX, streamNameOf } from './jetstream-durable-queue.js';
export type { JetStreamDurableQueueOptions } from './jetstream-durable-queue.js';
export { topicToSubject, checkSubjectPrefix } from './subjects.js';
export { NatsKvCallStore, DEFAULT_CALL_BUCKET } from './kv-call-store.js';
export type { NatsKvCallStoreOptions } from './kv-call-store.js';
export { NatsKvConfigStore, DEFAULT_CONFIG_BUCKET, toKvKey, fromKvKey } from '../../config/nats-kv/index.js';
export type {
  NatsKvConfigStoreOptions,
  NatsKvConfigStoreConnectOptions,
} from '../../config/nats-kv/index.js';
