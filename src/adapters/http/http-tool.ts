/**
 * @module `HttpTool`: a tool that calls one HTTP endpoint, with AutoGen's fields and without its faults
 * (status checked, path parameters encoded, unset optionals not sent, real JSON back, cancellable).
 */
import { BaseTool, MAX_TIMER_MS, ToolError, onAbort } from '../../tools/index.js';
import { isToolbusError, ToolbusError } from '../../errors/index.js';
import type { ToolAnnotations, ToolCallContext } from '../../tools/index.js';
import type { JsonSchema, ParametersSource } from '../../schema/index.js';
import { checkHeaders, resolveHeaders } from './header-value.js';
import type { HeaderEnvironment, HttpHeaderValue } from './header-value.js';
import { isHostAllowed } from './host-allowlist.js';
import { HttpStatusError } from './http-status-error.js';
import { appendQueryParameter, headerParameterValue, resolveHttpParameters } from './http-parameters.js';
import type { HttpParameter, ResolvedHttpParameter } from './http-parameters.js';
import { readBodyCapped } from './read-body.js';
import { expandUrlTemplate, parseUrlTemplate, urlTemplateFromParts } from './url-template.js';
import type { UrlTemplate } from './url-template.js';

/** The HTTP methods an {@link HttpTool} can use. */
export const HttpMethod = {
  Get: 'GET',
  Post: 'POST',
  Put: 'PUT',
  Patch: 'PATCH',
  Delete: 'DELETE',
} as const;
/** One of {@link HttpMethod}'s values. */
export type HttpMethod = (typeof HttpMethod)[keyof typeof HttpMethod];

/** How an {@link HttpTool} returns the response body. */
export const HttpReturnType = {
  /** The body as text, unchanged. */
  Text: 'text',
  /** The body parsed as JSON; the tool result is that value (so its string form is real JSON text). */
  Json: 'json',
} as const;
/** One of {@link HttpReturnType}'s values. */
export type HttpReturnType = (typeof HttpReturnType)[keyof typeof HttpReturnType];

/** AutoGen's default timeout (5 s). */
export const DEFAULT_HTTP_TIMEOUT_MS = 5_000;
/** Responses larger than this are refused with `too-large` (1 MiB). */
export const DEFAULT_HTTP_MAX_RESPONSE_BYTES = 1_048_576;
/** Redirects followed before the call fails. */
export const DEFAULT_HTTP_MAX_REDIRECTS = 5;
/** How much of an error response's body goes into the error message. */
const ERROR_EXCERPT_BYTES = 512;

/** The parameter schema forms `BaseTool` accepts: raw JSON Schema, zod or Standard Schema. */
export type HttpToolParameters = ParametersSource;

/**
 * Options of {@link HttpTool}. Give either `url` (a template) or `host` (with `scheme`, `port` and
 * `path`, as AutoGen does). The config form with AutoGen's snake_case names is {@link HttpToolConfig}.
 */
