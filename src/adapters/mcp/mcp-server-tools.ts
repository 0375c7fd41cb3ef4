/**
 * @module `mcpServerTools(params)`: every tool of an MCP server as a live toolbus tool set, over one
 * long-lived session that follows `tools/list_changed` and survives server restarts.
 */
import {
  LiveToolSet,
  MAX_TOOL_NAME_LENGTH,
  ToolNameMap,
  type Tool,
  type ToolCallOptions,
  type ToolProvider,
  type ToolResult,
  type ToolSet,
  type ToolSetOptions,
} from '../../tools/index.js';
import { isToolbusError } from '../../errors/index.js';
import { McpSession, type McpSessionOptions, type McpToolDefinition } from './mcp-session.js';
import { McpTool } from './mcp-tool.js';
import type { McpServerParams } from './server-params.js';

/** Options of {@link mcpServerTools}. */
export interface McpServerToolsOptions extends McpSessionOptions {
  /** Aborts connecting and the first listing. @default none */
  signal?: AbortSignal;
  /** Keep only these remote tool names (one the server lacks is listed in `problems`). @default every tool */
  include?: readonly string[];
  /** Prepended to every model-facing name, e.g. `files_`. @default '' */
  namePrefix?: string;
  /** Progress notifications of every call. @default none */
  onProgress?: (progress: { tool: string; progress: number; total?: number; message?: string }) => void;
  /**
   * Options of the `ToolSet`s built for the live set (output cap, hooks, concurrency). Its flat
   * `timeoutMs` defaults to `Infinity` here: MCP calls use the server's timeout, reset by progress.
   * @default { timeoutMs: Infinity }
   */
  toolSet?: ToolSetOptions;
}

/** A tool of the server that could not be offered (e.g. an unusable schema), and why. */
export interface McpToolProblem {
  /** The tool's name on the server. */
  remoteName: string;
  message: string;
}

/**
 * The tools of one MCP server, kept current. `tools` is a `LiveToolSet` (replaced atomically when the
 * server's list changes); the handle itself is a `ToolProvider` (`list`, `get`, `call`) with `onChange`,
 * and iterable over the current tools. Pass it, or `tools`, to an agent for live updates.
 */
export class McpServerTools implements ToolProvider, Iterable<Tool> {
  /** The live set of this server's tools. */
  readonly tools: LiveToolSet;
  readonly #session: McpSession;
  readonly #options: McpServerToolsOptions;
  readonly #names = new ToolNameMap();
  #fingerprint = '';
  #problems: McpToolProblem[] = [];
  #unsubscribe: () => void;

  /** Use {@link mcpServerTools}, which also connects and lists. */
  constructor(session: McpSession, options: McpServerToolsOptions = {}) {
    this.#session = session;
    this.#options = { ...options };
    this.tools = new LiveToolSet([], { timeoutMs: Infinity, ...options.toolSet });
    this.#unsubscribe = session.onToolsChanged((defs) => this.#apply(defs));
  }

  /** The shared session (server id, protocol era, connect count). */
  get session(): McpSession {
    return this.#session;
  }

  /** Tools the server offers that could not be used, and `include` names it does not offer, with the reason. */
  get problems(): readonly McpToolProblem[] {
    return this.#problems;
  }

  /** Resolves when closed; never rejects. */
  get closed(): Promise<void | Error> {
    return this.#session.closed;
  }

  list(): readonly Tool[] {
    return this.tools.list();
  }

  get(name: string): Tool | undefined {
    return this.tools.get(name);
  }

  [Symbol.iterator](): Iterator<Tool> {
    return this.list()[Symbol.iterator]();
  }

  /** The server's name for a model-facing tool name (reverses the name encoding and the prefix). */
  remoteName(name: string): string {
    const tool = this.tools.get(name);
    if (tool instanceof McpTool) return tool.remoteName;
    const prefix = this.#options.namePrefix ?? '';
    return this.#names.decode(name.startsWith(prefix) ? name.slice(prefix.length) : name);
  }

  /** Calls `listener` with the new tools after every change. Returns an unsubscribe function. */
  onChange(listener: (tools: readonly Tool[], set: ToolSet) => void): () => void {
    return this.tools.onChange((set) => listener(set.list(), set));
  }

  /** Lists the server's tools again and applies the changes. */
  async refresh(options: { signal?: AbortSignal } = {}): Promise<readonly Tool[]> {
    const defs = await this.#session.listTools(options);
    this.#apply(defs);
    return this.list();
  }

  /**
   * Calls a tool with the toolbus error contract (see `ToolSet.call`): never rejects for tool failures.
   */
  call(name: string, args: string | Record<string, unknown>, options?: ToolCallOptions): Promise<ToolResult> {
    return this.tools.call(name, args, options);
  }

  /** Closes the session (and stops a stdio child). Idempotent. */
  async close(): Promise<void> {
    this.#unsubscribe();
    await this.#session.close();
  }

  /** Alias of {@link close}. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /** The prefixed, encoded name; shortened with a hash when the prefix pushes it past 64 characters. */
  #modelName(remote: string): string {
    const prefix = this.#options.namePrefix ?? '';
    const name = prefix + this.#names.encode(remote);
    return name.length <= MAX_TOOL_NAME_LENGTH ? name : this.#names.encode(prefix + remote);
  }

  /** Applies a new definition list; replaces the live set when anything changed. */
  #apply(defs: readonly McpToolDefinition[]): void {
    const include = this.#options.include;
    const kept = include ? defs.filter((d) => include.includes(d.name)) : [...defs];
    const fingerprint = JSON.stringify(kept);
    if (fingerprint === this.#fingerprint) return;
    this.#fingerprint = fingerprint;
    const tools: McpTool[] = [];
    const problems: McpToolProblem[] = [];
    // A name in `include` that the server does not offer (a typo, a renamed tool) must not vanish silently.
    for (const wanted of include ?? []) {
      if (!defs.some((d) => d.name === wanted)) {
        problems.push({
          remoteName: wanted,
          message: `MCP server '${this.#session.id}' offers no tool '${wanted}' (named in include)`,
        });
      }
    }
    for (const def of kept) {
      try {
        tools.push(
          new McpTool(this.#session, def, {
            name: this.#modelName(def.name),
            ...(this.#options.onProgress ? { onProgress: this.#options.onProgress } : {}),
          }),
        );
      } catch (error) {
        problems.push({
          remoteName: def.name,
          message: isToolbusError(error) ? error.message : String(error),
        });
      }
    }
    this.#problems = problems;
    this.tools.replace(tools);
  }
}

/**
 * Connects to an MCP server (stdio, Streamable HTTP or SSE), lists its tools and returns them as a live
 * tool set over one shared, long-lived session.
 *
 * Rejects with a `ToolbusError`: `invalid-config` for bad params, `unavailable` when the server cannot be
 * reached, `unauthorized` or `forbidden` when a server with `oauth` refuses, `cancelled` on abort.
 *
 * @example
 * ```ts
 * const mcp = await mcpServerTools({ command: 'npx', args: ['-y', '@modelcontextprotocol/server-everything'] });
 * const agent = new ToolUseAgent({ model, tools: mcp.tools });
 * // …
 * await mcp.close();
 * ```
 */
export async function mcpServerTools(
  params: McpServerParams,
  options: McpServerToolsOptions = {},
): Promise<McpServerTools> {
  let handle: McpServerTools | undefined;
  try {
    const session = new McpSession(params, options);
    handle = new McpServerTools(session, options);
    await handle.refresh(options.signal ? { signal: options.signal } : {});
    return handle;
  } catch (error) {
    await handle?.close();
    throw error;
  }
}
