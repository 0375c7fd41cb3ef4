/**
 * @module The config (JSON) form of the HTTP tool, with AutoGen's snake_case field names, and its
 * mapping to {@link HttpToolOptions}.
 */
import { ToolbusError } from '../../errors/index.js';
import type { JsonObject, JsonValue } from '../../schema/index.js';
import { checkToolTags } from '../../tools/index.js';
import type { HeaderEnvironment } from './header-value.js';
import { resolveHttpParameters } from './http-parameters.js';
import type { HttpParameter } from './http-parameters.js';
import { isHostAllowed } from './host-allowlist.js';
import { HttpTool } from './http-tool.js';
import type { HttpToolOptions } from './http-tool.js';

/**
 * An HTTP tool as stored in config (config type `tool`, `"type": "http"`), with AutoGen's field names.
 *
 * @example
 * ```json
 * {
 *   "type": "http", "name": "get-weather", "description": "Current weather for a city",
 *   "scheme": "https", "host": "api.example.com", "port": 443, "path": "/weather/{city}",
 *   "method": "GET", "return_type": "json", "timeout": 10,
 *   "json_schema": { "type": "object", "properties": { "city": { "type": "string" } }, "required": ["city"] },
 *   "headers": { "Authorization": { "env": "WEATHER_TOKEN", "prefix": "Bearer " } }
 * }
 * ```
 */
export interface HttpToolConfig {
  /** `"http"` when stored as a `tool` config item. */
  type?: 'http';
  name: string;
  /** @default 'HTTP tool' */
  description?: string;
  /** A whole URL template instead of `scheme`/`host`/`port`/`path`. */
  url?: string;
  /** @default 'http' */
  scheme?: 'http' | 'https';
  host?: string;
  /** @default the scheme's port */
  port?: number;
  /** @default '/' */
  path?: string;
  /** @default 'POST' */
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** @default one required string property per path placeholder */
  json_schema?: JsonObject;
  /**
   * Arguments always sent in the query string: names, or `{ "name", "argument"?, "style"?, "explode"? }`
   * (OpenAPI's query styles `form`, `spaceDelimited`, `pipeDelimited`, `deepObject`, or `json`).
   * @default []
   */
  query_params?: (string | HttpParameter)[];
  /** Arguments sent as headers, in the same form (styles `simple`, `json`). @default [] */
  header_params?: (string | HttpParameter)[];
  /** The argument whose value is the whole JSON request body. @default none */
  body_param?: string;
  /** Static strings or `{ "env": "NAME", "prefix"?: "..." }`. @default {} */
  headers?: Record<string, string | { env: string; prefix?: string }>;
  /** @default 'text' */
  return_type?: 'text' | 'json';
  /** Seconds, as in AutoGen. @default 5 */
  timeout?: number;
  /** @default DEFAULT_HTTP_MAX_RESPONSE_BYTES (1 048 576) */
  max_response_bytes?: number;
  /** @default any host */
  allowed_hosts?: string[];
  /** @default 5 */
  max_redirects?: number;
  /** @default false */
  strict?: boolean;
  /**
   * Words for search and profiles (`openapi:petstore`, `pet`): metadata, read by the registry; the HTTP
   * call does not use them.
   * @default []
   */
  tags?: string[];
}

/** Options of {@link httpToolFromConfig}. */
export interface HttpToolFromConfigOptions {
  /** Where `{ env }` header values are read. @default process.env */
  env?: HeaderEnvironment;
  /**
   * A deployment-wide allowlist. When set, the tool may call only these hosts, whatever the config's
   * own `allowed_hosts` says (a config list can narrow it, never widen it).
   * @default undefined (the config's `allowed_hosts`, else any host)
   */
  allowedHosts?: readonly string[];
  /** How errors name the item, e.g. `config 'tool/get-weather'`. @default `tool '<name>'` */
  owner?: string;
}

const FIELDS = [
  'type',
  'name',
  'description',
  'url',
  'scheme',
  'host',
  'port',
  'path',
  'method',
  'json_schema',
  'headers',
  'return_type',
  'timeout',
  'max_response_bytes',
  'allowed_hosts',
  'max_redirects',
  'strict',
  'query_params',
  'header_params',
  'body_param',
  'tags',
] as const;

