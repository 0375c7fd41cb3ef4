/**
 * @module The MCP server bridge: any toolbus tool set (function tools, bus tool services, HTTP tools, even
 * other MCP servers) served to any MCP client, over stdio or Streamable HTTP, in both protocol eras.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Readable, Writable } from 'node:stream';
import { NodeStreamableHTTPServerTransport, toNodeHandler, toWebRequest } from '@modelcontextprotocol/node';
import {
  ProtocolError,
  ProtocolErrorCode,
  createMcpHandler,
  isInitializeRequest,
  isLegacyRequest,
  type CallToolResult,
  type Server,
  type Tool as McpToolDefinition,
} from '@modelcontextprotocol/server';
import { StdioServerTransport, serveStdio } from '@modelcontextprotocol/server/stdio';
import { numberOption } from '../../errors/index.js';
import type { CallTasks } from '../../services/index.js';
import { DeferredTools, SEARCH_TOOLS_NAME } from '../../tools/index.js';
import type {
  DeferredToolsOptions,
  PromptProvider,
  ResourceProvider,
  Tool,
  ToolProgress,
  ToolProvider,
} from '../../tools/index.js';
import { McpBridgeServer, asToolCallAnswer, serveMcpTasks, type McpTaskStarter } from './mcp-tasks.js';
import { traceMcpServerCall } from './mcp-tracing.js';
import { partToContentBlock } from './mcp-result.js';
import { McpCallFeatures } from './mcp-client-features.js';
import { serveMcpContent } from './mcp-resources.js';
import { JsonRpcLineFilter } from './stdio-line-filter.js';
import {
  DEFAULT_MAX_EVENT_BYTES_PER_SESSION,
  DEFAULT_MAX_EVENTS_PER_SESSION,
  MemoryEventStore,
} from './memory-event-store.js';
import {
  DEFAULT_HTTP_REVISION,
  JsonRpcErrorCode,
  jsonRpcError,
  jsonRpcIdOf,
  postBodyProblem,
} from './json-rpc-checks.js';

/** A tool set the bridge can serve; `onChange` (as on `LiveToolSet`) drives `tools/list_changed`. */
export type McpBridgeTools = ToolProvider & {
  /** Registers a change listener; may return an unsubscribe function. */
  onChange?(listener: () => void): unknown;
};

/** Options of {@link createMcpServer}. */
export interface McpBridgeOptions {
  /** The server name MCP clients see. @default 'toolbus' */
  name?: string;
  /** @default '0.1.0' */
  version?: string;
  /** Instructions sent to clients at connect. @default none */
  instructions?: string;
  /** Timeout of each tool call made through the bridge. @default the tool set's default (60 s) */
  timeoutMs?: number;
  /**
   * For clients with small context windows: `tools/list` shows a `search_tools` tool (and the
   * `alwaysLoaded` ones) instead of every tool. The tools a search finds join the session's list (a
   * `tools/list_changed` notification says so), and the result holds their argument schemas, so a
   * client can call them at once. Any tool can be called by name. @default undefined (the full list)
   */
  toolSearch?: DeferredToolsOptions;
  /**
   * Serves tool calls as MCP tasks (the 2025-11-25 "tasks" utility) to 2025-era clients: the server
   * advertises the `tasks` capability (task-augmented `tools/call`, `tasks/list`, `tasks/cancel`), lists
   * every tool with `execution: { taskSupport: 'optional' }` (`search_tools`: `'forbidden'`), and a
   * `tools/call` carrying `params.task` starts the call here (`tasks.start`, through the same tools,
   * caller and timeout as a normal call) and answers a `CreateTaskResult` at once. `tasks/get` tells its
   * state, `tasks/result` waits until it ends and answers what the `tools/call` would have, and
   * `tasks/cancel` stops it; `notifications/tasks/status` says when it ended. A task is visible only to
   * whoever started it: the principal the HTTP caller named (`McpHttpRequest.principal`, at the same
   * endpoint), else the session (or stdio connection) that started it; to anyone else its id is
   * unknown. A task's `ttl` is the client's ask within 1 s to 24 h (1 h by default); the bridge
   * remembers the 10,000 most recent tasks. 2026-07-28 requests are served as before (no tasks).
   * @default undefined (no tasks: `params.task` is ignored and calls answer when done)
   */
  tasks?: CallTasks;
  /**
   * Resources served beside the tools (`resources/list`, `resources/templates/list`, `resources/read`,
   * `resources/subscribe`), e.g. a `ResourceSet` or `registry.resources`. The server then declares the
   * `resources` capability (with `subscribe` and `listChanged`) and `completions` (template variables).
   * @default none (no resources capability)
   */
  resources?: ResourceProvider;
  /**
   * Prompts served beside the tools (`prompts/list`, `prompts/get`), e.g. a `PromptSet` or
   * `registry.prompts`. The server then declares `prompts` (with `listChanged`) and `completions`
   * (prompt arguments). @default none (no prompts capability)
   */
  prompts?: PromptProvider;
  /**
   * Which prompts are shown, by name (e.g. a caller's tool policy: a config prompt is a `prompt` tool);
   * the others are unknown to the client. @default all
   */
  promptFilter?: (name: string) => boolean;
  /**
   * Which resources and resource templates are shown and may be read, by name (e.g. a caller's tool
   * policy); the others, and the URIs only they have, are unknown to the client. @default all
   */
  resourceFilter?: (name: string) => boolean;
}

