/**
 * @module toolbus: pluggable agent tools. The root holds what a user writes and wires: tools and tool
 * sets, the bus and config contracts with their in-memory implementations, tool services (server and
 * client), the registry, the model contract and the agents. Everything else has its own entry:
 *
 * - `toolbus/wire`: the TrustGraph wire codecs, descriptors and announcements, for foreign peers;
 * - `toolbus/gateway`: the HTTP gateway (`createGateway`);
 * - `toolbus/runtime`: the AutoGen-style agent runtime (`SingleThreadedAgentRuntime`, `RoutedAgent`);
 * - `toolbus/testing`: the scripted model client;
 * - the leaves `toolbus/nats`, `toolbus/sqlite`, `toolbus/mcp`, `toolbus/openai`, `toolbus/langchain`.
 */

// --- errors ---
export { ToolbusError, ToolbusErrorCode, isToolbusError } from './errors/index.js';

// --- tools ---
export { ToolError, BaseTool, FunctionTool, ToolSet, LiveToolSet, CancellationToken } from './tools/index.js';
export type {
  Tool,
  ToolSchema,
  ToolResult,
  ToolCallContext,
  ToolCallOptions,
  ToolProvider,
  FunctionToolOptions,
  ToolSetOptions,
} from './tools/index.js';
export { HttpTool } from './adapters/http/index.js';
export type { HttpToolOptions } from './adapters/http/index.js';
export type { JsonValue, JsonObject } from './schema/index.js';

// --- bus and config ---
export { MemoryBus } from './bus/index.js';
export type { MessageBus, BusMessage } from './bus/index.js';
export { MemoryConfigStore } from './config/index.js';
export type { ConfigStore, ConfigItem } from './config/index.js';

// --- tool services ---
export { DynamicToolService, ToolServiceClient, RemoteToolError } from './services/index.js';
export type {
  DynamicToolServiceOptions,
  ToolServiceInvokeContext,
  ToolServiceClientOptions,
} from './services/index.js';

// --- registry ---
export { ToolRegistry } from './registry/index.js';
export type {
  ToolRegistryOptions,
  RegistryProblem,
  ToolTypeFactory,
  ToolTypeContext,
  ConfigAllowlist,
} from './registry/index.js';

// --- models ---
export {
  SystemMessage,
  UserMessage,
  AssistantMessage,
  FunctionExecutionResult,
  FunctionExecutionResultMessage,
  ModelError,
} from './models/index.js';
export type {
  ChatCompletionClient,
  CreateResult,
  CreateOptions,
  LLMMessage,
  FunctionCall,
} from './models/index.js';

// --- agents ---
export { ToolUseAgent, ReActAgent, AgentService, AgentClient } from './agents/index.js';
export type {
  ToolUseAgentOptions,
  ReActAgentOptions,
  AgentEvent,
  AgentRunOptions,
  AgentServiceOptions,
  AgentClientOptions,
} from './agents/index.js';
