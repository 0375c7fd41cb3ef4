/**
 * @module `ReActAgent`: an agent for models without function calling, speaking the text protocol
 * `Thought:` / `Action:` / `Args: {json}` / `Final Answer:` and reading `Observation:` back.
 */
import { AssistantMessage, FinishReason, ModelError, SystemMessage, UserMessage } from '../models/index.js';
import { abortError, numberOption, type ToolbusErrorCode } from '../errors/index.js';
import type { ChatCompletionClient, LLMMessage } from '../models/index.js';

import { DeferredTools } from '../tools/index.js';
import type { DeferredToolsOptions, Tool, ToolProvider } from '../tools/index.js';
import { answerAtLimit, askAgent, callAgentTool, emit, failRun, historyMessages } from './agent.js';
import type { AgentEvent, AgentRunOptions, RunnableAgent } from './agent.js';
import { REACT_FORMAT, StreamingReActParser, parseReActResponse } from './react-parser.js';
import type { ReActStep } from './react-parser.js';
import { toToolProvider } from './tool-provider.js';
import { callProgress } from './progress-events.js';
import { traceAgentRun } from './agent-tracing.js';
import { DEFAULT_MAX_ITERATIONS, DEFAULT_SYSTEM_MESSAGE } from './tool-use-agent.js';

/** The longest model reply replayed in the scratchpad after a parse failure. */
const MAX_REPLAYED_REPLY = 2000;

/** Options of {@link ReActAgent}. */
export interface ReActAgentOptions {
  /** The model; it only needs to produce text. */
  model: ChatCompletionClient;
  /** The tools: a provider (listed afresh at every step) or a fixed array. */
  tools: ToolProvider | readonly Tool[];
  /** Instructions placed before the tool list and the protocol. @default DEFAULT_SYSTEM_MESSAGE */
  systemMessage?: string;
  /** Model steps per run; a parse failure uses one. @default DEFAULT_MAX_ITERATIONS (10) */
  maxIterations?: number;
  /** The user tool calls run for when `run` names none. @default undefined */
  user?: string;
  /** Per tool call timeout. @default the provider's */
  toolTimeoutMs?: number;
  /**
   * Deferred loading, for tool sets too large to show whole: the prompt first lists `search_tools` and
   * the `alwaysLoaded` tools; each tool a search finds is listed from the next step. @default undefined
   */
  toolSearch?: DeferredToolsOptions;
}

/** One model reply: its text, parsed, and why the model stopped (when the client said). */
interface ModelStep {
  text: string;
  step: ReActStep;
  finishReason: FinishReason | undefined;
}

/** One step of the scratchpad: what the model said and what it observed. */
interface ScratchStep {
  /** The model's turn as replayed to it. */
  said: string;
  observation: string;
}

/**
 * Answers questions with any text model, using the ReAct protocol (TrustGraph's format). Each step asks
 * for one `Thought:` and either an `Action:` with `Args: {json}` or a `Final Answer:`; the tool's result
 * goes back as `Observation:`. Unlike TrustGraph's agent manager:
 *
 * - an unknown tool gets an observation listing the tools, and the loop goes on;
 * - a reply outside the protocol gets an observation restating it (the step counts toward the limit);
 * - arguments keep their JSON types from step to step (numbers stay numbers);
 * - tool-service calls carry the run's `user`.
 *
 * With `streaming`, thoughts and the answer are emitted in pieces as the model writes them.
 *
 * @example
 * ```ts
 * const agent = new ReActAgent({ model, tools: registry.tools });
 * const answer = await agent.run('Tell me a joke about cats', { user: 'alice', streaming: true, onEvent });
 * ```
 */
export class ReActAgent implements RunnableAgent {
  readonly #model: ChatCompletionClient;
  readonly #tools: ToolProvider;
  readonly #agentTools: DeferredTools;
  /** The system prompt per tool list shown: built once per change of the tools, not per step. */
  readonly #prompts = new WeakMap<readonly Tool[], string>();
  readonly #systemMessage: string;
  readonly #maxIterations: number;
  readonly #user: string | undefined;
  readonly #toolTimeoutMs: number | undefined;

  /** @throws ToolbusError `usage` for a non-positive `maxIterations`. */
  constructor(options: ReActAgentOptions) {
    const maxIterations = numberOption(
      'ReActAgent',
      'maxIterations',
      options.maxIterations,
      DEFAULT_MAX_ITERATIONS,
      {
        integer: true,
      },
    );
    this.#model = options.model;
    this.#agentTools = new DeferredTools(toToolProvider(options.tools), options.toolSearch);
    this.#tools = this.#agentTools.calls;
    this.#systemMessage = options.systemMessage ?? DEFAULT_SYSTEM_MESSAGE;
    this.#maxIterations = maxIterations;
    this.#user = options.user;
    this.#toolTimeoutMs = options.toolTimeoutMs;
  }

