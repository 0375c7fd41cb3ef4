/**
 * @module `search_tools`: a tool a model calls to find tools by what they do, for sets too large to show
 * whole (deferred loading in agents, the MCP bridge's small-context mode).
 */
import { z } from 'zod';
import { FunctionTool } from './function-tool.js';
import { searchTools, type ToolSearchHit } from './tool-search.js';
import type { Tool, ToolProvider } from './tool.js';

/** The name the search tool has. */
export const SEARCH_TOOLS_NAME = 'search_tools';
/** Tools one search returns when the model names no limit. */
export const DEFAULT_SEARCH_TOOLS_LIMIT = 8;
/** The most tools one search of the model may return. */
export const MAX_SEARCH_TOOLS_LIMIT = 25;
/** Description text shown per tool found. */
const DESCRIPTION_CHARS = 300;

/** Options of {@link createSearchTool}. */
export interface SearchToolOptions {
  /** Tools returned when the model names no limit. @default DEFAULT_SEARCH_TOOLS_LIMIT (8) */
  limit?: number;
  /** Put each tool's argument schema in the result (for clients that call without listing). @default false */
  withParameters?: boolean;
  /** What the result says the model can do next. @default 'They can be called from your next step.' */
  hint?: string;
}

/** One tool in a `search_tools` result, as the model reads it. */
export interface FoundTool {
  name: string;
  description: string;
  parameters?: unknown;
}

/**
 * The `search_tools` tool over `tools`: arguments `{ query, limit? }`, result a JSON object
 * `{ "tools": [{ "name", "description" }], "hint" }`, best match first (see `searchTools`).
 *
 * @example
 * ```ts
 * const search = createSearchTool(registry.tools);
 * await new ToolSet([search]).call('search_tools', { query: 'weather' });
 * ```
 */
export function createSearchTool(tools: ToolProvider, options: SearchToolOptions = {}): Tool {
  const fallback = Math.min(options.limit ?? DEFAULT_SEARCH_TOOLS_LIMIT, MAX_SEARCH_TOOLS_LIMIT);
  const hint = options.hint ?? 'They can be called from your next step.';
  return new FunctionTool(
    ({ query, limit }) => {
      const hits = searchTools(tools, query, {
        limit: (limit ?? fallback) + 1,
        filter: (tool) => tool.name !== SEARCH_TOOLS_NAME,
      }).slice(0, limit ?? fallback);
      const found = hits.map((hit) => foundTool(hit, options.withParameters === true));
      return {
        tools: found,
        hint: found.length > 0 ? hint : 'No tool matched: try other words, e.g. what the tool acts on.',
      };
    },
    {
      name: SEARCH_TOOLS_NAME,
      description:
        'Find tools by what they do. Give a few keywords (e.g. "weather forecast city"); the best ' +
        'matching tools are returned with their descriptions.',
      parameters: z.object({
        query: z.string().min(1).max(500).describe('Keywords describing the task or the tool'),
        limit: z
          .number()
          .int()
          .min(1)
          .max(MAX_SEARCH_TOOLS_LIMIT)
          .optional()
          .describe(`How many tools to return (default ${fallback})`),
      }),
      annotations: { readOnly: true, idempotent: true },
    },
  );
}

/**
 * The names a `search_tools` result lists (what an agent loads for its next step); empty for anything
 * else, such as an error text.
 */
export function foundToolNames(content: string): string[] {
  let value: unknown;
  try {
    value = JSON.parse(content);
  } catch {
    return [];
  }
  const list = (value as { tools?: unknown } | null)?.tools;
  if (!Array.isArray(list)) return [];
  return list.flatMap((t: unknown) => {
    const name = (t as { name?: unknown } | null)?.name;
    return typeof name === 'string' ? [name] : [];
  });
}

function foundTool(hit: ToolSearchHit, withParameters: boolean): FoundTool {
  const description =
    hit.description.length > DESCRIPTION_CHARS
      ? `${hit.description.slice(0, DESCRIPTION_CHARS - 1)}…`
      : hit.description;
  return withParameters
    ? { name: hit.name, description, parameters: hit.tool.schema.parameters }
    : { name: hit.name, description };
}
