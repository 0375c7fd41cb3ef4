/**
 * @module How to reach an MCP server: stdio child process, Streamable HTTP or legacy SSE, plus the
 * timeouts that apply to its calls.
 */
import { basename } from 'node:path';
import { MAX_TIMER_MS } from '../../tools/index.js';
import { ToolbusError } from '../../errors/index.js';
import { resolveMcpOAuthOptions, type McpOAuthOptions, type ResolvedMcpOAuthOptions } from './oauth/index.js';

/** Default per-request timeout of MCP calls: 60 s, the same as the SDK's, and never a hidden lower one. */
export const DEFAULT_MCP_TIMEOUT_MS = 60_000;

/** Default cap on a call whose timeout keeps being reset by progress notifications: 30 min. */
export const DEFAULT_MCP_MAX_TOTAL_TIMEOUT_MS = 1_800_000;

/** Launch an MCP server as a child process and talk to it over stdin/stdout. */
export interface McpStdioParams {
  /** The executable, e.g. `npx` or `node`. */
  command: string;
  /** @default [] */
  args?: string[];
  /** Extra environment variables (added to the SDK's safe default environment). @default {} */
  env?: Record<string, string>;
  /** @default the current working directory */
  cwd?: string;
  /** Where the child's stderr goes (`'pipe'` is read and discarded, like `'ignore'`). @default 'inherit' */
  stderr?: 'inherit' | 'ignore' | 'pipe';
}

/** Talk to an MCP server over Streamable HTTP (2025 sessions or 2026-07-28 stateless). */
export interface McpHttpParams {
  url: string;
  /** @default 'streamable-http' */
  transport?: 'streamable-http';
  /** Extra HTTP headers, e.g. `Authorization`. @default {} */
  headers?: Record<string, string>;
  /**
   * OAuth 2.1 as the MCP authorization spec describes it: toolbus obtains, keeps and refreshes the
   * access token (instead of an `Authorization` header). @default none
   */
  oauth?: McpOAuthOptions;
}

/** Talk to an MCP server over the legacy HTTP+SSE transport (2024-11-05). */
export interface McpSseParams {
  url: string;
  transport: 'sse';
  /** @default {} */
  headers?: Record<string, string>;
  /** OAuth 2.1, as for Streamable HTTP (see `McpHttpParams.oauth`). @default none */
  oauth?: McpOAuthOptions;
}

/** Timeouts and identity shared by every kind of {@link McpServerParams}. */
export interface McpTimeoutParams {
  /**
   * A name for messages and logs. @default for a command, its file name and its first argument's when
   * that is not an option (`node /srv/mcp/server.mjs --token …` → `node server.mjs`: the other arguments
   * may hold secrets); for a URL, its host
   */
  id?: string;
  /** Per-request timeout for every call on this server, reset by progress. @default DEFAULT_MCP_TIMEOUT_MS (60 000) */
  timeoutMs?: number;
  /** Per-tool timeouts, by the server's tool name; override {@link timeoutMs}. @default {} */
  toolTimeoutsMs?: Record<string, number>;
  /** How long connecting (spawning, handshake, protocol probe) may take. @default DEFAULT_MCP_TIMEOUT_MS (60 000) */
  connectTimeoutMs?: number;
  /** Hard cap on a call whose timeout is reset by progress. @default DEFAULT_MCP_MAX_TOTAL_TIMEOUT_MS (1 800 000) */
  maxTotalTimeoutMs?: number;
  /**
   * Which protocol revision to speak: `auto` probes for 2026-07-28 and falls back to the 2025 handshake,
   * `legacy` runs the 2025 handshake only. @default 'auto'
   */
  protocol?: 'auto' | 'legacy';
}

/** Where an MCP server is and how long its calls may take. */
export type McpServerParams = (McpStdioParams | McpHttpParams | McpSseParams) & McpTimeoutParams;

/** The resolved, validated form of {@link McpServerParams}. */
export interface ResolvedMcpServerParams {
  id: string;
  kind: 'stdio' | 'streamable-http' | 'sse';
  stdio?: Required<Omit<McpStdioParams, 'cwd'>> & { cwd?: string };
  url?: URL;
  headers: Record<string, string>;
  /** The checked `oauth` options of an HTTP server, when it has them. */
  oauth?: ResolvedMcpOAuthOptions;
  timeoutMs: number;
  connectTimeoutMs: number;
  toolTimeoutsMs: Record<string, number>;
  maxTotalTimeoutMs: number;
  protocol: 'auto' | 'legacy';
}

/**
 * The longest delay `setTimeout` takes (24.8 days). The SDK arms its timers with these values, and Node
 * fires a longer one after 1 ms: a huge timeout meant as "never" would time out every request at once.
 */
export const MAX_MCP_TIMEOUT_MS = MAX_TIMER_MS;

function positive(name: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new ToolbusError(
      'invalid-config',
      `MCP server: '${name}' must be a positive number of ms, got ${String(value)}`,
    );
  }
  return Math.min(value, MAX_MCP_TIMEOUT_MS);
}

