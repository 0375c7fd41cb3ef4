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
export {
  TOOL_NAME_PATTERN,
  MAX_TOOL_NAME_LENGTH,
  validateToolName,
  encodeToolName,
  decodeToolName,
  ToolNameMap,
} from './tool-name.js';
export { BaseTool, formatInvalidArguments } from './base-tool.js';
export type { BaseToolOptions, SignalLike } from './base-tool.js';
export { FunctionTool } from './function-tool.js';
export type { FunctionToolOptions, ToolFunction, InferToolArgs } from './function-tool.js';
