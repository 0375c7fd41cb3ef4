/**
 * @module The tool-service wire format: the one place where its shapes, field names and message
 * properties live (TrustGraph `ToolServiceRequest` / `ToolServiceResponse`).
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
 * Message properties (string key/values):
 *
 * | property      | on                 | meaning                                                              |
 * |---------------|--------------------|----------------------------------------------------------------------|
 * | `id`          | every message      | correlation id, unique per call; echoed on every response (required) |
 * | `deadline`    | request            | optional: epoch milliseconds (decimal) after which the caller has given up; the service skips expired work and aborts running work shortly after it (a caller answered `deadline-exceeded` reports `timeout`) |
 * | `traceparent` | request, responses | optional: W3C trace context, passed to `invoke` and echoed          |
 * | `tracestate`  | request, responses | optional: W3C trace context vendor state, passed through             |
 * | `cancel`      | control message    | optional: the reason (free text) on a cancellation message           |
 *
 * Cancellation: the client publishes a message with properties `{ id, cancel }` and an empty body on the
 * **control topic** of the service, derived from the request queue by {@link cancelTopicOf}: the
 * canonical request queue plus `:cancel` (`non-persistent://tg/request/joke` → `request:tg:joke:cancel`).
 * Every replica subscribes to it without a group (broadcast), so the replica running the call sees it
 * whichever it is. A peer that ignores every optional property (as TrustGraph does) still interoperates.
 */
import { canonicalTopic } from '../bus/index.js';
import type { BusProperties } from '../bus/index.js';
import { ToolbusError } from '../errors/index.js';
import { RemoteToolError } from './remote-tool-error.js';

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
}

/** The names of the message properties (see the module table). */
export const WireProperty = {
  Id: 'id',
  Deadline: 'deadline',
  Traceparent: 'traceparent',
  Tracestate: 'tracestate',
  Cancel: 'cancel',
} as const;
/** One of {@link WireProperty}'s values. */
export type WireProperty = (typeof WireProperty)[keyof typeof WireProperty];

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
  const { error, response: text, end_of_stream: end } = response;
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
  return { error: null, response, end_of_stream: end };
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
 * The control topic that carries cancellations for the service on `requestQueue`: its canonical name
 * plus `:cancel` (`non-persistent://tg/request/joke` → `request:tg:joke:cancel`).
 */
export function cancelTopicOf(requestQueue: string): string {
  return `${canonicalTopic(requestQueue)}:cancel`;
}

/**
 * Checks that a service's request and response queues are two topics: with one topic for both, the
 * service would take its own responses for requests and answer them, forever.
 * @throws ToolbusError `invalid-config` naming the topic; `where` says whose queues they are.
 */
export function checkQueuePair(requestQueue: string, responseQueue: string, where: string): void {
  const topic = canonicalTopic(requestQueue);
  if (topic !== canonicalTopic(responseQueue)) return;
  throw new ToolbusError(
    'invalid-config',
    `${where}: request queue and response queue are the same topic '${topic}'; expected two topics, ` +
      `e.g. 'non-persistent://tg/request/joke' and 'non-persistent://tg/response/joke'`,
  );
}

/**
 * The bus group the replicas of the service on `requestQueue` share, so each request reaches one of
 * them: `tool-service:` plus the canonical request queue.
 */
export function serviceGroupOf(requestQueue: string): string {
  return `tool-service:${canonicalTopic(requestQueue)}`;
}

/** Reads the `id` property: a non-empty string, or undefined. */
export function readId(properties: BusProperties | undefined): string | undefined {
  const id = properties?.[WireProperty.Id];
  return typeof id === 'string' && id !== '' ? id : undefined;
}

/** Reads the `deadline` property (epoch ms), or undefined when absent or not a finite number. */
export function readDeadline(properties: BusProperties): number | undefined {
  const raw = properties[WireProperty.Deadline];
  // `Number('')` is 0: an empty or blank value would make every request look long expired.
  if (raw === undefined || raw.trim() === '') return undefined;
  const n = Number(raw);
  return Number.isFinite(n) ? n : undefined;
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