  /**
   * {@link run} with a question, as `AgentClient.ask` and the HTTP gateway expect: `onEvent` gets every
   * event but `error` (the failure is the rejection).
   */
  ask(question: string, options: AgentRunOptions = {}): Promise<string> {
    return askAgent(this, question, options);
  }

  /**
   * Runs until a `Final Answer:` or `maxIterations` steps, and resolves with the answer (or a message
   * saying the limit was hit). Rejects with `cancelled`/`timeout` when the signal aborts and with the
   * model client's error when the model fails, after an `error` event; with `model-error` when a reply
   * outside the protocol was cut by the model's token limit (a retry would be cut the same way). With
   * tracing on, the run is an `invoke_agent react-agent` span.
   */
  run(input: string | readonly LLMMessage[], options: AgentRunOptions = {}): Promise<string> {
    return traceAgentRun('react-agent', () => this.#run(input, options));
  }

  async #run(input: string | readonly LLMMessage[], options: AgentRunOptions): Promise<string> {
    const signal = options.signal;
    const user = options.user ?? this.#user;
    const onEvent = options.onEvent;
    const opening = [
      ...historyMessages(options.history),
      ...(typeof input === 'string' ? [new UserMessage({ content: input, source: 'user' })] : input),
    ];
    const scratchpad: ScratchStep[] = [];
    let iteration = 0;
    const runTools = this.#agentTools.forRun();
    try {
      while (iteration < this.#maxIterations) {
        iteration++;
        const tools = runTools.visible();
        let prompt = this.#prompts.get(tools);
        if (prompt === undefined)
          this.#prompts.set(tools, (prompt = systemPrompt(this.#systemMessage, tools)));
        const messages: LLMMessage[] = [
          new SystemMessage({ content: prompt }),
          ...opening,
          ...scratchpad.flatMap((s) => [
            new AssistantMessage({ content: s.said, source: 'assistant' }),
            new UserMessage({ content: `Observation: ${s.observation}`, source: 'user' }),
          ]),
        ];
        const { text, step, finishReason } = options.streaming
          ? await this.#stream(messages, signal, iteration, onEvent)
          : await this.#complete(messages, signal, iteration, onEvent);
        if (step.type === 'final') {
          if (!options.streaming) {
            emit(onEvent, {
              type: 'answer',
              content: step.answer,
              endOfMessage: true,
              iteration,
              finishReason: 'answer',
            });
          }
          return step.answer;
        }
        if (step.type === 'error' && finishReason === FinishReason.Length) {
          // The same limit would cut the retry too: only a larger one helps, so say so instead of looping.
          throw new ModelError(
            'model-error',
            "the model's reply was cut at its token limit (finish reason 'length') before it followed the " +
              "protocol; raise the model's maxTokens or shorten the conversation",
          );
        }
        if (step.type === 'error') {
          const observation = `Error: your reply could not be parsed: ${step.message}. ${REACT_FORMAT}`;
          emit(onEvent, observationEvent(observation, iteration, '', `parse-${iteration}`, true));
          const said = text.length > MAX_REPLAYED_REPLY ? `${text.slice(0, MAX_REPLAYED_REPLY)} […]` : text;
          scratchpad.push({ said, observation });
          continue;
        }
        const callId = `react-${iteration}`;
        const said = `Thought: ${step.thought}\nAction: ${step.action}\nArgs: ${JSON.stringify(step.args)}`;
        const progress = callProgress(options, (event) => emit(onEvent, event), {
          iteration,
          toolName: step.action,
          callId,
        });
        const result = await callAgentTool(this.#tools, step.action, step.args, {
          callId,
          user,
          signal,
          timeoutMs: this.#toolTimeoutMs,
          deadline: options.deadline,
          ...(progress ? { onProgress: progress.report } : {}),
        });
        // Before the observation (callAgentTool never rejects): the tool's last report comes first.
        progress?.end();
        if (signal?.aborted) throw abortError(signal, 'agent run');
        runTools.observe(result);
        const code = result.error?.code;
        const observation = !result.isError
          ? result.content
          : `Error: ${result.content}` +
            (code === 'unknown-tool' ? ". Use one of them in 'Action:', or give the 'Final Answer:'." : '');
        emit(onEvent, observationEvent(observation, iteration, step.action, callId, result.isError, code));
        scratchpad.push({ said, observation });
      }
      const answer =
        `I stopped after ${this.#maxIterations} step${this.#maxIterations === 1 ? '' : 's'} ` +
        `(maxIterations = ${this.#maxIterations}) without reaching a final answer.`;
      return answerAtLimit(onEvent, answer, iteration);
    } catch (error) {
      throw failRun(onEvent, error, signal, iteration);
    }
  }

  async #complete(
    messages: LLMMessage[],
    signal: AbortSignal | undefined,
    iteration: number,
    onEvent: AgentRunOptions['onEvent'],
  ): Promise<ModelStep> {
    if (signal?.aborted) throw abortError(signal, 'agent run');
    const result = await this.#model.create(messages, signal ? { signal } : {});
    const text = typeof result.content === 'string' ? result.content : '';
    const step: ReActStep =
      typeof result.content === 'string'
        ? parseReActResponse(text)
        : {
            type: 'error',
            thought: '',
            message: 'the reply was a native function call, not text in the protocol',
          };
    if (step.thought)
      emit(onEvent, { type: 'thought', content: step.thought, endOfMessage: true, iteration });
    return { text, step, finishReason: result.finishReason };
  }

  async #stream(
    messages: LLMMessage[],
    signal: AbortSignal | undefined,
    iteration: number,
    onEvent: AgentRunOptions['onEvent'],
  ): Promise<ModelStep> {
    if (signal?.aborted) throw abortError(signal, 'agent run');
    const parser = new StreamingReActParser();
    const open = { thought: false, answer: false };
    const forward = (chunks: { kind: 'thought' | 'answer'; text: string }[]): void => {
      for (const chunk of chunks) {
        if (chunk.kind === 'answer' && open.thought) {
          emit(onEvent, { type: 'thought', content: '', endOfMessage: true, iteration });
          open.thought = false;
        }
        open[chunk.kind] = true;
        const event: AgentEvent =
          chunk.kind === 'thought'
            ? { type: 'thought', content: chunk.text, endOfMessage: false, iteration }
            : { type: 'answer', content: chunk.text, endOfMessage: false, iteration, finishReason: 'answer' };
        emit(onEvent, event);
      }
    };
    let final: string | undefined;
    let finishReason: FinishReason | undefined;
    for await (const part of this.#model.createStream(messages, signal ? { signal } : {})) {
      if (typeof part === 'string') forward(parser.push(part));
      else {
        finishReason = part.finishReason;
        if (typeof part.content === 'string') final = part.content;
      }
    }
    const { chunks, step: streamed } = parser.finish();
    forward(chunks);
    // The final result is authoritative when the client reports one that differs from the chunks.
    const text = final ?? parser.text;
    const step = final !== undefined && final !== parser.text ? parseReActResponse(final) : streamed;
    if (open.thought) emit(onEvent, { type: 'thought', content: '', endOfMessage: true, iteration });
    if (step.type === 'final') {
      emit(onEvent, {
        type: 'answer',
        content: open.answer ? '' : step.answer,
        endOfMessage: true,
        iteration,
        finishReason: 'answer',
      });
    }
    return { text, step, finishReason };
  }
}

