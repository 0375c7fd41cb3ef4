/**
 * @module `importMcpTools(store, id)`: writes one `tool/<name>` item of type `mcp-tool` for every tool of
 * the server in `mcp/<id>`, so nobody writes `arguments` by hand.
 */
import type { ConfigStore } from '../../config/index.js';
import { assertConfigAllowed, configAllowlistFromEnv, type ConfigAllowlist } from '../../registry/index.js';
import type { JsonObject, JsonValue } from '../../schema/index.js';
import { encodeToolName } from '../../tools/index.js';
import { isToolbusError, ToolbusError } from '../../errors/index.js';
import { parseMcpConfig, withConfigTokenStore } from './mcp-config.js';
import { McpSession, type McpSessionOptions, type McpToolDefinition } from './mcp-session.js';
import { inputSchemaOf } from './mcp-tool.js';
import type { McpConfigEnvironment } from './oauth/index.js';

/** Options of {@link importMcpTools}. */
export interface ImportMcpToolsOptions extends McpSessionOptions {
  /** @default none */
  signal?: AbortSignal;
  /** Prepended to every tool name (before encoding), e.g. `files.`. @default '' */
  prefix?: string;
  /** Replace existing `tool/<name>` items. @default false (existing items are left alone and reported) */
  overwrite?: boolean;
  /**
   * Import only these remote tool names; one the server does not offer is returned with status
   * `missing`. @default every tool
   */
  include?: readonly string[];
  /**
   * The programs an `mcp/<id>` item may start (its `command`), as the registry checks them: importing
   * connects to the server, so a `command` not listed is refused with `not-allowed` before anything
   * is started.
   * @default configAllowlistFromEnv(process.env): TOOLBUS_ALLOW_COMMANDS and TOOLBUS_ALLOW_ENV, else none
   */
  allowlist?: ConfigAllowlist;
  /** Where `oauth` secrets given as `{ "env": NAME }` are read. @default process.env */
  env?: McpConfigEnvironment;
}

/** What {@link importMcpTools} did for one remote tool. */
export interface ImportedMcpTool {
  /** The tool's name on the server. */
  remoteName: string;
  /** The `tool/<key>` written (or left alone, or that would have been written). */
  key: string;
  /**
   * `written`; `exists` (left alone, see `overwrite`); `missing`: named in `include` but the server
   * offers no such tool (a typo, a renamed tool), so nothing was written.
   */
  status: 'written' | 'exists' | 'missing';
  /** False when the schema was too rich for `arguments[]` (the server's schema is used at build time). */
  hasArguments: boolean;
}

const SIMPLE_TYPES = new Set(['string', 'number', 'integer', 'boolean']);
const SIMPLE_KEYS = new Set(['type', 'description', 'title']);

/**
 * TrustGraph `arguments[]` for a flat schema (every property a plain string, number, integer or boolean),
 * or `undefined` when that would lose information (nesting, `$ref`, enums, formats…): the `mcp-tool`
 * type then takes the server's full schema.
 */
export function schemaToArguments(definition: McpToolDefinition): JsonObject[] | undefined {
  const schema = inputSchemaOf(definition);
  for (const key of Object.keys(schema)) {
    if (!['type', 'properties', 'required', 'additionalProperties', 'description', 'title'].includes(key)) {
      return undefined;
    }
  }
  const properties = schema['properties'];
  if (properties === null || typeof properties !== 'object' || Array.isArray(properties)) return undefined;
  const required = new Set(Array.isArray(schema['required']) ? schema['required'] : []);
  const args: JsonObject[] = [];
  for (const [name, raw] of Object.entries(properties)) {
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return undefined;
    if (Object.keys(raw).some((k) => !SIMPLE_KEYS.has(k))) return undefined;
    const type = raw['type'];
    if (typeof type !== 'string' || !SIMPLE_TYPES.has(type)) return undefined;
    const description = raw['description'] ?? raw['title'] ?? '';
    args.push({ name, type, description: String(description), required: required.has(name) });
  }
  return args;
}

/**
 * Connects to the server of `mcp/<id>`, lists its tools and writes a `tool/<name>` item
 * (`type: "mcp-tool"`, `mcp-tool: <id>`, `remote-name`, `description`, and `arguments` from the server's
 * schema when it is flat) for each. Names are the remote names, prefixed and encoded (`.` and `/` become
 * valid characters reversibly). A name in `include` that the server does not offer is returned with
 * status `missing`.
 *
 * An item with `oauth` uses the tokens kept in `mcp-oauth/<id>` of the same store (written by `toolbus mcp
 * login <id>`), or a grant that needs no person (`client_credentials`).
 *
 * Rejects with `ToolbusError`: `invalid-config` (no or bad `mcp/<id>`), `not-allowed` (its `command`, or
 * an environment variable its `oauth` reads, is not in the allowlist, see
 * {@link ImportMcpToolsOptions.allowlist}), `unavailable` (server unreachable), `unauthorized` (the
 * server needs a login first).
 *
 * @example
 * ```ts
 * await store.put('mcp', 'everything', { command: 'npx', args: ['-y', '@modelcontextprotocol/server-everything'] });
 * const imported = await importMcpTools(store, 'everything');
 * ```
 */
export async function importMcpTools(
  store: ConfigStore,
  id: string,
  options: ImportMcpToolsOptions = {},
): Promise<ImportedMcpTool[]> {
  const item = await store.get('mcp', id);
  // Whoever can write config must not get to run a program by asking for an import.
  assertConfigAllowed(options.allowlist ?? configAllowlistFromEnv(process.env), 'mcp', id, item?.value);
  const config = parseMcpConfig(id, item?.value, options.env ? { env: options.env } : {});
  // An item with oauth uses the tokens 'toolbus mcp login <id>' stored (and refreshes them there).
  const session = new McpSession(withConfigTokenStore(config, store), options);
  try {
    const tools = await session.listTools(options.signal ? { signal: options.signal } : {});
    const include = options.include;
    const chosen = include ? tools.filter((t) => include.includes(t.name)) : tools;
    const out: ImportedMcpTool[] = [];
    for (const tool of chosen) {
      const name = encodeToolName((options.prefix ?? '') + tool.name);
      const args = schemaToArguments(tool);
      const value: { [key: string]: JsonValue } = {
        type: 'mcp-tool',
        name,
        description: tool.description ?? tool.title ?? tool.name,
        'mcp-tool': id,
        'remote-name': tool.name,
      };
      if (args) value['arguments'] = args;
      let status: ImportedMcpTool['status'] = 'written';
      try {
        await store.put('tool', name, value, options.overwrite ? {} : { ifRevision: 0 });
      } catch (error) {
        if (isToolbusError(error) && error.code === 'config-conflict') status = 'exists';
        else throw error;
      }
      out.push({ remoteName: tool.name, key: `tool/${name}`, status, hasArguments: args !== undefined });
    }
    // An `include` name the server lacks must not vanish silently (the agent would just lack the tool).
    for (const wanted of new Set(include ?? [])) {
      if (!tools.some((t) => t.name === wanted)) {
        const key = `tool/${encodeToolName((options.prefix ?? '') + wanted)}`;
        out.push({ remoteName: wanted, key, status: 'missing', hasArguments: false });
      }
    }
    return out;
  } catch (error) {
    if (isToolbusError(error)) throw error;
    throw new ToolbusError('unavailable', `importing the tools of 'mcp/${id}' failed: ${String(error)}`, {
      cause: error,
    });
  } finally {
    await session.close();
  }
}
