/**
 * @module config: the ConfigStore contract and the in-memory store.
 */
export type {
  ConfigStore,
  ConfigItem,
  ConfigChange,
  ConfigWriteOptions,
  ConfigWatchOptions,
} from './config-store.js';
