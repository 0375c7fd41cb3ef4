/**
 * @module The `Tool` contract every kind of tool implements.
 */
import type { JsonObject, JsonSchema, ObjectJsonSchema, ToolSchema } from '../schema/index.js';
import type { ToolError } from './errors.js';
import type { NeedsApproval } from './approval.js';
import type { ToolSearchHit, ToolSearchOptions } from './tool-search.js';
import type { ContentPart } from './content-parts.js';
import type {
  ElicitationRequest,
  ElicitationResult,
  SamplingRequest,
  SamplingResult,
  ToolClientFeatures,
  ToolLogLevel,
} from './client-features.js';

/** Hints about a tool's side effects, with MCP's meaning. Used to decide whether a retry is safe. */
export interface ToolAnnotations {
  /** The tool does not change anything. */
  readOnly?: boolean;
  /** Calling it twice with the same arguments has the same effect as once. */
  idempotent?: boolean;
  /** The tool may destroy data. */
  destructive?: boolean;
}

/** A step of a running call, as a tool reports it (MCP's progress notification). */
export interface ToolProgress {
  /** How far it got: grows with every report (a count of steps or bytes, say). */
  progress: number;
  /** What `progress` goes up to, when known. */
  total?: number;
  /** What it is doing, for a person. */
  message?: string;
}

/** What a tool sees of the call it serves, besides its arguments. */
export interface ToolCallContext {
  /** Aborted on cancellation or timeout. Always present. */
  signal: AbortSignal;
  /** The model's id for this call, or a generated one. */
  callId: string;
  /** The end user on whose behalf the call runs (multi-tenancy); never set by the model. */
  user?: string;
  /**
   * The absolute deadline of the call (epoch ms), when it has one: the earliest of the outermost caller's
   * deadline and this call's timeout, as `ToolSet.call` computed it. `signal` aborts then; a tool that
   * calls out (a tool service, an HTTP endpoint) derives its own timer and wire deadline from it.
   */
  deadline?: number;
  /**
   * Reports progress to whoever called (the `ToolSet`'s `onProgress` hooks and the call's own
   * `onProgress`: an agent's event stream, an MCP client): `ctx.progress?.({ progress: 3, total: 10 })`.
   * A report also restarts the call's timeout when its set allows (`maxTotalTimeoutMs`). Set only while
   * somebody listens or a report restarts the timeout, so a tool can skip the work of a report nobody
   * reads. @default none
   */
  progress?(update: ToolProgress): void;
  /**
   * Asks the person behind the caller to fill in a form (MCP's elicitation), and resolves with their
   * answer: `{ action: 'accept', content }`, `decline` or `cancel`. Cancelling the call cancels the
   * question. Rejects with `unsupported` when the caller cannot ask (only an MCP client that declared
   * the elicitation capability can, or a program passing `ToolCallOptions.clientFeatures.elicit`).
   *
   * @example
   * ```ts
   * const answer = await ctx.elicit({
   *   message: 'Which account?',
   *   requestedSchema: { type: 'object', properties: { account: { type: 'string' } }, required: ['account'] },
   * });
   * if (answer.action !== 'accept') return 'nothing done';
   * ```
   */
  elicit(request: ElicitationRequest): Promise<ElicitationResult>;
  /**
   * Runs a completion on the caller's own model (MCP's sampling) and resolves with its answer.
   * Cancelling the call cancels it. Rejects with `unsupported` when the caller cannot (only an MCP
   * client that declared the sampling capability can, or a program passing `clientFeatures.sample`).
   */
  sample(request: SamplingRequest): Promise<SamplingResult>;
  /**
   * Sends a log message to the caller (MCP's `notifications/message`, at or above the level the client
   * set); `data` is any JSON value, `logger` names the part of the tool that speaks. Does nothing when
   * the caller takes no log messages. Never throws.
   */
  log(level: ToolLogLevel, data: unknown, logger?: string): void;
}

