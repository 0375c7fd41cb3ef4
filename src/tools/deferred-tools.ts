/**
 * @module Deferred tool loading: the model (of an agent, or behind an MCP client) first sees
 * `search_tools` and the always-loaded tools; what it finds joins the following steps. For tool sets
 * too large to show whole.
 */
import { anyGlobMatches } from '../schema/index.js';
import {
  SEARCH_TOOLS_NAME,
  createSearchTool,
  foundToolNames,
  type SearchToolOptions,
} from './search-tools-tool.js';
import { ToolSet } from './tool-set.js';
import type { Tool, ToolCallOptions, ToolProvider, ToolResult } from './tool.js';

/** The `toolSearch` option of `ToolUseAgent`, `ReActAgent` and the MCP bridge. */
export interface DeferredToolsOptions {
  /** Names or globs (`*`) of tools the model always sees beside `search_tools`. @default [] */
  alwaysLoaded?: readonly string[];
  /** Tools one search returns when the model names no limit. @default DEFAULT_SEARCH_TOOLS_LIMIT (8) */
  limit?: number;
  /** Put each found tool's argument schema in the search result. @default false */
  withParameters?: boolean;
  /**
   * Search only while the provider has more tools than this; a smaller set is shown whole (what
   * `toolbus up --tool-search auto` uses). @default 0 (always search)
   */
  minTools?: number;
}

/** One run's (or session's) tools: what the model sees at each step. */
export interface DeferredToolList {
  /** The tools to show the model now; the same array until the base or the found tools change. */
  visible(): readonly Tool[];
  /** Takes note of a finished call: a `search_tools` result loads the tools it lists. Returns whether the list grew. */
  observe(result: Pick<ToolResult, 'name' | 'content' | 'isError'>): boolean;
}

/**
 * The tools an agent (or an MCP session) offers. Without search options, every tool of the provider
 * at every step. With them, `search_tools` plus the always-loaded tools, plus each tool a search of
 * this run found. Calls go to the provider (a tool it has is callable even before it is found),
 * `search_tools` to the search.
 */
export class DeferredTools {
  /** Where calls go: the provider, with `search_tools` in front when searching. */
  readonly calls: ToolProvider;
  readonly #base: ToolProvider;
  readonly #search: DeferredToolsOptions | undefined;
  readonly #searchTool: Tool | undefined;
  #alwaysFrom: readonly Tool[] | undefined;
  #always: readonly Tool[] = [];

  /** @param search the deferred-loading options; undefined shows every tool. */
  constructor(base: ToolProvider, search: DeferredToolsOptions | undefined) {
    this.#base = base;
    this.#search = search;
    if (!search) {
      this.calls = base;
      return;
    }
    const toolOptions: SearchToolOptions = {};
    if (search.limit !== undefined) toolOptions.limit = search.limit;
    if (search.withParameters !== undefined) toolOptions.withParameters = search.withParameters;
    const tool = createSearchTool(base, toolOptions);
    this.#searchTool = tool;
    const own = new ToolSet([tool]);
    this.calls = {
      list: () => this.#base.list(),
      get: (name) => (name === SEARCH_TOOLS_NAME ? tool : base.get(name)),
      call: (name: string, args: string | Record<string, unknown>, options?: ToolCallOptions) =>
        name === SEARCH_TOOLS_NAME ? own.call(name, args, options) : base.call(name, args, options),
    };
  }

  /** A run's view; `history` holds its tool results so far (a resumed run finds its earlier searches). */
  forRun(history: Iterable<Pick<ToolResult, 'name' | 'content' | 'isError'>> = []): DeferredToolList {
    if (!this.#searchTool) return { visible: () => this.#base.list(), observe: () => false };
    const found = new Set<string>();
    let foundCount = -1;
    let from: readonly Tool[] | undefined;
    let visible: readonly Tool[] = [];
    const observe = (result: Pick<ToolResult, 'name' | 'content' | 'isError'>): boolean => {
      if (result.name !== SEARCH_TOOLS_NAME || result.isError) return false;
      const before = found.size;
      for (const name of foundToolNames(result.content)) found.add(name);
      return found.size > before;
    };
    for (const result of history) observe(result);
    return {
      observe,
      visible: () => {
        const all = this.#base.list();
        if (all.length <= (this.#search?.minTools ?? 0)) return all;
        if (all === from && found.size === foundCount) return visible;
        from = all;
        foundCount = found.size;
        const always = this.#alwaysLoaded(all);
        const shown = new Set(always);
        const extra: Tool[] = [];
        for (const name of found) {
          const tool = this.#base.get(name);
          if (tool && !shown.has(tool) && name !== SEARCH_TOOLS_NAME) {
            shown.add(tool);
            extra.push(tool);
          }
        }
        visible = Object.freeze([this.#searchTool!, ...always, ...extra]);
        return visible;
      },
    };
  }

  #alwaysLoaded(all: readonly Tool[]): readonly Tool[] {
    const globs = this.#search?.alwaysLoaded ?? [];
    if (globs.length === 0) return [];
    if (all !== this.#alwaysFrom) {
      this.#alwaysFrom = all;
      this.#always = all.filter((t) => t.name !== SEARCH_TOOLS_NAME && anyGlobMatches(globs, t.name));
    }
    return this.#always;
  }
}
