/**
 * @module The `mcp` config type (`mcp/<id>`), with TrustGraph's field names and meaning: `url` (a
 * Streamable HTTP endpoint), `remote-name` (the tool's name on the server, default the id) and
 * `auth-token` (a static bearer token). Extended with stdio (`command`, `args`, `env`, `cwd`), `headers`,
 * `transport: "sse"` and timeouts.
 */
import type { ConfigStore } from '../../config/index.js';
import type { JsonObject, JsonValue } from '../../schema/index.js';
import { ToolbusError } from '../../errors/index.js';
import type { McpServerParams } from './server-params.js';
import { ConfigMcpOAuthStore, parseOAuthConfig, type McpConfigEnvironment } from './oauth/index.js';

/** Options of {@link parseMcpConfig}. */
export interface ParseMcpConfigOptions {
  /**
   * Where `{ "env": NAME }` values (`oauth.client-secret`, `oauth.private-key`) are read. Whether config
   * may read a variable at all is the allowlist's to say, before parsing. @default process.env
   */
  env?: McpConfigEnvironment;
  /**
   * Read the `oauth` secrets from `env`. False checks only that they are `{ "env": NAME }` and leaves
   * them out: a check of an item before it is stored, where the variables need not be set.
   * @default true
   */
  readSecrets?: boolean;
}

/** A parsed `mcp/<id>` item. */
export interface McpConfig {
  /** The item's key. */
  id: string;
  /** How to reach the server, timeouts included. */
  params: McpServerParams;
  /** `remote-name`: the tool's name on the server. @default the id */
  remoteName: string;
  /** Identifies the connection: items with the same one share one session. */
  connectionKey: string;
}

function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'string'
    ? `'${value.length > 60 ? value.slice(0, 57) + '...' : value}'`
    : typeof value;
}

function stringRecord(value: JsonValue | undefined, where: string, field: string): Record<string, string> {
  if (value === undefined) return {};
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new ToolbusError(
      'invalid-config',
      `${where}: '${field}' must be an object of strings, got ${describe(value)}`,
    );
  }
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(value)) {
    if (typeof v !== 'string') {
      throw new ToolbusError(
        'invalid-config',
        `${where}: '${field}.${k}' must be a string, got ${describe(v)}`,
      );
    }
    out[k] = v;
  }
  return out;
}

function optionalString(object: JsonObject, field: string, where: string): string | undefined {
  const value = object[field];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value === '') {
    throw new ToolbusError(
      'invalid-config',
      `${where}: '${field}' must be a non-empty string, got ${describe(value)}`,
    );
  }
  return value;
}

function optionalMs(object: JsonObject, field: string, where: string): number | undefined {
  const value = object[field];
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new ToolbusError(
      'invalid-config',
      `${where}: '${field}' must be a positive number of ms, got ${describe(value)}`,
    );
  }
  return value;
}

/**
 * Parses an `mcp/<id>` item. Throws `ToolbusError` `invalid-config` naming the item and the field.
 *
 * Fields: `url` or `command` (+ `args`, `env`, `cwd`); `transport` (`streamable-http` | `sse`);
 * `remote-name`; `auth-token` (sent as `Authorization: Bearer …`) or `headers`; `oauth` (an HTTP
 * server that requires OAuth: `grant`, `client-id`, `client-secret` and `private-key` as
 * `{ "env": NAME }`, `scope`, … — see `parseOAuthConfig`); `timeout-ms`, `max-total-timeout-ms`;
 * `protocol` (`auto` | `legacy`). The `oauth` options come without a store: the caller chooses where
 * tokens are kept (`ConfigMcpOAuthStore` for `mcp-oauth/<id>`).
 *
 * @example
 * ```json
 * { "url": "http://localhost:8000/mcp", "remote-name": "get_weather", "auth-token": "s3cret" }
 * ```
 */
