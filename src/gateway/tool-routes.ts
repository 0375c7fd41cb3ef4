/**
 * @module `GET /api/v1/tools` and `POST /api/v1/tools/{name}/invoke`: the live tool set over HTTP.
 */
import { MAX_SEARCH_LIMIT, searchTools } from '../tools/index.js';
import type { ObservableToolProvider, Tool } from '../tools/index.js';
import type { AccessPolicy, Principal } from '../policy/index.js';
import { startAsyncInvoke, type CallRouteOptions } from './call-routes.js';
import { HttpError, sendJson } from './http-error.js';
import { headerValue, type RouteContext } from './route-context.js';
import { admitCall, requirePermission, requireTool, userOf } from './route-access.js';
import { profileOf, profileTools, type GatewayProfiles } from './profile-access.js';
import { problemsByKey, toolDetail, type ToolDetailOptions } from './tool-detail.js';

/** A problem the registry reports (which item, what is wrong). */
export interface GatewayProblem {
  key: string;
  message: string;
  /** How bad it is: `error` (the item is skipped) or `warning`. @default 'error' */
  severity?: string;
}

/** What the tool routes need of the gateway's options. */
export interface ToolRoutesOptions {
  tools: ObservableToolProvider;
  /** The tool profiles (`?profile=`, a principal's bound profile). */
  profiles: GatewayProfiles | undefined;
  defaultUser: string;
  toolTimeoutMs: number;
  refresh: (() => Promise<void>) | undefined;
  /** Who may list and call which tools, as whom and how often. */
  policy: AccessPolicy;
  /** Calls started with `?async=1` and read at `/api/v1/calls/{id}`. */
  calls: CallRouteOptions;
  /** What `?detail=1` adds to each tool. */
  detail: ToolDetailOptions;
}

/**
 * `http:<principal>@<address>`, or `cli:…` when the client says it is the toolbus CLI (its
 * `User-Agent`; a claim, while the principal is what the token proved).
 */
function callerOf(ctx: RouteContext, principal: string): string {
  const entry = /^toolbus-cli\b/.test(headerValue(ctx.req, 'user-agent') ?? '') ? 'cli' : 'http';
  return `${entry}:${principal}@${ctx.req.socket.remoteAddress ?? 'unknown'}`;
}

/** The tools `principal` may see: its profile's (or the one it asks for), within its policy. */
function visibleTools(
  tools: ObservableToolProvider,
  options: ToolRoutesOptions,
  principal: Principal,
): readonly Tool[] {
  return tools.list().filter((tool) => options.policy.allows(principal, tool.name));
}

/** The request's profile's tools (`?profile=`, else the principal's bound profile, else all). */
function requestTools(
  ctx: RouteContext,
  options: ToolRoutesOptions,
  principal: Principal,
): ObservableToolProvider {
  const requested = ctx.url.searchParams.get('profile') ?? undefined;
  return profileTools(options.tools, options.profiles, profileOf(principal, requested));
}

/** `?limit=` of a search: 1 to MAX_SEARCH_LIMIT. */
function searchLimit(ctx: RouteContext): number | undefined {
  const text = ctx.url.searchParams.get('limit');
  if (text === null) return undefined;
  const limit = Number(text);
  if (text.trim() === '' || !Number.isInteger(limit) || limit < 1 || limit > MAX_SEARCH_LIMIT) {
    throw new HttpError(
      400,
      'invalid-request',
      `?limit= must be an integer from 1 to ${MAX_SEARCH_LIMIT}, got '${text.slice(0, 40)}'`,
    );
  }
  return limit;
}

function toolEntry(t: Tool): Record<string, unknown> {
  return {
    name: t.name,
    description: t.description,
    parameters: t.schema.parameters,
    ...(t.tags && t.tags.length > 0 ? { tags: t.tags } : {}),
  };
}

/** How long `?fresh=1` waits for the registry before answering with what is live. */
const REFRESH_WAIT_MS = 10_000;

/** True for a flag given as `?name`, `?name=1` or `?name=true` (not `0` or `false`). */
function flag(ctx: RouteContext, name: string): boolean {
  const value = ctx.url.searchParams.get(name);
  return value !== null && value !== '0' && value !== 'false';
}

