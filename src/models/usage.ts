/**
 * @module Token usage arithmetic shared by the model clients.
 */
import type { RequestUsage } from './chat-completion-client.js';

/**
 * A fresh zero usage (a new object each call, so callers may mutate it).
 */
export function emptyUsage(): RequestUsage {
  return { promptTokens: 0, completionTokens: 0 };
}

/**
 * The sum of two usages, as a new object.
 *
 * @example
 * ```ts
 * total = addUsage(total, result.usage);
 * ```
 */
export function addUsage(a: RequestUsage, b: RequestUsage): RequestUsage {
  return {
    promptTokens: a.promptTokens + b.promptTokens,
    completionTokens: a.completionTokens + b.completionTokens,
  };
}
