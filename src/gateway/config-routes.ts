/**
 * @module `/api/v1/config/{type}[/{key}]`: the config store over HTTP. A `PUT` of an item that would run
 * a program or read an environment variable outside the operator's allowlist is refused here already,
 * besides being refused where tools are built.
 */
import type { ConfigStore } from '../config/index.js';
import type { JsonValue } from '../schema/index.js';
import { assertConfigAllowed, type ConfigAllowlist } from '../registry/index.js';
import { HttpError, methodNotAllowed, sendJson } from './http-error.js';
import { decodePathPart, type RouteContext } from './route-context.js';

function parseRevision(text: string | null): number | undefined {
  if (text === null) return undefined;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0) {
    throw new HttpError(400, 'invalid-request', `ifRevision must be a non-negative integer, got '${text}'`);
  }
  return n;
}

/** Answers one config request; `rawKey` undefined means the whole type. */
export async function handleConfigRoute(
  ctx: RouteContext,
  store: ConfigStore | undefined,
  allowlist: ConfigAllowlist,
  type: string,
  rawKey: string | undefined,
): Promise<void> {
  const { method, res, url } = ctx;
  if (!store) throw new HttpError(404, 'not-found', 'this gateway serves no config store');
  if (rawKey === undefined) {
    if (method !== 'GET') throw methodNotAllowed(method, `/api/v1/config/${type}`, 'GET');
    const items = await store.list(type);
    sendJson(
      res,
      200,
      { type, items: items.map((i) => ({ key: i.key, value: i.value, revision: i.revision })) },
      ctx.headers,
    );
    return;
  }
  const key = decodePathPart(rawKey);
  if (method === 'GET') {
    const item = await store.get(type, key);
    if (!item) throw new HttpError(404, 'not-found', `no config item '${type}/${key}'`);
    sendJson(res, 200, { type, key, value: item.value, revision: item.revision }, ctx.headers);
    return;
  }
  const ifRevision = parseRevision(url.searchParams.get('ifRevision'));
  const revisionOption = ifRevision === undefined ? {} : { ifRevision };
  if (method === 'PUT') {
    const value = (await ctx.readJson(`config '${type}/${key}'`)) as JsonValue;
    assertConfigAllowed(allowlist, type, key, value);
    const revision = await store.put(type, key, value, revisionOption);
    sendJson(res, 200, { type, key, revision }, ctx.headers);
    return;
  }
  if (method === 'DELETE') {
    const existed = await store.delete(type, key, revisionOption);
    if (!existed) throw new HttpError(404, 'not-found', `no config item '${type}/${key}'`);
    sendJson(res, 200, { type, key, deleted: true }, ctx.headers);
    return;
  }
  throw methodNotAllowed(method, `/api/v1/config/${type}/${key}`, 'GET, PUT, DELETE');
}
