/**
 * @module The HTTP gateway: a small JSON API over the live tool set, the config store and the agent,
 * plus an optional MCP endpoint at `/mcp`.
 *
 * Routes (all JSON; errors are `{ error: { code, message } }` with a 4xx/5xx status):
 *
 * | method | path                              | what                                                   |
 * |--------|-----------------------------------|--------------------------------------------------------|
 * | GET    | /api/v1/health                    | liveness, tool count, model configured, registry problems |
 * | GET    | /api/v1/tools                     | every tool's name, description and parameters          |
 * | POST   | /api/v1/tools/{name}/invoke       | body = arguments object → the `ToolResult`             |
 * | POST   | /api/v1/agent                     | `{ question, user?, history? }` → `{ answer }`, or SSE |
 * | GET    | /api/v1/config/{type}             | every item of a type                                   |
 * | GET/PUT/DELETE | /api/v1/config/{type}/{key} | one item; PUT body = the JSON value                  |
 * | any    | /mcp                              | MCP Streamable HTTP, when an MCP handler is given      |
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { timingSafeEqual } from 'node:crypto';
import { ToolbusError, isToolbusError, type ToolProvider } from '../tools/index.js';
import type { ConfigStore } from '../config/index.js';

/** The default cap on a request body. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

/** An event of a running agent, as streamed to HTTP clients. */
export interface GatewayAgentEvent {
  type: 'thought' | 'observation' | 'answer' | 'error';
  content: string;
}

/** A past turn passed to the agent. */
export interface GatewayHistoryItem {
  role: 'user' | 'assistant';
  content: string;
}

/** What the gateway needs of an agent: ask a question, get events and the final answer. */
export interface GatewayAgent {
  ask(
    question: string,
    options: {
      user: string;
      history?: GatewayHistoryItem[];
      signal: AbortSignal;
      onEvent?: (event: GatewayAgentEvent) => void;
    },
  ): Promise<string>;
}

/** A problem the registry reports (which item, what is wrong). */
export interface GatewayProblem {
  key: string;
  message: string;
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
  /** Bearer token required on every route but health. @default none (no auth) */
  token?: string;
  /** @default DEFAULT_MAX_BODY_BYTES (1 MiB) */
  maxBodyBytes?: number;
  /** Timeout of one tool invocation through the API. @default 60_000 */
  toolTimeoutMs?: number;
  /** Registry problems shown by the health route. @default none */
  problems?: () => readonly GatewayProblem[];
  /** Handles `/mcp` (Streamable HTTP). @default none (404) */
  mcpHandler?: (req: IncomingMessage, res: ServerResponse) => Promise<void>;
  /** The default `user` for agent and tool calls without one. @default 'anonymous' */
  defaultUser?: string;
  /**
   * Interval of the `: keep-alive` comments on an agent event stream while the agent is quiet, so that
   * clients and proxies with an idle timeout (Node's fetch gives up after 300 s) keep a long run open.
   * @default 15_000
   */
  heartbeatMs?: number;
}

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
   * Starts listening. Rejects with code `usage` when the host is not loopback and no token is set.
   * Resolves with the base URL, e.g. `http://127.0.0.1:8888`.
   */
  listen(options?: GatewayListenOptions): Promise<string>;
  /** Stops accepting, waits for requests in flight (aborting agent runs after `graceMs`). Idempotent. */
  close(options?: { graceMs?: number }): Promise<void>;
}

/** True for 127.0.0.0/8, ::1 and `localhost`. */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

function sendError(res: ServerResponse, status: number, code: string, message: string): void {
  sendJson(res, status, { error: { code, message } });
}