export interface HttpToolOptions {
  /** The tool name the model sees (`^[a-zA-Z0-9_-]{1,64}$`). */
  name: string;
  /** @default 'HTTP tool' */
  description?: string;
  /**
   * The whole URL as a template, e.g. `https://api.example.com/v1/users/{id}`. Placeholders are allowed
   * after the origin only. Use this or `host`.
   * @default built from `scheme`, `host`, `port` and `path`
   */
  url?: string;
  /** @default 'http' */
  scheme?: 'http' | 'https';
  /** Host name or IP address, without scheme or port. Required unless `url` is given. */
  host?: string;
  /** @default the scheme's port (80 or 443) */
  port?: number;
  /** The path, with `{param}` placeholders. @default '/' */
  path?: string;
  /** @default 'POST' (as AutoGen) */
  method?: HttpMethod;
  /**
   * The arguments' schema. Every path placeholder, and every argument named by `queryParams`,
   * `headerParams` and `bodyParam`, must be a property of it; the other properties go into the query
   * (GET, DELETE) or the JSON body (POST, PUT, PATCH).
   * @default one required string property per path placeholder
   */
  jsonSchema?: HttpToolParameters;
  /**
   * Arguments always sent in the query string, whatever the method: names, or {@link HttpParameter}s
   * for another name on the wire or another OpenAPI `style` (by default `form` with `explode`: an
   * array as repeated keys, `status=a&status=b`).
   * @default []
   */
  queryParams?: readonly (string | HttpParameter)[];
  /**
   * Arguments sent as request headers (OpenAPI `simple` style: an array as `a,b`). A header that
   * `headers` sets cannot also come from an argument.
   * @default []
   */
  headerParams?: readonly (string | HttpParameter)[];
  /**
   * The argument whose value is the whole JSON request body (not allowed with GET). Without it, a set
   * `queryParams` or `headerParams` still leaves the other arguments in the JSON body of POST, PUT and
   * PATCH, and an empty body is then not sent; with it, the other arguments go into the query.
   * @default undefined (the JSON body is the object of the arguments not placed elsewhere)
   */
  bodyParam?: string;
  /**
   * Request headers: a static value, or `{ env: 'API_TOKEN', prefix: 'Bearer ' }` to read the value from
   * the environment on every call (for secrets that must not live in config).
   * @default {}
   */
  headers?: Readonly<Record<string, HttpHeaderValue>>;
  /** @default 'text' */
  returnType?: HttpReturnType;
  /** Time allowed for the whole call, body included. @default DEFAULT_HTTP_TIMEOUT_MS (5 000) */
  timeoutMs?: number;
  /** Larger responses fail with `too-large`; reading stops at the cap. @default DEFAULT_HTTP_MAX_RESPONSE_BYTES */
  maxResponseBytes?: number;
  /**
   * Hosts the tool may call, including after redirects: exact names or `*.example.com`. A configured
   * host outside the list is refused when the tool is built.
   * @default undefined (any host)
   */
  allowedHosts?: readonly string[];
  /** Redirects followed (each one checked against `allowedHosts`). @default DEFAULT_HTTP_MAX_REDIRECTS (5) */
  maxRedirects?: number;
  /** Where `{ env }` header values are read. @default process.env */
  env?: HeaderEnvironment;
  /** Ask the provider to enforce the schema exactly. @default false */
  strict?: boolean;
  /** @default derived from the method: GET is read-only and idempotent, PUT and DELETE idempotent */
  annotations?: ToolAnnotations;
  /** Words for search and profiles (see `Tool.tags`). @default none */
  tags?: readonly string[];
}

interface ResolvedHttpTool {
  template: UrlTemplate;
  method: HttpMethod;
  query: ResolvedHttpParameter[];
  headerParams: ResolvedHttpParameter[];
  bodyParam: string | undefined;
  /** True when any of queryParams, headerParams or bodyParam was given. */
  explicit: boolean;
  /** The arguments the path, queryParams, headerParams and bodyParam place. */
  placed: ReadonlySet<string>;
  headers: Record<string, HttpHeaderValue>;
  returnType: HttpReturnType;
  timeoutMs: number;
  maxResponseBytes: number;
  allowedHosts: readonly string[] | undefined;
  maxRedirects: number;
  env: HeaderEnvironment;
}

const METHODS: readonly string[] = Object.values(HttpMethod);
const SENSITIVE_HEADERS = ['authorization', 'cookie', 'proxy-authorization'];

/**
 * A tool that calls one HTTP endpoint with the model's arguments.
 *
 * - Path placeholders are percent-encoded (spaces, non-ASCII, `/` inside a value).
 * - `queryParams`, `headerParams` and `bodyParam` place arguments explicitly (as an OpenAPI operation
 *   does); GET and DELETE send the other arguments as the query, POST, PUT and PATCH as a JSON body.
 *   Arguments the model left out are not sent.
 * - A status outside 200–299 fails with {@link HttpStatusError} (`tool-error`) quoting the status and
 *   the start of the body.
 * - `returnType: 'json'` returns the parsed value, so the model sees real JSON text.
 *
 * `runJson` rejects with `invalid-arguments`, `tool-error`, `too-large`, `timeout`, `cancelled`,
 * `unavailable` (connection failed) or `invalid-config` (a header's environment variable is unset).
 *
 * @example
 * ```ts
 * const weather = new HttpTool({
 *   name: 'get-weather',
 *   description: 'Current weather for a city',
 *   url: 'https://api.example.com/weather/{city}',
 *   method: 'GET',
 *   jsonSchema: { type: 'object', properties: { city: { type: 'string' }, units: { type: 'string' } }, required: ['city'] },
 *   headers: { Authorization: { env: 'WEATHER_TOKEN', prefix: 'Bearer ' } },
 *   returnType: 'json',
 *   allowedHosts: ['api.example.com'],
 * });
 * ```
 */
