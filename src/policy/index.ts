/**
 * @module policy: identity, roles, tool policy and quotas — who a request is, what it may call, as whom
 * and how often. The gateway, `/mcp` and the agent all ask one {@link AccessPolicy}.
 */
export { AccessPolicy } from './access-policy.js';
export type {
  AccessDeniedEvent,
  AccessPolicyOptions,
  Admission,
  Permission,
  PolicyProblem,
} from './access-policy.js';
export { policyTools, toolsMatching } from './policy-tools.js';
export type { ObservableToolProvider, PolicyToolsOptions } from './policy-tools.js';
export {
  Role,
  isRole,
  DEFAULT_MAX_IN_FLIGHT,
  PRINCIPAL_CONFIG_TYPE,
  ROLE_CONFIG_TYPE,
  QUOTA_CONFIG_TYPE,
  newPrincipalToken,
  hashToken,
  checkPrincipalName,
  decodePrincipalItem,
  decodeRoleItem,
  decodeQuotaItem,
  splitList,
} from './principal.js';
export type { Principal, PrincipalItem, RoleSettings, StoredPrincipal, ToolQuota } from './principal.js';
export { createJwtVerifier, looksLikeJwt, ROLE_SCOPE_PREFIX } from './jwt-verifier.js';
export type { JwtOptions, JwtVerifier, JwtVerifyOptions } from './jwt-verifier.js';
export { parseRate, TokenBucket } from './rate-limit.js';
export type { Rate } from './rate-limit.js';
