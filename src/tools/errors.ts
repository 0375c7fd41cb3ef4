/**
 * @module The error of one tool call: a `ToolbusError` that also names the tool.
 */
import { ToolbusError, abortError, type AbortState, type ToolbusErrorCode } from '../errors/index.js';

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

/** A toolbus error as a `ToolError` of tool `name`: itself when it is one, else the same code and message. */
export function asToolError(error: ToolbusError, name: string): ToolError {
  return error instanceof ToolError
    ? error
    : new ToolError(error.code, error.message, { cause: error, toolName: name });
}

/** What a call of tool `name` fails with once `signal` aborted: `timeout` for `AbortSignal.timeout`, else `cancelled` (see `abortError`). */
export function toolAbortError(signal: AbortState, name: string): ToolError {
  return asToolError(abortError(signal, `tool '${name}'`), name);
}