/** Options of {@link serveMcpStdio}. */
export interface ServeMcpStdioOptions extends McpBridgeOptions {
  /** @default process.stdin */
  stdin?: Readable;
  /** @default process.stdout */
  stdout?: Writable;
  /** Out-of-band errors. @default ignored */
  onError?: (error: Error) => void;
}

/** Options of {@link createMcpHttpHandler}. */
export interface McpHttpHandlerOptions extends McpBridgeOptions {
  /**
   * Most 2025-era sessions open at once, over all clients (sessions still initializing count). At the
   * cap a new `initialize` gets HTTP 503; live sessions are never evicted to make room. A positive
   * integer, or `Infinity` for no cap.
   * @default 1000
   */
  maxSessions?: number;
  /**
   * Most 2025-era sessions open at once for one client (see {@link McpHttpRequest.client}); sessions
   * still initializing count. At the cap a new `initialize` gets HTTP 503. A positive integer, or
   * `Infinity` for no cap.
   * @default 32
   */
  maxSessionsPerClient?: number;
  /**
   * How long a 2025-era session may stay idle (no request in flight, no GET stream open) before it is
   * closed and forgotten; a later request with its id gets 404 "Session not found". Counted from the end
   * of its last request. Positive milliseconds, or `Infinity` to keep idle sessions until they are
   * deleted.
   * @default 600_000 (10 minutes)
   */
  sessionIdleMs?: number;
  /**
   * Lets 2025-era clients resume an SSE stream that broke (SEP-1699); see {@link McpResumabilityOptions}.
   * @default undefined (off: events carry no ids and nothing is kept)
   */
  resumability?: McpResumabilityOptions;
  /** Out-of-band errors. @default ignored */
  onError?: (error: Error) => void;
}

/**
 * Resumable streams for 2025-era sessions (SEP-1699). Each session keeps its most recent events, each
 * SSE event gets an id, every POST stream opens with a priming event that tells the client how long to
 * wait before it reconnects (`retry`), and a `GET` with `Last-Event-ID` replays what the client missed
 * and carries the rest. A session's requests are served at the revision it negotiated, whatever their
 * `MCP-Protocol-Version` header says (a priming event is sent from 2025-11-25 on).
 */
export interface McpResumabilityOptions {
  /** The `retry` of each priming event, in ms. @default 1000 */
  retryMs?: number;
  /** Events kept per session; a client that missed more resumes from the oldest kept. @default 1000 */
  maxEventsPerSession?: number;
  /**
   * Bytes of events (their JSON) kept per session, whatever their count: the oldest go first (the
   * newest is always kept). @default DEFAULT_MAX_EVENT_BYTES_PER_SESSION (16 MiB)
   */
  maxBytesPerSession?: number;
  /**
   * Closes the SSE stream of a tool call still running after this long, so a long call holds no
   * connection: the client reconnects (after `retryMs`) and gets the call's later messages and its
   * result on the resumed stream. @default undefined (a call's stream stays open until it answers)
   */
  closeStreamsAfterMs?: number;
}

/** What the caller of an {@link McpHttpHandler} already knows about a request. */
export interface McpHttpRequest {
  /**
   * The POST body, already read and parsed by the caller (with its own size and depth limits): the
   * handler then never reads the request stream. Ignored for other methods.
   * @default undefined: the handler reads and parses the body itself (at most 4 MiB)
   */
  parsedBody?: unknown;
  /**
   * The identity the per-client session cap (`maxSessionsPerClient`) counts against, e.g. the
   * authenticated principal plus the remote address.
   * @default the request's remote address, or 'unknown'
   */
  client?: string;
  /**
   * Who the caller authenticated as. A session opened by one principal answers no request of another
   * (403), so a leaked session id is no way around the caller's policy. @default none (not checked)
   */
  principal?: string;
  /**
   * The tools this request may list and call (the caller's view of them, e.g. its tool policy applied);
   * a session keeps the view of the request that opened it. @default the handler's own `tools`
   */
  tools?: McpBridgeTools;
  /**
   * Which endpoint the request came to (e.g. a profile's `/mcp/<id>`): a session opened at one
   * answers no request made at another (403). @default none (not checked)
   */
  endpoint?: string;
  /**
   * Serve `search_tools` instead of the full list for this request (see `McpBridgeOptions.toolSearch`),
   * or `false` for the full list. @default the handler's option
   */
  toolSearch?: DeferredToolsOptions | false;
  /**
   * Which prompts this request may list, get and complete (e.g. the caller's tool policy); a session
   * keeps the filter of the request that opened it. @default the handler's `promptFilter` (all)
   */
  promptFilter?: (name: string) => boolean;
  /**
   * Which resources this request may list, read, subscribe to and complete (e.g. the caller's tool
   * policy); a session keeps the filter of the request that opened it. @default the handler's
   * `resourceFilter` (all)
   */
  resourceFilter?: (name: string) => boolean;
  /** The end user the request is for, given to the resource provider's reads. @default none */
  user?: string;
}

