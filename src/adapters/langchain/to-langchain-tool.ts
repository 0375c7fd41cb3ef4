/**
 * @module `toLangChainTool`: any toolbus `Tool` (function tools, HTTP tools, MCP tools, tool services) as
 * a LangChain `DynamicStructuredTool`.
 */
import { ToolMessage } from '@langchain/core/messages';
import { DynamicStructuredTool } from '@langchain/core/tools';
import type { ToolRunnableConfig } from '@langchain/core/tools';
import { ToolError } from '../../tools/index.js';
import { isToolbusError } from '../../errors/index.js';
import type { Tool } from '../../tools/index.js';

/** Options of {@link toLangChainTool}. */
export interface ToLangChainToolOptions {
  /** @default the toolbus tool's name */
  name?: string;
  /** @default the toolbus tool's description */
  description?: string;
  /**
   * What a failed call does.
   * - `false`: throw the {@link ToolError} (LangChain calls `handleToolError` on the callbacks first;
   *   LangGraph's `ToolNode` turns it into an error `ToolMessage`).
   * - `true`: return the error message as the tool's output (an error `ToolMessage` when invoked with a
   *   tool call), so the model can read it and retry; callbacks see `handleToolEnd`.
   * - a function: like `true`, with the text it returns.
   * @default false
   */
  handleToolError?: boolean | ((error: ToolError) => string);
  /**
   * The end user forwarded to tool services when the call's `config.configurable.user` is not set.
   * @default undefined
   */
  user?: string;
  /** Whether an agent should stop after this tool answers. @default false */
  returnDirect?: boolean;
}

/**
 * Turns a toolbus {@link Tool} into a LangChain `DynamicStructuredTool` with the tool's JSON schema, so
 * LangChain and LangGraph users can call it.
 *
 * - LangChain validates the input against the JSON schema first (with `verboseParsingErrors`), then
 *   the toolbus tool validates it again in `runJson`.
 * - `config.signal` is passed to `runJson`, so aborting a LangChain run cancels the toolbus call (a
 *   remote tool service included). `config.toolCall.id` becomes the call id, and
 *   `config.configurable.user` (else `options.user`) the end user.
 * - The output is `tool.returnValueAsString(value)`: a string.
 * - A failure is a {@link ToolError} (`code` `invalid-arguments`, `tool-error`, `timeout`, `cancelled`,
 *   `unavailable`, `too-large`), thrown unless `handleToolError` says otherwise.
 *
 * @example
 * ```ts
 * const lcTool = toLangChainTool(new HttpTool({ name: 'get-weather', url: 'https://api.example.com/w/{city}', method: 'GET' }));
 * const text = await lcTool.invoke({ city: 'Paris' });
 * ```
 */
export function toLangChainTool(tool: Tool, options: ToLangChainToolOptions = {}): DynamicStructuredTool {
  const name = options.name ?? tool.name;
  const handle = options.handleToolError ?? false;
  const defaultUser = options.user;
  return new DynamicStructuredTool({
    name,
    description: options.description ?? tool.description,
    schema: structuredClone(tool.schema.parameters),
    returnDirect: options.returnDirect ?? false,
    verboseParsingErrors: true,
    func: async (input: unknown, _runManager: unknown, config?: ToolRunnableConfig) => {
      const configured: unknown = config?.configurable?.['user'];
      const user = typeof configured === 'string' ? configured : defaultUser;
      const callId = config?.toolCall?.id;
      try {
        const value = await tool.runJson(input, config?.signal, {
          ...(callId === undefined ? {} : { callId }),
          ...(user === undefined ? {} : { user }),
        });
        return tool.returnValueAsString(value);
      } catch (error) {
        const failure = isToolbusError(error)
          ? error
          : new ToolError(
              'tool-error',
              `tool '${tool.name}': ${error instanceof Error ? error.message : String(error)}`,
              {
                toolName: tool.name,
                cause: error,
              },
            );
        if (handle === false) throw failure;
        const asToolError =
          failure instanceof ToolError
            ? failure
            : new ToolError(failure.code, failure.message, { toolName: tool.name, cause: failure });
        const content = typeof handle === 'function' ? handle(asToolError) : failure.message;
        if (callId === undefined) return content;
        return new ToolMessage({ content, tool_call_id: callId, name, status: 'error' });
      }
    },
  });
}
