/**
 * @module What `GET /api/v1/tools?detail=1` adds to each tool: where it comes from, the schema the model
 * sees in strict mode, its output schema, annotations, whether it needs approval, and the registry's
 * problems of its config item.
 */
import { compileSchema, SchemaProfile, type ObjectJsonSchema } from '../schema/index.js';
import type { Tool } from '../tools/index.js';
import type { GatewayProblem } from './tool-routes.js';

/** Where a tool comes from, as `GET /api/v1/tools?detail=1` shows it. */
export interface GatewayToolOrigin {
  /** `config` (a `tool` item), `announced` (a self-announcing service), `mcp` (an MCP server's tool), `code`. */
  source: 'config' | 'announced' | 'mcp' | 'code';
  /** Its config item, e.g. `tool/tell-joke`. @default none (not from a config item) */
  key?: string;
  /** The key its problems are reported under, e.g. `announced/joke-service/tell-joke`. @default key */
  problemKey?: string;
}

/** What the detailed listing needs of the gateway. */
export interface ToolDetailOptions {
  /** @default every tool is `code` */
  toolOrigin: ((name: string) => GatewayToolOrigin | undefined) | undefined;
  problems: (() => readonly GatewayProblem[]) | undefined;
  /** The strict schemas made so far, by tool: a tool object never changes, so neither does its schema. */
  strictSchemas: WeakMap<Tool, StrictSchema>;
}

/** A tool's parameters in the strict profile, or why strict mode cannot express them. */
type StrictSchema = { parameters: ObjectJsonSchema } | { error: string };

/** Problems by key, made once per listing. */
export function problemsByKey(
  problems: (() => readonly GatewayProblem[]) | undefined,
): Map<string, { severity: string; message: string }[]> {
  const byKey = new Map<string, { severity: string; message: string }[]>();
  for (const p of problems?.() ?? []) {
    const entry = { severity: p.severity ?? 'error', message: p.message };
    const list = byKey.get(p.key);
    if (list) list.push(entry);
    else byKey.set(p.key, [entry]);
  }
  return byKey;
}

/** The detail fields of one tool. */
export function toolDetail(
  tool: Tool,
  options: ToolDetailOptions,
  problems: ReadonlyMap<string, readonly { severity: string; message: string }[]>,
): Record<string, unknown> {
  const origin = options.toolOrigin?.(tool.name) ?? { source: 'code' };
  const problemKey = origin.problemKey ?? origin.key;
  const strict = strictSchemaOf(tool, options.strictSchemas);
  const approval = tool.needsApproval;
  return {
    source: origin.source,
    ...(origin.key !== undefined ? { key: origin.key } : {}),
    // null with a reason when strict mode cannot express the schema (a free-form object, say).
    strictParameters: 'parameters' in strict ? strict.parameters : null,
    ...('error' in strict ? { strictError: strict.error } : {}),
    ...(tool.outputSchema !== undefined ? { outputSchema: tool.outputSchema } : {}),
    ...(tool.annotations !== undefined ? { annotations: tool.annotations } : {}),
    needsApproval: approval !== undefined && approval !== false,
    problems: problemKey === undefined ? [] : (problems.get(problemKey) ?? []),
  };
}

function strictSchemaOf(tool: Tool, cache: WeakMap<Tool, StrictSchema>): StrictSchema {
  let strict = cache.get(tool);
  if (strict === undefined) {
    try {
      strict = { parameters: compileSchema(tool.schema, SchemaProfile.OpenAIStrict).parameters };
    } catch (error) {
      strict = { error: error instanceof Error ? error.message : String(error) };
    }
    cache.set(tool, strict);
  }
  return strict;
}
