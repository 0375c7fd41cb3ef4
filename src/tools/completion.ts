/**
 * @module Completion of argument values (MCP's `completion/complete`): the values a prompt argument or
 * a resource-template variable may take that start with what was typed so far.
 */

/** The most values one completion answers (MCP's cap); `total` and `hasMore` say how many more there were. */
export const MAX_COMPLETION_VALUES = 100;

/** Where a completion's candidate values come from: a fixed list, or a function of the typed prefix. */
export type CompletionSource =
  | readonly string[]
  | ((
      value: string,
      context: Readonly<Record<string, string>>,
    ) => readonly string[] | Promise<readonly string[]>);

/**
 * The values that start with `prefix` (ignoring case), in their order, each once.
 *
 * @example
 * ```ts
 * completeFrom(['Paris', 'park', 'Quito'], 'pa'); // ['Paris', 'park']
 * ```
 */
export function completeFrom(values: Iterable<string>, prefix: string): string[] {
  const lower = prefix.toLowerCase();
  const seen = new Set<string>();
  for (const value of values) {
    if (value.toLowerCase().startsWith(lower)) seen.add(value);
  }
  return [...seen];
}

/** The values `source` completes `value` to: a list filtered by the prefix, or the function's answer. */
export async function completeWith(
  source: CompletionSource | undefined,
  value: string,
  context: Readonly<Record<string, string>>,
): Promise<readonly string[]> {
  if (source === undefined) return [];
  if (typeof source === 'function') return source(value, context);
  return completeFrom(source, value);
}
