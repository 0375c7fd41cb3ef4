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
  ToolProgress,
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
export { ToolLogLevel, isToolLogLevel } from './client-features.js';
export type {
  ToolClientFeatures,
  ElicitationRequest,
  ElicitationResult,
  SamplingRequest,
  SamplingResult,
  SamplingMessage,
  SamplingContent,
  SamplingModelPreferences,
} from './client-features.js';
export { BaseTool, formatInvalidArguments, valueAsString } from './base-tool.js';
export type { BaseToolOptions, SignalLike } from './base-tool.js';
export { FunctionTool } from './function-tool.js';
export type { FunctionToolOptions, ToolFunction, InferToolArgs } from './function-tool.js';
export {
  ToolSet,
  DEFAULT_TOOL_TIMEOUT_MS,
  DEFAULT_MAX_OUTPUT_BYTES,
  DEFAULT_MAX_MEDIA_BYTES,
  DEFAULT_TOOL_CONCURRENCY,
  MIN_MAX_OUTPUT_BYTES,
  parseToolArguments,
  unknownToolError,
  LIST_ALL_TOOLS_UP_TO,
} from './tool-set.js';
export type {
  ToolSetOptions,
  ToolSetHooks,
  ToolCallEvent,
  ToolResultEvent,
  ToolProgressEvent,
} from './tool-set.js';
export { hookList, notifyHooks, runHooks } from './hooks.js';
export type { Hook, HookFn } from './hooks.js';
export { LiveToolSet } from './live-tool-set.js';
export { approvalNeeded, checkToolArguments, requireApproval } from './approval.js';
export { decorateTool } from './decorated-tool.js';
export type { ToolDecoration } from './decorated-tool.js';
export { checkToolTags, TOOL_TAG_PATTERN, MAX_TOOL_TAGS } from './tool-tags.js';
export {
  ToolSearchIndex,
  searchTools,
  narrowSearch,
  DEFAULT_SEARCH_LIMIT,
  MAX_SEARCH_LIMIT,
} from './tool-search.js';
export type { ToolSearchHit, ToolSearchOptions, SearchableToolProvider } from './tool-search.js';
export { toolView } from './tool-view.js';
export {
  createSearchTool,
  foundToolNames,
  SEARCH_TOOLS_NAME,
  DEFAULT_SEARCH_TOOLS_LIMIT,
  MAX_SEARCH_TOOLS_LIMIT,
} from './search-tools-tool.js';
export type { SearchToolOptions, FoundTool } from './search-tools-tool.js';
export { DeferredTools } from './deferred-tools.js';
export type { DeferredToolsOptions, DeferredToolList } from './deferred-tools.js';
export { PROFILE_CONFIG_TYPE, parseToolProfile, profileAccepts } from './tool-profile.js';
export type { ToolProfile } from './tool-profile.js';
export type { ObservableToolProvider, ToolViewOptions } from './tool-view.js';
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
export { newTaskId, isTaskId } from './call-id.js';
export {
  contentParts,
  describePart,
  partsToText,
  partBytes,
  base64Bytes,
  isBase64,
  isMediaPart,
} from './content-parts.js';
export type {
  ContentPart,
  TextPart,
  ImagePart,
  AudioPart,
  ResourcePart,
  MediaPart,
} from './content-parts.js';
export { parseUriTemplate } from './uri-template.js';
export type { UriTemplate } from './uri-template.js';
export { MAX_COMPLETION_VALUES, completeFrom, completeWith } from './completion.js';
export type { CompletionSource } from './completion.js';
export { ResourceSet, toResourceContents } from './resource-provider.js';
export type {
  ResourceProvider,
  ResourceInfo,
  ResourceTemplateInfo,
  ResourceContents,
  ResourceReadOptions,
  ResourceChange,
  ResourceValue,
  ResourceEntry,
  ResourceTemplateEntry,
  ResourceSetOptions,
} from './resource-provider.js';
export { PromptSet, missingPromptArgument, toPromptResult } from './prompt-provider.js';
export type {
  PromptProvider,
  PromptInfo,
  PromptArgumentInfo,
  PromptMessage,
  PromptResult,
  PromptGetOptions,
  PromptValue,
  PromptEntry,
} from './prompt-provider.js';
