/**
 * @module A tool with its approval rule or tags set from outside (a config item's `approval` and
 * `tags` fields), whatever its kind.
 */
import type { ObjectJsonSchema } from '../schema/index.js';
import type { NeedsApproval } from './approval.js';
import type { RunJsonOptions, Tool, ToolAnnotations, ToolSchema } from './tool.js';
import { checkToolTags } from './tool-tags.js';

/** What {@link decorateTool} sets; a field left out keeps the inner tool's. */
export interface ToolDecoration {
  needsApproval?: NeedsApproval;
  tags?: readonly string[];
}

/**
 * `tool` with `needsApproval` and/or `tags` replaced; everything else (schema, runs, timeouts) is the
 * inner tool's. Returns `tool` itself when there is nothing to set.
 *
 * @throws ToolbusError `invalid-schema` for a bad tag.
 */
export function decorateTool(tool: Tool, decoration: ToolDecoration): Tool {
  if (decoration.needsApproval === undefined && decoration.tags === undefined) return tool;
  return new DecoratedTool(tool, decoration);
}

class DecoratedTool implements Tool {
  readonly name: string;
  readonly description: string;
  readonly schema: ToolSchema;
  readonly schemaDialect?: string;
  readonly annotations?: ToolAnnotations;
  readonly timeoutMs?: number;
  readonly maxTotalTimeoutMs?: number;
  readonly needsApproval?: NeedsApproval;
  readonly tags?: readonly string[];
  readonly outputSchema?: ObjectJsonSchema;
  readonly #inner: Tool;

  constructor(inner: Tool, decoration: ToolDecoration) {
    this.#inner = inner;
    this.name = inner.name;
    this.description = inner.description;
    this.schema = inner.schema;
    if (inner.schemaDialect !== undefined) this.schemaDialect = inner.schemaDialect;
    if (inner.annotations) this.annotations = inner.annotations;
    if (inner.timeoutMs !== undefined) this.timeoutMs = inner.timeoutMs;
    if (inner.maxTotalTimeoutMs !== undefined) this.maxTotalTimeoutMs = inner.maxTotalTimeoutMs;
    if (inner.outputSchema !== undefined) this.outputSchema = inner.outputSchema;
    const needsApproval = decoration.needsApproval ?? inner.needsApproval;
    if (needsApproval !== undefined) this.needsApproval = needsApproval;
    const tags = decoration.tags ? checkToolTags(decoration.tags, `tool '${inner.name}'`) : inner.tags;
    if (tags !== undefined) this.tags = tags;
  }

  runJson(
    args: unknown,
    signal?: AbortSignal | { signal: AbortSignal },
    options?: RunJsonOptions,
  ): Promise<unknown> {
    return this.#inner.runJson(args, signal, options);
  }

  returnValueAsString(value: unknown): string {
    return this.#inner.returnValueAsString(value);
  }
}
