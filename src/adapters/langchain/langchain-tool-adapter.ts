/**
 * @module `LangChainToolAdapter`: a LangChain tool (`StructuredTool`, `DynamicStructuredTool`, `tool()`)
 * as a toolbus `Tool`, called through LangChain's own `invoke` so its validation and callbacks run.
 */
import { randomUUID } from 'node:crypto';
import type { Callbacks } from '@langchain/core/callbacks/manager';
import type { ToolRunnableConfig } from '@langchain/core/tools';
import { ToolInputParsingException } from '@langchain/core/tools';
import { ToolError, onAbort, toolAbortError, validateToolName, valueAsString } from '../../tools/index.js';
import { isToolbusError } from '../../errors/index.js';
import type { RunJsonOptions, Tool, ToolAnnotations, ToolSchema } from '../../tools/index.js';
import { createNullNormalizer } from '../../schema/index.js';
import type { NullNormalizer } from '../../schema/index.js';
import { objectSchemaOf } from './object-schema.js';

/**
 * What {@link LangChainToolAdapter} needs of a LangChain tool: a `StructuredTool` subclass, a
 * `DynamicStructuredTool` or a `tool()` result all fit (also one whose JSON schema literal is not typed
 * `as const`, which `LangChainToolLike` would refuse).
 */
export interface LangChainToolLike {
  name: string;
  description: string;
  /** A zod (v3 or v4) object schema or a JSON Schema object. */
  readonly schema: unknown;
  invoke(input: never, config?: ToolRunnableConfig): Promise<unknown>;
}

/** Options of {@link LangChainToolAdapter}. */
export interface LangChainToolAdapterOptions {
  /** The name the model sees. @default the LangChain tool's name */
  name?: string;
  /** @default the LangChain tool's description */
  description?: string;
  /**
   * LangChain callbacks (handlers or a `CallbackManager`) run on every call, beside the tool's own.
   * @default none
   */
  callbacks?: Callbacks;
  /** Tags passed to LangChain on every call (seen by callbacks and tracing). @default none */
  tags?: string[];
  /** Ask the provider to enforce the schema exactly. @default false */
  strict?: boolean;
  /** Side-effect hints. @default none */
  annotations?: ToolAnnotations;
}

/**
 * Wraps a LangChain tool as a toolbus {@link Tool}.
 *
 * - The schema is the LangChain tool's zod (v3 or v4) or JSON schema, converted to an object schema.
 * - `runJson` calls `tool.invoke(args, config)`: LangChain validates the arguments, runs the callbacks
 *   (`handleToolStart`/`handleToolEnd`/`handleToolError`) and gets the `AbortSignal` in `config.signal`.
 *   The call id and user go into `config.metadata` (`toolbusCallId`, `toolbusUser`).
 * - LangChain's `ToolInputParsingException` becomes ToolError `invalid-arguments` with LangChain's
 *   message; an abort becomes `cancelled` (even when the tool ignores its signal); anything else thrown
 *   becomes `tool-error`.
 *
 * @example
 * ```ts
 * import { tool } from '@langchain/core/tools';
 * import * as z from 'zod';
 * const add = tool(async ({ a, b }) => a + b, { name: 'add', description: 'Adds', schema: z.object({ a: z.number(), b: z.number() }) });
 * const tools = new ToolSet([new LangChainToolAdapter(add)]);
 * ```
 */
export class LangChainToolAdapter implements Tool {
  /** The name the model sees. */
  readonly name: string;
  /** The description the model sees. */
  readonly description: string;
  /** The function-calling schema. */
  readonly schema: ToolSchema;
  /** Side-effect hints, when given. */
  readonly annotations?: ToolAnnotations;
  readonly #tool: LangChainToolLike;
  readonly #callbacks: Callbacks | undefined;
  readonly #tags: string[] | undefined;
  readonly #normalize: NullNormalizer;

  /**
   * @throws ToolbusError `invalid-name` when the name does not match `^[a-zA-Z0-9_-]{1,64}$` (pass
   *   `options.name`), `invalid-schema` when the tool's schema is not an object schema.
   */
  constructor(tool: LangChainToolLike, options: LangChainToolAdapterOptions = {}) {
    const name = options.name ?? tool.name;
    validateToolName(name);
    const owner = `LangChain tool '${tool.name}'`;
    this.name = name;
    this.description = options.description ?? tool.description;
    this.schema = {
      name,
      description: this.description,
      parameters: objectSchemaOf(tool.schema, owner),
      strict: options.strict ?? false,
    };
    if (options.annotations !== undefined) this.annotations = { ...options.annotations };
    this.#normalize = createNullNormalizer(this.schema.parameters);
    this.#tool = tool;
    this.#callbacks = options.callbacks;
    this.#tags = options.tags === undefined ? undefined : [...options.tags];
  }

  /** The wrapped LangChain tool. */
  get langChainTool(): LangChainToolLike {
    return this.#tool;
  }

  /**
   * Calls the LangChain tool through `invoke`.
   *
   * Rejects with ToolError `invalid-arguments`, `tool-error` or `cancelled`.
   */
  async runJson(
    args: unknown,
    signal?: AbortSignal | { signal: AbortSignal },
    options: RunJsonOptions = {},
  ): Promise<unknown> {
    const name = this.name;
    const callerSignal = signal instanceof AbortSignal ? signal : signal?.signal;
    const config: ToolRunnableConfig = {
      ...(callerSignal === undefined ? {} : { signal: callerSignal }),
      runName: name,
      metadata: {
        toolbusCallId: options.callId ?? randomUUID(),
        ...(options.user === undefined ? {} : { toolbusUser: options.user }),
      },
      ...(this.#callbacks === undefined ? {} : { callbacks: this.#callbacks }),
      ...(this.#tags === undefined ? {} : { tags: this.#tags }),
    };
    let unwatch: (() => void) | undefined;
    try {
      if (callerSignal?.aborted) throw toolAbortError(callerSignal, name);
      // LangChain passes the signal on but a StructuredTool may ignore it: stop waiting on abort anyway.
      const aborted = new Promise<never>((_resolve, reject) => {
        if (callerSignal !== undefined) {
          unwatch = onAbort(callerSignal, () => reject(toolAbortError(callerSignal, name)));
        }
      });
      // A strict-profile model sends null for optionals it leaves out; LangChain's schema wants them absent.
      const input = this.#normalize(args);
      const output = await Promise.race([this.#tool.invoke(input as never, config), aborted]);
      return contentOf(output);
    } catch (error) {
      if (callerSignal?.aborted) throw toolAbortError(callerSignal, name);
      if (error instanceof ToolInputParsingException) {
        throw new ToolError('invalid-arguments', `tool '${name}': ${error.message}`, {
          toolName: name,
          cause: error,
        });
      }
      if (isToolbusError(error)) throw error;
      const message = error instanceof Error ? error.message : String(error);
      throw new ToolError('tool-error', `tool '${name}': ${message}`, { toolName: name, cause: error });
    } finally {
      unwatch?.();
    }
  }

  /** As every toolbus tool: a string unchanged, `undefined` as `''`, anything else as JSON text. */
  returnValueAsString(value: unknown): string {
    return valueAsString(value);
  }
}

/** A LangChain tool may answer with a `ToolMessage`; the model needs its content. */
function contentOf(output: unknown): unknown {
  if (
    typeof output === 'object' &&
    output !== null &&
    'lc_direct_tool_output' in output &&
    'content' in output
  ) {
    return (output as { content: unknown }).content;
  }
  return output;
}
