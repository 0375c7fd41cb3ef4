/**
 * @module toolbus/mcp: MCP both ways. MCP servers as toolbus tools (`mcpServerTools`, the `mcp-tool`
 * config type) and any toolbus tool set as an MCP server (`createMcpServer`, `serveMcpStdio`,
 * `createMcpHttpHandler`), with resources and prompts beside the tools (`ResourceSet`, `PromptSet`, or
 * the registry's config items), and an OAuth 2.1 client for servers that require it (`oauth`). Built on
 * the official MCP TypeScript SDK v2.
 */
export {
  DEFAULT_MCP_TIMEOUT_MS,
  DEFAULT_MCP_MAX_TOTAL_TIMEOUT_MS,
  resolveMcpServerParams,
} from './server-params.js';
export type {
  McpServerParams,
  McpStdioParams,
  McpHttpParams,
  McpSseParams,
  McpTimeoutParams,
  ResolvedMcpServerParams,
} from './server-params.js';
export { McpSession } from './mcp-session.js';
export type {
  McpSessionOptions,
  McpCallOptions,
  McpSignalOptions,
  McpToolDefinition,
} from './mcp-session.js';
export { McpTool, inputSchemaOf } from './mcp-tool.js';
export type { McpToolOptions } from './mcp-tool.js';
export {
  describeContentBlock,
  contentToText,
  callToolResultToValue,
  contentBlockToPart,
  partToContentBlock,
} from './mcp-result.js';
export { McpServerTools, mcpServerTools } from './mcp-server-tools.js';
export type { McpServerToolsOptions, McpToolProblem } from './mcp-server-tools.js';
export { createMcpServer, serveMcpStdio, createMcpHttpHandler } from './mcp-server-bridge.js';
export type {
  McpBridgeTools,
  McpBridgeOptions,
  ServeMcpStdioOptions,
  McpHttpHandlerOptions,
  McpHttpHandler,
  McpHttpRequest,
  McpStdioBridge,
  McpResumabilityOptions,
} from './mcp-server-bridge.js';
export {
  MemoryEventStore,
  DEFAULT_MAX_EVENTS_PER_SESSION,
  DEFAULT_MAX_EVENT_BYTES_PER_SESSION,
} from './memory-event-store.js';
export { parseMcpConfig, withConfigTokenStore } from './mcp-config.js';
export type { McpConfig, ParseMcpConfigOptions } from './mcp-config.js';
export { mcpToolType } from './mcp-tool-type.js';
export type { McpToolTypeOptions, McpToolTypeFactory } from './mcp-tool-type.js';
export { importMcpTools, schemaToArguments } from './import-mcp-tools.js';
export {
  McpOAuthGrant,
  DEFAULT_REFRESH_MARGIN_MS,
  MemoryMcpOAuthStore,
  ConfigMcpOAuthStore,
  MCP_OAUTH_CONFIG_TYPE,
  McpOAuthProvider,
  parseOAuthConfig,
  startLoopbackRedirect,
  DEFAULT_LOGIN_TIMEOUT_MS,
} from './oauth/index.js';
export type {
  McpOAuthOptions,
  McpAuthorizeRequest,
  McpOAuthRedirect,
  McpJwtAssertionRequest,
  McpTokenEndpointAuthMethod,
  ResolvedMcpOAuthOptions,
  McpOAuthStore,
  McpOAuthStoreRead,
  McpOAuthState,
  McpOAuthGrantSummary,
  McpConfigEnvironment,
  LoopbackRedirect,
  LoopbackRedirectOptions,
} from './oauth/index.js';
export { loginMcpServer, logoutMcpServer } from './mcp-login.js';
export type { LoginMcpServerOptions, McpLoginResult } from './mcp-login.js';
export type { ImportMcpToolsOptions, ImportedMcpTool } from './import-mcp-tools.js';
export { MAX_RESOURCE_SUBSCRIPTIONS } from './mcp-resources.js';
export {
  ResourceSet,
  PromptSet,
  parseUriTemplate,
  completeFrom,
  MAX_COMPLETION_VALUES,
} from '../../tools/index.js';
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
  PromptProvider,
  PromptInfo,
  PromptArgumentInfo,
  PromptMessage,
  PromptResult,
  PromptGetOptions,
  PromptValue,
  PromptEntry,
  CompletionSource,
  UriTemplate,
} from '../../tools/index.js';
export type {
  ToolClientFeatures,
  ToolLogLevel,
  ElicitationRequest,
  ElicitationResult,
  SamplingRequest,
  SamplingResult,
  SamplingMessage,
  SamplingContent,
  SamplingModelPreferences,
} from '../../tools/index.js';
