/**
 * @module toolbus: the root entry. Loads no heavy client; those live behind `toolbus/nats`,
 * `toolbus/sqlite`, `toolbus/mcp`, `toolbus/openai` and `toolbus/langchain`.
 *
 * Explicit named exports only: anything not listed here is private.
 */

// --- schema ---
export type { JsonValue, JsonObject, JsonSchema, ObjectJsonSchema } from './schema/index.js';

// --- tools ---
export {
  ToolbusError,
  ToolError,
  ToolErrorCode,
  ToolbusErrorCode,
  isToolbusError,
  CancellationToken,
} from './tools/index.js';
export type {
  Tool,
  ToolSchema,
  ToolAnnotations,
  ToolCallContext,
  RunJsonOptions,
  ToolResult,
  ToolCallOptions,
  ToolProvider,
} from './tools/index.js';

// --- bus ---
export { parseTopic, canonicalTopic, topicParts, defaultServiceQueues } from './bus/index.js';
export type {
  MessageBus,
  BusMessage,
  BusHandler,
  BusProperties,
  BusSubscription,
  BusHooks,
  PublishOptions,
  SubscribeOptions,
  TopicName,
} from './bus/index.js';

// --- services ---

// --- config ---
export type {
  ConfigStore,
  ConfigItem,
  ConfigChange,
  ConfigWriteOptions,
  ConfigWatchOptions,
} from './config/index.js';

// --- registry ---

// --- models ---
export {
  SystemMessage,
  UserMessage,
  AssistantMessage,
  FunctionExecutionResult,
  FunctionExecutionResultMessage,
  FinishReason,
} from './models/index.js';
export type {
  FunctionCall,
  LLMMessage,
  ChatCompletionClient,
  CreateResult,
  CreateOptions,
  ModelInfo,
  RequestUsage,
  ToolChoice,
} from './models/index.js';

// --- agents ---

// --- adapters (dependency-free ones: http) ---
