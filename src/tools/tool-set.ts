/**
 * @module `ToolSet`: the tools an agent sees, and the one place the tool error contract is applied.
 */
import { performance } from 'node:perf_hooks';
import { MAX_JSON_DEPTH, findJsonError, jsonDepth, type JsonObject } from '../schema/index.js';
import { ConcurrencyLimiter } from './concurrency-limiter.js';
import { CallDeadlines, type Schedulable } from './call-deadlines.js';
import { ToolbusError, isToolbusError, numberOption } from '../errors/index.js';
import { ToolError, asToolError, toolAbortError } from './errors.js';
import { LazyAbortController } from './lazy-abort-controller.js';
import { onAbort } from './abort-fanout.js';
import type {
  RunJsonOptions,
  Tool,
  ToolCallContext,
  ToolCallOptions,
  ToolProgress,
  ToolProvider,
  ToolResult,
} from './tool.js';
import { validateToolName } from './tool-name.js';
import { approvalNeeded } from './approval.js';
import { truncateOutput } from './truncate-output.js';
import { NearestNames } from './nearest-names.js';
import { BaseTool, runFailure, startRun } from './base-tool.js';
import { CallIdSource } from './call-id.js';
import { checkToolOutput } from './output-schema.js';
import {
  contentParts,
  describePart,
  isMediaPart,
  partBytes,
  partsToText,
  type ContentPart,
} from './content-parts.js';
import { hookList, notifyHooks, runHooks, type Hook, type HookFn } from './hooks.js';
import {
  askThrough,
  logThrough,
  type ElicitationRequest,
  type ElicitationResult,
  type SamplingRequest,
  type SamplingResult,
  type ToolLogLevel,
} from './client-features.js';
import { endSpanWithFailure, runInSpan, tracingEnabled } from './tracing.js';
import { endToolSpan, startToolSpan } from './tool-tracing.js';

/** Per-call timeout used when neither the call nor the set gives one (60 s). */
export const DEFAULT_TOOL_TIMEOUT_MS = 60_000;
/** Output cap used when the set gives none (64 KiB). */
export const DEFAULT_MAX_OUTPUT_BYTES = 64 * 1024;
/** Media cap used when the set gives none (5 MiB): the decoded bytes of a result's images, audio and blobs. */
export const DEFAULT_MAX_MEDIA_BYTES = 5 * 1024 * 1024;
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
  /** Who made the call (`ToolCallOptions.caller`). */
  readonly caller: string | undefined;
  /** The arguments as the caller gave them: JSON text, or an object. */
  readonly args: string | Readonly<Record<string, unknown>>;
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
  /**
   * Told that a call starts (the tool exists and the arguments parsed; it may still wait for a slot or
   * be vetoed by `onCall`, and `onResult` follows in any case). Never awaited, errors ignored: unlike
   * an `onCall` hook it keeps the call on the set's fast path, so it suits observers. @default none
   */
  onStart?: Hook<ToolCallEvent>;
  /** Runs after every call, with its result. Its errors are ignored: the result is already decided. @default none */
  onResult?: Hook<ToolResultEvent>;
  /** Runs after `onResult` for error results only (`result.error` is set). Errors ignored too. @default none */
  onError?: Hook<ToolResultEvent>;
  /** A running tool reported progress (`ctx.progress`). Errors ignored. @default none */
  onProgress?: Hook<ToolProgressEvent>;
}

/** What `onProgress` hooks see: which call, and its report. */
export interface ToolProgressEvent extends ToolProgress {
  readonly name: string;
  readonly callId: string;
  readonly user: string | undefined;
}

