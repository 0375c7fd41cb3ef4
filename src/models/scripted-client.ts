/**
 * @module `ScriptedChatCompletionClient`: a model that replays an exact script, for tests.
 */
import { abortError, raceSignal, ToolbusError, numberOption } from '../errors/index.js';
import type { Tool, ToolSchema } from '../tools/index.js';
import { FinishReason } from './chat-completion-client.js';
import type {
  ChatCompletionClient,
  CreateOptions,
  CreateResult,
  ModelInfo,
  RequestUsage,
  ToolChoice,
} from './chat-completion-client.js';
import type { FunctionCall, LLMMessage } from './messages.js';
import { addUsage, emptyUsage } from './usage.js';
import { traceChat, traceChatStream, type ChatTraceTarget } from './chat-tracing.js';

/** A full scripted result; `content` is required, the rest has defaults. */
export interface ScriptedResult {
  /** Text, or the function calls to return. */
  content: string | FunctionCall[];
  /** Text sent beside function calls. @default undefined */
  thought?: string;
  /** @default zero tokens */
  usage?: RequestUsage;
  /** @default 'stop' for text, 'function_calls' for calls */
  finishReason?: FinishReason;
  /**
   * The exact text chunks `createStream` yields (they must join to `content`, or to `thought` when
   * `content` holds calls). @default `content` cut every `chunkSize` characters
   */
  chunks?: string[];
}

/** What a scripted call returns: text, function calls, or a full {@link ScriptedResult}. */
export type ScriptedReply = string | FunctionCall[] | ScriptedResult;

/** What a step function receives besides the messages. */
export interface ScriptedStepContext {
  /** 1-based number of this call. */
  callNumber: number;
  /** The tools offered, as schemas. */
  tools: ToolSchema[];
  toolChoice: ToolChoice | undefined;
  /** True for `createStream`. */
  stream: boolean;
  /** Aborts when the caller cancels; a step that waits should honour it. */
  signal: AbortSignal;
}

/**
 * A dynamic step: computes the reply from the request. Throwing (or rejecting) makes that call fail
 * with the thrown error, which is how a test scripts a provider failure.
 */
export type ScriptedStepFunction = (
  messages: readonly LLMMessage[],
  context: ScriptedStepContext,
) => ScriptedReply | Promise<ScriptedReply>;

/** One step of the script: consumed by exactly one `create` or `createStream` call. */
export type ScriptedStep = ScriptedReply | ScriptedStepFunction;

/** One recorded call. */
export interface ScriptedCall {
  /** A copy of the message list the call received (later pushes by the caller don't show here). */
  messages: LLMMessage[];
  /** The tools offered, as schemas (a `Tool` is recorded as its `schema`). */
  tools: ToolSchema[];
  toolChoice: ToolChoice | undefined;
  /** @default false */
  jsonOutput: boolean;
  /** True for `createStream`. */
  stream: boolean;
}

/** Options of {@link ScriptedChatCompletionClient}. */
export interface ScriptedChatCompletionClientOptions {
  /** Overrides of {@link DEFAULT_SCRIPTED_MODEL_INFO}, e.g. `{ functionCalling: false }` for ReAct tests. @default {} */
  modelInfo?: Partial<ModelInfo>;
  /** Characters per streamed text chunk. @default 4 */
  chunkSize?: number;
}

/** The model info of a scripted client unless overridden: it can do everything but vision. */
export const DEFAULT_SCRIPTED_MODEL_INFO: Readonly<ModelInfo> = Object.freeze({
  functionCalling: true,
  jsonOutput: true,
  vision: false,
  family: 'scripted',
  structuredOutput: true,
  multipleSystemMessages: true,
});

const WHO = 'ScriptedChatCompletionClient';

/**
 * A {@link ChatCompletionClient} that replays a script, one step per call, streamed or not, and records
 * every call. It fails loudly: a call beyond the script rejects with an error naming the call number,
 * and {@link assertDone} / {@link close} throw when steps are left.
 *
 * Errors: `model-error` (unexpected call, steps left, malformed step), `unsupported` (tools offered to a
 * model whose `functionCalling` is false, or JSON output asked of one whose `jsonOutput` is false),
 * `cancelled`, `closed`. Like the real clients, it checks these before consuming a step.
 *
 * @example
 * ```ts
 * const model = new ScriptedChatCompletionClient([
 *   [{ id: 'call_1', name: 'get_stock_price', arguments: '{"ticker":"AAPL","date":"2021/01/01"}' }],
 *   'The stock price of AAPL on 2021/01/01 was about $32.38.',
 * ]);
 * const first = await model.create([new UserMessage({ content: 'AAPL on 2021/01/01?' })], { tools });
 * // ... run the tool, then the reflection call
 * model.assertDone();
 * ```
 */