/** `toolEntry`, with `?detail=1` the detail fields too (the problems read once per listing). */
function entryMaker(ctx: RouteContext, options: ToolRoutesOptions): (tool: Tool) => Record<string, unknown> {
  if (!flag(ctx, 'detail')) return toolEntry;
  const problems = problemsByKey(options.detail.problems);
  return (tool) => ({ ...toolEntry(tool), ...toolDetail(tool, options.detail, problems) });
}

/**
 * `GET /api/v1/tools`; with `?fresh=1`, after the registry has caught up with the store; with
 * `?detail=1`, each tool's source, strict schema, approval and problems too.
 */
export async function handleToolList(ctx: RouteContext, options: ToolRoutesOptions): Promise<void> {
  const principal = requirePermission(ctx, options.policy, 'read-tools', 'list tools');
  if (options.refresh && flag(ctx, 'fresh')) {
    // A store or build failure is reported by the registry's problems; the listing still answers.
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      options.refresh().catch(() => undefined),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, REFRESH_WAIT_MS);
      }),
    ]).finally(() => clearTimeout(timer));
  }
  const tools = requestTools(ctx, options, principal);
  const entry = entryMaker(ctx, options);
  const query = ctx.url.searchParams.get('search');
  if (query !== null) {
    if (query.trim() === '') {
      throw new HttpError(
        400,
        'invalid-request',
        '?search= needs words of what the tool should do, e.g. ?search=weather',
      );
    }
    const limit = searchLimit(ctx);
    const hits = searchTools(tools, query, {
      ...(limit !== undefined ? { limit } : {}),
      filter: (tool) => options.policy.allows(principal, tool.name),
    });
    sendJson(
      ctx.res,
      200,
      { tools: hits.map((hit) => ({ ...entry(hit.tool), score: Math.round(hit.score * 1000) / 1000 })) },
      ctx.headers,
    );
    return;
  }
  sendJson(ctx.res, 200, { tools: visibleTools(tools, options, principal).map(entry) }, ctx.headers);
}

/**
 * `POST /api/v1/tools/{name}/invoke`: body = the arguments object, answer = the `ToolResult`. The body
 * goes to `ToolSet.call` as it came, the one place arguments are parsed, the tool looked up and the
 * arguments validated; a call that could not be made is an HTTP error (404 unknown tool, 400 for a body
 * that is not a JSON object), anything the tool did is a 200 result (`isError` and `code` on failure).
 */
export async function handleToolInvoke(
  ctx: RouteContext,
  options: ToolRoutesOptions,
  name: string,
): Promise<void> {
  const { policy } = options;
  const principal = requirePermission(ctx, policy, 'call-tools', 'call tools');
  // The user first, so a refusal of the tool names whom the call was for.
  const user = userOf(ctx, policy, principal, options.defaultUser);
  requireTool(ctx, policy, principal, name);
  const tools = requestTools(ctx, options, principal);
  if (flag(ctx, 'async')) {
    const caller = callerOf(ctx, principal.name);
    await startAsyncInvoke(ctx, options.calls, tools, name, { principal, user, caller });
    return;
  }
  const text = await ctx.readText();
  const release = admitCall(ctx, policy, principal, name);
  let result;
  try {
    result = await tools.call(name, text, {
      signal: ctx.signal,
      timeoutMs: options.toolTimeoutMs,
      user,
      caller: callerOf(ctx, principal.name),
    });
  } finally {
    release();
  }
  const code = result.error?.code;
  if (code === 'unknown-tool') throw new HttpError(404, code, result.content);
  // No replayable arguments: the body itself was not a JSON object (the tool never ran).
  if (code === 'invalid-arguments' && result.arguments === undefined) {
    throw new HttpError(400, 'invalid-request', result.content);
  }
  sendJson(
    ctx.res,
    200,
    {
      name: result.name,
      callId: result.callId,
      content: result.content,
      isError: result.isError,
      ...(code ? { code } : {}),
      // A result with an output schema, as an object; one with content parts (images), the parts.
      ...(result.structured !== undefined ? { structured: result.structured } : {}),
      ...(result.parts !== undefined ? { parts: result.parts } : {}),
      ...(result.truncatedBytes !== undefined ? { truncatedBytes: result.truncatedBytes } : {}),
    },
    ctx.headers,
  );
}
