/**
 * @module The MCP server bridge: any toolbus tool set (function tools, bus tool services, HTTP tools, even
 * other MCP servers) served to any MCP client, over stdio or Streamable HTTP, in both protocol eras.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Readable, Writable } from 'node:stream';
import { NodeStreamableHTTPServerTransport, toNodeHandler, toWebRequest } from '@modelcontextprotocol/node';
import {
  ProtocolError,
  ProtocolErrorCode,
  Server,
  createMcpHandler,
  isInitializeRequest,
  isLegacyRequest,
  type CallToolResult,
  type Tool as McpToolDefinition,
} from '@modelcontextprotocol/server';
import { StdioServerTransport, serveStdio } from '@modelcontextprotocol/server/stdio';
import type { Tool, ToolProvider } from '../../tools/index.js';

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
  /** Most 2025-era sessions kept at once; the oldest is closed beyond it. @default 1000 */
  maxSessions?: number;
  /** Out-of-band errors. @default ignored */
  onError?: (error: Error) => void;
}

/** A Node `(req, res)` handler serving MCP over Streamable HTTP, for the gateway's `/mcp` path. */
export interface McpHttpHandler {
  (req: IncomingMessage, res: ServerResponse): Promise<void>;
  /** The same as calling the handler. */
  handle(req: IncomingMessage, res: ServerResponse): Promise<void>;
  /** Ends every session and stream. Idempotent. */
  close(): Promise<void>;
}

/** A running stdio bridge. */
export interface McpStdioBridge {
  /** Ends the connection. Idempotent. */
  close(): Promise<void>;
}

function toMcpTool(tool: Tool): McpToolDefinition {
  const def: McpToolDefinition = {
    name: tool.name,
    description: tool.description,
    inputSchema: tool.schema.parameters as McpToolDefinition['inputSchema'],
  };
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

function buildServer(tools: McpBridgeTools, options: McpBridgeOptions, followChanges: boolean): Server {
  const server = new Server(
    { name: options.name ?? 'toolbus', version: options.version ?? '0.1.0' },
    {
      capabilities: { tools: { listChanged: true } },
      ...(options.instructions !== undefined ? { instructions: options.instructions } : {}),
    },
  );
  server.setRequestHandler('tools/list', () => ({ tools: tools.list().map(toMcpTool) }));
  server.setRequestHandler('tools/call', async (request, ctx): Promise<CallToolResult> => {
    const { name } = request.params;
    if (!tools.get(name)) {
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, `unknown tool '${name}'`);
    }
    const result = await tools.call(name, request.params.arguments ?? {}, {
      signal: ctx.mcpReq.signal,
      callId: String(ctx.mcpReq.id),
      ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
    });
    return {
      content: [{ type: 'text', text: result.content }],
      ...(result.isError ? { isError: true } : {}),
    };
  });
  if (followChanges) {
    const unsubscribe = subscribe(tools, () => {
      server.sendToolListChanged().catch(() => undefined);
    });
    const previous = server.onclose;
    server.onclose = () => {
      unsubscribe();
      previous?.();
    };
  }
  return server;
}

/**
 * An MCP server (the SDK's low-level `Server`) exposing `tools`: `tools/list` from `tools.list()`,
 * `tools/call` through `tools.call` (errors and bad arguments come back as `isError` results; the client's
 * cancel aborts the tool's signal). Sends `notifications/tools/list_changed` when `tools.onChange` fires.
 * Connect it to any transport.
 *
 * @example
 * ```ts
 * const server = createMcpServer(toolSet);
 * await server.connect(new StdioServerTransport());
 * ```
 */
export function createMcpServer(tools: McpBridgeTools, options: McpBridgeOptions = {}): Server {
  return buildServer(tools, options, true);
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
  const transport =
    options.stdin || options.stdout ? new StdioServerTransport(options.stdin, options.stdout) : undefined;
  const handle = serveStdio(() => buildServer(tools, options, true), {
    ...(transport ? { transport } : {}),
    ...(options.onError ? { onerror: options.onError } : {}),
  });
  let closing: Promise<void> | undefined;
  return {
    close: () => (closing ??= handle.close()),
  };
}

