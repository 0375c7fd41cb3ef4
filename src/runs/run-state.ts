/**
 * @module The saved state of an agent run (`run/<id>`): its messages so far, the step in progress with
 * its pending and finished calls, its budget, its events and who is running it. Enough for any replica
 * to go on with the run after a restart.
 */
import {
  AssistantMessage,
  FunctionExecutionResult,
  FunctionExecutionResultMessage,
  SystemMessage,
  UserMessage,
  type LLMMessage,
} from '../models/index.js';
import type { JsonObject, JsonValue } from '../schema/index.js';
import type { ApprovalRequest } from './approval-request.js';

/** Where a run stands. */
export type RunStatus = 'running' | 'paused' | 'done' | 'failed';

/** The process running a run, and until when its claim holds without a renewal. */
export interface RunOwner {
  /** A random id of the process's run store. */
  instance: string;
  host: string;
  pid: number;
  /** Epoch ms. */
  leaseUntil: number;
}

/** The outcome of one call, as the model got it. */
export interface RunCallResult {
  content: string;
  isError: boolean;
  code?: string;
}

/** One call of the step in progress. */
export interface RunCall {
  /** The call's id, unique in the run. */
  id: string;
  name: string;
  /** The argument text to replay to the model (the model's, or an approver's edit). */
  arguments: string;
  /** The approval request this call waits for or waited for. */
  approval?: string;
  /** Set once the call has finished. */
  result?: RunCallResult;
}

/** The step in progress: what the model asked for, and which calls have finished. */
export interface RunStep {
  /** Text the model sent beside its calls. */
  thought?: string;
  calls: RunCall[];
}

/** An event of the run, as its event stream replays it. */
export interface RunEvent {
  /** 1, 2, …: a client that reattaches asks for what came after the last it saw. */
  seq: number;
  type: 'thought' | 'observation' | 'approval' | 'answer' | 'error';
  content: string;
  iteration: number;
  toolName?: string;
  callId?: string;
  isError?: boolean;
  code?: string;
  approval?: ApprovalRequest;
}

/** The saved state of a run. */
export interface RunState {
  id: string;
  status: RunStatus;
  /** The question that started it. */
  question: string;
  /** The end user its tool calls run for. */
  user?: string;
  /** The principal that started it. */
  principal?: string;
  /** The tool globs it was started under (the principal's tool policy); absent for every tool. */
  tools?: string[];
  /** The tool profile it was started with (`profile/<id>`); absent for every tool. */
  profile?: string;
  /** Model steps taken. */
  step: number;
  /** Model steps it may take. */
  maxIterations: number;
  /** The conversation so far, without the step in progress. */
  messages: JsonObject[];
  /** The step in progress, when the model asked for calls and not all have finished. */
  current?: RunStep;
  events: RunEvent[];
  answer?: string;
  error?: { code: string; message: string };
  /** Who runs it now; absent while nobody does (a paused run whose caller went away). */
  owner?: RunOwner;
  /** ISO times. */
  created: string;
  updated: string;
}

/** The most events a saved run keeps; later ones replace the oldest (the stream says what was cut). */
export const MAX_RUN_EVENTS = 1000;
/** The longest event content a saved run keeps, in characters; the rest is cut with a notice. */
export const MAX_RUN_EVENT_CHARS = 8 * 1024;

/** A message as JSON. */
export function messageToJson(message: LLMMessage): JsonObject {
  switch (message.type) {
    case 'SystemMessage':
      return { type: message.type, content: message.content };
    case 'UserMessage':
      return { type: message.type, content: message.content, source: message.source };
    case 'AssistantMessage':
      return {
        type: message.type,
        content:
          typeof message.content === 'string' ? message.content : message.content.map((c) => ({ ...c })),
        source: message.source,
        ...(message.thought !== undefined ? { thought: message.thought } : {}),
      };
    case 'FunctionExecutionResultMessage':
      return {
        type: message.type,
        content: message.content.map((r) => ({
          callId: r.callId,
          content: r.content,
          isError: r.isError,
          name: r.name,
        })),
      };
  }
}

/**
 * A message from JSON, as {@link messageToJson} wrote it.
 * @throws Error naming what is wrong, for a value that is not one.
 */
export function messageFromJson(value: JsonValue): LLMMessage {
  const v = value as Record<string, unknown> | null;
  if (v === null || typeof v !== 'object') throw new Error('a saved message is not an object');
  switch (v['type']) {
    case 'SystemMessage':
      return new SystemMessage({ content: String(v['content']) });
    case 'UserMessage':
      return new UserMessage({ content: String(v['content']), source: String(v['source'] ?? 'user') });
    case 'AssistantMessage': {
      const content = v['content'];
      const calls = Array.isArray(content)
        ? content.map((c) => {
            const call = c as Record<string, unknown>;
            return {
              id: String(call['id']),
              name: String(call['name']),
              arguments: String(call['arguments']),
            };
          })
        : String(content);
      return new AssistantMessage({
        content: calls,
        source: String(v['source'] ?? 'assistant'),
        ...(typeof v['thought'] === 'string' ? { thought: v['thought'] } : {}),
      });
    }
    case 'FunctionExecutionResultMessage': {
      const results = Array.isArray(v['content']) ? v['content'] : [];
      return new FunctionExecutionResultMessage({
        content: results.map((r) => {
          const result = r as Record<string, unknown>;
          return new FunctionExecutionResult({
            callId: String(result['callId']),
            content: String(result['content']),
            isError: result['isError'] === true,
            name: String(result['name']),
          });
        }),
      });
    }
    default:
      throw new Error(`a saved message has an unknown type ${JSON.stringify(v['type'])}`);
  }
}

/**
 * Reads a stored run. Undefined for a value that is not one (an item written by hand).
 */
export function runFromJson(value: JsonValue | undefined): RunState | undefined {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
  const v = value as Record<string, unknown>;
  if (typeof v['id'] !== 'string' || typeof v['question'] !== 'string') return undefined;
  if (!['running', 'paused', 'done', 'failed'].includes(v['status'] as string)) return undefined;
  if (!Array.isArray(v['messages']) || !Array.isArray(v['events'])) return undefined;
  if (typeof v['step'] !== 'number' || typeof v['maxIterations'] !== 'number') return undefined;
  return value as unknown as RunState;
}

/** The calls of the step in progress that wait for a decision. */
export function pendingApprovals(state: RunState): string[] {
  return (state.current?.calls ?? []).flatMap((c) =>
    c.approval !== undefined && c.result === undefined ? [c.approval] : [],
  );
}
