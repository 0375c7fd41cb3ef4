/**
 * @module tools: the Tool contract, FunctionTool, ToolSet and the error contract.
 */
export { ToolError, asToolError, toolAbortError } from './errors.js';
export { CancellationToken } from './cancellation-token.js';
export type {
  Tool,
  ToolSchema,
  ToolAnnotations,
  ToolCallContext,
  RunJsonOptions,
  ToolResult,
  ToolCallOptions,
  ToolProvider,
} from './tool.js';
export {
  TOOL_NAME_PATTERN,
  MAX_TOOL_NAME_LENGTH,
  validateToolName,
  encodeToolName,
  decodeToolName,
  ToolNameMap,
} from './tool-name.js';
export { BaseTool, formatInvalidArguments, valueAsString } from './base-tool.js';
export type { BaseToolOptions, SignalLike } from './base-tool.js';
export { FunctionTool } from './function-tool.js';
export type { FunctionToolOptions, ToolFunction, InferToolArgs } from './function-tool.js';
export {
  ToolSet,
  DEFAULT_TOOL_TIMEOUT_MS,
  DEFAULT_MAX_OUTPUT_BYTES,
  DEFAULT_TOOL_CONCURRENCY,
  MIN_MAX_OUTPUT_BYTES,
  parseToolArguments,
} from './tool-set.js';
export type { ToolSetOptions, ToolSetHooks, ToolCallEvent, ToolResultEvent } from './tool-set.js';
export { hookList, notifyHooks, runHooks } from './hooks.js';
export type { Hook, HookFn } from './hooks.js';
export { LiveToolSet } from './live-tool-set.js';
export { approvalNeeded, checkToolArguments, requireApproval } from './approval.js';
export type { ApprovalContext, NeedsApproval } from './approval.js';
export { truncateOutput } from './truncate-output.js';
export type { TruncatedOutput } from './truncate-output.js';
/** Shared with services/ (not part of the root API): per-call timeouts on one timer per timeout value. */
export { CallDeadlines, MAX_TIMER_MS } from './call-deadlines.js';
export { onAbort } from './abort-fanout.js';
export type { AbortCallback } from './abort-fanout.js';
export type { Schedulable } from './call-deadlines.js';
/** Shared with the layers above (not part of the root API): OpenTelemetry spans, off until an SDK runs. */
export {
  TRACER_NAME,
  TRACE_CONTENT_ENV,
  TraceAttribute,
  tracingEnabled,
  otel,
  traceContent,
  setTraceContent,
  startSpan,
  runInSpan,
  errorTypeOf,
  endSpanWithError,
  endSpanWithFailure,
  contentText,
} from './tracing.js';
export type { OtelApi } from './tracing.js';
