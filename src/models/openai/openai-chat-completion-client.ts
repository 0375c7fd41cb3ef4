/**
 * @module `OpenAIChatCompletionClient`: the model client for any OpenAI-compatible server (OpenAI, Saptiva,
 * Ollama, vLLM, llama.cpp), built on the official `openai` package.
 */
import OpenAI, { APIError } from 'openai';
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionCreateParams,
  ChatCompletionFunctionTool,
  ChatCompletionToolChoiceOption,
} from 'openai/resources/chat/completions';
import { setTimeout as sleep } from 'node:timers/promises';
import { compileSchema } from '../../schema/index.js';
import { MAX_TIMER_MS, decodeToolName, encodeToolName, onAbort } from '../../tools/index.js';
import { ToolbusError, abortError, numberOption } from '../../errors/index.js';
import type { Tool, ToolSchema } from '../../tools/index.js';
import { ModelError, SAPTIVA_BASE_URL, addUsage, emptyUsage, traceChat, traceChatStream } from '../index.js';
import type {
  ChatTraceTarget,
  ChatCompletionClient,
  CreateOptions,
  CreateResult,
  LLMMessage,
  ModelInfo,
  RequestUsage,
} from '../index.js';
import { StreamAssembler, parseCompletion } from './completion-parsing.js';
import { createParser } from 'eventsource-parser';
import { toOpenAIMessages } from './message-conversion.js';
import type { ToOpenAIMessagesOptions } from './message-conversion.js';
import { isRetryable, toModelError } from './provider-errors.js';
import type { ErrorContext } from './provider-errors.js';

/** OpenAI's API. */
export const DEFAULT_OPENAI_BASE_URL = 'https://api.openai.com/v1';
/** Attempts after the first one, on 5xx, 408, 409, 429 and network errors. */
export const DEFAULT_MODEL_MAX_RETRIES = 2;
/** The first backoff delay; it doubles on each retry. */
export const DEFAULT_RETRY_BASE_DELAY_MS = 500;
/** The longest wait between attempts; a `retry-after` longer than this is not waited for. */
export const DEFAULT_MAX_RETRY_DELAY_MS = 30_000;
/** The whole-call deadline, retries and streaming included. */
export const DEFAULT_MODEL_TIMEOUT_MS = 600_000;

/** The model info assumed for a model the caller does not describe: tools and JSON, no vision. */
export const DEFAULT_OPENAI_MODEL_INFO: Readonly<ModelInfo> = Object.freeze({
  functionCalling: true,
  jsonOutput: true,
  vision: false,
  family: 'unknown',
});

/** What the {@link OpenAIChatCompletionClientOptions.onRetry} hook receives. */
export interface ModelRetryEvent {
  model: string;
  /** 1 for the first retry. */
  attempt: number;
  /** The wait before this retry: the provider's `retry-after` when it sent one, else the backoff. */
  delayMs: number;
  /** Why the previous attempt failed. */
  error: ToolbusError;
}

