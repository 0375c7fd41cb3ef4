/**
 * @module Approvals and saved runs over HTTP:
 * - `GET /api/v1/approvals?status=pending|approved|denied|all` → `{ approvals }`, newest first;
 * - `GET /api/v1/approvals/{id}` → `{ approval }`;
 * - `POST /api/v1/approvals/{id}` `{ decision: "approve" | "deny", reason?, arguments? }` → `{ approval }`
 *   (409 `already-decided` for a second decision; edited `arguments` checked against the tool's schema);
 * - `GET /api/v1/runs/{id}` → `{ run }`, and `GET /api/v1/runs/{id}/events`: the run's events as
 *   server-sent events, from the first (or after `?after=SEQ`) until it ends.
 *
 * Deciding takes the `approver` or `admin` role, and not being the principal that started the run
 * (unless `allowSelfApproval`). A run is shown to its own principal and to those who may decide.
 */
import { checkToolArguments, type ToolProvider } from '../tools/index.js';
import { isToolbusError } from '../errors/index.js';
import type { AccessPolicy, Principal } from '../policy/index.js';
import {
  RUN_CONFIG_TYPE,
  runFromJson,
  type ApprovalStatus,
  type RunState,
  type RunStore,
} from '../runs/index.js';
import { openEventStream } from './event-stream.js';
import { HttpError, sendJson, statusForCode } from './http-error.js';
import { isPlainObject, type RouteContext } from './route-context.js';
import { principalOf, requirePermission } from './route-access.js';

/** What the run routes need of the gateway's options. */
export interface RunRouteOptions {
  runs: RunStore | undefined;
  tools: ToolProvider;
  policy: AccessPolicy;
  /** Let the principal that started a run decide its approvals. */
  allowSelfApproval: boolean;
  heartbeatMs: number;
}

const STATUSES = ['pending', 'approved', 'denied', 'all'];
const MAX_REASON_CHARS = 2000;

function runsOf(options: RunRouteOptions): RunStore {
  if (!options.runs) {
    throw new HttpError(
      404,
      'not-found',
      'this gateway keeps no runs or approvals (it has no agent with a run store)',
    );
  }
  return options.runs;
}

/** A toolbus error of the run store as the HTTP error it means. */
function asHttp(error: unknown): unknown {
  if (error instanceof HttpError || !isToolbusError(error)) return error;
  return new HttpError(statusForCode(error.code), error.code, error.message);
}

/** `GET /api/v1/approvals`. */
export async function listApprovals(ctx: RouteContext, options: RunRouteOptions): Promise<void> {
  requirePermission(ctx, options.policy, 'decide-approvals', 'see approval requests');
  const runs = runsOf(options);
  const status = ctx.url.searchParams.get('status') ?? 'pending';
  if (!STATUSES.includes(status)) {
    throw new HttpError(
      400,
      'invalid-request',
      `status must be one of ${STATUSES.join(', ')}, got '${status.slice(0, 40)}'`,
    );
  }
  const approvals = await runs.approvals({ status: status as ApprovalStatus | 'all' });
  sendJson(ctx.res, 200, { approvals }, ctx.headers);
}

/** `GET /api/v1/approvals/{id}`. */
export async function getApproval(ctx: RouteContext, options: RunRouteOptions, id: string): Promise<void> {
  requirePermission(ctx, options.policy, 'decide-approvals', 'see approval requests');
  const approval = await runsOf(options).approval(id);
  if (!approval) throw new HttpError(404, 'not-found', `no approval request with id '${id.slice(0, 80)}'`);
  sendJson(ctx.res, 200, { approval }, ctx.headers);
}