/** Optional call details passed to {@link Tool.runJson} beside the signal. */
export interface RunJsonOptions {
  /** @default a generated id */
  callId?: string;
  /** The end user, forwarded to tool services in the request envelope. @default undefined */
  user?: string;
  /** The call's absolute deadline (epoch ms), put in `ToolCallContext.deadline`. @default none */
  deadline?: number;
  /** Hears the tool's `ctx.progress` reports. @default none */
  onProgress?: (update: ToolProgress) => void;
  /** What the caller can do for the tool (`ctx.elicit`, `ctx.sample`, `ctx.log`). @default none */
  clientFeatures?: ToolClientFeatures;
  /**
   * Who made the call (`ToolCallOptions.caller`), named by the error `ctx.elicit` and `ctx.sample` reject
   * with when the caller cannot answer. @default undefined
   */
  caller?: string;
}

/**
 * A tool an agent can call. Implemented by `FunctionTool`, `BaseTool` subclasses, tool-service tools,
 * MCP tools, HTTP tools and LangChain adapters alike.
 */
export interface Tool {
  /** Matches `^[a-zA-Z0-9_-]{1,64}$`. */
  readonly name: string;
  readonly description: string;
  /** The schema sent to the model (default profile; see `compileSchema` for others). */
  readonly schema: ToolSchema;
  /**
   * The JSON Schema dialect (`$schema`) the tool's source schema declared, e.g.
   * `http://json-schema.org/draft-07/schema#` for an MCP server's draft-07 tool. The model-facing
   * `schema` leaves it out; the MCP bridge serves it in `inputSchema.$schema`, so a proxied schema keeps
   * its meaning. @default undefined (none declared: 2020-12 for MCP)
   */
  readonly schemaDialect?: string;
  /** Side-effect hints, when the tool declares them. */
  readonly annotations?: ToolAnnotations;
  /**
   * The tool's own time limit, which a `ToolSet` uses instead of its default (a call's `timeoutMs` still
   * wins). `Infinity` says the tool enforces its own limits, as MCP tools do with progress-aware timeouts.
   */
  readonly timeoutMs?: number;
  /**
   * How long in total progress may keep a call of this tool alive: each `ctx.progress` report restarts
   * the timeout, up to this from the start (see `ToolSetOptions.maxTotalTimeoutMs`; a call's own wins).
   * @default the set's (none: progress does not restart the timeout)
   */
  readonly maxTotalTimeoutMs?: number;
  /**
   * Whether a call needs a person's approval before it runs: `true`, or a predicate over the arguments.
   * The model's schema does not show it. An agent with a run store pauses the run and asks; any other
   * caller gets an `approval-required` error result unless it passes `ToolCallOptions.approvedBy`.
   * @default undefined (never)
   */
  readonly needsApproval?: NeedsApproval;
  /**
   * Words that group the tool for search and profiles (`weather`, `openapi:petstore`). The model's
   * schema does not show them. @default undefined (none)
   */
  readonly tags?: readonly string[];
  /**
   * What the tool's result looks like: a JSON Schema of an object (MCP's `outputSchema`). `ToolSet`
   * checks every result against it (a mismatch is a `tool-error` saying what is wrong) and keeps a match
   * as the result's `structured` value; the MCP bridge serves both. @default none
   */
  readonly outputSchema?: ObjectJsonSchema;
  /**
   * Validates `args` against the schema, then runs the tool.
   *
   * Rejects with a {@link ToolError}: `invalid-arguments`, `tool-error`, `cancelled`, and for remote
   * tools `timeout` and `unavailable`.
   */
  runJson(
    args: unknown,
    signal?: AbortSignal | { signal: AbortSignal },
    options?: RunJsonOptions,
  ): Promise<unknown>;
  /** A string passes through unchanged; anything else becomes JSON text. */
  returnValueAsString(value: unknown): string;
}

