/**
 * @module The loopback redirect of an interactive OAuth login (RFC 8252 §7.3): a listener on
 * 127.0.0.1 that the authorization server sends the person's browser back to. It accepts one request:
 * a `GET` of its path carrying the `state` of the authorization in progress; it answers anything else
 * 404 or 400, and closes after that one success, after its timeout, or on abort.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ToolbusError } from '../../../errors/index.js';
import type { McpAuthorizeRequest } from './oauth-options.js';

/** Default of {@link LoopbackRedirectOptions.timeoutMs}: five minutes for a person to approve. */
export const DEFAULT_LOGIN_TIMEOUT_MS = 300_000;

/** Options of {@link startLoopbackRedirect}. */
export interface LoopbackRedirectOptions {
  /** The port on 127.0.0.1 (a pre-registered client's redirect URI fixes it). @default 0 (a free port) */
  port?: number;
  /** The path the browser comes back to. @default '/callback' */
  path?: string;
  /** How long {@link LoopbackRedirect.authorize} waits for the browser. @default DEFAULT_LOGIN_TIMEOUT_MS */
  timeoutMs?: number;
  /** Shows the person the URL to open (print it, open a browser). Called once per authorization. */
  open: (url: URL) => void | Promise<void>;
}

/** A running {@link startLoopbackRedirect}. */
export interface LoopbackRedirect {
  /** The redirect URI to register and send: `http://127.0.0.1:<port><path>`. */
  readonly redirectUrl: string;
  /**
   * An `oauth.authorize`: shows `request.url` through `open` and resolves with the query of the
   * browser's redirect. Rejects with `timeout` after the timeout, `cancelled` on abort, `closed` once
   * the listener closed.
   */
  authorize(request: McpAuthorizeRequest): Promise<URLSearchParams>;
  /** Stops listening. Idempotent. */
  close(): Promise<void>;
}

const PAGE = (title: string, text: string): string =>
  `<!doctype html><meta charset="utf-8"><title>${title}</title>` +
  `<body style="font-family:sans-serif;margin:3em"><h1>${title}</h1><p>${text}</p></body>`;

/**
 * Listens on 127.0.0.1 for the redirect of one authorization.
 *
 * @example
 * ```ts
 * const loopback = await startLoopbackRedirect({ open: (url) => console.log(`open ${url}`) });
 * const tools = await mcpServerTools({ url, oauth: { redirectUrl: loopback.redirectUrl, authorize: loopback.authorize } });
 * await loopback.close();
 * ```
 */
export async function startLoopbackRedirect(options: LoopbackRedirectOptions): Promise<LoopbackRedirect> {
  const path = options.path ?? '/callback';
  const timeoutMs = options.timeoutMs ?? DEFAULT_LOGIN_TIMEOUT_MS;
  if (!path.startsWith('/')) {
    throw new ToolbusError(
      'invalid-config',
      `loopback redirect: the path must start with '/', got '${path}'`,
    );
  }
  let waiting: { state: string; resolve: (params: URLSearchParams) => void } | undefined;
  let done = false;
  /** Settles once the page answering the successful redirect has gone out (or its connection broke). */
  let delivered: Promise<void> = Promise.resolve();

  /** Answers one request; resolves when the answer is complete or its connection is gone. */
  const answer = (res: ServerResponse, status: number, title: string, text: string): Promise<void> => {
    const complete = new Promise<void>((resolve) => res.once('close', resolve));
    res.writeHead(status, {
      'content-type': 'text/html; charset=utf-8',
      'cache-control': 'no-store',
      // The address carries the authorization code: no page it leads to may see it.
      'referrer-policy': 'no-referrer',
      'x-content-type-options': 'nosniff',
      // One request per connection: a browser's keep-alive would hold the closing listener open.
      connection: 'close',
    });
    res.end(PAGE(title, text));
    return complete;
  };

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (req.method !== 'GET' || url.pathname !== path) {
      void answer(res, 404, 'Not found', 'Nothing here.');
      return;
    }
    const state = url.searchParams.get('state');
    if (done || waiting === undefined || state === null || state !== waiting.state) {
      void answer(res, 400, 'Not expected', 'This is not the authorization toolbus is waiting for.');
      return;
    }
    const { resolve } = waiting;
    waiting = undefined;
    done = true;
    const refused = url.searchParams.has('error') && !url.searchParams.has('code');
    delivered = answer(
      res,
      200,
      refused ? 'Not authorized' : 'Authorized',
      refused
        ? 'The authorization was not granted. You can close this window.'
        : 'toolbus is authorized. You can close this window.',
    );
    resolve(url.searchParams);
    void close();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        new ToolbusError(
          'unavailable',
          `the login could not listen on 127.0.0.1:${options.port ?? 0}${error.code ? ` (${error.code})` : ''}`,
          { cause: error },
        ),
      ),
    );
    server.listen(options.port ?? 0, '127.0.0.1', resolve);
  });
  const redirectUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`;

  let closing: Promise<void> | undefined;
  function close(): Promise<void> {
    closing ??= (async () => {
      done = true;
      const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
      // The person's page goes out whole; then no connection may keep the listener open: neither a
      // request in progress nor a connection the browser opened ahead and never used.
      await delivered;
      server.closeAllConnections();
      await stopped;
    })();
    return closing;
  }

  async function authorize(request: McpAuthorizeRequest): Promise<URLSearchParams> {
    if (done) {
      throw new ToolbusError(
        'closed',
        `the login's redirect listener (${redirectUrl}) has closed; log in again`,
      );
    }
    if (waiting !== undefined) {
      throw new ToolbusError('invalid-request', 'the login is already waiting for an authorization');
    }
    const { signal } = request;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let onAbort: (() => void) | undefined;
    try {
      return await new Promise<URLSearchParams>((resolve, reject) => {
        waiting = { state: request.state, resolve };
        timer = setTimeout(() => {
          reject(
            new ToolbusError(
              'timeout',
              `no browser came back to ${redirectUrl} within ${Math.round(timeoutMs / 1000)} s; run the login again ` +
                '(--timeout gives more time)',
            ),
          );
        }, timeoutMs);
        onAbort = () =>
          reject(new ToolbusError('cancelled', 'the login was cancelled', { cause: signal.reason }));
        if (signal.aborted) onAbort();
        else signal.addEventListener('abort', onAbort, { once: true });
        Promise.resolve(options.open(request.url)).catch(() => undefined);
      });
    } catch (error) {
      waiting = undefined;
      await close();
      throw error;
    } finally {
      clearTimeout(timer);
      if (onAbort) signal.removeEventListener('abort', onAbort);
    }
  }

  return { redirectUrl, authorize, close };
}