/**
 * A Node `(req, res)` handler serving `tools` over Streamable HTTP: 2026-07-28 requests statelessly
 * (`tools/list_changed` on `subscriptions/listen` streams), 2025-era clients with sessions (list changes
 * pushed on their GET stream). Mount it at the gateway's `/mcp` path.
 *
 * @example
 * ```ts
 * const mcp = createMcpHttpHandler(registry.tools);
 * http.createServer((req, res) => void (req.url === '/mcp' ? mcp(req, res) : other(req, res)));
 * ```
 */
export function createMcpHttpHandler(
  tools: McpBridgeTools,
  options: McpHttpHandlerOptions = {},
): McpHttpHandler {
  const maxSessions = options.maxSessions ?? 1000;
  const onError = options.onError;
  const modern = createMcpHandler(() => buildServer(tools, options, false), {
    ...(onError ? { onerror: onError } : {}),
  });
  const modernNode = toNodeHandler(modern, onError ? { onerror: onError } : {});
  const unsubscribe = subscribe(tools, () => modern.notify.toolsChanged());
  const sessions = new Map<string, NodeStreamableHTTPServerTransport>();
  let closed = false;

  const jsonRpcError = (res: ServerResponse, status: number, code: number, message: string): void => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
  };

  // Never rejects: a `void handler(req, res)` mount must not turn an oversize body or a client that
  // hung up mid-request into an unhandled rejection.
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    try {
      await route(req, res);
    } catch (error) {
      const err = error instanceof Error ? error : new Error(String(error));
      const tooLarge = err.name === 'RequestBodyTooLargeError';
      if (!tooLarge) onError?.(err);
      if (res.headersSent) {
        if (!res.writableEnded) res.end();
      } else if (tooLarge) {
        jsonRpcError(res, 413, -32000, err.message);
      } else {
        jsonRpcError(res, 500, -32603, 'internal error of the MCP endpoint');
      }
    }
  };

  const route = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (closed) {
      return jsonRpcError(res, 503, -32000, 'MCP endpoint closed');
    }
    const sessionHeader = req.headers['mcp-session-id'];
    const sessionId = typeof sessionHeader === 'string' ? sessionHeader : undefined;
    let parsedBody: unknown;
    let legacy = sessionId !== undefined;
    if (req.method === 'POST') {
      const web = await toWebRequest(req);
      const text = await web.clone().text();
      try {
        parsedBody = text ? JSON.parse(text) : undefined;
      } catch {
        return jsonRpcError(res, 400, -32700, 'Parse error');
      }
      if (!legacy) legacy = await isLegacyRequest(web, parsedBody);
    }
    if (sessionId !== undefined) {
      const transport = sessions.get(sessionId);
      if (!transport) return jsonRpcError(res, 404, -32001, `Session not found: '${sessionId}'`);
      await transport.handleRequest(req, res, parsedBody);
      return;
    }
    if (legacy && isInitializeRequest(parsedBody)) {
      const transport: NodeStreamableHTTPServerTransport = new NodeStreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => {
          sessions.set(id, transport);
          if (sessions.size > maxSessions) {
            const oldest = sessions.keys().next().value;
            if (oldest !== undefined) {
              const evicted = sessions.get(oldest);
              sessions.delete(oldest);
              evicted?.close().catch(() => undefined);
            }
          }
        },
      });
      transport.onclose = () => {
        if (transport.sessionId) sessions.delete(transport.sessionId);
      };
      await buildServer(tools, options, true).connect(transport);
      await transport.handleRequest(req, res, parsedBody);
      return;
    }
    await modernNode(req, res, parsedBody);
  };

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> =>
    (closing ??= (async () => {
      closed = true;
      unsubscribe();
      const open = [...sessions.values()];
      sessions.clear();
      await Promise.all(open.map((t) => t.close().catch(() => undefined)));
      await modern.close();
    })());

  const handler = ((req: IncomingMessage, res: ServerResponse) => handle(req, res)) as McpHttpHandler;
  handler.handle = handle;
  handler.close = close;
  return handler;
}
