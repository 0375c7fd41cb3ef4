/**
 * @module A server-sent event stream as the gateway's streaming routes answer it (the agent, a run's
 * events, a call's states): the 200 with its headers at once, one `event:`/`data:` frame per event,
 * and a `: keep-alive` comment while the stream is quiet, so clients and proxies with an idle timeout
 * keep it open.
 */
import type { RouteContext } from './route-context.js';

/** An open event stream (see the module). */
export interface EventStream {
  /** Writes one event, its data as JSON; nothing once the response has ended. */
  send(event: string, data: unknown): void;
  /** Stops the keep-alive comments and ends the response. Idempotent. */
  end(): void;
}

/** Answers 200 `text/event-stream` (with `headers` besides the route's own) and returns the stream. */
export function openEventStream(
  ctx: RouteContext,
  heartbeatMs: number,
  headers: Readonly<Record<string, string>> = {},
): EventStream {
  const { res } = ctx;
  res.writeHead(200, {
    ...ctx.headers,
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    ...headers,
  });
  res.flushHeaders(); // the client has its 200 at once, not only with the first event
  const heartbeat = setInterval(() => {
    if (!res.writableEnded) res.write(': keep-alive\n\n');
  }, heartbeatMs);
  return {
    send(event, data) {
      if (!res.writableEnded) res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    },
    end() {
      clearInterval(heartbeat);
      if (!res.writableEnded) res.end();
    },
  };
}
