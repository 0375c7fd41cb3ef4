/**
 * @module toolbus: the root entry. Loads no heavy client; those live behind `toolbus/nats`,
 * `toolbus/sqlite`, `toolbus/mcp`, `toolbus/openai` and `toolbus/langchain`.
 *
 * Explicit named exports only: anything not listed here is private.
 */

// --- schema ---
export {
  toParametersSchema,
  compileSchema,
  createValidator,
  createNullNormalizer,
  isZodSchema,
  isStandardJsonSchema,
  SchemaKind,
  SchemaProfile,
} from './schema/index.js';
export type {
  JsonValue,
  JsonObject,
  JsonSchema,
  ObjectJsonSchema,
  ParametersSource,
  ZodSchema,
  StandardJsonSchema,
  RawJsonSchema,
  Validator,
  ValidationIssue,
  ValidationResult,
  CreateValidatorOptions,
  NullNormalizer,
} from './schema/index.js';

// --- tools ---
export {
  ToolbusError,
  ToolError,
  ToolErrorCode,
  ToolbusErrorCode,
  isToolbusError,
  CancellationToken,
  TOOL_NAME_PATTERN,
  validateToolName,
  encodeToolName,
  decodeToolName,
  ToolNameMap,
  BaseTool,
  FunctionTool,
  ToolSet,
  LiveToolSet,
  DEFAULT_TOOL_TIMEOUT_MS,
  DEFAULT_MAX_OUTPUT_BYTES,
  DEFAULT_TOOL_CONCURRENCY,
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
  BaseToolOptions,
  SignalLike,
  FunctionToolOptions,
  ToolFunction,
  InferToolArgs,
  ToolSetOptions,
  ToolSetHooks,
  ToolCallEvent,
  ToolResultEvent,
  HookList,
} from './tools/index.js';

// --- bus ---
export { parseTopic, canonicalTopic, topicParts, defaultServiceQueues, MemoryBus } from './bus/index.js';
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
  MemoryBusOptions,
} from './bus/index.js';

// --- services ---
export {
  DynamicToolService,
  ToolServiceClient,
  ToolServiceClientCache,
  ToolServiceTool,
  RemoteToolError,
  createToolServiceTool,
  argumentsToJsonSchema,
  parseToolServiceDescriptor,
  parseToolServiceToolDescriptor,
  formatToolServiceDescriptor,
  formatToolServiceToolDescriptor,
  ToolArgumentType,
  TOOL_DESCRIPTOR_KEYS,
  WireProperty,
  WireErrorType,
  encodeRequest,
  decodeRequest,
  decodeEnvelopeObject,
  encodeResponse,
  decodeResponse,
  toWireError,
  fromWireError,
  cancelTopicOf,
  serviceGroupOf,
  DEFAULT_TOOL_SERVICE_TIMEOUT_MS,
  DEFAULT_TOOL_SERVICE_CONCURRENCY,
  DEFAULT_TOOL_SERVICE_MAX_QUEUED,
  DEFAULT_TOOL_SERVICE_TOPIC,
  DEFAULT_MAX_BUFFERED_CHUNKS,
} from './services/index.js';
export type {
  ToolServiceRequest,
  ToolServiceResponse,
  WireError,
  Hook,
  DynamicToolServiceOptions,
  DynamicToolServiceHooks,
  DynamicToolServiceStats,
  ToolServiceInvoke,
  ToolServiceInvokeContext,
  MalformedMessageContext,
  CallErrorContext,
  ToolServiceClientOptions,
  ToolServiceCallOptions,
  ToolServiceClientStats,
  ToolServiceClientHooks,
  DroppedResponseContext,
  DroppedResponseReason,
  ToolServiceClientCacheOptions,
  RemoteToolErrorOptions,
  ToolServiceDescriptor,
  ToolServiceConfigParam,
  ToolServiceToolDescriptor,
  ToolServiceToolArgument,
  CreateToolServiceToolOptions,
  ToolServiceToolResult,
  ToolServiceToolOptions,
} from './services/index.js';

// --- config ---
export {
  MemoryConfigStore,
  parseJsonValue,
  toJsonValue,
  findJsonError,
  assertConfigName,
  CONFIG_NAME_PATTERN,
  DEFAULT_WATCH_BUFFER,
} from './config/index.js';
export type {
  ConfigStore,
  ConfigItem,
  ConfigChange,
  ConfigWriteOptions,
  ConfigWatchOptions,
  JsonErrorPosition,
  ParseJsonValueOptions,
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
export {
  HttpTool,
  HttpMethod,
  HttpReturnType,
  HttpStatusError,
  DEFAULT_HTTP_TIMEOUT_MS,
  DEFAULT_HTTP_MAX_RESPONSE_BYTES,
  DEFAULT_HTTP_MAX_REDIRECTS,
  httpToolFromConfig,
  httpToolOptionsFromConfig,
  httpToolType,
} from './adapters/http/index.js';
export type {
  HttpToolOptions,
  HttpToolParameters,
  HttpToolConfig,
  HttpToolFromConfigOptions,
  HttpToolTypeOptions,
  HttpToolTypeFactory,
  HttpHeaderValue,
  EnvHeaderValue,
  HeaderEnvironment,
} from './adapters/http/index.js';
