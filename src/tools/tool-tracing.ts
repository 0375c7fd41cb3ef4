/**
 * @module The `execute_tool {name}` span of a `ToolSet.call` (OpenTelemetry GenAI conventions), made
 * only while tracing is on (see `tracing.ts`).
 */
import type { Span } from '@opentelemetry/api';
import type { Tool, ToolResult } from './tool.js';
import { TraceAttribute, contentText, endSpanWithError, otel, startSpan, traceContent } from './tracing.js';

/** Starts the span of one tool call: its name, call id and kind; its arguments with the content opt-in. */
export function startToolSpan(
  name: string,
  callId: string,
  args: string | Readonly<Record<string, unknown>>,
  tool: Tool | undefined,
): Span {
  const span = startSpan(`execute_tool ${name}`, { kind: otel().SpanKind.INTERNAL });
  if (!span.isRecording()) return span;
  span.setAttribute(TraceAttribute.OperationName, 'execute_tool');
  span.setAttribute(TraceAttribute.ToolName, name);
  span.setAttribute(TraceAttribute.ToolCallId, callId);
  // Every toolbus tool runs on the agent's side of the model (a function, in the conventions' terms).
  span.setAttribute(TraceAttribute.ToolType, 'function');
  if (tool !== undefined) span.setAttribute(TraceAttribute.ToolDescription, tool.description);
  if (traceContent()) span.setAttribute(TraceAttribute.ToolCallArguments, contentText(args));
  return span;
}

/**
 * Ends the span of a tool call with its result: an error result sets `error.type` to the error's code
 * (`invalid-arguments`, `timeout`, …) and an error status; the result text only with the content opt-in.
 * Returns the result, so it can end a promise chain.
 */
export function endToolSpan(span: Span, result: ToolResult): ToolResult {
  if (span.isRecording() && traceContent()) span.setAttribute(TraceAttribute.ToolCallResult, result.content);
  if (result.isError) endSpanWithError(span, result.error?.code ?? 'tool-error', result.content);
  else span.end();
  return result;
}