export class HttpTool extends BaseTool {
  readonly #config: ResolvedHttpTool;

  /**
   * @throws ToolbusError `invalid-config` on a bad URL, method, header, limit, a host outside
   *   `allowedHosts`, or a path placeholder missing from `jsonSchema`.
   */
  constructor(options: HttpToolOptions) {
    const owner = `tool '${options.name}'`;
    const template = resolveTemplate(options, owner);
    const method = (options.method ?? HttpMethod.Post).toUpperCase();
    if (!METHODS.includes(method)) {
      throw new ToolbusError(
        'invalid-config',
        `${owner}: method must be one of ${METHODS.join(', ')}, got '${options.method}'`,
      );
    }
    const allowedHosts = options.allowedHosts === undefined ? undefined : [...options.allowedHosts];
    if (allowedHosts !== undefined) {
      const hostname = new URL(template.source.replace(/\{[^{}]*\}/g, 'x')).hostname;
      if (!isHostAllowed(hostname, allowedHosts)) {
        throw new ToolbusError(
          'invalid-config',
          `${owner}: host '${hostname}' is not in allowedHosts (${allowedHosts.map((h) => `'${h}'`).join(', ') || 'empty'})`,
        );
      }
    }
    super({
      name: options.name,
      description: options.description ?? 'HTTP tool',
      parameters: options.jsonSchema ?? defaultSchema(template.params),
      ...(options.strict === undefined ? {} : { strict: options.strict }),
      annotations: { ...defaultAnnotations(method as HttpMethod), ...options.annotations },
      ...(options.tags === undefined ? {} : { tags: options.tags }),
    });
    const properties = this.schema.parameters.properties;
    for (const param of template.params) {
      if (!Object.hasOwn(properties, param)) {
        throw new ToolbusError(
          'invalid-config',
          `${owner}: path placeholder '{${param}}' is not a property of jsonSchema; declare it (as a string)`,
        );
      }
    }
    const headers = checkHeaders(options.headers ?? {}, owner);
    const locations = resolveLocations(options, method as HttpMethod, template, properties, headers, owner);
    this.#config = {
      template,
      method: method as HttpMethod,
      ...locations,
      headers,
      returnType: checkReturnType(options.returnType, owner),
      timeoutMs: checkPositive(options.timeoutMs, DEFAULT_HTTP_TIMEOUT_MS, 'timeoutMs', owner),
      maxResponseBytes: checkPositive(
        options.maxResponseBytes,
        DEFAULT_HTTP_MAX_RESPONSE_BYTES,
        'maxResponseBytes',
        owner,
      ),
      allowedHosts,
      maxRedirects: checkNonNegative(options.maxRedirects, DEFAULT_HTTP_MAX_REDIRECTS, 'maxRedirects', owner),
      env: options.env ?? process.env,
    };
  }

  /** The HTTP method. */
  get method(): HttpMethod {
    return this.#config.method;
  }

  /** The URL template, e.g. `http://127.0.0.1:8080/items/{id}`. */
  get url(): string {
    return this.#config.template.source;
  }

  protected override async run(args: Record<string, unknown>, ctx: ToolCallContext): Promise<unknown> {
    const config = this.#config;
    const name = this.name;
    const url = expandUrlTemplate(config.template, args, name);
    const rest: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(args)) {
      if (!config.placed.has(key) && value !== undefined) rest[key] = value;
    }
    for (const parameter of config.query) {
      appendQueryParameter(url.searchParams, parameter, args[parameter.argument]);
    }
    let body: string | undefined;
    if (config.bodyParam !== undefined) {
      const value = args[config.bodyParam];
      if (value !== undefined && value !== null) body = JSON.stringify(value);
      for (const [key, value] of Object.entries(rest)) appendQuery(url.searchParams, key, value);
    } else if (config.method === 'GET' || config.method === 'DELETE') {
      for (const [key, value] of Object.entries(rest)) appendQuery(url.searchParams, key, value);
    } else if (!config.explicit || Object.keys(rest).length > 0) {
      body = JSON.stringify(rest);
    }
    const { values, secret, secretValues } = resolveHeaders(config.headers, config.env, name);
    const headers = new Headers();
    if (config.returnType === 'json') headers.set('accept', 'application/json');
    if (body !== undefined) headers.set('content-type', 'application/json');
    for (const parameter of config.headerParams) {
      const value = headerParameterValue(parameter, args[parameter.argument], name);
      if (value !== undefined) headers.set(parameter.name, value);
    }
    for (const [key, value] of Object.entries(values)) headers.set(key, value);

    // One controller for the request and the body: the caller's abort, the timeout and nothing else.
    const controller = new AbortController();
    let timedOut = false;
    // The signal may be shared by many calls (a caller's own, or none at all): one listener for them all.
    const unwatch = onAbort(ctx.signal, () => controller.abort(ctx.signal.reason));
    // Node fires a setTimeout longer than 2^31-1 ms after 1 ms: such a timeout (24.8 days) means none.
    const timer =
      config.timeoutMs > MAX_TIMER_MS
        ? undefined
        : setTimeout(() => {
            timedOut = true;
            controller.abort(
              new ToolError('timeout', `tool '${name}': timed out after ${config.timeoutMs} ms`, {
                toolName: name,
              }),
            );
          }, config.timeoutMs);
    const signal = controller.signal;
    const where = () => `${config.method} ${url.origin}${url.pathname}`;
    try {
      if (ctx.signal.aborted) controller.abort(ctx.signal.reason);
      const response = await this.#fetchFollowing(
        url,
        { method: config.method, headers, body, signal },
        secret,
      );
      const finalUrl = new URL(response.url || url.href);
      const describe = `${config.method} ${finalUrl.origin}${finalUrl.pathname}`;
      if (response.status < 200 || response.status > 299) {
        const { bytes, truncated } = await readBodyCapped(response, ERROR_EXCERPT_BYTES, true);
        // A server may echo the credentials it refused ("invalid token: …"): never quote them.
        const excerpt = redact(new TextDecoder().decode(bytes).trim(), secretValues) + (truncated ? '…' : '');
        throw new HttpStatusError(
          `tool '${name}': ${describe} returned HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ''}` +
            (excerpt ? `: ${excerpt}` : ' with an empty body'),
          { toolName: name, status: response.status, bodyExcerpt: excerpt },
        );
      }
      // A body that streams in is progress, for whoever listens (an agent's events, an MCP client).
      const progress = ctx.progress?.bind(ctx);
      const { bytes, truncated } = await readBodyCapped(
        response,
        config.maxResponseBytes,
        false,
        progress &&
          ((read, total) =>
            progress({
              progress: read,
              ...(total !== undefined ? { total } : {}),
              message: 'bytes received',
            })),
      );
      if (truncated) {
        throw new ToolError(
          'too-large',
          `tool '${name}': the response of ${describe} is larger than maxResponseBytes (${config.maxResponseBytes} bytes)`,
          { toolName: name },
        );
      }
      // An image or a sound is a content part: a vision model sees it, MCP clients get it as such.
      const mimeType = (response.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
      if (/^(image|audio)\/[\w.+-]+$/.test(mimeType) && bytes.byteLength > 0) {
        const type = mimeType.startsWith('image/') ? 'image' : 'audio';
        return { type, data: Buffer.from(bytes).toString('base64'), mimeType };
      }
      const text = new TextDecoder().decode(bytes);
      if (config.returnType === 'text') return text;
      if (text.trim() === '') return null;
      try {
        return JSON.parse(text) as unknown;
      } catch (error) {
        throw new ToolError(
          'tool-error',
          `tool '${name}': ${describe} returned a body that is not valid JSON (returnType is 'json'): ${excerptOf(redact(text, secretValues))}`,
          { toolName: name, cause: error },
        );
      }
    } catch (error) {
      throw this.#failure(error, ctx.signal, timedOut, where(), config.timeoutMs);
    } finally {
      clearTimeout(timer);
      unwatch();
    }
  }

  /** `fetch` with redirects followed by hand, so every hop is checked against `allowedHosts`. */
  async #fetchFollowing(
    start: URL,
    init: { method: HttpMethod; headers: Headers; body: string | undefined; signal: AbortSignal },
    secret: ReadonlySet<string>,
  ): Promise<Response> {
    const { allowedHosts, maxRedirects } = this.#config;
    let url = start;
    let { method, body } = init;
    const headers = new Headers(init.headers);
    for (let hop = 0; ; hop++) {
      const response = await fetch(url, {
        method,
        headers,
        body: body ?? null,
        signal: init.signal,
        redirect: 'manual',
      });
      const location = response.headers.get('location');
      if (![301, 302, 303, 307, 308].includes(response.status) || location === null) return response;
      await response.body?.cancel().catch(() => undefined);
      if (hop >= maxRedirects) {
        throw new ToolError(
          'tool-error',
          `tool '${this.name}': more than ${maxRedirects} redirects (maxRedirects) from ${start.origin}${start.pathname}`,
          { toolName: this.name },
        );
      }
      const next = new URL(location, url);
      if (next.protocol !== 'http:' && next.protocol !== 'https:') {
        throw new ToolError(
          'tool-error',
          `tool '${this.name}': redirected to a non-HTTP URL (${next.protocol})`,
          { toolName: this.name },
        );
      }
      if (allowedHosts !== undefined && !isHostAllowed(next.hostname, allowedHosts)) {
        throw new ToolError(
          'tool-error',
          `tool '${this.name}': redirected to host '${next.hostname}', which is not in allowedHosts`,
          { toolName: this.name },
        );
      }
      if (next.origin !== url.origin) {
        // Credentials never follow a redirect to another origin.
        for (const key of [...SENSITIVE_HEADERS, ...secret]) headers.delete(key);
      }
      if (
        response.status === 303 ||
        ((response.status === 301 || response.status === 302) && method === 'POST')
      ) {
        if (method !== 'GET') {
          method = 'GET';
          body = undefined;
          headers.delete('content-type');
        }
      }
      url = next;
    }
  }

  #failure(
    error: unknown,
    caller: AbortSignal,
    timedOut: boolean,
    where: string,
    timeoutMs: number,
  ): unknown {
    const name = this.name;
    if (caller.aborted) {
      const reason: unknown = caller.reason;
      if (isToolbusError(reason)) return reason;
      return new ToolError('cancelled', `tool '${name}': ${where} was cancelled`, {
        toolName: name,
        cause: reason,
      });
    }
    if (timedOut) {
      return new ToolError(
        'timeout',
        `tool '${name}': ${where} got no complete response within ${timeoutMs} ms (timeoutMs)`,
        {
          toolName: name,
          cause: error,
        },
      );
    }
    if (isToolbusError(error)) return error;
    const cause = (error as { cause?: { code?: unknown; message?: unknown } } | undefined)?.cause;
    const detail =
      typeof cause?.code === 'string'
        ? cause.code
        : typeof cause?.message === 'string'
          ? cause.message
          : String(error);
    return new ToolError('unavailable', `tool '${name}': ${where} failed: ${detail}`, {
      toolName: name,
      cause: error,
    });
  }
}