export class ScriptedChatCompletionClient implements ChatCompletionClient {
  /** What this scripted model claims it can do. */
  readonly modelInfo: ModelInfo;
  readonly #steps: readonly ScriptedStep[];
  readonly #calls: ScriptedCall[] = [];
  readonly #chunkSize: number;
  #next = 0;
  #total: RequestUsage = emptyUsage();
  #closed = false;
  /** Spans name a scripted model by its family (`scripted` unless overridden), its provider `scripted`. */
  readonly #traceTarget: ChatTraceTarget;

  constructor(steps: readonly ScriptedStep[], options: ScriptedChatCompletionClientOptions = {}) {
    if (!Array.isArray(steps)) {
      throw new ToolbusError('invalid-arguments', `${WHO}: steps must be an array, got ${typeof steps}`);
    }
    steps.forEach((step, i) => {
      if (typeof step !== 'function') normaliseReply(step, i + 1, 'step');
    });
    const chunkSize = numberOption(WHO, 'chunkSize', options.chunkSize, 4, { integer: true });
    this.#steps = [...steps];
    this.#chunkSize = chunkSize;
    this.modelInfo = { ...DEFAULT_SCRIPTED_MODEL_INFO, ...options.modelInfo };
    this.#traceTarget = { model: this.modelInfo.family ?? 'scripted', provider: 'scripted' };
  }

  /** Every call so far, in order. */
  get calls(): readonly ScriptedCall[] {
    return this.#calls;
  }

  /** How many steps are still unconsumed. */
  get remaining(): number {
    return this.#steps.length - this.#next;
  }

