/**
 * @module Views of a tool provider that show only some of its tools (a profile, a principal's policy, a
 * run's globs): listed, found, searched and called as a smaller set, following the base as it changes.
 */
import { randomUUID } from 'node:crypto';
import type { Tool, ToolCallOptions, ToolProvider, ToolResult } from './tool.js';
import { narrowSearch, searchTools, type ToolSearchHit, type ToolSearchOptions } from './tool-search.js';
import { unknownToolError } from './tool-set.js';

/** A tool provider that may say when its tools change (a `LiveToolSet`, a registry's tools, a view). */
export interface ObservableToolProvider extends ToolProvider {
  onChange?(listener: () => void): unknown;
}

/** Options of {@link toolView}. */
export interface ToolViewOptions {
  /**
   * Whether the view shows `tool`. Must depend on the tool alone (and on what `version` says), as the
   * view's list is kept until the base's list or the version changes.
   */
  accepts: (tool: Tool) => boolean;
  /**
   * Anything else the view depends on, compared on each use (e.g. the profile item's value): a change
   * rebuilds the list. @default none
   */
  version?: () => unknown;
  /**
   * The result of calling a tool the base has but the view hides. @default the view's own unknown-tool
   * error (as if the tool did not exist)
   */
  hidden?: (name: string, callId: string) => ToolResult;
}

/**
 * `base` narrowed to the tools `options.accepts`: the others are not listed, `get` does not find them,
 * searches skip them, and calling one gives `options.hidden`'s result or an unknown-tool error naming
 * only the view's tools. The list is computed once per base list (a registry change), not per call.
 */
export function toolView(base: ObservableToolProvider, options: ToolViewOptions): ObservableToolProvider {
  let from: readonly Tool[] | undefined;
  let version: unknown;
  let list: readonly Tool[] = [];
  const current = (): readonly Tool[] => {
    const all = base.list();
    const v = options.version?.();
    if (all !== from || v !== version) {
      from = all;
      version = v;
      list = Object.freeze(all.filter(options.accepts));
    }
    return list;
  };
  const visible = (tool: Tool | undefined): tool is Tool => tool !== undefined && options.accepts(tool);
  const view: ObservableToolProvider = {
    list: current,
    get: (name) => {
      const tool = base.get(name);
      return visible(tool) ? tool : undefined;
    },
    call(name: string, args: string | Record<string, unknown>, callOptions: ToolCallOptions = {}) {
      const tool = base.get(name);
      if (visible(tool)) return base.call(name, args, callOptions);
      const callId = callOptions.callId ?? randomUUID();
      if (tool !== undefined && options.hidden) return Promise.resolve(options.hidden(name, callId));
      const error = unknownToolError(name, current());
      return Promise.resolve({ name, callId, content: error.message, isError: true, error });
    },
    search: (query: string, searchOptions: ToolSearchOptions = {}): ToolSearchHit[] =>
      searchTools(base, query, narrowSearch(searchOptions, options.accepts)),
  };
  if (base.onChange) view.onChange = (listener) => base.onChange?.(listener);
  return view;
}
