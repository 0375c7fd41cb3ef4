/**
 * @module The HTTP gateway: a small JSON API over the live tool set, the config store and the agent,
 * plus an optional MCP endpoint at `/mcp` and the web console's files. Secure by default: a bearer
 * token on every route but a bare liveness check and the console's static files, `Host` and `Origin`
 * checked on every request, JSON-only bodies, bounded reads.
 *
 * Routes (all JSON; errors are `{ error: { code, message } }` with a 4xx/5xx status):
 *
 * | method | path                              | what                                                   |
 * |--------|-----------------------------------|--------------------------------------------------------|
 * | GET    | /api/v1/health                    | liveness; with the token also tool count, agent, problems |
 * | GET    | /api/v1/tools                     | every tool's name, description and parameters          |
 * | POST   | /api/v1/tools/{name}/invoke       | body = arguments object → the `ToolResult`             |
 * | POST   | /api/v1/agent                     | `{ question, user?, history? }` → `{ answer }`, or SSE |
 * | GET    | /api/v1/config/{type}             | every item of a type                                   |
 * | GET/PUT/DELETE | /api/v1/config/{type}/{key} | one item; PUT body = the JSON value                  |
 * | GET/POST/DELETE | /mcp                     | MCP Streamable HTTP, when an MCP handler is given      |
 * | GET    | /metrics                          | Prometheus text format, when `metrics` is given        |
 * | GET    | /api/v1/ready                     | readiness per part (store, model, `readiness`): 200/503 |
 * | GET    | /api/v1/audit                     | audit entries (`?tool=&user=&since=&limit=`), when `audit` is given |
 * | GET    | /api/v1/approvals                 | approval requests (`?status=pending|approved|denied|all`), when `runs` is given |
 * | GET/POST | /api/v1/approvals/{id}          | one request; POST `{ decision, reason?, arguments? }` decides it |
 * | GET    | /api/v1/runs/{id}                 | a saved agent run; `/events` streams its events (SSE) |
 * | GET    | /api/v1/system                    | version, uptime, bus, store, counts, readiness, call rates, when `inspect` is given |
 * | GET    | /api/v1/services                  | tool services, their instances and tools, when `inspect` is given |
 * | GET    | /api/v1/tools?detail=1            | the tools plus source, key, strict schema, approval, problems |
 * | GET    | /api/v1/config                    | the config types (stored and well-known)               |
 * | POST   | /api/v1/config/{type}/{key}/check | body = the JSON value → `{ findings }`; nothing stored |
 * | GET    | /api/v1/live-calls                | the latest tool calls (`?tool=&user=&limit=`), when `liveCalls` is given |
 * | GET    | /api/v1/live-calls/events         | their starts, ends and progress (SSE)                  |
 * | GET    | /                                 | the web console's `index.html` (no token), when `consoleDir` is given |
 * | GET    | /console/{file}                   | its assets (no token)                                  |
 * | GET    | /.well-known/oauth-protected-resource[/mcp[/{id}]] | RFC 9728 metadata (no token), when `oauth` is given |
 */
import { listenHttp } from './listen.js';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { MAX_JSON_DEPTH } from '../schema/index.js';
import { notifyHooks, type DeferredToolsOptions, type Hook, type ToolProvider } from '../tools/index.js';
import { ToolbusError, numberOption } from '../errors/index.js';
import type { ConfigStore } from '../config/index.js';
import { configAllowlistFromEnv, type ConfigAllowlist } from '../registry/index.js';
import { handleAgentRoute, type GatewayAgent } from './agent-route.js';
import { AccessPolicy, policyTools, type AccessDeniedEvent, type Principal } from '../policy/index.js';
import { requirePermission, userOf } from './route-access.js';
import { handleConfigItem, listConfigType } from './config-routes.js';
import { findRoute, type Route } from './route-table.js';
import { cancelCall, getCall, streamCallEvents } from './call-routes.js';
import type { CallTasks } from '../services/index.js';
import { HttpError, methodNotAllowed, sendError, sendJson, statusForCode } from './http-error.js';
import { createRequestGuard, isLoopbackHost, preflightHeaders } from './request-guard.js';
import { discardBody, isJsonMediaType, parseJsonText, readBody } from './request-body.js';
import { decodePathPart, headerValue, type RouteContext } from './route-context.js';
import { handleToolInvoke, handleToolList, type GatewayProblem } from './tool-routes.js';
import { sendMetrics, type GatewayMetrics } from './metrics-route.js';
import {
  defaultReadinessChecks,
  readinessReport,
  sendReadiness,
  type ReadinessCheck,
} from './ready-route.js';
import { setRequestRoute, traceRequest } from './request-tracing.js';
import { handleAuditRoute } from './audit-route.js';
import { decideApproval, getApproval, getRun, listApprovals, streamRunEvents } from './run-routes.js';
import type { RunStore } from '../runs/index.js';
import { profileOf, profileTools, type GatewayProfiles } from './profile-access.js';
import type { AuditReader } from '../audit/index.js';
import type { LiveCallFeed } from '../observability/index.js';
import { serveConsoleAsset, serveConsoleIndex } from './console-route.js';
import { handleServices, handleSystem, type GatewayInspector } from './system-routes.js';
import { listLiveCalls, streamLiveCalls } from './live-call-routes.js';
import { checkConfigRoute, listConfigTypes } from './config-routes.js';
import {
  bearerChallenge,
  protectedResourceRoutes,
  requestOrigin,
  resolveResourceServer,
  resourceMetadataUrl,
  resourcesOf,
  type GatewayOAuthOptions,
} from './protected-resource-route.js';

