/**
 * @module The `mcp-tool` config tool type (TrustGraph's `McpToolImpl`): a `tool/<name>` item
 * `{ "type": "mcp-tool", "mcp-tool": "<id>", "arguments": [...] }` calls the tool named by `mcp/<id>`.
 * Every item that reaches the same server shares one long-lived session.
 */
import type { ConfigStore } from '../../config/index.js';
import type { JsonObject, JsonValue, ObjectJsonSchema } from '../../schema/index.js';
import { argumentsToJsonSchema, parseToolServiceToolDescriptor } from '../../services/index.js';
import { isToolbusError, ToolbusError } from '../../errors/index.js';
import { parseMcpConfig, withConfigTokenStore } from './mcp-config.js';
import { McpSession, type McpSessionOptions } from './mcp-session.js';
import { McpTool } from './mcp-tool.js';
import { MCP_OAUTH_CONFIG_TYPE, type McpConfigEnvironment } from './oauth/index.js';

/** Options of {@link mcpToolType}. */
export interface McpToolTypeOptions extends McpSessionOptions {
  /** How long a session with no tool left stays open, in case a rebuilt tool needs it again. @default 2000 */
  idleCloseMs?: number;
  /**
   * Where an `mcp/<id>` item with `oauth` keeps its tokens: the item `mcp-oauth/<id>` of this store,
   * which `toolbus mcp login <id>` writes. Without it, tokens live in the session's memory, so only
   * grants without a person (`client_credentials`) work. @default none
   */
  store?: ConfigStore;
  /** Where `oauth` secrets given as `{ "env": NAME }` are read. @default process.env */
  env?: McpConfigEnvironment;
}

/** What {@link mcpToolType} returns: a registry `ToolTypeFactory`, plus `close()` for its sessions. */
export interface McpToolTypeFactory {
  (
    descriptor: JsonObject,
    ctx: { key: string; lookup(type: string, key: string): JsonValue | undefined; signal: AbortSignal },
  ): Promise<McpTool>;
  /** Closes every session this factory opened. Idempotent. */
  close(): Promise<void>;
  /** Sessions open now (one per distinct server), for diagnostics. */
  readonly sessionCount: number;
}

interface PoolEntry {
  session: McpSession;
  refs: number;
  timer: ReturnType<typeof setTimeout> | undefined;
}

function optionalString(descriptor: JsonObject, field: string, owner: string): string | undefined {
  const value = descriptor[field];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value === '') {
    throw new ToolbusError('invalid-config', `${owner}: '${field}' must be a non-empty string`);
  }
  return value;
}

/**
 * The `mcp-tool` tool type for the `ToolRegistry`. Descriptor fields (TrustGraph's): `name` (default the
 * item's key), `description`, `mcp-tool` (the id of an `mcp/<id>` item), `arguments`
 * (`[{ name, type, description, required? }]`). Extensions: `remote-name` overrides the `mcp/<id>` item's;
 * without `arguments`, the server's own schema (`$defs` and `$ref` included) and description are used.
 *
 * Rejects with `ToolbusError` `invalid-config` naming the item and field; `unavailable` when the server's
 * schema is needed and the server cannot be reached.
 *
 * @example
 * ```ts
 * const mcpTools = mcpToolType();
 * const registry = new ToolRegistry({ store, toolTypes: { 'mcp-tool': mcpTools } });
 * await store.put('mcp', 'weather', { url: 'http://127.0.0.1:8000/mcp', 'remote-name': 'get_weather' });
 * await store.put('tool', 'weather', { type: 'mcp-tool', 'mcp-tool': 'weather', description: 'Weather by city',
 *   arguments: [{ name: 'city', type: 'string', description: 'City name' }] });
 * ```
 */
