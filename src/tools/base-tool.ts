/**
 * @module `BaseTool`: the class every in-process tool extends (validation, cancellation, error wrapping).
 */
import {
  SchemaKind,
  compileSchema,
  createValidator,
  schemaKindOf,
  toParametersSchema,
  type ObjectJsonSchema,
  type ParametersSource,
  type SchemaProfile,
  type ToolSchema,
  type ValidationIssue,
  type ValidationResult,
  type Validator,
} from '../schema/index.js';
import { ToolbusError, isToolbusError, type AbortState } from '../errors/index.js';
import { ToolError, toolAbortError } from './errors.js';
import type { RunJsonOptions, Tool, ToolAnnotations, ToolCallContext, ToolProgress } from './tool.js';
import {
  askThrough,
  logThrough,
  type ElicitationRequest,
  type ElicitationResult,
  type SamplingRequest,
  type SamplingResult,
  type ToolClientFeatures,
  type ToolLogLevel,
} from './client-features.js';
import { LazyAbortController } from './lazy-abort-controller.js';
import { onAbort } from './abort-fanout.js';
import { validateToolName } from './tool-name.js';
import { CallIdSource } from './call-id.js';
import type { NeedsApproval } from './approval.js';
import { checkToolTags } from './tool-tags.js';
import { contentParts, partsToText } from './content-parts.js';

/** Options of {@link BaseTool}. */
export interface BaseToolOptions {
  /** Must match `^[a-zA-Z0-9_-]{1,64}$` (see `encodeToolName` for foreign names). */
  name: string;
  /** What the tool does, for the model. */
  description: string;
  /** zod object, Standard Schema with JSON Schema output, or raw JSON Schema. */
  parameters: ParametersSource;
  /** Ask the provider to enforce the schema exactly. @default false */
  strict?: boolean;
  /**
   * The JSON Schema dialect of `parameters` (`Tool.schemaDialect`), for a source whose `$schema` was
   * taken off before it got here (an MCP server's schema). @default a raw JSON Schema's own `$schema`
   */
  schemaDialect?: string;
  /** Side-effect hints. @default undefined */
  annotations?: ToolAnnotations;
  /** Calls need a person's approval first: `true`, or a predicate over the arguments. @default never */
  needsApproval?: NeedsApproval;
  /** Words for search and profiles (see `Tool.tags`). @default none */
  tags?: readonly string[];
  /**
   * What the result looks like: a zod object, Standard Schema or raw JSON Schema of an object (see
   * `Tool.outputSchema`). Results are checked against it; a mismatch is a `tool-error`. @default none
   */
  outputSchema?: ParametersSource;
}

/** A signal, or anything carrying one (a `CancellationToken`). */
export type SignalLike = AbortSignal | { readonly signal: AbortSignal };

const NEVER_ABORTED = new AbortController().signal;

/**
 * The key of `BaseTool`'s entry for `ToolSet`'s direct path (see `BaseTool[startRun]`); tools/ only,
 * not part of the API.
 */
export const startRun: unique symbol = Symbol('toolbus.BaseTool.startRun');

/**
 * The error `BaseTool.runJson` rejects with when `run` failed with `error`: a `ToolError` as it is,
 * `cancelled` (or the abort's own reason) once `abort` aborted, otherwise `tool-error` with `error` as
 * the cause.
 */
export function runFailure(name: string, error: unknown, abort: AbortState): ToolError {
  if (error instanceof ToolError) return error;
  if (abort.aborted) return toolAbortError(abort, name);
  const message = error instanceof Error ? error.message : String(error);
  return new ToolError('tool-error', `tool '${name}' failed: ${message}`, { cause: error, toolName: name });
}

/** What runJson reads of an AbortSignal or a LazyAbortController. */

/**
 * The base of class-based tools. Subclasses implement {@link BaseTool.run}; `runJson` validates the
 * arguments first, so `run` receives parsed, valid arguments.
 *
 * @example
 * ```ts
 * class Echo extends BaseTool {
 *   constructor() {
 *     super({ name: 'echo', description: 'Echo the text.', parameters: z.object({ text: z.string() }) });
 *   }
 *   protected async run(args: Record<string, unknown>) { return args['text']; }
 * }
 * ```
 */
