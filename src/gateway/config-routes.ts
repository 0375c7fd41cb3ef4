/**
 * @module `/api/v1/config/{type}[/{key}]`: the config store over HTTP, the types it holds
 * (`/api/v1/config`), and a check of an item before it is written (`…/{key}/check`). A `PUT` of an
 * item that would run a program or read an environment variable outside the operator's allowlist is
 * refused here already, besides being refused where tools are built. Items holding secrets toolbus
 * writes itself (an MCP server's OAuth tokens, `mcp-oauth/<id>`) are shown with them withheld, and can
 * be deleted but not written.
 */
import { configWriteRefusal, showConfigValue, type ConfigItem, type ConfigStore } from '../config/index.js';
import type { JsonValue } from '../schema/index.js';
import { assertConfigAllowed, type ConfigAllowlist } from '../registry/index.js';
import { HttpError, sendJson } from './http-error.js';
import { redactMachinePaths } from './redact-paths.js';
import type { RouteContext } from './route-context.js';

function parseRevision(text: string | null): number | undefined {
  if (text === null) return undefined;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0) {
    throw new HttpError(400, 'invalid-request', `ifRevision must be a non-negative integer, got '${text}'`);
  }
  return n;
}

function storeOf(store: ConfigStore | undefined): ConfigStore {
  if (!store) throw new HttpError(404, 'not-found', 'this gateway serves no config store');
  return store;
}

/** An item's value as it may be sent, with `withheld` naming the secrets left out (only when some are). */
function shown(item: Pick<ConfigItem, 'type' | 'value'>): { value: JsonValue; withheld?: string[] } {
  const { value, withheld } = showConfigValue(item.type, item.value);
  return withheld.length === 0 ? { value } : { value, withheld };
}

/** `GET /api/v1/config/{type}`: every item of a type. */
export async function listConfigType(
  ctx: RouteContext,
  store: ConfigStore | undefined,
  type: string,
): Promise<void> {
  const items = await storeOf(store).list(type);
  sendJson(
    ctx.res,
    200,
    { type, items: items.map((i) => ({ key: i.key, ...shown(i), revision: i.revision })) },
    ctx.headers,
  );
}

/** `GET`, `PUT` or `DELETE /api/v1/config/{type}/{key}`: one item (`?ifRevision=N` for PUT and DELETE). */
export async function handleConfigItem(
  ctx: RouteContext,
  store: ConfigStore | undefined,
  allowlist: ConfigAllowlist,
  type: string,
  key: string,
): Promise<void> {
  const items = storeOf(store);
  const { method, res, url } = ctx;
  if (method === 'GET') {
    const item = await items.get(type, key);
    if (!item) throw new HttpError(404, 'not-found', `no config item '${type}/${key}'`);
    sendJson(res, 200, { type, key, ...shown(item), revision: item.revision }, ctx.headers);
    return;
  }
  const ifRevision = parseRevision(url.searchParams.get('ifRevision'));
  const revisionOption = ifRevision === undefined ? {} : { ifRevision };
  if (method === 'PUT') {
    const refusal = configWriteRefusal(type, key);
    if (refusal !== undefined) throw new HttpError(403, 'forbidden', refusal);
    const value = (await ctx.readJson(`config '${type}/${key}'`)) as JsonValue;
    assertConfigAllowed(allowlist, type, key, value);
    const revision = await items.put(type, key, value, revisionOption);
    sendJson(res, 200, { type, key, revision }, ctx.headers);
    return;
  }
  const existed = await items.delete(type, key, revisionOption);
  if (!existed) throw new HttpError(404, 'not-found', `no config item '${type}/${key}'`);
  sendJson(res, 200, { type, key, deleted: true }, ctx.headers);
}

/** The config types every system knows of, listed by `GET /api/v1/config` even when none is stored. */
export const WELL_KNOWN_CONFIG_TYPES: readonly string[] = Object.freeze([
  'tool',
  'tool-service',
  'mcp',
  'resource',
  'profile',
  'principal',
  'role',
  'quota',
]);

/** `GET /api/v1/config`: `{ types }`, the well-known types first, then the others stored, sorted. */
export async function listConfigTypes(ctx: RouteContext, store: ConfigStore | undefined): Promise<void> {
  const stored = new Set((await storeOf(store).list()).map((item) => item.type));
  const others = [...stored].filter((type) => !WELL_KNOWN_CONFIG_TYPES.includes(type)).sort();
  sendJson(ctx.res, 200, { types: [...WELL_KNOWN_CONFIG_TYPES, ...others] }, ctx.headers);
}

/** One finding of a config check: `skipped` when the registry would skip the item (an error). */
export interface GatewayConfigFinding {
  skipped: boolean;
  message: string;
}

/** Checks a config item before it is written (see {@link checkConfigRoute}). */
export type GatewayConfigCheck = (
  type: string,
  key: string,
  value: JsonValue,
) => Promise<readonly GatewayConfigFinding[]>;

/**
 * `POST /api/v1/config/{type}/{key}/check`, body = the item's JSON value: `{ findings }`, what
 * `toolbus config put` would say. Nothing is stored. The allowlist is checked here; `check` adds the
 * checks of the system around the gateway (descriptor parsing, the service lookup).
 */
export async function checkConfigRoute(
  ctx: RouteContext,
  allowlist: ConfigAllowlist,
  check: GatewayConfigCheck | undefined,
  type: string,
  key: string,
): Promise<void> {
  const value = (await ctx.readJson(`config '${type}/${key}'`)) as JsonValue;
  const findings: GatewayConfigFinding[] = [];
  const refusal = configWriteRefusal(type, key);
  if (refusal !== undefined) findings.push({ skipped: true, message: refusal });
  try {
    assertConfigAllowed(allowlist, type, key, value);
  } catch (error) {
    findings.push({ skipped: true, message: error instanceof Error ? error.message : String(error) });
  }
  if (check) findings.push(...(await check(type, key, value)));
  // As in an error answer: a finding may quote a store's or a program's path on this machine.
  const shown = findings.map((f) => ({ skipped: f.skipped, message: redactMachinePaths(f.message) }));
  sendJson(ctx.res, 200, { findings: shown }, ctx.headers);
}
