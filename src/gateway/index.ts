/**
 * @module gateway: the HTTP API over tools, config and the agent, and the web console's files.
 */
export {
  createGateway,
  DEFAULT_MAX_BODY_BYTES,
  DEFAULT_HEADERS_TIMEOUT_MS,
  DEFAULT_BODY_TIMEOUT_MS,
  DEFAULT_MAX_CONNECTIONS,
} from './http-gateway.js';
export type {
  Gateway,
  GatewayDeniedEvent,
  GatewayOptions,
  GatewayListenOptions,
  GatewayMcpRequest,
} from './http-gateway.js';
export { isHttpsOrLoopbackUrl, isLoopbackHost } from './request-guard.js';
// The gateway as an OAuth 2.1 resource server: `createGateway({ oauth, publicUrl })`.
export { PROTECTED_RESOURCE_PATH, resolveResourceServer } from './protected-resource-route.js';
export type {
  GatewayOAuthOptions,
  ResolvedOAuthOptions,
  ResolvedResourceServer,
  ResourceServerOptions,
} from './protected-resource-route.js';
export type { GatewayAgent, GatewayAgentEvent, GatewayHistoryItem } from './agent-route.js';
export type { GatewayProblem } from './tool-routes.js';
export type { GatewayToolOrigin } from './tool-detail.js';
export type { GatewayConfigCheck, GatewayConfigFinding } from './config-routes.js';
export type { GatewayInspector, GatewayService, GatewaySystemInfo } from './system-routes.js';
// The live tool calls of `createGateway({ liveCalls })`: feed a LiveCalls with the tool set's hooks.
export { LiveCalls, LiveCallStatus } from '../observability/index.js';
export type {
  LiveCall,
  LiveCallEvent,
  LiveCallFeed,
  LiveCallProgress,
  LiveCallQuery,
  LiveCallRates,
  LiveCallsOptions,
} from '../observability/index.js';
export type { AuditEntry, AuditQuery, AuditReader, AuditRequest } from '../audit/index.js';
export { READINESS_CHECK_TIMEOUT_MS } from './ready-route.js';
export type { ReadinessCheck, ReadinessPart, ReadinessReport } from './ready-route.js';
export { createMetricsListener } from './metrics-route.js';
export type {
  GatewayMetrics,
  GatewayMetricsText,
  MetricsListener,
  MetricsListenerOptions,
} from './metrics-route.js';
// Who may call what: give `createGateway({ policy })` an AccessPolicy for named keys, roles, JWTs and quotas.
export { AccessPolicy, Role, ROLE_SCOPE_PREFIX } from '../policy/index.js';
export type {
  AccessDeniedEvent,
  AccessPolicyOptions,
  JwtOptions,
  JwtVerifyOptions,
  Permission,
  Principal,
} from '../policy/index.js';
