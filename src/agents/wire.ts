/**
 * @module The agent-service wire format, with TrustGraph's field names: the one place where they live.
 *
 * Request body (UTF-8 JSON) on the request queue (`non-persistent://tg/request/agent`):
 * ```json
 * { "question": "Tell me a joke", "user": "alice", "history": [{ "role": "user", "content": "hi" }], "streaming": true }
 * ```
 * Response bodies on the response queue (`non-persistent://tg/response/agent`), several per request:
 * ```json
 * { "message_type": "thought", "content": "I need a joke", "end_of_message": true, "end_of_dialog": false, "error": null }
 * ```
 * `message_type` is `thought`, `observation`, `answer` or `error`, and two toolbus extensions:
 * `approval` (only for tools that need approval), whose content is the approval request as JSON, and
 * `progress`, a tool call's progress report, whose content is
 * `{"call_id": "c1", "tool": "convert", "progress": 3, "total": 10, "message": "page 3"}` (`total` and
 * `message` when the tool gave them). TrustGraph clients know neither `progress` nor the request field
 * that asks for it, so progress is sent only to a request with `"progress": true` (at most one per call
 * per 100 ms, the latest report, and the last one before the call's observation). The last response of
 * a request has `end_of_dialog: true`: an `answer` (with empty content when the answer was streamed in
 * pieces) or an `error` with `error: { type, message }` (`agent-error` for a failed run).
 *
 * Properties as for tool services (the shared envelope, `services/rpc/envelope.ts`): `id` correlates
 * (required), `deadline` (epoch ms) bounds the run and every tool call in it, and a message
 * `{ id, cancel }` with an empty body on the control topic (`request:tg:agent:cancel`) cancels it. The
 * service and the client are codecs over the shared RPC layer (`services/rpc/`).
 */
import { ToolbusError } from '../errors/index.js';
import { CONFIG_NAME_PATTERN } from '../config/index.js';
import type { ToolProgress } from '../tools/index.js';
import type { AgentHistoryItem } from './agent.js';

/** A request to an agent service, as TypeScript sees it. */
export interface AgentRequest {
  question: string;
  /** The end user; forwarded to every tool call. `""` when there is none. */
  user: string;
  /** Earlier turns of the conversation. @default undefined */
  history?: AgentHistoryItem[];
  /** Send thoughts and answers in pieces as they are written. */
  streaming: boolean;
  /**
   * Globs of the tools the run may offer the model and call (`tell-*`): the asking principal's tool
   * policy. A toolbus extension (`tools` on the wire); absent, every tool. @default undefined
   */
  tools?: string[];
  /**
   * The id to save the run under (`run/<id>`) when the service keeps runs: the gateway picks it, so it
   * can tell its client before the run starts. A toolbus extension (`run_id`). @default generated
   */
  runId?: string;
  /** The principal that asked, as the gateway verified it. A toolbus extension. @default undefined */
  principal?: string;
  /**
   * The tool profile the run offers (`profile/<id>`): only its tools, as well as within `tools`. A
   * toolbus extension. @default undefined (every tool)
   */
  profile?: string;
  /**
   * Send tool calls' progress as `progress` responses. A toolbus extension (`progress` on the wire, sent
   * only when true): TrustGraph clients, which do not ask, never get a message type they do not know.
   * @default undefined (no progress responses)
   */
  progress?: boolean;
}

/** What a `progress` response's `content` says, as TypeScript sees it: which call reported what. */
export interface AgentProgressContent {
  /** The call's id (`call_id` on the wire), as in its observation. */
  callId: string;
  /** The tool called (`tool` on the wire). */
  toolName: string;
  /** The tool's report: `progress`, and `total` and `message` when it gave them. */
  progress: ToolProgress;
}

/** The error of an `error` response. */
export interface AgentWireError {
  type: string;
  message: string;
}

/** The kinds of agent response (`message_type`). */
export const AgentMessageType = {
  Thought: 'thought',
  Observation: 'observation',
  Answer: 'answer',
  Error: 'error',
  /** A toolbus extension: a call waits for approval; `content` is the approval request as JSON. */
  Approval: 'approval',
  /**
   * A toolbus extension, sent only to requests that ask (`progress: true`): a tool call's progress;
   * `content` is {@link AgentProgressContent} as JSON (see {@link encodeAgentProgress}).
   */
  Progress: 'progress',
} as const;
/** One of {@link AgentMessageType}'s values. */
export type AgentMessageType = (typeof AgentMessageType)[keyof typeof AgentMessageType];

/** One response of an agent service, as TypeScript sees it. */
export interface AgentResponse {
  messageType: AgentMessageType;
  content: string;
  /** True on the last piece of a thought, observation or answer. */
  endOfMessage: boolean;
  /** True on the last response of the request. */
  endOfDialog: boolean;
  error: AgentWireError | null;
}

