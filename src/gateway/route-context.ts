/**
 * @module What a gateway route handler gets: the request, the response, the parsed path and a body
 * reader that applies the gateway's limits.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Principal } from '../policy/index.js';
import { HttpError } from './http-error.js';

/** One request as a route handler sees it. */
export interface RouteContext {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly url: URL;
  /** The path without a trailing slash, e.g. `/api/v1/tools`. */
  readonly path: string;
  readonly method: string;
  /** Aborted when the client goes away or the gateway stops waiting at shutdown. */
  readonly signal: AbortSignal;
  /** Extra headers for every answer (the CORS headers of an allowed origin). */
  readonly headers: Readonly<Record<string, string>>;
  /** Reads the body as text (bounded by `maxBodyBytes`). */
  readText(): Promise<string>;
  /** Reads and parses the body as JSON (bounded in size and depth); `what` names it in errors. */
  readJson(what: string): Promise<unknown>;
  /** Who the request is, once authenticated (public routes may have none). */
  principal: Principal | undefined;
  /** The tool and user the request is about, once known: named in a denial event. */
  tool?: string;
  user?: string;
}

/** True for a JSON object (not an array, not null). */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Decodes one `%`-encoded path segment; a malformed escape is the caller's mistake (400), not a 500. */
export function decodePathPart(part: string): string {
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

/** The first value of a request header. */
export function headerValue(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}
