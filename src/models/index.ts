/**
 * @module models: LLM messages, the ChatCompletionClient contract, and the scripted test double.
 */
export {
  SystemMessage,
  UserMessage,
  AssistantMessage,
  FunctionExecutionResult,
  FunctionExecutionResultMessage,
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
