/**
 * @module registry: config (and announced services) → a live tool set.
 */
export { ToolRegistry } from './tool-registry.js';
export { ConfigMirror } from './config-mirror.js';
export type { ConfigMirrorOptions } from './config-mirror.js';
export type { RegistryChange } from './tool-registry.js';
export type { RegistryService, RegistryServiceInstance, RegistryToolOrigin } from './registry-inventory.js';
export {
  DEFAULT_ANNOUNCEMENT_LIMITS,
  DEFAULT_REGISTRY_BUILD_TIMEOUT_MS,
  DEFAULT_REGISTRY_DEBOUNCE_MS,
  DEFAULT_REGISTRY_RETRY_MS,
} from './tool-registry-options.js';
export type { AnnouncementLimitsOptions, ToolRegistryOptions } from './tool-registry-options.js';
export { ProblemSeverity } from './tool-type.js';
export type { ToolTypeFactory, ToolTypeContext, RegistryProblem } from './tool-type.js';
export { textCompletionToolType, promptToolType, renderTemplate, parsePromptItem } from './model-tools.js';
export type { PromptItem } from './model-tools.js';
export { parseResourceItem, RESOURCE_CONFIG_TYPE } from './config-resources.js';
export type { ResourceItem, ResourceItemVariable } from './config-resources.js';
export { TOOL_TYPE_PROVIDERS } from './builtin-tool-types.js';
export {
  ALLOW_COMMANDS_VARIABLE,
  ALLOW_ENV_VARIABLE,
  assertConfigAllowed,
  configAllowlistFromEnv,
  configPrivileges,
} from './config-allowlist.js';
export type { ConfigAllowlist, ConfigPrivileges } from './config-allowlist.js';
