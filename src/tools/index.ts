/**
 * @module tools: the Tool contract, FunctionTool, ToolSet and the error contract.
 */
export { ToolbusError, ToolError, ToolErrorCode, ToolbusErrorCode, isToolbusError } from './errors.js';
export { CancellationToken } from './cancellation-token.js';
export type {
  Tool,
  ToolSchema,
  ToolAnnotations,
  ToolCallContext,
  RunJsonOptions,
  ToolResult,
  ToolCallOptions,
  ToolProvider,
} from './tool.js';
