/**
 * @module `FunctionTool`: a typed function as a tool.
 */
import type { StandardSchemaV1 } from '@standard-schema/spec';
import type { ParametersSource } from '../schema/index.js';
import { BaseTool, type BaseToolOptions } from './base-tool.js';
import { ToolbusError } from '../errors/index.js';
import type { ToolAnnotations, ToolCallContext } from './tool.js';
import type { ApprovalContext, NeedsApproval } from './approval.js';

/** The arguments a function receives for `parameters` S: zod's (or any Standard Schema's) output type. */
export type InferToolArgs<S> = S extends StandardSchemaV1
  ? StandardSchemaV1.InferOutput<S>
  : Record<string, unknown>;

/** Options of {@link FunctionTool}. */
export interface FunctionToolOptions<S extends ParametersSource> {
  /** The tool name. @default the function's name */
  name?: string;
  /** What the tool does, for the model. */
  description: string;
  /** zod object, Standard Schema with JSON Schema output, or raw JSON Schema. */
  parameters: S;
  /** Ask the provider to enforce the schema exactly. @default false */
  strict?: boolean;
  /** Side-effect hints. @default undefined */
  annotations?: ToolAnnotations;
  /**
   * Calls need a person's approval before they run: `true`, or a predicate over the validated
   * arguments (`(args) => args.amount > 100`). The model's schema does not change. @default never
   */
  needsApproval?: boolean | ((args: InferToolArgs<S>, ctx: ApprovalContext) => boolean | Promise<boolean>);
  /** Words for search and profiles (`['weather']`); the model's schema does not show them. @default none */
  tags?: readonly string[];
  /**
   * What `fn` returns: a zod object, Standard Schema or raw JSON Schema of an object. Each result is
   * checked against it (a mismatch is a `tool-error` saying what is wrong) and served as MCP
   * `structuredContent` with its JSON text. @default none
   */
  outputSchema?: ParametersSource;
}

/** The function behind a {@link FunctionTool}. */
export type ToolFunction<S extends ParametersSource> = (
  args: InferToolArgs<S>,
  ctx: ToolCallContext,
) => unknown;

/**
 * A tool made from a function. Arguments are validated before `fn` runs; `ctx.signal` is aborted on
 * cancellation and timeout.
 *
 * @example
 * ```ts
 * const getStockPrice = new FunctionTool(
 *   async function get_stock_price({ ticker, date }) { return 143.83; },
 *   {
 *     description: 'Get the stock price.',
 *     parameters: z.object({ ticker: z.string().describe('ticker'), date: z.string().describe('Date in YYYY/MM/DD') }),
 *   },
 * );
 * ```
 */
export class FunctionTool<S extends ParametersSource = ParametersSource> extends BaseTool {
  readonly #fn: ToolFunction<S>;

  /** @throws {ToolbusError} `invalid-name` (also for an anonymous function without `name`) or `invalid-schema`. */
  constructor(fn: ToolFunction<S>, options: FunctionToolOptions<S>) {
    const name = options.name ?? fn.name;
    if (name === '' || name === undefined) {
      throw new ToolbusError(
        'invalid-name',
        `FunctionTool: the function is anonymous and no 'name' option was given; pass { name: 'my_tool' }`,
      );
    }
    const base: BaseToolOptions = {
      name,
      description: options.description,
      parameters: options.parameters,
    };
    if (options.strict !== undefined) base.strict = options.strict;
    if (options.annotations !== undefined) base.annotations = options.annotations;
    if (options.needsApproval !== undefined) base.needsApproval = options.needsApproval as NeedsApproval;
    if (options.tags !== undefined) base.tags = options.tags;
    if (options.outputSchema !== undefined) base.outputSchema = options.outputSchema;
    super(base);
    this.#fn = fn;
  }

  protected override run(args: Record<string, unknown>, ctx: ToolCallContext): Promise<unknown> {
    // Not async: `runJson` awaits whatever comes back and catches a synchronous throw, and skipping the
    // extra promise matters on the hot path.
    return this.#fn(args as InferToolArgs<S>, ctx) as Promise<unknown>;
  }
}
