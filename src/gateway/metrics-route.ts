/**
 * @module Prometheus metrics over HTTP: the gateway's `GET /metrics` route (behind its token) and a
 * listener of its own that serves only `GET /metrics`, without a token, on loopback, for a scraper on
 * the same host. Both check `Host` and `Origin` as the gateway does.
 */
import { listenHttp } from './listen.js';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { ToolbusError } from '../errors/index.js';
import { HttpError, sendError } from './http-error.js';
import { createRequestGuard, isLoopbackHost } from './request-guard.js';

/** One scrape: the exposition text and its content type (`text/plain; version=0.0.4` for Prometheus). */
export interface GatewayMetricsText {
  contentType: string;
  body: string;
}

/** Collects the metrics now, e.g. `() => metrics.scrape()`. */
export type GatewayMetrics = () => Promise<GatewayMetricsText>;

/** Sends one scrape of `metrics` as a 200 answer, or 404 when the gateway was given none. */
export async function sendMetrics(
  res: ServerResponse,
  metrics: GatewayMetrics | undefined,
  headers: Readonly<Record<string, string>> = {},
): Promise<void> {
  if (!metrics) throw new HttpError(404, 'not-found', 'this gateway serves no metrics');
  const { contentType, body } = await metrics();
  res.writeHead(200, {
    ...headers,
    'content-type': contentType,
    'content-length': Buffer.byteLength(body),
    // A scrape is a reading of now: never from a cache.
    'cache-control': 'no-store',
  });
  res.end(body);
}

/** Options of {@link createMetricsListener}. */
export interface MetricsListenerOptions {
  /** What `GET /metrics` serves. */
  metrics: GatewayMetrics;
  /** Host names accepted besides the loopback ones (as the gateway's `allowedHosts`). @default [] */
  allowedHosts?: readonly string[];
  /** Called with an unexpected failure (the scraper gets 500 `internal`). @default ignored */
  onError?: (error: Error) => void;
}

/** A running metrics listener. */
export interface MetricsListener {
  /**
   * Starts listening; resolves with the base URL (`http://127.0.0.1:9464`). Rejects with `usage` for a
   * host that is not loopback: the listener has no token.
   */
  listen(options?: { host?: string; port?: number }): Promise<string>;
  /** Stops listening and closes its connections. Idempotent. */
  close(): Promise<void>;
}

/**
 * A listener that answers `GET /metrics` and nothing else (404), without a token, for a Prometheus
 * scraper on the same host. Loopback only; `Host` and `Origin` are checked as on the gateway, so a web
 * page cannot read it through DNS rebinding.
 *
 * @example
 * ```ts
 * const listener = createMetricsListener({ metrics: () => metrics.scrape() });
 * const url = await listener.listen({ port: 9464 }); // scrape `${url}/metrics`
 * ```
 */
export function createMetricsListener(options: MetricsListenerOptions): MetricsListener {
  const guard = createRequestGuard({ allowedHosts: options.allowedHosts ?? [] });
  let server: Server | undefined;
  let closing: Promise<void> | undefined;

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // Nothing here reads a body: drop it, so the answer is not lost to a reset.
    req.resume();
    try {
      guard.check(req);
      const path = new URL(req.url ?? '/', 'http://metrics').pathname;
      if (req.method !== 'GET' || path !== '/metrics') {
        throw new HttpError(404, 'not-found', 'this listener serves only GET /metrics');
      }
      await sendMetrics(res, options.metrics);
    } catch (error) {
      if (error instanceof HttpError) return sendError(res, error.status, error.code, error.message);
      options.onError?.(error instanceof Error ? error : new Error(String(error)));
      sendError(res, 500, 'internal', 'collecting the metrics failed; the log has the details');
    }
  }

  return {
    async listen(listenOptions = {}) {
      const host = listenOptions.host ?? '127.0.0.1';
      if (closing) throw new ToolbusError('closed', 'the metrics listener is closed');
      if (!isLoopbackHost(host)) {
        throw new ToolbusError(
          'usage',
          `refusing to serve metrics without a token on ${host}: listen on 127.0.0.1, or scrape the gateway's /metrics with its token`,
        );
      }
      const srv = createServer({ headersTimeout: 10_000, requestTimeout: 30_000 }, (req, res) => {
        void handle(req, res);
      });
      // A scraper needs one or two connections; more are someone else.
      srv.maxConnections = 64;
      server = srv;
      const { address, url } = await listenHttp(srv, listenOptions.port ?? 0, host);
      guard.setBoundAddress(address);
      return url;
    },
    close() {
      closing ??= (async () => {
        const srv = server;
        if (!srv) return;
        const closed = new Promise<void>((resolve) => srv.close(() => resolve()));
        srv.closeAllConnections();
        await closed;
      })();
      return closing;
    },
  };
}