export function parseMcpConfig(
  id: string,
  value: JsonValue | undefined,
  options: ParseMcpConfigOptions = {},
): McpConfig {
  const where = `config 'mcp/${id}'`;
  if (value === undefined) {
    throw new ToolbusError(
      'invalid-config',
      `${where} does not exist; create it with a 'url' or a 'command'`,
    );
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new ToolbusError(
      'invalid-config',
      `${where}: must be a JSON object with 'url' or 'command', got ${describe(value)}`,
    );
  }
  const url = optionalString(value, 'url', where);
  const command = optionalString(value, 'command', where);
  if ((url === undefined) === (command === undefined)) {
    throw new ToolbusError(
      'invalid-config',
      `${where}: needs exactly one of 'url' (HTTP) and 'command' (stdio)`,
    );
  }
  const remoteName = optionalString(value, 'remote-name', where) ?? id;
  const timeoutMs = optionalMs(value, 'timeout-ms', where);
  const maxTotalTimeoutMs = optionalMs(value, 'max-total-timeout-ms', where);
  const protocol = value['protocol'];
  if (protocol !== undefined && protocol !== 'auto' && protocol !== 'legacy') {
    throw new ToolbusError(
      'invalid-config',
      `${where}: 'protocol' must be "auto" or "legacy", got ${describe(protocol)}`,
    );
  }
  const common = {
    id,
    ...(timeoutMs !== undefined ? { timeoutMs } : {}),
    ...(maxTotalTimeoutMs !== undefined ? { maxTotalTimeoutMs } : {}),
    ...(protocol !== undefined ? { protocol: protocol as 'auto' | 'legacy' } : {}),
  };
  let params: McpServerParams;
  let connection: JsonValue;
  if (url !== undefined) {
    const headers = stringRecord(value['headers'], where, 'headers');
    const token = optionalString(value, 'auth-token', where);
    if (token !== undefined) headers['Authorization'] = `Bearer ${token}`;
    const oauthValue = value['oauth'];
    const oauth =
      oauthValue === undefined
        ? undefined
        : parseOAuthConfig(
            oauthValue,
            where,
            options.readSecrets === false ? undefined : (options.env ?? process.env),
          );
    if (oauth && Object.keys(headers).some((name) => name.toLowerCase() === 'authorization')) {
      throw new ToolbusError(
        'invalid-config',
        `${where}: give either 'oauth' or a token ('auth-token', an Authorization header), not both`,
      );
    }
    const transport = value['transport'] ?? 'streamable-http';
    if (transport !== 'streamable-http' && transport !== 'sse') {
      throw new ToolbusError(
        'invalid-config',
        `${where}: 'transport' must be "streamable-http" or "sse", got ${describe(transport)}`,
      );
    }
    try {
      new URL(url);
    } catch {
      throw new ToolbusError(
        'invalid-config',
        `${where}: 'url' must be an absolute URL, got ${describe(url)}`,
      );
    }
    const auth = oauth ? { oauth } : {};
    params =
      transport === 'sse'
        ? { ...common, url, transport: 'sse', headers, ...auth }
        : { ...common, url, headers, ...auth };
    // The oauth object as written: `{ "env": NAME }` names, never the secrets they resolve to.
    connection = { url, transport, headers, oauth: oauthValue ?? null };
  } else {
    if (value['oauth'] !== undefined) {
      throw new ToolbusError(
        'invalid-config',
        `${where}: 'oauth' applies to a server reached over HTTP ('url'), not to a 'command'`,
      );
    }
    const args = value['args'] ?? [];
    if (!Array.isArray(args) || args.some((a) => typeof a !== 'string')) {
      throw new ToolbusError(
        'invalid-config',
        `${where}: 'args' must be an array of strings, got ${describe(args)}`,
      );
    }
    const env = stringRecord(value['env'], where, 'env');
    const cwd = optionalString(value, 'cwd', where);
    params = {
      ...common,
      command: command as string,
      args: args as string[],
      env,
      ...(cwd !== undefined ? { cwd } : {}),
    };
    connection = { command: command as string, args, env, cwd: cwd ?? null };
  }
  // Items with oauth keep their tokens per id (mcp-oauth/<id>), so each id has its own session.
  const connectionKey = JSON.stringify([
    value['oauth'] === undefined ? null : id,
    connection,
    timeoutMs ?? null,
    maxTotalTimeoutMs ?? null,
    protocol ?? null,
  ]);
  return { id, params, remoteName, connectionKey };
}

/**
 * The params of a parsed `mcp/<id>` item with its OAuth state kept in the item `mcp-oauth/<id>` of
 * `store` (where `toolbus mcp login <id>` writes it); the params unchanged when the item has no `oauth`.
 */
export function withConfigTokenStore(config: McpConfig, store: ConfigStore): McpServerParams {
  const params = config.params;
  if (!('url' in params) || params.oauth === undefined) return params;
  return { ...params, oauth: { ...params.oauth, store: new ConfigMcpOAuthStore(store, config.id) } };
}