/** The default cap on a request body. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;
/** How long a client may take to send the request headers, by default. */
export const DEFAULT_HEADERS_TIMEOUT_MS = 10_000;
/** How long a client may take to send a whole request (headers and body), by default. */
export const DEFAULT_BODY_TIMEOUT_MS = 30_000;
/** The most connections a gateway holds at once, by default. */
export const DEFAULT_MAX_CONNECTIONS = 1024;

/** What an `/mcp` handler gets besides the request and response. */
export interface GatewayMcpRequest {
  /** The POST body, already read and parsed by the gateway (size and depth limits applied); else undefined. */
  parsedBody: unknown;
  /** Who is calling: the authenticated principal and the remote address, for per-client limits. */
  client: string;
  /** The authenticated principal's name: a session opened by one principal serves no other. @default none */
  principal?: string;
  /**
   * The tools as this principal may use them: its profile, policy and quotas applied, calls for its
   * user. @default the handler's own
   */
  tools?: ToolProvider & { onChange?(listener: () => void): unknown };
  /** The endpoint (`/mcp` or `/mcp/<profile>`): a session serves requests to the one it was opened at. */
  endpoint?: string;
  /**
   * The request's `?search=`: `{}` to serve `search_tools` instead of the full list (`?search=1`),
   * `false` for the full list (`?search=0`). @default undefined (the handler's own choice)
   */
  toolSearch?: DeferredToolsOptions | false;
  /**
   * Which prompts this caller may see, by name: a config prompt is a `prompt` tool, so the caller's tool
   * policy (and, at `/mcp/<profile>`, the profile's tools) decide. @default all
   */
  promptFilter?: (name: string) => boolean;
  /**
   * Which resources this caller may see and read, by name: a key limited to some tools (its tool
   * policy) sees the resources whose names its globs match. @default all
   */
  resourceFilter?: (name: string) => boolean;
  /** The end user the caller's requests are for (as for its tool calls). */
  user?: string;
}

