/**
 * @module `mcpServerTools(params)`: every tool of an MCP server as a live toolbus tool provider, over one
 * long-lived session that follows `tools/list_changed` and survives server restarts.
 */
import { randomUUID } from 'node:crypto';
import {
  ToolError,
  isToolbusError,
  type Tool,
  type ToolCallOptions,
  type ToolProvider,
  type ToolResult,
} from '../../tools/index.js';
import { McpSession, type McpSessionOptions, type McpToolDefinition } from './mcp-session.js';
import { McpTool, toModelToolName } from './mcp-tool.js';
import type { McpServerParams } from './server-params.js';

/** Options of {@link mcpServerTools}. */
export interface McpServerToolsOptions extends McpSessionOptions {
  /** Aborts connecting and the first listing. @default none */
  signal?: AbortSignal;
  /** Keep only these remote tool names. @default every tool */
  include?: readonly string[];
  /** Prepended to every model-facing name, e.g. `files_`. @default '' */
  namePrefix?: string;
  /** Progress notifications of every call. @default none */
  onProgress?: (progress: { tool: string; progress: number; total?: number; message?: string }) => void;
}

/** Listener of {@link McpServerTools.onChange}. */
export type McpToolsChangeListener = (tools: readonly Tool[]) => void;

/**
 * The tools of one MCP server, kept current: a `ToolProvider` (`list`, `get`, `call`) with `onChange`,
 * iterable over the current tools. Pass it to an agent as is for live updates, or take `tools` for a
 * snapshot.
 */
export class McpServerTools implements ToolProvider, Iterable<Tool> {
  readonly #session: McpSession;
  readonly #options: McpServerToolsOptions;
  readonly #listeners = new Set<McpToolsChangeListener>();
  #tools: Map<string, McpTool> = new Map();
  #fingerprint = '';
  #unsubscribe: () => void;

  /** Use {@link mcpServerTools}. */
  constructor(session: McpSession, options: McpServerToolsOptions = {}) {
    this.#session = session;
    this.#options = { ...options };
    this.#unsubscribe = session.onToolsChanged((defs) => this.#apply(defs));
  }

  /** The shared session (server id, protocol era, connect count). */
  get session(): McpSession {
    return this.#session;
  }

  /** A snapshot of the current tools. */
  get tools(): readonly Tool[] {
    return this.list();
  }

  /** Resolves when closed; never rejects. */
  get closed(): Promise<void | Error> {
    return this.#session.closed;
  }

  list(): readonly McpTool[] {
    return [...this.#tools.values()];
  }

  get(name: string): McpTool | undefined {
    return this.#tools.get(name);
  }

  [Symbol.iterator](): Iterator<Tool> {
    return this.list()[Symbol.iterator]();
  }

  /** Calls `listener` with the new tools after every change. Returns an unsubscribe function. */
  onChange(listener: McpToolsChangeListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Lists the server's tools again and applies the changes. */
  async refresh(options: { signal?: AbortSignal } = {}): Promise<readonly McpTool[]> {
    const defs = await this.#session.listTools(options);
    this.#apply(defs);
    return this.list();
  }

  /**
   * Calls a tool with the toolbus error contract: never rejects for tool failures; unknown tool, invalid
   * arguments, server errors, timeouts and cancellation come back as `isError` results with `error.code`.
   */
  async call(
    name: string,
    args: string | Record<string, unknown>,
    options: ToolCallOptions = {},
  ): Promise<ToolResult> {
    const callId = options.callId ?? randomUUID();
    const tool = this.#tools.get(name);
    if (!tool) {
      const known = [...this.#tools.keys()].slice(0, 20).join("', '");
      const error = new ToolError(
        'unknown-tool',
        `unknown tool '${name}'; MCP server '${this.#session.id}' offers: '${known}'`,
        { toolName: name },
      );
      return { name, callId, content: error.message, isError: true, error };
    }
    try {
      const value = await tool.call(args, {
        ...(options.signal ? { signal: options.signal } : {}),
        ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
      });
      return { name, callId, content: tool.returnValueAsString(value), isError: false };
    } catch (caught) {
      const error =
        caught instanceof ToolError
          ? caught
          : new ToolError(
              isToolbusError(caught) ? caught.code : 'tool-error',
              `tool '${name}': ${String(caught)}`,
              {
                cause: caught,
                toolName: name,
              },
            );
      return { name, callId, content: error.message, isError: true, error };
    }
  }

  /** Closes the session (and stops a stdio child). Idempotent. */
  async close(): Promise<void> {
    this.#unsubscribe();
    this.#listeners.clear();
    await this.#session.close();
  }

  /** Alias of {@link close}. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /** Applies a new definition list; notifies listeners when anything changed. */
  #apply(defs: readonly McpToolDefinition[]): void {
    const include = this.#options.include;
    const kept = include ? defs.filter((d) => include.includes(d.name)) : [...defs];
    const fingerprint = JSON.stringify(kept);
    if (fingerprint === this.#fingerprint) return;
    this.#fingerprint = fingerprint;
    const next = new Map<string, McpTool>();
    for (const def of kept) {
      const tool = new McpTool(this.#session, def, {
        ...(this.#options.namePrefix ? { name: this.#options.namePrefix + toModelToolName(def.name) } : {}),
        ...(this.#options.onProgress ? { onProgress: this.#options.onProgress } : {}),
      });
      next.set(tool.name, tool);
    }
    this.#tools = next;
    const snapshot = this.list();
    for (const listener of this.#listeners) {
      try {
        listener(snapshot);
      } catch {
        // A listener's failure is its own.
      }
    }
  }
}

/**
 * Connects to an MCP server (stdio, Streamable HTTP or SSE), lists its tools and returns them as a live
 * provider over one shared, long-lived session.
 *
 * Rejects with a `ToolbusError`: `invalid-config` for bad params, `unavailable` when the server cannot be
 * reached, `cancelled` on abort.
 *
 * @example
 * ```ts
 * const tools = await mcpServerTools({ command: 'npx', args: ['-y', '@modelcontextprotocol/server-everything'] });
 * const agent = new ToolUseAgent({ model, tools });
 * // …
 * await tools.close();
 * ```
 */
export async function mcpServerTools(
  params: McpServerParams,
  options: McpServerToolsOptions = {},
): Promise<McpServerTools> {
  const session = new McpSession(params, options);
  const handle = new McpServerTools(session, options);
  try {
    await handle.refresh(options.signal ? { signal: options.signal } : {});
  } catch (error) {
    await handle.close();
    throw error;
  }
  return handle;
}
