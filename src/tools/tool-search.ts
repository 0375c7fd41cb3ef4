/**
 * @module Tool search: a BM25 index (minisearch) over tool names, descriptions, argument names and
 * descriptions, and tags, kept in step with a changing tool list by diffing it, not rebuilding.
 */
import MiniSearch from 'minisearch';
import { ToolbusError } from '../errors/index.js';
import type { Tool, ToolProvider } from './tool.js';

/** What a search returns for each tool found, best first. */
export interface ToolSearchHit {
  name: string;
  description: string;
  /** The tool's tags (empty when it has none). */
  tags: readonly string[];
  /** BM25 relevance; only the order means something. */
  score: number;
  tool: Tool;
}

/** Options of a tool search. */
export interface ToolSearchOptions {
  /** Most tools returned. @default DEFAULT_SEARCH_LIMIT (10); at most MAX_SEARCH_LIMIT */
  limit?: number;
  /** Only tools carrying every one of these tags. @default any */
  tags?: readonly string[];
  /** Only tools it accepts (views use it: a profile, a principal's policy). @default any */
  filter?: (tool: Tool) => boolean;
}

/** Results of a search when it names no limit. */
export const DEFAULT_SEARCH_LIMIT = 10;
/** The most results one search returns. */
export const MAX_SEARCH_LIMIT = 100;
/** Longest query read; the rest is ignored. */
const MAX_QUERY_LENGTH = 500;
/** Text taken from a tool's description and arguments for the index (keeps a huge schema cheap). */
const MAX_FIELD_LENGTH = 2_000;

/** A provider that answers searches itself (a `LiveToolSet`, a view over one). */
export interface SearchableToolProvider extends ToolProvider {
  search(query: string, options?: ToolSearchOptions): ToolSearchHit[];
}

interface ToolDocument {
  id: string;
  name: string;
  description: string;
  args: string;
  tags: string;
}

/**
 * An index over a tool list that follows it: each search first compares the list with what is indexed
 * (by identity: an unchanged `ToolSet` list costs one comparison) and adds, replaces or drops only the
 * tools that changed.
 *
 * @example
 * ```ts
 * const index = new ToolSearchIndex(() => registry.tools.list());
 * index.search('weather forecast', { limit: 5 }).map((hit) => hit.name);
 * ```
 */