/** Options of {@link ToolSet}. */
export interface ToolSetOptions {
  /** Per-call timeout (a call's own `timeoutMs` wins). `Infinity` disables it. @default DEFAULT_TOOL_TIMEOUT_MS */
  timeoutMs?: number;
  /** Output cap in UTF-8 bytes; longer output keeps head and tail. @default DEFAULT_MAX_OUTPUT_BYTES */
  maxOutputBytes?: number;
  /**
   * Cap on the media of one result made of content parts (images, audio, resource blobs), in decoded
   * bytes: parts beyond it are left out, and the result's text says which. `Infinity` disables it.
   * @default DEFAULT_MAX_MEDIA_BYTES
   */
  maxMediaBytes?: number;
  /** Calls running at once; the rest wait in FIFO order. @default DEFAULT_TOOL_CONCURRENCY */
  concurrency?: number;
  /**
   * Lets progress keep a call alive, as MCP's `resetTimeoutOnProgress`: each `ctx.progress` report
   * restarts the call's timeout, up to this total from its start (a call's or tool's own
   * `maxTotalTimeoutMs` wins). The tool's `ctx.deadline`, and the deadline a remote call sends, is then
   * the cap: the timeout is enforced here, and a call that goes quiet is cancelled. `Infinity`: no cap.
   * @default none (progress does not reset the timeout)
   */
  maxTotalTimeoutMs?: number;
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
  maxTotalTimeoutMs: number | undefined;
  maxOutputBytes: number;
  maxMediaBytes: number;
  concurrency: number;
  onCall: readonly HookFn<ToolCallEvent>[];
  onResult: readonly HookFn<ToolResultEvent>[];
  onError: readonly HookFn<ToolResultEvent>[];
  onProgress: readonly HookFn<ToolProgressEvent>[];
  onStart: readonly HookFn<ToolCallEvent>[];
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
  readonly #scope: CallScope;
  /** Made on the first call without an id: building a set (a registry reload) draws no randomness. */
  #callIds: CallIdSource | undefined;

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
      maxTotalTimeoutMs:
        options.maxTotalTimeoutMs === undefined
          ? undefined
          : numberOption('ToolSet', 'maxTotalTimeoutMs', options.maxTotalTimeoutMs, 1, {
              min: 1,
              infinity: true,
            }),
      maxMediaBytes: numberOption(
        'ToolSet',
        'maxMediaBytes',
        options.maxMediaBytes,
        DEFAULT_MAX_MEDIA_BYTES,
        {
          integer: true,
          min: 0,
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
      onProgress: hookList(options.hooks?.onProgress),
      onStart: hookList(options.hooks?.onStart),
      describeUnknown: options.describeUnknown,
    };
    this.#limiter = new ConcurrencyLimiter(this.#options.concurrency);
    this.#scope = {
      deadlines: this.#deadlines,
      limiter: this.#limiter,
      maxOutputBytes: this.#options.maxOutputBytes,
      maxMediaBytes: this.#options.maxMediaBytes,
    };
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
    options: ToolCallOptions = NO_OPTIONS,
  ): Promise<ToolResult> {
    const callId = options.callId ?? (this.#callIds ??= new CallIdSource()).next();
    // One cheap test per call: with no OpenTelemetry SDK registered, the paths below run as they did
    // before tracing existed (no span, no context, the direct path's one promise).
    if (tracingEnabled()) return this.#callTraced(name, args, options, callId);
    if (this.#options.onResult.length === 0 && this.#options.onError.length === 0) {
      try {
        return this.#call(name, args, options, callId, options.user);
      } catch (error) {
        // A throwing `describeUnknown` (or a getter of a caller's object): rejected, never thrown.
        return Promise.reject(error);
      }
    }
    return this.#callObserved(name, args, options, callId);
  }

  /**
   * A call inside its `execute_tool` span. The tool runs with the span active, so what it calls out to
   * (a tool service, an MCP server) traces as the span's child and carries it on the wire.
   */
  #callTraced(
    name: string,
    args: string | Record<string, unknown>,
    options: ToolCallOptions,
    callId: string,
  ): Promise<ToolResult> {
    const span = startToolSpan(name, callId, args, this.#tools.get(name));
    const observed = this.#options.onResult.length > 0 || this.#options.onError.length > 0;
    let running: Promise<ToolResult>;
    try {
      running = runInSpan(span, () =>
        observed
          ? this.#callObserved(name, args, options, callId)
          : this.#call(name, args, options, callId, options.user),
      );
    } catch (error) {
      running = Promise.reject(error);
    }
    return running.then(
      (result) => endToolSpan(span, result),
      (error: unknown) => {
        endSpanWithFailure(span, error);
        throw error;
      },
    );
  }

  /** A call whose `onResult`/`onError` hooks run when it has finished, before its result is returned. */
  #callObserved(
    name: string,
    args: string | Record<string, unknown>,
    options: ToolCallOptions,
    callId: string,
  ): Promise<ToolResult> {
    const started = performance.now();
    const user = options.user;
    let running: Promise<ToolResult>;
    try {
      running = this.#call(name, args, options, callId, user);
    } catch (error) {
      return Promise.reject(error);
    }
    return running.then((result) => {
      const event: ToolResultEvent = {
        name,
        callId,
        user,
        caller: options.caller,
        args,
        result,
        durationMs: performance.now() - started,
      };
      const hooks = result.isError
        ? [...this.#options.onResult, ...this.#options.onError]
        : this.#options.onResult;
      // Synchronous hooks (metrics, the audit buffer) add no promise; an async one is waited for.
      const observing = runHooks(hooks, event, 'observe');
      return observing === undefined ? result : observing.then(() => result);
    });
  }

  /**
   * Checks the call and starts it. Not an async function: a call that can run at once (a free slot, no
   * `onCall` hook) makes one promise, settled by the tool's or by an abort (see CallControl); the others
   * wait in {@link #callQueued}. May throw only what a caller's hook or getter throws.
   */
  #call(
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
      return Promise.resolve(failure(name, callId, unknownToolError(name, this.#list, more), replay));
    }
    if (parsed instanceof ToolError) return Promise.resolve(failure(name, callId, parsed));
    const approval = tool.needsApproval;
    if (approval !== undefined && approval !== false && options.approvedBy === undefined) {
      return this.#callNeedingApproval(tool, parsed, replay, options, callId, user);
    }
    return this.#start(tool, parsed, replay, options, callId, user);
  }

  /** A call of a tool that may need approval and has none: refused if this call needs it, else run. */
  async #callNeedingApproval(
    tool: Tool,
    parsed: Record<string, unknown>,
    replay: string | undefined,
    options: ToolCallOptions,
    callId: string,
    user: string | undefined,
  ): Promise<ToolResult> {
    const name = tool.name;
    if (await approvalNeeded(tool, parsed, { toolName: name, callId, user })) {
      const error = new ToolError(
        'approval-required',
        `tool '${name}' needs a person's approval before it runs, and this call has none: call it ` +
          'through an agent run that pauses for approvals (toolbus ask, POST /api/v1/agent), or pass ' +
          'approvedBy once someone has approved',
        { toolName: name },
      );
      return failure(name, callId, error, replay);
    }
    return this.#start(tool, parsed, replay, options, callId, user);
  }

  /** Starts a call whose tool exists and whose arguments parsed (see {@link #call}). */
  #start(
    tool: Tool,
    parsed: Record<string, unknown>,
    replay: string | undefined,
    options: ToolCallOptions,
    callId: string,
    user: string | undefined,
  ): Promise<ToolResult> {
    const name = tool.name;
    const timeoutMs = options.timeoutMs ?? tool.timeoutMs ?? this.#options.timeoutMs;
    if (typeof timeoutMs !== 'number' || Number.isNaN(timeoutMs) || timeoutMs <= 0) {
      return Promise.resolve(
        failure(
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
        ),
      );
    }
    const callerSignal = options.signal;
    if (callerSignal?.aborted) {
      return Promise.resolve(failure(name, callId, toolAbortError(callerSignal, name), replay));
    }

    // One budget per call: its timeout from now, cut short by the outermost caller's deadline. The tool
    // gets it as `ctx.deadline`, so a remote call sends the same budget on the wire.
    const callerDeadline = options.deadline;
    if (
      callerDeadline !== undefined &&
      (typeof callerDeadline !== 'number' || Number.isNaN(callerDeadline))
    ) {
      return Promise.resolve(failure(name, callId, badDeadline(name, callerDeadline), replay));
    }
    const capMs = options.maxTotalTimeoutMs ?? tool.maxTotalTimeoutMs ?? this.#options.maxTotalTimeoutMs;
    if (capMs !== undefined) {
      if (typeof capMs !== 'number' || Number.isNaN(capMs) || capMs <= 0) {
        return Promise.resolve(failure(name, callId, badCap(name, capMs), replay));
      }
      // A cap no longer than the timeout leaves nothing to restart.
      if (capMs > timeoutMs && Number.isFinite(timeoutMs)) {
        return this.#startResettable(tool, parsed, replay, options, callId, user, timeoutMs, capMs);
      }
    }
    let deadline: number | undefined;
    let budgetMs = timeoutMs;
    if (callerDeadline !== undefined) {
      const now = Date.now();
      deadline = now + timeoutMs;
      if (callerDeadline < deadline) {
        deadline = callerDeadline;
        budgetMs = callerDeadline - now;
        if (!(budgetMs > 0)) return Promise.resolve(failure(name, callId, deadlinePassed(name), replay));
      }
      if (deadline === Infinity) deadline = undefined;
    }
    // With the timeout alone, `deadline` is worked out from the timer when first read (CallControl).
    const timed = callerDeadline === undefined && Number.isFinite(timeoutMs);

    // One object per call: abort controller, deadline entry, caller-signal listener and the call's state.
    const control = new CallControl(this.#scope, tool, name, callId, replay, budgetMs, options);
    // Only a call somebody listens to for progress pays for a sink.
    control.progressSink = this.#progressListeners(name, callId, user, options);
    control.setDeadline(deadline, timed);
    // One listener on the caller's signal however many calls share it; `handleEvent`: no closure per call.
    if (callerSignal !== undefined) control.unwatch = onAbort(callerSignal, control);
    // Deadlines share one timer per timeout value (see CallDeadlines): a setTimeout per call
    // would cost more than the call itself.
    if (Number.isFinite(budgetMs)) this.#deadlines.add(budgetMs, control);
    return this.#launch(control, tool, parsed, user);
  }

  /** Runs a call now when a slot is free and no `onCall` hook must vet it, else queued. */
  #launch(
    control: CallControl,
    tool: Tool,
    parsed: Record<string, unknown>,
    user: string | undefined,
  ): Promise<ToolResult> {
    const onStart = this.#options.onStart;
    if (onStart.length > 0) {
      notifyHooks(onStart, { name: control.name, callId: control.callId, arguments: parsed, user, tool });
    }
    if (this.#options.onCall.length > 0 || !this.#limiter.tryAcquire()) {
      return this.#callQueued(control, tool, parsed, user);
    }
    control.holding = true;
    return control.run(parsed, user);
  }

  /** The call's progress listeners (its own and the set's hooks) as one function; none when nobody listens. */
  #progressListeners(
    name: string,
    callId: string,
    user: string | undefined,
    options: ToolCallOptions,
  ): ((update: ToolProgress) => void) | undefined {
    const hooks = this.#options.onProgress;
    const own = options.onProgress;
    return hooks.length > 0 || own !== undefined ? progressSink(name, callId, user, own, hooks) : undefined;
  }

  /**
   * {@link #start} for a call whose progress restarts its timeout, up to `capMs` from now: its deadline
   * (what the tool sees, and sends on the wire) is the cap, or the caller's when that is sooner.
   */
  #startResettable(
    tool: Tool,
    parsed: Record<string, unknown>,
    replay: string | undefined,
    options: ToolCallOptions,
    callId: string,
    user: string | undefined,
    timeoutMs: number,
    capMs: number,
  ): Promise<ToolResult> {
    const name = tool.name;
    const now = Date.now();
    let leftMs = capMs;
    const callerDeadline = options.deadline;
    if (callerDeadline !== undefined && callerDeadline - now < leftMs) {
      leftMs = callerDeadline - now;
      if (!(leftMs > 0)) return Promise.resolve(failure(name, callId, deadlinePassed(name), replay));
    }
    const budgetMs = Math.min(timeoutMs, leftMs);
    const control = new CallControl(this.#scope, tool, name, callId, replay, budgetMs, options);
    const listeners = this.#progressListeners(name, callId, user, options);
    // Always a sink: a report is what keeps the call alive, listened to or not.
    control.progressSink = (update) => {
      control.progressed();
      listeners?.(update);
    };
    control.setDeadline(Number.isFinite(leftMs) ? now + leftMs : undefined, false);
    if (options.signal !== undefined) control.unwatch = onAbort(options.signal, control);
    this.#deadlines.add(budgetMs, control);
    control.allowResets(timeoutMs, leftMs);
    return this.#launch(control, tool, parsed, user);
  }

  /** A call that waits for a slot or for its `onCall` hooks: the same steps, awaited. */
  async #callQueued(
    control: CallControl,
    tool: Tool,
    parsed: Record<string, unknown>,
    user: string | undefined,
  ): Promise<ToolResult> {
    const name = control.name;
    try {
      if (this.#limiter.tryAcquire()) control.holding = true;
      else {
        await this.#limiter.acquire(control.signal);
        control.holding = true;
      }
      if (this.#options.onCall.length > 0) {
        if (control.aborted) throw control.reason;
        const event: ToolCallEvent = {
          name,
          callId: control.callId,
          arguments: parsed,
          user,
          tool,
        };
        // Raced like the tool itself: a hook that never settles (an approval nobody answers) must not
        // outlive the call's cancel or deadline.
        const vetting = runHooks(this.#options.onCall, event, 'veto');
        if (vetting !== undefined) await control.race(vetting);
      }
      if (control.aborted) throw control.reason;
      const value = await control.race(tool.runJson(parsed, control, control.runOptions(user)));
      return control.success(value);
    } catch (error) {
      return failure(name, control.callId, toToolError(name, error, control), control.replay);
    } finally {
      control.release();
    }
  }
}

/** The one function a call's progress reports go through: the call's own listener, then the hooks. */
function progressSink(
  name: string,
  callId: string,
  user: string | undefined,
  own: ((update: ToolProgress) => void) | undefined,
  hooks: readonly HookFn<ToolProgressEvent>[],
): (update: ToolProgress) => void {
  return (update) => {
    if (own !== undefined) notifyHooks(own, update);
    if (hooks.length > 0) notifyHooks(hooks, { ...update, name, callId, user });
  };
}

/** The context a tool gets on ToolSet's direct path: its signal and deadline come from the call's control. */
class CallContext implements ToolCallContext {
  readonly #control: CallControl;
  readonly callId: string;
  user?: string;

  progress?: (update: ToolProgress) => void;

  constructor(control: CallControl, user: string | undefined) {
    this.#control = control;
    this.callId = control.callId;
    if (user !== undefined) this.user = user;
    if (control.progressSink !== undefined) this.progress = control.progressSink;
  }

  get signal(): AbortSignal {
    return this.#control.signal;
  }

  get deadline(): number | undefined {
    return this.#control.deadline;
  }

  /** Written by the tool itself (as a plain context's field could be): the tool sees what it wrote. */
  set deadline(value: number | undefined) {
    Object.defineProperty(this, 'deadline', { value, writable: true, enumerable: true, configurable: true });
  }

  // On the prototype, reading the call's control: a call that never asks pays nothing for them.
  elicit(request: ElicitationRequest): Promise<ElicitationResult> {
    const control = this.#control;
    const { clientFeatures, caller } = control.options;
    return askThrough('elicit', clientFeatures, control.name, caller, request, this.signal);
  }

  sample(request: SamplingRequest): Promise<SamplingResult> {
    const control = this.#control;
    const { clientFeatures, caller } = control.options;
    return askThrough('sample', clientFeatures, control.name, caller, request, this.signal);
  }

  log(level: ToolLogLevel, data: unknown, logger?: string): void {
    logThrough(this.#control.options.clientFeatures, level, data, logger);
  }
}

const baseRunJson = BaseTool.prototype.runJson;
/** The options of a call given none: shared (never written), so such a call allocates no object for them. */
const NO_OPTIONS: ToolCallOptions = Object.freeze({});

/** What a call needs of its set once it runs: the deadline queue, the slots and the output cap. */
interface CallScope {
  readonly deadlines: CallDeadlines<CallControl>;
  readonly limiter: ConcurrencyLimiter;
  readonly maxOutputBytes: number;
  readonly maxMediaBytes: number;
}

/**
 * One call of a ToolSet: its abort side, its deadline entry, its caller-signal listener and what it
 * needs to finish, in one object, so a call allocates little besides its promise.
 *
 * The AbortSignal is created only if the tool reads `ctx.signal` (see LazyAbortController). An abort
 * (the caller's signal, the deadline) rejects the promise the call waits on (`stop`), or on the direct
 * path ({@link run}) settles the call's result at once, so the call returns even when the tool ignores
 * its signal.
 */
class CallControl extends LazyAbortController implements Schedulable {
  dueAt = 0;
  dueQueue: unknown = undefined;
  /** Stops listening to the caller's signal. */
  unwatch: (() => void) | undefined = undefined;
  /** Whether the call holds one of the set's slots. */
  holding = false;
  /** Where the tool's progress reports go, when anybody listens. */
  progressSink: ((update: ToolProgress) => void) | undefined = undefined;
  /**
   * The caller's options, kept rather than copied (a call allocates nothing for them): its signal, and
   * what the tool's context reads on demand (`clientFeatures`, `caller`).
   */
  readonly options: ToolCallOptions;
  readonly name: string;
  readonly callId: string;
  readonly replay: string | undefined;
  readonly #scope: CallScope;
  readonly #tool: Tool;
  readonly #timeoutMs: number;
  /** Settles the result of a call on the direct path; undefined before it runs and once settled. */
  #settle: ((result: ToolResult) => void) | undefined = undefined;
  #deadline: number | undefined = undefined;
  /** True until the deadline of a call with the timeout alone has been worked out (see {@link deadline}). */
  #timed = false;
  /** For a call whose progress restarts its timeout: the timeout, and the cap (`performance.now()` time). */
  #idleMs = 0;
  #capAt = 0;
  /** How its timer last ended or was set: `progress` once a report restarted it, `cap` once cut at the cap. */
  #lastTimer: 'start' | 'progress' | 'cap' = 'start';

  constructor(
    scope: CallScope,
    tool: Tool,
    name: string,
    callId: string,
    replay: string | undefined,
    timeoutMs: number,
    options: ToolCallOptions,
  ) {
    super();
    this.#scope = scope;
    this.#tool = tool;
    this.name = name;
    this.callId = callId;
    this.replay = replay;
    this.#timeoutMs = timeoutMs;
    this.options = options;
  }

  /** Sets the call's deadline: known now (epoch ms or none), or `timed`: from its timer, when first read. */
  setDeadline(deadline: number | undefined, timed: boolean): void {
    this.#deadline = deadline;
    this.#timed = timed;
  }

  /**
   * The call's absolute deadline (epoch ms), if it has one. For a call with only its own timeout it is
   * the wall-clock time of the timer's due time, worked out on first read and kept: most tools never
   * ask, and a clock read costs as much as a good part of a trivial call.
   */
  get deadline(): number | undefined {
    if (this.#timed) {
      this.#timed = false;
      // Whole milliseconds, rounded up: never before the timer is due.
      this.#deadline = Math.ceil(Date.now() + (this.dueAt - performance.now()));
    }
    return this.#deadline;
  }

  /**
   * The direct path: runs the tool now (the caller holds a slot) and returns the call's one promise.
   * The run's own promise settles it, or an abort does first (see {@link abort}).
   */
  run(parsed: Record<string, unknown>, user: string | undefined): Promise<ToolResult> {
    const tool = this.#tool;
    // A BaseTool that keeps BaseTool's own runJson is started without the promise runJson puts around
    // its run: this call's result promise is then the only one.
    const direct = tool instanceof BaseTool && tool.runJson === baseRunJson;
    let running: unknown;
    let raw: boolean;
    let plain: boolean;
    try {
      running = direct
        ? tool[startRun](parsed, this, new CallContext(this, user), undefined)
        : tool.runJson(parsed, this, this.runOptions(user));
      raw = direct && this.rawRun;
      plain = raw && typeof (running as { then?: unknown } | null | undefined)?.then !== 'function';
    } catch (error) {
      return Promise.resolve(this.#finish(this.#failure(error)));
    }
    if (plain) {
      // `run` returned a plain value (a synchronous function): the call is done now.
      return Promise.resolve(this.#finish(this.aborted ? this.#failure(this.reason) : this.success(running)));
    }
    return new Promise<ToolResult>((resolve) => {
      this.#settle = resolve;
      // Aborted while the tool's synchronous part ran, before there was a result to settle.
      if (this.aborted) this.#done(this.#failure(this.reason));
      try {
        (running as Promise<unknown>).then(
          (value) => {
            if (this.#settle !== undefined) this.#done(this.success(value));
          },
          (error: unknown) => this.#done(this.#failure(raw ? runFailure(this.name, error, this) : error)),
        );
      } catch (error) {
        // Not a promise (a runJson breaking the contract, or a `then` that throws): a failure like any other.
        this.#done(this.#failure(raw ? runFailure(this.name, error, this) : error));
      }
    });
  }

  /** What a tool run through its own `runJson` (off the direct path) is told of the call. */
  runOptions(user: string | undefined): RunJsonOptions {
    const options: RunJsonOptions = { callId: this.callId, user, deadline: this.deadline };
    if (this.progressSink !== undefined) options.onProgress = this.progressSink;
    const { clientFeatures, caller } = this.options;
    if (clientFeatures !== undefined) options.clientFeatures = clientFeatures;
    if (caller !== undefined) options.caller = caller;
    return options;
  }

  /** The result for the tool's return value: as text, capped at the set's output limit. */
  success(value: unknown): ToolResult {
    const name = this.name;
    const outputSchema = this.#tool.outputSchema;
    let structured: JsonObject | undefined;
    if (outputSchema !== undefined) {
      const checked = checkToolOutput(name, outputSchema, value);
      if (checked instanceof ToolError) return failure(name, this.callId, checked, this.replay);
      structured = checked.structured;
    } else {
      let parts: ContentPart[] | undefined;
      try {
        parts = contentParts(name, value);
      } catch (error) {
        return failure(name, this.callId, error as ToolError, this.replay);
      }
      if (parts !== undefined) return this.#partsResult(parts);
    }
    let content: string;
    try {
      content = this.#tool.returnValueAsString(value);
    } catch (error) {
      return failure(
        name,
        this.callId,
        new ToolError(
          'tool-error',
          `tool '${name}': its result cannot be turned into text: ${String(error)}`,
          {
            cause: error,
            toolName: name,
          },
        ),
        this.replay,
      );
    }
    const maxBytes = this.#scope.maxOutputBytes;
    // A UTF-16 code unit is at most 3 UTF-8 bytes: short output needs no byte count (nor a cut).
    const capped = content.length * 3 <= maxBytes ? undefined : truncateOutput(content, maxBytes);
    const result: ToolResult =
      this.replay === undefined
        ? { name, callId: this.callId, content: capped?.text ?? content, isError: false }
        : {
            name,
            callId: this.callId,
            content: capped?.text ?? content,
            isError: false,
            arguments: this.replay,
          };
    if (capped !== undefined && capped.cutBytes > 0) {
      // Half an object is no object its schema describes: over the cap, a structured result fails.
      if (structured !== undefined) {
        return failure(
          name,
          this.callId,
          new ToolError(
            'too-large',
            `tool '${name}': its result is ${capped.cutBytes + maxBytes} bytes or more, over the ${maxBytes}-byte cap; ` +
              'a result with an output schema cannot be cut: ask for less',
            { toolName: name },
          ),
          this.replay,
        );
      }
      result.truncatedBytes = capped.cutBytes;
    } else if (structured !== undefined) result.structured = structured;
    return result;
  }

  /**
   * The result for content parts: media over the set's media cap left out (a text part says which), the
   * text capped as any output is (the text parts become one cut text part, before the media).
   */
  #partsResult(given: readonly ContentPart[]): ToolResult {
    const { maxMediaBytes, maxOutputBytes } = this.#scope;
    let media = 0;
    let parts = given.map((part): ContentPart => {
      if (!isMediaPart(part)) return part;
      const bytes = partBytes(part);
      if (media + bytes <= maxMediaBytes) {
        media += bytes;
        return part;
      }
      return {
        type: 'text',
        text: `${describePart(part)}: left out, over the ${maxMediaBytes}-byte media cap of one result`,
      };
    });
    let content = partsToText(parts);
    let cutBytes = 0;
    if (content.length * 3 > maxOutputBytes) {
      const textOnly = parts.filter((part) => !isMediaPart(part));
      const capped = truncateOutput(partsToText(textOnly), maxOutputBytes);
      if (capped.cutBytes > 0) {
        cutBytes = capped.cutBytes;
        parts = [{ type: 'text', text: capped.text }, ...parts.filter(isMediaPart)];
        content = partsToText(parts);
      }
    }
    const result: ToolResult = { name: this.name, callId: this.callId, content, isError: false, parts };
    if (this.replay !== undefined) result.arguments = this.replay;
    if (cutBytes > 0) result.truncatedBytes = cutBytes;
    return result;
  }

  /** Frees what the call holds (its deadline entry, its listener, its slot); idempotent. */
  release(): void {
    this.#scope.deadlines.cancel(this);
    const unwatch = this.unwatch;
    if (unwatch !== undefined) {
      this.unwatch = undefined;
      unwatch();
    }
    if (this.holding) {
      this.holding = false;
      this.#scope.limiter.release();
    }
  }

  /** Aborts; on the direct path the call's result settles now, with the abort's error. */
  override abort(reason: unknown): void {
    if (this.aborted) return;
    super.abort(reason);
    if (this.#settle !== undefined) this.#done(this.#failure(reason));
  }

  /** The caller's signal aborted. */
  handleEvent(): void {
    this.abort(toolAbortError(this.options.signal ?? { aborted: true, reason: undefined }, this.name));
  }

  /** Lets progress restart the timer (just scheduled) with `idleMs`, up to `capMs` from now. */
  allowResets(idleMs: number, capMs: number): void {
    this.#idleMs = idleMs;
    this.#capAt = this.dueAt - Math.min(idleMs, capMs) + capMs;
  }

  /** A progress report: restarts the timer of a call that allows it, never past its cap. */
  progressed(): void {
    // Not resettable, or already expired or settled.
    if (this.#idleMs === 0 || this.dueQueue === undefined) return;
    const left = this.#capAt - performance.now();
    if (left <= 0) return;
    const deadlines = this.#scope.deadlines;
    deadlines.cancel(this);
    if (left > this.#idleMs) {
      this.#lastTimer = 'progress';
      deadlines.add(this.#idleMs, this);
    } else {
      this.#lastTimer = 'cap';
      deadlines.add(Math.max(1, Math.ceil(left)), this);
    }
  }

  /** The deadline passed. */
  onDeadline(): void {
    if (this.#lastTimer !== 'start') {
      const error =
        this.#lastTimer === 'progress'
          ? `tool '${this.name}' reported no progress for ${this.#idleMs} ms and was cancelled`
          : `tool '${this.name}' ran to its total cap (maxTotalTimeoutMs; progress restarts the timeout only up to it) and was cancelled`;
      this.abort(new ToolError('timeout', error, { toolName: this.name }));
      return;
    }
    this.abort(
      new ToolError(
        'timeout',
        `tool '${this.name}' timed out after ${this.#timeoutMs} ms and was cancelled; try again with a smaller request`,
        { toolName: this.name },
      ),
    );
  }

  #failure(error: unknown): ToolResult {
    return failure(this.name, this.callId, toToolError(this.name, error, this), this.replay);
  }

  /** Releases what the call holds and hands back `result`, for a result settled outside {@link #done}. */
  #finish(result: ToolResult): ToolResult {
    this.release();
    return result;
  }

  /** Settles the direct path's result once: the first of the run and an abort wins. */
  #done(result: ToolResult): void {
    const settle = this.#settle;
    if (settle === undefined) return;
    this.#settle = undefined;
    this.release();
    settle(result);
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

function badCap(name: string, value: unknown): ToolError {
  return new ToolError(
    'usage',
    `tool '${name}': maxTotalTimeoutMs must be a positive number of milliseconds, got ${String(value)}`,
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

/** Sets up to this size list every name in the unknown-tool message; larger ones, the nearest few. */
export const LIST_ALL_TOOLS_UP_TO = 20;
/** How many near names the unknown-tool message of a large set gives. */
const NEAREST_SHOWN = 5;

/** Name indexes by tool list, built on the first unknown name: a list nobody misspells costs nothing. */
const nearestNames = new WeakMap<readonly Tool[], NearestNames>();

/**
 * The one unknown-tool error, whoever calls (an agent, the gateway, the MCP bridge, a view of a set). Its
 * message goes back to the model, so its size does not grow with the list: every name of a small list,
 * else the nearest five. `tools` should be a list that is kept (a `ToolSet`'s), so its index is reused.
 *
 * @param more said in parentheses after the name, e.g. why the registry skipped an item of that name.
 */
export function unknownToolError(name: string, tools: readonly Tool[], more?: string): ToolError {
  const shown = name.length > 80 ? `${name.slice(0, 77)}...` : name;
  let available: string;
  if (tools.length === 0) available = 'no tools are available';
  else if (tools.length <= LIST_ALL_TOOLS_UP_TO) {
    available = `available tools: ${tools.map((t) => `'${t.name}'`).join(', ')}`;
  } else {
    let index = nearestNames.get(tools);
    if (index === undefined) nearestNames.set(tools, (index = new NearestNames(tools.map((t) => t.name))));
    const near = index.find(name, NEAREST_SHOWN);
    available =
      near.length === 0
        ? `none of the ${tools.length} tools has a similar name`
        : `did you mean ${near.map((n) => `'${n}'`).join(', ')}? (the nearest of ${tools.length} tools)`;
  }
  const why = more ? ` (${more.length > 500 ? `${more.slice(0, 497)}...` : more})` : '';
  // A result for the model, not a throw: its stack says nothing, and capturing it was half the cost.
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return new ToolError('unknown-tool', `unknown tool '${shown}'${why}; ${available}`, { toolName: name });
  } finally {
    Error.stackTraceLimit = limit;
  }
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
    // one made a tool that fills in its own defaults fail with "object is not extensible"). Only text
    // that starts with a space, a control character or a non-ASCII one (which `trim` may remove) can be
    // blank, so the usual `{...}` skips the trimmed copy.
    const first = args.charCodeAt(0);
    if (args.length === 0 || ((first <= 0x20 || first >= 0x7f) && args.trim() === '')) return {};
    // A leading UTF-8 byte order mark (sent by some proxies and Windows tooling) is invisible and means
    // nothing, but JSON.parse rejects it: read the arguments as if it were not there.
    const text = first === 0xfeff ? args.slice(1) : args;
    // Nesting deeper than MAX_JSON_DEPTH takes more than MAX_JSON_DEPTH brackets: shorter text needs no scan.
    if (text.length > MAX_JSON_DEPTH && jsonDepth(text, MAX_JSON_DEPTH) > MAX_JSON_DEPTH) {
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