/** A Node `(req, res)` handler serving MCP over Streamable HTTP, for the gateway's `/mcp` path. */
export interface McpHttpHandler {
  (req: IncomingMessage, res: ServerResponse, request?: McpHttpRequest): Promise<void>;
  /** The same as calling the handler. */
  handle(req: IncomingMessage, res: ServerResponse, request?: McpHttpRequest): Promise<void>;
  /** Ends every session and stream. Idempotent. */
  close(): Promise<void>;
}

/** A running stdio bridge. */
export interface McpStdioBridge {
  /** Ends the connection. Idempotent. */
  close(): Promise<void>;
}

/** MCP definitions by tool list: a client listing 10,000 tools again costs one lookup. */
const definitions = new WeakMap<readonly Tool[], McpToolDefinition[]>();
/** The same, with each tool's `execution.taskSupport` (for servers that serve tasks). */
const taskDefinitions = new WeakMap<readonly Tool[], McpToolDefinition[]>();

function toMcpTools(tools: readonly Tool[], withTasks = false): McpToolDefinition[] {
  const cache = withTasks ? taskDefinitions : definitions;
  let defs = cache.get(tools);
  if (defs === undefined) {
    defs = withTasks
      ? toMcpTools(tools).map((def) => ({
          ...def,
          // search_tools changes the session's own list: it answers in the call, never as a task.
          execution: { taskSupport: def.name === SEARCH_TOOLS_NAME ? 'forbidden' : 'optional' },
        }))
      : tools.map(toMcpTool);
    if (Object.isFrozen(tools)) cache.set(tools, defs);
  }
  return defs;
}

function toMcpTool(tool: Tool): McpToolDefinition {
  const def: McpToolDefinition = {
    name: tool.name,
    description: tool.description,
    // The source's dialect, which the model-facing parameters leave out: a draft-07 schema stays draft-07.
    inputSchema: (tool.schemaDialect === undefined
      ? tool.schema.parameters
      : { $schema: tool.schemaDialect, ...tool.schema.parameters }) as McpToolDefinition['inputSchema'],
  };
  if (tool.outputSchema !== undefined)
    def.outputSchema = tool.outputSchema as McpToolDefinition['outputSchema'];
  const a = tool.annotations;
  if (a) {
    def.annotations = {
      ...(a.readOnly !== undefined ? { readOnlyHint: a.readOnly } : {}),
      ...(a.idempotent !== undefined ? { idempotentHint: a.idempotent } : {}),
      ...(a.destructive !== undefined ? { destructiveHint: a.destructive } : {}),
    };
  }
  return def;
}

function subscribe(tools: McpBridgeTools, listener: () => void): () => void {
  const handle = tools.onChange?.(listener);
  return () => {
    if (typeof handle === 'function') (handle as () => void)();
    else if (handle && typeof (handle as { unsubscribe?: unknown }).unsubscribe === 'function') {
      (handle as { unsubscribe: () => void }).unsubscribe();
    }
  };
}

/** A fresh owner of the tasks of one session or connection (see `McpBridgeOptions.tasks`). */
function connectionOwner(): string {
  return `connection:${randomUUID()}`;
}

/** The owner of the tasks of a principal at an endpoint (see `McpBridgeOptions.tasks`). */
function principalOwner(principal: string, endpoint: string | undefined): string {
  return `principal:${JSON.stringify([principal, endpoint ?? null])}`;
}

/** What one server of {@link buildServer} serves for, besides the tools and options. */
interface ServedFor {
  /** Send list_changed (and resources/updated) notifications: a session or connection, not one request. */
  followChanges: boolean;
  /** Labels its tool calls (`ToolCallOptions.caller`): `mcp:stdio`, or `mcp:` and the HTTP client. */
  caller: string;
  /** Whom the tasks started here belong to; with `options.tasks`, the server serves MCP tasks. */
  taskOwner: string | undefined;
  /** The end user of its resource reads. */
  user?: string | undefined;
  /** Closes the SSE stream of a call still running after this long (see `McpResumabilityOptions`). */
  closeStreamsAfterMs?: number | undefined;
}

