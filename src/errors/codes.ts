/**
 * @module The stable codes of every toolbus error, grouped by the layer that raises them. A code is a
 * string that code can branch on; the message is written for a model or a person and may change.
 */

/** The codes of the tool error contract (DESIGN.md §2): what a `ToolResult` can carry. */
export const ToolErrorCode = {
  InvalidArguments: 'invalid-arguments',
  UnknownTool: 'unknown-tool',
  ToolError: 'tool-error',
  Timeout: 'timeout',
  Cancelled: 'cancelled',
  Unavailable: 'unavailable',
  TooLarge: 'too-large',
  /** The tool needs a person's approval first (`Tool.needsApproval`), and the call had none. */
  ApprovalRequired: 'approval-required',
  /** A person (or the approval timeout) denied the call. */
  Denied: 'denied',
} as const;
/** One of {@link ToolErrorCode}'s values. */
export type ToolErrorCode = (typeof ToolErrorCode)[keyof typeof ToolErrorCode];

/** Codes of schemas and tool names. */
export const SchemaErrorCode = {
  InvalidSchema: 'invalid-schema',
  InvalidName: 'invalid-name',
} as const;

/** Codes of config items, stores and the operator's allowlist. */
export const ConfigErrorCode = {
  InvalidConfig: 'invalid-config',
  ConfigConflict: 'config-conflict',
  /** A decision on an approval that was already decided. */
  AlreadyDecided: 'already-decided',
  StoreError: 'store-error',
  NotAllowed: 'not-allowed',
} as const;

/** Codes of the bus and the services on it. */
export const BusErrorCode = {
  Closed: 'closed',
  InvalidRequest: 'invalid-request',
  TooManyRequests: 'too-many-requests',
  ServiceError: 'service-error',
} as const;

/** Codes of model clients: what a model provider answered. */
export const ModelErrorCode = {
  ModelError: 'model-error',
  Authentication: 'authentication',
  RateLimited: 'rate-limited',
  ContextLength: 'context-length',
  BadRequest: 'bad-request',
} as const;

/** Codes of the HTTP gateway and its clients. */
export const GatewayErrorCode = {
  Unauthorized: 'unauthorized',
  Forbidden: 'forbidden',
  NotFound: 'not-found',
  MethodNotAllowed: 'method-not-allowed',
  UnsupportedMediaType: 'unsupported-media-type',
  NoModel: 'no-model',
  Unreachable: 'unreachable',
  Internal: 'internal',
} as const;

/** Codes of misuse: an API called with options it cannot take, a CLI run with bad arguments. */
export const UsageErrorCode = {
  Usage: 'usage',
  Unsupported: 'unsupported',
} as const;

/** Every code, by name. */
export const ToolbusErrorCode = {
  ...ToolErrorCode,
  ...SchemaErrorCode,
  ...ConfigErrorCode,
  ...BusErrorCode,
  ...ModelErrorCode,
  ...GatewayErrorCode,
  ...UsageErrorCode,
} as const;
/** One of {@link ToolbusErrorCode}'s values. */
export type ToolbusErrorCode = (typeof ToolbusErrorCode)[keyof typeof ToolbusErrorCode];
