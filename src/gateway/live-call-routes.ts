/**
 * @module `GET /api/v1/live-calls` (the latest tool calls, newest first) and
 * `GET /api/v1/live-calls/events` (their starts, ends and progress as server-sent events), for the web
 * console. A principal sees the calls of the tools its policy allows, and only its own user's calls
 * unless it may act for others (the `impersonate` role), as for `/api/v1/calls/{id}`.
 */
import { isToolbusError } from '../errors/index.js';
import { DEFAULT_LIVE_CALLS_KEPT, type LiveCallEvent, type LiveCallFeed } from '../observability/index.js';
import type { AccessPolicy, Principal } from '../policy/index.js';
import { openEventStream, type EventStream } from './event-stream.js';
import { HttpError, sendJson } from './http-error.js';
import type { RouteContext } from './route-context.js';
import { requirePermission } from './route-access.js';

/**
 * The most bytes a live-call stream may have waiting for a slow client; beyond it the stream ends
 * (the client reconnects and reads `/api/v1/live-calls` again) rather than holding memory for it.
 */
export const MAX_LIVE_CALL_BACKLOG_BYTES = 1024 * 1024;

/** What the live-call routes need of the gateway. */
export interface LiveCallRouteOptions {
  /** The calls; undefined: the routes answer 404. */
  feed: LiveCallFeed | undefined;
  policy: AccessPolicy;
  defaultUser: string;
  heartbeatMs: number;
  /** Aborted when the gateway starts closing: open streams end at once instead of holding it up. */
  closing: AbortSignal;
}

function feedOf(options: LiveCallRouteOptions): LiveCallFeed {
  if (options.feed) return options.feed;
  throw new HttpError(404, 'not-found', 'this gateway follows no live calls (option liveCalls)');
}

/** True when `principal` may see a call of `tool` made for `user`. */
function visible(
  options: LiveCallRouteOptions,
  principal: Principal,
  tool: string,
  user: string | undefined,
): boolean {
  if (!options.policy.allows(principal, tool)) return false;
  try {
    options.policy.userFor(principal, user ?? options.defaultUser, options.defaultUser);
    return true;
  } catch {
    return false;
  }
}

/** `?limit=`: 1 to DEFAULT_LIVE_CALLS_KEPT, else every visible call kept. */
function limitOf(ctx: RouteContext): number {
  const text = ctx.url.searchParams.get('limit');
  if (text === null) return DEFAULT_LIVE_CALLS_KEPT;
  const limit = Number(text);
  if (text.trim() === '' || !Number.isInteger(limit) || limit < 1 || limit > DEFAULT_LIVE_CALLS_KEPT) {
    throw new HttpError(
      400,
      'invalid-request',
      `?limit= must be an integer from 1 to ${DEFAULT_LIVE_CALLS_KEPT}, got '${text.slice(0, 40)}'`,
    );
  }
  return limit;
}

/** `GET /api/v1/live-calls?tool=&user=&limit=`: `{ calls }`, newest first. */
export function listLiveCalls(ctx: RouteContext, options: LiveCallRouteOptions): void {
  const principal = requirePermission(ctx, options.policy, 'read-tools', 'see live calls');
  const feed = feedOf(options);
  const limit = limitOf(ctx);
  const tool = ctx.url.searchParams.get('tool') || undefined;
  const user = ctx.url.searchParams.get('user') || undefined;
  const calls = feed
    .recent({ ...(tool !== undefined ? { tool } : {}), ...(user !== undefined ? { user } : {}) })
    .filter((call) => visible(options, principal, call.tool, call.user))
    .slice(0, limit);
  sendJson(ctx.res, 200, { calls }, ctx.headers);
}

/**
 * `GET /api/v1/live-calls/events`: `event: call` (a LiveCall, when it starts and when it ends) and
 * `event: progress`, until the client goes away or the gateway closes.
 */
export async function streamLiveCalls(ctx: RouteContext, options: LiveCallRouteOptions): Promise<void> {
  const principal = requirePermission(ctx, options.policy, 'read-tools', 'see live calls');
  const feed = feedOf(options);
  const ended = new AbortController();
  let stream: EventStream | undefined;
  const listener = (event: LiveCallEvent): void => {
    if (stream === undefined) return;
    const data = event.type === 'call' ? event.call : event.progress;
    if (!visible(options, principal, data.tool, data.user)) return;
    // Written at once, inside the call's hook: a client that does not read must not hold memory.
    if (ctx.res.writableLength > MAX_LIVE_CALL_BACKLOG_BYTES) {
      ended.abort();
      return;
    }
    stream.send(event.type, data);
  };
  let unsubscribe: () => void;
  try {
    unsubscribe = feed.subscribe(listener);
  } catch (error) {
    if (isToolbusError(error) && error.code === 'too-many-requests') {
      throw new HttpError(429, error.code, error.message, { 'retry-after': '5' });
    }
    throw error;
  }
  // Listeners on each signal, removed in the finally: the gateway's `closing` outlives every stream.
  const signals = [ctx.signal, options.closing, ended.signal];
  let stop: () => void = () => undefined;
  try {
    stream = openEventStream(ctx, options.heartbeatMs);
    if (!signals.some((s) => s.aborted)) {
      await new Promise<void>((resolve) => {
        stop = () => resolve();
        for (const s of signals) s.addEventListener('abort', stop, { once: true });
      });
    }
  } finally {
    for (const s of signals) s.removeEventListener('abort', stop);
    unsubscribe();
    stream?.end();
  }
}