/** Options of {@link OpenAIChatCompletionClient}. */
export interface OpenAIChatCompletionClientOptions {
  /** The model name the server expects, e.g. `gpt-4o`, `llama3.1`, `Saptiva Turbo`. */
  model: string;
  /** @default process.env.OPENAI_BASE_URL, else {@link DEFAULT_OPENAI_BASE_URL} */
  baseURL?: string;
  /**
   * @default process.env[apiKeyEnvVar]; for a server other than OpenAI's a placeholder is sent when no
   * key is set (local servers such as Ollama need none)
   */
  apiKey?: string;
  /** Where the key comes from when `apiKey` is not given, and what error messages point to. @default 'OPENAI_API_KEY' */
  apiKeyEnvVar?: string;
  /** What the model can do; fields not given come from {@link DEFAULT_OPENAI_MODEL_INFO}. @default {} */
  modelInfo?: Partial<ModelInfo>;
  /**
   * Retries after a failed attempt (5xx, 408, 409, 429, network errors), with exponential backoff. The
   * SDK's own retries are switched off (`maxRetries: 0`) so attempts are counted once, here.
   * @default DEFAULT_MODEL_MAX_RETRIES (2)
   */
  maxRetries?: number;
  /** The first backoff delay, doubled on each retry (with jitter). @default DEFAULT_RETRY_BASE_DELAY_MS (500) */
  retryBaseDelayMs?: number;
  /**
   * The longest wait between attempts. A `retry-after` longer than this fails at once with
   * `rate-limited` and `retryAfterMs`, so the caller decides. @default DEFAULT_MAX_RETRY_DELAY_MS (30 000)
   */
  maxRetryDelayMs?: number;
  /**
   * Deadline of a whole `create`/`createStream` call, retries included; more than ~24.8 days (setTimeout's
   * maximum) means none. @default DEFAULT_MODEL_TIMEOUT_MS (600 000)
   */
  timeoutMs?: number;
  /** Sent as `parallel_tool_calls` when tools are offered. @default undefined (the server's default) */
  parallelToolCalls?: boolean;
  /** @default undefined (the server's default) */
  temperature?: number;
  /** Sent as `top_p`. @default undefined */
  topP?: number;
  /**
   * The output token limit. Sent to OpenAI as `max_completion_tokens` (its reasoning models, o-series and
   * gpt-5, reject `max_tokens`), to other servers as `max_tokens`. @default undefined
   */
  maxTokens?: number;
  /** Extra fields merged into every request body (provider extensions). @default {} */
  extraBody?: Record<string, unknown>;
  /** Headers sent with every request. @default {} */
  defaultHeaders?: Record<string, string>;
  /** The `fetch` to use. @default globalThis.fetch */
  fetch?: typeof fetch;
  /** Called before each retry; errors it throws are ignored. @default none */
  onRetry?: (event: ModelRetryEvent) => void;
}

interface Resolved {
  model: string;
  baseURL: string;
  apiKeyEnvVar: string;
  maxRetries: number;
  retryBaseDelayMs: number;
  maxRetryDelayMs: number;
  timeoutMs: number;
  parallelToolCalls: boolean | undefined;
  body: Record<string, unknown>;
  onRetry: ((event: ModelRetryEvent) => void) | undefined;
}

/** One prepared request. */
interface Prepared {
  body: Record<string, unknown>;
  /** `[wireName, toolbusName]` in wire order. */
  tools: readonly (readonly [string, string])[];
  decode: (wire: string) => string;
}

/** A running call: its signal (caller's, plus the deadline) and the cleanup. */
interface CallScope {
  signal: AbortSignal;
  context: ErrorContext;
  /**
   * Clears the deadline and the caller's listener. With `drop`, also aborts the request, for a
   * response whose body is still open (a stream left early or failed); a request whose body was read
   * to its end is not aborted, which would only cost an abort chain through the SDK and undici.
   */
  dispose(drop: boolean): void;
}

function positive(name: string, value: number | undefined, fallback: number): number {
  return numberOption('OpenAIChatCompletionClient', name, value, fallback);
}

function nonNegative(name: string, value: number | undefined, fallback: number): number {
  const v = value ?? fallback;
  if (!Number.isFinite(v) || v < 0) {
    throw new ToolbusError(
      'invalid-arguments',
      `OpenAIChatCompletionClient: option '${name}' must be a non-negative number, got ${String(v)}`,
    );
  }
  return v;
}

/**
 * A {@link ChatCompletionClient} for any OpenAI-compatible Chat Completions server.
 *
 * - Tools are sent through their schema profile (`openai-strict` when `tool.schema.strict`), with names
 *   mapped reversibly (`encodeToolName`); function calls come back with the toolbus name and the raw
 *   argument text.
 * - Streaming reassembles tool-call deltas by index and asks for usage in the last chunk. The SDK sends
 *   the request; the client reads the event stream itself (with `eventsource-parser`, the reader the MCP
 *   and AI SDKs use).
 * - Errors are {@link ModelError}s with codes `authentication`, `rate-limited` (`retryAfterMs`),
 *   `context-length`, `bad-request` (naming the rejected tool schema), `model-error`, `unavailable`; plus
 *   ToolbusError `cancelled`, `timeout`, `unsupported` (tools or JSON output the model cannot do),
 *   `invalid-arguments`, `closed`.
 * - This client owns the retry loop (the SDK's `maxRetries` is 0): 5xx, 408, 409, 429 and network
 *   errors are retried up to `maxRetries` times with exponential backoff or the provider's
 *   `retry-after`, and the wait ends as soon as the signal aborts.
 *
 * @example
 * ```ts
 * import { OpenAIChatCompletionClient } from 'toolbus/openai';
 * const model = new OpenAIChatCompletionClient({ model: 'gpt-4o-mini' });
 * const result = await model.create([new UserMessage({ content: 'What is the stock price of AAPL?' })], {
 *   tools: [stockPriceTool],
 * });
 * ```
 */