function observationEvent(
  content: string,
  iteration: number,
  toolName: string,
  callId: string,
  isError: boolean,
  code?: ToolbusErrorCode,
): AgentEvent {
  return {
    type: 'observation',
    content,
    endOfMessage: true,
    iteration,
    toolName,
    callId,
    isError,
    ...(code !== undefined ? { code } : {}),
  };
}

/** The system prompt: instructions, the tools with their arguments, and the protocol. */
function systemPrompt(instructions: string, tools: readonly Tool[]): string {
  const lines = [instructions, '', 'You can use these tools:'];
  if (tools.length === 0) lines.push('(none: give the Final Answer directly)');
  for (const tool of tools) {
    lines.push(`- ${tool.name}: ${tool.description}`);
    const parameters = tool.schema.parameters as {
      properties?: Record<string, { type?: unknown; description?: unknown }>;
      required?: unknown;
    };
    const required = new Set(Array.isArray(parameters.required) ? (parameters.required as unknown[]) : []);
    for (const [name, property] of Object.entries(parameters.properties ?? {})) {
      const type = Array.isArray(property.type) ? property.type.join('|') : String(property.type ?? 'any');
      const description = typeof property.description === 'string' ? `: ${property.description}` : '';
      lines.push(`    "${name}" (${type}, ${required.has(name) ? 'required' : 'optional'})${description}`);
    }
  }
  lines.push(
    '',
    REACT_FORMAT,
    '',
    'Write exactly one Thought per reply, followed by one Action with its Args, or by the Final Answer. ' +
      'After an Action, stop: the Observation will be given to you.',
  );
  return lines.join('\n');
}
