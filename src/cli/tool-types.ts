/**
 * @module The config tool types the CLI wires into every registry: `http` (built in) and `mcp-tool`
 * (the MCP SDK, loaded only when an `mcp-tool` item first appears).
 */
import { httpToolType } from '../adapters/http/index.js';
import type { ConfigStore } from '../config/index.js';
import type { ToolTypeFactory } from '../registry/index.js';
import { importLeaf } from './import-leaf.js';

/**
 * Tool types for `ToolRegistry`'s `toolTypes` option. `store` is the registry's config store: an `mcp`
 * item with `oauth` keeps its tokens there (`mcp-oauth/<id>`, written by `toolbus mcp login`).
 */
export function defaultToolTypes(store: ConfigStore): Record<string, ToolTypeFactory> {
  let mcp: Promise<ToolTypeFactory> | undefined;
  const mcpToolType: ToolTypeFactory = async (descriptor, ctx) => {
    mcp ??= importLeaf('mcp', () => import('../adapters/mcp/index.js')).then((m) => m.mcpToolType({ store }));
    return (await mcp)(descriptor, ctx);
  };
  return { http: httpToolType(), 'mcp-tool': mcpToolType };
}