export class OpenAIChatCompletionClient implements ChatCompletionClient {
  /** What this model can do. */
  readonly modelInfo: ModelInfo;
  readonly #sdk: OpenAI;
  readonly #options: Resolved;
  #total: RequestUsage = emptyUsage();
  #closed = false;
  /** The controllers of calls in flight, aborted by `close()`. */
  readonly #active = new Set<AbortController>();
  /** How spans name this client's calls: the model, the provider, the server. */
  readonly #traceTarget: ChatTraceTarget;

  constructor(options: OpenAIChatCompletionClientOptions) {
    if (typeof options?.model !== 'string' || options.model.trim() === '') {
      throw new ToolbusError(
        'invalid-arguments',
        `OpenAIChatCompletionClient: option 'model' must be a non-empty string, got ${JSON.stringify(options?.model)}`,
      );
    }
    const apiKeyEnvVar = options.apiKeyEnvVar ?? 'OPENAI_API_KEY';
    const baseURL = (options.baseURL ?? process.env.OPENAI_BASE_URL ?? DEFAULT_OPENAI_BASE_URL).replace(
      /\/+$/,
      '',
    );
    let apiKey = options.apiKey ?? process.env[apiKeyEnvVar];
    if (!apiKey) {
      if (baseURL === DEFAULT_OPENAI_BASE_URL) {
        throw new ToolbusError(
          'authentication',
          `OpenAIChatCompletionClient: no API key for model '${options.model}': pass { apiKey } or set ${apiKeyEnvVar}`,
        );
      }
      apiKey = 'no-key';
    }
    const body: Record<string, unknown> = { ...options.extraBody };
    if (options.temperature !== undefined) body.temperature = options.temperature;
    if (options.topP !== undefined) body.top_p = options.topP;
    if (options.maxTokens !== undefined) {
      // OpenAI deprecated `max_tokens` and its reasoning models reject it; other servers may not know
      // the newer name (Ollama, older vLLM), so they keep the old one.
      body[baseURL === DEFAULT_OPENAI_BASE_URL ? 'max_completion_tokens' : 'max_tokens'] = options.maxTokens;
    }
    this.#options = {
      model: options.model,
      baseURL,
      apiKeyEnvVar,
      maxRetries: Math.floor(nonNegative('maxRetries', options.maxRetries, DEFAULT_MODEL_MAX_RETRIES)),
      retryBaseDelayMs: nonNegative(
        'retryBaseDelayMs',
        options.retryBaseDelayMs,
        DEFAULT_RETRY_BASE_DELAY_MS,
      ),
      maxRetryDelayMs: nonNegative('maxRetryDelayMs', options.maxRetryDelayMs, DEFAULT_MAX_RETRY_DELAY_MS),
      timeoutMs: positive('timeoutMs', options.timeoutMs, DEFAULT_MODEL_TIMEOUT_MS),
      parallelToolCalls: options.parallelToolCalls,
      body,
      onRetry: options.onRetry,
    };
    this.modelInfo = { ...DEFAULT_OPENAI_MODEL_INFO, ...options.modelInfo };
    this.#traceTarget = traceTargetOf(options.model, baseURL);
    this.#sdk = new OpenAI({
      apiKey,
      baseURL,
      // One retry loop, ours: the SDK's would multiply attempts and ignore our backoff bounds.
      maxRetries: 0,
      // The SDK arms a setTimeout with it, which Node clamps to 1 ms beyond MAX_TIMER_MS.
      timeout: Math.min(this.#options.timeoutMs, MAX_TIMER_MS),
      ...(options.defaultHeaders ? { defaultHeaders: { ...options.defaultHeaders } } : {}),
      ...(options.fetch ? { fetch: options.fetch } : {}),
    });
  }

  /** The model name requests are sent with. */
  get model(): string {
    return this.#options.model;
  }

  /** The server's base URL, without a trailing slash. */
  get baseURL(): string {
    return this.#options.baseURL;
  }

  /**
   * One completion. Rejects with the codes listed on the class.
   */
  create(messages: readonly LLMMessage[], options: CreateOptions = {}): Promise<CreateResult> {
    return traceChat(this.#traceTarget, messages, () => this.#create(messages, options));
  }

  async #create(messages: readonly LLMMessage[], options: CreateOptions): Promise<CreateResult> {
    const prepared = this.#prepare(messages, options);
    const scope = this.#scope(options.signal, prepared);
    try {
      const completion = await this.#withRetries(scope, () =>
        this.#sdk.chat.completions.create(prepared.body as unknown as ChatCompletionCreateParams, {
          signal: scope.signal,
        }),
      );
      const result = parseCompletion(this.#checked(completion as ChatCompletion), prepared.decode);
      this.#total = addUsage(this.#total, result.usage);
      return result;
    } finally {
      // The SDK settles only once it has read the whole body (or the request failed): nothing to drop.
      scope.dispose(false);
    }
  }

  /**
   * Streams a completion: yields answer text as it arrives, then the {@link CreateResult}. Leaving the
   * loop early aborts the HTTP request. Failures before the first chunk are retried like `create`. A
   * response with no events (JSON instead of an event stream, whatever its content type) is read like
   * `create`: an error body is a `model-error` quoting the provider, a whole completion is yielded as one
   * chunk and the result.
   */
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
    const prepared = this.#prepare(messages, options);
    const body = { ...prepared.body, stream: true, stream_options: { include_usage: true } };
    const scope = this.#scope(options.signal, prepared);
    // Until the body has been read to its end, leaving (a break, an error) drops the connection.
    let open = true;
    try {
      const response = await this.#withRetries(scope, () =>
        this.#sdk.chat.completions
          .create(body as unknown as ChatCompletionCreateParams, { signal: scope.signal })
          .asResponse(),
      );
      // A body that is not an event stream (a provider's JSON error sent with a 200, whatever its
      // content type) has no events, and the user saw only "the stream ended" while the provider's
      // message was lost. Such a body is read whole, like `create` reads it.
      let whole: string | undefined;
      const assembler = new StreamAssembler(prepared.decode);
      if (/\bapplication\/json\b/i.test(response.headers.get('content-type') ?? '')) {
        try {
          whole = await response.text();
        } catch (error) {
          throw toModelError(error, scope.context);
        }
      } else {
        const reader = response.body?.getReader();
        const utf8 = new TextDecoder();
        const events: string[] = [];
        // As the SDK reads it: an event without data is skipped; comments and other fields are ignored.
        const eventStream = createParser({ onEvent: (event) => void events.push(event.data) });
        // The text read before the first event: all of it, for a body that has none.
        whole = '';
        let done = false;
        reading: while (reader) {
          let read: Awaited<ReturnType<typeof reader.read>>;
          try {
            read = await reader.read();
          } catch (error) {
            throw toModelError(error, scope.context);
          }
          if (read.done) break;
          const piece = utf8.decode(read.value, STREAMING);
          events.length = 0;
          eventStream.feed(piece);
          if (events.length === 0) {
            if (whole !== undefined) whole += piece;
            continue;
          }
          whole = undefined;
          for (const data of events) {
            // As the SDK: `[DONE]` ends the events, and the body is still read to its end (so the
            // connection can be reused).
            if (done || data.startsWith('[DONE]')) {
              done = true;
              continue;
            }
            const chunk = this.#chunk(data, response, scope);
            const delta = assembler.push(chunk);
            if (delta !== undefined) yield delta;
            if (scope.signal.aborted) break reading;
          }
        }
        if (scope.signal.aborted) throw abortError(scope.signal, `model '${this.#options.model}'`);
        if (whole !== undefined) whole += utf8.decode();
      }
      open = false;
      if (whole !== undefined) {
        const result = this.#whole(whole, prepared);
        if (typeof result.content === 'string' && result.content !== '') yield result.content;
        yield result;
        return;
      }
      if (!assembler.finished) {
        throw new ModelError(
          'model-error',
          `model '${this.#options.model}': the stream ended before the model finished (no finish_reason)`,
          { model: this.#options.model },
        );
      }
      const held = assembler.flush();
      if (held !== undefined) yield held;
      const result = assembler.result();
      this.#total = addUsage(this.#total, result.usage);
      yield result;
    } finally {
      scope.dispose(open);
    }
  }

  /**
   * One event's data as a chunk. Like the SDK's stream: text that is not JSON fails the stream, and a
   * chunk carrying `error` is the provider's error (an {@link APIError} without a status).
   */
  #chunk(data: string, response: Response, scope: CallScope): ChatCompletionChunk {
    let chunk: unknown;
    try {
      chunk = JSON.parse(data);
    } catch (error) {
      throw toModelError(error, scope.context);
    }
    const error = (chunk as { error?: unknown } | null)?.error;
    if (error) {
      throw toModelError(
        new APIError(undefined, error as object, undefined, response.headers),
        scope.context,
      );
    }
    return chunk as ChatCompletionChunk;
  }

  /**
   * A stream request's response that carried no events, read whole: a completion is the result, an error
   * body a `model-error` quoting the provider.
   */
  #whole(text: string, prepared: Prepared): CreateResult {
    const model = this.#options.model;
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    if (body === null || typeof body !== 'object' || Array.isArray(body)) {
      const shown = text.trim();
      // An event stream without events (or only `[DONE]`), or something else entirely (a proxy's page).
      const sse = shown === '' || /^(?:data|event|id|retry)?:/.test(shown);
      throw new ModelError(
        'model-error',
        `model '${model}': the stream ended before the model finished (no finish_reason)` +
          (sse ? '' : `; the response was not an event stream: ${shown.slice(0, 400)}`),
        { model },
      );
    }
    const result = parseCompletion(this.#checked(body as ChatCompletion), prepared.decode);
    this.#total = addUsage(this.#total, result.usage);
    return result;
  }

  /** Usage summed over every completed request. */
  totalUsage(): RequestUsage {
    return { ...this.#total };
  }

  /** Closes the client: calls in flight and later calls reject with `closed`. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const reason = new ToolbusError(
      'closed',
      `model '${this.#options.model}': the client was closed during the call`,
    );
    for (const controller of this.#active) controller.abort(reason);
  }

  /** Alias of {@link close}. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /**
   * The completion, if it has a choice. Some OpenAI-compatible servers answer 200 with `{ "error": … }`
   * or an empty `choices`; parsed as is, that was an empty answer the agent returned as if the model
   * had said nothing.
   */
  #checked(completion: ChatCompletion): ChatCompletion {
    const body = completion as unknown as {
      choices?: unknown;
      error?: { message?: unknown } | string;
    } | null;
    if (Array.isArray(body?.choices) && body.choices.length > 0) return completion;
    const error = body?.error;
    const said =
      typeof error === 'string' ? error : typeof error?.message === 'string' ? error.message : undefined;
    const model = this.#options.model;
    throw new ModelError(
      'model-error',
      `model '${model}': the response from ${this.#options.baseURL} has no choices` +
        (said !== undefined ? `; the provider said: ${said.slice(0, 400)}` : '') +
        '; expected a chat.completion with at least one choice',
      { model },
    );
  }

  /** Validates the call and builds the request body. Throws (inside async callers: rejects). */
  #prepare(messages: readonly LLMMessage[], options: CreateOptions): Prepared {
    const who = `model '${this.#options.model}'`;
    if (this.#closed) throw new ToolbusError('closed', `${who}: the client is closed`);
    if (!Array.isArray(messages)) {
      throw new ToolbusError(
        'invalid-arguments',
        `${who}: messages must be an array, got ${typeof messages}`,
      );
    }
    if (options.signal?.aborted) throw abortError(options.signal, who);
    const offered = options.tools ?? [];
    if (offered.length > 0 && !this.modelInfo.functionCalling) {
      throw new ToolbusError(
        'unsupported',
        `${who} cannot call functions (modelInfo.functionCalling is false), but ${offered.length} tool(s) were ` +
          `offered: ${offered
            .slice(0, 20)
            .map((t) => `'${toSchema(t).name}'`)
            .join(', ')}${offered.length > 20 ? ', …' : ''}; remove the tools or use a ReAct agent`,
      );
    }
    if (options.jsonOutput && !this.modelInfo.jsonOutput) {
      throw new ToolbusError(
        'unsupported',
        `${who} cannot be asked for JSON output (modelInfo.jsonOutput is false)`,
      );
    }

    const { toolbusByWire, wireTools, pairs } = wireToolsFor(offered, who);
    const decode = (wire: string): string => {
      const known = toolbusByWire.get(wire);
      if (known !== undefined) return known;
      try {
        return decodeToolName(wire);
      } catch {
        return wire;
      }
    };

    const body: Record<string, unknown> = {
      ...this.#options.body,
      model: this.#options.model,
      messages: toOpenAIMessages(
        messages,
        this.modelInfo.vision ? TO_WIRE_MESSAGES_VISION : TO_WIRE_MESSAGES,
      ),
    };
    if (wireTools.length > 0) {
      body.tools = wireTools;
      const choice = options.toolChoice;
      if (choice !== undefined) body.tool_choice = toWireToolChoice(choice, toolbusByWire, who);
      if (this.#options.parallelToolCalls !== undefined)
        body.parallel_tool_calls = this.#options.parallelToolCalls;
    } else if (options.toolChoice === 'required' || typeof options.toolChoice === 'object') {
      throw new ToolbusError(
        'invalid-arguments',
        `${who}: toolChoice ${JSON.stringify(options.toolChoice)} needs tools, but none were offered`,
      );
    }
    if (options.jsonOutput) body.response_format = { type: 'json_object' };
    return { body, tools: pairs, decode };
  }

  /** Combines the caller's signal with the deadline; `dispose` removes the listener and the timer. */
  #scope(callerSignal: AbortSignal | undefined, prepared: Prepared): CallScope {
    const { model, timeoutMs, baseURL, apiKeyEnvVar } = this.#options;
    const controller = new AbortController();
    const active = this.#active;
    active.add(controller);
    // Beyond setTimeout's maximum (~24.8 days) a timer would fire after 1 ms: no deadline then.
    const timer =
      timeoutMs > MAX_TIMER_MS
        ? undefined
        : setTimeout(() => {
            controller.abort(
              new ToolbusError(
                'timeout',
                `model '${model}': no complete response within ${timeoutMs} ms (timeoutMs)`,
              ),
            );
          }, timeoutMs);
    const unwatch =
      callerSignal === undefined
        ? undefined
        : onAbort(callerSignal, () => controller.abort(abortError(callerSignal, `model '${model}'`)));
    return {
      signal: controller.signal,
      context: { model, baseURL, apiKeyEnvVar, tools: prepared.tools, signal: controller.signal },
      dispose(drop) {
        clearTimeout(timer);
        active.delete(controller);
        unwatch?.();
        if (drop && !controller.signal.aborted)
          controller.abort(new ToolbusError('cancelled', `model '${model}': done`));
      },
    };
  }

  /** Runs `attempt`, retrying retryable failures with backoff; the wait ends as soon as the call aborts. */
  async #withRetries<T>(scope: CallScope, attempt: () => Promise<T>): Promise<T> {
    const { maxRetries, retryBaseDelayMs, maxRetryDelayMs, onRetry, model } = this.#options;
    for (let n = 0; ; n++) {
      try {
        return await attempt();
      } catch (raw) {
        const error = toModelError(raw, scope.context);
        if (scope.signal.aborted || n >= maxRetries || !isRetryable(error)) throw error;
        const retryAfterMs = error instanceof ModelError ? error.retryAfterMs : undefined;
        const backoff = Math.min(maxRetryDelayMs, retryBaseDelayMs * 2 ** n) * (0.75 + Math.random() * 0.25);
        const delayMs = retryAfterMs ?? Math.round(backoff);
        if (delayMs > maxRetryDelayMs) throw error;
        try {
          onRetry?.({ model, attempt: n + 1, delayMs, error });
        } catch {
          // An observer (logging, metrics) must not turn a retryable failure into its own error.
        }
        try {
          await sleep(delayMs, undefined, { signal: scope.signal });
        } catch {
          throw abortError(scope.signal, `model '${model}'`);
        }
      }
    }
  }
}

