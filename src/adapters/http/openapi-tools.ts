/**
 * @module OpenAPI 3.0 and 3.1 operations as `http` tool config items. A pure conversion of a parsed and
 * dereferenced document: no I/O and no parser here (`toolbus openapi import` reads and dereferences the
 * file with `@readme/openapi-parser`, then calls {@link openApiToolConfigs}).
 */
import { ToolbusError, didYouMean } from '../../errors/index.js';
import type { JsonObject, JsonValue } from '../../schema/index.js';
import { MAX_TOOL_TAGS, TOOL_TAG_PATTERN } from '../../tools/index.js';
import type { HttpParameter } from './http-parameters.js';

/** Nesting levels of a parameter or body schema that are described; deeper ones accept any value. */
export const DEFAULT_OPENAPI_MAX_SCHEMA_DEPTH = 10;
/** Longest tool description (summary and description together); longer ones are cut with `…`. */
export const DEFAULT_OPENAPI_MAX_DESCRIPTION_LENGTH = 1_024;
/** Most schema nodes one tool's arguments describe; the rest accept any value (a guard for huge specs). */
export const OPENAPI_MAX_SCHEMA_NODES = 2_000;

/** Options of {@link openApiToolConfigs}. */
export interface OpenApiToolsOptions {
  /**
   * Put before every operation's name to make the tool name (then made valid: `^[a-zA-Z0-9_-]{1,64}$`).
   * @default `<id>-`
   */
  prefix?: string;
  /**
   * The API's base URL (absolute, http or https), instead of the document's servers: needed when the
   * document's server is relative (`/api/v3`) or points elsewhere (a test server, a proxy).
   * @default openApiServerUrl(document), or an operation's own absolute server
   */
  serverUrl?: string;
  /**
   * Convert only these operations: operationIds (or, for an operation without one, its generated name
   * such as `get_pet_petId`), or tool names. Names that match nothing come back in `missing`.
   * @default every operation
   */
  include?: readonly string[];
  /**
   * The environment variable each security scheme's secret is read from, by scheme name. Naming an
   * `oauth2` or `openIdConnect` scheme here sends that variable as a bearer token (an access token you
   * got yourself: no OAuth flow is run).
   * @default openApiEnvName(id, scheme) for each supported scheme, e.g. `PETSTORE_API_KEY`
   */
  authEnv?: Readonly<Record<string, string>>;
  /** @default DEFAULT_OPENAPI_MAX_SCHEMA_DEPTH (10) */
  maxSchemaDepth?: number;
  /** @default DEFAULT_OPENAPI_MAX_DESCRIPTION_LENGTH (1 024) */
  maxDescriptionLength?: number;
}

/** One converted operation: a `tool/<key>` config item of type `http`. */
export interface OpenApiToolItem {
  /** The config key, which is also the tool name, e.g. `petstore-getPetById`. */
  key: string;
  /** The operationId, or the name generated from method and path when it has none. */
  operation: string;
  /** Upper case, e.g. `GET`. */
  method: string;
  /** As in the document, e.g. `/pet/{petId}`. */
  path: string;
  /** The item: {@link HttpToolConfig} fields plus `tags`. */
  value: JsonObject;
  /** The environment variables its headers read (for the allowlist). */
  env: string[];
}

/** What {@link openApiToolConfigs} produced. */
export interface OpenApiTools {
  /** The tools, in document order. */
  items: OpenApiToolItem[];
  /** One line for each thing left out or changed: a skipped operation, an unsupported scheme, … */
  warnings: string[];
  /** Names in `include` that match no operation (a typo, a renamed operation): nothing was made for them. */
  missing: string[];
  /** Every operation's name (operationId or generated), for suggestions. */
  operations: string[];
}

type Json = JsonValue;
type Obj = { [key: string]: unknown };

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;
const TOOL_METHODS = new Set(['get', 'put', 'post', 'delete', 'patch']);
const TOOL_NAME_MAX = 64;
const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** Header parameters OpenAPI says to ignore: the tool sets these itself. */
const IGNORED_HEADERS = new Set(['accept', 'content-type', 'authorization']);
/** JSON Schema keywords whose values are copied unchanged. */
const COPIED = [
  'const',
  'format',
  'title',
  'description',
  'default',
  'pattern',
  'minLength',
  'maxLength',
  'minimum',
  'maximum',
  'multipleOf',
  'minItems',
  'maxItems',
  'uniqueItems',
  'minContains',
  'maxContains',
  'minProperties',
  'maxProperties',
  'dependentRequired',
  'contentMediaType',
  'contentEncoding',
  'deprecated',
] as const;
/** Keywords holding one subschema. */
const SUBSCHEMA = ['additionalProperties', 'propertyNames', 'contains', 'not', 'if', 'then', 'else'] as const;
/** Keywords holding a list of subschemas. */
const SUBSCHEMA_LISTS = ['allOf', 'anyOf', 'oneOf', 'prefixItems'] as const;
/** Keywords holding a map of subschemas. */
const SUBSCHEMA_MAPS = ['patternProperties', 'dependentSchemas'] as const;

