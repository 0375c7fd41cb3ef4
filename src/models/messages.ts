/**
 * @module LLM messages, as the Saptiva-Agents guide writes them.
 */
import type { ContentPart } from '../tools/index.js';

/** A function call requested by the model. `arguments` is the raw JSON text the model produced. */
export interface FunctionCall {
  id: string;
  name: string;
  arguments: string;
}

/** The system prompt. */
export class SystemMessage {
  readonly type = 'SystemMessage' as const;
  readonly content: string;
  constructor(init: { content: string }) {
    this.content = init.content;
  }
}

/** A user turn. `source` names who spoke (the guide uses `"user"`). */
export class UserMessage {
  readonly type = 'UserMessage' as const;
  readonly content: string;
  readonly source: string;
  constructor(init: { content: string; source?: string }) {
    this.content = init.content;
    this.source = init.source ?? 'user';
  }
}

/** A model turn: text, or the function calls it asked for. `thought` keeps text sent beside calls. */
export class AssistantMessage {
  readonly type = 'AssistantMessage' as const;
  readonly content: string | FunctionCall[];
  readonly source: string;
  readonly thought: string | undefined;
  constructor(init: { content: string | FunctionCall[]; source?: string; thought?: string }) {
    this.content = init.content;
    this.source = init.source ?? 'assistant';
    this.thought = init.thought;
  }
}

/**
 * The result of executing one function call. `parts` holds a result's content parts (images, say),
 * which a client sends as the model accepts them; `content` is always their text.
 */
export class FunctionExecutionResult {
  readonly callId: string;
  readonly content: string;
  readonly isError: boolean;
  readonly name: string;
  readonly parts: readonly ContentPart[] | undefined;
  constructor(init: {
    callId: string;
    content: string;
    isError?: boolean;
    name: string;
    parts?: readonly ContentPart[] | undefined;
  }) {
    this.callId = init.callId;
    this.content = init.content;
    this.isError = init.isError ?? false;
    this.name = init.name;
    this.parts = init.parts;
  }
}

/** The results of one round of function calls, sent back to the model. */
export class FunctionExecutionResultMessage {
  readonly type = 'FunctionExecutionResultMessage' as const;
  readonly content: FunctionExecutionResult[];
  constructor(init: { content: FunctionExecutionResult[] }) {
    this.content = init.content;
  }
}

/**
 * True when a message or result `content` holds function calls rather than text.
 *
 * @example
 * ```ts
 * const result = await client.create([new UserMessage({ content: 'Price of AAPL?' })], { tools });
 * if (isFunctionCalls(result.content)) for (const call of result.content) console.log(call.name);
 * ```
 */
export function isFunctionCalls(content: string | readonly FunctionCall[]): content is FunctionCall[] {
  return Array.isArray(content);
}

/** Any message a chat completion client accepts. */
export type LLMMessage = SystemMessage | UserMessage | AssistantMessage | FunctionExecutionResultMessage;
