/**
 * @module The tool-service wire format: the one place where its bodies and field names live
 * (TrustGraph `ToolServiceRequest` / `ToolServiceResponse`).
 *
 * Request body (UTF-8 JSON), on the request queue:
 * ```json
 * { "user": "alice", "config": "{\"style\":\"pun\"}", "arguments": "{\"topic\":\"cats\"}" }
 * ```
 * Response body, on the response queue, one or more per request:
 * ```json
 * { "error": null, "response": "Hey alice! ...", "end_of_stream": true }
 * ```
 *
 * A toolbus extension: a last response may also carry `parts`, the result as content parts (text,
 * images, audio, resources: `[{"type":"image","data":"iVBOR…","mimeType":"image/png"}]`). `response`
 * then holds their text, with media described (`[image: image/png, 1234 bytes]`), so a TrustGraph peer,
 * which ignores the field, still reads a plain string.
 *
 * Message properties (`id`, `deadline`, `traceparent`, `tracestate`, `cancel`) and the cancel control
 * topic are the request/response envelope every protocol on the bus shares: see `rpc/envelope.ts`, re-
 * exported here. For tool services: a service skips work whose `deadline` has passed and aborts running
 * work shortly after it (a caller answered `deadline-exceeded` reports `timeout`); `traceparent` is
 * passed to `invoke` and echoed.
 *
 * A peer that ignores every optional property (as TrustGraph does) still interoperates.
 */
import { canonicalTopic } from '../bus/index.js';
import { ToolbusError } from '../errors/index.js';
import { RemoteToolError } from './remote-tool-error.js';
import { contentParts, type ContentPart } from '../tools/index.js';

export { WireProperty, cancelTopicOf, checkQueuePair, readDeadline, readId } from './rpc/envelope.js';

/** The request envelope as it travels: `config` and `arguments` are JSON text, as in the seed. */
export interface ToolServiceRequest {
  /** The end user (multi-tenancy); `""` when there is none. */
  user: string;
  /** JSON text of the config values from the tool descriptor, e.g. `{"style":"pun"}`. */
  config: string;
  /** JSON text of the model's arguments, e.g. `{"topic":"cats"}`. */
  arguments: string;
}

/** The error object of a response. */
export interface WireError {
  /** A stable type, e.g. `tool-service-error` (see {@link WireErrorType}). */
  type: string;
  message: string;
}

/** One response message as it travels. */
export interface ToolServiceResponse {
  error: WireError | null;
  /** The observation text, or one chunk of it when streaming. */
  response: string;
  /** True on the last response of a call. */
  end_of_stream: boolean;
  /**
   * The result as content parts, on a last response whose result has them (a toolbus extension):
   * `response` holds their text. @default none
   */
  parts?: ContentPart[];
}

/** The `error.type` values our service sends. Peers may send others; clients keep them as is. */
export const WireErrorType = {
  /** The request body could not be decoded (not JSON, wrong field types, `config`/`arguments` not JSON objects). */
  InvalidRequest: 'invalid-request',
  /** `invoke` threw; the message is the thrown error's message. */
  ToolServiceError: 'tool-service-error',
  /** The service is at capacity (`concurrency` running and its bounded queue full). */
  TooManyRequests: 'too-many-requests',
  /** The caller cancelled the call. */
  Cancelled: 'cancelled',
  /** The request's `deadline` had passed before or while it ran. */
  DeadlineExceeded: 'deadline-exceeded',
  /** The service is stopping and takes no new calls. */
  Unavailable: 'unavailable',
} as const;
/** One of {@link WireErrorType}'s values. */
export type WireErrorType = (typeof WireErrorType)[keyof typeof WireErrorType];

const decoder = new TextDecoder();

/** The body as text. */
export function bodyText(body: Uint8Array | string): string {
  return typeof body === 'string' ? body : decoder.decode(body);
}

/**
 * Encodes a request envelope to JSON text. Built from the JSON of each string field, byte for byte what
 * `JSON.stringify` of the object gives, without building and walking the object on every call.
 */
export function encodeRequest(request: ToolServiceRequest): string {
  const { user, config, arguments: args } = request;
  if (typeof user !== 'string' || typeof config !== 'string' || typeof args !== 'string') {
    return JSON.stringify({ user, config, arguments: args });
  }
  return `{"user":${JSON.stringify(user)},"config":${JSON.stringify(config)},"arguments":${JSON.stringify(args)}}`;
}

/**
 * Decodes a request body. A missing `user`, `config` or `arguments` is `""` (TrustGraph at HEAD sends no
 * `user`); unknown fields are ignored.
 * @throws ToolbusError `invalid-request` when the body is not a JSON object or a field is not a string.
 */
export function decodeRequest(body: Uint8Array | string): ToolServiceRequest {
  const value = parseObject(body, 'request');
  return {
    user: stringField(value, 'user'),
    config: stringField(value, 'config'),
    arguments: stringField(value, 'arguments'),
  };
}

function stringField(value: Record<string, unknown>, name: keyof ToolServiceRequest): string {
  const field = value[name] ?? '';
  if (typeof field === 'string') return field;
  throw new ToolbusError(
    'invalid-request',
    `tool-service request: field '${name}' must be a string, got ${typeName(field)}`,
  );
}