function isObj(value: unknown): value is Obj {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}

/** A JSON copy of a plain value from the document (examples, defaults, enums): no functions, no cycles. */
function jsonCopy(value: unknown): Json | undefined {
  try {
    const json = JSON.stringify(value);
    return json === undefined ? undefined : (JSON.parse(json) as Json);
  } catch {
    return undefined; // a cycle: leave the keyword out
  }
}

/**
 * The first server's URL of the document, with its variables' defaults filled in; it may be relative
 * (`/api/v3`), which a tool cannot call. `undefined` when the document names no server.
 */
export function openApiServerUrl(document: unknown): string | undefined {
  const servers = isObj(document) ? document['servers'] : undefined;
  return Array.isArray(servers) ? serverUrlOf(servers[0]) : undefined;
}

function serverUrlOf(server: unknown): string | undefined {
  if (!isObj(server) || typeof server['url'] !== 'string') return undefined;
  const variables = isObj(server['variables']) ? server['variables'] : {};
  return server['url'].replace(/\{([^{}]+)\}/g, (whole, name: string) => {
    const variable = variables[name];
    return isObj(variable) && typeof variable['default'] === 'string' ? variable['default'] : whole;
  });
}

function isAbsoluteHttpUrl(url: string): boolean {
  if (/\{[^{}]*\}/.test(url)) return false;
  try {
    const parsed = new URL(url);
    return parsed.protocol === 'http:' || parsed.protocol === 'https:';
  } catch {
    return false;
  }
}

