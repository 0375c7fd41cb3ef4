/**
 * @module The SERVER span of a gateway request (OpenTelemetry HTTP conventions): `{method} {route}`, with
 * `http.request.method`, `url.path`, `http.route` and `http.response.status_code`; its parent is the
 * caller's W3C trace context (`traceparent` header), read through the propagation API. The request is
 * handled with the span active, so an agent run or a tool call it starts traces below it. With no SDK
 * registered the request is handled as it is (see `tools/tracing.ts`).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  endSpanWithError,
  endSpanWithFailure,
  runInSpan,
  startSpan,
  tracingEnabled,
  otel,
} from '../tools/index.js';

/** The route templates of the gateway's path patterns, worked out once per pattern. */
const templates = new WeakMap<RegExp, string>();

/**
 * A route pattern as a template for `http.route`: `^\/api\/v1\/tools\/([^/]+)\/invoke$` →
 * `/api/v1/tools/{param}/invoke` (low cardinality, unlike the path).
 */
export function routeTemplate(pattern: RegExp): string {
  let template = templates.get(pattern);
  if (template === undefined) {
    template =
      pattern.source
        .replace(/^\^|\$$/g, '')
        .replace(/\(\?:[^)]*\)\??/g, '')
        .replace(/\([^)]*\)/g, '{param}')
        .replace(/\\\//g, '/') || '/';
    templates.set(pattern, template);
  }
  return template;
}

/**
 * Handles one request (`handle`) inside its SERVER span, ended with the response's status code: 5xx, or
 * a rejection of `handle`, marks it failed (4xx is the client's error, not the server's).
 */
export function traceRequest(
  req: IncomingMessage,
  res: ServerResponse,
  handle: () => Promise<void>,
): Promise<void> {
  if (!tracingEnabled()) return handle();
  const { ROOT_CONTEXT, SpanKind, propagation } = otel();
  const method = req.method ?? 'GET';
  const parent = propagation.extract(ROOT_CONTEXT, req.headers);
  const span = startSpan(method, { kind: SpanKind.SERVER }, parent);
  if (span.isRecording()) {
    span.setAttribute('http.request.method', method);
    const url = req.url ?? '/';
    const query = url.indexOf('?');
    span.setAttribute('url.path', query === -1 ? url : url.slice(0, query));
    span.setAttribute('url.scheme', 'http');
    const local = req.socket.localPort;
    if (local !== undefined) span.setAttribute('server.port', local);
  }
  let handling: Promise<void>;
  try {
    handling = runInSpan(span, handle, parent);
  } catch (error) {
    handling = Promise.reject(error);
  }
  return handling.then(
    () => {
      const status = res.statusCode;
      if (span.isRecording()) span.setAttribute('http.response.status_code', status);
      if (status >= 500) endSpanWithError(span, String(status), res.statusMessage);
      else span.end();
    },
    (error: unknown) => {
      endSpanWithFailure(span, error);
      throw error;
    },
  );
}

/**
 * Names the active request span after the route that matched (`POST /api/v1/agent`) and sets
 * `http.route`. A no-op outside a traced request.
 */
export function setRequestRoute(method: string, pattern: RegExp): void {
  if (!tracingEnabled()) return;
  const span = otel().trace.getActiveSpan();
  if (span === undefined || !span.isRecording()) return;
  const route = routeTemplate(pattern);
  span.setAttribute('http.route', route);
  span.updateName(`${method} ${route}`);
}
