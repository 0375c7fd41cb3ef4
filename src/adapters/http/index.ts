/**
 * @module adapters/http: `HttpTool` (one HTTP endpoint as a tool), the `http` config tool type, and the
 * conversion of OpenAPI operations into such items. Uses only the platform `fetch`, so the root entry
 * exports it.
 */
export {
  HttpTool,
  HttpMethod,
  HttpReturnType,
  DEFAULT_HTTP_TIMEOUT_MS,
  DEFAULT_HTTP_MAX_RESPONSE_BYTES,
  DEFAULT_HTTP_MAX_REDIRECTS,
} from './http-tool.js';
export type { HttpToolOptions, HttpToolParameters } from './http-tool.js';
export { HttpStatusError } from './http-status-error.js';
export { httpToolFromConfig, httpToolOptionsFromConfig } from './http-tool-config.js';
export type { HttpToolConfig, HttpToolFromConfigOptions } from './http-tool-config.js';
export { httpToolType } from './http-tool-type.js';
export type { HttpToolTypeOptions, HttpToolTypeFactory } from './http-tool-type.js';
export type { HttpHeaderValue, EnvHeaderValue, HeaderEnvironment } from './header-value.js';
export { HttpParameterStyle } from './http-parameters.js';
export type { HttpParameter } from './http-parameters.js';
export {
  openApiToolConfigs,
  openApiServerUrl,
  openApiEnvName,
  DEFAULT_OPENAPI_MAX_SCHEMA_DEPTH,
  DEFAULT_OPENAPI_MAX_DESCRIPTION_LENGTH,
  OPENAPI_MAX_SCHEMA_NODES,
} from './openapi-tools.js';
export type { OpenApiToolsOptions, OpenApiToolItem, OpenApiTools } from './openapi-tools.js';
