/**
 * @module `ToolUseAgent`: an agent for models with native function calling. It loops model → tools →
 * model until the model answers in text, running the calls of each step in parallel under a cap.
 */
import {
  AssistantMessage,
  FunctionExecutionResult,
  FunctionExecutionResultMessage,
  SystemMessage,
  FinishReason,
  ModelError,
  UserMessage,
} from '../models/index.js';
import { abortError, numberOption } from '../errors/index.js';
import type { ChatCompletionClient, CreateResult, FunctionCall, LLMMessage } from '../models/index.js';
import { ToolError, parseToolArguments } from '../tools/index.js';
import type { Tool, ToolProvider } from '../tools/index.js';
import { answerAtLimit, askAgent, callAgentTool, emit, failRun, historyMessages } from './agent.js';
import type { AgentEvent, AgentRunOptions, RunnableAgent } from './agent.js';
import { mapWithLimit } from './map-with-limit.js';
import { traceAgentRun } from './agent-tracing.js';
import { toToolProvider } from './tool-provider.js';

/** The system prompt of the guide's agent. */
export const DEFAULT_SYSTEM_MESSAGE = 'You are a helpful AI assistant.';
/** How many model steps a run may take before it stops. */
export const DEFAULT_MAX_ITERATIONS = 10;
/** How many tool calls of one step run at once. */
export const DEFAULT_PARALLEL_TOOL_CALLS = 8;

/** Options of {@link ToolUseAgent}. */
export interface ToolUseAgentOptions {
  /** The model; it must support function calling. */
  model: ChatCompletionClient;
  /**
   * The tools: a provider (a `ToolSet`, or a `LiveToolSet` whose contents change while the agent runs),
   * or a fixed array. A provider is listed afresh at every step, so a hot reload shows at the next step.
   */
  tools: ToolProvider | readonly Tool[];
  /** @default DEFAULT_SYSTEM_MESSAGE ('You are a helpful AI assistant.') */
  systemMessage?: string;
  /** Model steps per run, each possibly running tools. @default DEFAULT_MAX_ITERATIONS (10) */
  maxIterations?: number;
  /** Tool calls of one step that run at once; the rest wait. @default DEFAULT_PARALLEL_TOOL_CALLS (8) */
  parallelToolCalls?: number;
  /**
   * When the step budget is used up, ask the model once more, without tools, to answer from the results
   * it has (the guide's "reflection"). With `maxIterations: 1` this is exactly the guide's agent. When
   * false, the run ends with a message saying the limit was hit. @default false
   */
  reflect?: boolean;
  /** The user tool calls run for when `run` names none. @default undefined */
  user?: string;
  /** Per tool call timeout. @default the provider's (DEFAULT_TOOL_TIMEOUT_MS for a ToolSet) */
  toolTimeoutMs?: number;
  /** The `source` of the assistant messages. @default 'assistant' */
  name?: string;
}

interface ResolvedOptions {
  model: ChatCompletionClient;
  tools: ToolProvider;
  systemMessage: string;
  maxIterations: number;
  parallelToolCalls: number;
  reflect: boolean;
  user: string | undefined;
  toolTimeoutMs: number | undefined;
  name: string;
}

/** A call as the model sent it, what goes back to the model, and its parsed arguments or the problem. */
interface PreparedCall {
  /** The call as the model sent it. */
  call: FunctionCall;
  /** Its id, made unique within the run. */
  id: string;
}

/**
 * Answers questions with a function-calling model and tools.
 *
 * Each step lists the tools afresh, asks the model, and runs the calls it requested (in parallel, at most
 * `parallelToolCalls` at once). Every failure of a call (unknown tool, malformed JSON, invalid arguments,
 * a thrown error, a timeout) goes back to the model as an `isError` result and the loop goes on. Malformed
 * argument text stays out of band: the conversation keeps `{}` in its place and the model gets an error
 * result explaining the problem. The run's `user` goes into every tool call, never the model's.
 *
 * @example
 * ```ts
 * const agent = new ToolUseAgent({ model, tools: [stockPriceTool] });
 * const answer = await agent.run('What is the stock price of NVIDIA on 2025/04/01?', {
 *   user: 'alice',
 *   onEvent: (e) => console.log(e.type, e.content),
 * });
 * ```
 */
export class ToolUseAgent implements RunnableAgent {
  readonly #options: ResolvedOptions;