/**
 * Maps the snake_case config form to {@link HttpToolOptions}, checking every field's type.
 *
 * @throws ToolbusError `invalid-config` naming the field, what was wrong and what was expected.
 */
export function httpToolOptionsFromConfig(
  config: Readonly<Record<string, unknown>>,
  options: HttpToolFromConfigOptions = {},
): HttpToolOptions {
  const name = config['name'];
  const owner = options.owner ?? (typeof name === 'string' ? `tool '${name}'` : 'http tool');
  const bad = (field: string, expected: string): never => {
    throw new ToolbusError(
      'invalid-config',
      `${owner}: field '${field}' must be ${expected}, got ${describe(config[field] as JsonValue)}`,
    );
  };
  if (typeof config !== 'object' || config === null || Array.isArray(config)) {
    throw new ToolbusError('invalid-config', `${owner}: an http tool must be a JSON object`);
  }
  for (const key of Object.keys(config)) {
    if (!(FIELDS as readonly string[]).includes(key)) {
      throw new ToolbusError(
        'invalid-config',
        `${owner}: unknown field '${key}'; expected one of ${FIELDS.map((f) => `'${f}'`).join(', ')}`,
      );
    }
  }
  const has = (field: string) => config[field] !== undefined;
  if (has('type') && config['type'] !== 'http') bad('type', "'http'");
  if (typeof name !== 'string' || name === '') bad('name', 'a non-empty string');
  const str = (field: string): string | undefined => {
    if (!has(field)) return undefined;
    return typeof config[field] === 'string' ? (config[field] as string) : bad(field, 'a string');
  };
  const num = (field: string, expected: string, ok: (n: number) => boolean): number | undefined => {
    if (!has(field)) return undefined;
    const value = config[field];
    return typeof value === 'number' && ok(value) ? value : bad(field, expected);
  };
  const out: HttpToolOptions = { name: name as string };
  const description = str('description');
  if (description !== undefined) out.description = description;
  const url = str('url');
  if (url !== undefined) out.url = url;
  const scheme = str('scheme');
  if (scheme !== undefined) {
    if (scheme !== 'http' && scheme !== 'https') bad('scheme', "'http' or 'https'");
    out.scheme = scheme as 'http' | 'https';
  }
  const host = str('host');
  if (host !== undefined) out.host = host;
  const port = num('port', 'an integer from 1 to 65535', (n) => Number.isInteger(n) && n >= 1 && n <= 65_535);
  if (port !== undefined) out.port = port;
  const path = str('path');
  if (path !== undefined) out.path = path;
  const method = str('method');
  if (method !== undefined) {
    const upper = method.toUpperCase();
    if (!['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].includes(upper)) {
      bad('method', "one of 'GET', 'POST', 'PUT', 'PATCH', 'DELETE'");
    }
    out.method = upper as HttpToolOptions['method'] & string;
  }
  if (has('json_schema')) {
    const schema = config['json_schema'];
    if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) {
      bad('json_schema', 'a JSON Schema object');
    }
    out.jsonSchema = schema as JsonObject;
  }
  if (has('headers')) {
    const headers = config['headers'];
    if (typeof headers !== 'object' || headers === null || Array.isArray(headers)) {
      bad('headers', 'an object of header names to values');
    }
    // Each value's shape is checked by HttpTool itself.
    out.headers = headers as HttpToolOptions['headers'] & object;
  }
  const returnType = str('return_type');
  if (returnType !== undefined) {
    if (returnType !== 'text' && returnType !== 'json') bad('return_type', "'text' or 'json'");
    out.returnType = returnType as 'text' | 'json';
  }
  const timeout = num('timeout', 'a positive number of seconds', (n) => Number.isFinite(n) && n > 0);
  if (timeout !== undefined) out.timeoutMs = Math.round(timeout * 1000);
  const maxBytes = num('max_response_bytes', 'a positive integer', (n) => Number.isInteger(n) && n > 0);
  if (maxBytes !== undefined) out.maxResponseBytes = maxBytes;
  const maxRedirects = num('max_redirects', 'a non-negative integer', (n) => Number.isInteger(n) && n >= 0);
  if (maxRedirects !== undefined) out.maxRedirects = maxRedirects;
  if (has('strict')) {
    if (typeof config['strict'] !== 'boolean') bad('strict', 'true or false');
    out.strict = config['strict'] as boolean;
  }
  // Each entry's shape is checked here under its config name; HttpTool checks where they point.
  if (has('query_params')) {
    out.queryParams = resolveHttpParameters(config['query_params'], 'query', 'query_params', owner);
  }
  if (has('header_params')) {
    out.headerParams = resolveHttpParameters(config['header_params'], 'header', 'header_params', owner);
  }
  const bodyParam = str('body_param');
  if (bodyParam !== undefined) {
    if (bodyParam === '') bad('body_param', 'the name of an argument');
    out.bodyParam = bodyParam;
  }
  if (has('tags')) {
    try {
      out.tags = checkToolTags(config['tags'], `${owner}: field 'tags'`);
    } catch (error) {
      throw new ToolbusError('invalid-config', (error as Error).message, { cause: error });
    }
  }
  let configHosts: string[] | undefined;
  if (has('allowed_hosts')) {
    const hosts = config['allowed_hosts'];
    if (!Array.isArray(hosts) || !hosts.every((h) => typeof h === 'string' && h !== '')) {
      bad('allowed_hosts', 'an array of host names');
    }
    configHosts = [...(hosts as string[])];
  }
  if (options.allowedHosts !== undefined) {
    out.allowedHosts = [...options.allowedHosts];
    if (configHosts !== undefined) {
      // Both lists hold for every hop, redirects included: keep only what each of them allows.
      out.allowedHosts = intersectHosts(configHosts, options.allowedHosts);
      // The config may narrow the deployment's list: its own host must pass both lists.
      const hostname = configuredHostname(out);
      if (hostname !== undefined && !isHostAllowed(hostname, configHosts)) {
        throw new ToolbusError(
          'invalid-config',
          `${owner}: host '${hostname}' is not in allowed_hosts (${configHosts.map((h) => `'${h}'`).join(', ')})`,
        );
      }
    }
  } else if (configHosts !== undefined) {
    out.allowedHosts = configHosts;
  }
  if (options.env !== undefined) out.env = options.env;
  return out;
}

