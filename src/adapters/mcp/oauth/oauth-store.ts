/**
 * @module Where an MCP server's OAuth state lives between calls and processes: the client registration,
 * the tokens with their absolute expiry and the discovery results (an authorization in progress stays in
 * the memory of the process running it).
 * `MemoryMcpOAuthStore` keeps it in the process; `ConfigMcpOAuthStore` in a config item of its own
 * (`mcp-oauth/<id>`), written with the store's revision compare-and-set so that two processes
 * refreshing at once do not overwrite each other.
 */
import type { ConfigStore } from '../../../config/index.js';
import type { JsonObject } from '../../../schema/index.js';
import { ToolbusError } from '../../../errors/index.js';

/** The config type of the items {@link ConfigMcpOAuthStore} writes: `mcp-oauth/<id>`. */
export const MCP_OAUTH_CONFIG_TYPE = 'mcp-oauth';

/**
 * The OAuth state of one MCP server, as a store keeps it: a JSON object. Its fields follow the OAuth
 * wire names inside `client` and `tokens` (stored as the authorization server sent them) and toolbus's
 * kebab-case outside (`server`: the MCP server URL it belongs to; state for another URL is ignored).
 * It holds secrets (`tokens.access_token`, `tokens.refresh_token`, `client.client_secret`): never
 * print it.
 */
export type McpOAuthState = JsonObject;

/** What {@link McpOAuthStore.read} returns. */
export interface McpOAuthStoreRead {
  /** The state, or undefined when nothing is stored. */
  state: McpOAuthState | undefined;
  /** Pass it to {@link McpOAuthStore.write}: 0 when nothing is stored. */
  version: number;
}

/**
 * Keeps one MCP server's OAuth state. Writes are compare-and-set on `version`, so concurrent writers
 * (several sessions, several processes) merge their changes instead of losing one.
 */
export interface McpOAuthStore {
  /** Reads the state and its version. */
  read(): Promise<McpOAuthStoreRead>;
  /**
   * Writes `state` (or deletes it when undefined) if the stored version is still `ifVersion`, and
   * resolves with the new version. Rejects with `ToolbusError` `config-conflict` when another writer
   * came first.
   */
  write(state: McpOAuthState | undefined, ifVersion: number): Promise<number>;
  /**
   * What a person must do when the server needs their approval and nobody can give it here, e.g.
   * "run `toolbus mcp login files`". @default none
   */
  readonly loginHint?: string;
}

/**
 * An {@link McpOAuthStore} in memory: the default of `oauth.store`. Tokens last as long as the process.
 *
 * @example
 * ```ts
 * const store = new MemoryMcpOAuthStore();
 * const tools = await mcpServerTools({ url, oauth: { grant: 'client_credentials', clientId, clientSecret, store } });
 * ```
 */
export class MemoryMcpOAuthStore implements McpOAuthStore {
  #state: McpOAuthState | undefined;
  #version = 0;

  async read(): Promise<McpOAuthStoreRead> {
    return {
      state: this.#state === undefined ? undefined : structuredClone(this.#state),
      version: this.#version,
    };
  }

  async write(state: McpOAuthState | undefined, ifVersion: number): Promise<number> {
    if (ifVersion !== this.#version) {
      throw new ToolbusError('config-conflict', 'the OAuth state changed meanwhile; read it again');
    }
    this.#state = state === undefined ? undefined : structuredClone(state);
    return ++this.#version;
  }
}

/**
 * An {@link McpOAuthStore} in a config item `mcp-oauth/<id>` of `store`, so every process sharing the
 * store (`toolbus up`, `toolbus mcp login`, replicas on NATS) shares the tokens. Writes use the item's
 * revision as compare-and-set. `toolbus config` and the gateway never show the item's secrets.
 *
 * @example
 * ```ts
 * const oauth = { store: new ConfigMcpOAuthStore(configStore, 'files') };
 * ```
 */
export class ConfigMcpOAuthStore implements McpOAuthStore {
  readonly #store: ConfigStore;
  readonly #id: string;
  readonly loginHint: string;

  /** @param id The key of the `mcp/<id>` item whose tokens these are. */
  constructor(store: ConfigStore, id: string) {
    this.#store = store;
    this.#id = id;
    this.loginHint = `run 'toolbus mcp login ${id}'`;
  }

  async read(): Promise<McpOAuthStoreRead> {
    const item = await this.#store.get(MCP_OAUTH_CONFIG_TYPE, this.#id);
    if (!item) return { state: undefined, version: 0 };
    const value = item.value;
    const state =
      value !== null && typeof value === 'object' && !Array.isArray(value)
        ? (value as McpOAuthState)
        : undefined;
    return { state, version: item.revision };
  }

  async write(state: McpOAuthState | undefined, ifVersion: number): Promise<number> {
    if (state !== undefined)
      return this.#store.put(MCP_OAUTH_CONFIG_TYPE, this.#id, state, { ifRevision: ifVersion });
    if (ifVersion === 0) return 0;
    await this.#store.delete(MCP_OAUTH_CONFIG_TYPE, this.#id, { ifRevision: ifVersion });
    return 0;
  }
}