function resolveTemplate(options: HttpToolOptions, owner: string): UrlTemplate {
  if (options.url !== undefined) {
    if (options.host !== undefined || options.path !== undefined || options.port !== undefined) {
      throw new ToolbusError('invalid-config', `${owner}: give either url or host/port/path, not both`);
    }
    return parseUrlTemplate(options.url, owner);
  }
  if (options.host === undefined) {
    throw new ToolbusError('invalid-config', `${owner}: needs url, or host (with scheme, port and path)`);
  }
  return urlTemplateFromParts(
    { scheme: options.scheme ?? 'http', host: options.host, port: options.port, path: options.path ?? '/' },
    owner,
  );
}

/**
 * Checks `queryParams`, `headerParams` and `bodyParam`: each names a property of the schema, no argument
 * is placed twice (the path included), no header comes both from `headers` and from an argument.
 */
function resolveLocations(
  options: HttpToolOptions,
  method: HttpMethod,
  template: UrlTemplate,
  properties: Readonly<Record<string, unknown>>,
  headers: Readonly<Record<string, HttpHeaderValue>>,
  owner: string,
): Pick<ResolvedHttpTool, 'query' | 'headerParams' | 'bodyParam' | 'explicit' | 'placed'> {
  const query =
    options.queryParams === undefined
      ? []
      : resolveHttpParameters(options.queryParams, 'query', 'queryParams', owner);
  const headerParams =
    options.headerParams === undefined
      ? []
      : resolveHttpParameters(options.headerParams, 'header', 'headerParams', owner);
  const bodyParam = options.bodyParam;
  const placedBy = new Map<string, string>(template.params.map((p) => [p, 'the path']));
  const place = (argument: string, where: string): void => {
    const before = placedBy.get(argument);
    if (before !== undefined) {
      throw new ToolbusError(
        'invalid-config',
        `${owner}: argument '${argument}' is placed twice, in ${before} and in ${where}`,
      );
    }
    if (!Object.hasOwn(properties, argument)) {
      throw new ToolbusError(
        'invalid-config',
        `${owner}: argument '${argument}' of ${where} is not a property of jsonSchema; declare it`,
      );
    }
    placedBy.set(argument, where);
  };
  for (const p of query) place(p.argument, 'queryParams');
  for (const p of headerParams) {
    place(p.argument, 'headerParams');
    const configured = Object.keys(headers).find((h) => h.toLowerCase() === p.name.toLowerCase());
    if (configured !== undefined) {
      throw new ToolbusError(
        'invalid-config',
        `${owner}: header '${p.name}' is set by headers and cannot also come from an argument (headerParams)`,
      );
    }
  }
  if (bodyParam !== undefined) {
    if (typeof bodyParam !== 'string' || bodyParam === '') {
      throw new ToolbusError('invalid-config', `${owner}: bodyParam must be the name of an argument`);
    }
    if (method === 'GET') {
      throw new ToolbusError(
        'invalid-config',
        `${owner}: bodyParam is not allowed with GET (fetch sends no body)`,
      );
    }
    place(bodyParam, 'bodyParam');
  }
  return {
    query,
    headerParams,
    bodyParam,
    explicit:
      options.queryParams !== undefined || options.headerParams !== undefined || bodyParam !== undefined,
    placed: new Set(placedBy.keys()),
  };
}