async function readBody(req: IncomingMessage, limit: number): Promise<string> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) {
    throw new HttpError(413, 'too-large', `request body is ${declared} bytes; the limit is ${limit} bytes`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit)
      throw new HttpError(413, 'too-large', `request body exceeds the limit of ${limit} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function parseJsonBody(text: string, what: string): unknown {
  if (text.trim() === '')
    throw new HttpError(400, 'invalid-request', `${what}: the request body is empty; send JSON`);
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new HttpError(
      400,
      'invalid-request',
      `${what}: the body is not valid JSON (${(error as Error).message})`,
    );
  }
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function tokenMatches(header: string | undefined, token: string): boolean {
  // The scheme name is case-insensitive (RFC 7235): some clients send `bearer`.
  const match = header === undefined ? null : /^bearer +(.*)$/i.exec(header);
  if (!match) return false;
  const given = Buffer.from((match[1] ?? '').trim());
  const expected = Buffer.from(token);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/**
 * Creates the HTTP gateway.
 *
 * @example
 * ```ts
 * const gateway = createGateway({ tools: registry.tools, store, agent });
 * const url = await gateway.listen({ port: 8888 });
 * ```
 */
export function createGateway(options: GatewayOptions): Gateway {
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const toolTimeoutMs = options.toolTimeoutMs ?? 60_000;
  const defaultUser = options.defaultUser ?? 'anonymous';
  const heartbeatMs = options.heartbeatMs ?? 15_000;
  const startedAt = Date.now();
  const inFlight = new Set<AbortController>();
  let server: Server | undefined;
  let closing: Promise<void> | undefined;

  async function route(
    req: IncomingMessage,
    res: ServerResponse,
    controller: AbortController,
  ): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://gateway');
    const path = url.pathname.replace(/\/+$/, '') || '/';
    const method = req.method ?? 'GET';

    if (path === '/api/v1/health') {
      // HEAD too, for load balancers and uptime checks; anything else is told the method, not "no route".
      if (method !== 'GET' && method !== 'HEAD') throw methodNotAllowed(method, path, 'GET');
      sendJson(res, 200, {
        status: closing ? 'stopping' : 'ok',
        tools: options.tools.list().length,
        agent: options.agent !== undefined,
        problems: options.problems?.() ?? [],
        uptimeMs: Date.now() - startedAt,
      });
      return;
    }
    if (options.token !== undefined && !tokenMatches(req.headers.authorization, options.token)) {
      res.setHeader('www-authenticate', 'Bearer');
      throw new HttpError(
        401,
        'unauthorized',
        'missing or wrong bearer token: send the header "Authorization: Bearer <TOOLBUS_TOKEN>"',
      );
    }
    if (path === '/mcp' || path.startsWith('/mcp/')) {
      if (!options.mcpHandler) throw new HttpError(404, 'not-found', 'this gateway serves no MCP endpoint');
      await options.mcpHandler(req, res);
      return;
    }
    if (path === '/api/v1/tools') {
      if (method !== 'GET') throw methodNotAllowed(method, path, 'GET');
      sendJson(res, 200, {
        tools: options.tools.list().map((t) => ({
          name: t.name,
          description: t.description,
          parameters: t.schema.parameters,
        })),
      });
      return;
    }
    const invoke = /^\/api\/v1\/tools\/([^/]+)\/invoke$/.exec(path);
    if (invoke) {
      if (method !== 'POST') throw methodNotAllowed(method, path, 'POST');
      const name = decodePathPart(invoke[1] ?? '');
      const text = await readBody(req, maxBodyBytes);
      const args = text.trim() === '' ? {} : parseJsonBody(text, `tool '${name}'`);
      if (!isPlainObject(args)) {
        throw new HttpError(
          400,
          'invalid-request',
          `tool '${name}': the body must be a JSON object of arguments`,
        );
      }
      if (!options.tools.get(name)) {
        const names = options.tools.list().map((t) => t.name);
        // A tool whose config item the registry skipped: say why, not only that it is unknown.
        const skipped = options.problems?.().find((p) => p.key === `tool/${name}`);
        throw new HttpError(
          404,
          'unknown-tool',
          `unknown tool '${name}'` +
            (skipped ? ` (its config item ${skipped.key} was skipped: ${skipped.message})` : '') +
            `; available tools: ${names.length ? names.join(', ') : '(none)'}`,
        );
      }
      const user = url.searchParams.get('user') ?? headerValue(req, 'x-toolbus-user') ?? defaultUser;
      const result = await options.tools.call(name, args, {
        signal: controller.signal,
        timeoutMs: toolTimeoutMs,
        user,
      });
      sendJson(res, 200, {
        name: result.name,
        callId: result.callId,
        content: result.content,
        isError: result.isError,
        ...(result.error ? { code: result.error.code } : {}),
      });
      return;
    }
    if (path === '/api/v1/agent') {
      if (method !== 'POST') throw methodNotAllowed(method, path, 'POST');
      await handleAgent(req, res, controller);
      return;
    }
    const configMatch = /^\/api\/v1\/config\/([^/]+)(?:\/([^/]+))?$/.exec(path);
    if (configMatch) {
      await handleConfig(req, res, method, decodePathPart(configMatch[1] ?? ''), configMatch[2], url);
      return;
    }
    throw new HttpError(
      404,
      'not-found',
      `no route for ${method} ${path}; see /api/v1/health, /api/v1/tools, /api/v1/agent and /api/v1/config/{type}`,
    );
  }

  async function handleAgent(
    req: IncomingMessage,
    res: ServerResponse,
    controller: AbortController,
  ): Promise<void> {
    const body = parseJsonBody(await readBody(req, maxBodyBytes), 'agent request');
    if (!isPlainObject(body) || typeof body.question !== 'string' || body.question.trim() === '') {
      throw new HttpError(
        400,
        'invalid-request',
        'agent request: expected a JSON object with a non-empty "question" string',
      );
    }
    if (body.user !== undefined && typeof body.user !== 'string') {
      throw new HttpError(400, 'invalid-request', 'agent request: "user" must be a string');
    }
    const history = parseHistory(body.history);
    if (!options.agent) {
      throw new HttpError(
        503,
        'no-model',
        options.agentUnavailableMessage ?? 'no model is configured, so the agent is not running',
      );
    }
    const user = (body.user as string | undefined) ?? defaultUser;
    const wantsStream = (req.headers.accept ?? '').includes('text/event-stream');
    if (!wantsStream) {
      const answer = await options.agent.ask(body.question, { user, history, signal: controller.signal });
      sendJson(res, 200, { answer });
      return;
    }
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
    });
    res.flushHeaders(); // the client has its 200 at once, not only with the first event
    const send = (event: GatewayAgentEvent): void => {
      if (!res.writableEnded) res.write(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
    };
    const heartbeat = setInterval(() => {
      if (!res.writableEnded) res.write(': keep-alive\n\n');
    }, heartbeatMs);
    try {
      const answer = await options.agent.ask(body.question, {
        user,
        history,
        signal: controller.signal,
        onEvent: (event) => {
          if (event.type !== 'answer') send(event);
        },
      });
      send({ type: 'answer', content: answer });
    } catch (error) {
      send({ type: 'error', content: errorMessage(error) });
    } finally {
      clearInterval(heartbeat);
    }
    res.end();
  }

  async function handleConfig(
    req: IncomingMessage,
    res: ServerResponse,
    method: string,
    type: string,
    rawKey: string | undefined,
    url: URL,
  ): Promise<void> {
    const store = options.store;
    if (!store) throw new HttpError(404, 'not-found', 'this gateway serves no config store');
    if (rawKey === undefined) {
      if (method !== 'GET') throw methodNotAllowed(method, `/api/v1/config/${type}`, 'GET');
      const items = await store.list(type);
      sendJson(res, 200, {
        type,
        items: items.map((i) => ({ key: i.key, value: i.value, revision: i.revision })),
      });
      return;
    }
    const key = decodePathPart(rawKey);
    if (method === 'GET') {
      const item = await store.get(type, key);
      if (!item) throw new HttpError(404, 'not-found', `no config item '${type}/${key}'`);
      sendJson(res, 200, { type, key, value: item.value, revision: item.revision });
      return;
    }
    const ifRevision = parseRevision(url.searchParams.get('ifRevision'));
    if (method === 'PUT') {
      const text = await readBody(req, maxBodyBytes);
      if (text.trim() === '')
        throw new HttpError(
          400,
          'invalid-request',
          `config '${type}/${key}': send the JSON value as the body`,
        );
      const revision = await store.put(type, key, text, ifRevision === undefined ? {} : { ifRevision });
      sendJson(res, 200, { type, key, revision });
      return;
    }
    if (method === 'DELETE') {
      const existed = await store.delete(type, key, ifRevision === undefined ? {} : { ifRevision });
      if (!existed) throw new HttpError(404, 'not-found', `no config item '${type}/${key}'`);
      sendJson(res, 200, { type, key, deleted: true });
      return;
    }
    throw methodNotAllowed(method, `/api/v1/config/${type}/${key}`, 'GET, PUT, DELETE');
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const controller = new AbortController();
    inFlight.add(controller);
    // A client that goes away cancels its agent run or tool call.
    const onClose = (): void => {
      if (!res.writableFinished)
        controller.abort(new ToolbusError('cancelled', 'the HTTP client disconnected'));
    };
    res.on('close', onClose);
    try {
      if (closing) throw new HttpError(503, 'unavailable', 'the gateway is shutting down');
      await route(req, res, controller);
    } catch (error) {
      if (error instanceof HttpError) sendError(res, error.status, error.code, error.message);
      else if (isToolbusError(error)) {
        const status = statusForCode(error.code);
        sendError(res, status, error.code, error.message);
      } else sendError(res, 500, 'internal', errorMessage(error));
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
      if (!isLoopbackHost(host) && !options.token) {
        throw new ToolbusError(
          'usage',
          `refusing to listen on ${host} without a token: anyone who can reach that address could call your tools ` +
            `and change your config. Set TOOLBUS_TOKEN to a secret, or listen on 127.0.0.1.`,
        );
      }
      const srv = createServer((req, res) => {
        void handle(req, res);
      });
      server = srv;
      await new Promise<void>((resolve, reject) => {
        srv.once('error', reject);
        srv.listen(port, host, () => {
          srv.off('error', reject);
          resolve();
        });
      });
      const address = srv.address() as AddressInfo;
      const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
      return `http://${shownHost}:${address.port}`;
    },
    close(closeOptions = {}) {
      closing ??= (async () => {
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

/** Decodes one `%`-encoded path segment; a malformed escape is the caller's mistake (400), not a 500. */
function decodePathPart(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    throw new HttpError(
      400,
      'invalid-request',
      `the path segment '${part.slice(0, 100)}' has a malformed %-escape; encode it with encodeURIComponent`,
    );
  }
}

function headerValue(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function parseRevision(text: string | null): number | undefined {
  if (text === null) return undefined;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0) {
    throw new HttpError(400, 'invalid-request', `ifRevision must be a non-negative integer, got '${text}'`);
  }
  return n;
}

function parseHistory(value: unknown): GatewayHistoryItem[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (
    !Array.isArray(value) ||
    !value.every(
      (v) =>
        isPlainObject(v) && (v.role === 'user' || v.role === 'assistant') && typeof v.content === 'string',
    )
  ) {
    throw new HttpError(
      400,
      'invalid-request',
      'agent request: "history" must be an array of { "role": "user" | "assistant", "content": string }',
    );
  }
  return value as GatewayHistoryItem[];
}

function methodNotAllowed(method: string, path: string, allowed: string): HttpError {
  return new HttpError(405, 'method-not-allowed', `${method} is not allowed on ${path}; use ${allowed}`);
}

function statusForCode(code: string): number {
  switch (code) {
    case 'invalid-config':
    case 'invalid-request':
    case 'invalid-arguments':
      return 400;
    case 'config-conflict':
      return 409;
    case 'too-large':
      return 413;
    case 'unknown-tool':
      return 404;
    case 'unavailable':
      return 503;
    case 'timeout':
      return 504;
    case 'cancelled':
      return 499;
    default:
      return 500;
  }
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
