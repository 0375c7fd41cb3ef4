/**
 * @module OpenAI responses → `CreateResult`: whole completions, and streamed chunks reassembled.
 */
import type { ChatCompletion, ChatCompletionChunk } from 'openai/resources/chat/completions';
import { FinishReason } from '../index.js';
import type { CreateResult, FunctionCall, RequestUsage } from '../index.js';

/** Maps a wire tool name back to the toolbus name. */
export type NameDecoder = (wireName: string) => string;

/** Extra fields some OpenAI-compatible servers add (vLLM, Saptiva, DeepSeek: reasoning text). */
interface ReasoningFields {
  reasoning_content?: string | null;
  reasoning?: string | null;
}

/** A tool call as some servers send it: `arguments` may be an object instead of JSON text. */
interface LooseToolCall {
  id?: string | null;
  type?: string;
  function?: { name?: string | null; arguments?: unknown } | null;
}

/**
 * The wire's finish reasons → toolbus's. Function calls give `function_calls` (some servers say `stop`
 * beside them), except after `length`: the token limit cut the output, so the last call's arguments may
 * be incomplete, and hiding that left the agent with only "not valid JSON".
 */
export function toFinishReason(reason: string | null | undefined, hasCalls: boolean): FinishReason {
  if (reason === 'length') return FinishReason.Length;
  if (hasCalls) return FinishReason.FunctionCalls;
  switch (reason) {
    case 'stop':
    case 'end_turn':
      return FinishReason.Stop;
    case 'length':
      return FinishReason.Length;
    case 'tool_calls':
    case 'function_call':
      return FinishReason.FunctionCalls;
    case 'content_filter':
      return FinishReason.ContentFilter;
    default:
      return FinishReason.Unknown;
  }
}

const THINK_OPEN = '<think>';
const THINK_CLOSE = '</think>';

/** Splits a leading `<think>…</think>` block (reasoning models) off the answer text. */
export function splitThink(text: string): { thought: string | undefined; text: string } {
  const match = /^\s*<think>([\s\S]*?)<\/think>\s*/.exec(text);
  if (!match) return { thought: undefined, text };
  return { thought: (match[1] as string).trim(), text: text.slice(match[0].length) };
}

function argumentsText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === undefined || value === null) return '';
  // Some servers send the arguments as a JSON object; keep them as the JSON text the contract promises.
  return JSON.stringify(value);
}

function usageOf(
  usage: { prompt_tokens?: number; completion_tokens?: number } | null | undefined,
): RequestUsage {
  return { promptTokens: usage?.prompt_tokens ?? 0, completionTokens: usage?.completion_tokens ?? 0 };
}

function joinThought(...parts: (string | undefined)[]): string | undefined {
  const kept = parts.map((p) => p?.trim()).filter((p): p is string => p !== undefined && p !== '');
  return kept.length === 0 ? undefined : kept.join('\n');
}

function build(
  text: string,
  calls: FunctionCall[],
  reasoning: string | undefined,
  finish: string | null | undefined,
  usage: RequestUsage,
): CreateResult {
  const { thought: think, text: answer } = splitThink(text);
  if (calls.length > 0) {
    const result: CreateResult = { content: calls, finishReason: toFinishReason(finish, true), usage };
    const thought = joinThought(reasoning, think, answer);
    if (thought !== undefined) result.thought = thought;
    return result;
  }
  const result: CreateResult = { content: answer, finishReason: toFinishReason(finish, false), usage };
  const thought = joinThought(reasoning, think);
  if (thought !== undefined) result.thought = thought;
  return result;
}

/** Converts a whole `chat.completion` (its first choice) into a `CreateResult`. */
export function parseCompletion(completion: ChatCompletion, decode: NameDecoder): CreateResult {
  const choice = completion.choices?.[0];
  const message = choice?.message;
  const extra = (message ?? {}) as ReasoningFields;
  const calls: FunctionCall[] = [];
  const toolCalls = (message?.tool_calls ?? []) as LooseToolCall[];
  toolCalls.forEach((call, i) => {
    if (call.type !== undefined && call.type !== 'function') return;
    calls.push({
      id: call.id || `call_${i}`,
      name: decode(call.function?.name ?? ''),
      arguments: argumentsText(call.function?.arguments),
    });
  });
  return build(
    // A refusal (OpenAI sends it instead of content) is what the model said; dropped, the answer was ''.
    message?.content || message?.refusal || '',
    calls,
    extra.reasoning_content ?? extra.reasoning ?? undefined,
    choice?.finish_reason,
    usageOf(completion.usage),
  );
}

interface PartialCall {
  id: string;
  name: string;
  arguments: string;
}

/**
 * Reassembles a streamed completion: text deltas in order, tool-call deltas joined per `index` (the id
 * and name arrive once, the argument text in pieces), the finish reason, and the usage of the last chunk.
 */
