/**
 * @module `LiveToolSet`: a `ToolSet` that can be replaced atomically while calls are in flight.
 */
import type { Tool, ToolCallOptions, ToolProvider, ToolResult } from './tool.js';
import { ToolSet, type ToolSetOptions } from './tool-set.js';
import { ToolSearchIndex, type ToolSearchHit, type ToolSearchOptions } from './tool-search.js';

/**
 * Holds the current {@link ToolSet} and swaps it in one step. A call captures the set current when it
 * starts and finishes on it, so a swap never disturbs calls in flight; later calls see the new set.
 * Each set keeps its own concurrency cap.
 *
 * @example
 * ```ts
 * const live = new LiveToolSet([echo]);
 * live.onChange((set) => console.log(set.list().map((t) => t.name)));
 * live.replace([echo, getStockPrice]);
 * ```
 */
export class LiveToolSet implements ToolProvider {
  #current: ToolSet;
  readonly #options: ToolSetOptions;
  readonly #listeners = new Set<(set: ToolSet) => void>();
  /** Made on the first search, then kept in step with each replaced set (only what changed). */
  #index: ToolSearchIndex | undefined;

  /**
   * @param initial a ToolSet, or tools to build one from with `options`. @default an empty set
   * @param options used to build a ToolSet from plain tools (here and in {@link replace}).
   */
  constructor(initial: ToolSet | Iterable<Tool> = [], options: ToolSetOptions = {}) {
    this.#options = { ...options };
    this.#current = this.#toSet(initial);
  }

  /** The set calls start on now. */
  get current(): ToolSet {
    return this.#current;
  }

  /**
   * Swaps in `next` atomically, then tells the `onChange` listeners (in order). If a listener throws,
   * the others still run and the first error is rethrown once they have; the swap stands.
   *
   * @throws {ToolbusError} `invalid-name` when `next` holds invalid or duplicate names (nothing swapped).
   */
  replace(next: ToolSet | Iterable<Tool>): ToolSet {
    const set = this.#toSet(next);
    this.#current = set;
    let first: { error: unknown } | undefined;
    for (const listener of [...this.#listeners]) {
      try {
        listener(set);
      } catch (error) {
        first ??= { error };
      }
    }
    if (first !== undefined) throw first.error;
    return set;
  }

  /** Calls `listener` after each {@link replace}; returns a function that removes it. */
  onChange(listener: (set: ToolSet) => void): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  /** The current set's tools. */
  list(): readonly Tool[] {
    return this.#current.list();
  }

  /** The current set's tool called `name`. */
  get(name: string): Tool | undefined {
    return this.#current.get(name);
  }

  /** Calls on the set current now; see {@link ToolSet.call}. Never rejects for tool failures. */
  call(name: string, args: string | Record<string, unknown>, options?: ToolCallOptions): Promise<ToolResult> {
    return this.#current.call(name, args, options);
  }

  /**
   * The tools that best match `query` (BM25 over names, descriptions, arguments and tags), best first.
   * One index serves every set this holds: a replace re-indexes only the tools that changed.
   *
   * @throws ToolbusError `usage` for an empty query or a bad limit.
   */
  search(query: string, options?: ToolSearchOptions): ToolSearchHit[] {
    return (this.#index ??= new ToolSearchIndex(() => this.list())).search(query, options);
  }

  #toSet(tools: ToolSet | Iterable<Tool>): ToolSet {
    return tools instanceof ToolSet ? tools : new ToolSet(tools, this.#options);
  }
}