/**
 * What spans say of a client: `openai` for OpenAI's API, `saptiva` for Saptiva's, `openai-compatible`
 * for any other server (its host is `server.address`).
 */
function traceTargetOf(model: string, baseURL: string): ChatTraceTarget {
  const provider =
    baseURL === DEFAULT_OPENAI_BASE_URL
      ? 'openai'
      : baseURL === SAPTIVA_BASE_URL.replace(/\/+$/, '')
        ? 'saptiva'
        : 'openai-compatible';
  let url: URL | undefined;
  try {
    url = new URL(baseURL);
  } catch {
    return { model, provider };
  }
  const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
  return { model, provider, serverAddress: url.hostname, serverPort: port };
}

/** Names in the history as the wire saw them; a name that cannot be encoded is sent as it is. */
const TO_WIRE_MESSAGES: ToOpenAIMessagesOptions = {
  toolName(name) {
    try {
      return encodeToolName(name);
    } catch {
      return name;
    }
  },
};

/** The same, for a model that reads images. */
const TO_WIRE_MESSAGES_VISION: ToOpenAIMessagesOptions = { ...TO_WIRE_MESSAGES, vision: true };

/** `TextDecoder.decode` options for a body read in pieces. */
const STREAMING = { stream: true } as const;

/** A tool as the wire carries it, and its name there. */
interface WireTool {
  name: string;
  tool: ChatCompletionFunctionTool;
}