export class ToolSearchIndex {
  readonly #list: () => readonly Tool[];
  readonly #mini = new MiniSearch<ToolDocument>({
    fields: ['name', 'description', 'args', 'tags'],
    tokenize: tokenize,
    processTerm,
    autoVacuum: { minDirtCount: 200, minDirtFactor: 0.2, batchSize: 1_000, batchWait: 10 },
  });
  /** The tools indexed now, by name. */
  readonly #indexed = new Map<string, Tool>();
  /** Each indexed tool's distinct terms, and how many tools have each term (document frequency). */
  readonly #termSets = new Map<string, ReadonlySet<string>>();
  readonly #frequency = new Map<string, number>();
  #synced: readonly Tool[] | undefined;

  /** @param list the tools to index, read again before each search. */
  constructor(list: () => readonly Tool[]) {
    this.#list = list;
  }

  /** How many tools are indexed (after the last search or {@link sync}). */
  get size(): number {
    return this.#indexed.size;
  }

  /** Brings the index up to date with the list now (searches do it themselves). */
  sync(): void {
    const list = this.#list();
    if (list === this.#synced) return;
    const names = new Set<string>();
    for (const tool of list) {
      names.add(tool.name);
      const indexed = this.#indexed.get(tool.name);
      if (indexed === tool) continue;
      if (indexed !== undefined) this.#drop(tool.name);
      const document = toDocument(tool);
      this.#mini.add(document);
      this.#indexed.set(tool.name, tool);
      const terms = documentTerms(document);
      this.#termSets.set(tool.name, terms);
      for (const term of terms) this.#frequency.set(term, (this.#frequency.get(term) ?? 0) + 1);
    }
    if (names.size !== this.#indexed.size) {
      for (const name of this.#indexed.keys()) {
        if (names.has(name)) continue;
        this.#drop(name);
        this.#indexed.delete(name);
      }
    }
    this.#synced = list;
  }

  /**
   * The tools that best match `query` (words of their names, descriptions, arguments or tags; prefixes
   * and small typos count), best first.
   *
   * @throws ToolbusError `usage` for an empty query or a bad limit.
   */
  search(query: string, options: ToolSearchOptions = {}): ToolSearchHit[] {
    const limit = searchLimit(options.limit);
    const text = checkQuery(query);
    this.sync();
    const tags = options.tags;
    const filter = options.filter;
    const hits: ToolSearchHit[] = [];
    const { rare, common } = this.#split(text);
    let results: { id: unknown; score: number }[] = this.#mini.search(rare, SEARCH_OPTIONS);
    if (common.length > 0) {
      // The words most tools share ranked the best candidates of the rarer ones: each one a tool has
      // raises its score, as BM25 would have, a little.
      results = results.slice(0, RERANKED).map((r) => {
        const terms = this.#termSets.get(r.id as string);
        const matched = terms ? common.filter((term) => terms.has(term)).length : 0;
        return { id: r.id, score: r.score * (1 + matched / common.length) };
      });
      results.sort((a, b) => b.score - a.score);
      // Too few tools have the rarer words: the rest come from the whole query, after them.
      if (results.length < limit) {
        const seen = new Set(results.map((r) => r.id));
        for (const r of this.#mini.search(text, SEARCH_OPTIONS)) if (!seen.has(r.id)) results.push(r);
      }
    }
    for (const result of results) {
      const tool = this.#indexed.get(result.id as string);
      if (tool === undefined) continue;
      if (tags && !tags.every((tag) => tool.tags?.includes(tag))) continue;
      if (filter && !filter(tool)) continue;
      hits.push({
        name: tool.name,
        description: tool.description,
        tags: tool.tags ?? [],
        score: result.score,
        tool,
      });
      if (hits.length >= limit) break;
    }
    return hits;
  }

  /** Removes a tool's document and its terms' counts. */
  #drop(name: string): void {
    this.#mini.discard(name);
    for (const term of this.#termSets.get(name) ?? []) {
      const left = (this.#frequency.get(term) ?? 1) - 1;
      if (left > 0) this.#frequency.set(term, left);
      else this.#frequency.delete(term);
    }
    this.#termSets.delete(name);
  }

  /**
   * The query split into the words that pick tools out and those most tools have ("get", "region" in
   * every description): a search walks every tool a word matches, so the common ones only re-rank the
   * candidates the others found. A query of common words alone is searched as it is.
   */
  #split(text: string): { rare: string; common: string[] } {
    const terms = [
      ...new Set(
        tokenize(text)
          .map(processTerm)
          .filter((t): t is string => t !== null),
      ),
    ];
    if (terms.length < 2) return { rare: text, common: [] };
    const limit = Math.max(COMMON_FLOOR, this.#indexed.size * COMMON_SHARE);
    const common = terms.filter((term) => (this.#frequency.get(term) ?? 0) > limit);
    if (common.length === 0 || common.length === terms.length) return { rare: text, common: [] };
    return { rare: terms.filter((term) => !common.includes(term)).join(' '), common };
  }
}

const SEARCH_OPTIONS = {
  boost: { name: 3, tags: 2, args: 1, description: 1 },
  prefix: (term: string) => term.length >= 3,
  fuzzy: (term: string) => (term.length >= 5 ? 0.2 : false),
  weights: { fuzzy: 0.3, prefix: 0.5 },
};

/** A query word in more than this share of the tools (and more than COMMON_FLOOR) only re-ranks. */
const COMMON_SHARE = 0.03;
const COMMON_FLOOR = 50;
/** How many of the rarer words' best candidates the common words re-rank. */
const RERANKED = 200;

/** English words that say nothing about what a tool does. */
const STOP_WORDS = new Set(
  (
    'a an and are as at be by for from has have in into is it its of on or that the this to was ' +
    'which will with you your'
  ).split(' '),
);

/** A term as indexed and searched: lower case; null for a stop word. */
function processTerm(term: string): string | null {
  const lower = term.toLowerCase();
  return STOP_WORDS.has(lower) ? null : lower;
}

/** The distinct terms of a document, as the index makes them. */
function documentTerms(document: ToolDocument): Set<string> {
  const terms = new Set<string>();
  for (const text of [document.name, document.description, document.args, document.tags]) {
    for (const word of tokenize(text)) {
      const term = processTerm(word);
      if (term !== null) terms.add(term);
    }
  }
  return terms;
}

/** One index per provider searched without its own `search` (a plain `ToolSet`, an array's provider). */
const indexes = new WeakMap<ToolProvider, ToolSearchIndex>();

/**
 * Searches a provider's tools: with its own `search` when it has one (a `LiveToolSet` keeps its index
 * across reloads; views filter their base's), else with an index kept for that provider.
 *
 * @throws ToolbusError `usage` for an empty query or a bad limit.
 */
export function searchTools(
  provider: ToolProvider,
  query: string,
  options: ToolSearchOptions = {},
): ToolSearchHit[] {
  const own = (provider as Partial<SearchableToolProvider>).search;
  if (typeof own === 'function') return own.call(provider, query, options);
  let index = indexes.get(provider);
  if (index === undefined) indexes.set(provider, (index = new ToolSearchIndex(() => provider.list())));
  return index.search(query, options);
}

/** `options` with `filter` narrowed to tools `accept` takes too: how a view searches its base. */
export function narrowSearch(options: ToolSearchOptions, accept: (tool: Tool) => boolean): ToolSearchOptions {
  const inner = options.filter;
  return { ...options, filter: inner ? (tool) => accept(tool) && inner(tool) : accept };
}

function searchLimit(limit: number | undefined): number {
  if (limit === undefined) return DEFAULT_SEARCH_LIMIT;
  if (!Number.isInteger(limit) || limit < 1) {
    throw new ToolbusError('usage', `search limit must be a positive integer, got ${String(limit)}`);
  }
  return Math.min(limit, MAX_SEARCH_LIMIT);
}

function checkQuery(query: unknown): string {
  if (typeof query !== 'string' || query.trim() === '') {
    throw new ToolbusError('usage', 'a tool search needs a query: words of what the tool should do');
  }
  return query.length > MAX_QUERY_LENGTH ? query.slice(0, MAX_QUERY_LENGTH) : query;
}

/** Words, with `camelCase`, `snake_case` and `kebab-case` names split into theirs. */
function tokenize(text: string): string[] {
  const words = text
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .split(/[^\p{L}\p{N}]+/u);
  return words.filter((w) => w !== '');
}

function toDocument(tool: Tool): ToolDocument {
  return {
    id: tool.name,
    name: tool.name,
    description: tool.description.slice(0, MAX_FIELD_LENGTH),
    args: argumentText(tool).slice(0, MAX_FIELD_LENGTH),
    tags: (tool.tags ?? []).join(' '),
  };
}

/** The names and descriptions of a tool's arguments, two levels deep. */
function argumentText(tool: Tool): string {
  const parts: string[] = [];
  const visit = (schema: unknown, depth: number): void => {
    if (!schema || typeof schema !== 'object' || depth > 2) return;
    const properties = (schema as { properties?: unknown }).properties;
    if (!properties || typeof properties !== 'object') return;
    for (const [name, value] of Object.entries(properties as Record<string, unknown>)) {
      parts.push(name);
      const description = (value as { description?: unknown } | null)?.description;
      if (typeof description === 'string') parts.push(description);
      visit(value, depth + 1);
      const items = (value as { items?: unknown } | null)?.items;
      if (items) visit(items, depth + 1);
    }
  };
  visit(tool.schema.parameters, 1);
  return parts.join(' ');
}
