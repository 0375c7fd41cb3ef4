/**
 * @module What every question-answering agent shares: `RunnableAgent`, its run options, its events,
 * and the past turns it accepts.
 */
import { AssistantMessage, UserMessage } from '../models/index.js';
import type { LLMMessage } from '../models/index.js';
import { abortError, isToolbusError, ToolbusError, type ToolbusErrorCode } from '../errors/index.js';
import type { ToolProgress, ToolProvider, ToolResult } from '../tools/index.js';
import type { ApprovalRequest } from '../runs/index.js';

/** The kinds of {@link AgentEvent}, with TrustGraph's `message_type` names. */
export const AgentEventType = {
  Thought: 'thought',
  Observation: 'observation',
  Answer: 'answer',
  Error: 'error',
  /** A call waits for a person's approval; the run goes on once it is decided. */
  Approval: 'approval',
  /** A running tool call reported progress (`ctx.progress`, a tool service's streamed chunk). */
  Progress: 'progress',
} as const;
/** One of {@link AgentEventType}'s values. */
export type AgentEventType = (typeof AgentEventType)[keyof typeof AgentEventType];

/** How a run ended. */
export const AgentFinishReason = {
  /** The model answered. */
  Answer: 'answer',
  /** `maxIterations` was reached; the answer says so (or is the reflection's, when enabled). */
  MaxIterations: 'max-iterations',
} as const;
/** One of {@link AgentFinishReason}'s values. */
export type AgentFinishReason = (typeof AgentFinishReason)[keyof typeof AgentFinishReason];

/**
 * Something an agent reports while it runs. A streamed thought or answer arrives as several events with
 * `endOfMessage: false` and a last one with `true`; otherwise each event is whole.
 */
export type AgentEvent =
  | { type: 'thought'; content: string; endOfMessage: boolean; iteration: number }
  | {
      type: 'observation';
      /** The tool's result, or the error message the model was given. */
      content: string;
      endOfMessage: boolean;
      iteration: number;
      toolName: string;
      callId: string;
      isError: boolean;
      /** The error's code when `isError`, e.g. `invalid-arguments`, `unknown-tool`, `timeout`. */
      code?: ToolbusErrorCode;
      /** The raw argument text when it was not a JSON object (kept here, never sent back to the model). */
      rawArguments?: string;
    }
  | {
      type: 'answer';
      content: string;
      endOfMessage: boolean;
      iteration: number;
      finishReason: AgentFinishReason;
    }
  | { type: 'error'; content: string; endOfMessage: boolean; iteration: number; error: ToolbusError }
  | {
      type: 'approval';
      /** The approval request as JSON text (what the agent stream carries as `content`). */
      content: string;
      endOfMessage: boolean;
      iteration: number;
      toolName: string;
      callId: string;
      /** The stored request: decide it by its `id` (`POST /api/v1/approvals/{id}`, `toolbus approvals`). */
      approval: ApprovalRequest;
    }
  | {
      /**
       * A tool call's progress, at most one event per call per 100 ms (the latest report wins, and the
       * last one comes before the call's observation). Emitted only to runs with an `onEvent`; never saved
       * with a kept run.
       */
      type: 'progress';
      /** The report as JSON text, `{"call_id", "tool", "progress", "total"?, "message"?}` (the agent wire's). */
      content: string;
      endOfMessage: true;
      iteration: number;
      toolName: string;
      callId: string;
      /** The tool's report (a `message` longer than 2000 characters is cut). */
      progress: ToolProgress;
    };

/** A past turn of the conversation, as the gateway and the bus carry it. */
export interface AgentHistoryItem {
  role: 'user' | 'assistant';
  content: string;
}

/** Options of {@link RunnableAgent.run}. */
export interface AgentRunOptions {
  /** The end user: forwarded into every tool call (tool services get it in the envelope). @default undefined */
  user?: string;
  /** Cancels the run: the model request and every tool call in flight, remote ones included. @default none */
  signal?: AbortSignal;
  /**
   * The run's absolute deadline (epoch ms), set by the outermost caller (`AgentService` passes the
   * request's). Each tool call gets at most what is left of it (`ToolCallOptions.deadline`), remote ones
   * on the wire too. It does not abort the run by itself: `signal` does (`AgentService` aborts it at the
   * deadline). @default none
   */
  deadline?: number;
  /** Earlier turns, placed before the question. @default [] */
  history?: readonly (AgentHistoryItem | LLMMessage)[];
  /** Receives events as they happen. Errors it throws are ignored. @default none */
  onEvent?: (event: AgentEvent) => void;
  /**
   * Report tool calls' progress to `onEvent` as `progress` events. False leaves `ctx.progress` unset, so
   * tools skip reports nobody reads (`AgentService` passes false unless the request asked for progress).
   * @default true (when there is an `onEvent`)
   */
  progress?: boolean;
  /**
   * Stream thoughts and answers in pieces as the model writes them (uses `createStream`). `ReActAgent`
   * honours it. `ToolUseAgent` ignores it and emits whole events: whether a step's text is the answer
   * or a thought beside tool calls is known only when the model's reply ends. @default false
   */
  streaming?: boolean;
  /**
   * The run's id in the agent's run store (`run/<id>`), when it has one. @default a generated `run-…` id
   */
  runId?: string;
  /** The principal that started the run: kept with it and in its approval requests. @default undefined */
  principal?: string;
  /**
   * The tool globs the run was started under (the principal's tool policy), kept with the run so a
   * replica that resumes it offers the same tools. @default undefined (every tool)
   */
  toolPolicy?: readonly string[];
  /**
   * The tool profile the run was started with, kept with it so a replica that resumes it offers the
   * same tools. The agent's own tools are already that profile's: this only records it. @default undefined
   */
  profile?: string;
}