/** Options of {@link createGateway}. */
export interface GatewayOptions {
  /** The tools served at `/api/v1/tools`. */
  tools: ToolProvider;
  /** The config store served at `/api/v1/config`. @default none (404 on those routes) */
  store?: ConfigStore;
  /**
   * The agent behind `/api/v1/agent`. When absent, that route answers 503 with `agentUnavailableMessage`.
   * @default none
   */
  agent?: GatewayAgent;
  /** What to tell a caller when there is no agent (e.g. how to configure a model). */
  agentUnavailableMessage?: string;
  /**
   * The bearer token every route but the bare liveness check requires (`Authorization: Bearer <token>`).
   * Required unless {@link noAuth} is set. @default none
   */
  token?: string;
  /**
   * Who may call what: principals (the owner's token, named keys, JWTs), their roles, tool policy and
   * quotas. Given, it replaces `token` and `noAuth`. @default a policy of `token` alone (principal
   * `admin`), or an open one with `noAuth`
   */
  policy?: AccessPolicy;
  /**
   * Serve without a token. Allowed only on a loopback address ({@link Gateway.listen} refuses any
   * other), where `Host` and `Origin` checks still keep web pages out. @default false
   */
  noAuth?: boolean;
  /**
   * Host names the gateway answers to besides `127.0.0.1`, `localhost` and `[::1]` (and the specific
   * address it listens on), e.g. the name a reverse proxy forwards. `'*'` accepts any. @default []
   */
  allowedHosts?: readonly string[];
  /**
   * Origins of web pages allowed to call the gateway (`https://app.example.com`), which then get CORS
   * headers. Requests from any other page's origin get 403. @default []
   */
  allowedOrigins?: readonly string[];
  /**
   * The gateway's public origin when clients reach it through a TLS proxy (`https://tools.example.com`;
   * https, or http on a loopback host, and no path): the origin of its OAuth resource URLs (see
   * {@link oauth}), and a host name it answers to.
   * @default each request's own: `http://` + its `Host` name, when the gateway answers to that name
   * (not only through `'*'`), + the port it was reached on
   */
  publicUrl?: string;
  /**
   * Act as an OAuth 2.1 resource server, as MCP clients expect: serve the protected resource metadata
   * (RFC 9728) at `/.well-known/oauth-protected-resource` and, with an MCP handler, at its path-suffixed
   * forms for `/mcp` and `/mcp/<id>`, naming the authorization servers; and point every 401 at it
   * (`WWW-Authenticate: Bearer resource_metadata="…"`, with `error="invalid_token"` and the reason for
   * a refused token). The tokens themselves are checked by the policy's JWT verifier: give it
   * `resourceAudience` so a token minted for the resource URL verifies, and `rolesFromScope` for the
   * `toolbus:caller` and `toolbus:approver` scopes. With `allowedHosts: ['*']` it needs {@link publicUrl}.
   * @default none (no metadata routes; a 401 says just `Bearer`)
   */
  oauth?: GatewayOAuthOptions;
  /**
   * Which programs and environment variables config items may use; `PUT /api/v1/config/…` refuses
   * others with 400 `not-allowed`. @default configAllowlistFromEnv(process.env) (TOOLBUS_ALLOW_COMMANDS,
   * TOOLBUS_ALLOW_ENV)
   */
  allowlist?: ConfigAllowlist;
  /** @default DEFAULT_MAX_BODY_BYTES (1 MiB) */
  maxBodyBytes?: number;
  /** Deepest nesting of arrays and objects accepted in a JSON body. @default MAX_JSON_DEPTH (512) */
  maxJsonDepth?: number;
  /** A client that has not sent its request headers by then is cut off (408). @default DEFAULT_HEADERS_TIMEOUT_MS (10 000) */
  headersTimeoutMs?: number;
  /** A client that has not sent its whole request by then (a trickling body) is cut off (408). @default DEFAULT_BODY_TIMEOUT_MS (30 000) */
  bodyTimeoutMs?: number;
  /** Connections beyond this many are closed at once. @default DEFAULT_MAX_CONNECTIONS (1024) */
  maxConnections?: number;
  /** Timeout of one tool invocation through the API. @default 60_000 */
  toolTimeoutMs?: number;
  /** Registry problems shown by the health route (to a caller with the token). @default none */
  problems?: () => readonly GatewayProblem[];
  /**
   * Brings `tools` up to date with the config store (`registry.refresh`), run before
   * `GET /api/v1/tools?fresh=1` answers, so a listing right after a write (an `mcp import`, a
   * `config put` from another process) shows it. @default none (the listing is what is live)
   */
  refresh?: () => Promise<void>;
  /**
   * Serves `GET /metrics` (Prometheus text format, token required like every route but liveness), e.g.
   * `() => metrics.scrape()`. @default none (404)
   */
  metrics?: GatewayMetrics;
  /**
   * Serves `GET /api/v1/audit?tool=&user=&since=&limit=` (token required): the latest audit entries
   * that match, oldest first. @default none (404)
   */
  audit?: AuditReader;
  /**
   * Parts `GET /api/v1/ready` checks besides the config store and the model, by name, e.g. `bus` and
   * `registry`. It answers 200 when every required part is ready, else 503. @default none
   */
  readiness?: Readonly<Record<string, ReadinessCheck>>;
  /**
   * The tool profiles (`profile/<id>` items), e.g. `(id) => registry.profile(id)`: served at
   * `/mcp/<id>`, chosen with `GET /api/v1/tools?profile=` and an agent request's `profile`, and bound
   * to principals (a principal item's `profile`). Throws ToolbusError `not-found` for an unknown id.
   * @default none (404 for any profile)
   */
  profiles?: GatewayProfiles;
  /**
   * The web console's built files (`index.html` and its assets), served without a token at `/` and
   * `/console/<file>`. `GET /` answers 503 while the folder or its `index.html` is missing.
   * @default none (404 at `/`)
   */
  consoleDir?: string;
  /**
   * What the host (e.g. `toolbus up`) knows of the system around the gateway: served at
   * `/api/v1/system` and `/api/v1/services`, and used by `GET /api/v1/tools?detail=1` and
   * `POST /api/v1/config/{type}/{key}/check`. @default none (404 on the first two)
   */
  inspect?: GatewayInspector;
  /**
   * The latest and running tool calls (a `LiveCalls` fed by the tool set's hooks), served at
   * `/api/v1/live-calls` and `/api/v1/live-calls/events`, and counted in `/api/v1/system`.
   * @default none (404 on those routes)
   */
  liveCalls?: LiveCallFeed;
  /** Handles `/mcp` and `/mcp/<profile>` (Streamable HTTP). @default none (404) */
  mcpHandler?: (req: IncomingMessage, res: ServerResponse, request: GatewayMcpRequest) => Promise<void>;
  /**
   * Approval requests and saved agent runs, served at `/api/v1/approvals` and `/api/v1/runs` (the same
   * store the agent keeps its runs in). With it, `POST /api/v1/agent` gives each run an id, sent back as
   * the `toolbus-run` header. @default none (404 on those routes)
   */
  runs?: RunStore;
  /**
   * Tool calls started with `POST /api/v1/tools/{name}/invoke?async=1`, whose states are served at
   * `/api/v1/calls/{id}` (`new CallTasks(bus)`: kept in the bus's call store). @default none (404)
   */
  calls?: CallTasks;
  /** Let the principal that started a run decide its approvals. @default false */
  allowSelfApproval?: boolean;
  /** The default `user` for agent and tool calls without one. @default 'anonymous' */
  defaultUser?: string;
  /**
   * Interval of the `: keep-alive` comments on an agent event stream while the agent is quiet, so that
   * clients and proxies with an idle timeout (Node's fetch gives up after 300 s) keep a long run open.
   * @default 15_000
   */
  heartbeatMs?: number;
  /**
   * Told of every request refused as unauthenticated (401), forbidden (403: a foreign `Host` or
   * `Origin`, a missing role, a tool outside the principal's policy, a user it may not name) or over a
   * quota (429), and of every `/mcp` tool call refused so, e.g. to log or audit it. @default none
   */
  onDenied?: Hook<GatewayDeniedEvent>;
  /**
   * Called with an unexpected failure, whose details the client is not shown (it gets 500 `internal`).
   * @default ignored
   */
  onError?: (error: Error) => void;
}

