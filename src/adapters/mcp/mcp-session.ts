/**
 * @module One long-lived MCP client connection to one server, shared by every call: connects lazily,
 * reconnects after a server restart or session expiry, follows `tools/list_changed`, maps SDK errors
 * onto the toolbus error contract.
 */
import {
  Client,
  SSEClientTransport,
  SdkError,
  StreamableHTTPClientTransport,
  ProtocolError,
  type CallToolResult,
  type Tool as McpToolDefinition,
  type Transport,
} from '@modelcontextprotocol/client';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/client/stdio';
import { ToolError, onAbort, type ToolClientFeatures } from '../../tools/index.js';
import { MCP_CLIENT_CAPABILITIES, ServerRequestRouter, answerServerRequests } from './mcp-server-requests.js';
import { traceMcpClientCall } from './mcp-tracing.js';
import { ToolbusError } from '../../errors/index.js';
import { McpOAuthProvider, isAuthFailure, oauthError } from './oauth/index.js';
import {
  MAX_MCP_TIMEOUT_MS,
  resolveMcpServerParams,
  toolTimeoutMs,
  type McpServerParams,
  type ResolvedMcpServerParams,
} from './server-params.js';

export type { McpToolDefinition };

/** Options of {@link McpSession}. */
export interface McpSessionOptions {
  /** The client name sent to the server. @default 'toolbus' */
  clientName?: string;
  /** @default '0.1.0' */
  clientVersion?: string;
}

/** Options of {@link McpSession.callTool}. */
export interface McpCallOptions {
  /** Cancels the call; the server gets an MCP cancel. @default none */
  signal?: AbortSignal;
  /** Overrides the server's and the tool's timeout for this call. @default the tool's or server's timeout */
  timeoutMs?: number;
  /** Retry once after a reconnect (only for read-only or idempotent tools). @default false */
  retryAfterReconnect?: boolean;
  /** The name the caller knows the tool by, for messages. @default the remote name */
  displayName?: string;
  /** Progress notifications of this call. @default none */
  onProgress?: (progress: { progress: number; total?: number; message?: string }) => void;
  /**
   * Who answers what the server asks while this call runs: its elicitations, sampling requests and
   * log messages (an `McpTool` passes its caller's `ctx.elicit`, `ctx.sample` and `ctx.log`). A request
   * nobody can answer gets an error. @default none
   */
  clientFeatures?: ToolClientFeatures;
}

/** Options of {@link McpSession.connect} and {@link McpSession.listTools}. */
export interface McpSignalOptions {
  /** @default none */
  signal?: AbortSignal;
}

type ToolsListener = (tools: readonly McpToolDefinition[]) => void;

/**
 * How many times one request may send a person to authorize: once for a 401, once more for a 403
 * step-up. A server that still refuses is not asked again (the conformance suite allows three).
 */
const MAX_AUTHORIZATIONS_PER_REQUEST = 2;

/** True when `error` means the connection or the session is gone (restart, expiry, crash). */
function isConnectionLoss(error: unknown): boolean {
  if (error instanceof SdkError) {
    return (
      error.code === 'CONNECTION_CLOSED' ||
      error.code === 'NOT_CONNECTED' ||
      error.code === 'SEND_FAILED' ||
      error.code === 'CLIENT_HTTP_NOT_IMPLEMENTED' ||
      error.code === 'CLIENT_HTTP_UNEXPECTED_CONTENT'
    );
  }
  const e = error as { status?: unknown; code?: unknown; message?: unknown; cause?: unknown } | null;
  if (!e || typeof e !== 'object') return false;
  if (e.status === 404) return true;
  const message = typeof e.message === 'string' ? e.message : '';
  if (
    /session not found|no valid session|fetch failed|ECONNREFUSED|ECONNRESET|socket hang up|EPIPE/i.test(
      message,
    )
  ) {
    return true;
  }
  return e.cause !== undefined && e.cause !== error ? isConnectionLoss(e.cause) : false;
}

function abortReason(signal: AbortSignal, what: string, toolName?: string): ToolbusError {
  const reason: unknown = signal.reason;
  if (reason instanceof ToolbusError) return reason;
  return new ToolError('cancelled', `${what} was cancelled`, {
    cause: reason,
    ...(toolName ? { toolName } : {}),
  });
}

/**
 * One MCP server connection, shared by every tool of that server. Connects on first use, reconnects
 * after the server restarts or the session expires, and reports tool-list changes.
 *
 * @example
 * ```ts
 * const session = new McpSession({ command: 'node', args: ['server.js'] });
 * const tools = await session.listTools();
 * const result = await session.callTool('echo', { text: 'hi' });
 * await session.close();
 * ```
 */
