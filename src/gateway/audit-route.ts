/**
 * @module `GET /api/v1/audit?tool=&user=&since=&limit=`: the audit log over HTTP, latest entries oldest
 * first. A bad query value is a 400 that says what is accepted.
 */
import {
  DEFAULT_AUDIT_QUERY_LIMIT,
  parseLimit,
  parseSince,
  type AuditQuery,
  type AuditReader,
} from '../audit/index.js';
import { isToolbusError } from '../errors/index.js';
import { HttpError, sendJson } from './http-error.js';
import type { RouteContext } from './route-context.js';

const PARAMETERS = ['tool', 'user', 'since', 'limit'];

/** Reads the query string into an audit query. @throws HttpError 400 naming the bad parameter. */
export function auditQueryOf(params: URLSearchParams, now: number = Date.now()): AuditQuery {
  for (const name of params.keys()) {
    if (!PARAMETERS.includes(name)) {
      throw new HttpError(
        400,
        'invalid-request',
        `unknown query parameter '${name.slice(0, 50)}' of /api/v1/audit; expected ${PARAMETERS.join(', ')}`,
      );
    }
  }
  const query: AuditQuery = {};
  for (const name of ['tool', 'user'] as const) {
    const value = params.get(name);
    if (value === null) continue;
    if (value === '') throw new HttpError(400, 'invalid-request', `${name} must not be empty when given`);
    query[name] = value;
  }
  try {
    const since = params.get('since');
    if (since !== null) query.since = parseSince(since, now);
    const limit = params.get('limit');
    query.limit = limit === null ? DEFAULT_AUDIT_QUERY_LIMIT : parseLimit(limit);
  } catch (error) {
    if (isToolbusError(error) && error.code === 'usage') {
      throw new HttpError(400, 'invalid-request', error.message);
    }
    throw error;
  }
  return query;
}

/** Answers `GET /api/v1/audit` with `{ entries }`, or 404 when the gateway was given no audit log. */
export async function handleAuditRoute(ctx: RouteContext, audit: AuditReader | undefined): Promise<void> {
  if (!audit) {
    throw new HttpError(404, 'not-found', 'this gateway serves no audit log (toolbus up --no-audit?)');
  }
  const entries = await audit.query(auditQueryOf(ctx.url.searchParams));
  sendJson(ctx.res, 200, { entries }, ctx.headers);
}
