/**
 * @module The gateway's error answers: `{ error: { code, message } }` with a 4xx/5xx status, and the
 * status each toolbus error code maps to.
 */
import type { ServerResponse } from 'node:http';
import { ToolbusError, type ToolbusErrorCode } from '../errors/index.js';
import { redactMachinePaths } from './redact-paths.js';

/** An answer the gateway gives on purpose: the status, a stable code and a message for the caller. */
export class HttpError extends ToolbusError {
  constructor(
    readonly status: number,
    code: ToolbusErrorCode,
    message: string,
    /** Extra response headers, e.g. `www-authenticate` or `allow`. */
    readonly headers: Readonly<Record<string, string>> = {},
    /** The policy rule behind a 401, 403 or 429 (`role`, `tool-policy`, `impersonate`, `rate`…). */
    readonly rule?: string,
  ) {
    super(code, message);
  }
}

/** Sends `body` as JSON (or just ends the response when its head has gone out already). */
export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Readonly<Record<string, string>> = {},
): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  const text = JSON.stringify(body);
  res.writeHead(status, {
    ...headers,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

/** Sends `{ error: { code, message, rule? } }` (`rule`: the policy rule of a 401, 403 or 429); the message never carries a path of this machine. */
export function sendError(
  res: ServerResponse,
  status: number,
  code: string,
  message: string,
  headers: Readonly<Record<string, string>> = {},
  rule?: string,
): void {
  const error = { code, message: redactMachinePaths(message), ...(rule !== undefined ? { rule } : {}) };
  sendJson(res, status, { error }, headers);
}

/** 405 naming the methods the path takes, with the `Allow` header RFC 9110 asks for. */
export function methodNotAllowed(method: string, path: string, allowed: string): HttpError {
  return new HttpError(405, 'method-not-allowed', `${method} is not allowed on ${path}; use ${allowed}`, {
    allow: allowed,
  });
}

/** The HTTP status of a toolbus error code: the caller's mistakes are 4xx, the system's 5xx. */
export function statusForCode(code: string): number {
  switch (code) {
    case 'invalid-config':
    case 'invalid-request':
    case 'invalid-arguments':
    case 'invalid-name':
    case 'not-allowed':
      return 400;
    case 'unauthorized':
      return 401;
    case 'forbidden':
    case 'approval-required':
      return 403;
    case 'not-found':
      return 404;
    case 'unknown-tool':
      return 404;
    case 'config-conflict':
    case 'already-decided':
      return 409;
    case 'too-large':
      return 413;
    case 'too-many-requests':
    case 'rate-limited':
      return 429;
    case 'cancelled':
      return 499;
    case 'unavailable':
      return 503;
    case 'timeout':
      return 504;
    default:
      return 500;
  }
}
