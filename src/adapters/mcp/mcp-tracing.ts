/**
 * @module The spans of MCP tool calls (OpenTelemetry MCP conventions): `tools/call {tool}`, CLIENT when
 * toolbus calls an MCP server's tool, SERVER when the bridge serves one. The client puts its W3C trace
 * context in the request's `params._meta` (where the conventions carry it), and the bridge continues
 * the caller's trace from there. With no SDK registered the calls run as they are (`tools/tracing.ts`).
 */
import type { Span } from '@opentelemetry/api';
import {
  TraceAttribute,
  endSpanWithError,
  endSpanWithFailure,
  runInSpan,
  startSpan,
  tracingEnabled,
  otel,
} from '../../tools/index.js';

/** How an MCP session reaches its server, as `network.transport` names it. */
export type McpNetworkTransport = 'pipe' | 'tcp';

/** What a `tools/call` result says of its outcome, enough to end a span. */
interface CallOutcome {
  isError?: boolean | undefined;
}

function describe(span: Span, tool: string, transport: McpNetworkTransport | undefined): void {
  span.setAttribute('mcp.method.name', 'tools/call');
  span.setAttribute(TraceAttribute.OperationName, 'execute_tool');
  span.setAttribute(TraceAttribute.ToolName, tool);
  if (transport !== undefined) span.setAttribute('network.transport', transport);
}

/** Ends a `tools/call` span: an `isError` result is a failed tool (`error.type` `tool-error`). */
function endCall<T extends CallOutcome>(span: Span, result: T): T {
  if (result.isError === true) endSpanWithError(span, 'tool-error', undefined);
  else span.end();
  return result;
}

function settle<T extends CallOutcome>(span: Span, running: Promise<T>): Promise<T> {
  return running.then(
    (result) => endCall(span, result),
    (error: unknown) => {
      endSpanWithFailure(span, error);
      throw error;
    },
  );
}

/**
 * Calls tool `tool` of MCP server `server` (`run`) inside a CLIENT span. `run` gets the `_meta` entries
 * that carry the span's trace context (undefined when tracing is off), to send with the request.
 */
export function traceMcpClientCall<T extends CallOutcome>(
  server: string,
  tool: string,
  transport: McpNetworkTransport,
  run: (meta: Record<string, string> | undefined) => Promise<T>,
): Promise<T> {
  if (!tracingEnabled()) return run(undefined);
  const { SpanKind, context, propagation, trace } = otel();
  const parent = context.active();
  const span = startSpan(`tools/call ${tool}`, { kind: SpanKind.CLIENT }, parent);
  if (span.isRecording()) {
    describe(span, tool, transport);
    // The server's config id: its address may be a command line (stdio) or carry secrets (a URL).
    span.setAttribute('toolbus.mcp.server', server);
  }
  const meta: Record<string, string> = {};
  propagation.inject(trace.setSpan(parent, span), meta);
  let running: Promise<T>;
  try {
    running = runInSpan(span, () => run(meta), parent);
  } catch (error) {
    running = Promise.reject(error);
  }
  return settle(span, running);
}

/**
 * Serves one `tools/call` of the bridge (`run`) inside a SERVER span, continuing the trace the request's
 * `params._meta` carries, else the active one (the gateway's request span, for `/mcp`).
 */
export function traceMcpServerCall<T extends CallOutcome>(
  tool: string,
  requestId: string,
  meta: unknown,
  run: () => Promise<T>,
): Promise<T> {
  if (!tracingEnabled()) return run();
  const { ROOT_CONTEXT, SpanKind, context, propagation, trace } = otel();
  const carried =
    typeof meta === 'object' && meta !== null
      ? propagation.extract(ROOT_CONTEXT, meta as Record<string, unknown>)
      : ROOT_CONTEXT;
  const parent = trace.getSpanContext(carried) !== undefined ? carried : context.active();
  const span = startSpan(`tools/call ${tool}`, { kind: SpanKind.SERVER }, parent);
  if (span.isRecording()) {
    describe(span, tool, undefined);
    span.setAttribute('jsonrpc.request.id', requestId);
  }
  let running: Promise<T>;
  try {
    running = runInSpan(span, run, parent);
  } catch (error) {
    running = Promise.reject(error);
  }
  return settle(span, running);
}