  /** Replays the next step. Rejects with `model-error` when the script is exhausted. */
  async create(messages: readonly LLMMessage[], options: CreateOptions = {}): Promise<CreateResult> {
    return traceChat(this.#traceTarget, messages, () => this.#run(messages, options, false));
  }

  /** Replays the next step, yielding its text in chunks, then the result. */
  createStream(
    messages: readonly LLMMessage[],
    options: CreateOptions = {},
  ): AsyncGenerator<string | CreateResult, void, undefined> {
    return traceChatStream(this.#traceTarget, messages, this.#stream(messages, options));
  }

  async *#stream(
    messages: readonly LLMMessage[],
    options: CreateOptions,
  ): AsyncGenerator<string | CreateResult, void, undefined> {
    const { result, chunks } = await this.#runWithChunks(messages, options, true);
    for (const chunk of chunks) {
      if (options.signal?.aborted) throw abortError(options.signal, `${WHO}: stream`);
      yield chunk;
    }
    if (options.signal?.aborted) throw abortError(options.signal, `${WHO}: stream`);
    yield result;
  }

  /** Usage summed over every call. */
  totalUsage(): RequestUsage {
    return { ...this.#total };
  }

  /**
   * Throws a `model-error` naming the unconsumed steps, if any.
   *
   * @example
   * ```ts
   * t.after(() => model.assertDone());
   * ```
   */
  assertDone(): void {
    if (this.remaining === 0) return;
    const next = this.#steps[this.#next];
    throw new ToolbusError(
      'model-error',
      `${WHO}: ${this.remaining} of ${this.#steps.length} script steps were not consumed ` +
        `(${this.#calls.length} calls made; next is step #${this.#next + 1}: ${describeStep(next)})`,
    );
  }

  /** Closes the client; rejects like {@link assertDone} when steps are left. Idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    this.assertDone();
  }

  /** Alias of {@link close}. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  async #run(
    messages: readonly LLMMessage[],
    options: CreateOptions,
    stream: boolean,
  ): Promise<CreateResult> {
    return (await this.#runWithChunks(messages, options, stream)).result;
  }

  async #runWithChunks(
    messages: readonly LLMMessage[],
    options: CreateOptions,
    stream: boolean,
  ): Promise<{ result: CreateResult; chunks: string[] }> {
    const what = `${WHO}: call #${this.#calls.length + 1}`;
    if (this.#closed) throw new ToolbusError('closed', `${what}: the client is closed`);
    if (!Array.isArray(messages)) {
      throw new ToolbusError(
        'invalid-arguments',
        `${what}: messages must be an array, got ${typeof messages}`,
      );
    }
    const signal = options.signal;
    if (signal?.aborted) throw abortError(signal, what);
    const tools = (options.tools ?? []).map(toSchema);
    if (tools.length > 0 && !this.modelInfo.functionCalling) {
      throw new ToolbusError(
        'unsupported',
        `${what}: the model cannot call functions (modelInfo.functionCalling is false), ` +
          `but ${tools.length} tool(s) were offered: ${tools.map((t) => `'${t.name}'`).join(', ')}`,
      );
    }
    if (options.jsonOutput && !this.modelInfo.jsonOutput) {
      throw new ToolbusError(
        'unsupported',
        `${what}: the model cannot be asked for JSON output (modelInfo.jsonOutput is false)`,
      );
    }
    const call: ScriptedCall = {
      messages: [...messages],
      tools,
      toolChoice: options.toolChoice,
      jsonOutput: options.jsonOutput ?? false,
      stream,
    };
    this.#calls.push(call);
    const callNumber = this.#calls.length;
    if (this.#next >= this.#steps.length) {
      throw new ToolbusError(
        'model-error',
        `${WHO}: unexpected call #${callNumber}: the script has ${this.#steps.length} step(s), all consumed, ` +
          `so no call #${callNumber} was expected; its last message was ` +
          describeMessage(messages[messages.length - 1]),
      );
    }
    const step = this.#steps[this.#next++] as ScriptedStep;
    let reply: ScriptedReply;
    if (typeof step === 'function') {
      const controller = new AbortController();
      const stepSignal = signal ? AbortSignal.any([signal, controller.signal]) : controller.signal;
      try {
        reply = await raceSignal(
          Promise.resolve().then(() =>
            step(call.messages, {
              callNumber,
              tools,
              toolChoice: options.toolChoice,
              stream,
              signal: stepSignal,
            }),
          ),
          signal,
          what,
        );
      } finally {
        controller.abort();
      }
    } else {
      reply = step;
    }
    const { result, chunks } = normaliseReply(reply, callNumber, 'call');
    this.#total = addUsage(this.#total, result.usage);
    return {
      result,
      chunks:
        chunks ?? cut(isText(result.content) ? result.content : (result.thought ?? ''), this.#chunkSize),
    };
  }
}

function toSchema(tool: Tool | ToolSchema): ToolSchema {
  return 'schema' in tool && typeof tool.schema === 'object' ? tool.schema : (tool as ToolSchema);
}

function isText(content: string | FunctionCall[]): content is string {
  return typeof content === 'string';
}

function cut(text: string, size: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

/** Validates a reply and turns it into a CreateResult; `where` says whether it came from a step or a call. */
function normaliseReply(
  reply: unknown,
  n: number,
  where: 'step' | 'call',
): { result: CreateResult; chunks: string[] | undefined } {
  const at = where === 'step' ? `${WHO}: step #${n}` : `${WHO}: call #${n}`;
  const fail = (msg: string): never => {
    throw new ToolbusError('model-error', `${at}: ${msg}`);
  };
  let full: ScriptedResult;
  if (typeof reply === 'string' || Array.isArray(reply)) full = { content: reply as string | FunctionCall[] };
  else if (reply !== null && typeof reply === 'object' && 'content' in reply) full = reply as ScriptedResult;
  else {
    return fail(
      `a step must be text, FunctionCall[], { content, ... } or a function returning one, got ${describeValue(reply)}`,
    );
  }
  if (Array.isArray(full.content)) {
    if (full.content.length === 0) fail('FunctionCall[] must not be empty');
    full.content.forEach((c: unknown, i) => {
      const call = c as Partial<FunctionCall> | null;
      for (const key of ['id', 'name', 'arguments'] as const) {
        if (typeof call?.[key] !== 'string') {
          fail(`function call [${i}] needs a string '${key}', got ${describeValue(call?.[key])}`);
        }
      }
    });
  } else if (typeof full.content !== 'string') {
    fail(`'content' must be a string or FunctionCall[], got ${describeValue(full.content)}`);
  }
  const calls = Array.isArray(full.content);
  if (full.chunks !== undefined) {
    const expected = calls ? (full.thought ?? '') : (full.content as string);
    if (!Array.isArray(full.chunks) || full.chunks.join('') !== expected) {
      fail(`'chunks' must join to the ${calls ? 'thought' : 'content'} text exactly`);
    }
  }
  const result: CreateResult = {
    content: calls ? (full.content as FunctionCall[]).map((c) => ({ ...c })) : full.content,
    finishReason: full.finishReason ?? (calls ? FinishReason.FunctionCalls : FinishReason.Stop),
    usage: { ...(full.usage ?? emptyUsage()) },
  };
  if (full.thought !== undefined) result.thought = full.thought;
  return { result, chunks: full.chunks ? [...full.chunks] : undefined };
}

function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value;
}

function truncate(text: string, max = 60): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

function describeStep(step: ScriptedStep | undefined): string {
  if (step === undefined) return 'none';
  if (typeof step === 'function') return 'a step function';
  if (typeof step === 'string') return `text ${JSON.stringify(truncate(step))}`;
  if (Array.isArray(step)) return `call(s) ${step.map((c) => `'${c.name}'`).join(', ')}`;
  return describeStep(step.content);
}

function describeMessage(message: LLMMessage | undefined): string {
  if (!message) return 'none (empty message list)';
  if (message.type === 'FunctionExecutionResultMessage') {
    return `FunctionExecutionResultMessage for ${message.content.map((r) => `'${r.name}'`).join(', ')}`;
  }
  if (typeof message.content === 'string')
    return `${message.type} ${JSON.stringify(truncate(message.content))}`;
  return `${message.type} with call(s) ${message.content.map((c) => `'${c.name}'`).join(', ')}`;
}