/** The server for one connection, session or request. */
function buildServer(tools: McpBridgeTools, options: McpBridgeOptions, served: ServedFor): McpBridgeServer {
  const { followChanges, caller, taskOwner, user } = served;
  const server = new McpBridgeServer(
    { name: options.name ?? 'toolbus', version: options.version ?? '0.1.0' },
    {
      // logging: tools' ctx.log messages, filtered by the level each client sets (logging/setLevel).
      capabilities: { tools: { listChanged: true }, logging: {} },
      ...(options.instructions !== undefined ? { instructions: options.instructions } : {}),
    },
  );
  // In search mode the session sees search_tools and what its searches found; calls go anywhere.
  const deferred = options.toolSearch
    ? new DeferredTools(tools, { withParameters: true, ...options.toolSearch })
    : undefined;
  const shown = deferred?.forRun();
  const calls = deferred?.calls ?? tools;
  const tasks: McpTaskStarter | undefined =
    options.tasks !== undefined && taskOwner !== undefined
      ? serveMcpTasks(server, {
          tasks: options.tasks,
          owner: taskOwner,
          calls,
          callOptions: {
            caller,
            ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
          },
        })
      : undefined;
  serveMcpContent(server, {
    resources: options.resources,
    prompts: options.prompts,
    promptFilter: options.promptFilter,
    resourceFilter: options.resourceFilter,
    caller,
    user,
    followChanges,
  });
  server.setRequestHandler('tools/list', () => ({
    tools: toMcpTools(shown?.visible() ?? tools.list(), server.servesTasks && server.legacyEra),
  }));
  server.setRequestHandler('tools/call', (request, ctx): Promise<CallToolResult> => {
    const { name, _meta: meta } = request.params;
    // In a SERVER span when tracing is on, continuing the caller's trace from `params._meta`.
    return traceMcpServerCall(name, String(ctx.mcpReq.id), meta, async () => {
      // A task-augmented call (2025-era, with `options.tasks`) of a known tool starts a task; an
      // unknown one is answered as a normal call is (-32602).
      if (tasks !== undefined && server.isTaskCall(request.params) && calls.get(name) !== undefined) {
        if (name === SEARCH_TOOLS_NAME) {
          throw new ProtocolError(
            ProtocolErrorCode.MethodNotFound,
            `${SEARCH_TOOLS_NAME} cannot run as a task (its execution.taskSupport is 'forbidden'); call it without params.task`,
          );
        }
        return asToolCallAnswer(await tasks.start(name, request.params.arguments ?? {}, request.params));
      }
      // A client that sent a progress token hears the tool's ctx.progress reports as MCP notifications.
      const progressToken = ctx.mcpReq._meta?.progressToken;
      // Progress and log notifications are sent before the result: a client drops a call's handlers
      // once its response arrives.
      const features = new McpCallFeatures(server, ctx, name);
      // A long call's stream is closed; the client resumes it and gets the result there (SEP-1699).
      const closeSse = ctx.http?.closeSSE;
      const closer =
        served.closeStreamsAfterMs !== undefined && closeSse !== undefined
          ? setTimeout(closeSse, served.closeStreamsAfterMs)
          : undefined;
      const calling = calls.call(name, request.params.arguments ?? {}, {
        signal: ctx.mcpReq.signal,
        callId: String(ctx.mcpReq.id),
        caller,
        clientFeatures: features,
        ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
        ...(progressToken !== undefined
          ? {
              onProgress: (update: ToolProgress) => {
                features.track(
                  ctx.mcpReq.notify({
                    method: 'notifications/progress',
                    params: {
                      progressToken,
                      progress: update.progress,
                      ...(update.total !== undefined ? { total: update.total } : {}),
                      ...(update.message !== undefined ? { message: update.message } : {}),
                    },
                  }),
                );
              },
            }
          : {}),
      });
      // Only a call with a stream to close pays for another promise.
      const result = await (closer === undefined ? calling : calling.finally(() => clearTimeout(closer)));
      const sent = features.drained();
      if (sent !== undefined) await sent;
      // MCP answers an unknown tool with a protocol error (-32602), in the tool set's one message.
      if (result.error?.code === 'unknown-tool') {
        throw new ProtocolError(ProtocolErrorCode.InvalidParams, result.content);
      }
      if (name === SEARCH_TOOLS_NAME && shown?.observe(result) && followChanges) {
        server.sendToolListChanged().catch(() => undefined);
      }
      return {
        // Parts (images, audio, resources) as MCP content; any other result as its text.
        content: result.parts?.map(partToContentBlock) ?? [{ type: 'text', text: result.content }],
        // A result that matched the tool's output schema, also as structuredContent (its text is its JSON).
        ...(result.structured !== undefined ? { structuredContent: result.structured } : {}),
        ...(result.isError ? { isError: true } : {}),
      };
    });
  });
  if (followChanges) {
    server.whenClosed(
      subscribe(tools, () => {
        server.sendToolListChanged().catch(() => undefined);
      }),
    );
  }
  return server;
}

