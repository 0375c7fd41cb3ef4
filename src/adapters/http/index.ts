/**
 * @module adapters/http: `HttpTool` (one HTTP endpoint as a tool) and the `http` config tool type. Uses
 * only the platform `fetch`, so the root entry exports it.
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