/** The outcome of one `ToolSet.call`. Failures are results too, with `isError: true`. */
export interface ToolResult {
  name: string;
  callId: string;
  /** The tool's output, or an error message written for the model. */
  content: string;
  isError: boolean;
  /** The typed error behind an error result, for code that branches on `error.code`. */
  error?: ToolError;
  /**
   * The arguments as the caller gave them, when they were JSON text that parsed to a JSON object: what an
   * agent replays to the model for this call. Absent when the text was not a JSON object (replay `{}`)
   * or the arguments were given as an object.
   */
  arguments?: string;
  /** Set when the output was over the cap: how many UTF-8 bytes were cut from the middle. */
  truncatedBytes?: number;
  /**
   * The result as an object, for a tool with an `outputSchema` whose result matched it (and was not
   * cut); `content` holds its JSON text.
   */
  structured?: JsonObject;
  /**
   * The result as content parts (text, images, audio, resources), for a tool that returned parts (an
   * MCP server's content, a `FunctionTool` returning `{ type: 'image', data, mimeType }`): within the
   * set's caps; `content` is their text, with media described (`[image: image/png, 1234 bytes]`). A
   * vision model gets the images (`modelInfo.vision`), MCP clients get the parts. @default none
   */
  parts?: ContentPart[];
}

/** Options of `ToolSet.call`. */
export interface ToolCallOptions {
  /** Cancels the call. @default none */
  signal?: AbortSignal;
  /** @default DEFAULT_TOOL_TIMEOUT_MS (60 000) */
  timeoutMs?: number;
  /**
   * The absolute deadline (epoch ms) set by the outermost caller, e.g. what is left of an agent run.
   * The call ends at whichever comes first, this or `timeoutMs` from now (code `timeout` either way),
   * and the tool sees that as `ToolCallContext.deadline`. @default none (the timeout alone)
   */
  deadline?: number;
  /** @default a generated id */
  callId?: string;
  /** The end user, forwarded to tool services. @default undefined */
  user?: string;
  /**
   * Who made the call: the entry point and its principal, e.g. `http:admin@127.0.0.1`, `mcp:…`,
   * `agent`. Observed (hooks, the audit log) and named in the error of a `ctx.elicit` the caller cannot
   * answer; never sent to a remote tool. @default undefined
   */
  caller?: string;
  /**
   * Who approved this call, for a tool that needs approval (`Tool.needsApproval`): without it, such a
   * call is not run and its result is an `approval-required` error. Agents set it once a person has
   * approved. @default undefined
   */
  approvedBy?: string;
  /** Hears the tool's progress reports (`ctx.progress`), besides the set's `onProgress` hooks. @default none */
  onProgress?: (update: ToolProgress) => void;
  /**
   * Progress restarts this call's timeout, up to this total from its start: `ToolSetOptions.maxTotalTimeoutMs`
   * for one call. @default the tool's, else the set's
   */
  maxTotalTimeoutMs?: number;
  /**
   * What the caller can do for the tool while it runs: answer an elicitation, sample its model, take
   * log messages (`ctx.elicit`, `ctx.sample`, `ctx.log`). The MCP bridge sets it from the client's
   * declared capabilities. @default none (`ctx.elicit` and `ctx.sample` reject with `unsupported`)
   */
  clientFeatures?: ToolClientFeatures;
}

/** Anything that can list and call tools: a `ToolSet` or a `LiveToolSet`. */
export interface ToolProvider {
  /** The tools visible now. */
  list(): readonly Tool[];
  get(name: string): Tool | undefined;
  /** Calls a tool; never rejects for tool failures (see {@link ToolResult}). */
  call(name: string, args: string | Record<string, unknown>, options?: ToolCallOptions): Promise<ToolResult>;
  /**
   * Searches the tools, best match first, when the provider keeps its own index (a `LiveToolSet`, or a
   * view that narrows its base's). Use `searchTools(provider, query)`, which falls back to an index of
   * its own for any provider.
   */
  search?(query: string, options?: ToolSearchOptions): ToolSearchHit[];
}

export type { JsonSchema, ToolSchema };