export abstract class BaseTool implements Tool {
  readonly name: string;
  readonly description: string;
  readonly annotations?: ToolAnnotations;
  readonly needsApproval?: NeedsApproval;
  readonly tags?: readonly string[];
  readonly outputSchema?: ObjectJsonSchema;
  readonly schemaDialect?: string;
  readonly #strict: boolean;
  readonly #parameters: ObjectJsonSchema;
  readonly #validate: Validator;
  #schema: ToolSchema | undefined;
  readonly #profiles = new Map<SchemaProfile, ToolSchema>();
  /** Made on the first run without a call id (ToolSet always passes one). */
  #callIds: CallIdSource | undefined;

  /** @throws {ToolbusError} `invalid-name` or `invalid-schema`. */
  constructor(options: BaseToolOptions) {
    validateToolName(options.name);
    if (typeof options.description !== 'string') {
      throw new ToolbusError('invalid-schema', `tool '${options.name}': description must be a string`);
    }
    this.name = options.name;
    this.description = options.description;
    this.#strict = options.strict ?? false;
    const dialect = options.schemaDialect ?? declaredDialect(options.parameters);
    if (dialect !== undefined) this.schemaDialect = dialect;
    if (options.annotations !== undefined) this.annotations = { ...options.annotations };
    if (options.needsApproval !== undefined) {
      const rule = options.needsApproval;
      if (typeof rule !== 'boolean' && typeof rule !== 'function') {
        throw new ToolbusError(
          'usage',
          `tool '${options.name}': needsApproval must be true, false or a function (args, ctx) => boolean`,
        );
      }
      this.needsApproval = rule;
    }
    if (options.tags !== undefined) this.tags = checkToolTags(options.tags, `tool '${options.name}'`);
    try {
      this.#parameters = toParametersSchema(options.parameters);
      this.#validate = createValidator(options.parameters, { jsonSchema: this.#parameters });
    } catch (error) {
      if (isToolbusError(error)) {
        throw new ToolbusError(error.code, `tool '${options.name}': ${error.message}`, { cause: error });
      }
      throw error;
    }
    try {
      if (options.outputSchema !== undefined) this.outputSchema = toParametersSchema(options.outputSchema);
    } catch (error) {
      if (isToolbusError(error)) {
        throw new ToolbusError(error.code, `tool '${options.name}': its output schema: ${error.message}`, {
          cause: error,
        });
      }
      throw error;
    }
  }

  /** The schema sent to models, in the default profile: `{ name, description, parameters, strict }`. */
  get schema(): ToolSchema {
    return (this.#schema ??= {
      name: this.name,
      description: this.description,
      parameters: structuredClone(this.#parameters),
      strict: this.#strict,
    });
  }

  /**
   * The schema compiled for a provider profile (cached).
   *
   * @throws {ToolbusError} `unsupported` when the schema cannot be expressed in that profile.
   */
  schemaFor(profile: SchemaProfile): ToolSchema {
    let compiled = this.#profiles.get(profile);
    if (compiled === undefined) {
      compiled = compileSchema(this.schema, profile);
      this.#profiles.set(profile, compiled);
    }
    return compiled;
  }

  /** Runs the tool with validated arguments. Throw to fail; a thrown `ToolError` is kept as it is. */
  protected abstract run(args: Record<string, unknown>, ctx: ToolCallContext): Promise<unknown>;

  /**
   * Validates `args`, then runs the tool.
   *
   * Rejects with a {@link ToolError}: `invalid-arguments` (each failing path, what was expected and what
   * came), `cancelled` (the signal was aborted, also while a tool that ignores it still runs; a
   * `ToolbusError` reason is rethrown as it is),
   * `tool-error` (what `run` threw, as `cause`), or a `ToolError` thrown by `run` unchanged.
   */
  runJson(args: unknown, signal?: SignalLike, options?: RunJsonOptions): Promise<unknown> {
    // ToolSet's path: a LazyAbortController, read without creating its AbortSignal unless the tool asks.
    if (signal instanceof LazyAbortController) return this.#runLazy(args, signal, options);
    return this.#runAwaited(args, signal, options, undefined);
  }