export class McpSession {
  readonly #params: ResolvedMcpServerParams;
  readonly #clientName: string;
  readonly #clientVersion: string;
  readonly #listeners = new Set<ToolsListener>();
  /** Which call a server's elicitation, sampling request or log message belongs to. */
  readonly #serverRequests = new ServerRequestRouter();
  #client: Client | undefined;
  #connecting: Promise<Client> | undefined;
  #closed = false;
  #resolveClosed!: (reason: void | Error) => void;
  #connectCount = 0;
  #childPid: number | null = null;
  readonly #oauth: McpOAuthProvider | undefined;
  /** Aborted by {@link close}: ends an authorization a person has not finished. */
  readonly #lifetime = new AbortController();

  /** Resolves when {@link close} has run; never rejects. */
  readonly closed: Promise<void | Error>;

  constructor(params: McpServerParams | ResolvedMcpServerParams, options: McpSessionOptions = {}) {
    this.#params = 'kind' in params ? params : resolveMcpServerParams(params);
    this.#clientName = options.clientName ?? 'toolbus';
    this.#clientVersion = options.clientVersion ?? '0.1.0';
    this.closed = new Promise((resolve) => (this.#resolveClosed = resolve));
    const { oauth, url } = this.#params;
    this.#oauth = oauth && url ? new McpOAuthProvider(url, this.#params.id, oauth) : undefined;
  }

  /**
   * The OAuth client of this server, when its params have `oauth`: what the stored tokens grant
   * (`summary()`).
   */
  get oauth(): McpOAuthProvider | undefined {
    return this.#oauth;
  }

  /** The server's id (from the params, the command or the URL host). */
  get id(): string {
    return this.#params.id;
  }

  /** The resolved parameters, timeouts included. */
  get params(): ResolvedMcpServerParams {
    return this.#params;
  }

  /** How many times a connection has been established (1 after the first connect; more after reconnects). */
  get connectCount(): number {
    return this.#connectCount;
  }

  /** The protocol era of the live connection: `modern` (2026-07-28) or `legacy` (2025), if connected. */
  get protocolEra(): 'modern' | 'legacy' | undefined {
    return this.#client?.getProtocolEra();
  }

  /** The negotiated protocol version of the live connection, if connected. */
  get protocolVersion(): string | undefined {
    return this.#client?.getNegotiatedProtocolVersion();
  }

  /** The server's self-reported name, if connected. */
  get serverName(): string | undefined {
    return this.#client?.getServerVersion()?.name;
  }

  /** Calls `listener` with the new tool list whenever the server's tools change (or after a reconnect). */
  onToolsChanged(listener: ToolsListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Connects if not connected. Rejects with `unavailable` when the server (or its OAuth authorization
   * server) cannot be reached, `unauthorized` or `forbidden` when a server with `oauth` refuses and
   * authorizing again cannot help (the message says what to do, e.g. run `toolbus mcp login <id>`),
   * `closed` after {@link close}, `cancelled` on abort.
   */
  async connect(options: McpSignalOptions = {}): Promise<void> {
    await this.#ensureClient(options.signal);
  }

  /** The server's tools with their JSON Schemas as sent (`$defs` and `$ref` untouched). */
  async listTools(options: McpSignalOptions = {}): Promise<McpToolDefinition[]> {
    let used: Client | undefined;
    const attempt = (): Promise<McpToolDefinition[]> =>
      this.#authorized(async () => {
        const client = await this.#ensureClient(options.signal);
        used = client;
        const result = await client.listTools(undefined, {
          cacheMode: 'refresh',
          timeout: this.#params.timeoutMs,
          ...(options.signal ? { signal: options.signal } : {}),
        });
        return result.tools;
      }, options.signal);
    try {
      return await attempt();
    } catch (error) {
      if (options.signal?.aborted)
        throw abortReason(options.signal, `listing the tools of MCP server '${this.id}'`);
      if (used !== undefined && isConnectionLoss(error) && !this.#isAuthFailure(error)) {
        // Listing has no side effect: reconnect and list again.
        this.#drop(used);
        return await attempt().catch((e: unknown) => {
          throw this.#mapError(e, 'listing the tools', options.signal);
        });
      }
      // #mapError names the server itself ("… on MCP server 'x' timed out").
      throw this.#mapError(error, 'listing the tools', options.signal);
    }
  }

  /**
   * Calls a tool by its remote name. Resolves with the raw `CallToolResult` (an `isError` result is a
   * resolved value). Rejects with a `ToolError`: `timeout` (after the per-call, per-tool or server timeout,
   * reset by progress up to `maxTotalTimeoutMs`), `cancelled`, `unavailable` (server unreachable, or it
   * restarted during a call that is not safe to retry), `tool-error` (protocol error, e.g. unknown tool),
   * `unauthorized` / `forbidden` (OAuth, see {@link connect}). A call the server refused with 401 or 403
   * `insufficient_scope` is sent again once toolbus is authorized: it never ran.
   */
  callTool(
    name: string,
    args: Record<string, unknown>,
    options: McpCallOptions = {},
  ): Promise<CallToolResult> {
    const transport = this.#params.kind === 'stdio' ? 'pipe' : 'tcp';
    return traceMcpClientCall(this.id, name, transport, (meta) => this.#callTool(name, args, options, meta));
  }

  /** {@link callTool}; `meta` (the trace context, when tracing) goes in the request's `params._meta`. */
  async #callTool(
    name: string,
    args: Record<string, unknown>,
    options: McpCallOptions,
    meta: Record<string, string> | undefined,
  ): Promise<CallToolResult> {
    const display = options.displayName ?? name;
    const timeoutMs = Math.min(options.timeoutMs ?? toolTimeoutMs(this.#params, name), MAX_MCP_TIMEOUT_MS);
    const maxTotalTimeout = Math.max(this.#params.maxTotalTimeoutMs, timeoutMs);
    const { signal, onProgress } = options;
    let used: Client | undefined;
    // A request refused for want of authorization never ran on the server, so retrying it once
    // authorized is safe whatever the tool does.
    const attempt = (): Promise<CallToolResult> =>
      this.#authorized(async () => {
        const client = await this.#ensureClient(signal);
        used = client;
        // What the server asks during the call (elicitation, sampling, logs) goes to this call's caller.
        const result = await this.#serverRequests.run(options.clientFeatures, () =>
          client.callTool(
            meta === undefined ? { name, arguments: args } : { name, arguments: args, _meta: meta },
            {
              timeout: timeoutMs,
              resetTimeoutOnProgress: true,
              maxTotalTimeout,
              onprogress: (p) => onProgress?.(p),
              ...(signal ? { signal } : {}),
            },
          ),
        );
        return result as CallToolResult;
      }, signal);
    const what = `tool '${display}'`;
    try {
      return await attempt();
    } catch (error) {
      if (signal?.aborted) throw abortReason(signal, `${what} on MCP server '${this.id}'`, display);
      // No client means connecting failed (already 'unavailable'): the call never reached the server.
      if (used === undefined || !isConnectionLoss(error) || this.#isAuthFailure(error)) {
        throw this.#mapError(error, what, signal, timeoutMs, display);
      }
      this.#drop(used);
      if (!options.retryAfterReconnect) {
        // Reconnect in the background so the next call and list_changed work again.
        this.#ensureClient().catch(() => undefined);
        throw new ToolError(
          'unavailable',
          `${what}: MCP server '${this.id}' restarted or its session expired during the call; ` +
            'the call was not retried because the tool is not annotated read-only or idempotent',
          { cause: error, toolName: display },
        );
      }
      try {
        return await attempt();
      } catch (second) {
        if (signal?.aborted) throw abortReason(signal, `${what} on MCP server '${this.id}'`, display);
        throw this.#mapError(second, what, signal, timeoutMs, display);
      }
    }
  }

  /** Closes the connection and stops the child process. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#lifetime.abort(new ToolError('closed', `MCP server '${this.id}': the session is closed`));
    const pending = this.#connecting;
    this.#connecting = undefined;
    const client = this.#client ?? (await pending?.catch(() => undefined));
    this.#client = undefined;
    await client?.close().catch(() => undefined);
    this.#removeExitHook();
    this.#listeners.clear();
    this.#resolveClosed();
  }

  /** Alias of {@link close}. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  #mapError(
    error: unknown,
    what: string,
    signal?: AbortSignal,
    timeoutMs?: number,
    toolName?: string,
  ): ToolbusError {
    if (signal?.aborted) return abortReason(signal, `${what} on MCP server '${this.id}'`, toolName);
    if (error instanceof ToolError) return error;
    // An OAuth failure (the provider's own ToolbusError included) becomes this call's ToolError.
    const auth = this.#oauth ? oauthError(error, this.id, this.#oauth.loginHint) : undefined;
    if (auth) {
      return new ToolError(auth.code, `${what}: ${auth.message}`, {
        cause: error,
        ...(toolName ? { toolName } : {}),
      });
    }
    if (error instanceof ToolbusError) return error;
    if (
      error instanceof SdkError &&
      error.code === 'REQUEST_TIMEOUT' &&
      /maximum total timeout/i.test(error.message)
    ) {
      return new ToolError(
        'timeout',
        `${what} on MCP server '${this.id}' ran longer than its total cap of ${this.#params.maxTotalTimeoutMs} ms ` +
          '(progress resets the timeout only up to maxTotalTimeoutMs) and was cancelled',
        { cause: error, ...(toolName ? { toolName } : {}) },
      );
    }
    if (error instanceof SdkError && error.code === 'REQUEST_TIMEOUT') {
      return new ToolError(
        'timeout',
        `${what} on MCP server '${this.id}' timed out after ${timeoutMs ?? this.#params.timeoutMs} ms without progress and was cancelled`,
        { cause: error, ...(toolName ? { toolName } : {}) },
      );
    }
    if (isConnectionLoss(error)) {
      return new ToolError(
        'unavailable',
        `${what}: MCP server '${this.id}' is unavailable: ${String(error)}`,
        { cause: error, ...(toolName ? { toolName } : {}) },
      );
    }
    const message = error instanceof Error ? error.message : String(error);
    if (error instanceof ProtocolError) {
      return new ToolError('tool-error', `${what} on MCP server '${this.id}': ${message}`, {
        cause: error,
        ...(toolName ? { toolName } : {}),
      });
    }
    return new ToolError('tool-error', `${what} on MCP server '${this.id}' failed: ${message}`, {
      cause: error,
      ...(toolName ? { toolName } : {}),
    });
  }

  /**
   * Forgets `failed` after a connection loss, so the next use reconnects. A client that another call has
   * already replaced is left alone: concurrent failures of one dead connection cause one reconnect.
   */
  #drop(failed: Client | undefined): void {
    if (failed === undefined || this.#client !== failed) return;
    this.#client = undefined;
    failed.close().catch(() => undefined);
  }

  async #ensureClient(signal?: AbortSignal): Promise<Client> {
    if (this.#closed) throw new ToolError('closed', `MCP server '${this.id}': the session is closed`);
    if (signal?.aborted) throw abortReason(signal, `connecting to MCP server '${this.id}'`);
    if (this.#client) return this.#client;
    if (!this.#connecting) {
      const connecting = this.#open();
      this.#connecting = connecting;
      connecting.then(
        (client) => {
          if (this.#connecting === connecting) this.#connecting = undefined;
          if (this.#closed) {
            client.close().catch(() => undefined);
            return;
          }
          this.#client = client;
          this.#connectCount++;
          if (this.#connectCount > 1) void this.#refreshAfterReconnect(client);
        },
        () => {
          if (this.#connecting === connecting) this.#connecting = undefined;
        },
      );
    }
    const connecting = this.#connecting;
    if (!signal) return await connecting;
    // Waiting can be abandoned by this caller; the shared connect goes on for the others.
    let unwatch: (() => void) | undefined;
    try {
      return await Promise.race([
        connecting,
        new Promise<never>((_, reject) => {
          unwatch = onAbort(signal, () =>
            reject(abortReason(signal, `connecting to MCP server '${this.id}'`)),
          );
        }),
      ]);
    } finally {
      unwatch?.();
    }
  }

  async #refreshAfterReconnect(client: Client): Promise<void> {
    try {
      const { tools } = await client.listTools(undefined, {
        cacheMode: 'refresh',
        timeout: this.#params.timeoutMs,
      });
      this.#emit(tools);
    } catch {
      // The next call will surface the problem.
    }
  }

  #emit(tools: readonly McpToolDefinition[]): void {
    for (const listener of this.#listeners) {
      try {
        listener(tools);
      } catch {
        // A listener's failure is its own; the others still run.
      }
    }
  }

  #transport(): Transport {
    const p = this.#params;
    if (p.kind === 'stdio' && p.stdio) {
      const transport = new StdioClientTransport({
        command: p.stdio.command,
        args: p.stdio.args,
        env: { ...getDefaultEnvironment(), ...p.stdio.env },
        stderr: p.stdio.stderr,
        ...(p.stdio.cwd !== undefined ? { cwd: p.stdio.cwd } : {}),
      });
      // Nothing here reads a piped stderr: drain it, or a chatty server blocks once the pipe is full.
      if (p.stdio.stderr === 'pipe') transport.stderr?.on('data', () => undefined);
      return transport;
    }
    const url = p.url as URL;
    const requestInit: RequestInit = { headers: { ...p.headers } };
    const auth = this.#oauth ? { authProvider: this.#oauth } : {};
    if (p.kind === 'sse') {
      const headers = p.headers;
      return new SSEClientTransport(url, {
        requestInit,
        ...auth,
        eventSourceInit: {
          fetch: (input, init) =>
            fetch(input, { ...init, headers: { ...(init?.headers ?? {}), ...headers } }),
        },
      });
    }
    return new StreamableHTTPClientTransport(url, { requestInit, ...auth });
  }

  /** True when `error` is an OAuth failure of this session's server (not a lost connection). */
  #isAuthFailure(error: unknown): boolean {
    return this.#oauth !== undefined && isAuthFailure(error);
  }

  /**
   * Runs `op`; when it fails because the server wants an authorization a person must approve, has it
   * approved (see `McpOAuthProvider.recoverAuthorization`) and runs `op` again, at most
   * {@link MAX_AUTHORIZATIONS_PER_REQUEST} times. Only an auth failure is retried: the server refused
   * that request, so it never ran. A call that failed or timed out otherwise may have run, and must
   * not be sent again because another caller happens to be authorizing.
   */
  async #authorized<T>(op: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    for (let round = 0; ; round++) {
      try {
        return await op();
      } catch (error) {
        const oauth = this.#oauth;
        if (oauth === undefined || !isAuthFailure(error)) throw error;
        if (round >= MAX_AUTHORIZATIONS_PER_REQUEST) {
          oauth.discardPendingAuthorization();
          throw error;
        }
        const lifetime = this.#lifetime.signal;
        if (!(await oauth.recoverAuthorization(signal ? AbortSignal.any([signal, lifetime]) : lifetime))) {
          throw error;
        }
      }
    }
  }

  async #open(): Promise<Client> {
    try {
      return await this.#authorized(() => this.#openOnce());
    } catch (error) {
      const auth = this.#oauth ? oauthError(error, this.id, this.#oauth.loginHint) : undefined;
      if (auth) throw auth;
      throw new ToolError('unavailable', `MCP server '${this.id}' could not be reached: ${String(error)}`, {
        cause: error,
      });
    }
  }

  /** One attempt at connecting: rejects with the SDK's error, which {@link #open} maps. */
  async #openOnce(): Promise<Client> {
    const client = new Client(
      { name: this.#clientName, version: this.#clientVersion },
      {
        versionNegotiation: {
          mode: this.#params.protocol,
          // On stdio a silent probe means a 2025-only server; don't wait the whole connect timeout for it.
          probe: { timeoutMs: Math.min(this.#params.connectTimeoutMs, 10_000) },
        },
        capabilities: MCP_CLIENT_CAPABILITIES,
        listChanged: {
          tools: {
            onChanged: (error, tools) => {
              if (!error && tools && this.#client === client) this.#emit(tools);
            },
          },
        },
      },
    );
    answerServerRequests(client, this.#serverRequests, this.id);
    const transport = this.#transport();
    client.onclose = () => {
      if (this.#client === client) {
        this.#client = undefined;
        this.#removeExitHook();
      }
    };
    try {
      await client.connect(transport, { timeout: this.#params.connectTimeoutMs });
    } catch (error) {
      await client.close().catch(() => undefined);
      throw error;
    }
    if (transport instanceof StdioClientTransport) this.#installExitHook(transport.pid);
    return client;
  }

  /** Kills the stdio child if this process exits without closing the session. */
  #installExitHook(pid: number | null): void {
    this.#removeExitHook();
    this.#childPid = pid;
    if (pid !== null) trackStdioChild(pid);
  }

  #removeExitHook(): void {
    if (this.#childPid !== null) stdioChildren.delete(this.#childPid);
    this.#childPid = null;
  }

  /** The pid of the current stdio child, when there is one (for diagnostics and tests). */
  get childPid(): number | null {
    return this.#childPid;
  }
}

/**
 * Stdio children of open sessions, killed if this process exits without closing them. One `exit`
 * listener serves them all: one per session would trip Node's MaxListeners warning past ten servers.
 */
const stdioChildren = new Set<number>();
let exitListener: (() => void) | undefined;

function trackStdioChild(pid: number): void {
  stdioChildren.add(pid);
  if (exitListener) return;
  exitListener = () => {
    for (const child of stdioChildren) {
      try {
        process.kill(child, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
  };
  process.on('exit', exitListener);
}
