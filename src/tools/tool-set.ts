/**
 * @module `ToolSet`: the tools an agent sees, and the one place the tool error contract is applied.
 */
import { randomUUID } from 'node:crypto';
import { MAX_JSON_DEPTH, findJsonError, jsonDepth } from '../schema/index.js';
import { ConcurrencyLimiter } from './concurrency-limiter.js';
import { CallDeadlines, type Schedulable } from './call-deadlines.js';
import { ToolbusError, isToolbusError, numberOption } from '../errors/index.js';
import { ToolError, asToolError, toolAbortError } from './errors.js';
import { LazyAbortController } from './lazy-abort-controller.js';
import { onAbort } from './abort-fanout.js';
import type { Tool, ToolCallOptions, ToolProvider, ToolResult } from './tool.js';
import { validateToolName } from './tool-name.js';
import { truncateOutput } from './truncate-output.js';
import { hookList, runHooks, type Hook, type HookFn } from './hooks.js';

/** Per-call timeout used when neither the call nor the set gives one (60 s). */
export const DEFAULT_TOOL_TIMEOUT_MS = 60_000;
/** Output cap used when the set gives none (64 KiB). */
export const DEFAULT_MAX_OUTPUT_BYTES = 64 * 1024;
/** Calls of one set running at once when the set gives no cap. */
export const DEFAULT_TOOL_CONCURRENCY = 16;
/** The smallest accepted output cap: room for the notice plus some head and tail. */
export const MIN_MAX_OUTPUT_BYTES = 512;

/** What `onCall` hooks see: a call about to run (the tool exists and the arguments parsed). */
export interface ToolCallEvent {
  readonly name: string;
  readonly callId: string;
  /** The parsed arguments, before validation. */
  readonly arguments: Readonly<Record<string, unknown>>;
  readonly user: string | undefined;
  readonly tool: Tool;
}

/** What `onResult` and `onError` hooks see: a finished call and its result. */
export interface ToolResultEvent {
  readonly name: string;
  readonly callId: string;
  readonly user: string | undefined;
  readonly result: ToolResult;
  /** Wall time of the call, queueing included. */
  readonly durationMs: number;
}

/** Observability and policy hooks of a {@link ToolSet}. */
export interface ToolSetHooks {
  /**
   * Runs before a tool runs. Throwing (or rejecting) vetoes the call: the result is an error with the
   * hook's message (a thrown `ToolError` keeps its code; anything else is `tool-error`). @default none
   */
  onCall?: Hook<ToolCallEvent>;
  /** Runs after every call, with its result. Its errors are ignored: the result is already decided. @default none */
  onResult?: Hook<ToolResultEvent>;
  /** Runs after `onResult` for error results only (`result.error` is set). Errors ignored too. @default none */
  onError?: Hook<ToolResultEvent>;
}

/** Options of {@link ToolSet}. */
export interface ToolSetOptions {
  /** Per-call timeout (a call's own `timeoutMs` wins). `Infinity` disables it. @default DEFAULT_TOOL_TIMEOUT_MS */
  timeoutMs?: number;
  /** Output cap in UTF-8 bytes; longer output keeps head and tail. @default DEFAULT_MAX_OUTPUT_BYTES */
  maxOutputBytes?: number;
  /** Calls running at once; the rest wait in FIFO order. @default DEFAULT_TOOL_CONCURRENCY */
  concurrency?: number;
  /** @default none */
  hooks?: ToolSetHooks;
  /**
   * More to say about a tool name that is not in the set, added to the one unknown-tool message, e.g.
   * why the registry skipped the config item of that name. @default none
   */
  describeUnknown?: (name: string) => string | undefined;
}

interface ResolvedToolSetOptions {
  timeoutMs: number;
  maxOutputBytes: number;
  concurrency: number;
  onCall: readonly HookFn<ToolCallEvent>[];
  onResult: readonly HookFn<ToolResultEvent>[];
  onError: readonly HookFn<ToolResultEvent>[];
  describeUnknown: ((name: string) => string | undefined) | undefined;
}

/**
 * An immutable set of tools with one call path applying the error contract: `call` never rejects for a
 * tool failure; it returns a {@link ToolResult} with `isError: true`, a message written for the model,
 * and `error` (a {@link ToolError}) for code that branches on `error.code`.
 *
 * @example
 * ```ts
 * const tools = new ToolSet([getStockPrice], { timeoutMs: 10_000 });
 * const result = await tools.call('get_stock_price', '{"ticker":"AAPL","date":"2021/01/01"}');
 * if (result.isError) console.log(result.error?.code);
 * ```
 */
export class ToolSet implements ToolProvider {
  readonly #tools = new Map<string, Tool>();
  readonly #list: readonly Tool[];
  readonly #options: ResolvedToolSetOptions;
  readonly #limiter: ConcurrencyLimiter;
  readonly #deadlines = new CallDeadlines<CallControl>((control) => control.onDeadline());