  /** `runJson` with ToolSet's controller (from a wrapper tool, or a call that waited): see {@link startRun}. */
  #runLazy(args: unknown, lazy: LazyAbortController, options: RunJsonOptions | undefined): Promise<unknown> {
    let running: unknown;
    try {
      running = this[startRun](args, lazy, undefined, options);
    } catch (error) {
      return Promise.reject(error);
    }
    if (!lazy.rawRun) return running as Promise<unknown>;
    return Promise.resolve(running).then(undefined, (error: unknown) => {
      throw runFailure(this.name, error, lazy);
    });
  }

  /**
   * @internal `ToolSet`'s direct path into a tool whose `runJson` is this class's own (not part of the
   * API): does what `runJson` does with a LazyAbortController, minus the promise around the run, so the
   * call's result promise is the only one per call. Validates, starts `run` with `ctx` (or a context made
   * from `options`) and returns what it returned, setting `lazy.rawRun` (its rejections still go through
   * {@link runFailure}); throws what `runJson` would reject with. With asynchronous validation it returns
   * `runJson`'s promise instead.
   */
  [startRun](
    args: unknown,
    lazy: LazyAbortController,
    ctx: ToolCallContext | undefined,
    options: RunJsonOptions | undefined,
  ): unknown {
    lazy.rawRun = false;
    if (lazy.aborted) throw this.#cancelled(lazy);
    let checked: ValidationResult | Promise<ValidationResult>;
    try {
      checked = this.#validate(args);
    } catch (error) {
      throw this.#validationThrew(error);
    }
    // An async validator (a Standard Schema, an async refinement) takes the general path.
    if (checked instanceof Promise) return this.#runAwaited(args, lazy, options, checked, ctx);
    if (!checked.ok) throw this.invalidArguments(checked.issues);
    if (lazy.aborted) throw this.#cancelled(lazy);
    let running: unknown;
    try {
      running = this.run(
        checked.value as Record<string, unknown>,
        ctx ?? new RunContext(lazy, this.name, options?.callId ?? this.#nextCallId(), options),
      );
    } catch (error) {
      throw runFailure(this.name, error, lazy);
    }
    lazy.rawRun = true;
    return running;
  }

  /** Every other signal (an AbortSignal, a token, none), and a lazy controller with async validation. */
  async #runAwaited(
    args: unknown,
    signal: SignalLike | LazyAbortController | undefined,
    options: RunJsonOptions | undefined,
    validation: Promise<ValidationResult> | undefined,
    context?: ToolCallContext,
  ): Promise<unknown> {
    const lazy = signal instanceof LazyAbortController ? signal : undefined;
    // The caller's AbortSignal; undefined for a lazy controller or no signal at all.
    const abortSignal =
      lazy !== undefined || signal === undefined
        ? undefined
        : signal instanceof AbortSignal
          ? signal
          : signal.signal;
    // Both a lazy controller and an AbortSignal answer `aborted` and `reason`.
    const abort: AbortState = lazy ?? abortSignal ?? NEVER_ABORTED;
    if (abort.aborted) throw this.#cancelled(abort);
    let result: ValidationResult;
    try {
      const checked = validation ?? this.#validate(args);
      result = checked instanceof Promise ? await checked : checked;
    } catch (error) {
      throw this.#validationThrew(error);
    }
    if (!result.ok) throw this.invalidArguments(result.issues);
    if (abort.aborted) throw this.#cancelled(abort);
    let ctx: ToolCallContext;
    if (context !== undefined) ctx = context;
    else {
      const callId = options?.callId ?? this.#nextCallId();
      ctx = new RunContext(lazy ?? abortSignal ?? NEVER_ABORTED, this.name, callId, options);
    }
    let unwatch: (() => void) | undefined;
    try {
      const running = this.run(result.value as Record<string, unknown>, ctx);
      if (abortSignal === undefined) return await running;
      // A tool may ignore its signal: on abort stop waiting for it (AutoGen abandons the await too).
      // ToolSet's lazy path races the call itself.
      return await new Promise<unknown>((resolve, reject) => {
        if (abortSignal.aborted) reject(this.#cancelled(abortSignal));
        else unwatch = onAbort(abortSignal, () => reject(this.#cancelled(abortSignal)));
        Promise.resolve(running).then(resolve, reject);
      });
    } catch (error) {
      throw runFailure(this.name, error, abort);
    } finally {
      unwatch?.();
    }
  }

  #nextCallId(): string {
    return (this.#callIds ??= new CallIdSource()).next();
  }

  /** A validator that throws (a buggy refinement) is the tool's failure, not the model's. */
  #validationThrew(error: unknown): ToolError {
    return new ToolError(
      'tool-error',
      `tool '${this.name}': its argument validation threw: ${String(error)}`,
      {
        cause: error,
        toolName: this.name,
      },
    );
  }

  /** A string passes through unchanged; `undefined` becomes `''`; anything else becomes JSON text. */
  returnValueAsString(value: unknown): string {
    return valueAsString(value);
  }

  /** Builds the `invalid-arguments` error for `issues` (for subclasses that validate more). */
  protected invalidArguments(issues: readonly ValidationIssue[]): ToolError {
    return new ToolError('invalid-arguments', formatInvalidArguments(this.name, issues), {
      toolName: this.name,
    });
  }

  #cancelled(signal: AbortState): ToolError {
    return toolAbortError(signal, this.name);
  }
}

