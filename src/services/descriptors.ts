/**
 * @module The two tool-service config items of the seed: the tool-service descriptor (config type
 * `tool-service`) and the tool descriptor (config type `tool`, `type: "tool-service"`). Kebab-case JSON
 * is parsed here, once, into camelCase types.
 */
import { parseTopic } from '../bus/index.js';
import { setOwn, type JsonObject, type JsonValue } from '../schema/index.js';
import { ToolbusError } from '../errors/index.js';
import { checkQueuePair } from './wire.js';

/** One config param a tool service accepts (`config-params[]`). */
export interface ToolServiceConfigParam {
  name: string;
  /** Whether every tool using the service must give a value. */
  required: boolean;
}

/** A parsed tool-service descriptor (config type `tool-service`). */
export interface ToolServiceDescriptor {
  id: string;
  /** `request-queue`, in any topic form. */
  requestQueue: string;
  /** `response-queue`, in any topic form. */
  responseQueue: string;
  /** `config-params`; `[]` when absent. */
  configParams: ToolServiceConfigParam[];
  /**
   * `delivery`: `request-response` (the seed's: at most once, nothing kept) or `durable` (a work queue:
   * calls survive a dead replica, results are kept). @default 'request-response'
   */
  delivery: ToolServiceDelivery;
}

/** How calls reach a tool service (a descriptor's `delivery`). */
export type ToolServiceDelivery = 'request-response' | 'durable';
const DELIVERIES: readonly ToolServiceDelivery[] = ['request-response', 'durable'];

/** The argument types a tool descriptor may declare. */
export const ToolArgumentType = {
  String: 'string',
  Number: 'number',
  Integer: 'integer',
  Boolean: 'boolean',
  Object: 'object',
  Array: 'array',
} as const;
/** One of {@link ToolArgumentType}'s values. */
export type ToolArgumentType = (typeof ToolArgumentType)[keyof typeof ToolArgumentType];

/** One entry of a tool descriptor's `arguments[]`. */
export interface ToolServiceToolArgument {
  name: string;
  type: ToolArgumentType;
  description: string;
  /** `required` in the JSON. @default true (TrustGraph lists every argument as required) */
  required: boolean;
  /**
   * `enum`: the only values the argument takes (of a string, number, integer or boolean argument), in
   * the JSON Schema the model sees; served as completions of an MCP prompt's argument. @default any
   */
  enum?: (string | number | boolean)[];
}

/** A parsed tool descriptor of type `tool-service` (config type `tool`). */
export interface ToolServiceToolDescriptor {
  name: string;
  description: string;
  /** The id of the tool service it calls. */
  service: string;
  arguments: ToolServiceToolArgument[];
  /**
   * `idempotent`: repeating a call with the same idempotency key is safe, so a durable service answers a
   * repeated key with the first call's outcome instead of running it again. @default false
   */
  idempotent: boolean;
  /**
   * `output-schema`: a JSON Schema of the object the service answers (its response text is JSON). Each
   * result is checked against it and served as MCP `structuredContent`. @default none
   */
  outputSchema?: JsonObject;
  /**
   * `max-total-timeout-ms`: the service reports progress (streamed chunks), and each report restarts the
   * call's timeout, up to this many milliseconds in all (`Tool.maxTotalTimeoutMs`). @default none
   */
  maxTotalTimeoutMs?: number;
  /**
   * Every other key of the descriptor with its value: the config param values, and anything else (which
   * `createToolServiceTool` reports as a warning).
   */
  values: Record<string, JsonValue>;
}

/** The keys of a tool descriptor that are not config values. */
export const TOOL_DESCRIPTOR_KEYS: readonly string[] = [
  'type',
  'name',
  'description',
  'service',
  'arguments',
  // Whether calls need a person's approval, and words for search: read by the registry for every tool type.
  'approval',
  'tags',
  // Read by durable tool services: a repeated idempotency key gets the first outcome.
  'idempotent',
  // What the service answers, as a JSON Schema of an object.
  'output-schema',
  // How long progress (streamed chunks) may keep a call alive.
  'max-total-timeout-ms',
];

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const ARGUMENT_TYPES = new Set<string>(Object.values(ToolArgumentType));