/**
 * An MCP server (the SDK's low-level `Server`) exposing `tools`: `tools/list` from `tools.list()`,
 * `tools/call` through `tools.call` (errors and bad arguments come back as `isError` results; the client's
 * cancel aborts the tool's signal). Sends `notifications/tools/list_changed` when `tools.onChange` fires.
 * A tool's `ctx.log` reaches the client as `notifications/message` (the `logging` capability, filtered by
 * `logging/setLevel`), and `ctx.elicit` / `ctx.sample` ask a 2025-era client that declared elicitation /
 * sampling. With `options.resources` and `options.prompts` it serves those too, with completion.
 * Connect it to any transport.
 *
 * @example
 * ```ts
 * const server = createMcpServer(toolSet);
 * await server.connect(new StdioServerTransport());
 * ```
 */
export function createMcpServer(tools: McpBridgeTools, options: McpBridgeOptions = {}): Server {
  return buildServer(tools, options, { followChanges: true, caller: 'mcp', taskOwner: connectionOwner() });
}

/**
 * Serves `tools` over this process's stdio (both protocol eras), as `toolbus mcp serve` does.
 *
 * @example
 * ```ts
 * const bridge = serveMcpStdio(registry.tools);
 * process.on('SIGTERM', () => void bridge.close());
 * ```
 */
export function serveMcpStdio(tools: McpBridgeTools, options: ServeMcpStdioOptions = {}): McpStdioBridge {
  const stdin = options.stdin ?? process.stdin;
  const stdout = options.stdout ?? process.stdout;
  // A line that is not JSON, or not JSON-RPC, gets its error reply here and never reaches the SDK (which
  // would drop it silently).
  const lines = new JsonRpcLineFilter((reply) => {
    if (stdout.writable) stdout.write(reply);
  });
  // `pipe` forwards neither an error of stdin (unheard, it would crash the process) nor a close without
  // an end (the transport would stay open): both reach the filter, whose error and close the transport
  // hears (onError, then closing). Unlike `pipeline`, closing the bridge leaves stdin itself alone.
  const stdinFailed = (error: Error): void => void lines.destroy(error);
  const stdinClosed = (): void => {
    if (!lines.writableEnded && !lines.destroyed) lines.end();
  };
  stdin.on('error', stdinFailed);
  stdin.on('close', stdinClosed);
  stdin.pipe(lines);
  const transport = new StdioServerTransport(lines, stdout);
  const build = (): McpBridgeServer =>
    buildServer(tools, options, { followChanges: true, caller: 'mcp:stdio', taskOwner: connectionOwner() });
  const handle = serveStdio(build, {
    transport,
    ...(options.onError ? { onerror: options.onError } : {}),
  });
  let closing: Promise<void> | undefined;
  return {
    close: () =>
      (closing ??= handle.close().finally(() => {
        stdin.off('error', stdinFailed);
        stdin.off('close', stdinClosed);
        stdin.unpipe(lines);
        lines.destroy();
      })),
  };
}

/** The resumability options with their defaults, checked. */
function resolveResumability(given: McpResumabilityOptions): Required<
  Omit<McpResumabilityOptions, 'closeStreamsAfterMs'>
> & {
  closeStreamsAfterMs: number | undefined;
} {
  const where = 'createMcpHttpHandler resumability';
  return {
    retryMs: numberOption(where, 'retryMs', given.retryMs, 1000, { integer: true, zero: true }),
    maxEventsPerSession: numberOption(
      where,
      'maxEventsPerSession',
      given.maxEventsPerSession,
      DEFAULT_MAX_EVENTS_PER_SESSION,
      { integer: true, min: 1 },
    ),
    maxBytesPerSession: numberOption(
      where,
      'maxBytesPerSession',
      given.maxBytesPerSession,
      DEFAULT_MAX_EVENT_BYTES_PER_SESSION,
      { integer: true, min: 1 },
    ),
    closeStreamsAfterMs:
      given.closeStreamsAfterMs === undefined
        ? undefined
        : numberOption(where, 'closeStreamsAfterMs', given.closeStreamsAfterMs, 0, { integer: true, min: 1 }),
  };
}

/** Idle time after which a 2025-era session is closed: 10 minutes. */
const DEFAULT_SESSION_IDLE_MS = 600_000;

/** One 2025-era session, from the moment its `initialize` reserved a slot under the caps. */
interface SessionSlot {
  readonly client: string;
  /** The principal that opened it, when the caller said. */
  readonly principal: string | undefined;
  /** The endpoint it was opened at, when the caller said. */
  readonly endpoint: string | undefined;
  readonly transport: NodeStreamableHTTPServerTransport;
  /** The session's server, once made: its negotiated protocol revision decides whether it batches. */
  server: McpBridgeServer | undefined;
  /** Responses of the session still open: requests in flight and GET (SSE) streams. */
  open: number;
  /** `Date.now()` when the last open response ended. */
  idleSince: number;
}