  /** @throws ToolbusError `usage` for a `maxIterations` or `parallelToolCalls` that is not a positive integer. */
  constructor(options: ToolUseAgentOptions) {
    const integer = { integer: true };
    const maxIterations = numberOption(
      'ToolUseAgent',
      'maxIterations',
      options.maxIterations,
      DEFAULT_MAX_ITERATIONS,
      integer,
    );
    const parallelToolCalls = numberOption(
      'ToolUseAgent',
      'parallelToolCalls',
      options.parallelToolCalls,
      DEFAULT_PARALLEL_TOOL_CALLS,
      integer,
    );
    this.#options = {
      model: options.model,
      tools: toToolProvider(options.tools),
      systemMessage: options.systemMessage ?? DEFAULT_SYSTEM_MESSAGE,
      maxIterations,
      parallelToolCalls,
      reflect: options.reflect ?? false,
      user: options.user,
      toolTimeoutMs: options.toolTimeoutMs,
      name: options.name ?? 'assistant',
    };
  }

  /**
   * {@link run} with a question, as `AgentClient.ask` and the HTTP gateway expect: `onEvent` gets every
   * event but `error` (the failure is the rejection).
   */
  ask(question: string, options: AgentRunOptions = {}): Promise<string> {
    return askAgent(this, question, options);
  }

  /**
   * Runs until the model answers in text, or `maxIterations` steps. Resolves with the answer (or, when the
   * limit is hit without `reflect`, a message saying so). Events report each thought (text beside tool
   * calls, or a reasoning model's thinking), tool result and the answer; thoughts and answers are whole
   * (the `streaming` option does not split them).
   *
   * Rejects with `cancelled` or `timeout` when the signal aborts (tool calls in flight are aborted too),
   * and with the model client's error (`model-error`, `rate-limited`, …) when the model fails; an `error`
   * event precedes the rejection. With tracing on, the run is an `invoke_agent {name}` span.
   */
  run(input: string | readonly LLMMessage[], options: AgentRunOptions = {}): Promise<string> {
    return traceAgentRun(this.#options.name, () => this.#run(input, options));
  }

  async #run(input: string | readonly LLMMessage[], options: AgentRunOptions): Promise<string> {
    const o = this.#options;
    const signal = options.signal;
    const user = options.user ?? o.user;
    const onEvent = options.onEvent;
    const session: LLMMessage[] = [
      new SystemMessage({ content: o.systemMessage }),
      ...historyMessages(options.history),
      ...(typeof input === 'string' ? [new UserMessage({ content: input, source: 'user' })] : input),
    ];
    let iteration = 0;
    const usedIds = new Set<string>();
    try {
      while (iteration < o.maxIterations) {
        iteration++;
        const result = await this.#create(session, o.tools.list(), signal);
        if (typeof result.content === 'string') {
          // A reasoning model's thinking behind the answer; without this event it was lost to listeners.
          const reasoning = result.thought?.trim();
          if (reasoning)
            emit(onEvent, { type: 'thought', content: reasoning, endOfMessage: true, iteration });
          checkAnswer(result);
          emit(onEvent, {
            type: 'answer',
            content: result.content,
            endOfMessage: true,
            iteration,
            finishReason: 'answer',
          });
          return result.content;
        }
        const prepared = result.content.map((call, i) => ({
          call,
          id: uniqueCallId(call, i, iteration, usedIds),
        }));
        checkCutCalls(result, prepared);
        const thought = result.thought?.trim();
        emit(onEvent, {
          type: 'thought',
          content:
            thought || `Calling ${prepared.map((p) => `${p.call.name}(${p.call.arguments})`).join(', ')}`,
          endOfMessage: true,
          iteration,
        });
        const results = await mapWithLimit(prepared, o.parallelToolCalls, async (p) => {
          // The model's own text: ToolSet.call is the one place it is parsed, looked up and validated.
          const r = await callAgentTool(o.tools, p.call.name, p.call.arguments, {
            callId: p.id,
            user,
            signal,
            timeoutMs: o.toolTimeoutMs,
            deadline: options.deadline,
          });
          const replayable = r.arguments !== undefined || !r.isError;
          const event: AgentEvent = {
            type: 'observation',
            content: r.content,
            endOfMessage: true,
            iteration,
            toolName: r.name,
            callId: r.callId,
            isError: r.isError,
            ...(r.error ? { code: r.error.code } : {}),
            ...(replayable ? {} : { rawArguments: p.call.arguments }),
          };
          emit(onEvent, event);
          return r;
        });
        if (signal?.aborted) throw abortError(signal, 'agent run');
        session.push(
          new AssistantMessage({
            // Replayed as sent, except argument text that is not a JSON object: providers reject a
            // replayed call whose arguments are not JSON, so it becomes `{}` (the error says what was wrong).
            content: prepared.map((p, i) => {
              const r = results[i]!;
              const text = r.arguments ?? (r.isError ? '{}' : p.call.arguments);
              return { ...p.call, id: p.id, arguments: text };
            }),
            source: o.name,
            ...(result.thought !== undefined ? { thought: result.thought } : {}),
          }),
        );
        session.push(
          new FunctionExecutionResultMessage({
            content: results.map(
              (r) =>
                new FunctionExecutionResult({
                  callId: r.callId,
                  content: r.content,
                  isError: r.isError,
                  name: r.name,
                }),
            ),
          }),
        );
      }
      const answer = await this.#finish(session, signal);
      return answerAtLimit(onEvent, answer, iteration);
    } catch (error) {
      throw failRun(onEvent, error, signal, iteration);
    }
  }

  /** The answer when the step budget is used up: the reflection's, or a message saying so. */
  async #finish(session: LLMMessage[], signal: AbortSignal | undefined): Promise<string> {
    const o = this.#options;
    const limit =
      `I stopped after ${o.maxIterations} step${o.maxIterations === 1 ? '' : 's'} (maxIterations = ${o.maxIterations}) ` +
      'without reaching a final answer.';
    if (!o.reflect) return limit;
    const result = await this.#create(session, [], signal);
    if (typeof result.content !== 'string') return limit;
    checkAnswer(result);
    return result.content;
  }

  async #create(
    session: LLMMessage[],
    tools: readonly Tool[],
    signal: AbortSignal | undefined,
  ): Promise<CreateResult> {
    if (signal?.aborted) throw abortError(signal, 'agent run');
    return this.#options.model.create(session, {
      ...(tools.length > 0 ? { tools } : {}),
      ...(signal ? { signal } : {}),
    });
  }
}