/**
 * Wire tools by the tool schema they came from: agents send the same tools with every request, and
 * compiling the schema (a deep copy, or the strict rewrite) and encoding the name each time is wasted
 * work. Keyed by identity, so a tool whose schema changes hands over a new object and is compiled
 * again. The objects are shared by requests, which only serialise them.
 */
const wireToolCache = new WeakMap<ToolSchema, Readonly<WireTool>>();

function wireToolFor(schema: ToolSchema): Readonly<WireTool> {
  let wire = wireToolCache.get(schema);
  if (wire === undefined) {
    const name = encodeToolName(schema.name);
    const compiled = compileSchema(schema, schema.strict ? 'openai-strict' : 'default');
    const fn: ChatCompletionFunctionTool['function'] = {
      name,
      description: compiled.description,
      parameters: compiled.parameters,
    };
    // `strict: false` is the default; leaving it out keeps servers that reject the field working.
    if (compiled.strict) fn.strict = true;
    wire = { name, tool: { type: 'function', function: fn } };
    wireToolCache.set(schema, wire);
  }
  return wire;
}

/** The wire form of one list of tools, with its name maps. */
interface WireTools {
  toolbusByWire: ReadonlyMap<string, string>;
  wireTools: readonly ChatCompletionFunctionTool[];
  pairs: readonly [string, string][];
}