/** Answers an HTTP request with `status` and a JSON-RPC error response. */
function replyError(
  res: ServerResponse,
  status: number,
  code: number,
  message: string,
  id: string | number | null = null,
): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(jsonRpcError(code, message, id)));
}

/** `600000` → `'10 minutes'`, `1500` → `'1.5 s'`, `200` → `'200 ms'`. */
function formatDuration(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${Number((ms / 1000).toFixed(1))} s`;
  const minutes = Number((ms / 60_000).toFixed(1));
  return `${minutes} minute${minutes === 1 ? '' : 's'}`;
}

/** A client identity fit for an error message: one line, at most 100 characters. */
function quoteClient(client: string): string {
  const line = client.replace(/[\r\n]+/g, ' ');
  return `'${line.length > 100 ? `${line.slice(0, 100)}…` : line}'`;
}

/**
 * A Node `(req, res, request?)` handler serving `tools` over Streamable HTTP: 2026-07-28 requests
 * statelessly (`tools/list_changed` on `subscriptions/listen` streams), 2025-era clients with sessions
 * (list changes pushed on their GET stream). Mount it at the gateway's `/mcp` path.
 *
 * 2025-era sessions are bounded: at most `maxSessionsPerClient` per client and `maxSessions` in all (a
 * new `initialize` beyond either gets HTTP 503, and no live session is evicted for it), and a session
 * idle for `sessionIdleMs` is closed. A caller that already parsed the POST body passes it as
 * `request.parsedBody`, and the stream is not read again.
 *
 * @example
 * ```ts
 * const mcp = createMcpHttpHandler(registry.tools, { maxSessionsPerClient: 8 });
 * http.createServer((req, res) => void (req.url === '/mcp' ? mcp(req, res) : other(req, res)));
 * ```
 */
export function createMcpHttpHandler(
  tools: McpBridgeTools,
  options: McpHttpHandlerOptions = {},
): McpHttpHandler {
  const cap = { integer: true, infinity: true };
  const maxSessions = numberOption('createMcpHttpHandler', 'maxSessions', options.maxSessions, 1000, cap);
  const maxSessionsPerClient = numberOption(
    'createMcpHttpHandler',
    'maxSessionsPerClient',
    options.maxSessionsPerClient,
    32,
    cap,
  );
  const sessionIdleMs = numberOption(
    'createMcpHttpHandler',
    'sessionIdleMs',
    options.sessionIdleMs,
    DEFAULT_SESSION_IDLE_MS,
    { infinity: true },
  );
  const onError = options.onError;
  const resumability =
    options.resumability === undefined ? undefined : resolveResumability(options.resumability);
  /** The bridge options of one request: the handler's, with the request's search mode. */
  const requestOptions = (request: McpHttpRequest | undefined): McpBridgeOptions => {
    if (
      request?.toolSearch === undefined &&
      request?.promptFilter === undefined &&
      request?.resourceFilter === undefined
    ) {
      return options;
    }
    const resolved: McpBridgeOptions = { ...options };
    if (request.toolSearch !== undefined) {
      resolved.toolSearch = request.toolSearch === false ? undefined : request.toolSearch;
    }
    if (request.promptFilter !== undefined) resolved.promptFilter = request.promptFilter;
    if (request.resourceFilter !== undefined) resolved.resourceFilter = request.resourceFilter;
    return resolved;
  };
  // The client of the request being served, for the stateless servers the SDK makes per request.
  const clients = new AsyncLocalStorage<{
    client: string;
    tools: McpBridgeTools;
    options: McpBridgeOptions;
    user: string | undefined;
  }>();
  const modern = createMcpHandler(
    () => {
      const served = clients.getStore();
      // Stateless 2026-07-28 requests: no tasks (that revision has no 2025-era task methods).
      return buildServer(served?.tools ?? tools, served?.options ?? options, {
        followChanges: false,
        caller: `mcp:${served?.client ?? 'unknown'}`,
        taskOwner: undefined,
        user: served?.user,
      });
    },
    {
      ...(onError ? { onerror: onError } : {}),
    },
  );
  const modernNode = toNodeHandler(modern, onError ? { onerror: onError } : {});
  const unsubscribeTools = subscribe(tools, () => modern.notify.toolsChanged());
  const unsubscribeResources = options.resources?.onChange?.((change) => {
    if (change.listChanged) modern.notify.resourcesChanged();
    for (const uri of change.updated) modern.notify.resourceUpdated(uri);
  });
  const unsubscribePrompts = options.prompts?.onChange?.(() => modern.notify.promptsChanged());
  const unsubscribe = (): void => {
    unsubscribeTools();
    unsubscribeResources?.();
    unsubscribePrompts?.();
  };
  /** Initialized sessions by id. */
  const sessions = new Map<string, SessionSlot>();
  /** Every slot counted against the caps: initialized sessions and those still initializing. */
  const slots = new Set<SessionSlot>();
  const slotsPerClient = new Map<string, number>();
  let closed = false;

  /**
   * The protocol revision a request speaks, for the batch rule: its session's, else its
   * `MCP-Protocol-Version` header's, else its own `initialize`'s, else 2025-03-26 (the transport's rule
   * for a request without the header).
   */
  const revisionOf = (req: IncomingMessage, sessionId: string | undefined, body: unknown): string => {
    const negotiated = sessionId !== undefined ? sessions.get(sessionId)?.server?.protocolVersion : undefined;
    if (negotiated !== undefined) return negotiated;
    const header = req.headers['mcp-protocol-version'];
    if (typeof header === 'string' && header !== '') return header;
    const asked = isInitializeRequest(body) ? body.params.protocolVersion : undefined;
    return typeof asked === 'string' ? asked : DEFAULT_HTTP_REVISION;
  };

  /** Why a new session of `client` is refused, or undefined when a slot is free. */
  const capReached = (client: string): string | undefined => {
    const remedy =
      'close a session with DELETE /mcp (its Mcp-Session-Id header) or ' +
      (Number.isFinite(sessionIdleMs)
        ? `wait until idle sessions expire after ${formatDuration(sessionIdleMs)}`
        : 'wait until one is closed');
    const ofClient = slotsPerClient.get(client) ?? 0;
    if (ofClient >= maxSessionsPerClient) {
      return (
        `MCP session limit reached: client ${quoteClient(client)} already has ${ofClient} open sessions, ` +
        `the most allowed per client (option 'maxSessionsPerClient': ${maxSessionsPerClient}); ${remedy}`
      );
    }
    if (slots.size >= maxSessions) {
      return (
        `MCP session limit reached: the endpoint already has ${slots.size} open sessions, the most ` +
        `allowed (option 'maxSessions': ${maxSessions}); ${remedy}`
      );
    }
    return undefined;
  };

  const reserve = (slot: SessionSlot): void => {
    slots.add(slot);
    slotsPerClient.set(slot.client, (slotsPerClient.get(slot.client) ?? 0) + 1);
  };

  /** Frees the slot and forgets the session. Idempotent; does not close the transport. */
  const release = (slot: SessionSlot): void => {
    if (!slots.delete(slot)) return;
    const left = (slotsPerClient.get(slot.client) ?? 1) - 1;
    if (left > 0) slotsPerClient.set(slot.client, left);
    else slotsPerClient.delete(slot.client);
    const id = slot.transport.sessionId;
    if (id !== undefined && sessions.get(id) === slot) sessions.delete(id);
  };

  /** Counts `res` as open on `slot` until it closes; returns the (idempotent) end of it. */
  const track = (slot: SessionSlot, res: ServerResponse): (() => void) => {
    slot.open += 1;
    let ended = false;
    const end = (): void => {
      if (ended) return;
      ended = true;
      slot.open -= 1;
      slot.idleSince = Date.now();
    };
    res.once('close', end);
    return end;
  };

  const sweep = (): void => {
    const now = Date.now();
    for (const slot of sessions.values()) {
      if (slot.open === 0 && now - slot.idleSince >= sessionIdleMs) {
        release(slot);
        slot.transport.close().catch(() => undefined);
      }
    }
  };
  const sweeper = Number.isFinite(sessionIdleMs)
    ? setInterval(sweep, Math.max(50, Math.min(sessionIdleMs / 2, 60_000)))
    : undefined;
  sweeper?.unref();

  // Never rejects: a `void handler(req, res)` mount must not turn an oversize body or a client that
  // hung up mid-request into an unhandled rejection.
  const handle = async (
    req: IncomingMessage,
    res: ServerResponse,
    request?: McpHttpRequest,
  ): Promise<void> => {
    try {
      await route(req, res, request);
    } catch (error) {
      const err = error instanceof Error ? error : new Error(String(error));
      const tooLarge = err.name === 'RequestBodyTooLargeError';
      if (!tooLarge) onError?.(err);
      if (res.headersSent) {
        if (!res.writableEnded) res.end();
      } else if (tooLarge) {
        replyError(res, 413, -32000, err.message);
      } else {
        replyError(res, 500, -32603, 'internal error of the MCP endpoint');
      }
    }
  };

  const route = async (
    req: IncomingMessage,
    res: ServerResponse,
    request: McpHttpRequest | undefined,
  ): Promise<void> => {
    if (closed) {
      return replyError(res, 503, -32000, 'MCP endpoint closed');
    }
    const sessionHeader = req.headers['mcp-session-id'];
    const sessionId = typeof sessionHeader === 'string' ? sessionHeader : undefined;
    let parsedBody: unknown;
    let legacy = sessionId !== undefined;
    if (req.method === 'POST') {
      if (request?.parsedBody !== undefined) {
        parsedBody = request.parsedBody;
        // With a parsed body, toWebRequest serializes it and leaves the stream alone.
        if (!legacy) legacy = await isLegacyRequest(await toWebRequest(req, parsedBody), parsedBody);
      } else {
        const web = await toWebRequest(req);
        const text = await web.clone().text();
        try {
          parsedBody = text ? JSON.parse(text) : undefined;
        } catch {
          return replyError(res, 400, JsonRpcErrorCode.ParseError, 'Parse error: the body is not valid JSON');
        }
        if (!legacy && parsedBody !== undefined) legacy = await isLegacyRequest(web, parsedBody);
      }
      // Valid JSON that is no JSON-RPC message is an invalid request (the SDK would call it a parse error),
      // and so is a batch on a revision that removed batching.
      const problem = postBodyProblem(parsedBody, revisionOf(req, sessionId, parsedBody));
      if (problem !== undefined) {
        return replyError(
          res,
          400,
          JsonRpcErrorCode.InvalidRequest,
          `Invalid Request: ${problem}`,
          jsonRpcIdOf(parsedBody),
        );
      }
    }
    if (sessionId !== undefined) {
      const slot = sessions.get(sessionId);
      if (!slot) return replyError(res, 404, -32001, `Session not found: '${sessionId}'`);
      if (slot.principal !== undefined && slot.principal !== request?.principal) {
        return replyError(
          res,
          403,
          -32001,
          'this MCP session was opened by another principal; open your own',
        );
      }
      if (slot.endpoint !== request?.endpoint) {
        return replyError(
          res,
          403,
          -32001,
          `this MCP session was opened at ${slot.endpoint ?? 'another endpoint'}; open one at this endpoint`,
        );
      }
      // A resumable session speaks the revision it negotiated: the SDK reads the header to decide whether
      // a stream may open with a priming event (2025-11-25 on), and some clients send an older one.
      const negotiated = slot.server?.protocolVersion;
      if (resumability !== undefined && negotiated !== undefined)
        req.headers['mcp-protocol-version'] = negotiated;
      const end = track(slot, res);
      try {
        await slot.transport.handleRequest(req, res, parsedBody);
      } finally {
        if (res.writableFinished) end();
      }
      return;
    }
    if (legacy && isInitializeRequest(parsedBody)) {
      const client = request?.client ?? req.socket.remoteAddress ?? 'unknown';
      const refused = capReached(client);
      if (refused !== undefined) return replyError(res, 503, -32000, refused);
      const transport: NodeStreamableHTTPServerTransport = new NodeStreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => {
          if (slots.has(slot)) sessions.set(id, slot);
        },
        ...(resumability !== undefined
          ? {
              eventStore: new MemoryEventStore(
                resumability.maxEventsPerSession,
                resumability.maxBytesPerSession,
              ),
              retryInterval: resumability.retryMs,
            }
          : {}),
      });
      const slot: SessionSlot = {
        client,
        principal: request?.principal,
        endpoint: request?.endpoint,
        transport,
        server: undefined,
        open: 0,
        idleSince: Date.now(),
      };
      reserve(slot);
      transport.onclose = () => release(slot);
      const end = track(slot, res);
      try {
        const taskOwner =
          request?.principal !== undefined
            ? principalOwner(request.principal, request.endpoint)
            : connectionOwner();
        slot.server = buildServer(request?.tools ?? tools, requestOptions(request), {
          followChanges: true,
          caller: `mcp:${client}`,
          taskOwner,
          user: request?.user,
          closeStreamsAfterMs: resumability?.closeStreamsAfterMs,
        });
        await slot.server.connect(transport);
        await transport.handleRequest(req, res, parsedBody);
      } finally {
        if (res.writableFinished) end();
        const id = transport.sessionId;
        if (id === undefined || sessions.get(id) !== slot) {
          // Initialization failed (or the endpoint closed meanwhile): free the slot.
          release(slot);
          transport.close().catch(() => undefined);
        }
      }
      return;
    }
    const client = request?.client ?? req.socket.remoteAddress ?? 'unknown';
    await clients.run(
      { client, tools: request?.tools ?? tools, options: requestOptions(request), user: request?.user },
      () => modernNode(req, res, parsedBody),
    );
  };

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> =>
    (closing ??= (async () => {
      closed = true;
      if (sweeper !== undefined) clearInterval(sweeper);
      unsubscribe();
      const open = [...slots];
      for (const slot of open) release(slot);
      await Promise.all(open.map((slot) => slot.transport.close().catch(() => undefined)));
      await modern.close();
    })());

  const handler = ((req: IncomingMessage, res: ServerResponse, request?: McpHttpRequest) =>
    handle(req, res, request)) as McpHttpHandler;
  handler.handle = handle;
  handler.close = close;
  return handler;
}
