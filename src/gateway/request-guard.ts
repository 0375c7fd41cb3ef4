/**
 * @module Who may talk to the gateway at all, checked before anything else: the `Host` a request names
 * (DNS rebinding: a page on attacker.example whose name now resolves to 127.0.0.1 sends `Host:
 * attacker.example`), the `Origin` of a browser page (a cross-site page sends its own), and the CORS
 * headers an allowed page needs. Only the gateway's own origin and the operator's allowlist get through.
 */
import type { IncomingMessage } from 'node:http';
import { HttpError } from './http-error.js';

/** True for 127.0.0.0/8, ::1 and `localhost`. */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/**
 * True for an https URL, or an http one on a loopback host, where nothing crosses the network: what
 * goes over plain http elsewhere (keys fetched, URLs advertised to clients) could be read or swapped.
 * False for anything else, and for text that is not a URL.
 */
export function isHttpsOrLoopbackUrl(url: string | URL): boolean {
  let parsed: URL;
  try {
    parsed = typeof url === 'string' ? new URL(url) : url;
  } catch {
    return false;
  }
  return parsed.protocol === 'https:' || (parsed.protocol === 'http:' && isLoopbackHost(parsed.hostname));
}

/** The host names every gateway answers to: its loopback names. */
const LOOPBACK_NAMES = ['127.0.0.1', 'localhost', '[::1]'];

/** Options of {@link createRequestGuard}. */
export interface RequestGuardOptions {
  /** Host names accepted besides the loopback ones; `*` accepts any (behind a proxy that checks it). */
  allowedHosts?: readonly string[];
  /** Origins (`https://app.example.com`) whose pages may call the gateway, with CORS. */
  allowedOrigins?: readonly string[];
}

/** The checks of {@link createRequestGuard}. */
export interface RequestGuard {
  /** The listening address, once known: a specific non-loopback address is accepted as a host name too. */
  setBoundAddress(address: string): void;
  /** Throws a 403 `HttpError` naming the header and the option when `Host` or `Origin` is not allowed. */
  check(req: IncomingMessage): void;
  /**
   * The host name of the request's `Host` (lower case, IPv6 in brackets, no port) when it is a name the
   * gateway answers to by name: a loopback name, the listening address or one of `allowedHosts`. A name
   * let through only by `'*'` is undefined: the client chose it.
   */
  knownHostOf(req: IncomingMessage): string | undefined;
  /** The CORS headers for this request: none unless its `Origin` is an allowed foreign one. */
  corsHeaders(req: IncomingMessage): Record<string, string>;
  /** True for a CORS preflight (`OPTIONS` with `Access-Control-Request-Method`) from an allowed origin. */
  isPreflight(req: IncomingMessage): boolean;
}

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** `HOST[:PORT]` → the lower-case host name (IPv6 kept in brackets); undefined when it is not that shape. */
function hostName(host: string): string | undefined {
  const match = /^(\[[0-9a-f:.]+\]|[^:[\]\s,/@]+)(?::\d{1,5})?$/.exec(host.trim().toLowerCase());
  return match?.[1];
}

function normalizeOrigin(origin: string): string {
  return origin.trim().toLowerCase().replace(/\/+$/, '');
}

const CORS_METHODS = 'GET, HEAD, POST, PUT, DELETE';
const CORS_REQUEST_HEADERS =
  'authorization, content-type, accept, last-event-id, mcp-session-id, mcp-protocol-version';
const CORS_EXPOSED_HEADERS = 'mcp-session-id, mcp-protocol-version, www-authenticate';

/**
 * Creates the `Host`/`Origin` checks of a gateway.
 *
 * - `Host` must be a loopback name (`127.0.0.1`, `localhost`, `[::1]`, any port), the specific address
 *   the gateway listens on, or one of `allowedHosts`.
 * - A request with an `Origin` (every cross-origin request of a browser page has one) must come from the
 *   gateway's own origin (`http(s)://` + its `Host`) or one of `allowedOrigins`. A browser request
 *   marked cross-site (`Sec-Fetch-Site`) without an allowed `Origin`, e.g. an `<img>` or `<script>`
 *   pointing at the gateway, is refused too.
 */
