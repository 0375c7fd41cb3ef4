/**
 * @module A registry opened directly on a bus and store, for CLI commands run with `--nats` or `--store`
 * instead of talking to a running `toolbus up`.
 */
import type { CliIO } from './command.js';
import type { PromptProvider, ResourceProvider, ToolProvider } from '../tools/index.js';
import { ToolRegistry } from '../registry/index.js';
import { busNatsUrl, openBus, openConfigStore, type ConnectFlags } from './connect.js';
import { defaultToolTypes } from './tool-types.js';

/** A registry's tools plus a way to close what was opened. */
export interface LocalTools {
  tools: ToolProvider;
  /** The tools of profile `id`. @throws ToolbusError `not-found` naming the profiles there are. */
  profile(id: string): ToolProvider;
  /** The `resource/<id>` items, for MCP clients. */
  resources: ResourceProvider;
  /** The `prompt` tool items as MCP prompts. */
  prompts: PromptProvider;
  problems(): readonly { key: string; message: string }[];
  /**
   * Set when the bus is this process's own in-memory one (no `--nats`): tool services that run in
   * another process, e.g. in `toolbus up`, cannot be reached, and this says what to do instead.
   */
  privateBusNote: string | undefined;
  /**
   * On a shared bus, waits for self-announcing services to answer the registry's announce request
   * (their tools arrive a moment after `start`): until `name` is a tool, or, without a name, until the
   * tool set has been quiet for a moment; at most {@link ANNOUNCE_WAIT_MS}. At once on a private bus.
   */
  settle(name?: string): Promise<void>;
  close(): Promise<void>;
}

/** The longest a one-shot command waits for announced tools. */
export const ANNOUNCE_WAIT_MS = 1_000;
/** Without a tool to wait for: how long the tool set must stay unchanged to count as settled. */
const ANNOUNCE_QUIET_MS = 250;

function settleRegistry(registry: ToolRegistry, name: string | undefined): Promise<void> {
  return new Promise<void>((resolve) => {
    let quiet: NodeJS.Timeout | undefined;
    const done = (): void => {
      clearTimeout(longest);
      clearTimeout(quiet);
      off();
      resolve();
    };
    const longest = setTimeout(done, ANNOUNCE_WAIT_MS);
    const check = (): void => {
      if (name !== undefined) {
        if (registry.tools.get(name)) done();
        return;
      }
      clearTimeout(quiet);
      quiet = setTimeout(done, ANNOUNCE_QUIET_MS);
    };
    const off = registry.onChange(check);
    check();
  });
}

/** Why a tool service is unavailable to a command that opened its own in-memory bus, and the fix. */
export const PRIVATE_BUS_NOTE =
  "without --nats this command has its own in-memory bus, so tool services running in another process (such as 'toolbus up') " +
  'cannot answer it; run them and this command with the same --nats URL';

/** Opens the store and bus named by the flags and loads the registry from them. */
export async function openLocalTools(flags: ConnectFlags, io: CliIO): Promise<LocalTools> {
  const bus = await openBus(flags, io);
  let store;
  try {
    store = await openConfigStore(flags, io);
  } catch (error) {
    await bus.close();
    throw error;
  }
  const registry = new ToolRegistry({ store, bus, toolTypes: defaultToolTypes(store) });
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
    profile: (id) => registry.profile(id),
    resources: registry.resources,
    prompts: registry.prompts,
    problems: () => registry.problems(),
    privateBusNote: busNatsUrl(flags, io) === undefined ? PRIVATE_BUS_NOTE : undefined,
    settle: (name) =>
      busNatsUrl(flags, io) === undefined ? Promise.resolve() : settleRegistry(registry, name),
    async close() {
      await registry.close();
      await store.close();
      await bus.close();
    },
  };
}