/**
 * Builds an {@link HttpTool} from its config form.
 *
 * @throws ToolbusError `invalid-config` (see {@link httpToolOptionsFromConfig} and {@link HttpTool}).
 * @example
 * ```ts
 * const tool = httpToolFromConfig({ name: 'ping', url: 'http://127.0.0.1:8080/ping', method: 'GET' });
 * ```
 */
export function httpToolFromConfig(
  config: Readonly<Record<string, unknown>>,
  options: HttpToolFromConfigOptions = {},
): HttpTool {
  return new HttpTool(httpToolOptionsFromConfig(config, options));
}

function describe(value: JsonValue | undefined): string {
  if (value === undefined) return 'nothing';
  const text = JSON.stringify(value);
  return text.length > 60 ? `${text.slice(0, 60)}…` : text;
}

/** True when every host `entry` matches is also matched by `list` (exact names and `*.domain` rules). */
function coveredBy(entry: string, list: readonly string[]): boolean {
  if (!entry.startsWith('*.')) return isHostAllowed(entry, list);
  const domain = entry.slice(2).toLowerCase();
  return list.some((rule) => {
    if (!rule.startsWith('*.')) return false;
    const outer = rule.slice(2).toLowerCase();
    return domain === outer || domain.endsWith(`.${outer}`);
  });
}

/** The rules of `a` covered by `b` plus those of `b` covered by `a`: what both lists allow. */
function intersectHosts(a: readonly string[], b: readonly string[]): string[] {
  return [...new Set([...a.filter((h) => coveredBy(h, b)), ...b.filter((h) => coveredBy(h, a))])];
}

function configuredHostname(options: HttpToolOptions): string | undefined {
  if (options.host !== undefined) return options.host;
  if (options.url === undefined) return undefined;
  try {
    return new URL(options.url.replace(/\{[^{}]*\}/g, 'x')).hostname;
  } catch {
    return undefined; // HttpTool reports the bad URL.
  }
}