/**
 * Parses a tool-service descriptor from its JSON (an object, or JSON text):
 * `{ "id", "request-queue", "response-queue", "config-params": [{ "name", "required" }] }`. A config param
 * may also be a bare string (optional param), as TrustGraph accepts.
 *
 * @throws ToolbusError `invalid-config` naming the field, what was wrong and what was expected.
 * @example
 * ```ts
 * const service = parseToolServiceDescriptor(JSON.parse(readFileSync('joke-service.json', 'utf8')));
 * ```
 */
export function parseToolServiceDescriptor(value: unknown): ToolServiceDescriptor {
  const object = asObject(value, 'tool-service descriptor');
  const idValue = object['id'];
  if (typeof idValue !== 'string' || idValue === '') {
    throw invalid(
      `tool-service descriptor: field 'id' must be a non-empty string, got ${describeConfigValue(idValue)}`,
    );
  }
  const where = `tool service '${idValue}'`;
  const requestQueue = queueField(object, 'request-queue', where);
  const responseQueue = queueField(object, 'response-queue', where);
  checkQueuePair(requestQueue, responseQueue, where);
  const rawParams = object['config-params'] ?? [];
  if (!Array.isArray(rawParams)) {
    throw invalid(`${where}: field 'config-params' must be an array, got ${describeConfigValue(rawParams)}`);
  }
  const configParams: ToolServiceConfigParam[] = [];
  const seen = new Set<string>();
  rawParams.forEach((raw: unknown, index) => {
    let param: ToolServiceConfigParam;
    if (typeof raw === 'string' && raw !== '') {
      param = { name: raw, required: false };
    } else if (raw !== null && typeof raw === 'object' && !Array.isArray(raw)) {
      const { name, required } = raw as { name?: unknown; required?: unknown };
      if (typeof name !== 'string' || name === '') {
        throw invalid(
          `${where}: 'config-params[${index}].name' must be a non-empty string, got ${describeConfigValue(name)}`,
        );
      }
      if (required !== undefined && typeof required !== 'boolean') {
        throw invalid(
          `${where}: 'config-params[${index}].required' (param '${name}') must be a boolean, got ${describeConfigValue(required)}`,
        );
      }
      param = { name, required: required ?? false };
    } else {
      throw invalid(
        `${where}: 'config-params[${index}]' must be {"name": string, "required": boolean} or a name, got ${describeConfigValue(raw)}`,
      );
    }
    if (TOOL_DESCRIPTOR_KEYS.includes(param.name)) {
      throw invalid(
        `${where}: config param '${param.name}' clashes with a tool descriptor field; choose another name`,
      );
    }
    if (seen.has(param.name)) throw invalid(`${where}: config param '${param.name}' is listed twice`);
    seen.add(param.name);
    configParams.push(param);
  });
  const delivery = object['delivery'] ?? 'request-response';
  if (typeof delivery !== 'string' || !DELIVERIES.includes(delivery as ToolServiceDelivery)) {
    throw invalid(
      `${where}: field 'delivery' must be "request-response" or "durable", got ${describeConfigValue(delivery)}`,
    );
  }
  return {
    id: idValue,
    requestQueue,
    responseQueue,
    configParams,
    delivery: delivery as ToolServiceDelivery,
  };
}

/**
 * Parses a tool descriptor of type `tool-service` from its JSON (an object, or JSON text):
 * `{ "type": "tool-service", "name", "description", "service", "arguments": [{ "name", "type",
 * "description", "required"? }], ...config values }`. It does not look at the service; see
 * `createToolServiceTool` for the checks against it.
 *
 * @throws ToolbusError `invalid-config` naming the field, what was wrong and what was expected.
 */
