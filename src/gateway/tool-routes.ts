/**
 * @module `GET /api/v1/tools` and `POST /api/v1/tools/{name}/invoke`: the live tool set over HTTP.
 */
import type { ToolProvider } from '../tools/index.js';
import { HttpError, methodNotAllowed, sendJson } from './http-error.js';
import { headerValue, isPlainObject, type RouteContext } from './route-context.js';

/** A problem the registry reports (which item, what is wrong). */
export interface GatewayProblem {
  key: string;
  message: string;
}

/** What the tool routes need of the gateway's options. */
export interface ToolRoutesOptions {
  tools: ToolProvider;
  problems: (() => readonly GatewayProblem[]) | undefined;
  defaultUser: string;
  toolTimeoutMs: number;
}

/** `GET /api/v1/tools`. */
export function handleToolList(ctx: RouteContext, options: ToolRoutesOptions): void {
  if (ctx.method !== 'GET') throw methodNotAllowed(ctx.method, ctx.path, 'GET');
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

/** `POST /api/v1/tools/{name}/invoke`: body = the arguments object, answer = the `ToolResult`. */
export async function handleToolInvoke(
  ctx: RouteContext,
  options: ToolRoutesOptions,
  name: string,
): Promise<void> {
  if (ctx.method !== 'POST') throw methodNotAllowed(ctx.method, ctx.path, 'POST');
  const text = await ctx.readText();
  const args = text.trim() === '' ? {} : await ctx.readJson(`tool '${name}'`);
  if (!isPlainObject(args)) {
    throw new HttpError(
      400,
      'invalid-request',
      `tool '${name}': the body must be a JSON object of arguments`,
    );
  }
  const { tools } = options;
  if (!tools.get(name)) {
    const names = tools.list().map((t) => t.name);
    // A tool whose config item the registry skipped: say why, not only that it is unknown.
    const skipped = options.problems?.().find((p) => p.key === `tool/${name}`);
    throw new HttpError(
      404,
      'unknown-tool',
      `unknown tool '${name}'` +
        (skipped ? ` (its config item ${skipped.key} was skipped: ${skipped.message})` : '') +
        `; available tools: ${names.length ? names.join(', ') : '(none)'}`,
    );
  }
  const user =
    ctx.url.searchParams.get('user') ?? headerValue(ctx.req, 'x-toolbus-user') ?? options.defaultUser;
  const result = await tools.call(name, args, {
    signal: ctx.signal,
    timeoutMs: options.toolTimeoutMs,
    user,
  });
  sendJson(
    ctx.res,
    200,
    {
      name: result.name,
      callId: result.callId,
      content: result.content,
      isError: result.isError,
      ...(result.error ? { code: result.error.code } : {}),
    },
    ctx.headers,
  );
}