/**
 * Validates `params` and fills in defaults. Throws `ToolbusError` with code `invalid-config`.
 */
export function resolveMcpServerParams(params: McpServerParams): ResolvedMcpServerParams {
  if (params === null || typeof params !== 'object') {
    throw new ToolbusError('invalid-config', 'MCP server: params must be an object with `command` or `url`');
  }
  const timeoutMs = positive('timeoutMs', params.timeoutMs, DEFAULT_MCP_TIMEOUT_MS);
  const maxTotalTimeoutMs = positive(
    'maxTotalTimeoutMs',
    params.maxTotalTimeoutMs,
    Math.max(DEFAULT_MCP_MAX_TOTAL_TIMEOUT_MS, timeoutMs),
  );
  const connectTimeoutMs = positive('connectTimeoutMs', params.connectTimeoutMs, DEFAULT_MCP_TIMEOUT_MS);
  // No prototype: a tool named '__proto__' keeps its entry instead of setting the object's prototype.
  const toolTimeoutsMs: Record<string, number> = Object.create(null) as Record<string, number>;
  for (const [name, ms] of Object.entries(params.toolTimeoutsMs ?? {})) {
    toolTimeoutsMs[name] = positive(`toolTimeoutsMs.${name}`, ms, timeoutMs);
  }
  const protocol = params.protocol ?? 'auto';
  if (protocol !== 'auto' && protocol !== 'legacy') {
    throw new ToolbusError(
      'invalid-config',
      `MCP server: 'protocol' must be 'auto' or 'legacy', got '${String(protocol)}'`,
    );
  }
  const common = { timeoutMs, connectTimeoutMs, toolTimeoutsMs, maxTotalTimeoutMs, protocol };
  if ('command' in params && params.command !== undefined) {
    if (typeof params.command !== 'string' || params.command === '') {
      throw new ToolbusError('invalid-config', "MCP server: 'command' must be a non-empty string");
    }
    const args = params.args ?? [];
    if (!Array.isArray(args) || args.some((a) => typeof a !== 'string')) {
      throw new ToolbusError('invalid-config', "MCP server: 'args' must be an array of strings");
    }
    return {
      ...common,
      id: params.id ?? defaultStdioId(params.command, args),
      kind: 'stdio',
      stdio: {
        command: params.command,
        args: [...args],
        env: { ...(params.env ?? {}) },
        stderr: params.stderr ?? 'inherit',
        ...(params.cwd !== undefined ? { cwd: params.cwd } : {}),
      },
      headers: {},
    };
  }
  if ('url' in params && typeof params.url === 'string') {
    let url: URL;
    try {
      url = new URL(params.url);
    } catch {
      throw new ToolbusError(
        'invalid-config',
        `MCP server: 'url' must be an absolute URL, got '${params.url}'`,
      );
    }
    const transport = params.transport ?? 'streamable-http';
    if (transport !== 'sse' && transport !== 'streamable-http') {
      throw new ToolbusError(
        'invalid-config',
        `MCP server: 'transport' must be 'streamable-http' or 'sse', got '${String(transport)}'`,
      );
    }
    const headers = { ...(params.headers ?? {}) };
    const oauth = params.oauth === undefined ? undefined : resolveMcpOAuthOptions(params.oauth);
    if (oauth && Object.keys(headers).some((name) => name.toLowerCase() === 'authorization')) {
      throw new ToolbusError(
        'invalid-config',
        "MCP server: give either an 'Authorization' header or 'oauth', not both (oauth sends the token itself)",
      );
    }
    return {
      ...common,
      id: params.id ?? url.host,
      kind: transport,
      url,
      headers,
      ...(oauth ? { oauth } : {}),
    };
  }
  throw new ToolbusError('invalid-config', 'MCP server: params need `command` (stdio) or `url` (HTTP)');
}

/**
 * The timeout of a call to the remote tool `name`: its own entry in `toolTimeoutsMs`, else the server's
 * `timeoutMs`. Only own entries count: a remote tool may be named `constructor` or `toString`, and an
 * inherited `Object.prototype` function there would make the timeout NaN (an instant timeout).
 */
export function toolTimeoutMs(
  params: Pick<ResolvedMcpServerParams, 'timeoutMs' | 'toolTimeoutsMs'>,
  name: string,
): number {
  return Object.hasOwn(params.toolTimeoutsMs, name)
    ? (params.toolTimeoutsMs[name] ?? params.timeoutMs)
    : params.timeoutMs;
}

/** The default name of a stdio server: never more of its command line than a program and a script name. */
function defaultStdioId(command: string, args: readonly string[]): string {
  const first = args[0];
  const parts = [basename(command)];
  if (first !== undefined && first !== '' && !first.startsWith('-') && !first.includes('=')) {
    parts.push(basename(first));
  }
  return parts.join(' ').slice(0, 80);
}
