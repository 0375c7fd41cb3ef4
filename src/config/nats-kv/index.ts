/**
 * @module config/nats-kv: the `ConfigStore` on NATS JetStream key-value. A leaf: imported only through
 * `toolbus/nats`, by the CLI, tests, benchmarks and examples.
 */
export { NatsKvConfigStore, DEFAULT_CONFIG_BUCKET } from './nats-kv-config-store.js';
export type { NatsKvConfigStoreOptions, NatsKvConfigStoreConnectOptions } from './nats-kv-config-store.js';
export { toKvKey, fromKvKey, encodeKeyPart, decodeKeyPart } from './key-codec.js';
