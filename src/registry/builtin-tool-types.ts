/**
 * @module The registry's built-in tool types besides the model ones: `tool-service` and `function`, and
 * the advice given for types provided by other packages (`http`, `mcp-tool`).
 */
import { createToolServiceTool, type ToolServiceClientCache } from '../services/index.js';
import type { JsonObject } from '../schema/index.js';
import { ToolbusError } from '../errors/index.js';
import type { Tool, ToolAnnotations, ToolSchema } from '../tools/index.js';
import type { ToolTypeContext, ToolTypeFactory } from './tool-type.js';

/** Where a tool type that is not built in comes from, for the problem report. */
export const TOOL_TYPE_PROVIDERS: Readonly<Record<string, string>> = {
  http: "pass toolTypes: { http: httpToolType() } to ToolRegistry (httpToolType is exported by 'toolbus')",
  'mcp-tool':
    "pass toolTypes: { 'mcp-tool': mcpToolType() } to ToolRegistry (mcpToolType is exported by 'toolbus/mcp')",
};

/**
 * `tool-service`: the seed's tool descriptor, checked against the `tool-service/<service>` item (or an
 * announced service of that id). Needs the registry's bus.
 */
export function toolServiceToolType(
  clients: () => ToolServiceClientCache | undefined,
): (descriptor: JsonObject, ctx: ToolTypeContext) => Tool {
  return (descriptor, ctx) => {
    const cache = clients();
    if (!cache) {
      throw new ToolbusError(
        'invalid-config',
        `config 'tool/${ctx.key}': a 'tool-service' tool needs a bus; pass { bus } to ToolRegistry`,
      );
    }
    const serviceId = descriptor['service'];
    const service =
      typeof serviceId === 'string' && serviceId !== '' ? ctx.lookup('tool-service', serviceId) : undefined;
    const withName = descriptor['name'] === undefined ? { ...descriptor, name: ctx.key } : descriptor;
    const { tool, warnings } = createToolServiceTool({
      clients: cache,
      // Announced services come and go: the client goes with the last tool that uses it.
      signal: ctx.signal,
      // The config key is the service's id (TrustGraph keys services by it): tools refer to the key, so
      // it wins over a different `id` in the item (the registry reports that mismatch as a warning).
      service:
        service && typeof service === 'object' && !Array.isArray(service)
          ? { ...service, id: serviceId }
          : service,
      tool: withName,
    });
    for (const warning of warnings) ctx.warn(warning);
    return tool;
  };
}

/**
 * `function`: a tool registered in code (`functions` option), referenced by name:
 * `{ "type": "function", "name": "get_stock_price" }`, or `{ "type": "function", "function":
 * "get_stock_price", "name": "stock", "description": "…" }` to expose it under another name or
 * description.
 */
export function functionToolType(functions: ReadonlyMap<string, Tool>): ToolTypeFactory {
  return (descriptor, ctx) => {
    const owner = `config 'tool/${ctx.key}'`;
    const ref = descriptor['function'] ?? descriptor['name'] ?? ctx.key;
    if (typeof ref !== 'string') {
      throw new ToolbusError(
        'invalid-config',
        `${owner}: field 'function' must name a function tool, got ${typeof ref}`,
      );
    }
    const tool = functions.get(ref);
    if (!tool) {
      const known = [...functions.keys()];
      throw new ToolbusError(
        'invalid-config',
        `${owner}: no function tool named '${ref}' was registered in code; ` +
          (known.length > 0
            ? `registered: ${known.map((k) => `'${k}'`).join(', ')}`
            : 'pass it in ToolRegistry({ functions: [...] })'),
      );
    }
    const name = descriptor['name'] ?? tool.name;
    const description = descriptor['description'] ?? tool.description;
    if (typeof name !== 'string' || typeof description !== 'string') {
      throw new ToolbusError('invalid-config', `${owner}: fields 'name' and 'description' must be strings`);
    }
    return name === tool.name && description === tool.description
      ? tool
      : new RenamedTool(tool, name, description);
  };
}

/** A tool shown under another name or description; calls go to the original. */
class RenamedTool implements Tool {
  readonly name: string;
  readonly description: string;
  readonly schema: ToolSchema;
  readonly schemaDialect?: string;
  readonly annotations?: ToolAnnotations;
  readonly #inner: Tool;

  constructor(inner: Tool, name: string, description: string) {
    this.#inner = inner;
    this.name = name;
    this.description = description;
    this.schema = { ...inner.schema, name, description };
    if (inner.schemaDialect !== undefined) this.schemaDialect = inner.schemaDialect;
    if (inner.annotations) this.annotations = inner.annotations;
  }

  runJson(...args: Parameters<Tool['runJson']>): Promise<unknown> {
    return this.#inner.runJson(...args);
  }

  returnValueAsString(value: unknown): string {
    return this.#inner.returnValueAsString(value);
  }
}

/** Checks the `type` field of a tool item. */
export function toolTypeOf(
  descriptor: unknown,
  ctx: Pick<ToolTypeContext, 'key'>,
): { type: string; descriptor: JsonObject } {
  const owner = `config 'tool/${ctx.key}'`;
  if (!descriptor || typeof descriptor !== 'object' || Array.isArray(descriptor)) {
    throw new ToolbusError(
      'invalid-config',
      `${owner}: a tool item must be a JSON object with a 'type' field`,
    );
  }
  const type = (descriptor as JsonObject)['type'];
  if (typeof type !== 'string' || type === '') {
    throw new ToolbusError(
      'invalid-config',
      `${owner}: field 'type' must name a tool type (tool-service, text-completion, prompt, function, http, mcp-tool)`,
    );
  }
  return { type, descriptor: descriptor as JsonObject };
}