/** The `error.type` values the agent service sends. */
export const AgentWireErrorType = {
  /** The run failed (TrustGraph's type). */
  AgentError: 'agent-error',
  InvalidRequest: 'invalid-request',
  Cancelled: 'cancelled',
  Timeout: 'timeout',
  TooManyRequests: 'too-many-requests',
  Unavailable: 'unavailable',
} as const;

const decoder = new TextDecoder();
const MESSAGE_TYPES = new Set<string>(Object.values(AgentMessageType));
const KEPT_CODES = new Set<string>(Object.values(AgentWireErrorType));

/** Encodes a request to JSON text. */
export function encodeAgentRequest(request: AgentRequest): string {
  return JSON.stringify({
    question: request.question,
    user: request.user,
    ...(request.history ? { history: request.history } : {}),
    streaming: request.streaming,
    ...(request.tools ? { tools: request.tools } : {}),
    ...(request.runId !== undefined ? { run_id: request.runId } : {}),
    ...(request.principal !== undefined ? { principal: request.principal } : {}),
    ...(request.profile !== undefined ? { profile: request.profile } : {}),
    ...(request.progress === true ? { progress: true } : {}),
  });
}

/**
 * Decodes a request body. A missing `user` is `""` and a missing `streaming` is false; unknown fields are
 * ignored. @throws ToolbusError `invalid-request` naming the field that is wrong.
 */
export function decodeAgentRequest(body: Uint8Array | string): AgentRequest {
  const value = parseObject(body, 'request');
  const question = value['question'];
  const user = value['user'] ?? '';
  const streaming = value['streaming'] ?? false;
  const history = value['history'];
  const tools = value['tools'];
  const runId = value['run_id'];
  const principal = value['principal'];
  const profile = value['profile'];
  const progress = value['progress'];
  if (typeof question !== 'string' || question.trim() === '') {
    throw invalid(`field 'question' must be a non-empty string, got ${describe(question)}`);
  }
  if (typeof user !== 'string') throw invalid(`field 'user' must be a string, got ${describe(user)}`);
  if (typeof streaming !== 'boolean')
    throw invalid(`field 'streaming' must be a boolean, got ${describe(streaming)}`);
  const request: AgentRequest = { question, user, streaming };
  if (runId !== undefined && runId !== null) {
    if (typeof runId !== 'string' || !CONFIG_NAME_PATTERN.test(runId)) {
      throw invalid(`field 'run_id' must be 1-128 characters of [A-Za-z0-9_.=-], got ${describe(runId)}`);
    }
    request.runId = runId;
  }
  if (principal !== undefined && principal !== null) {
    if (typeof principal !== 'string')
      throw invalid(`field 'principal' must be a string, got ${describe(principal)}`);
    request.principal = principal;
  }
  if (profile !== undefined && profile !== null) {
    if (typeof profile !== 'string' || !CONFIG_NAME_PATTERN.test(profile)) {
      throw invalid(
        `field 'profile' must be a profile id (1-128 characters of [A-Za-z0-9_.=-]), got ${describe(profile)}`,
      );
    }
    request.profile = profile;
  }
  if (progress !== undefined && progress !== null) {
    if (typeof progress !== 'boolean')
      throw invalid(`field 'progress' must be a boolean, got ${describe(progress)}`);
    // `false` is the default: kept out, so a request decodes the same whether it said so or not.
    if (progress) request.progress = true;
  }
  if (tools !== undefined && tools !== null) {
    if (!Array.isArray(tools) || !tools.every((t): t is string => typeof t === 'string')) {
      throw invalid(`field 'tools' must be an array of tool-name globs, got ${describe(tools)}`);
    }
    request.tools = tools;
  }
  if (history !== undefined && history !== null) {
    if (!Array.isArray(history)) throw invalid(`field 'history' must be an array, got ${describe(history)}`);
    request.history = history.map((item: unknown, i) => {
      const turn = item as { role?: unknown; content?: unknown } | null;
      if (
        turn === null ||
        typeof turn !== 'object' ||
        (turn.role !== 'user' && turn.role !== 'assistant') ||
        typeof turn.content !== 'string'
      ) {
        throw invalid(`history[${i}] must be {"role": "user" | "assistant", "content": string}`);
      }
      return { role: turn.role, content: turn.content };
    });
  }
  return request;
}

/** Encodes a response to JSON text with TrustGraph's field names. */
export function encodeAgentResponse(response: AgentResponse): string {
  return JSON.stringify({
    message_type: response.messageType,
    content: response.content,
    end_of_message: response.endOfMessage,
    end_of_dialog: response.endOfDialog,
    error: response.error,
  });
}

/**
 * Decodes a response body; missing booleans are false, a missing `content` is `""`, a missing `error` is
 * null. @throws ToolbusError `invalid-request` when a field has the wrong type.
 */
