/**
 * @module A registry opened directly on a bus and store, for CLI commands run with `--nats` or `--store`
 * instead of talking to a running `toolbus up`.
 */
import type { CliIO } from './command.js';
import type { ToolProvider } from '../tools/index.js';
import { ToolRegistry } from '../registry/index.js';
import { openBus, openConfigStore } from './connect.js';
import { defaultToolTypes } from './tool-types.js';

/** A registry's tools plus a way to close what was opened. */
export interface LocalTools {
  tools: ToolProvider;
  problems(): readonly { key: string; message: string }[];
  close(): Promise<void>;
}

/** Opens the store and bus named by the flags and loads the registry from them. */
export async function openLocalTools(
  flags: { nats?: string | undefined; store?: string | undefined },
  io: CliIO,
): Promise<LocalTools> {
  const bus = await openBus(flags, io);
  let store;
  try {
    store = await openConfigStore(flags, io);
  } catch (error) {
    await bus.close();
    throw error;
  }
  const registry = new ToolRegistry({ store, bus, toolTypes: defaultToolTypes() });
  try {
    await registry.start();
  } catch (error) {
    await registry.close(); // it holds a bus subscription and its own tool-service clients
    await store.close();
    await bus.close();
    throw error;
  }
  return {
    tools: registry.tools,
    problems: () => registry.problems(),
    async close() {
      await registry.close();
      await store.close();
      await bus.close();
    },
  };
}
