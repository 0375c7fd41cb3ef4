/**
 * @module config: the ConfigStore contract, the in-memory store, JSON value parsing with error positions,
 * and helpers the store backends share.
 */
export type {
  ConfigStore,
  ConfigItem,
  ConfigChange,
  ConfigWriteOptions,
  ConfigWatchOptions,
} from './config-store.js';
export { MemoryConfigStore, checkRevision } from './memory-config-store.js';
export { parseJsonValue, parseStoredValue, toJsonValue, toConfigValue } from './json-value.js';
export type { ParseJsonValueOptions } from './json-value.js';
export { ChangeQueue, DEFAULT_WATCH_BUFFER } from './change-queue.js';
export type { ChangeQueueOptions } from './change-queue.js';
export {
  assertConfigName,
  CONFIG_NAME_PATTERN,
  STATE_CONFIG_DEPENDENCIES,
  STATE_CONFIG_TYPES,
} from './config-names.js';
export { WITHHELD, showConfigValue, configWriteRefusal } from './secret-items.js';
export type { ShownConfigValue } from './secret-items.js';