export function decodeAgentResponse(body: Uint8Array | string): AgentResponse {
  const value = parseObject(body, 'response');
  const messageType = value['message_type'];
  const content = value['content'] ?? '';
  const endOfMessage = value['end_of_message'] ?? false;
  const endOfDialog = value['end_of_dialog'] ?? false;
  const error = value['error'] ?? null;
  if (typeof messageType !== 'string' || !MESSAGE_TYPES.has(messageType)) {
    throw invalid(
      `field 'message_type' must be one of ${[...MESSAGE_TYPES].join(', ')}, got ${describe(messageType)}`,
      'response',
    );
  }
  if (typeof content !== 'string')
    throw invalid(`field 'content' must be a string, got ${describe(content)}`, 'response');
  if (typeof endOfMessage !== 'boolean' || typeof endOfDialog !== 'boolean') {
    throw invalid(`fields 'end_of_message' and 'end_of_dialog' must be booleans`, 'response');
  }
  let wireError: AgentWireError | null = null;
  if (error !== null) {
    const e = error as { type?: unknown; message?: unknown };
    if (typeof error !== 'object' || typeof e.type !== 'string') {
      throw invalid(`field 'error' must be null or {type: string, message: string}`, 'response');
    }
    wireError = { type: e.type, message: typeof e.message === 'string' ? e.message : '' };
  }
  return {
    messageType: messageType as AgentMessageType,
    content,
    endOfMessage,
    endOfDialog,
    error: wireError,
  };
}

/** Encodes a `progress` response's content: `{"call_id", "tool", "progress", "total"?, "message"?}`. */
export function encodeAgentProgress(content: AgentProgressContent): string {
  const { progress, total, message } = content.progress;
  return JSON.stringify({
    call_id: content.callId,
    tool: content.toolName,
    progress,
    ...(total !== undefined ? { total } : {}),
    ...(message !== undefined ? { message } : {}),
  });
}

/**
 * Decodes a `progress` response's content; unknown fields are ignored.
 * @throws ToolbusError `invalid-request` naming the field that is wrong.
 */
export function decodeAgentProgress(text: string): AgentProgressContent {
  const value = parseObject(text, 'progress');
  const callId = value['call_id'];
  const toolName = value['tool'];
  const progress = value['progress'];
  const total = value['total'] ?? undefined;
  const message = value['message'] ?? undefined;
  if (typeof callId !== 'string')
    throw invalid(`field 'call_id' must be a string, got ${describe(callId)}`, 'progress');
  if (typeof toolName !== 'string')
    throw invalid(`field 'tool' must be a string, got ${describe(toolName)}`, 'progress');
  if (typeof progress !== 'number' || !Number.isFinite(progress))
    throw invalid(`field 'progress' must be a finite number, got ${describe(progress)}`, 'progress');
  if (total !== undefined && (typeof total !== 'number' || !Number.isFinite(total)))
    throw invalid(`field 'total' must be a finite number, got ${describe(total)}`, 'progress');
  if (message !== undefined && typeof message !== 'string')
    throw invalid(`field 'message' must be a string, got ${describe(message)}`, 'progress');
  return {
    callId,
    toolName,
    progress: {
      progress,
      ...(total !== undefined ? { total } : {}),
      ...(message !== undefined ? { message } : {}),
    },
  };
}

/** The wire error for a failure: codes of {@link AgentWireErrorType} are kept, anything else is `agent-error`. */
export function toAgentWireError(error: unknown): AgentWireError {
  const message = error instanceof Error ? error.message : String(error);
  if (error instanceof ToolbusError && KEPT_CODES.has(error.code)) return { type: error.code, message };
  return { type: AgentWireErrorType.AgentError, message };
}

/**
 * The local error for a wire error: `cancelled`, `timeout`, `too-many-requests`, `unavailable` and
 * `invalid-request` keep their code; anything else (`agent-error`, unknown types) is `service-error`.
 */
export function fromAgentWireError(error: AgentWireError, service: string): ToolbusError {
  const code = KEPT_CODES.has(error.type) && error.type !== 'agent-error' ? error.type : 'service-error';
  const text = error.message.length > 2000 ? `${error.message.slice(0, 2000)}…` : error.message;
  return new ToolbusError(
    code as ToolbusError['code'],
    `agent service '${service}' returned error '${error.type}': ${text}`,
  );
}

function parseObject(body: Uint8Array | string, what: string): Record<string, unknown> {
  const text = typeof body === 'string' ? body : decoder.decode(body);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw invalid(`body is not JSON`, what);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw invalid(`body must be a JSON object, got ${describe(value)}`, what);
  }
  return value as Record<string, unknown>;
}

function invalid(message: string, what = 'request'): ToolbusError {
  return new ToolbusError('invalid-request', `agent ${what}: ${message}`);
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return value === '' ? 'an empty string' : 'a string';
  return typeof value;
}
