/**
 * @module How the registry's units describe a failure: the error for a closed registry, and a problem
 * (as `registry.problems()` lists it) from whatever a build or a store threw.
 */
import { isToolbusError, ToolbusError } from '../errors/index.js';
import type { RegistryProblem } from './tool-type.js';

/** The error a closed registry rejects with (`closed`). */
export function closedError(): ToolbusError {
  return new ToolbusError('closed', 'ToolRegistry is closed; create a new one');
}

/** An `error` problem under `key` with the thrown value's message, and its `code` when it has one. */
export function problemOf(key: string, error: unknown, message = messageOf(error)): RegistryProblem {
  return { key, message, severity: 'error', ...(isToolbusError(error) ? { code: error.code } : {}) };
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
