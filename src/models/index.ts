/**
 * @module models: LLM messages, the ChatCompletionClient contract, and the scripted test double.
 */
export {
  SystemMessage,
  UserMessage,
  AssistantMessage,
  FunctionExecutionResult,
  FunctionExecutionResultMessage,
  isFunctionCalls,
} from './messages.js';
export type { FunctionCall, LLMMessage } from './messages.js';
export { FinishReason } from './chat-completion-client.js';
export type {
  ChatCompletionClient,
  CreateResult,
  CreateOptions,
  ModelInfo,
  RequestUsage,
  ToolChoice,
} from './chat-completion-client.js';
export { ModelError } from './model-error.js';
export type { ModelErrorOptions } from './model-error.js';
export { addUsage, emptyUsage } from './usage.js';
export { ScriptedChatCompletionClient, DEFAULT_SCRIPTED_MODEL_INFO } from './scripted-client.js';
export type {
  ScriptedCall,
  ScriptedChatCompletionClientOptions,
  ScriptedReply,
  ScriptedResult,
  ScriptedStep,
  ScriptedStepContext,
  ScriptedStepFunction,
} from './scripted-client.js';
export {
  SaptivaModel,
  SAPTIVA_MODEL_INFO,
  SAPTIVA_BASE_URL,
  SAPTIVA_API_KEY_ENV,
  DEFAULT_SAPTIVA_MODEL,
  saptivaModelInfo,
} from './saptiva-models.js';
/** For model clients (not part of the root API): the `chat {model}` span of each call. */
export { traceChat, traceChatStream } from './chat-tracing.js';
export type { ChatTraceTarget } from './chat-tracing.js';