export function parseToolServiceToolDescriptor(value: unknown): ToolServiceToolDescriptor {
  const object = asObject(value, 'tool descriptor');
  const name = object['name'];
  if (typeof name !== 'string' || !TOOL_NAME.test(name)) {
    throw invalid(
      `tool descriptor: field 'name' must match ^[a-zA-Z0-9_-]{1,64}$, got ${describeConfigValue(name)}`,
    );
  }
  const where = `tool '${name}'`;
  const type = object['type'];
  if (type !== 'tool-service') {
    throw invalid(`${where}: field 'type' must be "tool-service", got ${describeConfigValue(type)}`);
  }
  const description = object['description'];
  if (typeof description !== 'string') {
    throw invalid(`${where}: field 'description' must be a string, got ${describeConfigValue(description)}`);
  }
  const service = object['service'];
  if (typeof service !== 'string' || service === '') {
    throw invalid(
      `${where}: has type 'tool-service' but field 'service' must name a tool service, got ${describeConfigValue(service)}`,
    );
  }
  const rawArgs = object['arguments'] ?? [];
  if (!Array.isArray(rawArgs)) {
    throw invalid(`${where}: field 'arguments' must be an array, got ${describeConfigValue(rawArgs)}`);
  }
  const seen = new Set<string>();
  const args = rawArgs.map((raw: unknown, index): ToolServiceToolArgument => {
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
      throw invalid(
        `${where}: 'arguments[${index}]' must be {"name", "type", "description"}, got ${describeConfigValue(raw)}`,
      );
    }
    const arg = raw as Record<string, unknown>;
    const argName = arg['name'];
    if (typeof argName !== 'string' || argName === '') {
      throw invalid(
        `${where}: 'arguments[${index}].name' must be a non-empty string, got ${describeConfigValue(argName)}`,
      );
    }
    const argType = arg['type'];
    if (typeof argType !== 'string' || !ARGUMENT_TYPES.has(argType)) {
      throw invalid(
        `${where}: argument '${argName}' has type ${describeConfigValue(argType)}; expected one of ` +
          `${[...ARGUMENT_TYPES].join(', ')}`,
      );
    }
    const argDescription = arg['description'] ?? '';
    if (typeof argDescription !== 'string') {
      throw invalid(
        `${where}: argument '${argName}': 'description' must be a string, got ${describeConfigValue(argDescription)}`,
      );
    }
    const required = arg['required'] ?? true;
    if (typeof required !== 'boolean') {
      throw invalid(
        `${where}: argument '${argName}': 'required' must be a boolean, got ${describeConfigValue(required)}`,
      );
    }
    if (seen.has(argName)) throw invalid(`${where}: argument '${argName}' is listed twice`);
    seen.add(argName);
    const values = enumOf(arg['enum'], argType as ToolArgumentType, `${where}: argument '${argName}'`);
    return {
      name: argName,
      type: argType as ToolArgumentType,
      description: argDescription,
      required,
      ...(values !== undefined ? { enum: values } : {}),
    };
  });
  const idempotent = object['idempotent'] ?? false;
  if (typeof idempotent !== 'boolean') {
    throw invalid(`${where}: field 'idempotent' must be a boolean, got ${describeConfigValue(idempotent)}`);
  }
  const outputSchema = object['output-schema'];
  if (
    outputSchema !== undefined &&
    (outputSchema === null || typeof outputSchema !== 'object' || Array.isArray(outputSchema))
  ) {
    throw invalid(
      `${where}: field 'output-schema' must be a JSON Schema object, e.g. {"type": "object", "properties": {…}}, got ${describeConfigValue(outputSchema)}`,
    );
  }
  const maxTotalTimeoutMs = object['max-total-timeout-ms'];
  if (
    maxTotalTimeoutMs !== undefined &&
    (typeof maxTotalTimeoutMs !== 'number' || !Number.isInteger(maxTotalTimeoutMs) || maxTotalTimeoutMs <= 0)
  ) {
    throw invalid(
      `${where}: field 'max-total-timeout-ms' must be a positive whole number of milliseconds, got ${describeConfigValue(maxTotalTimeoutMs)}`,
    );
  }
  const values: Record<string, JsonValue> = {};
  for (const [key, v] of Object.entries(object)) {
    if (!TOOL_DESCRIPTOR_KEYS.includes(key)) setOwn(values, key, v);
  }
  return {
    name,
    description,
    service,
    arguments: args,
    idempotent,
    ...(outputSchema !== undefined ? { outputSchema: outputSchema as JsonObject } : {}),
    ...(maxTotalTimeoutMs !== undefined ? { maxTotalTimeoutMs } : {}),
    values,
  };
}