export class StreamAssembler {
  readonly #decode: NameDecoder;
  readonly #calls = new Map<number, PartialCall>();
  #text = '';
  #reasoning = '';
  #finish: string | null | undefined;
  #usage: RequestUsage | undefined;
  /** Where the answer starts in `#text` once known (after a leading `<think>` block, if any). */
  #visibleFrom: number | undefined;
  /** How much of `#text` has been handed out or skipped. */
  #released = 0;
  /** The slot of the last tool-call delta, for deltas without `index`. */
  #lastIndex: number | undefined;

  constructor(decode: NameDecoder) {
    this.#decode = decode;
  }

  /** True once a chunk carried a finish reason. */
  get finished(): boolean {
    return this.#finish !== undefined && this.#finish !== null;
  }

  /** Takes one chunk; returns its answer text, if any, for the caller to yield. */
  push(chunk: ChatCompletionChunk): string | undefined {
    if (chunk.usage) this.#usage = usageOf(chunk.usage);
    const choice = chunk.choices?.[0];
    if (!choice) return undefined;
    if (choice.finish_reason) this.#finish = choice.finish_reason;
    const delta = choice.delta ?? {};
    const extra = delta as ReasoningFields;
    const reasoning = extra.reasoning_content ?? extra.reasoning;
    if (reasoning) this.#reasoning += reasoning;
    const pieces = delta.tool_calls as (LooseToolCall & { index?: number })[] | null | undefined;
    if (pieces) for (const piece of pieces) this.#addCallPiece(piece);
    // A refusal streams in its own field, instead of content; it is the answer text all the same.
    const text = delta.content || (delta as { refusal?: string | null }).refusal;
    if (!text) return undefined;
    this.#text += text;
    if (this.#visibleFrom === undefined) return this.#release();
    // Past the start of the answer, each piece is handed out as it came: slicing the whole text for
    // it would flatten a growing string on every chunk.
    this.#released = this.#text.length;
    return text;
  }

  /** Joins one tool-call delta into its call. */
  #addCallPiece(piece: LooseToolCall & { index?: number }): void {
    const index = this.#indexOf(piece);
    this.#lastIndex = index;
    let call = this.#calls.get(index);
    if (!call) {
      call = { id: '', name: '', arguments: '' };
      this.#calls.set(index, call);
    }
    if (piece.id && !call.id) call.id = piece.id;
    const name = piece.function?.name;
    // Most servers send the name once; some repeat it in every delta, a few split it.
    if (name && name !== call.name) call.name += name;
    call.arguments += argumentsText(piece.function?.arguments);
  }

  /**
   * Text held back so far that the stream should still yield at its end (a `<th` that never became a
   * `<think>` block, or an unclosed one, which {@link splitThink} leaves in the answer).
   */
  flush(): string | undefined {
    if (this.#visibleFrom !== undefined) return undefined;
    const { text } = splitThink(this.#text);
    this.#released = this.#text.length;
    return text === '' ? undefined : text;
  }

  /**
   * The answer text not yet yielded. A leading `<think>…</think>` block (reasoning models such as
   * Saptiva Cortex, qwen3, DeepSeek R1 write it in the content) is held back, as `result()` moves it to
   * `thought`: streamed, it reached consumers as if it were the answer.
   */
  #release(): string | undefined {
    const text = this.#text;
    if (this.#visibleFrom === undefined) {
      const lead = /^\s*/.exec(text)?.[0].length ?? 0;
      const rest = text.slice(lead);
      if (rest.length < THINK_OPEN.length && THINK_OPEN.startsWith(rest)) return undefined; // undecided
      if (!rest.startsWith(THINK_OPEN)) this.#visibleFrom = 0;
      else {
        const close = text.indexOf(THINK_CLOSE, lead + THINK_OPEN.length);
        if (close < 0) return undefined;
        const after = close + THINK_CLOSE.length;
        const start = after + (/^\s*/.exec(text.slice(after))?.[0].length ?? 0);
        if (start === text.length) return undefined; // only whitespace after the block so far
        this.#visibleFrom = start;
      }
    }
    const from = Math.max(this.#visibleFrom, this.#released);
    this.#released = text.length;
    return from < text.length ? text.slice(from) : undefined;
  }

  /**
   * The slot a delta belongs to. Some OpenAI-compatible servers (Gemini's compatibility endpoint, some
   * local servers) omit `index`: a delta with a new `id` then starts the next call, one without continues
   * the last, so parallel calls are not glued into one call with unparseable arguments.
   */
  #indexOf(piece: LooseToolCall & { index?: number }): number {
    if (typeof piece.index === 'number') return piece.index;
    const last = this.#lastIndex === undefined ? undefined : this.#calls.get(this.#lastIndex);
    if (last === undefined) return 0;
    if (piece.id && last.id && piece.id !== last.id) return Math.max(...this.#calls.keys()) + 1;
    return this.#lastIndex as number;
  }

  /** The assembled result. */
  result(): CreateResult {
    const calls = [...this.#calls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([index, call]) => ({
        id: call.id || `call_${index}`,
        name: this.#decode(call.name),
        arguments: call.arguments,
      }));
    return build(
      this.#text,
      calls,
      this.#reasoning || undefined,
      this.#finish,
      this.#usage ?? { promptTokens: 0, completionTokens: 0 },
    );
  }
}
