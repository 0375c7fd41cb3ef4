/**
 * @module `McpTool`: one tool of an MCP server as a toolbus `Tool`, calling through the shared session.
 */
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import type { JsonValue, ObjectJsonSchema } from '../../schema/index.js';
import {
  ToolError,
  type RunJsonOptions,
  type Tool,
  type ToolAnnotations,
  type ToolSchema,
} from '../../tools/index.js';
import { callToolResultToValue } from './mcp-result.js';
import type { McpSession, McpToolDefinition } from './mcp-session.js';

/** Options of {@link McpTool}. */
export interface McpToolOptions {
  /** The name the model sees. @default the remote name mapped by {@link toModelToolName} */
  name?: string;
  /** @default the server's description */
  description?: string;
  /** Overrides the parameters schema sent to the model (e.g. from config `arguments`). @default the server's inputSchema */
  parameters?: ObjectJsonSchema;
  /** Timeout of each call. @default the session's per-tool or per-server timeout */
  timeoutMs?: number;
  /** Progress notifications of calls. @default none */
  onProgress?: (progress: { tool: string; progress: number; total?: number; message?: string }) => void;
}

/** Options of {@link McpTool.call}. */
export interface McpToolCallOptions {
  /** @default none */
  signal?: AbortSignal;
  /** @default the tool's timeout */
  timeoutMs?: number;
}

const NAME_OK = /^[a-zA-Z0-9_-]{1,64}$/;

/**
 * Maps an MCP tool name (which may hold `.`, `/`, spaces, or be longer than 64) onto the
 * `^[a-zA-Z0-9_-]{1,64}$` form function-calling APIs accept. Valid names pass unchanged; others have
 * each bad character replaced by `_` and a short hash appended, so distinct remote names stay distinct.
 * The mapping is kept by each `McpTool` (`remoteName`), so calls go back to the exact remote name.
 */
