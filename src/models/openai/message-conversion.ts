/**
 * @module LLMMessage[] → OpenAI chat messages: the one place toolbus messages meet the wire format.
 */
import type {
  ChatCompletionAssistantMessageParam,
  ChatCompletionMessageParam,
  ChatCompletionToolMessageParam,
} from 'openai/resources/chat/completions';
import { ToolbusError } from '../../errors/index.js';
import type { LLMMessage } from '../index.js';

/** Options of {@link toOpenAIMessages}. */
export interface ToOpenAIMessagesOptions {
  /**
   * Maps a toolbus tool name to the name the provider saw, for function calls in the history (the
   * client passes the same mapping it used for the request's tools). @default the name unchanged
   */
  toolName?: (name: string) => string;
}

/**
 * Converts toolbus messages to OpenAI chat messages:
 * - `SystemMessage` → `system`; `UserMessage` → `user` (its `source` is not sent: providers restrict
 *   the `name` field's characters, and no model needs it);
 * - `AssistantMessage` with text → `assistant` text; with `FunctionCall[]` → `assistant` with
 *   `tool_calls` and its `thought`, if any, as `content`. Argument text that is not a JSON object (a
 *   model's malformed call) is sent as `{}`: replayed verbatim it makes many providers reject every
 *   later request of the conversation, while the tool's error result already tells the model what
 *   was wrong. The `FunctionCall` itself keeps the raw text;
 * - `FunctionExecutionResultMessage` → one `tool` message per result, with `tool_call_id`.
 *
 * @example
 * ```ts
 * toOpenAIMessages([new UserMessage({ content: 'Hi' })]); // [{ role: 'user', content: 'Hi' }]
 * ```
 */
export function toOpenAIMessages(
  messages: readonly LLMMessage[],
  options: ToOpenAIMessagesOptions = {},
): ChatCompletionMessageParam[] {
  const toolName = options.toolName ?? ((name: string) => name);
  const out: ChatCompletionMessageParam[] = [];
  for (const message of messages) {
    switch (message.type) {
      case 'SystemMessage':
        out.push({ role: 'system', content: message.content });
        break;
      case 'UserMessage':
        out.push({ role: 'user', content: message.content });
        break;
      case 'AssistantMessage': {
        if (typeof message.content === 'string') {
          out.push({ role: 'assistant', content: message.content });
          break;
        }
        const assistant: ChatCompletionAssistantMessageParam = {
          role: 'assistant',
          content: message.thought ?? null,
          tool_calls: message.content.map((call) => ({
            id: call.id,
            type: 'function' as const,
            function: { name: toolName(call.name), arguments: wireArguments(call.arguments) },
          })),
        };
        out.push(assistant);
        break;
      }
      case 'FunctionExecutionResultMessage':
        for (const result of message.content) {
          const tool: ChatCompletionToolMessageParam = {
            role: 'tool',
            tool_call_id: result.callId,
            content: result.content,
          };
          out.push(tool);
        }
        break;
      default: {
        const unknown: { type?: unknown } = message;
        throw new ToolbusError(
          'invalid-arguments',
          `toOpenAIMessages: unknown message type '${String(unknown.type)}'; expected SystemMessage, ` +
            `UserMessage, AssistantMessage or FunctionExecutionResultMessage`,
        );
      }
    }
  }
  return out;
}

/** The argument text to replay: the model's own when it is a JSON object, else `{}`. */
function wireArguments(text: string): string {
  try {
    const value: unknown = JSON.parse(text);
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) return text;
  } catch {
    // fall through
  }
  return '{}';
}
