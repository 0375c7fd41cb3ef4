/**
 * @module `GET /api/v1/tools` and `POST /api/v1/tools/{name}/invoke`: the live tool set over HTTP.
 */
import type { ToolProvider } from '../tools/index.js';
import { HttpError, sendJson } from './http-error.js';
import { headerValue, type RouteContext } from './route-context.js';

/** A problem the registry reports (which item, what is wrong). */
export interface GatewayProblem {
  key: string;
  message: string;
}

/** What the tool routes need of the gateway's options. */
export interface ToolRoutesOptions {
  tools: ToolProvider;
  defaultUser: string;
  toolTimeoutMs: number;
  refresh: (() => Promise<void>) | undefined;
  /** Who the token says the client is (`token`, or `anonymous` without auth), for `caller`. */
  principal: string;
}

/**
 * `http:<principal>@<address>`, or `cli:…` when the client says it is the toolbus CLI (its
 * `User-Agent`; a claim, while the principal is what the token proved).
 */
function callerOf(ctx: RouteContext, principal: string): string {
  const entry = /^toolbus-cli\b/.test(headerValue(ctx.req, 'user-agent') ?? '') ? 'cli' : 'http';
  return `${entry}:${principal}@${ctx.req.socket.remoteAddress ?? 'unknown'}`;
}

/** How long `?fresh=1` waits for the registry before answering with what is live. */
const REFRESH_WAIT_MS = 10_000;

/** `GET /api/v1/tools`; with `?fresh=1`, after the registry has caught up with the store. */
export async function handleToolList(ctx: RouteContext, options: ToolRoutesOptions): Promise<void> {
  const fresh = ctx.url.searchParams.get('fresh');
  if (options.refresh && fresh !== null && fresh !== '0' && fresh !== 'false') {
    // A store or build failure is reported by the registry's problems; the listing still answers.
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      options.refresh().catch(() => undefined),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, REFRESH_WAIT_MS);
      }),
    ]).finally(() => clearTimeout(timer));
  }
  sendJson(
    ctx.res,
    200,
    {
      tools: options.tools.list().map((t) => ({
        name: t.name,
        description: t.description,
        parameters: t.schema.parameters,
      })),
    },
    ctx.headers,
  );
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
  const text = await ctx.readText();
  const user =
    ctx.url.searchParams.get('user') ?? headerValue(ctx.req, 'x-toolbus-user') ?? options.defaultUser;
  const result = await options.tools.call(name, text, {
    signal: ctx.signal,
    timeoutMs: options.toolTimeoutMs,
    user,
    caller: callerOf(ctx, options.principal),
  });
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
    },
    ctx.headers,
  );
}