/**
 * Wire tools by the list they came from: an agent offers the same list object at every step until its
 * tools change (a `ToolSet`'s list; a registry reload makes a new one), so 10,000 tools are mapped once
 * per change, not once per step.
 */
const wireListCache = new WeakMap<readonly (Tool | ToolSchema)[], WireTools>();

function wireToolsFor(offered: readonly (Tool | ToolSchema)[], who: string): WireTools {
  const cached = wireListCache.get(offered);
  if (cached) return cached;
  const toolbusByWire = new Map<string, string>();
  const wireTools: ChatCompletionFunctionTool[] = [];
  const pairs: [string, string][] = [];
  for (const item of offered) {
    const schema = toSchema(item);
    const { name: wire, tool } = wireToolFor(schema);
    if (toolbusByWire.has(wire)) {
      throw new ToolbusError(
        'invalid-arguments',
        `${who}: two tools are named '${schema.name}'; tool names must be unique in one request`,
      );
    }
    toolbusByWire.set(wire, schema.name);
    pairs.push([wire, schema.name]);
    wireTools.push(tool);
  }
  const wire: WireTools = { toolbusByWire, wireTools, pairs };
  // Only lists that cannot change under the cache: a frozen one (a ToolSet's, an agent's view).
  if (Object.isFrozen(offered)) wireListCache.set(offered, wire);
  return wire;
}

function toSchema(tool: Tool | ToolSchema): ToolSchema {
  return 'schema' in tool && typeof tool.schema === 'object' ? tool.schema : (tool as ToolSchema);
}

function toWireToolChoice(
  choice: NonNullable<CreateOptions['toolChoice']>,
  toolbusByWire: ReadonlyMap<string, string>,
  who: string,
): ChatCompletionToolChoiceOption {
  if (choice === 'auto' || choice === 'required' || choice === 'none') return choice;
  for (const [wire, name] of toolbusByWire) {
    if (name === choice.name) return { type: 'function', function: { name: wire } };
  }
  throw new ToolbusError(
    'invalid-arguments',
    `${who}: toolChoice names tool '${choice.name}', which is not among the tools offered: ` +
      `${[...toolbusByWire.values()].map((n) => `'${n}'`).join(', ')}`,
  );
}
