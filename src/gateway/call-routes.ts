/**
 * @module Tool calls a caller comes back to: `POST /api/v1/tools/{name}/invoke?async=1` (202 with the
 * call's id), `GET /api/v1/calls/{id}` (its state), `GET /api/v1/calls/{id}/events` (its states as
 * server-sent events until it ends) and `POST /api/v1/calls/{id}/cancel`. The states live in the bus's
 * call store ({@link CallTasks}), so any gateway on the same bus answers for any call.
 */
import { isToolbusError } from '../errors/index.js';
import type { AccessPolicy, Principal } from '../policy/index.js';
import type { CallRecord, CallTasks } from '../services/index.js';
import { FINAL_CALL_STATUSES } from '../bus/index.js';
import { unknownToolError, type ToolProvider } from '../tools/index.js';
import { openEventStream } from './event-stream.js';
import { HttpError, sendJson } from './http-error.js';
import type { RouteContext } from './route-context.js';
import { admitCall, requirePermission } from './route-access.js';

/** What the call routes need of the gateway. */
export interface CallRouteOptions {
  /** Where calls are started and their states kept; undefined: the routes answer 404. */
  tasks: CallTasks | undefined;
  policy: AccessPolicy;
  defaultUser: string;
  heartbeatMs: number;
}

/** The JSON a call's state is served as. */
function callJson(record: CallRecord): Record<string, unknown> {
  const { chunks, ...rest } = record;
  return { ...rest, ...(chunks.length > 0 ? { chunks } : {}), done: FINAL_CALL_STATUSES.has(record.status) };
}

function tasksOf(options: CallRouteOptions): CallTasks {
  if (options.tasks) return options.tasks;
  throw new HttpError(404, 'not-found', 'this gateway keeps no call states (it runs without a call store)');
}

/**
 * The async branch of `POST /api/v1/tools/{name}/invoke`: starts the call as a task and answers 202
 * `{ "call": id }` with `Location: /api/v1/calls/{id}`. The tool is looked up, its arguments parsed and
 * validated when the task runs (an unknown tool or bad arguments end the task `failed`, with the same
 * message a synchronous call answers).
 */
export async function startAsyncInvoke(
  ctx: RouteContext,
  options: CallRouteOptions,
  tools: ToolProvider,
  name: string,
  call: { principal: Principal; user: string; caller: string },
): Promise<void> {
  const tasks = tasksOf(options);
  const { principal, user, caller } = call;
  if (tools.get(name) === undefined) {
    // Said at once, as a synchronous call would: a task that can only fail helps nobody.
    throw new HttpError(404, 'unknown-tool', unknownToolError(name, tools.list()).message);
  }
  const text = await ctx.readText();
  const release = admitCall(ctx, options.policy, principal, name);
  let id: string;
  try {
    id = await tasks.start(tools, name, text, { user, caller });
  } finally {
    release();
  }
  ctx.res.setHeader('location', `/api/v1/calls/${encodeURIComponent(id)}`);
  sendJson(ctx.res, 202, { call: id }, ctx.headers);
}

/** `GET /api/v1/calls/{id}`: the call's state (`queued`, `running` with its chunks so far, or final). */
export async function getCall(ctx: RouteContext, options: CallRouteOptions, id: string): Promise<void> {
  const record = await visibleCall(ctx, options, id);
  sendJson(ctx.res, 200, { call: callJson(record) }, ctx.headers);
}

/**
 * `POST /api/v1/calls/{id}/cancel`, with an optional JSON body `{ "reason": "…" }`: asks the call to
 * stop; answers its state after the request.
 */
export async function cancelCall(ctx: RouteContext, options: CallRouteOptions, id: string): Promise<void> {
  await visibleCall(ctx, options, id);
  let reason = `cancelled through the API by ${ctx.principal?.name ?? 'a caller'}`;
  if ((await ctx.readText()).trim() !== '') {
    const body = (await ctx.readJson('the cancel request')) as { reason?: unknown } | null;
    if (body === null || typeof body !== 'object' || Array.isArray(body)) {
      throw new HttpError(
        400,
        'invalid-request',
        'the cancel request must be a JSON object, e.g. {"reason": "not needed"}',
      );
    }
    if (body.reason !== undefined && typeof body.reason !== 'string') {
      throw new HttpError(400, 'invalid-request', `'reason' must be a string, got ${typeof body.reason}`);
    }
    if (typeof body.reason === 'string' && body.reason !== '') reason = body.reason.slice(0, 500);
  }
  const record = await tasksOf(options).cancel(id, reason);
  if (record === undefined) throw notFound(id);
  sendJson(ctx.res, 200, { call: callJson(record) }, ctx.headers);
}

/**
 * `GET /api/v1/calls/{id}/events`: the call's state now and after every change as server-sent events
 * (`event: state`), ending after the final one (`event: done`).
 */
export async function streamCallEvents(
  ctx: RouteContext,
  options: CallRouteOptions,
  id: string,
): Promise<void> {
  await visibleCall(ctx, options, id);
  const tasks = tasksOf(options);
  const stream = openEventStream(ctx, options.heartbeatMs);
  try {
    for await (const record of tasks.watch(id, ctx.signal)) {
      stream.send(FINAL_CALL_STATUSES.has(record.status) ? 'done' : 'state', callJson(record));
    }
  } catch (error) {
    const message = isToolbusError(error) ? error.message : 'reading the call state failed';
    stream.send('error', { error: { code: 'store-error', message } });
  } finally {
    stream.end();
  }
}

/**
 * The call's state when the principal may see it: one that may call tools, for the call's own user (or
 * one it may name). Anything else is 404, as for an unknown id: ids are not told apart from others'.
 */
async function visibleCall(ctx: RouteContext, options: CallRouteOptions, id: string): Promise<CallRecord> {
  const tasks = tasksOf(options);
  const principal = requirePermission(ctx, options.policy, 'call-tools', 'read calls');
  const record = await tasks.get(id);
  if (record === undefined || !mayRead(options, principal, record)) throw notFound(id);
  return record;
}

function mayRead(options: CallRouteOptions, principal: Principal, record: CallRecord): boolean {
  try {
    options.policy.userFor(principal, record.user ?? options.defaultUser, options.defaultUser);
    return true;
  } catch {
    return false;
  }
}

function notFound(id: string): HttpError {
  return new HttpError(
    404,
    'not-found',
    `no call '${id.slice(0, 100)}': unknown, not yours, or older than the call store keeps states`,
  );
}