export function toModelToolName(remoteName: string): string {
  if (NAME_OK.test(remoteName)) return remoteName;
  let hash = 0x811c9dc5;
  for (let i = 0; i < remoteName.length; i++) {
    hash ^= remoteName.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  const suffix = `_${hash.toString(36)}`;
  const base = remoteName.replace(/[^a-zA-Z0-9_-]/g, '_') || 'tool';
  return base.slice(0, 64 - suffix.length) + suffix;
}

/** The model-facing parameters of an MCP input schema: `$defs`/`$ref` kept, closed at the top. */
export function toParameters(inputSchema: McpToolDefinition['inputSchema'] | undefined): ObjectJsonSchema {
  const source = (inputSchema ?? { type: 'object' }) as { [key: string]: JsonValue };
  const properties = (source.properties ?? {}) as { [key: string]: JsonValue };
  const required = Array.isArray(source.required) ? source.required.filter((r) => typeof r === 'string') : [];
  return {
    ...source,
    type: 'object',
    properties,
    required: required as string[],
    additionalProperties: false,
  };
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

function splitRunArgs(signalOrCtx?: AbortSignal | { signal: AbortSignal }): AbortSignal | undefined {
  if (!signalOrCtx) return undefined;
  return signalOrCtx instanceof AbortSignal ? signalOrCtx : signalOrCtx.signal;
}

/**
 * One tool of an MCP server. Validation runs locally against the server's JSON Schema (`$defs` and
 * `$ref` included) when the schema compiles; the server validates again.
 */
export class McpTool implements Tool {
  readonly name: string;
  readonly description: string;
  readonly schema: ToolSchema;
  readonly annotations?: ToolAnnotations;
  /** The tool's name on the MCP server. */
  readonly remoteName: string;
  /** The definition the server sent. */
  readonly definition: McpToolDefinition;
  readonly #session: McpSession;
  readonly #timeoutMs: number | undefined;
  readonly #onProgress: McpToolOptions['onProgress'];
  #validate: ValidateFunction | null | undefined;

  constructor(session: McpSession, definition: McpToolDefinition, options: McpToolOptions = {}) {
    this.#session = session;
    this.definition = definition;
    this.remoteName = definition.name;
    this.name = options.name ?? toModelToolName(definition.name);
    this.description = options.description ?? definition.description ?? definition.title ?? definition.name;
    this.schema = {
      name: this.name,
      description: this.description,
      parameters: options.parameters ?? toParameters(definition.inputSchema),
      strict: false,
    };
    const annotations = annotationsOf(definition);
    if (annotations) this.annotations = annotations;
    this.#timeoutMs = options.timeoutMs;
    this.#onProgress = options.onProgress;
  }

  /** True when a retry after a reconnect is safe (annotated read-only or idempotent). */
  get retryable(): boolean {
    return this.annotations?.readOnly === true || this.annotations?.idempotent === true;
  }

  /** Validates and calls the tool; see {@link Tool.runJson}. */
  async runJson(
    args: unknown,
    signal?: AbortSignal | { signal: AbortSignal },
    _options?: RunJsonOptions,
  ): Promise<unknown> {
    const s = splitRunArgs(signal);
    return await this.call(args, s ? { signal: s } : {});
  }

  /** Like {@link runJson}, with a per-call timeout. */
  async call(args: unknown, options: McpToolCallOptions = {}): Promise<unknown> {
    const parsed = this.#check(args);
    const timeoutMs = options.timeoutMs ?? this.#timeoutMs;
    const onProgress = this.#onProgress;
    const result = await this.#session.callTool(this.remoteName, parsed, {
      displayName: this.name,
      retryAfterReconnect: this.retryable,
      ...(options.signal ? { signal: options.signal } : {}),
      ...(timeoutMs !== undefined ? { timeoutMs } : {}),
      ...(onProgress ? { onProgress: (p) => onProgress({ tool: this.name, ...p }) } : {}),
    });
    return callToolResultToValue(this.name, result);
  }

  /** Strings pass through; anything else becomes JSON. */
  returnValueAsString(value: unknown): string {
    if (typeof value === 'string') return value;
    return JSON.stringify(value) ?? String(value);
  }

  #check(args: unknown): Record<string, unknown> {
    let value = args;
    if (typeof value === 'string') {
      try {
        value = value.trim() === '' ? {} : JSON.parse(value);
      } catch (error) {
        throw new ToolError(
          'invalid-arguments',
          `tool '${this.name}': arguments must be a JSON object, got invalid JSON`,
          {
            cause: error,
            toolName: this.name,
          },
        );
      }
    }
    if (value === undefined || value === null) value = {};
    if (typeof value !== 'object' || Array.isArray(value)) {
      throw new ToolError(
        'invalid-arguments',
        `tool '${this.name}': arguments must be a JSON object, got ${Array.isArray(value) ? 'array' : typeof value}`,
        { toolName: this.name },
      );
    }
    const record = value as Record<string, unknown>;
    const validate = this.#validator();
    if (validate && !validate(record)) {
      const details = (validate.errors ?? [])
        .slice(0, 5)
        .map(
          (e) =>
            `${e.instancePath ? `argument '${e.instancePath.slice(1).replace(/\//g, '.')}'` : 'arguments'} ${e.message ?? 'invalid'}`,
        )
        .join('; ');
      throw new ToolError('invalid-arguments', `tool '${this.name}': ${details}`, { toolName: this.name });
    }
    return record;
  }

  #validator(): ValidateFunction | null {
    if (this.#validate !== undefined) return this.#validate;
    try {
      const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
      // The server's own schema (not the closed model-facing copy): the server decides what it accepts.
      const { $schema: _ignored, ...schema } = (this.definition.inputSchema ?? { type: 'object' }) as Record<
        string,
        unknown
      >;
      this.#validate = ajv.compile(schema);
    } catch {
      // A schema ajv cannot compile is left to the server to enforce.
      this.#validate = null;
    }
    return this.#validate;
  }
}