/**
 * Parses the `config` or `arguments` text of a request: `""` is `{}`, anything else must be a JSON object.
 * @throws ToolbusError `invalid-request` otherwise.
 */
export function decodeEnvelopeObject(text: string, field: 'config' | 'arguments'): Record<string, unknown> {
  if (text === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new ToolbusError(
      'invalid-request',
      `tool-service request: field '${field}' must hold JSON text of an object, got ${preview(text)}`,
    );
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new ToolbusError(
      'invalid-request',
      `tool-service request: field '${field}' must hold a JSON object, got ${typeName(value)}`,
    );
  }
  return value as Record<string, unknown>;
}

/**
 * Encodes a response to JSON text, as `JSON.stringify` of the object would (see {@link encodeRequest});
 * a successful one is built around the JSON of its one string field.
 */
export function encodeResponse(response: ToolServiceResponse): string {
  const { error, response: text, end_of_stream: end, parts } = response;
  if (parts !== undefined) return JSON.stringify({ error, response: text, end_of_stream: end, parts });
  if (error !== null || typeof text !== 'string' || typeof end !== 'boolean') {
    return JSON.stringify({ error, response: text, end_of_stream: end });
  }
  return `{"error":null,"response":${JSON.stringify(text)},"end_of_stream":${end ? 'true' : 'false'}}`;
}

/**
 * Decodes a response body. A missing `error` is `null`, a missing `response` is `""`, a missing
 * `end_of_stream` is `false` (the dataclass defaults).
 * @throws ToolbusError `invalid-request` when the body is not a response object.
 */
export function decodeResponse(body: Uint8Array | string): ToolServiceResponse {
  const value = parseObject(body, 'response');
  const error = value['error'] ?? null;
  const response = value['response'] ?? '';
  const end = value['end_of_stream'] ?? false;
  if (typeof response !== 'string') {
    throw new ToolbusError(
      'invalid-request',
      `tool-service response: field 'response' must be a string, got ${typeName(response)}`,
    );
  }
  if (typeof end !== 'boolean') {
    throw new ToolbusError(
      'invalid-request',
      `tool-service response: field 'end_of_stream' must be a boolean, got ${typeName(end)}`,
    );
  }
  if (error !== null) {
    const e = error as { type?: unknown; message?: unknown };
    if (typeof error !== 'object' || typeof e.type !== 'string' || typeof (e.message ?? '') !== 'string') {
      throw new ToolbusError(
        'invalid-request',
        `tool-service response: field 'error' must be null or {type: string, message: string}`,
      );
    }
    return {
      error: { type: e.type, message: (e.message as string | undefined) ?? '' },
      response,
      end_of_stream: end,
    };
  }
  const parts = value['parts'];
  if (parts === undefined || parts === null) return { error: null, response, end_of_stream: end };
  let decoded: ContentPart[] | undefined;
  try {
    decoded = Array.isArray(parts) ? contentParts('', parts) : undefined;
  } catch (error) {
    throw new ToolbusError(
      'invalid-request',
      `tool-service response: field 'parts' ${(error as Error).message.replace(/^tool '': /, 'has ')}`,
    );
  }
  if (decoded === undefined) {
    throw new ToolbusError(
      'invalid-request',
      `tool-service response: field 'parts' must be an array of content parts ({"type": "text", "text": …}, ` +
        `{"type": "image" | "audio", "data": base64, "mimeType": …}, {"type": "resource", "uri": …}), got ${typeName(parts)}`,
    );
  }
  return { error: null, response, end_of_stream: end, parts: decoded };
}

/**
 * The wire error for a local failure: a `ToolbusError` keeps its code as the type when it is one of
 * {@link WireErrorType}; anything else becomes `fallbackType` with the error's message.
 */
export function toWireError(
  error: unknown,
  fallbackType: string = WireErrorType.ToolServiceError,
): WireError {
  const message = error instanceof Error ? error.message : String(error);
  if (error instanceof ToolbusError && WIRE_TYPES.has(error.code)) return { type: error.code, message };
  return { type: fallbackType, message };
}

/**
 * The local error for a wire error: always a {@link RemoteToolError} with code `tool-error`, whose
 * message names the service, the remote type and the remote message, and whose `remoteType` keeps the
 * wire type for code that branches on it.
 */
export function fromWireError(error: WireError, service: string, toolName?: string): RemoteToolError {
  return new RemoteToolError(
    `tool service '${service}' returned error '${error.type}': ${truncate(error.message, 2000)}`,
    { remoteType: error.type, remoteMessage: error.message, toolName },
  );
}

/**
 * The bus group the replicas of the service on `requestQueue` share, so each request reaches one of
 * them: `tool-service:` plus the canonical request queue.
 */
export function serviceGroupOf(requestQueue: string): string {
  return `tool-service:${canonicalTopic(requestQueue)}`;
}

const WIRE_TYPES = new Set<string>(Object.values(WireErrorType));

function parseObject(body: Uint8Array | string, what: string): Record<string, unknown> {
  const text = bodyText(body);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new ToolbusError('invalid-request', `tool-service ${what}: body is not JSON: ${preview(text)}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new ToolbusError(
      'invalid-request',
      `tool-service ${what}: body must be a JSON object, got ${typeName(value)}`,
    );
  }
  return value as Record<string, unknown>;
}

function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

function preview(text: string): string {
  return JSON.stringify(truncate(text, 40));
}

function truncate(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}
