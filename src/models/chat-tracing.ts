/**
 * @module The `chat {model}` span of a model call (OpenTelemetry GenAI conventions): a CLIENT span with
 * the provider, the model, the finish reason and the token usage; the messages in and out only with
 * the content opt-in (`TOOLBUS_TRACE_CONTENT=1`). Model clients wrap their calls in it; with no SDK
 * registered the call runs as it is (see `tools/tracing.ts`).
 */
import type { Span } from '@opentelemetry/api';
import {
  TraceAttribute,
  endSpanWithFailure,
  runInSpan,
  startSpan,
  traceContent,
  tracingEnabled,
  otel,
} from '../tools/index.js';
import type { CreateResult } from './chat-completion-client.js';
import type { LLMMessage } from './messages.js';

/** Which model a client calls, as its spans name it. */
export interface ChatTraceTarget {
  /** The model name sent to the provider (`gen_ai.request.model`), e.g. `gpt-4o-mini`. */
  readonly model: string;
  /** The provider (`gen_ai.provider.name`), e.g. `openai`. */
  readonly provider: string;
  /** The server's host name, when the model is remote. @default none */
  readonly serverAddress?: string;
  /** The server's port, when the model is remote. @default none */
  readonly serverPort?: number;
}

/**
 * Runs one model call (`run`) inside its `chat {model}` span and records the result's usage and finish
 * reason, or the failure's code as `error.type`.
 */
export function traceChat(
  target: ChatTraceTarget,
  messages: readonly LLMMessage[],
  run: () => Promise<CreateResult>,
): Promise<CreateResult> {
  if (!tracingEnabled()) return run();
  const span = startChatSpan(target, messages);
  let running: Promise<CreateResult>;
  try {
    running = runInSpan(span, run);
  } catch (error) {
    running = Promise.reject(error);
  }
  return running.then(
    (result) => {
      endChatSpan(span, result);
      return result;
    },
    (error: unknown) => {
      endSpanWithFailure(span, error);
      throw error;
    },
  );
}

/**
 * A streamed model call inside its span: `stream` as it is when tracing is off, else a wrapper that
 * starts the span at the first read and ends it with the final {@link CreateResult}, a failure, or an
 * early exit of the reader.
 */
export function traceChatStream(
  target: ChatTraceTarget,
  messages: readonly LLMMessage[],
  stream: AsyncGenerator<string | CreateResult, void, undefined>,
): AsyncGenerator<string | CreateResult, void, undefined> {
  return tracingEnabled() ? tracedStream(target, messages, stream) : stream;
}

async function* tracedStream(
  target: ChatTraceTarget,
  messages: readonly LLMMessage[],
  stream: AsyncGenerator<string | CreateResult, void, undefined>,
): AsyncGenerator<string | CreateResult, void, undefined> {
  const span = startChatSpan(target, messages);
  let result: CreateResult | undefined;
  let failed = false;
  try {
    for await (const item of stream) {
      if (typeof item !== 'string') result = item;
      yield item;
    }
  } catch (error) {
    failed = true;
    endSpanWithFailure(span, error);
    throw error;
  } finally {
    // Left early (a `break` of the reader), the call ended without a result, and without an error.
    if (!failed) {
      if (result !== undefined) endChatSpan(span, result);
      else span.end();
    }
  }
}

function startChatSpan(target: ChatTraceTarget, messages: readonly LLMMessage[]): Span {
  const span = startSpan(`chat ${target.model}`, { kind: otel().SpanKind.CLIENT });
  if (!span.isRecording()) return span;
  span.setAttribute(TraceAttribute.OperationName, 'chat');
  span.setAttribute(TraceAttribute.ProviderName, target.provider);
  span.setAttribute(TraceAttribute.System, target.provider);
  span.setAttribute(TraceAttribute.RequestModel, target.model);
  if (target.serverAddress !== undefined) span.setAttribute('server.address', target.serverAddress);
  if (target.serverPort !== undefined) span.setAttribute('server.port', target.serverPort);
  if (traceContent()) span.setAttribute('gen_ai.input.messages', JSON.stringify(messages.map(inputMessage)));
  return span;
}

function endChatSpan(span: Span, result: CreateResult): void {
  if (span.isRecording()) {
    span.setAttribute('gen_ai.usage.input_tokens', result.usage.promptTokens);
    span.setAttribute('gen_ai.usage.output_tokens', result.usage.completionTokens);
    span.setAttribute('gen_ai.response.finish_reasons', [result.finishReason]);
    if (traceContent()) {
      span.setAttribute(
        'gen_ai.output.messages',
        JSON.stringify([
          {
            role: 'assistant',
            parts: partsOf(result.content, result.thought),
            finish_reason: result.finishReason,
          },
        ]),
      );
    }
  }
  span.end();
}

/** One message part in the conventions' JSON shape. */
type MessagePart =
  | { type: 'text'; content: string }
  | { type: 'reasoning'; content: string }
  | { type: 'tool_call'; id: string; name: string; arguments: string }
  | { type: 'tool_call_response'; id: string; response: string };

/** A message in the conventions' `gen_ai.input.messages` shape: a role and its parts. */
function inputMessage(message: LLMMessage): { role: string; parts: MessagePart[] } {
  switch (message.type) {
    case 'SystemMessage':
      return { role: 'system', parts: [{ type: 'text', content: message.content }] };
    case 'UserMessage':
      return { role: 'user', parts: [{ type: 'text', content: message.content }] };
    case 'AssistantMessage':
      return { role: 'assistant', parts: partsOf(message.content, message.thought) };
    case 'FunctionExecutionResultMessage':
      return {
        role: 'tool',
        parts: message.content.map((r) => ({
          type: 'tool_call_response',
          id: r.callId,
          response: r.content,
        })),
      };
  }
}

function partsOf(content: CreateResult['content'], thought: string | undefined): MessagePart[] {
  const parts: MessagePart[] = thought ? [{ type: 'reasoning', content: thought }] : [];
  if (typeof content === 'string') parts.push({ type: 'text', content });
  else
    for (const c of content)
      parts.push({ type: 'tool_call', id: c.id, name: c.name, arguments: c.arguments });
  return parts;
}