function defaultSchema(params: readonly string[]): JsonSchema {
  return {
    type: 'object',
    properties: Object.fromEntries(params.map((p) => [p, { type: 'string' }])),
    required: [...params],
    additionalProperties: false,
  };
}

function defaultAnnotations(method: HttpMethod): ToolAnnotations {
  if (method === 'GET') return { readOnly: true, idempotent: true };
  if (method === 'PUT' || method === 'DELETE') return { idempotent: true };
  return {};
}

function checkReturnType(value: unknown, owner: string): HttpReturnType {
  if (value === undefined) return 'text';
  if (value === 'text' || value === 'json') return value;
  throw new ToolbusError(
    'invalid-config',
    `${owner}: returnType must be 'text' or 'json', got '${String(value)}'`,
  );
}

function checkPositive(value: number | undefined, fallback: number, field: string, owner: string): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new ToolbusError(
      'invalid-config',
      `${owner}: ${field} must be a positive number, got ${String(value)}`,
    );
  }
  return value;
}

function checkNonNegative(value: number | undefined, fallback: number, field: string, owner: string): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 0) {
    throw new ToolbusError(
      'invalid-config',
      `${owner}: ${field} must be a non-negative integer, got ${String(value)}`,
    );
  }
  return value;
}

/** Arrays repeat the key; objects are sent as JSON text; `null` is left out like an unset argument. */
function appendQuery(params: URLSearchParams, key: string, value: unknown): void {
  if (value === null || value === undefined) return;
  if (Array.isArray(value)) {
    for (const item of value) appendQuery(params, key, item);
    return;
  }
  params.append(key, typeof value === 'object' ? JSON.stringify(value) : String(value));
}

/** `text` with every secret header value replaced by `[redacted]`. */
function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) out = out.replaceAll(secret, '[redacted]');
  return out;
}

function excerptOf(text: string): string {
  const trimmed = text.trim();
  return trimmed.length > 200 ? `${trimmed.slice(0, 200)}…` : trimmed;
}