/** A request or `/mcp` tool call the gateway refused (see {@link GatewayOptions.onDenied}). */
export type GatewayDeniedEvent = AccessDeniedEvent;

/** Options of {@link Gateway.listen}. */
export interface GatewayListenOptions {
  /** @default '127.0.0.1' */
  host?: string;
  /** 0 picks a free port. @default 8888 */
  port?: number;
}

/** A running gateway. */
export interface Gateway {
  /** The node request handler (usable with any `http.Server`). */
  handle(req: IncomingMessage, res: ServerResponse): Promise<void>;
  /**
   * Starts listening. Rejects with code `usage` when the host is not loopback and the gateway has no
   * token. Resolves with the base URL, e.g. `http://127.0.0.1:8888`.
   */
  listen(options?: GatewayListenOptions): Promise<string>;
  /** Stops accepting, waits for requests in flight (aborting agent runs after `graceMs`). Idempotent. */
  close(options?: { graceMs?: number }): Promise<void>;
}

/** The methods some route answers; any other gets 405 on every path. */
const KNOWN_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS']);

/**
 * Creates the HTTP gateway. Throws `usage` when neither `token` nor `noAuth` is given: a gateway is
 * never open by accident.
 *
 * @example
 * ```ts
 * const gateway = createGateway({ tools: registry.tools, store, agent, token: process.env.TOOLBUS_TOKEN });
 * const url = await gateway.listen({ port: 8888 });
 * ```
 */