/**
 * An agent that answers a question, using tools. `ToolUseAgent` and `ReActAgent` implement it;
 * `AgentService` puts one on the bus.
 */
export interface RunnableAgent {
  /**
   * Runs until a final answer and resolves with it. Rejects with `cancelled`/`timeout` when the signal
   * aborts and with `model-error` (or the client's own code) when the model fails; tool failures never
   * reject, they go back to the model.
   */
  run(input: string | readonly LLMMessage[], options?: AgentRunOptions): Promise<string>;
  /**
   * Goes on with a saved run (one paused for an approval, or left by a process that stopped), from its
   * last saved step; resolves with its answer. Agents without a run store do not have it.
   */
  resume?(runId: string, options?: AgentRunOptions): Promise<string>;
}

/** Turns history items into model messages. */
export function historyMessages(
  history: readonly (AgentHistoryItem | LLMMessage)[] | undefined,
): LLMMessage[] {
  return (history ?? []).map((item) =>
    'role' in item
      ? item.role === 'user'
        ? new UserMessage({ content: item.content, source: 'user' })
        : new AssistantMessage({ content: item.content, source: 'assistant' })
      : item,
  );
}

/** Calls `onEvent`, ignoring its failures: a broken listener must not break the run. */
export function emit(onEvent: ((event: AgentEvent) => void) | undefined, event: AgentEvent): void {
  if (!onEvent) return;
  try {
    onEvent(event);
  } catch {
    // the listener's problem, not the agent's
  }
}

/**
 * The error a failed run rejects with: the abort error when the signal aborted, a toolbus error as is,
 * anything else wrapped as `model-error` with the original as `cause`.
 */
export function toRunError(error: unknown, signal: AbortSignal | undefined): ToolbusError {
  if (signal?.aborted) return abortError(signal, 'agent run');
  if (error instanceof ToolbusError || isToolbusError(error)) return error as ToolbusError;
  return new ToolbusError(
    'model-error',
    `agent run failed: ${error instanceof Error ? error.message : String(error)}`,
    {
      cause: error,
    },
  );
}

/** What an agent passes with each tool call. */
export interface AgentToolCall {
  callId: string;
  user: string | undefined;
  signal: AbortSignal | undefined;
  timeoutMs: number | undefined;
  /** The run's deadline: the call gets at most what is left of it. */
  deadline?: number | undefined;
  /** Who approved the call, for a tool that needs approval. */
  approvedBy?: string | undefined;
  /** Hears the tool's progress reports (`ToolCallOptions.onProgress`); absent, nobody listens. */
  onProgress?: ((update: ToolProgress) => void) | undefined;
}

/**
 * Calls a tool for an agent. A provider must not reject, but a broken one must not break the run
 * either: a throw or rejection becomes an error result the model can react to.
 */
export async function callAgentTool(
  tools: ToolProvider,
  name: string,
  args: string | Record<string, unknown>,
  { callId, user, signal, timeoutMs, deadline, approvedBy, onProgress }: AgentToolCall,
): Promise<ToolResult> {
  try {
    return await tools.call(name, args, {
      callId,
      caller: 'agent',
      ...(signal ? { signal } : {}),
      ...(user !== undefined ? { user } : {}),
      ...(timeoutMs !== undefined ? { timeoutMs } : {}),
      ...(deadline !== undefined ? { deadline } : {}),
      ...(approvedBy !== undefined ? { approvedBy } : {}),
      ...(onProgress !== undefined ? { onProgress } : {}),
    });
  } catch (error) {
    return {
      name,
      callId,
      content: `tool '${name}' failed: ${error instanceof Error ? error.message : String(error)}`,
      isError: true,
    };
  }
}

/** Ends a run that hit `maxIterations`: emits the final answer event and returns it. */
export function answerAtLimit(
  onEvent: ((event: AgentEvent) => void) | undefined,
  answer: string,
  iteration: number,
): string {
  emit(onEvent, {
    type: 'answer',
    content: answer,
    endOfMessage: true,
    iteration,
    finishReason: 'max-iterations',
  });
  return answer;
}

/** Ends a failed run: emits the error event and returns the error to reject with. */
export function failRun(
  onEvent: ((event: AgentEvent) => void) | undefined,
  error: unknown,
  signal: AbortSignal | undefined,
  iteration: number,
): ToolbusError {
  const failure = toRunError(error, signal);
  emit(onEvent, { type: 'error', content: failure.message, endOfMessage: true, iteration, error: failure });
  return failure;
}

/**
 * Runs `agent` the way `AgentClient.ask` answers: events go to `onEvent` except `error`, since the
 * failure is the rejection. This is the shape the HTTP gateway expects of an agent.
 */
export function askAgent(
  agent: RunnableAgent,
  question: string,
  options: AgentRunOptions = {},
): Promise<string> {
  const onEvent = options.onEvent;
  return agent.run(question, {
    ...options,
    ...(onEvent
      ? { onEvent: (event: AgentEvent) => (event.type === 'error' ? undefined : onEvent(event)) }
      : {}),
  });
}
