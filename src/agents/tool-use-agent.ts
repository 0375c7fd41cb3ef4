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
import { randomUUID } from 'node:crypto';
import { ToolbusError, abortError, isToolbusError, numberOption } from '../errors/index.js';
import type { ChatCompletionClient, CreateResult, FunctionCall, LLMMessage } from '../models/index.js';
import { DeferredTools, ToolError, approvalNeeded, parseToolArguments } from '../tools/index.js';
import type {
  ContentPart,
  DeferredToolList,
  DeferredToolsOptions,
  Tool,
  ToolProvider,
  ToolResult,
} from '../tools/index.js';
import {
  denialText,
  messageFromJson,
  messageToJson,
  pendingApprovals,
  type RunCall,
  type RunEvent,
  type RunHandle,
  type RunState,
  type RunStep,
  type RunStore,
} from '../runs/index.js';
import { answerAtLimit, askAgent, callAgentTool, emit, failRun, historyMessages } from './agent.js';
import type { AgentEvent, AgentRunOptions, AgentToolCall, RunnableAgent } from './agent.js';
import { mapWithLimit } from './map-with-limit.js';
import { callProgress } from './progress-events.js';
import { traceAgentRun } from './agent-tracing.js';
import { toToolProvider } from './tool-provider.js';

/**
 * The content parts (images, say) of finished calls, for the model's next request only: a saved run
 * keeps their text, not megabytes of media, so a resumed run sends the text.
 */
const resultParts = new WeakMap<RunCall, readonly ContentPart[]>();

/** The system prompt of the guide's agent. */
export const DEFAULT_SYSTEM_MESSAGE = 'You are a helpful AI assistant.';
/** How many model steps a run may take before it stops. */
export const DEFAULT_MAX_ITERATIONS = 10;
/** How many tool calls of one step run at once. */
export const DEFAULT_PARALLEL_TOOL_CALLS = 8;
/** How long an approval request waits for a decision before the call is denied (1 h). */
export const DEFAULT_APPROVAL_TIMEOUT_MS = 3_600_000;

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
  /**
   * Where runs are saved (`run/<id>`, at every step) and approvals asked for. With it, a call of a tool
   * that needs approval pauses the run until someone decides, and a stopped run can be resumed
   * ({@link ToolUseAgent.resume}). Without it, such a call gets an `approval-required` error result.
   * @default none
   */
  runs?: RunStore;
  /** How long an approval request waits before it is denied as timed out. @default DEFAULT_APPROVAL_TIMEOUT_MS (1 h) */
  approvalTimeoutMs?: number;
  /**
   * Deferred loading, for tool sets too large to show whole: the model first sees a `search_tools`
   * tool and the `alwaysLoaded` ones; each tool a search finds joins the following steps (a resumed run
   * finds its earlier searches in its messages). @default undefined (every tool at every step)
   */
  toolSearch?: DeferredToolsOptions;
}

interface ResolvedOptions {
  model: ChatCompletionClient;
  /** Where calls go: the tools, with `search_tools` in front when searching. */
  tools: ToolProvider;
  agentTools: DeferredTools;
  systemMessage: string;
  maxIterations: number;
  parallelToolCalls: number;
  reflect: boolean;
  user: string | undefined;
  toolTimeoutMs: number | undefined;
  name: string;
  runs: RunStore | undefined;
  approvalTimeoutMs: number;
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
    const agentTools = new DeferredTools(toToolProvider(options.tools), options.toolSearch);
    this.#options = {
      model: options.model,
      tools: agentTools.calls,
      agentTools,
      systemMessage: options.systemMessage ?? DEFAULT_SYSTEM_MESSAGE,
      maxIterations,
      parallelToolCalls,
      reflect: options.reflect ?? false,
      user: options.user,
      toolTimeoutMs: options.toolTimeoutMs,
      name: options.name ?? 'assistant',
      runs: options.runs,
      approvalTimeoutMs: numberOption(
        'ToolUseAgent',
        'approvalTimeoutMs',
        options.approvalTimeoutMs,
        DEFAULT_APPROVAL_TIMEOUT_MS,
        { infinity: true },
      ),
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
   * calls, or a reasoning model's thinking), tool call progress (unless `progress: false`), tool result
   * and the answer; thoughts and answers are whole (the `streaming` option does not split them).
   *
   * Rejects with `cancelled` or `timeout` when the signal aborts (tool calls in flight are aborted too),
   * and with the model client's error (`model-error`, `rate-limited`, …) when the model fails; an `error`
   * event precedes the rejection. With tracing on, the run is an `invoke_agent {name}` span.
   */
  run(input: string | readonly LLMMessage[], options: AgentRunOptions = {}): Promise<string> {
    return traceAgentRun(this.#options.name, () => this.#run(input, options));
  }

  /**
   * Goes on with a run saved in the agent's run store (`runs`), from its last saved step: one paused for
   * an approval (it waits for the decision, or acts on the one already made), or one a stopped process
   * left. Resolves with the answer; events report what happens from here on.
   *
   * @throws ToolbusError `usage` without a run store; `not-found` for an unknown run; `config-conflict`
   * when it has finished or another live process runs it (or claimed it first).
   */
  resume(runId: string, options: AgentRunOptions = {}): Promise<string> {
    return traceAgentRun(this.#options.name, async () => {
      const runs = this.#options.runs;
      if (!runs) {
        throw new ToolbusError(
          'usage',
          'ToolUseAgent.resume: this agent has no run store; pass { runs } to keep runs',
        );
      }
      const handle = await runs.claim(runId);
      if (!handle)
        throw new ToolbusError('config-conflict', `run '${runId}' was claimed by another process first`);
      const state = handle.state;
      let session: LLMMessage[];
      try {
        session = state.messages.map(messageFromJson);
      } catch (error) {
        await handle.release();
        throw new ToolbusError(
          'invalid-config',
          `run '${runId}' cannot be resumed: ${(error as Error).message}`,
        );
      }
      state.status = pendingApprovals(state).length > 0 ? 'paused' : 'running';
      return this.#loop(session, handle, options, state.user);
    });
  }