/**
 * Refuses an empty answer the model did not mean to give: a reasoning model that spent its output
 * tokens thinking (finish reason `length`), or a provider filter (`content_filter`). Returned as is, the
 * run "succeeded" with an empty string and the user never learnt why.
 *
 * @throws ModelError `model-error` saying why there is no answer and what to change.
 */
function checkAnswer(result: CreateResult): void {
  if (result.content !== '' && String(result.content).trim() !== '') return;
  if (result.finishReason === FinishReason.Length) {
    throw new ModelError(
      'model-error',
      "the model stopped at its output token limit before writing an answer (finish reason 'length')" +
        `${result.thought ? ', while reasoning' : ''}; raise the model's maxTokens or shorten the conversation`,
    );
  }
  if (result.finishReason === FinishReason.ContentFilter) {
    throw new ModelError(
      'model-error',
      "the provider's content filter withheld the model's answer (finish reason 'content_filter')",
    );
  }
}

/**
 * Refuses function calls whose arguments the token limit cut off (finish reason `length` and text that is
 * not JSON). Sent back as "not valid JSON", the model retried with the same limit until `maxIterations`;
 * only a larger limit helps. Calls that parse are complete and run as usual.
 *
 * @throws ModelError `model-error` naming the tool and saying to raise the model's maxTokens.
 */
function checkCutCalls(result: CreateResult, prepared: readonly PreparedCall[]): void {
  if (result.finishReason !== FinishReason.Length) return;
  const cut = prepared.find((p) => parseToolArguments(p.call.name, p.call.arguments) instanceof ToolError);
  if (cut === undefined) return;
  throw new ModelError(
    'model-error',
    "the model's output was cut at its token limit (finish reason 'length') in the arguments of tool " +
      `'${cut.call.name}'; raise the model's maxTokens or shorten the conversation`,
  );
}

/**
 * The call's id, made unique within the run: servers that send no ids get them filled per response
 * (`call_0`, `call_1`, … at every step), and some repeat ids. A repeated id would pair a result with the
 * wrong call in the conversation (providers reject duplicate `tool_call_id`s) and in the events.
 */
function uniqueCallId(call: FunctionCall, index: number, iteration: number, usedIds: Set<string>): string {
  let id = call.id && !usedIds.has(call.id) ? call.id : `call_${iteration}_${index}`;
  for (let n = 2; usedIds.has(id); n++) id = `call_${iteration}_${index}_${n}`;
  usedIds.add(id);
  return id;
}