/** `POST /api/v1/approvals/{id}`. */
export async function decideApproval(ctx: RouteContext, options: RunRouteOptions, id: string): Promise<void> {
  const { policy } = options;
  const principal = requirePermission(ctx, policy, 'decide-approvals', 'decide approval requests');
  const runs = runsOf(options);
  const body = await ctx.readJson('decision');
  if (!isPlainObject(body) || (body.decision !== 'approve' && body.decision !== 'deny')) {
    throw new HttpError(
      400,
      'invalid-request',
      'decision: expected {"decision": "approve" | "deny", "reason"?: string, "arguments"?: object}',
    );
  }
  const unknown = Object.keys(body).filter((k) => !['decision', 'reason', 'arguments'].includes(k));
  if (unknown.length > 0) {
    throw new HttpError(
      400,
      'invalid-request',
      `decision: unknown field '${unknown[0]!.slice(0, 40)}'; expected decision, reason, arguments`,
    );
  }
  if (
    body.reason !== undefined &&
    (typeof body.reason !== 'string' || body.reason.length > MAX_REASON_CHARS)
  ) {
    throw new HttpError(
      400,
      'invalid-request',
      `decision: "reason" must be a string of at most ${MAX_REASON_CHARS} characters`,
    );
  }
  if (body.arguments !== undefined && (!isPlainObject(body.arguments) || body.decision !== 'approve')) {
    throw new HttpError(
      400,
      'invalid-request',
      'decision: "arguments" must be an object, and only with "approve"',
    );
  }
  const approval = await runs.approval(id);
  if (!approval) throw new HttpError(404, 'not-found', `no approval request with id '${id.slice(0, 80)}'`);
  ctx.tool = approval.tool;
  if (!policy.open && !options.allowSelfApproval && approval.principal === principal.name) {
    throw new HttpError(
      403,
      'forbidden',
      `principal '${principal.name}' started run '${approval.runId}', so it may not decide its approvals: ` +
        'another principal with the role approver or admin must (toolbus principal add NAME --role approver), ' +
        'or start toolbus up with --allow-self-approval',
      {},
      'self-approval',
    );
  }
  const edited = body.arguments as Record<string, unknown> | undefined;
  if (edited !== undefined) {
    const tool = options.tools.get(approval.tool);
    if (!tool) {
      throw new HttpError(
        409,
        'unknown-tool',
        `tool '${approval.tool}' is not live now, so edited arguments cannot be checked; approve without them or deny`,
      );
    }
    const problem = checkToolArguments(tool, edited);
    if (problem) throw new HttpError(400, 'invalid-arguments', problem);
  }
  try {
    const decided = await runs.decide(id, {
      decision: body.decision,
      by: principal.name,
      ...(typeof body.reason === 'string' && body.reason !== '' ? { reason: body.reason } : {}),
      ...(edited ? { arguments: edited } : {}),
    });
    sendJson(ctx.res, 200, { approval: decided }, ctx.headers);
  } catch (error) {
    throw asHttp(error);
  }
}

/** The run, if this principal may see it: its own, or any for those who may decide approvals. */
async function visibleRun(ctx: RouteContext, options: RunRouteOptions, id: string): Promise<RunState> {
  const principal = principalOf(ctx);
  const state = await runsOf(options).run(id);
  if (!state) throw new HttpError(404, 'not-found', `no run with id '${id.slice(0, 80)}'`);
  if (!mayRead(options.policy, principal, state)) {
    throw new HttpError(
      403,
      'forbidden',
      `principal '${principal.name}' may not see run '${id.slice(0, 80)}': only the principal that started it and those with the role approver or admin may`,
      {},
      'role',
    );
  }
  return state;
}

function mayRead(policy: AccessPolicy, principal: Principal, state: RunState): boolean {
  return policy.open || state.principal === principal.name || policy.can(principal, 'decide-approvals');
}

/** `GET /api/v1/runs/{id}`: the saved state (messages, the step in progress, events, owner). */
export async function getRun(ctx: RouteContext, options: RunRouteOptions, id: string): Promise<void> {
  const run = await visibleRun(ctx, options, id);
  sendJson(ctx.res, 200, { run }, ctx.headers);
}

/**
 * `GET /api/v1/runs/{id}/events`: the saved events, then each new one as the run goes on (on this or
 * any other replica), as server-sent events; the stream ends after the `answer` or `error`.
 */
export async function streamRunEvents(
  ctx: RouteContext,
  options: RunRouteOptions,
  id: string,
): Promise<void> {
  const first = await visibleRun(ctx, options, id);
  const runs = runsOf(options);
  const afterParam = ctx.url.searchParams.get('after');
  let sent = afterParam === null ? 0 : Number(afterParam);
  if (!Number.isInteger(sent) || sent < 0) {
    throw new HttpError(
      400,
      'invalid-request',
      `after must be the seq of the last event seen (an integer >= 0)`,
    );
  }
  const stream = openEventStream(ctx, options.heartbeatMs, { 'toolbus-run': first.id });
  let ended = false;
  let wake: (() => void) | undefined;
  let latest: RunState = first;
  let changed = false;
  const send = (state: RunState): void => {
    for (const event of state.events) {
      if (event.seq <= sent) continue;
      sent = event.seq;
      stream.send(event.type, event);
    }
    if (state.status === 'done' || state.status === 'failed') {
      // A run that ended before its answer event was kept (never here) still ends the stream clearly.
      ended = true;
    }
  };
  const unlisten = runs.onChange((change) => {
    if (change.type !== RUN_CONFIG_TYPE || change.key !== id || change.kind !== 'put') return;
    const state = runFromJson(change.value);
    if (state) {
      latest = state;
      changed = true;
      wake?.();
    }
  });
  const onAbort = (): void => wake?.();
  ctx.signal.addEventListener('abort', onAbort);
  try {
    // Read again after listening: a change between the first read and the watch is not missed.
    latest = (await runs.run(id)) ?? latest;
    for (;;) {
      send(latest);
      if (ended || ctx.signal.aborted) break;
      if (!changed) {
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
        wake = undefined;
      }
      changed = false;
    }
  } finally {
    unlisten();
    ctx.signal.removeEventListener('abort', onAbort);
    stream.end();
  }
}
