/**
 * @module The `ChatCompletionClient` contract.
 */
import type { Tool, ToolSchema } from '../tools/index.js';
import type { FunctionCall, LLMMessage } from './messages.js';

/** Token counts of one request, or a running total. */
export interface RequestUsage {
  promptTokens: number;
  completionTokens: number;
}

/** Why the model stopped. */
export const FinishReason = {
  Stop: 'stop',
  /** The output token limit cut the output: text, or function calls whose last arguments may be incomplete. */
  Length: 'length',
  FunctionCalls: 'function_calls',
  ContentFilter: 'content_filter',
  Unknown: 'unknown',
} as const;
/** One of {@link FinishReason}'s values. */
export type FinishReason = (typeof FinishReason)[keyof typeof FinishReason];

/** The result of one `create` call. */
export interface CreateResult {
  /** Text, or the function calls the model asked for. */
  content: string | FunctionCall[];
  finishReason: FinishReason;
  usage: RequestUsage;
  /** Text the model sent alongside function calls, or its reasoning. */
  thought?: string;
}

/** How the model may use tools: `auto`, `required`, `none`, or one named tool. */
export type ToolChoice = 'auto' | 'required' | 'none' | { name: string };

/** What a model can do. */
export interface ModelInfo {
  /** It can call functions (tools). */
  functionCalling: boolean;
  /** It can be asked for JSON output. */
  jsonOutput: boolean;
  /** It accepts images. */
  vision: boolean;
  /** A family name, e.g. `gpt-4o`, `llama`, `saptiva`. @default 'unknown' */
  family?: string;
  /** It honours a JSON Schema for its answer (structured output). @default false */
  structuredOutput?: boolean;
  /** It accepts more than one system message. @default true */
  multipleSystemMessages?: boolean;
}

/** Options of {@link ChatCompletionClient.create}. */
export interface CreateOptions {
  /** Tools the model may call. @default none */
  tools?: readonly (Tool | ToolSchema)[];
  /** @default 'auto' when tools are given */
  toolChoice?: ToolChoice;
  /** Ask for a JSON object answer. @default false */
  jsonOutput?: boolean;
  /** Cancels the request. @default none */
  signal?: AbortSignal;
}

/**
 * A model that turns messages (and tools) into text or function calls. Implemented by
 * `OpenAIChatCompletionClient` (`toolbus/openai`) and `ScriptedChatCompletionClient` (tests).
 */
export interface ChatCompletionClient {
  readonly modelInfo: ModelInfo;
  /** One completion. */
  create(messages: readonly LLMMessage[], options?: CreateOptions): Promise<CreateResult>;
  /** Yields text chunks as they arrive, then the final {@link CreateResult}. */
  createStream(
    messages: readonly LLMMessage[],
    options?: CreateOptions,
  ): AsyncIterable<string | CreateResult>;
  /** Usage summed over every request so far. */
  totalUsage(): RequestUsage;
  /** Idempotent. */
  close(): Promise<void>;
}
