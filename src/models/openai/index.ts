/**
 * @module toolbus/openai: the model client for OpenAI-compatible servers (OpenAI, Saptiva, Ollama, vLLM,
 * llama.cpp), on the official `openai` package, and the Saptiva preset.
 */
export {
  OpenAIChatCompletionClient,
  DEFAULT_OPENAI_BASE_URL,
  DEFAULT_OPENAI_MODEL_INFO,
  DEFAULT_MODEL_MAX_RETRIES,
  DEFAULT_RETRY_BASE_DELAY_MS,
  DEFAULT_MAX_RETRY_DELAY_MS,
  DEFAULT_MODEL_TIMEOUT_MS,
} from './openai-chat-completion-client.js';
export type { OpenAIChatCompletionClientOptions, ModelRetryEvent } from './openai-chat-completion-client.js';
export { saptivaClient } from './saptiva-client.js';
export type { SaptivaClientOptions } from './saptiva-client.js';
export { toOpenAIMessages } from './message-conversion.js';
export type { ToOpenAIMessagesOptions } from './message-conversion.js';
export { retryAfterMsOf } from './provider-errors.js';
export {
  SaptivaModel,
  SAPTIVA_MODEL_INFO,
  SAPTIVA_BASE_URL,
  SAPTIVA_API_KEY_ENV,
  DEFAULT_SAPTIVA_MODEL,
  saptivaModelInfo,
} from '../index.js';