  async #run(input: string | readonly LLMMessage[], options: AgentRunOptions): Promise<string> {
    const o = this.#options;
    const user = options.user ?? o.user;
    const session: LLMMessage[] = [
      new SystemMessage({ content: o.systemMessage }),
      ...historyMessages(options.history),
      ...(typeof input === 'string' ? [new UserMessage({ content: input, source: 'user' })] : input),
    ];
    if (!o.runs) return this.#loop(session, undefined, options, user);
    const now = new Date().toISOString();
    const handle = await o.runs.create({
      id: options.runId ?? `run-${randomUUID()}`,
      status: 'running',
      question: typeof input === 'string' ? input : lastUserText(input),
      ...(user !== undefined ? { user } : {}),
      ...(options.principal !== undefined ? { principal: options.principal } : {}),
      ...(options.toolPolicy ? { tools: [...options.toolPolicy] } : {}),
      ...(options.profile !== undefined ? { profile: options.profile } : {}),
      step: 0,
      maxIterations: o.maxIterations,
      messages: session.map(messageToJson),
      events: [],
      created: now,
      updated: now,
    });
    return this.#loop(session, handle, options, user);
  }

  /** The model → tools loop, from `session` (and the saved step in progress, when resuming). */
  async #loop(
    session: LLMMessage[],
    handle: RunHandle | undefined,
    options: AgentRunOptions,
    user: string | undefined,
  ): Promise<string> {
    const o = this.#options;
    const signal = options.signal;
    const state = handle?.state;
    let iteration = state?.step ?? 0;
    const usedIds = new Set<string>(usedCallIds(session, state));
    // Every event goes to the listener and, for a kept run, into its saved events (the stream a client
    // reattaches to). Progress is live only: saving it would write the store per report, and a client
    // that reattaches later has the observation.
    const onEvent = (event: AgentEvent): void => {
      emit(options.onEvent, event);
      if (event.type !== 'progress') handle?.record(toRunEvent(event));
    };
    const cancelled = new Set<RunCall>();
    const tools = o.agentTools.forRun(functionResults(session));
    try {
      for (;;) {
        let step = state?.current;
        if (step === undefined) {
          if (iteration >= o.maxIterations) break;
          iteration++;
          if (state) state.step = iteration;
          const result = await this.#create(session, tools.visible(), signal);
          if (typeof result.content === 'string') {
            // A reasoning model's thinking behind the answer; without this event it was lost to listeners.
            const reasoning = result.thought?.trim();
            if (reasoning) onEvent({ type: 'thought', content: reasoning, endOfMessage: true, iteration });
            checkAnswer(result);
            onEvent({
              type: 'answer',
              content: result.content,
              endOfMessage: true,
              iteration,
              finishReason: 'answer',
            });
            await finishRun(handle, result.content);
            return result.content;
          }
          const prepared = result.content.map((call, i) => ({
            call,
            id: uniqueCallId(call, i, iteration, usedIds),
          }));
          checkCutCalls(result, prepared);
          const thought = result.thought?.trim();
          onEvent({
            type: 'thought',
            content:
              thought || `Calling ${prepared.map((p) => `${p.call.name}(${p.call.arguments})`).join(', ')}`,
            endOfMessage: true,
            iteration,
          });
          step = {
            ...(result.thought !== undefined ? { thought: result.thought } : {}),
            calls: prepared.map((p) => ({ id: p.id, name: p.call.name, arguments: p.call.arguments })),
          };
          if (state && handle) {
            state.current = step;
            await handle.save();
          }
        }
        await this.#runCalls(step, iteration, { handle, user, options, onEvent, cancelled, tools });
        if (signal?.aborted) throw abortError(signal, 'agent run');
        session.push(
          new AssistantMessage({
            // Replayed as run: argument text that is not a JSON object became `{}` (providers reject a
            // replayed call whose arguments are not JSON; the error says what was wrong), and an
            // approver's edit replaces the model's arguments.
            content: step.calls.map((c) => ({ id: c.id, name: c.name, arguments: c.arguments })),
            source: o.name,
            ...(step.thought !== undefined ? { thought: step.thought } : {}),
          }),
        );
        session.push(
          new FunctionExecutionResultMessage({
            content: step.calls.map(
              (c) =>
                new FunctionExecutionResult({
                  callId: c.id,
                  content: c.result?.content ?? '',
                  isError: c.result?.isError ?? true,
                  name: c.name,
                  parts: resultParts.get(c),
                }),
            ),
          }),
        );
        if (state && handle) {
          delete state.current;
          state.status = 'running';
          state.messages = session.map(messageToJson);
          await handle.save();
        }
      }
      const answer = await this.#finish(session, signal);
      answerAtLimit(onEvent, answer, iteration);
      await finishRun(handle, answer);
      return answer;
    } catch (error) {
      const reason: unknown = signal?.reason;
      const stopping = isToolbusError(reason) && reason.code === 'unavailable';
      if (
        handle &&
        state &&
        !handle.lost &&
        signal?.aborted &&
        (stopping || pendingApprovals(state).length > 0)
      ) {
        // The caller went away while the run waits for a person, or the service stops: the run keeps its
        // status, owned by nobody. A replica goes on with it: at once for a running one, on the first
        // decision for a paused one. Calls the abort cut short run again then.
        for (const c of cancelled) delete c.result;
        await handle.release();
        throw failRun(options.onEvent, error, signal, iteration);
      }
      const failure = failRun(options.onEvent, error, signal, iteration);
      if (handle && state && !handle.lost) {
        state.status = 'failed';
        state.error = { code: failure.code, message: failure.message };
        handle.record({ type: 'error', content: failure.message, iteration });
        await handle.release();
      }
      throw failure;
    }
  }

  /**
   * Runs the calls of a step that have no result yet. Calls that need approval wait for their decision
   * (the run is saved as paused) while the others run at once, at most `parallelToolCalls` at a time.
   */
  async #runCalls(step: RunStep, iteration: number, run: StepContext): Promise<void> {
    const o = this.#options;
    const { user, handle } = run;
    const open = step.calls.filter((c) => c.result === undefined);
    const held = await Promise.all(
      open.map((c) => c.approval !== undefined || (handle !== undefined && this.#needsApproval(c, user))),
    );
    const direct = open.filter((_, i) => !held[i]);
    const approvals = open.filter((_, i) => held[i]);
    await Promise.all([
      mapWithLimit(direct, o.parallelToolCalls, async (c) => {
        // The model's own text: ToolSet.call is the one place it is parsed, looked up and validated.
        const r = await this.#callTool(c, c.arguments, iteration, run);
        await this.#finishCall(c, r, iteration, run);
      }),
      ...approvals.map((c) => this.#callOnceDecided(c, iteration, run)),
    ]);
  }

  /** Whether the model's call needs approval (false for an unknown tool or arguments that do not parse). */
  async #needsApproval(c: RunCall, user: string | undefined): Promise<boolean> {
    const tool = this.#options.tools.get(c.name);
    if (!tool || tool.needsApproval === undefined || tool.needsApproval === false) return false;
    const parsed = parseToolArguments(c.name, c.arguments);
    if (parsed instanceof ToolError) return false;
    return approvalNeeded(tool, parsed, { toolName: c.name, callId: c.id, user });
  }

  /** Asks for approval (once: a resumed run finds its request), waits for the decision, then acts on it. */
  async #callOnceDecided(c: RunCall, iteration: number, run: StepContext): Promise<void> {
    const o = this.#options;
    const runs = o.runs!;
    const handle = run.handle!;
    const state = handle.state;
    const args = parseToolArguments(c.name, c.arguments) as Record<string, unknown>;
    const announce = c.approval === undefined;
    const request = await runs.request({
      runId: state.id,
      callId: c.id,
      tool: c.name,
      arguments: args,
      user: run.user,
      principal: state.principal,
      timeoutMs: o.approvalTimeoutMs,
    });
    c.approval = request.id;
    if (request.status === 'pending') state.status = 'paused';
    if (announce) {
      run.onEvent({
        type: 'approval',
        content: JSON.stringify(request),
        endOfMessage: true,
        iteration,
        toolName: c.name,
        callId: c.id,
        approval: request,
      });
    }
    await handle.save();
    const decided = await runs.waitForDecision(request.id, run.options.signal);
    if (pendingApprovals(state).every((id) => id === request.id)) state.status = 'running';
    const decision = decided.decision ?? { by: 'unknown', time: decided.time };
    if (decided.status === 'approved') {
      const text = decision.arguments ? JSON.stringify(decision.arguments) : c.arguments;
      c.arguments = text;
      const r = await this.#callTool(c, text, iteration, run, decision.by);
      await this.#finishCall(c, r, iteration, run);
      return;
    }
    const content = denialText(decision);
    await this.#finishCall(
      c,
      {
        name: c.name,
        callId: c.id,
        content,
        isError: true,
        error: new ToolError('denied', content, { toolName: c.name }),
        arguments: c.arguments,
      },
      iteration,
      run,
    );
  }

  /** Runs one call, with its progress reported as events (when the run listens) until its result is in. */
  async #callTool(
    c: RunCall,
    args: string,
    iteration: number,
    run: StepContext,
    approvedBy?: string,
  ): Promise<ToolResult> {
    const { options, user } = run;
    const progress = callProgress(options, run.onEvent, { iteration, toolName: c.name, callId: c.id });
    const call: AgentToolCall = {
      callId: c.id,
      user,
      signal: options.signal,
      timeoutMs: this.#options.toolTimeoutMs,
      deadline: options.deadline,
      ...(approvedBy !== undefined ? { approvedBy } : {}),
      ...(progress ? { onProgress: progress.report } : {}),
    };
    const result = await callAgentTool(this.#options.tools, c.name, args, call);
    // Before the observation (callAgentTool never rejects): the tool's last report comes first.
    progress?.end();
    return result;
  }

  /** Keeps a call's result (saved with the run) and reports it as an observation. */
  async #finishCall(c: RunCall, r: ToolResult, iteration: number, run: StepContext): Promise<void> {
    const replayable = r.arguments !== undefined || !r.isError;
    const raw = c.arguments;
    c.arguments = r.arguments ?? (r.isError ? '{}' : c.arguments);
    c.result = {
      content: r.content,
      isError: r.isError,
      ...(r.error ? { code: r.error.code } : {}),
    };
    if (r.parts !== undefined) resultParts.set(c, r.parts);
    if (run.options.signal?.aborted) run.cancelled.add(c);
    run.tools.observe(r);
    run.onEvent({
      type: 'observation',
      content: r.content,
      endOfMessage: true,
      iteration,
      toolName: r.name,
      callId: r.callId,
      isError: r.isError,
      ...(r.error ? { code: r.error.code } : {}),
      ...(replayable ? {} : { rawArguments: raw }),
    });
    await run.handle?.save();
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

/** What the calls of one step share. */
interface StepContext {
  handle: RunHandle | undefined;
  user: string | undefined;
  options: AgentRunOptions;
  onEvent: (event: AgentEvent) => void;
  /** Calls that ended after the run was aborted: not kept when the run stays paused. */
  cancelled: Set<RunCall>;
  /** What the model sees; told of each result (a search loads tools). */
  tools: DeferredToolList;
}

/** The tool results in a conversation, oldest first. */
function* functionResults(session: readonly LLMMessage[]): Iterable<FunctionExecutionResult> {
  for (const message of session) {
    if (message instanceof FunctionExecutionResultMessage) yield* message.content;
  }
}

/** Ends a kept run with its answer. */
async function finishRun(handle: RunHandle | undefined, answer: string): Promise<void> {
  if (!handle) return;
  handle.state.status = 'done';
  handle.state.answer = answer;
  delete handle.state.current;
  await handle.release();
}

/** The saved form of an event (progress is never saved). */
function toRunEvent(event: Exclude<AgentEvent, { type: 'progress' }>): Omit<RunEvent, 'seq'> {
  const base = { type: event.type, content: event.content, iteration: event.iteration };
  switch (event.type) {
    case 'observation':
      return {
        ...base,
        toolName: event.toolName,
        callId: event.callId,
        isError: event.isError,
        ...(event.code ? { code: event.code } : {}),
      };
    case 'approval':
      return { ...base, toolName: event.toolName, callId: event.callId, approval: event.approval };
    default:
      return base;
  }
}

/** The ids already used in a resumed run: a new step must not reuse one. */
function usedCallIds(session: readonly LLMMessage[], state: RunState | undefined): string[] {
  const ids = session.flatMap((m) =>
    m.type === 'AssistantMessage' && typeof m.content !== 'string' ? m.content.map((c) => c.id) : [],
  );
  return [...ids, ...(state?.current?.calls.map((c) => c.id) ?? [])];
}

/** The question of a run given as messages: the last user message's text. */
function lastUserText(messages: readonly LLMMessage[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.type === 'UserMessage') return m.content;
  }
  return '';
}
