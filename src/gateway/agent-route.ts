/**
 * @module `POST /api/v1/agent`: one question to the agent, answered as JSON or streamed as server-sent
 * events (`thought`, `observation`, `progress` and `approval` as they happen, then `answer` or `error`).
 */
import { randomUUID } from 'node:crypto';
import type { AccessPolicy } from '../policy/index.js';
import type { ApprovalRequest } from '../runs/index.js';
import { openEventStream } from './event-stream.js';
import { HttpError, sendJson } from './http-error.js';
import { headerValue, isPlainObject, type RouteContext } from './route-context.js';
import { admitCall, requirePermission, userOf } from './route-access.js';
import { profileOf, profileTools, type GatewayProfiles } from './profile-access.js';
import type { ObservableToolProvider, ToolProgress } from '../tools/index.js';

/** An event of a running agent, as streamed to HTTP clients. */
export interface GatewayAgentEvent {
  type: 'thought' | 'observation' | 'answer' | 'error' | 'approval' | 'progress';
  /** The text; on `approval` and `progress` events, what the field of that name holds, as JSON text. */
  content: string;
  /** On `approval` events: the approval request (`content` holds it as JSON text). */
  approval?: ApprovalRequest;
  /**
   * On `progress` events: a running tool call's report (`progress`, and `total` and `message` when the
   * tool gave them). Only the event stream carries them; the JSON answer has none.
   */
  progress?: ToolProgress;
  /** On `progress` events: the tool called. */
  toolName?: string;
  /** On `progress` events: the call's id, as in its observation. */
  callId?: string;
}

/** A past turn passed to the agent. */
export interface GatewayHistoryItem {
  role: 'user' | 'assistant';
  content: string;
}

/** What the gateway needs of an agent: ask a question, get events and the final answer. */
export interface GatewayAgent {
  ask(
    question: string,
    options: {
      /** The verified user the run and its tool calls are for. */
      user: string;
      /**
       * Globs of the tools the run may offer the model and call (the principal's tool policy); undefined
       * for every tool.
       */
      tools?: readonly string[] | undefined;
      history?: GatewayHistoryItem[];
      /** The id to keep the run under, when the agent keeps runs (sent to the client as `toolbus-run`). */
      runId?: string;
      /** The verified principal asking: kept with the run and its approval requests. */
      principal?: string;
      /** The tool profile the run offers (`profile/<id>`), checked to exist. @default every tool */
      profile?: string;
      signal: AbortSignal;
      /**
       * Set for a streamed answer only: then the agent also reports its tool calls' progress (`progress`
       * events); without it, tools are not asked to report.
       */
      onEvent?: (event: GatewayAgentEvent) => void;
    },
  ): Promise<string>;
}

/** What the agent route needs of the gateway's options. */
export interface AgentRouteOptions {
  /** The agent keeps runs: each request gets a run id, sent as the `toolbus-run` header. */
  runs: boolean;
  agent: GatewayAgent | undefined;
  agentUnavailableMessage: string | undefined;
  defaultUser: string;
  heartbeatMs: number;
  policy: AccessPolicy;
  tools: ObservableToolProvider;
  profiles: GatewayProfiles | undefined;
}

function parseHistory(value: unknown): GatewayHistoryItem[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (
    !Array.isArray(value) ||
    !value.every(
      (v) =>
        isPlainObject(v) && (v.role === 'user' || v.role === 'assistant') && typeof v.content === 'string',
    )
  ) {
    throw new HttpError(
      400,
      'invalid-request',
      'agent request: "history" must be an array of { "role": "user" | "assistant", "content": string }',
    );
  }
  return value as GatewayHistoryItem[];
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Answers one agent request. */
export async function handleAgentRoute(ctx: RouteContext, options: AgentRouteOptions): Promise<void> {
  const { signal } = ctx;
  const { policy } = options;
  const principal = requirePermission(ctx, policy, 'ask-agent', 'ask the agent');
  const body = await ctx.readJson('agent request');
  if (!isPlainObject(body) || typeof body.question !== 'string' || body.question.trim() === '') {
    throw new HttpError(
      400,
      'invalid-request',
      'agent request: expected a JSON object with a non-empty "question" string',
    );
  }
  if (body.user !== undefined && typeof body.user !== 'string') {
    throw new HttpError(400, 'invalid-request', 'agent request: "user" must be a string');
  }
  const history = parseHistory(body.history);
  if (body.profile !== undefined && typeof body.profile !== 'string') {
    throw new HttpError(400, 'invalid-request', 'agent request: "profile" must be a profile id (a string)');
  }
  const profile = profileOf(principal, body.profile as string | undefined);
  // Unknown: 404 here, before a run starts.
  profileTools(options.tools, options.profiles, profile);
  if (!options.agent) {
    throw new HttpError(
      503,
      'no-model',
      options.agentUnavailableMessage ?? 'no model is configured, so the agent is not running',
    );
  }
  const agent = options.agent;
  const user = userOf(ctx, policy, principal, options.defaultUser, body.user as string | undefined);
  const tools = policy.toolGlobs(principal);
  const question = body.question;
  const release = admitCall(ctx, policy, principal);
  const runId = options.runs ? `run-${randomUUID()}` : undefined;
  if (runId) ctx.res.setHeader('toolbus-run', runId);
  try {
    await answer(
      ctx,
      agent,
      question,
      {
        user,
        tools,
        history,
        signal,
        principal: principal.name,
        ...(runId ? { runId } : {}),
        ...(profile !== undefined ? { profile } : {}),
      },
      options.heartbeatMs,
    );
  } finally {
    release();
  }
}

async function answer(
  ctx: RouteContext,
  agent: GatewayAgent,
  question: string,
  run: {
    user: string;
    tools: readonly string[] | undefined;
    history: GatewayHistoryItem[] | undefined;
    signal: AbortSignal;
    principal: string;
    runId?: string;
    profile?: string;
  },
  heartbeatMs: number,
): Promise<void> {
  const { req, res } = ctx;
  const { user, tools, history, signal } = run;
  const ids = {
    principal: run.principal,
    ...(run.runId ? { runId: run.runId } : {}),
    ...(run.profile !== undefined ? { profile: run.profile } : {}),
  };
  const wantsStream = (headerValue(req, 'accept') ?? '').includes('text/event-stream');
  if (!wantsStream) {
    const answer = await agent.ask(question, { user, tools, history, signal, ...ids });
    sendJson(res, 200, { answer }, ctx.headers);
    return;
  }
  const stream = openEventStream(ctx, heartbeatMs);
  const send = (event: GatewayAgentEvent): void => stream.send(event.type, event);
  try {
    const answer = await agent.ask(question, {
      user,
      tools,
      history,
      signal,
      ...ids,
      onEvent: (event) => {
        if (event.type !== 'answer') send(event);
      },
    });
    send({ type: 'answer', content: answer });
  } catch (error) {
    send({ type: 'error', content: errorMessage(error) });
  } finally {
    stream.end();
  }
}