export function createRequestGuard(options: RequestGuardOptions = {}): RequestGuard {
  const hosts = new Set([
    ...LOOPBACK_NAMES,
    ...(options.allowedHosts ?? []).map((h) =>
      h.trim() === '*' ? '*' : (hostName(h) ?? h.trim().toLowerCase()),
    ),
  ]);
  const anyHost = hosts.has('*');
  const origins = new Set((options.allowedOrigins ?? []).map(normalizeOrigin));

  const foreignAllowed = (req: IncomingMessage): string | undefined => {
    const origin = header(req, 'origin');
    if (origin === undefined) return undefined;
    const normalized = normalizeOrigin(origin);
    return origins.has(normalized) ? origin : undefined;
  };

  return {
    setBoundAddress(address) {
      if (!isLoopbackHost(address) && address !== '0.0.0.0' && address !== '::') {
        hosts.add(address.includes(':') ? `[${address.toLowerCase()}]` : address.toLowerCase());
      }
    },
    check(req) {
      const host = header(req, 'host');
      const name = host === undefined ? undefined : hostName(host);
      if (!anyHost && (name === undefined || !hosts.has(name))) {
        const shown = host === undefined ? '(none)' : `'${host.slice(0, 100)}'`;
        throw new HttpError(
          403,
          'forbidden',
          `the Host header ${shown} is not a name this gateway answers to (it accepts ` +
            `${[...hosts].join(', ')}); to reach it under another name, add that name to the allowed ` +
            `hosts (toolbus up --allowed-hosts NAME, option allowedHosts)`,
        );
      }
      const origin = header(req, 'origin');
      if (origin !== undefined) {
        const own =
          host !== undefined &&
          ['http://', 'https://'].some((s) => normalizeOrigin(origin) === s + host.trim().toLowerCase());
        if (!own && !origins.has(normalizeOrigin(origin))) {
          throw new HttpError(
            403,
            'forbidden',
            `the Origin header '${origin.slice(0, 100)}' is not this gateway's own origin, so a web page ` +
              `there may not call it; to allow that page, add its origin to the allowed origins ` +
              `(toolbus up --allowed-origins ${origin.slice(0, 100)}, option allowedOrigins)`,
          );
        }
        return;
      }
      const site = header(req, 'sec-fetch-site');
      if (site !== undefined && site !== 'same-origin' && site !== 'none') {
        throw new HttpError(
          403,
          'forbidden',
          `a ${site} browser request without an Origin header is refused (Sec-Fetch-Site: ${site}); ` +
            `pages of other origins may call the gateway only from an allowed origin ` +
            `(toolbus up --allowed-origins, option allowedOrigins)`,
        );
      }
    },
    knownHostOf(req) {
      const host = header(req, 'host');
      const name = host === undefined ? undefined : hostName(host);
      return name !== undefined && name !== '*' && hosts.has(name) ? name : undefined;
    },
    corsHeaders(req): Record<string, string> {
      const origin = foreignAllowed(req);
      if (origin === undefined) return {};
      return {
        'access-control-allow-origin': origin,
        'access-control-expose-headers': CORS_EXPOSED_HEADERS,
        vary: 'Origin',
      };
    },
    isPreflight(req) {
      return (
        req.method === 'OPTIONS' &&
        header(req, 'access-control-request-method') !== undefined &&
        foreignAllowed(req) !== undefined
      );
    },
  };
}

/** The headers of the answer to an allowed preflight. */
export function preflightHeaders(): Record<string, string> {
  return {
    'access-control-allow-methods': CORS_METHODS,
    'access-control-allow-headers': CORS_REQUEST_HEADERS,
    'access-control-max-age': '600',
  };
}