export function createGateway(options: GatewayOptions): Gateway {
  const token = options.token === '' ? undefined : options.token;
  if (token === undefined && options.noAuth !== true && options.policy === undefined) {
    throw new ToolbusError(
      'usage',
      'createGateway: give a token (every route but liveness then requires "Authorization: Bearer <token>"), ' +
        'or set noAuth: true to serve without one on loopback only',
    );
  }
  const maxBodyBytes = numberOption(
    'createGateway',
    'maxBodyBytes',
    options.maxBodyBytes,
    DEFAULT_MAX_BODY_BYTES,
  );
  const maxJsonDepth = numberOption('createGateway', 'maxJsonDepth', options.maxJsonDepth, MAX_JSON_DEPTH);
  const headersTimeoutMs = numberOption(
    'createGateway',
    'headersTimeoutMs',
    options.headersTimeoutMs,
    DEFAULT_HEADERS_TIMEOUT_MS,
  );
  const bodyTimeoutMs = numberOption(
    'createGateway',
    'bodyTimeoutMs',
    options.bodyTimeoutMs,
    DEFAULT_BODY_TIMEOUT_MS,
  );
  const maxConnections = numberOption(
    'createGateway',
    'maxConnections',
    options.maxConnections,
    DEFAULT_MAX_CONNECTIONS,
  );
  const toolTimeoutMs = options.toolTimeoutMs ?? 60_000;
  const defaultUser = options.defaultUser ?? 'anonymous';
  const heartbeatMs = options.heartbeatMs ?? 15_000;
  const allowlist = options.allowlist ?? configAllowlistFromEnv(process.env);
  const { oauth, publicOrigin } = resolveResourceServer(options);
  const guard = createRequestGuard({
    allowedHosts: [
      ...(options.allowedHosts ?? []),
      ...(publicOrigin !== undefined ? [new URL(publicOrigin).hostname] : []),
    ],
    ...(options.allowedOrigins ? { allowedOrigins: options.allowedOrigins } : {}),
  });
  /** The origin of this request's resource URLs (RFC 8707), when the gateway can name it. */
  const originOf = (req: IncomingMessage): string | undefined =>
    requestOrigin(req, guard.knownHostOf(req), publicOrigin);
  const policy =
    options.policy ?? new AccessPolicy(token === undefined ? { open: true } : { adminToken: token });
  const callRoutes = { tasks: options.calls, policy, defaultUser, heartbeatMs };
  const toolRoutes = {
    tools: options.tools,
    profiles: options.profiles,
    defaultUser,
    toolTimeoutMs,
    refresh: options.refresh,
    policy,
    calls: callRoutes,
    detail: {
      toolOrigin: (name: string) => options.inspect?.toolOrigin?.(name),
      problems: options.problems,
      strictSchemas: new WeakMap(),
    },
  };
  const runRoutes = {
    runs: options.runs,
    tools: options.tools,
    policy,
    allowSelfApproval: options.allowSelfApproval === true,
    heartbeatMs,
  };
  const agentRoute = {
    runs: options.runs !== undefined,
    agent: options.agent,
    agentUnavailableMessage: options.agentUnavailableMessage,
    defaultUser,
    heartbeatMs,
    policy,
    tools: options.tools,
    profiles: options.profiles,
  };
  const startedAt = Date.now();
  const inFlight = new Set<AbortController>();
  let server: Server | undefined;
  let closing: Promise<void> | undefined;
  /** Aborted when `close()` starts: streams that only end when told (live calls) end then. */
  const closingSignal = new AbortController();
  const liveCallRoutes = {
    feed: options.liveCalls,
    policy,
    defaultUser,
    heartbeatMs,
    closing: closingSignal.signal,
  };

  /** Tells the hooks of a refusal. */
  const denied = (event: GatewayDeniedEvent): void => {
    notifyHooks(options.onDenied, event);
    policy.denied(event);
  };

  const readinessChecks: Readonly<Record<string, ReadinessCheck>> = {
    ...defaultReadinessChecks(options.store, options.agent !== undefined, options.agentUnavailableMessage),
    ...options.readiness,
  };

  const systemRoutes = {
    inspector: options.inspect,
    policy,
    tools: options.tools,
    agent: options.agent !== undefined,
    problems: options.problems,
    liveCalls: options.liveCalls,
    readiness: () => readinessReport(readinessChecks, true, closing !== undefined),
    startedAt,
  };

  function health(ctx: RouteContext): void {
    const status = closing ? 'stopping' : 'ok';
    // Without the token, only that it is alive: tool names, problems and config keys are the owner's.
    if (!ctx.principal) return sendJson(ctx.res, 200, { status }, ctx.headers);
    sendJson(
      ctx.res,
      200,
      {
        status,
        tools: options.tools.list().length,
        agent: options.agent !== undefined,
        problems: options.problems?.() ?? [],
        uptimeMs: Date.now() - startedAt,
      },
      ctx.headers,
    );
  }

  async function mcp(ctx: RouteContext, requested: string | undefined): Promise<void> {
    const handler = options.mcpHandler;
    if (!handler) throw new HttpError(404, 'not-found', 'this gateway serves no MCP endpoint');
    const principal = requirePermission(ctx, policy, 'read-tools', 'use /mcp');
    const profile = profileOf(principal, requested);
    const tools = profileTools(options.tools, options.profiles, profile);
    const search = ctx.url.searchParams.get('search');
    const toolSearch = search === null ? undefined : search !== '0' && search !== 'false' ? {} : false;
    const user = userOf(ctx, policy, principal, defaultUser);
    const remote = ctx.req.socket.remoteAddress ?? 'unknown';
    let parsedBody: unknown;
    if (ctx.method === 'POST') {
      try {
        parsedBody = await ctx.readJson('MCP request');
      } catch (error) {
        // MCP clients read JSON-RPC errors: -32700 for text that is not JSON, -32600 for any other bad body.
        if (!(error instanceof HttpError) || error.status !== 400) throw error;
        const code = /not valid JSON/.test(error.message) ? -32700 : -32600;
        sendJson(
          ctx.res,
          400,
          { jsonrpc: '2.0', error: { code, message: error.message }, id: null },
          ctx.headers,
        );
        return;
      }
    }
    for (const [name, value] of Object.entries(ctx.headers)) ctx.res.setHeader(name, value);
    const client = `${principal.name}@${remote}`;
    await handler(ctx.req, ctx.res, {
      parsedBody,
      client,
      principal: principal.name,
      endpoint: requested === undefined ? '/mcp' : `/mcp/${requested}`,
      ...(toolSearch !== undefined ? { toolSearch } : {}),
      promptFilter: (name) =>
        policy.allows(principal, name) && (profile === undefined || tools.get(name) !== undefined),
      // A resource can be read through a tool service: a key limited to some tools is limited here too.
      resourceFilter: (name) => policy.allows(principal, name),
      user,
      tools: policyTools(policy, principal, tools, {
        user,
        surface: 'mcp',
        caller: `mcp:${client}`,
        remote,
        onDenied: denied,
      }),
    });
  }

  const consoleDir = options.consoleDir;
  // Public like liveness: the page and its scripts hold no data; every API call they make needs the token.
  const consoleRoutes: Route[] =
    consoleDir === undefined
      ? []
      : [
          {
            path: /^\/$/,
            methods: ['GET', 'HEAD'],
            public: true,
            handle: (ctx) => serveConsoleIndex(ctx, consoleDir),
          },
          {
            path: /^\/console\/(.+)$/,
            methods: ['GET', 'HEAD'],
            public: true,
            handle: (ctx, [file]) => serveConsoleAsset(ctx, consoleDir, file!),
          },
        ];

  const routes: readonly Route[] = [
    ...consoleRoutes,
    ...(oauth
      ? protectedResourceRoutes(oauth, (ctx) => originOf(ctx.req), options.mcpHandler !== undefined)
      : []),
    { path: /^\/api\/v1\/health$/, methods: ['GET', 'HEAD'], public: true, handle: health },
    {
      // Public like liveness (probes carry no token); the parts' details need the token.
      path: /^\/api\/v1\/ready$/,
      methods: ['GET', 'HEAD'],
      public: true,
      handle: (ctx) =>
        sendReadiness(ctx, readinessChecks, ctx.principal !== undefined, closing !== undefined),
    },
    { path: /^\/mcp\/?$/, methods: ['GET', 'POST', 'DELETE'], handle: (ctx) => mcp(ctx, undefined) },
    {
      path: /^\/mcp\/([^/]+)\/?$/,
      methods: ['GET', 'POST', 'DELETE'],
      handle: (ctx, [id]) => mcp(ctx, decodePathPart(id!)),
    },
    { path: /^\/api\/v1\/system$/, methods: ['GET'], handle: (ctx) => handleSystem(ctx, systemRoutes) },
    { path: /^\/api\/v1\/services$/, methods: ['GET'], handle: (ctx) => handleServices(ctx, systemRoutes) },
    { path: /^\/api\/v1\/tools$/, methods: ['GET'], handle: (ctx) => handleToolList(ctx, toolRoutes) },
    {
      path: /^\/api\/v1\/tools\/([^/]+)\/invoke$/,
      methods: ['POST'],
      handle: (ctx, [name]) => handleToolInvoke(ctx, toolRoutes, decodePathPart(name!)),
    },
    {
      path: /^\/api\/v1\/calls\/([^/]+)$/,
      methods: ['GET'],
      handle: (ctx, [id]) => getCall(ctx, callRoutes, decodePathPart(id!)),
    },
    {
      path: /^\/api\/v1\/calls\/([^/]+)\/events$/,
      methods: ['GET'],
      handle: (ctx, [id]) => streamCallEvents(ctx, callRoutes, decodePathPart(id!)),
    },
    {
      path: /^\/api\/v1\/calls\/([^/]+)\/cancel$/,
      methods: ['POST'],
      handle: (ctx, [id]) => cancelCall(ctx, callRoutes, decodePathPart(id!)),
    },
    { path: /^\/api\/v1\/agent$/, methods: ['POST'], handle: (ctx) => handleAgentRoute(ctx, agentRoute) },
    { path: /^\/api\/v1\/approvals$/, methods: ['GET'], handle: (ctx) => listApprovals(ctx, runRoutes) },
    {
      path: /^\/api\/v1\/approvals\/([^/]+)$/,
      methods: ['GET', 'POST'],
      handle: (ctx, [id]) =>
        ctx.method === 'POST'
          ? decideApproval(ctx, runRoutes, decodePathPart(id!))
          : getApproval(ctx, runRoutes, decodePathPart(id!)),
    },
    {
      path: /^\/api\/v1\/runs\/([^/]+)$/,
      methods: ['GET'],
      handle: (ctx, [id]) => getRun(ctx, runRoutes, decodePathPart(id!)),
    },
    {
      path: /^\/api\/v1\/runs\/([^/]+)\/events$/,
      methods: ['GET'],
      handle: (ctx, [id]) => streamRunEvents(ctx, runRoutes, decodePathPart(id!)),
    },
    {
      path: /^\/metrics$/,
      methods: ['GET'],
      handle: (ctx) => {
        requirePermission(ctx, policy, 'metrics', 'read metrics');
        return sendMetrics(ctx.res, options.metrics, ctx.headers);
      },
    },
    {
      path: /^\/api\/v1\/audit$/,
      methods: ['GET'],
      handle: (ctx) => {
        requirePermission(ctx, policy, 'audit', 'read the audit log');
        return handleAuditRoute(ctx, options.audit);
      },
    },
    {
      path: /^\/api\/v1\/live-calls$/,
      methods: ['GET'],
      handle: (ctx) => listLiveCalls(ctx, liveCallRoutes),
    },
    {
      path: /^\/api\/v1\/live-calls\/events$/,
      methods: ['GET'],
      handle: (ctx) => streamLiveCalls(ctx, liveCallRoutes),
    },
    {
      path: /^\/api\/v1\/config$/,
      methods: ['GET'],
      handle: (ctx) => {
        requirePermission(ctx, policy, 'config', 'read or write config');
        return listConfigTypes(ctx, options.store);
      },
    },
    {
      path: /^\/api\/v1\/config\/([^/]+)\/([^/]+)\/check$/,
      methods: ['POST'],
      handle: (ctx, [type, key]) => {
        requirePermission(ctx, policy, 'config', 'read or write config');
        return checkConfigRoute(
          ctx,
          allowlist,
          options.inspect?.checkConfig,
          decodePathPart(type!),
          decodePathPart(key!),
        );
      },
    },
    {
      path: /^\/api\/v1\/config\/([^/]+)$/,
      methods: ['GET'],
      handle: (ctx, [type]) => {
        requirePermission(ctx, policy, 'config', 'read or write config');
        return listConfigType(ctx, options.store, decodePathPart(type!));
      },
    },
    {
      path: /^\/api\/v1\/config\/([^/]+)\/([^/]+)$/,
      methods: ['GET', 'PUT', 'DELETE'],
      handle: (ctx, [type, key]) => {
        requirePermission(ctx, policy, 'config', 'read or write config');
        return handleConfigItem(ctx, options.store, allowlist, decodePathPart(type!), decodePathPart(key!));
      },
    },
  ];

  async function route(ctx: RouteContext): Promise<void> {
    const { req, path, method } = ctx;
    guard.check(req);
    if (!KNOWN_METHODS.has(method)) {
      throw methodNotAllowed(method, path, 'GET, HEAD, POST, PUT, DELETE or OPTIONS as the route takes');
    }
    if (method === 'OPTIONS') {
      // A preflight carries no token: it only asks whether the page's real request may follow.
      const allowed = guard.isPreflight(req);
      ctx.res.writeHead(204, {
        ...ctx.headers,
        ...(allowed ? preflightHeaders() : {}),
        allow: 'GET, HEAD, POST, PUT, DELETE, OPTIONS',
      });
      ctx.res.end();
      return;
    }
    const { route: found, params } = findRoute(routes, path, method);
    setRequestRoute(method, found.path);
    ctx.principal = await authenticate(ctx, found.public === true);
    if (!found.public && !ctx.principal) {
      throw unauthorized(
        ctx,
        'missing or wrong bearer token: send the header "Authorization: Bearer <token>" with the token of ' +
          "'toolbus up' (the file token in its home folder, ./.toolbus/token by default, or TOOLBUS_TOKEN), " +
          "a key of 'toolbus principal add', or a JWT of the configured provider",
      );
    }
    await found.handle(ctx, params);
  }

  /**
   * The request's principal. A JWT that does not verify is a 401 saying why, on a public route too
   * (which then answers as to a caller without a token).
   */
  async function authenticate(ctx: RouteContext, publicRoute: boolean): Promise<Principal | undefined> {
    let resources: readonly string[] | undefined;
    try {
      return await policy.authenticate(headerValue(ctx.req, 'authorization'), {
        // Built only when a JWT verifier with resourceAudience reads them: health probes, console
        // assets, static tokens and gateways without JWT never pay for the URL building.
        get resources() {
          if (resources === undefined) {
            const origin = originOf(ctx.req);
            resources = origin === undefined ? [] : resourcesOf(origin, ctx.path);
          }
          return resources;
        },
      });
    } catch (error) {
      if (publicRoute) return undefined;
      if (error instanceof ToolbusError && error.code === 'unauthorized') {
        throw unauthorized(ctx, error.message, true);
      }
      throw error;
    }
  }

  /**
   * A 401 with its challenge: `Bearer` (`error="invalid_token"` for a `refused` JWT), or, as an OAuth
   * resource server, the metadata's URL and, for any token sent and refused, `invalid_token` and why
   * (the message of a refused JWT, else that the token is unknown).
   */
  function unauthorized(ctx: RouteContext, message: string, refused = false): HttpError {
    const origin = oauth ? originOf(ctx.req) : undefined;
    let challenge: string;
    if (origin === undefined) {
      challenge = refused ? 'Bearer error="invalid_token"' : 'Bearer';
    } else {
      const sent = /^bearer +\S/i.test(headerValue(ctx.req, 'authorization')?.trim() ?? '');
      challenge = bearerChallenge({
        resourceMetadata: resourceMetadataUrl(origin, ctx.path),
        ...(sent
          ? {
              error: 'invalid_token',
              description: refused
                ? message
                : 'the bearer token is not a token, key or JWT this gateway accepts',
            }
          : {}),
      });
    }
    return new HttpError(401, 'unauthorized', message, { 'www-authenticate': challenge });
  }

  async function readJsonMediaBody(req: IncomingMessage, limit: number): Promise<string> {
    const given = headerValue(req, 'content-type');
    if (!isJsonMediaType(given)) {
      throw new HttpError(
        415,
        'unsupported-media-type',
        `${req.method ?? 'POST'} takes a JSON body: send "Content-Type: application/json"` +
          (given ? `, not '${given.slice(0, 100)}'` : ' (the request had no Content-Type)'),
      );
    }
    return readBody(req, limit);
  }

  function contextOf(req: IncomingMessage, res: ServerResponse, signal: AbortSignal): RouteContext {
    const url = new URL(req.url ?? '/', 'http://gateway');
    let text: Promise<string> | undefined;
    const ctx: RouteContext = {
      req,
      res,
      url,
      path: url.pathname.replace(/\/+$/, '') || '/',
      method: req.method ?? 'GET',
      signal,
      headers: guard.corsHeaders(req),
      // Only JSON runs anything: a form or text/plain post, which any web page can send cross-site, is 415.
      readText: () => (text ??= readJsonMediaBody(req, maxBodyBytes)),
      readJson: async (what) => parseJsonText(await ctx.readText(), what, maxJsonDepth),
      principal: undefined,
    };
    return ctx;
  }

  function fail(res: ServerResponse, error: unknown, headers: Readonly<Record<string, string>>): void {
    if (error instanceof HttpError) {
      sendError(res, error.status, error.code, error.message, { ...headers, ...error.headers }, error.rule);
      return;
    }
    // A toolbus error says what failed in words meant for the caller (file paths are cut from it).
    if (error instanceof ToolbusError) {
      sendError(res, statusForCode(error.code), error.code, error.message, headers);
      return;
    }
    // Anything else is a failure of ours whose details stay in our log: they may name files or internals.
    options.onError?.(error instanceof Error ? error : new Error(String(error)));
    sendError(
      res,
      500,
      'internal',
      'the gateway failed to handle the request; its log has the details',
      headers,
    );
  }

  /** One request, in its SERVER span when tracing is on (see request-tracing.ts). */
  function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    return traceRequest(req, res, () => handleRequest(req, res));
  }

  async function handleRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const controller = new AbortController();
    inFlight.add(controller);
    // A client that goes away cancels its agent run or tool call.
    const onClose = (): void => {
      if (!res.writableFinished)
        controller.abort(new ToolbusError('cancelled', 'the HTTP client disconnected'));
    };
    res.on('close', onClose);
    let ctx: RouteContext | undefined;
    try {
      ctx = contextOf(req, res, controller.signal);
      if (closing) throw new HttpError(503, 'unavailable', 'the gateway is shutting down');
      // Only POST and PUT bodies are read; any other is dropped, so the answer is not lost to a reset.
      if (ctx.method !== 'POST' && ctx.method !== 'PUT') await discardBody(req, maxBodyBytes);
      await route(ctx);
    } catch (error) {
      await discardBody(req, maxBodyBytes);
      if (
        error instanceof HttpError &&
        (error.status === 401 || error.status === 403 || error.status === 429)
      ) {
        denied({
          status: error.status,
          code: error.code,
          method: req.method ?? 'GET',
          path: (ctx?.path ?? '/').slice(0, 200),
          remote: req.socket.remoteAddress ?? 'unknown',
          reason: error.message,
          surface: 'http',
          ...(error.rule !== undefined ? { rule: error.rule } : {}),
          ...(ctx?.principal ? { principal: ctx.principal.name } : {}),
          ...(ctx?.user !== undefined ? { user: ctx.user } : {}),
          ...(ctx?.tool !== undefined ? { tool: ctx.tool } : {}),
        });
      }
      fail(res, error, ctx?.headers ?? {});
    } finally {
      inFlight.delete(controller);
      res.off('close', onClose);
    }
  }

  return {
    handle,
    async listen(listenOptions = {}) {
      const host = listenOptions.host ?? '127.0.0.1';
      const port = listenOptions.port ?? 8888;
      if (!isLoopbackHost(host) && policy.open) {
        throw new ToolbusError(
          'usage',
          `refusing to listen on ${host} without a token: anyone who can reach that address could call your tools ` +
            `and change your config. Give the gateway a token (TOOLBUS_TOKEN, or drop --no-auth), or listen on 127.0.0.1.`,
        );
      }
      const srv = createServer(
        {
          headersTimeout: headersTimeoutMs,
          requestTimeout: Math.max(bodyTimeoutMs, headersTimeoutMs),
          // How often Node checks the two timeouts above: often enough that they hold to about a second.
          connectionsCheckingInterval: Math.min(1_000, headersTimeoutMs, bodyTimeoutMs),
        },
        (req, res) => {
          void handle(req, res);
        },
      );
      srv.maxConnections = maxConnections;
      server = srv;
      const { address, url } = await listenHttp(srv, port, host);
      guard.setBoundAddress(address);
      return url;
    },
    close(closeOptions = {}) {
      closing ??= (async () => {
        closingSignal.abort();
        const graceMs = closeOptions.graceMs ?? 5_000;
        const srv = server;
        if (!srv) return;
        const closed = new Promise<void>((resolve) => srv.close(() => resolve()));
        srv.closeIdleConnections();
        // After the grace period, cancel what is still running so each caller gets a typed `cancelled`
        // answer; only connections that still have not finished a moment later are cut.
        let cutTimer: NodeJS.Timeout | undefined;
        const timer = setTimeout(() => {
          for (const c of inFlight) c.abort(new ToolbusError('cancelled', 'the gateway is shutting down'));
          cutTimer = setTimeout(() => srv.closeAllConnections(), 1_000);
          cutTimer.unref();
        }, graceMs);
        timer.unref();
        await closed;
        clearTimeout(timer);
        clearTimeout(cutTimer);
      })();
      return closing;
    },
  };
}