export function mcpToolType(options: McpToolTypeOptions = {}): McpToolTypeFactory {
  const idleCloseMs = options.idleCloseMs ?? 2000;
  const pool = new Map<string, PoolEntry>();
  let closed = false;

  const acquire = (
    key: string,
    create: () => McpSession,
    signal: AbortSignal,
  ): { session: McpSession; release: () => void } => {
    let entry = pool.get(key);
    if (!entry) {
      entry = { session: create(), refs: 0, timer: undefined };
      pool.set(key, entry);
    }
    const held = entry;
    if (held.timer) clearTimeout(held.timer);
    held.timer = undefined;
    held.refs++;
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      signal.removeEventListener('abort', release);
      held.refs--;
      if (held.refs > 0 || pool.get(key) !== held) return;
      held.timer = setTimeout(() => {
        if (held.refs === 0 && pool.get(key) === held) {
          pool.delete(key);
          void held.session.close();
        }
      }, idleCloseMs);
      held.timer.unref?.();
    };
    if (signal.aborted) queueMicrotask(release);
    else signal.addEventListener('abort', release, { once: true });
    return { session: held.session, release };
  };

  const factory = (async (descriptor, ctx) => {
    const owner = `config 'tool/${ctx.key}'`;
    if (closed) throw new ToolbusError('closed', `${owner}: the mcp-tool type was closed`);
    if (descriptor === null || typeof descriptor !== 'object' || Array.isArray(descriptor)) {
      throw new ToolbusError('invalid-config', `${owner}: an mcp-tool must be a JSON object`);
    }
    const id = descriptor['mcp-tool'];
    if (typeof id !== 'string' || id === '') {
      throw new ToolbusError(
        'invalid-config',
        `${owner}: has type 'mcp-tool' but field 'mcp-tool' must name an 'mcp/<id>' item, got ${id === undefined ? 'nothing' : JSON.stringify(id)}`,
      );
    }
    const name = optionalString(descriptor, 'name', owner) ?? ctx.key;
    let description = optionalString(descriptor, 'description', owner);
    let config;
    try {
      config = parseMcpConfig(id, ctx.lookup('mcp', id), options.env ? { env: options.env } : {});
    } catch (error) {
      const message = isToolbusError(error) ? error.message : String(error);
      throw new ToolbusError('invalid-config', `${owner}: ${message}`, { cause: error });
    }
    const remoteName = optionalString(descriptor, 'remote-name', owner) ?? config.remoteName;
    let parameters: ObjectJsonSchema | undefined;
    if (descriptor['arguments'] !== undefined) {
      try {
        const parsed = parseToolServiceToolDescriptor({
          ...descriptor,
          name,
          type: 'tool-service',
          service: id,
          description: description ?? '',
        });
        parameters = argumentsToJsonSchema(parsed.arguments);
      } catch (error) {
        const message = (isToolbusError(error) ? error.message : String(error)).replace(
          /^tool '[^']*': /,
          '',
        );
        throw new ToolbusError('invalid-config', `${owner}: ${message}`, { cause: error });
      }
    }
    const params = options.store ? withConfigTokenStore(config, options.store) : config.params;
    if (options.store && 'url' in config.params && config.params.oauth !== undefined) {
      // The tool depends on the login kept in mcp-oauth/<id>: the registry builds it again when one is
      // made or goes (it sees whether the item holds tokens, not the tokens nor their refreshes).
      ctx.lookup(MCP_OAUTH_CONFIG_TYPE, id);
    }
    const { session, release } = acquire(
      config.connectionKey,
      () => new McpSession(params, options),
      ctx.signal,
    );
    try {
      return await build(session);
    } catch (error) {
      release();
      throw error;
    }

    async function build(session: McpSession): Promise<McpTool> {
      let definition = { name: remoteName, inputSchema: { type: 'object' as const }, description };
      if (parameters === undefined || description === undefined) {
        // No hand-written arguments (or description): take them from the server.
        const tools = await session.listTools({ signal: ctx.signal });
        const found = tools.find((t) => t.name === remoteName);
        if (!found) {
          const offered = tools
            .map((t) => `'${t.name}'`)
            .slice(0, 20)
            .join(', ');
          throw new ToolbusError(
            'invalid-config',
            `${owner}: MCP server 'mcp/${id}' has no tool '${remoteName}'; it offers ${offered || 'no tools'}`,
          );
        }
        definition = { ...found, description: found.description } as typeof definition;
        description ??= found.description ?? remoteName;
      }
      return new McpTool(session, definition, {
        name,
        description: description ?? remoteName,
        ...(parameters ? { parameters } : {}),
      });
    }
  }) as McpToolTypeFactory;

  factory.close = async () => {
    closed = true;
    const entries = [...pool.values()];
    pool.clear();
    for (const entry of entries) if (entry.timer) clearTimeout(entry.timer);
    await Promise.all(entries.map((e) => e.session.close()));
  };
  Object.defineProperty(factory, 'sessionCount', { get: () => pool.size });
  return factory;
}
