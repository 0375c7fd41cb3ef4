/**
 * @module `loginMcpServer(store, id)`: what `toolbus mcp login <id>` does. It authorizes toolbus with
 * the MCP server of config item `mcp/<id>` (the browser flow through a loopback redirect, or a
 * `client_credentials` grant) and keeps the tokens in `mcp-oauth/<id>` of the same store, where
 * `toolbus up` and `toolbus mcp import` find and refresh them. `logoutMcpServer` forgets them.
 */
import type { ConfigStore } from '../../config/index.js';
import { assertConfigAllowed, configAllowlistFromEnv, type ConfigAllowlist } from '../../registry/index.js';
import { ToolbusError } from '../../errors/index.js';
import { parseMcpConfig } from './mcp-config.js';
import { McpSession } from './mcp-session.js';
import {
  ConfigMcpOAuthStore,
  MCP_OAUTH_CONFIG_TYPE,
  McpOAuthGrant,
  MemoryMcpOAuthStore,
  startLoopbackRedirect,
  type McpConfigEnvironment,
  type McpOAuthGrantSummary,
  type McpOAuthOptions,
} from './oauth/index.js';
import { loginSeed, saveLogin } from './oauth/oauth-provider.js';

/** Options of {@link loginMcpServer}. */
export interface LoginMcpServerOptions {
  /**
   * Shows the person the authorization URL (print it, open a browser). Not called for
   * `client_credentials`, which needs no person.
   */
  open: (url: URL) => void | Promise<void>;
  /**
   * The port of the loopback redirect on 127.0.0.1. @default the port of the item's `oauth.redirect-url`,
   * else a free one
   */
  port?: number;
  /** How long to wait for the browser. @default DEFAULT_LOGIN_TIMEOUT_MS (5 min) */
  timeoutMs?: number;
  /** Cancels the login. @default none */
  signal?: AbortSignal;
  /**
   * What the item may do beyond calling tools (a `command`, the environment variables its `oauth`
   * reads). @default configAllowlistFromEnv(process.env)
   */
  allowlist?: ConfigAllowlist;
  /** Where `oauth` secrets given as `{ "env": NAME }` are read. @default process.env */
  env?: McpConfigEnvironment;
}

/** What {@link loginMcpServer} obtained (never the tokens themselves). */
export interface McpLoginResult extends McpOAuthGrantSummary {
  /** How many tools the server lists with the new tokens. */
  tools: number;
}

/** The loopback port and path for the login: the item's loopback `redirect-url`, or a free port. */
function loopbackOf(redirectUrl: string | undefined, where: string): { port: number; path: string } {
  if (redirectUrl === undefined) return { port: 0, path: '/callback' };
  const url = new URL(redirectUrl);
  if (url.protocol !== 'http:' || url.hostname !== '127.0.0.1') {
    throw new ToolbusError(
      'invalid-config',
      `${where}: 'oauth.redirect-url' must be http://127.0.0.1:<port>/<path> for 'toolbus mcp login', which ` +
        'listens for the browser on 127.0.0.1 only',
    );
  }
  return { port: url.port === '' ? 80 : Number(url.port), path: url.pathname };
}

/**
 * Authorizes toolbus with the MCP server of `mcp/<id>` and stores the tokens in `mcp-oauth/<id>`,
 * replacing any there. For `authorization_code`, listens on 127.0.0.1 for the browser's redirect and
 * calls `open` with the URL a person must visit; the redirect must carry the `state` toolbus sent.
 * Then lists the server's tools with the new tokens.
 *
 * The login works on a copy of the item (its client registration and discovery results, not its
 * tokens) and writes the item once, when it succeeded: processes using the server meanwhile keep
 * their tokens, and a login that fails or is cancelled leaves the item as it was.
 *
 * Rejects with `ToolbusError`: `invalid-config` (no `mcp/<id>`, no `oauth` in it, a bad field),
 * `not-allowed` (an environment variable the allowlist does not list), `timeout` (nobody came back in
 * time), `unauthorized` (the authorization server or the MCP server refused), `unavailable`.
 *
 * @example
 * ```ts
 * const result = await loginMcpServer(store, 'files', { open: (url) => console.log(`Open ${url}`) });
 * console.log(result.scope, new Date(result.expiresAt ?? 0));
 * ```
 */
export async function loginMcpServer(
  store: ConfigStore,
  id: string,
  options: LoginMcpServerOptions,
): Promise<McpLoginResult> {
  const where = `config 'mcp/${id}'`;
  const item = await store.get('mcp', id);
  assertConfigAllowed(options.allowlist ?? configAllowlistFromEnv(process.env), 'mcp', id, item?.value);
  const config = parseMcpConfig(id, item?.value, options.env ? { env: options.env } : {});
  const params = config.params;
  if (!('url' in params) || params.oauth === undefined) {
    throw new ToolbusError(
      'invalid-config',
      `${where} has no 'oauth' object, so there is nothing to log in to; add one, e.g. ` +
        `"oauth": {"grant": "authorization_code"}`,
    );
  }
  const signal = options.signal ?? new AbortController().signal;
  const shared = new ConfigMcpOAuthStore(store, id);
  const copy = new MemoryMcpOAuthStore();
  const seed = loginSeed((await shared.read()).state);
  if (seed !== undefined) await copy.write(seed, 0);
  let loopback: Awaited<ReturnType<typeof startLoopbackRedirect>> | undefined;
  let oauth: McpOAuthOptions = { ...params.oauth, store: copy };
  if ((params.oauth.grant ?? McpOAuthGrant.AuthorizationCode) === McpOAuthGrant.AuthorizationCode) {
    const { port, path } = loopbackOf(params.oauth.redirectUrl, where);
    loopback = await startLoopbackRedirect({
      port: options.port ?? port,
      path,
      open: options.open,
      ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
    });
    oauth = { ...oauth, redirectUrl: loopback.redirectUrl, authorize: loopback.authorize };
  }
  const session = new McpSession({ ...params, oauth });
  try {
    const tools = await session.listTools({ signal });
    const summary = await session.oauth!.summary();
    if (summary === undefined) {
      throw new ToolbusError(
        'unauthorized',
        `MCP server '${id}' answered without asking for authorization, so no tokens were stored; ` +
          `remove 'oauth' from ${where} if it needs none`,
      );
    }
    await saveLogin(shared, (await copy.read()).state!, id);
    return { ...summary, tools: tools.length };
  } finally {
    await session.close();
    await loopback?.close();
  }
}

/**
 * Forgets the tokens of `mcp/<id>` (deletes `mcp-oauth/<id>`); the authorization server is not told.
 * Resolves true when there were some.
 */
export function logoutMcpServer(store: ConfigStore, id: string): Promise<boolean> {
  return store.delete(MCP_OAUTH_CONFIG_TYPE, id);
}
