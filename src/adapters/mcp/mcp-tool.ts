/**
 * @module `McpTool`: one tool of an MCP server as a toolbus `Tool`, calling through the shared session.
 */
import type { JsonValue, ObjectJsonSchema } from '../../schema/index.js';
import {
  BaseTool,
  encodeToolName,
  type ToolAnnotations,
  type ToolCallContext,
  type ToolClientFeatures,
} from '../../tools/index.js';
import { callToolResultToValue } from './mcp-result.js';
import type { McpSession, McpToolDefinition } from './mcp-session.js';

/** Options of {@link McpTool}. */
export interface McpToolOptions {
  /** The name the model sees. @default `encodeToolName(remote name)` (reversible; `.`, `/` and the like are encoded) */
  name?: string;
  /** @default the server's description */
  description?: string;
  /** Overrides the parameters schema (e.g. from config `arguments`). @default the server's inputSchema, `$defs` and `$ref` kept */
  parameters?: ObjectJsonSchema;
  /** Timeout of each call, reset by progress. @default the session's per-tool or per-server timeout (60 s) */
  timeoutMs?: number;
  /** Progress notifications of calls. @default none */
  onProgress?: (progress: { tool: string; progress: number; total?: number; message?: string }) => void;
}

/**
 * The server's output schema as a JSON object (its `$schema` left out, as for the input schema), or
 * undefined when the tool declares none.
 */
export function outputSchemaOf(definition: McpToolDefinition): { [key: string]: JsonValue } | undefined {
  if (definition.outputSchema === undefined) return undefined;
  const { $schema: _dialect, ...schema } = definition.outputSchema as { [key: string]: JsonValue };
  return schema;
}

/** The server's input schema as a JSON object (an MCP tool without one takes an empty object). */
export function inputSchemaOf(definition: McpToolDefinition): { [key: string]: JsonValue } {
  const { $schema: _dialect, ...schema } = (definition.inputSchema ?? { type: 'object' }) as {
    [key: string]: JsonValue;
  };
  if (schema.type === undefined) schema.type = 'object';
  if (schema.properties === undefined) schema.properties = {};
  return schema;
}

function annotationsOf(def: McpToolDefinition): ToolAnnotations | undefined {
  const a = def.annotations;
  if (!a) return undefined;
  const out: ToolAnnotations = {};
  if (typeof a.readOnlyHint === 'boolean') out.readOnly = a.readOnlyHint;
  if (typeof a.idempotentHint === 'boolean') out.idempotent = a.idempotentHint;
  if (typeof a.destructiveHint === 'boolean') out.destructive = a.destructiveHint;
  return out;
}

/** The caller's features, as the call's context offers them (rejecting `unsupported` where it cannot). */
function callerFeatures(ctx: ToolCallContext): ToolClientFeatures {
  return {
    elicit: (request) => ctx.elicit(request),
    sample: (request) => ctx.sample(request),
    log: (level, data, logger) => ctx.log(level, data, logger),
  };
}

/**
 * One tool of an MCP server. Arguments are validated locally against the server's JSON Schema (`$defs`
 * and `$ref` included), then sent over the server's shared session. The remote name is kept in
 * `remoteName`, so a name encoded for the model always maps back.
 *
 * Rejects (from `runJson`) with a `ToolError`: `invalid-arguments`, `tool-error` (an `isError` result or a
 * protocol error), `timeout`, `cancelled`, `unavailable` (server unreachable, or restarted during a call
 * that is not safe to retry).
 */
export class McpTool extends BaseTool {
  /** The tool's name on the MCP server. */
  readonly remoteName: string;
  /** The definition the server sent. */
  readonly definition: McpToolDefinition;
  /**
   * `Infinity`: a `ToolSet` (the registry's included) adds no flat limit of its own, because the session
   * enforces this tool's timeout, reset by progress notifications up to a total cap.
   */
  readonly timeoutMs = Infinity;
  readonly #session: McpSession;
  readonly #timeoutMs: number | undefined;
  readonly #onProgress: McpToolOptions['onProgress'];

  /** @throws {ToolbusError} `invalid-name` or `invalid-schema` when the server's schema is unusable. */
  constructor(session: McpSession, definition: McpToolDefinition, options: McpToolOptions = {}) {
    const annotations = annotationsOf(definition);
    const outputSchema = outputSchemaOf(definition);
    // The parameters leave the server's `$schema` out; the tool keeps it, so serving it again (the MCP
    // bridge) says the same dialect.
    const dialect =
      options.parameters === undefined
        ? (definition.inputSchema as { $schema?: unknown })?.$schema
        : undefined;
    super({
      ...(typeof dialect === 'string' && dialect !== '' ? { schemaDialect: dialect } : {}),
      name: options.name ?? encodeToolName(definition.name),
      description: options.description ?? definition.description ?? definition.title ?? definition.name,
      parameters: options.parameters ?? inputSchemaOf(definition),
      ...(annotations ? { annotations } : {}),
      // Its structuredContent is checked against it (ToolSet), as the MCP specification asks of clients.
      ...(outputSchema ? { outputSchema } : {}),
    });
    this.#session = session;
    this.definition = definition;
    this.remoteName = definition.name;
    this.#timeoutMs = options.timeoutMs;
    this.#onProgress = options.onProgress;
  }

  /** True when a retry after a reconnect is safe (annotated read-only or idempotent). */
  get retryable(): boolean {
    return this.annotations?.readOnly === true || this.annotations?.idempotent === true;
  }

  protected override async run(args: Record<string, unknown>, ctx: ToolCallContext): Promise<unknown> {
    const onProgress = this.#onProgress;
    // The server's progress notifications reach the tool's own listener and the caller's (ctx.progress).
    const report = ctx.progress;
    const result = await this.#session.callTool(this.remoteName, args, {
      displayName: this.name,
      retryAfterReconnect: this.retryable,
      signal: ctx.signal,
      // The server's questions, sampling requests and logs go to whoever called this tool.
      clientFeatures: callerFeatures(ctx),
      ...(this.#timeoutMs !== undefined ? { timeoutMs: this.#timeoutMs } : {}),
      ...(onProgress || report
        ? {
            onProgress: (p: { progress: number; total?: number; message?: string }) => {
              onProgress?.({ tool: this.name, ...p });
              report?.call(ctx, p);
            },
          }
        : {}),
    });
    return callToolResultToValue(this.name, result);
  }
}