  /**
   * @throws {ToolbusError} `invalid-name` for an invalid or duplicate tool name; `usage` for a bad option.
   */
  constructor(tools: Iterable<Tool>, options: ToolSetOptions = {}) {
    for (const tool of tools) {
      validateToolName(tool.name);
      if (this.#tools.has(tool.name)) {
        throw new ToolbusError(
          'invalid-name',
          `duplicate tool name '${tool.name}': every tool in a ToolSet needs a unique name`,
        );
      }
      this.#tools.set(tool.name, tool);
    }
    this.#list = Object.freeze([...this.#tools.values()]);
    this.#options = {
      timeoutMs: numberOption('ToolSet', 'timeoutMs', options.timeoutMs, DEFAULT_TOOL_TIMEOUT_MS, {
        infinity: true,
      }),
      maxOutputBytes: numberOption(
        'ToolSet',
        'maxOutputBytes',
        options.maxOutputBytes,
        DEFAULT_MAX_OUTPUT_BYTES,
        {
          integer: true,
          min: MIN_MAX_OUTPUT_BYTES,
          infinity: true,
        },
      ),
      concurrency: numberOption('ToolSet', 'concurrency', options.concurrency, DEFAULT_TOOL_CONCURRENCY, {
        integer: true,
        infinity: true,
      }),
      onCall: hookList(options.hooks?.onCall),
      onResult: hookList(options.hooks?.onResult),
      onError: hookList(options.hooks?.onError),
      describeUnknown: options.describeUnknown,
    };
    this.#limiter = new ConcurrencyLimiter(this.#options.concurrency);
  }

  /** The tools, in the order given. */
  list(): readonly Tool[] {
    return this.#list;
  }

  /** The tool called `name`, if any. */
  get(name: string): Tool | undefined {
    return this.#tools.get(name);
  }

  /** True when a tool called `name` is in the set. */
  has(name: string): boolean {
    return this.#tools.has(name);
  }

  /** How many tools the set holds. */
  get size(): number {
    return this.#tools.size;
  }

  /** Calls running now. */
  get active(): number {
    return this.#limiter.active;
  }

  /** Calls waiting for a free slot now. */
  get waiting(): number {
    return this.#limiter.waiting;
  }

  /**
   * Calls a tool. `args` is the model's JSON text or an already parsed object. Never rejects: invalid
   * JSON, failed validation (`invalid-arguments`), an unknown tool (`unknown-tool`), a thrown error
   * (`tool-error`, or the `ToolError` the tool threw), a timeout (`timeout`, the tool's signal is
   * aborted) and cancellation (`cancelled`) all resolve to a result with `isError: true`. Output over
   * `maxOutputBytes` keeps head and tail with a notice in the middle (`truncatedBytes` says how much).
   */
  call(
    name: string,
    args: string | Record<string, unknown>,
    options: ToolCallOptions = {},
  ): Promise<ToolResult> {
    const callId = options.callId ?? randomUUID();
    if (this.#options.onResult.length === 0 && this.#options.onError.length === 0) {
      return this.#call(name, args, options, callId, options.user);
    }
    return this.#callObserved(name, args, options, callId);
  }

  async #callObserved(
    name: string,
    args: string | Record<string, unknown>,
    options: ToolCallOptions,
    callId: string,
  ): Promise<ToolResult> {
    const started = performance.now();
    const user = options.user;
    const result = await this.#call(name, args, options, callId, user);
    const event: ToolResultEvent = { name, callId, user, result, durationMs: performance.now() - started };
    const hooks = result.isError
      ? [...this.#options.onResult, ...this.#options.onError]
      : this.#options.onResult;
    await runHooks(hooks, event, 'observe');
    return result;
  }

  async #call(
    name: string,
    args: string | Record<string, unknown>,
    options: ToolCallOptions,
    callId: string,
    user: string | undefined,
  ): Promise<ToolResult> {
    const tool = this.#tools.get(name);
    const parsed = parseToolArguments(name, args);
    // The text to replay to the model for this call: its own, once it is known to be a JSON object.
    const replay = typeof args === 'string' && !(parsed instanceof ToolError) ? args : undefined;
    if (tool === undefined) {
      const more = this.#options.describeUnknown?.(name);
      return failure(name, callId, unknownTool(name, this.#list, more), replay);
    }
    if (parsed instanceof ToolError) return failure(name, callId, parsed);

    const timeoutMs = options.timeoutMs ?? tool.timeoutMs ?? this.#options.timeoutMs;
    if (typeof timeoutMs !== 'number' || Number.isNaN(timeoutMs) || timeoutMs <= 0) {
      return failure(
        name,
        callId,
        new ToolError(
          'usage',
          `tool '${name}': timeoutMs must be a positive number, got ${String(timeoutMs)}`,
          {
            toolName: name,
          },
        ),
        replay,
      );
    }
    const callerSignal = options.signal;
    if (callerSignal?.aborted) return failure(name, callId, toolAbortError(callerSignal, name), replay);

    // One budget per call: its timeout from now, cut short by the outermost caller's deadline. The tool
    // gets it as `ctx.deadline`, so a remote call sends the same budget on the wire.
    const callerDeadline = options.deadline;
    if (
      callerDeadline !== undefined &&
      (typeof callerDeadline !== 'number' || Number.isNaN(callerDeadline))
    ) {
      return failure(name, callId, badDeadline(name, callerDeadline), replay);
    }
    let deadline: number | undefined;
    let budgetMs = timeoutMs;
    if (callerDeadline !== undefined || Number.isFinite(timeoutMs)) {
      const now = Date.now();
      deadline = now + timeoutMs;
      if (callerDeadline !== undefined && callerDeadline < deadline) {
        deadline = callerDeadline;
        budgetMs = callerDeadline - now;
        if (!(budgetMs > 0)) return failure(name, callId, deadlinePassed(name), replay);
      }
      if (deadline === Infinity) deadline = undefined;
    }

    // One controller per call, aborted by the caller's signal or by the deadline (see CallControl).
    const control = new CallControl(name, budgetMs, callerSignal);
    // One listener on the caller's signal however many calls share it; `handleEvent`: no closure per call.
    const unwatch = callerSignal === undefined ? undefined : onAbort(callerSignal, control);
    // Deadlines share one timer per timeout value (see CallDeadlines): a setTimeout per call
    // would cost more than the call itself.
    if (Number.isFinite(budgetMs)) this.#deadlines.add(budgetMs, control);
    let holding = false;
    try {
      if (this.#limiter.tryAcquire()) holding = true;
      else {
        await this.#limiter.acquire(control.signal);
        holding = true;
      }
      if (this.#options.onCall.length > 0) {
        if (control.aborted) throw control.reason;
        const event: ToolCallEvent = { name, callId, arguments: parsed, user, tool };
        // Raced like the tool itself: a hook that never settles (an approval nobody answers) must not
        // outlive the call's cancel or deadline.
        await new Promise<void>((resolve, reject) => {
          control.stop = reject;
          runHooks(this.#options.onCall, event, 'veto').then(resolve, reject);
        });
      }
      if (control.aborted) throw control.reason;
      const value = await new Promise<unknown>((resolve, reject) => {
        control.stop = reject;
        tool.runJson(parsed, control, { callId, user, deadline }).then(resolve, reject);
      });
      return this.#success(tool, name, callId, value, replay);
    } catch (error) {
      return failure(name, callId, toToolError(name, error, control), replay);
    } finally {
      this.#deadlines.cancel(control);
      unwatch?.();
      if (holding) this.#limiter.release();
    }
  }

  #success(tool: Tool, name: string, callId: string, value: unknown, replay: string | undefined): ToolResult {
    let content: string;
    try {
      content = tool.returnValueAsString(value);
    } catch (error) {
      return failure(
        name,
        callId,
        new ToolError(
          'tool-error',
          `tool '${name}': its result cannot be turned into text: ${String(error)}`,
          {
            cause: error,
            toolName: name,
          },
        ),
        replay,
      );
    }
    const capped = truncateOutput(content, this.#options.maxOutputBytes);
    const result: ToolResult = { name, callId, content: capped.text, isError: false };
    if (replay !== undefined) result.arguments = replay;
    if (capped.cutBytes > 0) result.truncatedBytes = capped.cutBytes;
    return result;
  }
}

/**
 * The abort side of one call. Its AbortSignal is created only if the tool reads `ctx.signal` (see
 * LazyAbortController). Aborting also rejects the call's race promise (`stop`), so the call returns
 * even when the tool ignores its signal. Listener and deadline target in one object, so the hot path
 * allocates no closures.
 */
class CallControl extends LazyAbortController implements Schedulable {
  /** Rejects the promise the call is waiting on. */
  stop: ((reason: unknown) => void) | undefined;
  dueAt = 0;
  dueQueue: unknown = undefined;
  readonly #name: string;
  readonly #timeoutMs: number;
  readonly #callerSignal: AbortSignal | undefined;

  constructor(name: string, timeoutMs: number, callerSignal: AbortSignal | undefined) {
    super();
    this.#name = name;
    this.#timeoutMs = timeoutMs;
    this.#callerSignal = callerSignal;
  }

  /** The caller's signal aborted. */
  handleEvent(): void {
    this.#abortWith(toolAbortError(this.#callerSignal ?? { aborted: true, reason: undefined }, this.#name));
  }

  /** The deadline passed. */
  onDeadline(): void {
    this.#abortWith(
      new ToolError(
        'timeout',
        `tool '${this.#name}' timed out after ${this.#timeoutMs} ms and was cancelled; try again with a smaller request`,
        { toolName: this.#name },
      ),
    );
  }

  #abortWith(reason: ToolError): void {
    this.abort(reason);
    this.stop?.(reason);
  }
}

/** A `deadline` option that is not a number of epoch milliseconds. */
function badDeadline(name: string, value: unknown): ToolError {
  return new ToolError(
    'usage',
    `tool '${name}': deadline must be epoch milliseconds (a number), got ${String(value)}`,
    { toolName: name },
  );
}

/** The caller's deadline passed before the call could start. */
function deadlinePassed(name: string): ToolError {
  return new ToolError('timeout', `tool '${name}' was not run: the caller's deadline had already passed`, {
    toolName: name,
  });
}

function failure(name: string, callId: string, error: ToolError, replay?: string): ToolResult {
  const result: ToolResult = { name, callId, content: error.message, isError: true, error };
  if (replay !== undefined) result.arguments = replay;
  return result;
}

/** Any failure as a `ToolError`: a `ToolError` as it is, a `ToolbusError` keeping its code, else `tool-error`. */
function toToolError(name: string, error: unknown, abort: LazyAbortController): ToolError {
  // An abort wins over whatever the tool threw while stopping.
  if (abort.aborted && abort.reason instanceof ToolError) return abort.reason;
  if (isToolbusError(error)) return asToolError(error, name);
  const message = error instanceof Error ? error.message : String(error);
  return new ToolError('tool-error', `tool '${name}' failed: ${message}`, { cause: error, toolName: name });
}

/** The one unknown-tool message, whoever calls (an agent, the gateway, the MCP bridge). */
function unknownTool(name: string, tools: readonly Tool[], more: string | undefined): ToolError {
  const shown = name.length > 80 ? `${name.slice(0, 77)}...` : name;
  const names = tools.map((t) => `'${t.name}'`);
  const available = names.length === 0 ? 'no tools are available' : `available tools: ${names.join(', ')}`;
  return new ToolError('unknown-tool', `unknown tool '${shown}'${more ? ` (${more})` : ''}; ${available}`, {
    toolName: name,
  });
}

/**
 * Reads a call's arguments as `ToolSet.call` does: JSON text (a byte order mark and blank text allowed)
 * or an object. Returns the arguments, or a `ToolError` (`invalid-arguments`) saying where the JSON broke,
 * that it nests too deep, or that it is not an object.
 */
export function parseToolArguments(
  name: string,
  args: string | Record<string, unknown>,
): Record<string, unknown> | ToolError {
  let value: unknown = args;
  if (typeof args === 'string') {
    // Some servers send '' for a tool without arguments: the same fresh object as '{}' (a shared frozen
    // one made a tool that fills in its own defaults fail with "object is not extensible").
    if (args.trim() === '') return {};
    // A leading UTF-8 byte order mark (sent by some proxies and Windows tooling) is invisible and means
    // nothing, but JSON.parse rejects it: read the arguments as if it were not there.
    const text = args.charCodeAt(0) === 0xfeff ? args.slice(1) : args;
    if (jsonDepth(text, MAX_JSON_DEPTH) > MAX_JSON_DEPTH) {
      return new ToolError(
        'invalid-arguments',
        `tool '${name}': the arguments nest deeper than ${MAX_JSON_DEPTH} levels of arrays and objects; flatten them`,
        { toolName: name },
      );
    }
    try {
      value = JSON.parse(text);
    } catch (error) {
      return new ToolError('invalid-arguments', invalidJsonMessage(name, text, error as Error), {
        cause: error,
        toolName: name,
      });
    }
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    const got = value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value;
    return new ToolError('invalid-arguments', `tool '${name}': arguments must be a JSON object, got ${got}`, {
      toolName: name,
    });
  }
  return value as Record<string, unknown>;
}

function invalidJsonMessage(name: string, text: string, error: Error): string {
  const position = findJsonError(text)?.position ?? text.length;
  const from = Math.max(0, position - 20);
  const to = Math.min(text.length, position + 20);
  const excerpt = `${from > 0 ? '...' : ''}${text.slice(from, to)}${to < text.length ? '...' : ''}`;
  // V8 sometimes quotes the whole input in its message; keep only the reason (never a whole payload).
  const reason = error.message
    .replace(/,\s*".*" is not valid JSON$/s, '')
    .replace(/\s*in JSON at position \d+.*$/s, '')
    .slice(0, 80);
  const where = position >= text.length ? `at the end (position ${position})` : `at position ${position}`;
  return (
    `tool '${name}': arguments are not valid JSON (${reason}) ${where}, near ${JSON.stringify(excerpt)}; ` +
    `expected a JSON object such as {"key": "value"}`
  );
}