/** Upper snake case: `bearerAuth` → `BEARER_AUTH`, `api-key` → `API_KEY`. */
function upperSnake(name: string): string {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/[^A-Za-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .toUpperCase();
}

/**
 * The environment variable a security scheme's secret is read from by default: `<ID>_<SCHEME>` in upper
 * snake case (`petstore` + `api_key` → `PETSTORE_API_KEY`, + `bearerAuth` → `PETSTORE_BEARER_AUTH`);
 * the id is not repeated when the scheme's name already starts with it (`petstore_auth` →
 * `PETSTORE_AUTH`).
 */
export function openApiEnvName(id: string, scheme: string): string {
  const prefix = upperSnake(id);
  const own = upperSnake(scheme) || 'TOKEN';
  const name = own === prefix || own.startsWith(`${prefix}_`) ? own : `${prefix}_${own}`;
  return /^[0-9]/.test(name) ? `_${name}` : name;
}

/** A name made of `[a-zA-Z0-9_-]`, at most 64 characters (a hash keeps cut names apart). */
function toolNameOf(raw: string): string {
  const clean = raw.replace(/[^a-zA-Z0-9_-]/g, '_') || 'operation';
  if (clean.length <= TOOL_NAME_MAX) return clean;
  return `${clean.slice(0, TOOL_NAME_MAX - 9)}-${fnv1a(raw)}`;
}

/** FNV-1a, 32 bits, as 8 hex digits: a short deterministic suffix (not a security measure). */
function fnv1a(value: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < value.length; i++) {
    hash ^= value.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash.toString(16).padStart(8, '0');
}

/** The name of an operation without an operationId: `get /pet/{petId}/uploadImage` → `get_pet_petId_uploadImage`. */
function generatedName(method: string, path: string): string {
  const segments = path
    .split('/')
    .map((s) => s.replace(/[{}]/g, ''))
    .filter(Boolean);
  return `${method}_${segments.join('_') || 'root'}`.replace(/[^a-zA-Z0-9_-]/g, '_');
}

/** An argument name the model and the URL template accept: `^[A-Za-z_][A-Za-z0-9_-]*$`, at most 64. */
function argumentNameOf(raw: string): string {
  let name = raw.replace(/[^A-Za-z0-9_-]/g, '_');
  if (!/^[A-Za-z_]/.test(name)) name = `_${name}`;
  return name.slice(0, TOOL_NAME_MAX);
}

function unique(base: string, taken: ReadonlySet<string>, suffix?: string): string {
  if (!taken.has(base)) return base;
  const first = suffix === undefined ? undefined : `${base}_${suffix}`;
  if (first !== undefined && !taken.has(first)) return first;
  for (let n = 2; ; n++) {
    const candidate = `${first ?? base}_${n}`;
    if (!taken.has(candidate)) return candidate;
  }
}

/** One tag as the registry accepts it (`TOOL_TAG_PATTERN`), or `undefined` when nothing is left. */
function tagOf(raw: unknown): string | undefined {
  if (typeof raw !== 'string') return undefined;
  const tag = raw
    .trim()
    .replace(/[^A-Za-z0-9_.:/-]+/g, '-')
    .replace(/^[^A-Za-z0-9]+/, '')
    .slice(0, 64);
  return TOOL_TAG_PATTERN.test(tag) ? tag : undefined;
}

interface SchemaContext {
  maxDepth: number;
  /** Schemas being converted (the path from the root): a schema met again is a recursion. */
  stack: Set<object>;
  nodes: number;
  truncated: boolean;
  unresolved: Set<string>;
}

/**
 * An OpenAPI schema (3.0 or 3.1, already dereferenced) as plain JSON Schema 2020-12 for a request:
 * 3.0's `nullable`, boolean `exclusiveMinimum`/`exclusiveMaximum` and `example` are rewritten, `readOnly`
 * properties are left out (a client does not send them), `xml`, `discriminator`, `externalDocs` and
 * `x-` extensions are dropped. A schema that contains itself is expanded once along each path; nesting
 * beyond `maxDepth` accepts any value of its type.
 */
function convertSchema(schema: unknown, depth: number, ctx: SchemaContext): JsonObject {
  if (schema === true || schema === undefined) return {};
  if (schema === false) return { not: {} };
  if (!isObj(schema)) return {};
  const type = schema['type'];
  const shallow = (): JsonObject => {
    const out: JsonObject = {};
    const copied = jsonCopy(type);
    if (typeof copied === 'string' || Array.isArray(copied)) out['type'] = copied;
    const description = text(schema['description']);
    if (description !== undefined) out['description'] = description;
    return out;
  };
  if (ctx.stack.has(schema)) return shallow();
  if (depth > ctx.maxDepth || ctx.nodes >= OPENAPI_MAX_SCHEMA_NODES) {
    ctx.truncated = true;
    return shallow();
  }
  ctx.nodes++;
  ctx.stack.add(schema);
  try {
    const out: JsonObject = {};
    const ref = schema['$ref'];
    if (typeof ref === 'string') ctx.unresolved.add(ref);
    const nullable = schema['nullable'] === true;
    if (typeof type === 'string' || Array.isArray(type)) {
      const types = (Array.isArray(type) ? type : [type]).filter((t): t is string => typeof t === 'string');
      if (nullable && !types.includes('null')) types.push('null');
      out['type'] = types.length === 1 ? types[0]! : types;
    }
    if (Array.isArray(schema['enum'])) {
      const values = (jsonCopy(schema['enum']) as Json[] | undefined) ?? [];
      if (nullable && !values.includes(null)) values.push(null);
      out['enum'] = values;
    }
    for (const key of COPIED) {
      if (schema[key] === undefined) continue;
      const value = jsonCopy(schema[key]);
      if (value !== undefined)
        out[key] = key === 'description' && typeof value === 'string' ? value.trim() : value;
    }
    for (const [exclusive, bound] of [
      ['exclusiveMinimum', 'minimum'],
      ['exclusiveMaximum', 'maximum'],
    ] as const) {
      const value = schema[exclusive];
      if (typeof value === 'number') out[exclusive] = value;
      else if (value === true && typeof schema[bound] === 'number') {
        // OpenAPI 3.0 (JSON Schema draft 4): a flag on `minimum`/`maximum`.
        out[exclusive] = schema[bound];
        delete out[bound];
      }
    }
    if (Array.isArray(schema['examples'])) {
      const examples = jsonCopy(schema['examples']);
      if (examples !== undefined) out['examples'] = examples;
    } else if (schema['example'] !== undefined) {
      const example = jsonCopy(schema['example']);
      if (example !== undefined) out['examples'] = [example];
    }
    if (isObj(schema['properties'])) {
      const properties: JsonObject = {};
      const left: string[] = [];
      for (const [name, property] of Object.entries(schema['properties'])) {
        if (isObj(property) && property['readOnly'] === true) {
          left.push(name);
          continue;
        }
        properties[name] = convertSchema(property, depth + 1, ctx);
      }
      out['properties'] = properties;
      if (Array.isArray(schema['required'])) {
        const required = schema['required'].filter(
          (r): r is string => typeof r === 'string' && !left.includes(r),
        );
        if (required.length > 0) out['required'] = required;
      }
    } else if (Array.isArray(schema['required'])) {
      const required = schema['required'].filter((r): r is string => typeof r === 'string');
      if (required.length > 0) out['required'] = required;
    }
    const items = schema['items'];
    if (Array.isArray(items)) out['prefixItems'] = items.map((s) => convertSchema(s, depth + 1, ctx));
    else if (items !== undefined) out['items'] = convertSchema(items, depth + 1, ctx);
    for (const key of SUBSCHEMA) {
      const value = schema[key];
      if (value === undefined) continue;
      out[key] = typeof value === 'boolean' ? value : convertSchema(value, depth + 1, ctx);
    }
    for (const key of SUBSCHEMA_LISTS) {
      const value = schema[key];
      // A draft-4 tuple `items` (above) already became `prefixItems`.
      if (Array.isArray(value) && out[key] === undefined) {
        out[key] = value.map((s) => convertSchema(s, depth + 1, ctx));
      }
    }
    for (const key of SUBSCHEMA_MAPS) {
      const value = schema[key];
      if (!isObj(value)) continue;
      const map: JsonObject = {};
      for (const [name, sub] of Object.entries(value)) map[name] = convertSchema(sub, depth + 1, ctx);
      out[key] = map;
    }
    return out;
  } finally {
    ctx.stack.delete(schema);
  }
}

/** How one security scheme is sent: headers with values from the environment, or why it cannot be. */
type SchemeAuth =
  | { headers: [string, { env: string; prefix?: string }][]; env: string }
  | { unsupported: string; type: string };

function schemeAuth(
  name: string,
  scheme: unknown,
  id: string,
  authEnv: Readonly<Record<string, string>>,
): SchemeAuth {
  if (!isObj(scheme)) {
    return { type: 'undefined', unsupported: 'it is not defined in components.securitySchemes' };
  }
  const type = typeof scheme['type'] === 'string' ? scheme['type'] : 'unknown';
  const given = authEnv[name];
  const env = given ?? openApiEnvName(id, name);
  if (type === 'apiKey') {
    const header = typeof scheme['name'] === 'string' ? scheme['name'] : '';
    if (scheme['in'] === 'header' && header !== '') return { headers: [[header, { env }]], env };
    if (scheme['in'] === 'cookie' && /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(header)) {
      return { headers: [['Cookie', { env, prefix: `${header}=` }]], env };
    }
    if (scheme['in'] === 'query') {
      return {
        type: 'apiKey in query',
        unsupported:
          'an HTTP tool reads secrets from the environment into headers only, so a key in the query ' +
          'string would have to be stored in config; use a header key if the API takes one, or a proxy that adds it',
      };
    }
    return { type, unsupported: `an apiKey needs 'in' (header, query or cookie) and a 'name'` };
  }
  if (type === 'http') {
    const kind = typeof scheme['scheme'] === 'string' ? scheme['scheme'].toLowerCase() : '';
    if (kind === 'bearer') return { headers: [['Authorization', { env, prefix: 'Bearer ' }]], env };
    // The variable holds base64("user:password"), as the header carries it.
    if (kind === 'basic') return { headers: [['Authorization', { env, prefix: 'Basic ' }]], env };
    return {
      type: `http ${kind || '(no scheme)'}`,
      unsupported: 'only the bearer and basic HTTP schemes are supported',
    };
  }
  if (type === 'oauth2' || type === 'openIdConnect') {
    if (given !== undefined) return { headers: [['Authorization', { env, prefix: 'Bearer ' }]], env };
    return {
      type,
      unsupported:
        'toolbus runs no OAuth flow; with an access token you got yourself, name a variable for this ' +
        `scheme (--auth-env ${name}=VARIABLE) to send it as 'Authorization: Bearer <token>'`,
    };
  }
  if (type === 'mutualTLS') {
    return { type, unsupported: 'the HTTP tool sends no client certificate' };
  }
  return { type, unsupported: `unknown security scheme type '${type}'` };
}

interface Operation {
  method: string;
  path: string;
  pathItem: Obj;
  operation: Obj;
  name: string;
}

interface AuthChoice {
  headers: Record<string, { env: string; prefix?: string }>;
  env: string[];
  /** The schemes that could not be sent, when the operation goes without auth for want of them. */
  refused: Map<string, { type: string; reason: string }>;
}

/**
 * Converts every operation of an OpenAPI 3.0 or 3.1 document (parsed, with its `$ref`s dereferenced) into
 * one `http` tool item:
 *
 * - **name**: `<prefix><operationId>` (default prefix `<id>-`), made valid for a tool name (other
 *   characters become `_`, names over 64 characters are cut and end in a hash); an operation without
 *   an operationId is named from its method and path (`get_pet_petId`); a name already taken gets `_2`,
 *   `_3`, … in document order, whatever `include` selects.
 * - **arguments**: path, query and header parameters by name, the JSON request body as the argument
 *   `body`, each with its description, `required`, enums and the rest of its schema (see
 *   `maxSchemaDepth`); their locations go into `query_params`, `header_params` and `body_param`.
 * - **auth**: the operation's (or the document's) `security`, the first alternative whose schemes are
 *   all supported: `http` bearer/basic as `Authorization`, `apiKey` in a header as that header, in a
 *   cookie as `Cookie`, each read from an environment variable (`authEnv`, else
 *   {@link openApiEnvName}); never a secret's value.
 * - **tags**: `openapi:<id>` and the operation's tags; **return type** `json` when the success response
 *   is JSON; `allowed_hosts` the server's host.
 *
 * Left out, each with a line in `warnings`: HEAD, OPTIONS and TRACE operations, a request body that is
 * not `application/json`, a GET with a body, a required cookie parameter, a path parameter in `label`
 * or `matrix` style; optional cookie parameters; auth the tool cannot send (apiKey in the query,
 * oauth2 and openIdConnect unless `authEnv` names them, mutualTLS, other HTTP schemes: the tools are
 * made without it). Webhooks and callbacks are not operations one calls, and are ignored.
 *
 * @throws ToolbusError `invalid-config` when the document is not OpenAPI 3 or its server is not an
 *   absolute URL (and no `serverUrl` was given); `invalid-arguments` for a bad `id`, `prefix`,
 *   `serverUrl`, or an `authEnv` entry naming no scheme of the document or a bad variable name.
 * @example
 * ```ts
 * const { items, warnings } = openApiToolConfigs(dereferencedSpec, 'petstore', { serverUrl: 'http://127.0.0.1:8080/api/v3' });
 * for (const item of items) await store.put('tool', item.key, item.value);
 * ```
 */
export function openApiToolConfigs(
  document: unknown,
  id: string,
  options: OpenApiToolsOptions = {},
): OpenApiTools {
  if (!ID_PATTERN.test(id)) {
    throw new ToolbusError(
      'invalid-arguments',
      `the id '${id}' must be 1 to 32 letters, digits, '_' or '-', starting with a letter or digit`,
    );
  }
  const prefix = options.prefix ?? `${id}-`;
  if (!/^[A-Za-z0-9_-]{0,48}$/.test(prefix)) {
    throw new ToolbusError(
      'invalid-arguments',
      `the prefix '${prefix}' must be at most 48 letters, digits, '_' or '-'`,
    );
  }
  const doc = checkDocument(document);
  const warnings: string[] = [];
  const version = String(doc['openapi']);
  if (!/^3\.[01]\./.test(version)) warnings.push(`OpenAPI ${version} is read as OpenAPI 3.1`);

  let baseUrl = options.serverUrl;
  if (baseUrl !== undefined) {
    if (!isAbsoluteHttpUrl(baseUrl)) {
      throw new ToolbusError(
        'invalid-arguments',
        `the server URL '${baseUrl}' must be an absolute http:// or https:// URL`,
      );
    }
  } else {
    baseUrl = openApiServerUrl(doc);
    if (baseUrl === undefined || !isAbsoluteHttpUrl(baseUrl)) {
      throw new ToolbusError(
        'invalid-config',
        baseUrl === undefined
          ? 'the spec names no server: give the URL the API is served at (serverUrl)'
          : `the spec's server URL '${baseUrl}' is not an absolute http(s) URL: give the URL the API is served at (serverUrl)`,
      );
    }
  }
  checkServerUrl(baseUrl);

  const schemes =
    isObj(doc['components']) && isObj(doc['components']['securitySchemes'])
      ? doc['components']['securitySchemes']
      : {};
  const authEnv = options.authEnv ?? {};
  for (const [scheme, variable] of Object.entries(authEnv)) {
    if (!Object.hasOwn(schemes, scheme)) {
      const names = Object.keys(schemes);
      throw new ToolbusError(
        'invalid-arguments',
        `the spec has no security scheme '${scheme}'${didYouMean(scheme, names)}; ` +
          (names.length > 0 ? `its schemes: ${names.join(', ')}` : 'it defines none'),
      );
    }
    if (!ENV_NAME.test(variable)) {
      throw new ToolbusError(
        'invalid-arguments',
        `the environment variable '${variable}' for scheme '${scheme}' must be letters, digits and '_', not starting with a digit`,
      );
    }
  }

  const operations = listOperations(doc);
  const taken = new Set<string>();
  const named = operations.map((op) => {
    const key = unique(toolNameOf(prefix + op.name), taken);
    taken.add(key);
    return { op, key };
  });
  const include = options.include === undefined ? undefined : new Set(options.include);
  const missing = [...(include ?? [])].filter(
    (name) => !named.some(({ op, key }) => op.name === name || key === name),
  );

  const unsupported = new Map<string, { type: string; reason: string; operations: string[] }>();
  const items: OpenApiToolItem[] = [];
  const maxDescription = options.maxDescriptionLength ?? DEFAULT_OPENAPI_MAX_DESCRIPTION_LENGTH;
  const maxDepth = options.maxSchemaDepth ?? DEFAULT_OPENAPI_MAX_SCHEMA_DEPTH;
  for (const { op, key } of named) {
    if (include !== undefined && !include.has(op.name) && !include.has(key)) continue;
    const where = `operation '${op.name}' (${op.method.toUpperCase()} ${op.path})`;
    if (!TOOL_METHODS.has(op.method)) {
      warnings.push(`${where} skipped: the HTTP tool sends GET, POST, PUT, PATCH and DELETE only`);
      continue;
    }
    const auth = chooseAuth(op, doc, schemes, id, authEnv);
    const built = buildItem(op, key, {
      id,
      baseUrl: options.serverUrl === undefined ? (serverOf(op) ?? baseUrl) : baseUrl,
      auth,
      maxDepth,
      maxDescription,
      where,
      warnings,
    });
    if (built === undefined) continue;
    items.push(built);
    for (const [name, { type, reason }] of auth.refused) {
      const entry = unsupported.get(name) ?? { type, reason, operations: [] };
      entry.operations.push(op.name);
      unsupported.set(name, entry);
    }
  }
  for (const [scheme, { type, reason, operations: ops }] of unsupported) {
    const shown = ops.slice(0, 5).join(', ') + (ops.length > 5 ? `, … (${ops.length - 5} more)` : '');
    warnings.push(
      `security scheme '${scheme}' (${type}) is not supported, so ${ops.length === 1 ? '1 operation is' : `${ops.length} operations are`} ` +
        `imported without it (${shown}): ${reason}`,
    );
  }
  return { items, warnings, missing, operations: operations.map((op) => op.name) };
}

function checkDocument(document: unknown): Obj {
  if (!isObj(document)) {
    throw new ToolbusError('invalid-config', 'an OpenAPI document must be a JSON or YAML object');
  }
  if (document['swagger'] !== undefined) {
    throw new ToolbusError(
      'invalid-config',
      `this is a Swagger ${String(document['swagger'])} document; only OpenAPI 3.0 and 3.1 are supported ` +
        '(convert it first, e.g. with swagger2openapi)',
    );
  }
  const version = document['openapi'];
  if (typeof version !== 'string' || !/^3\.\d+/.test(version)) {
    throw new ToolbusError(
      'invalid-config',
      `not an OpenAPI 3 document: expected a field 'openapi' of 3.0.x or 3.1.x, got ${version === undefined ? 'none' : JSON.stringify(version)}`,
    );
  }
  return document;
}

function checkServerUrl(url: string): void {
  const parsed = new URL(url);
  if (parsed.search !== '' || parsed.hash !== '') {
    throw new ToolbusError(
      'invalid-arguments',
      `the server URL '${url}' must not have a query or fragment: operation paths are appended to it`,
    );
  }
}

/** An operation's own absolute server (operation first, then its path item), if any. */
function serverOf(op: Operation): string | undefined {
  for (const servers of [op.operation['servers'], op.pathItem['servers']]) {
    const url = Array.isArray(servers) ? serverUrlOf(servers[0]) : undefined;
    if (url !== undefined && isAbsoluteHttpUrl(url)) {
      checkServerUrl(url);
      return url;
    }
  }
  return undefined;
}

function listOperations(doc: Obj): Operation[] {
  const out: Operation[] = [];
  const paths = isObj(doc['paths']) ? doc['paths'] : {};
  for (const [path, pathItem] of Object.entries(paths)) {
    if (!isObj(pathItem)) continue;
    for (const method of METHODS) {
      const operation = pathItem[method];
      if (!isObj(operation)) continue;
      const operationId = text(operation['operationId']);
      out.push({ method, path, pathItem, operation, name: operationId ?? generatedName(method, path) });
    }
  }
  return out;
}

function chooseAuth(
  op: Operation,
  doc: Obj,
  schemes: Obj,
  id: string,
  authEnv: Readonly<Record<string, string>>,
): AuthChoice {
  const security = Array.isArray(op.operation['security'])
    ? op.operation['security']
    : Array.isArray(doc['security'])
      ? doc['security']
      : [];
  let optional = false;
  const refused = new Map<string, { type: string; reason: string }>();
  for (const alternative of security) {
    if (!isObj(alternative)) continue;
    const names = Object.keys(alternative);
    if (names.length === 0) {
      optional = true;
      continue;
    }
    const choice: AuthChoice = { headers: {}, env: [], refused: new Map() };
    let ok = true;
    for (const name of names) {
      const auth = schemeAuth(name, schemes[name], id, authEnv);
      if ('unsupported' in auth) {
        refused.set(name, { type: auth.type, reason: auth.unsupported });
        ok = false;
        continue;
      }
      for (const [header, value] of auth.headers) {
        if (Object.keys(choice.headers).some((h) => h.toLowerCase() === header.toLowerCase())) {
          refused.set(name, {
            type: String(isObj(schemes[name]) ? schemes[name]['type'] : 'unknown'),
            reason: `another scheme of the same requirement also sends the '${header}' header`,
          });
          ok = false;
          continue;
        }
        choice.headers[header] = value;
      }
      if (!choice.env.includes(auth.env)) choice.env.push(auth.env);
    }
    if (ok) return choice;
  }
  return { headers: {}, env: [], refused: optional ? new Map() : refused };
}

function isJsonMediaType(type: string): boolean {
  return /^(application\/json|application\/\*|\*\/\*)\s*(;|$)/i.test(type.trim());
}

function responseIsJson(operation: Obj): boolean {
  const responses = isObj(operation['responses']) ? operation['responses'] : {};
  const codes = Object.keys(responses)
    .filter((code) => /^2(\d\d|XX)$/i.test(code))
    .sort();
  for (const code of [...codes, 'default']) {
    const response = responses[code];
    if (!isObj(response) || !isObj(response['content'])) continue;
    return Object.keys(response['content']).some(
      (type) => isJsonMediaType(type) || /\+json\s*(;|$)/i.test(type),
    );
  }
  return false;
}

function describeOperation(operation: Obj, method: string, path: string, max: number): string {
  const summary = text(operation['summary']);
  const description = text(operation['description']);
  let out: string;
  if (summary !== undefined && description !== undefined) {
    const bare = (s: string) => s.replace(/[.\s]+$/, '').toLowerCase();
    out = bare(description).startsWith(bare(summary)) ? description : `${summary}\n\n${description}`;
  } else {
    out = summary ?? description ?? `${method.toUpperCase()} ${path}`;
  }
  if (operation['deprecated'] === true) out = `Deprecated. ${out}`;
  return out.length > max ? `${out.slice(0, Math.max(1, max - 1)).trimEnd()}…` : out;
}

interface BuildContext {
  id: string;
  baseUrl: string;
  auth: AuthChoice;
  maxDepth: number;
  maxDescription: number;
  where: string;
  warnings: string[];
}

function buildItem(op: Operation, key: string, ctx: BuildContext): OpenApiToolItem | undefined {
  const { operation, pathItem, method, path } = op;
  const { where, warnings } = ctx;
  const schemaCtx: SchemaContext = {
    maxDepth: ctx.maxDepth,
    stack: new Set(),
    nodes: 0,
    truncated: false,
    unresolved: new Set(),
  };
  // Path-item parameters, overridden by the operation's own of the same name and location.
  const parameters = new Map<string, Obj>();
  for (const list of [pathItem['parameters'], operation['parameters']]) {
    if (!Array.isArray(list)) continue;
    for (const p of list) {
      if (isObj(p) && typeof p['name'] === 'string' && typeof p['in'] === 'string') {
        parameters.set(`${p['in']}:${p['name']}`, p);
      }
    }
  }
  const properties: JsonObject = {};
  const required: string[] = [];
  const taken = new Set<string>();
  const queryParams: (string | HttpParameter)[] = [];
  const headerParams: (string | HttpParameter)[] = [];
  const pathArguments = new Map<string, string>();
  const dropped: string[] = [];
  const authHeaders = Object.keys(ctx.auth.headers).map((h) => h.toLowerCase());

  const argumentFor = (p: Obj): { name: string; schema: JsonObject; style: string | undefined } => {
    const wire = p['name'] as string;
    const location = p['in'] as string;
    const name = unique(argumentNameOf(wire), taken, location);
    taken.add(name);
    let source: unknown = p['schema'];
    let style = typeof p['style'] === 'string' ? p['style'] : undefined;
    if (source === undefined && isObj(p['content'])) {
      // A parameter given as `content` (e.g. JSON in the query string): its first media type's schema.
      const first = Object.values(p['content'])[0];
      source = isObj(first) ? first['schema'] : undefined;
      style = 'json';
    }
    const schema = convertSchema(source, 1, schemaCtx);
    const description = text(p['description']);
    if (description !== undefined) schema['description'] = description;
    if (p['deprecated'] === true) schema['deprecated'] = true;
    properties[name] = schema;
    if (p['required'] === true || location === 'path') required.push(name);
    return { name, schema, style };
  };

  for (const p of parameters.values()) {
    const wire = p['name'] as string;
    const location = p['in'];
    if (location === 'path') {
      const style = typeof p['style'] === 'string' ? p['style'] : 'simple';
      if (style !== 'simple') {
        warnings.push(
          `${where} skipped: path parameter '${wire}' has style '${style}'; only 'simple' is supported`,
        );
        return undefined;
      }
      pathArguments.set(wire, argumentFor(p).name);
    } else if (location === 'query') {
      const { name, style } = argumentFor(p);
      const explode = typeof p['explode'] === 'boolean' ? p['explode'] : undefined;
      queryParams.push(parameterEntry(wire, name, style ?? 'form', explode, 'form'));
    } else if (location === 'header') {
      if (IGNORED_HEADERS.has(wire.toLowerCase())) continue; // OpenAPI: such parameters are ignored
      if (authHeaders.includes(wire.toLowerCase())) {
        warnings.push(
          `${where}: header parameter '${wire}' left out: the operation's auth sends that header`,
        );
        continue;
      }
      const { name, style } = argumentFor(p);
      const explode = typeof p['explode'] === 'boolean' ? p['explode'] : undefined;
      headerParams.push(parameterEntry(wire, name, style ?? 'simple', explode, 'simple'));
    } else if (location === 'cookie') {
      if (p['required'] === true) {
        warnings.push(
          `${where} skipped: it needs the cookie parameter '${wire}', which the HTTP tool cannot send`,
        );
        return undefined;
      }
      dropped.push(wire);
    }
  }
  if (dropped.length > 0) {
    warnings.push(
      `${where}: cookie parameter${dropped.length === 1 ? '' : 's'} ${dropped.map((d) => `'${d}'`).join(', ')} left out (not supported)`,
    );
  }

  // The path template with each placeholder renamed to its argument.
  let pathTemplate = path;
  for (const [, placeholder] of path.matchAll(/\{([^{}]+)\}/g)) {
    const wire = placeholder!;
    let name = pathArguments.get(wire);
    if (name === undefined) {
      name = unique(argumentNameOf(wire), taken, 'path');
      taken.add(name);
      pathArguments.set(wire, name);
      properties[name] = { type: 'string' };
      required.push(name);
      warnings.push(`${where}: path placeholder '{${wire}}' has no parameter; taken as a required string`);
    }
    pathTemplate = pathTemplate.replaceAll(`{${wire}}`, `{${name}}`);
  }

  let bodyParam: string | undefined;
  const requestBody = operation['requestBody'];
  if (isObj(requestBody)) {
    const content = isObj(requestBody['content']) ? requestBody['content'] : {};
    const types = Object.keys(content);
    const json = types.find(isJsonMediaType);
    if (json === undefined) {
      warnings.push(
        `${where} skipped: its request body is ${types.join(', ') || 'of no media type'}; the HTTP tool sends application/json bodies only`,
      );
      return undefined;
    }
    if (method === 'get') {
      warnings.push(`${where} skipped: a GET with a request body cannot be sent`);
      return undefined;
    }
    bodyParam = unique('body', taken, 'request');
    taken.add(bodyParam);
    const media = content[json];
    const schema = convertSchema(isObj(media) ? media['schema'] : undefined, 1, schemaCtx);
    const description = text(requestBody['description']);
    if (description !== undefined) schema['description'] = description;
    properties[bodyParam] = schema;
    if (requestBody['required'] === true) required.push(bodyParam);
  }
  if (schemaCtx.truncated) {
    warnings.push(
      `${where}: its schema is deeper than ${ctx.maxDepth} levels or larger than ${OPENAPI_MAX_SCHEMA_NODES} nodes; the rest accepts any value`,
    );
  }
  if (schemaCtx.unresolved.size > 0) {
    warnings.push(
      `${where}: unresolved $ref ${[...schemaCtx.unresolved].map((r) => `'${r}'`).join(', ')} accept any value`,
    );
  }

  const tags = [`openapi:${ctx.id}`];
  for (const raw of Array.isArray(operation['tags']) ? operation['tags'] : []) {
    const tag = tagOf(raw);
    if (tag !== undefined && !tags.includes(tag) && tags.length < MAX_TOOL_TAGS) tags.push(tag);
  }
  const value: JsonObject = {
    type: 'http',
    name: key,
    description: describeOperation(operation, method, path, ctx.maxDescription),
    url: `${ctx.baseUrl.replace(/\/+$/, '')}${pathTemplate.startsWith('/') ? '' : '/'}${pathTemplate}`,
    method: method.toUpperCase(),
    return_type: responseIsJson(operation) ? 'json' : 'text',
    json_schema: {
      type: 'object',
      properties,
      ...(required.length > 0 ? { required } : {}),
      additionalProperties: false,
    },
  };
  if (queryParams.length > 0) value['query_params'] = queryParams as JsonValue;
  if (headerParams.length > 0) value['header_params'] = headerParams as JsonValue;
  if (bodyParam !== undefined) value['body_param'] = bodyParam;
  if (Object.keys(ctx.auth.headers).length > 0) value['headers'] = ctx.auth.headers as JsonObject;
  value['allowed_hosts'] = [new URL(ctx.baseUrl).hostname];
  value['tags'] = tags;
  return { key, operation: op.name, method: method.toUpperCase(), path, value, env: [...ctx.auth.env] };
}

/** A `query_params` / `header_params` entry: the bare argument name when everything is the default. */
function parameterEntry(
  wire: string,
  argument: string,
  style: string,
  explode: boolean | undefined,
  defaultStyle: string,
): string | HttpParameter {
  const defaultExplode = style === 'form' || style === 'deepObject';
  const entry: HttpParameter = { name: wire };
  if (argument !== wire) entry.argument = argument;
  if (style !== defaultStyle) entry.style = style as HttpParameter['style'] & string;
  if (explode !== undefined && explode !== defaultExplode) entry.explode = explode;
  return Object.keys(entry).length === 1 ? wire : entry;
}
