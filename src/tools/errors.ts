/**
 * @module The toolbus error base class and its stable codes.
 */

/**
 * The codes of the tool error contract (DESIGN.md §2). A code is a stable string that code can branch on;
 * the message is written for a model or a person and may change.
 */
export const ToolErrorCode = {
  InvalidArguments: 'invalid-arguments',
  UnknownTool: 'unknown-tool',
  ToolError: 'tool-error',
  Timeout: 'timeout',
  Cancelled: 'cancelled',
  Unavailable: 'unavailable',
  TooLarge: 'too-large',
} as const;
/** One of {@link ToolErrorCode}'s values. */
export type ToolErrorCode = (typeof ToolErrorCode)[keyof typeof ToolErrorCode];

/** Codes used by layers above the tools: config, bus, services, models, agents, gateway. */
export const ToolbusErrorCode = {
  ...ToolErrorCode,
  InvalidConfig: 'invalid-config',
  ConfigConflict: 'config-conflict',
  StoreError: 'store-error',
  Closed: 'closed',
  InvalidRequest: 'invalid-request',
  TooManyRequests: 'too-many-requests',
  ServiceError: 'service-error',
  ModelError: 'model-error',
  Authentication: 'authentication',
  RateLimited: 'rate-limited',
  ContextLength: 'context-length',
  BadRequest: 'bad-request',
  Unsupported: 'unsupported',
  InvalidName: 'invalid-name',
  InvalidSchema: 'invalid-schema',
  Usage: 'usage',
  Unauthorized: 'unauthorized',
  Forbidden: 'forbidden',
  NotAllowed: 'not-allowed',
} as const;
/** One of {@link ToolbusErrorCode}'s values. */
export type ToolbusErrorCode = (typeof ToolbusErrorCode)[keyof typeof ToolbusErrorCode];

/**
 * The one base class of every error toolbus raises. `code` is stable; `cause` keeps the underlying error.
 *
 * @example
 * ```ts
 * try { await client.call('alice', {}, {}) } catch (e) {
 *   if (e instanceof ToolbusError && e.code === 'timeout') retry();
 * }
 * ```
 */
export class ToolbusError extends Error {
  /** The stable code of this failure. */
  readonly code: ToolbusErrorCode;

  constructor(code: ToolbusErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }
}

/**
 * A failure of one tool call, carrying the tool's name. Produced by `ToolSet.call` (inside the
 * `ToolResult`) and thrown by `Tool.runJson`.
 */
export class ToolError extends ToolbusError {
  /** The name of the tool that failed, when known. */
  readonly toolName: string | undefined;

  constructor(code: ToolbusErrorCode, message: string, options?: ErrorOptions & { toolName?: string }) {
    super(code, message, options);
    this.toolName = options?.toolName;
  }
}

/** True when `error` is a {@link ToolbusError} (across copies of the package too). */
export function isToolbusError(error: unknown): error is ToolbusError {
  return (
    error instanceof ToolbusError ||
    (error instanceof Error && typeof (error as { code?: unknown }).code === 'string' && 'code' in error)
  );
}