/** The kebab-case JSON of a tool-service descriptor (the inverse of {@link parseToolServiceDescriptor}). */
export function formatToolServiceDescriptor(descriptor: ToolServiceDescriptor): JsonObject {
  return {
    id: descriptor.id,
    'request-queue': descriptor.requestQueue,
    'response-queue': descriptor.responseQueue,
    'config-params': descriptor.configParams.map((p) => ({ name: p.name, required: p.required })),
    ...(descriptor.delivery === 'durable' ? { delivery: 'durable' } : {}),
  };
}

/** The JSON of a tool descriptor (the inverse of {@link parseToolServiceToolDescriptor}). */
export function formatToolServiceToolDescriptor(descriptor: ToolServiceToolDescriptor): JsonObject {
  return {
    type: 'tool-service',
    name: descriptor.name,
    description: descriptor.description,
    service: descriptor.service,
    ...(descriptor.idempotent ? { idempotent: true } : {}),
    ...(descriptor.outputSchema !== undefined ? { 'output-schema': descriptor.outputSchema } : {}),
    ...(descriptor.maxTotalTimeoutMs !== undefined
      ? { 'max-total-timeout-ms': descriptor.maxTotalTimeoutMs }
      : {}),
    ...descriptor.values,
    arguments: descriptor.arguments.map((a): JsonObject => {
      const arg: JsonObject = { name: a.name, type: a.type, description: a.description };
      if (!a.required) arg['required'] = false;
      if (a.enum !== undefined) arg['enum'] = [...a.enum];
      return arg;
    }),
  };
}

function asObject(value: unknown, what: string): Record<string, JsonValue> {
  let parsed = value;
  if (typeof value === 'string') {
    try {
      parsed = JSON.parse(value);
    } catch (error) {
      throw invalid(`${what}: not valid JSON: ${(error as Error).message}`, error);
    }
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw invalid(`${what}: must be a JSON object, got ${describeConfigValue(parsed)}`);
  }
  return parsed as Record<string, JsonValue>;
}

function queueField(object: Record<string, unknown>, field: string, where: string): string {
  const value = object[field];
  if (typeof value !== 'string' || value === '') {
    throw invalid(
      `${where}: field '${field}' must be a topic name such as 'non-persistent://tg/request/joke', got ${describeConfigValue(value)}`,
    );
  }
  try {
    parseTopic(value);
  } catch (error) {
    throw invalid(`${where}: field '${field}': ${(error as Error).message}`, error);
  }
  return value;
}

/**
 * A value as an error message about config names it: `nothing`, `null`, `an array`, `an object`, a
 * JSON string (its first 40 characters), or `number 3`.
 */
export function describeConfigValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === 'object') return 'an object';
  return `${typeof value} ${String(value)}`;
}

/** The `enum` of an argument of type `type`: values of that type, at least one, each once. */
function enumOf(
  value: unknown,
  type: ToolArgumentType,
  where: string,
): (string | number | boolean)[] | undefined {
  if (value === undefined) return undefined;
  const scalar = type === 'string' || type === 'number' || type === 'integer' || type === 'boolean';
  if (!scalar)
    throw invalid(`${where}: 'enum' is for string, number, integer and boolean arguments, not ${type}`);
  if (!Array.isArray(value) || value.length === 0) {
    throw invalid(
      `${where}: 'enum' must be a non-empty array of the values it takes, got ${describeConfigValue(value)}`,
    );
  }
  const fits = (v: unknown): boolean =>
    type === 'string'
      ? typeof v === 'string'
      : type === 'boolean'
        ? typeof v === 'boolean'
        : typeof v === 'number' && (type === 'number' ? Number.isFinite(v) : Number.isInteger(v));
  const wrong = value.find((v) => !fits(v));
  if (wrong !== undefined)
    throw invalid(
      `${where}: 'enum' holds ${describeConfigValue(wrong)}, not ${type === 'integer' ? 'an' : 'a'} ${type}`,
    );
  if (new Set(value).size !== value.length) throw invalid(`${where}: 'enum' lists a value twice`);
  return [...(value as (string | number | boolean)[])];
}

function invalid(message: string, cause?: unknown): ToolbusError {
  return new ToolbusError('invalid-config', message, cause === undefined ? undefined : { cause });
}
