/**
 * @module LLMMessage[] → OpenAI chat messages: the one place toolbus messages meet the wire format.
 */
import type {
  ChatCompletionAssistantMessageParam,
  ChatCompletionContentPart,
  ChatCompletionMessageParam,
  ChatCompletionToolMessageParam,
} from 'openai/resources/chat/completions';
import { ToolbusError } from '../../errors/index.js';
import type { FunctionExecutionResult, LLMMessage } from '../index.js';

/** Options of {@link toOpenAIMessages}. */
export interface ToOpenAIMessagesOptions {
  /**
   * Maps a toolbus tool name to the name the provider saw, for function calls in the history (the
   * client passes the same mapping it used for the request's tools). @default the name unchanged
   */
  toolName?: (name: string) => string;
  /**
   * The model reads images (`modelInfo.vision`): image parts of tool results are sent after the tool
   * messages, in a user message (tool messages take only text). Otherwise the tool messages' text,
   * which describes them, is all the model gets. @default false
   */
  vision?: boolean;
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
 * - `FunctionExecutionResultMessage` → one `tool` message per result, with `tool_call_id`; with
 *   `vision`, the results' images follow in one `user` message of `image_url` parts (data URLs), each
 *   result's introduced by a text part naming its call.
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
        if (options.vision === true) {
          const images = imageParts(message.content);
          if (images.length > 0) out.push({ role: 'user', content: images });
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

/** The images of a round of results, as user-message parts: each result's after a line naming it. */
function imageParts(results: readonly FunctionExecutionResult[]): ChatCompletionContentPart[] {
  const out: ChatCompletionContentPart[] = [];
  for (const result of results) {
    const images = (result.parts ?? []).filter((part) => part.type === 'image');
    if (images.length === 0) continue;
    out.push({
      type: 'text',
      text: `The image${images.length === 1 ? '' : 's'} returned by ${result.name} (call ${result.callId}):`,
    });
    for (const image of images) {
      out.push({ type: 'image_url', image_url: { url: `data:${image.mimeType};base64,${image.data}` } });
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
