/**
 * @module Accepts tools as a provider or as a plain array.
 */
import { ToolSet } from '../tools/index.js';
import type { Tool, ToolProvider } from '../tools/index.js';

/** A provider as is; an array wrapped in a `ToolSet` (error contract, timeout, output cap). */
export function toToolProvider(tools: ToolProvider | readonly Tool[]): ToolProvider {
  return isProvider(tools) ? tools : new ToolSet(tools);
}

function isProvider(tools: ToolProvider | readonly Tool[]): tools is ToolProvider {
  return !Array.isArray(tools) && typeof (tools as ToolProvider).list === 'function';
}
