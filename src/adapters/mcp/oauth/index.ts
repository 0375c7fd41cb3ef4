/**
 * @module The OAuth 2.1 client of MCP servers over HTTP: the `oauth` option, where its state is kept,
 * the provider the SDK's transports use, the loopback redirect of `toolbus mcp login`, and the
 * `oauth` object of `mcp/<id>` config items.
 */
export {
  McpOAuthGrant,
  DEFAULT_REFRESH_MARGIN_MS,
  DEFAULT_REDIRECT_URL,
  resolveMcpOAuthOptions,
} from './oauth-options.js';
export type {
  McpOAuthOptions,
  McpAuthorizeRequest,
  McpOAuthRedirect,
  McpJwtAssertionRequest,
  McpTokenEndpointAuthMethod,
  ResolvedMcpOAuthOptions,
} from './oauth-options.js';
export { MemoryMcpOAuthStore, ConfigMcpOAuthStore, MCP_OAUTH_CONFIG_TYPE } from './oauth-store.js';
export type { McpOAuthStore, McpOAuthStoreRead, McpOAuthState } from './oauth-store.js';
export { McpOAuthProvider } from './oauth-provider.js';
export type { McpOAuthGrantSummary } from './oauth-provider.js';
export { oauthError, isAuthFailure } from './oauth-errors.js';
export { parseOAuthConfig } from './oauth-config.js';
export type { McpConfigEnvironment } from './oauth-config.js';
export { startLoopbackRedirect, DEFAULT_LOGIN_TIMEOUT_MS } from './loopback-redirect.js';
export type { LoopbackRedirect, LoopbackRedirectOptions } from './loopback-redirect.js';