/** The `$schema` a raw JSON Schema source declares (zod and Standard Schema sources declare none). */
function declaredDialect(parameters: ParametersSource): string | undefined {
  if (schemaKindOf(parameters) !== SchemaKind.JsonSchema) return undefined;
  const dialect = (parameters as { $schema?: unknown }).$schema;
  return typeof dialect === 'string' && dialect !== '' ? dialect : undefined;
}

/**
 * The call context `BaseTool` makes: its signal a caller's `AbortSignal` (or none), or ToolSet's lazy
 * controller's, created on first read (see LazyAbortController).
 */
class RunContext implements ToolCallContext {
  readonly #source: AbortSignal | LazyAbortController;
  readonly callId: string;
  user?: string;
  deadline?: number;
  progress?: (update: ToolProgress) => void;
  readonly #toolName: string;
  readonly #features: ToolClientFeatures | undefined;
  readonly #caller: string | undefined;

  constructor(
    source: AbortSignal | LazyAbortController,
    toolName: string,
    callId: string,
    options: RunJsonOptions | undefined,
  ) {
    this.#source = source;
    this.callId = callId;
    this.#toolName = toolName;
    this.#features = options?.clientFeatures;
    this.#caller = options?.caller;
    if (options?.user !== undefined) this.user = options.user;
    if (options?.deadline !== undefined) this.deadline = options.deadline;
    if (options?.onProgress !== undefined) this.progress = options.onProgress;
  }

  get signal(): AbortSignal {
    const source = this.#source;
    return source instanceof LazyAbortController ? source.signal : source;
  }

  elicit(request: ElicitationRequest): Promise<ElicitationResult> {
    return askThrough('elicit', this.#features, this.#toolName, this.#caller, request, this.signal);
  }

  sample(request: SamplingRequest): Promise<SamplingResult> {
    return askThrough('sample', this.#features, this.#toolName, this.#caller, request, this.signal);
  }

  log(level: ToolLogLevel, data: unknown, logger?: string): void {
    logThrough(this.#features, level, data, logger);
  }
}

/**
 * Formats validation issues for a model: `tool 'x': invalid arguments: argument 'topic' must be string,
 * got number; argument 'date' is required; argument 'top' is not allowed; expected one of: topic`.
 */
export function formatInvalidArguments(toolName: string, issues: readonly ValidationIssue[]): string {
  const parts = issues.slice(0, 10).map((issue) => {
    const where = issue.path === '' ? 'the arguments' : `argument '${issue.path}'`;
    if (issue.allowed !== undefined) {
      return issue.allowed.length === 0
        ? `${where} is not allowed; no arguments are expected there`
        : `${where} is not allowed; expected one of: ${issue.allowed.join(', ')}`;
    }
    if (issue.received === 'missing') {
      return `${where} is required${issue.expected !== undefined && issue.expected !== 'a value' ? ` (expected ${issue.expected})` : ''}`;
    }
    if (issue.expected !== undefined && issue.received !== undefined) {
      return `${where} must be ${withArticle(issue.expected)}, got ${issue.received}`;
    }
    return `${where}: ${issue.message}`;
  });
  if (issues.length > 10) parts.push(`and ${issues.length - 10} more`);
  return `tool '${toolName}': invalid arguments: ${parts.join('; ')}`;
}

const ARTICLES: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  integer: 'an integer',
  boolean: 'a boolean',
  object: 'an object',
  array: 'an array',
};

/** `string` → `a string`; anything else (`one of "a", "b"`, `null`) unchanged. */
function withArticle(expected: string): string {
  return ARTICLES[expected] ?? expected;
}

/**
 * The text a model sees for a tool's return value, as `Tool.returnValueAsString` gives it: a string as
 * it is, `undefined` as `''`, anything else as JSON (a value JSON cannot hold, such as a circular object
 * or a BigInt, through `String`), content parts as their text (media described). For tools that implement `Tool` without extending {@link BaseTool}.
 */
export function valueAsString(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === undefined) return '';
  if (typeof value === 'object' && value !== null) {
    try {
      const parts = contentParts('', value);
      if (parts !== undefined) return partsToText(parts);
    } catch {
      // Broken parts: their JSON, as for any other value (ToolSet reports them as a tool-error).
    }
  }
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
