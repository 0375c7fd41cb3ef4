/**
 * @module Mapping the `openai` SDK's errors to toolbus errors, and deciding which are worth a retry.
 */
import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import { ToolbusError } from '../../errors/index.js';
import { ModelError } from '../index.js';

/** What the mapping needs to know about the request that failed. */
export interface ErrorContext {
  model: string;
  baseURL: string;
  /** The environment variable the key comes from, for the authentication hint. */
  apiKeyEnvVar: string;
  /** The request's tools in wire order: `[wireName, toolbusName]`. */
  tools: readonly (readonly [string, string])[];
  /** The call's own signal: aborted means cancelled or timed out, with a ToolbusError reason. */
  signal: AbortSignal;
}

const MAX_PROVIDER_MESSAGE = 400;
const CONTEXT_LENGTH =
  /context[ _-]?length|maximum context|context window|too many tokens|prompt is too long/i;

/** Turns anything thrown while talking to the provider into a ToolbusError. */
export function toModelError(error: unknown, ctx: ErrorContext): ToolbusError {
  if (error instanceof ToolbusError) return error;
  const who = `model '${ctx.model}'`;
  if (ctx.signal.aborted && ctx.signal.reason instanceof ToolbusError) return ctx.signal.reason;
  if (error instanceof APIUserAbortError) {
    return new ToolbusError('cancelled', `${who}: the request was aborted`, { cause: error });
  }
  if (error instanceof APIConnectionTimeoutError) {
    return new ToolbusError('timeout', `${who}: the request to ${ctx.baseURL} timed out`, { cause: error });
  }
  if (error instanceof APIConnectionError) {
    const reason = error.cause instanceof Error ? error.cause.message : error.message;
    return new ModelError('unavailable', `${who}: cannot reach ${ctx.baseURL}: ${truncate(reason)}`, {
      model: ctx.model,
      cause: error,
    });
  }
  if (error instanceof APIError && typeof error.status === 'number') {
    return fromStatus(error, error.status, ctx);
  }
  const message = error instanceof Error ? error.message : String(error);
  return new ModelError('model-error', `${who}: ${truncate(message)}`, { model: ctx.model, cause: error });
}

function fromStatus(error: APIError, status: number, ctx: ErrorContext): ModelError {
  const who = `model '${ctx.model}'`;
  const said = providerMessage(error);
  const base = { model: ctx.model, status, cause: error };
  if (status === 401 || status === 403) {
    return new ModelError(
      'authentication',
      `${who} at ${ctx.baseURL}: the provider refused the credentials (${status}): ${said}; ` +
        `check the API key (option 'apiKey' or ${ctx.apiKeyEnvVar})`,
      base,
    );
  }
  if (status === 429) {
    const retryAfterMs = retryAfterMsOf(error.headers);
    const wait = retryAfterMs === undefined ? '' : `; retry after ${retryAfterMs} ms`;
    return new ModelError('rate-limited', `${who}: rate limited by the provider (429)${wait}: ${said}`, {
      ...base,
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    });
  }
  if (status === 400 || status === 413 || status === 422) {
    if (error.code === 'context_length_exceeded' || CONTEXT_LENGTH.test(said)) {
      return new ModelError(
        'context-length',
        `${who}: the messages and tools exceed the model's context length (${status}): ${said}`,
        base,
      );
    }
    const tool = rejectedTool(error, said, ctx.tools);
    if (tool) {
      const where = error.param ? `, ${error.param}` : '';
      return new ModelError(
        'bad-request',
        `${who}: the provider rejected the schema of tool '${tool}' (${status}${where}): ${said}`,
        { ...base, toolName: tool },
      );
    }
    return new ModelError(
      'bad-request',
      `${who}: the provider rejected the request (${status}): ${said}`,
      base,
    );
  }
  if (status === 404) {
    return new ModelError(
      'model-error',
      `${who}: not found at ${ctx.baseURL} (404): ${said}; check the model name and the base URL`,
      base,
    );
  }
  return new ModelError('model-error', `${who}: the provider failed (${status}): ${said}`, base);
}

/** The tool a 400 is about: from `param` (`tools[2].function.parameters`) or a quoted name in the text. */
function rejectedTool(
  error: APIError,
  said: string,
  tools: readonly (readonly [string, string])[],
): string | undefined {
  const index = /^tools\[(\d+)\]/.exec(error.param ?? '');
  if (index) return tools[Number(index[1])]?.[1];
  if (!/schema|tool|function|parameters/i.test(said)) return undefined;
  // Longest names first, so 'get_stock_price_v2' is not taken for 'get_stock_price'.
  const byLength = [...tools].sort((a, b) => b[0].length - a[0].length);
  for (const [wire, name] of byLength) {
    if (said.includes(`'${wire}'`) || said.includes(`"${wire}"`) || said.includes(`\`${wire}\``)) return name;
  }
  for (const [wire, name] of byLength) {
    if (new RegExp(`\\b${wire.replace(/[-]/g, '\\-')}\\b`).test(said)) return name;
  }
  return undefined;
}

/** The provider's own message without the SDK's status prefix, truncated. */
function providerMessage(error: APIError): string {
  const text = error.message.replace(/^\d{3}\s+/, '');
  return truncate(text || '(no message)');
}

function truncate(text: string): string {
  return text.length > MAX_PROVIDER_MESSAGE ? `${text.slice(0, MAX_PROVIDER_MESSAGE)}…` : text;
}

/**
 * The wait a response asks for: `retry-after-ms` (OpenAI), else `retry-after` in seconds or as an
 * HTTP date. `undefined` when absent or unreadable.
 */
export function retryAfterMsOf(headers: Headers | undefined): number | undefined {
  if (!headers) return undefined;
  const ms = headers.get('retry-after-ms');
  if (ms !== null && ms.trim() !== '' && Number.isFinite(Number(ms)) && Number(ms) >= 0) {
    return Math.round(Number(ms));
  }
  const after = headers.get('retry-after');
  if (after === null || after.trim() === '') return undefined;
  const seconds = Number(after);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.round(seconds * 1000);
  const date = Date.parse(after);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - Date.now());
}

/**
 * Whether a failed attempt may be repeated: unreachable provider, 5xx, 408, 409, and 429 unless the
 * account is out of quota.
 */
export function isRetryable(error: ToolbusError): boolean {
  if (!(error instanceof ModelError)) return false;
  if (error.code === 'unavailable') return true;
  if (error.code === 'rate-limited') {
    const cause = error.cause;
    return !(cause instanceof APIError && cause.code === 'insufficient_quota');
  }
  const status = error.status;
  return status !== undefined && (status >= 500 || status === 408 || status === 409);
}
