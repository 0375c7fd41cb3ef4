/**
 * @module What the bridge refuses before the SDK sees it, with the error JSON-RPC 2.0 names and a
 * message saying what was wrong: valid JSON that is not a JSON-RPC message (-32600 Invalid Request,
 * where the SDK would say -32700 Parse error), and a batch on a protocol revision that removed batching
 * (2025-06-18 and later).
 */
import { parseJSONRPCMessage } from '@modelcontextprotocol/server';

/** JSON-RPC 2.0's error codes for a message the server cannot take. */
export const JsonRpcErrorCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
} as const;

/** The first protocol revision without JSON-RPC batches (revisions are dates, so they sort as strings). */
const FIRST_REVISION_WITHOUT_BATCHES = '2025-06-18';

/** The protocol revision a request without a version header speaks (the Streamable HTTP rule). */
export const DEFAULT_HTTP_REVISION = '2025-03-26';

function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return `'${value.length > 40 ? `${value.slice(0, 40)}…` : value}'`;
  return typeof value === 'object' ? 'an object' : `${typeof value} ${String(value)}`;
}

function isId(value: unknown): boolean {
  return typeof value === 'string' || (typeof value === 'number' && Number.isInteger(value));
}

/**
 * Why `value` (parsed JSON) is not one JSON-RPC 2.0 message MCP accepts, or undefined when it is one:
 * a request (`method` and `id`), a notification (`method`, no `id`) or a response (`id` and `result`
 * or `error`).
 */
export function jsonRpcProblem(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return `a JSON-RPC message is a JSON object, got ${describe(value)}`;
  }
  const message = value as Record<string, unknown>;
  if (message['jsonrpc'] !== '2.0') {
    return `field 'jsonrpc' must be "2.0", got ${describe(message['jsonrpc'])}`;
  }
  if ('id' in message && !isId(message['id'])) {
    return `field 'id' must be a string or an integer, got ${describe(message['id'])}`;
  }
  if ('method' in message) {
    if (typeof message['method'] !== 'string' || message['method'] === '') {
      return `field 'method' must be a non-empty string, got ${describe(message['method'])}`;
    }
    const params = message['params'];
    if (params !== undefined && (typeof params !== 'object' || params === null || Array.isArray(params))) {
      return `field 'params' must be an object, got ${describe(params)}`;
    }
  } else if (!('id' in message) || 'result' in message === 'error' in message) {
    return (
      "a JSON-RPC message has a 'method' (a request or notification), or an 'id' with either 'result' " +
      "or 'error' (a response)"
    );
  }
  // What this check lets through, the SDK must too: anything it still refuses is an invalid request.
  try {
    parseJSONRPCMessage(value);
  } catch {
    return 'not a valid JSON-RPC 2.0 message (see https://www.jsonrpc.org/specification)';
  }
  return undefined;
}

/** The `id` of a message JSON-RPC can answer (a string or integer), else null. */
export function jsonRpcIdOf(value: unknown): string | number | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  const id = (value as { id?: unknown }).id;
  return isId(id) ? (id as string | number) : null;
}

/** A JSON-RPC error response. */
export function jsonRpcError(
  code: number,
  message: string,
  id: string | number | null = null,
): { jsonrpc: '2.0'; id: string | number | null; error: { code: number; message: string } } {
  return { jsonrpc: '2.0', id, error: { code, message } };
}

/**
 * Why a POST body is refused, or undefined to pass it on: a message that is not JSON-RPC, or a batch on
 * `revision` 2025-06-18 or later (older revisions still batch, but each element must be a message).
 */
export function postBodyProblem(body: unknown, revision: string): string | undefined {
  if (body === undefined) return 'the POST body is empty: send one JSON-RPC message';
  if (!Array.isArray(body)) return jsonRpcProblem(body);
  if (revision >= FIRST_REVISION_WITHOUT_BATCHES) {
    return (
      `JSON-RPC batches were removed in protocol revision ${FIRST_REVISION_WITHOUT_BATCHES}, and this ` +
      `request speaks ${revision}: send one JSON-RPC message per POST`
    );
  }
  if (body.length === 0) return 'an empty JSON-RPC batch: send at least one message';
  for (let i = 0; i < body.length; i++) {
    const problem = jsonRpcProblem(body[i]);
    if (problem !== undefined) return `batch element ${i}: ${problem}`;
  }
  return undefined;
}
