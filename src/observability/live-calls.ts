/**
 * @module `LiveCalls`: the tool calls of a process as they happen, for the web console. It keeps the
 * latest calls (running ones included), tells subscribers of every start, end and progress report, and
 * counts calls and errors in 5-second buckets over the last 5 minutes. It is fed by `ToolSet` hooks, so
 * every call of the set shows, whichever surface made it (HTTP, MCP, the agent, the CLI).
 */
import { ToolbusError, numberOption } from '../errors/index.js';
import type { ToolCallEvent, ToolProgressEvent, ToolResultEvent, ToolSetHooks } from '../tools/index.js';

/** How many calls {@link LiveCalls} keeps by default (the newest; running ones count too). */
export const DEFAULT_LIVE_CALLS_KEPT = 500;
/** The most UTF-8 bytes of a call's arguments, result text or progress message kept. */
export const LIVE_CALL_TEXT_BYTES = 2048;
/** The width of one bucket of {@link LiveCalls.rates}, in ms. */
export const LIVE_CALL_BUCKET_MS = 5_000;
/** How many buckets {@link LiveCalls.rates} answers: 5 minutes of 5-second buckets. */
export const LIVE_CALL_BUCKETS = 60;
/** How many subscribers {@link LiveCalls} takes by default. */
export const DEFAULT_MAX_LIVE_CALL_LISTENERS = 100;
/**
 * The most calls tracked as running at once: a call whose result never comes (it cannot, but a bug
 * must not grow memory) is forgotten, oldest first, beyond this.
 */
const MAX_RUNNING = 10_000;

/** Where a live call stands. */
export const LiveCallStatus = {
  Running: 'running',
  Ok: 'ok',
  Error: 'error',
} as const;
/** One of {@link LiveCallStatus}'s values. */
export type LiveCallStatus = (typeof LiveCallStatus)[keyof typeof LiveCallStatus];

/** One tool call as the console shows it. Immutable: an update is a new object. */
export interface LiveCall {
  readonly callId: string;
  readonly tool: string;
  /** The end user the call ran for. */
  readonly user?: string;
  /** Who made the call (`ToolCallOptions.caller`, e.g. `http:admin@127.0.0.1`); known once it ended. */
  readonly caller?: string;
  readonly status: LiveCallStatus;
  /** The error code of a failed call (`timeout`, `tool-error`…). */
  readonly code?: string;
  /** When the call started, epoch ms. */
  readonly startedAt: number;
  /** Wall time of an ended call, queueing included, in whole ms. */
  readonly durationMs?: number;
  /** The arguments as JSON text, cut at {@link LIVE_CALL_TEXT_BYTES} (then ending in `…`). */
  readonly arguments: string;
  /** The result text of an ended call, cut at {@link LIVE_CALL_TEXT_BYTES}. */
  readonly content?: string;
}

/** A progress report of a running call. */
export interface LiveCallProgress {
  readonly callId: string;
  readonly tool: string;
  readonly user?: string;
  readonly progress: number;
  readonly total?: number;
  /** Cut at {@link LIVE_CALL_TEXT_BYTES}. */
  readonly message?: string;
}

/** What a subscriber hears: a call that started or ended (`call`), or a progress report. */
export type LiveCallEvent =
  | { readonly type: 'call'; readonly call: LiveCall }
  | { readonly type: 'progress'; readonly progress: LiveCallProgress };

/** What {@link LiveCalls.recent} picks. Every field is optional. */
export interface LiveCallQuery {
  /** Only calls of this tool. @default every tool */
  tool?: string;
  /** Only calls for this user. @default every user */
  user?: string;
  /** At most this many (the newest). @default every call kept */
  limit?: number;
}

/** Calls and errors per bucket, oldest bucket first. */
export interface LiveCallRates {
  /** The width of a bucket: {@link LIVE_CALL_BUCKET_MS}. */
  bucketMs: number;
  /** {@link LIVE_CALL_BUCKETS} buckets, the current (partial) one last; a quiet bucket has zeros. */
  points: { at: number; calls: number; errors: number }[];
}

/**
 * What the gateway reads of the live calls (`GatewayOptions.liveCalls`); {@link LiveCalls} is one.
 */
export interface LiveCallFeed {
  /** The kept calls that match, newest first. */
  recent(query?: LiveCallQuery): LiveCall[];
  /**
   * Calls `listener` with every event from now on; returns the function that stops it. A listener
   * runs inside the tool call's hooks: it must be quick, and what it throws is ignored.
   * @throws ToolbusError `too-many-requests` when the feed has its most subscribers already.
   */
  subscribe(listener: (event: LiveCallEvent) => void): () => void;
  /** Calls ended and errors per bucket over the last 5 minutes. */
  rates(): LiveCallRates;
  /** How many calls are running now. */
  readonly inFlight: number;
}

/** Options of {@link LiveCalls}. */
export interface LiveCallsOptions {
  /** How many calls are kept (the newest). @default DEFAULT_LIVE_CALLS_KEPT (500) */
  capacity?: number;
  /** How many subscribers it takes at once. @default DEFAULT_MAX_LIVE_CALL_LISTENERS (100) */
  maxListeners?: number;
  /** The clock of `startedAt` and the buckets, in epoch ms. @default Date.now */
  now?: () => number;
}

/** A kept call; the slot's object is replaced when the call ends, so what was read stays as it was. */
interface Held {
  call: LiveCall;
}

/**
 * The latest tool calls of a process, their events and their rates (see the module). Give its
 * {@link toolSetHooks} to the tool set, and the object to the gateway as `liveCalls`.
 *
 * @example
 * ```ts
 * const live = new LiveCalls();
 * const registry = new ToolRegistry({ store, bus, toolSetOptions: { hooks: live.toolSetHooks() } });
 * const gateway = createGateway({ tools: registry.tools, token, liveCalls: live });
 * ```
 */
export class LiveCalls implements LiveCallFeed {
  readonly #capacity: number;
  readonly #maxListeners: number;
  readonly #now: () => number;
  /** A ring of the newest calls: call number `n` sits at `n % capacity`. */
  readonly #ring: (Held | undefined)[];
  #count = 0;
  /** Running calls by call id; a list, since callers may reuse an id (a model's `c1`). */
  readonly #running = new Map<string, Held[]>();
  #inFlight = 0;
  readonly #listeners = new Set<(event: LiveCallEvent) => void>();
  /** Per bucket slot: which bucket it holds (`floor(t / bucketMs)`), and its counts. */
  readonly #bucketIds = new Array<number>(LIVE_CALL_BUCKETS).fill(-1);
  readonly #calls = new Array<number>(LIVE_CALL_BUCKETS).fill(0);
  readonly #errors = new Array<number>(LIVE_CALL_BUCKETS).fill(0);

  /** @throws ToolbusError `usage` for a capacity or listener cap that is not a positive integer. */
  constructor(options: LiveCallsOptions = {}) {
    const integer = { integer: true };
    this.#capacity = numberOption(
      'LiveCalls',
      'capacity',
      options.capacity,
      DEFAULT_LIVE_CALLS_KEPT,
      integer,
    );
    this.#maxListeners = numberOption(
      'LiveCalls',
      'maxListeners',
      options.maxListeners,
      DEFAULT_MAX_LIVE_CALL_LISTENERS,
      integer,
    );
    this.#now = options.now ?? Date.now;
    this.#ring = new Array<Held | undefined>(this.#capacity);
  }

  /**
   * The hooks that feed it: `onStart` (a call starts), `onResult` (it ended, or failed before it could
   * start: an unknown tool, arguments that are not JSON) and `onProgress`. They never throw, so they
   * never veto or fail a call.
   */
  toolSetHooks(): Required<Pick<ToolSetHooks, 'onStart' | 'onResult' | 'onProgress'>> {
    return {
      // Told, not awaited: watching calls must not take them off the tool set's fast path.
      onStart: (event: ToolCallEvent) => this.#guard(() => this.#started(event)),
      onResult: (event: ToolResultEvent) => this.#guard(() => this.#ended(event)),
      onProgress: (event: ToolProgressEvent) => this.#guard(() => this.#progressed(event)),
    };
  }

  get inFlight(): number {
    return this.#inFlight;
  }

  recent(query: LiveCallQuery = {}): LiveCall[] {
    const limit = query.limit ?? this.#capacity;
    const out: LiveCall[] = [];
    const oldest = Math.max(0, this.#count - this.#capacity);
    for (let n = this.#count - 1; n >= oldest && out.length < limit; n--) {
      const call = this.#ring[n % this.#capacity]!.call;
      if (query.tool !== undefined && call.tool !== query.tool) continue;
      if (query.user !== undefined && call.user !== query.user) continue;
      out.push(call);
    }
    return out;
  }

  subscribe(listener: (event: LiveCallEvent) => void): () => void {
    if (this.#listeners.size >= this.#maxListeners) {
      throw new ToolbusError(
        'too-many-requests',
        `the live call feed has ${this.#maxListeners} subscribers already, the most it takes; close one and retry`,
      );
    }
    // A wrapper per subscription: the same function subscribed twice is two subscribers.
    const own = (event: LiveCallEvent): void => listener(event);
    this.#listeners.add(own);
    return () => {
      this.#listeners.delete(own);
    };
  }

  rates(): LiveCallRates {
    const current = Math.floor(this.#now() / LIVE_CALL_BUCKET_MS);
    const points: LiveCallRates['points'] = [];
    for (let id = current - LIVE_CALL_BUCKETS + 1; id <= current; id++) {
      const slot = id % LIVE_CALL_BUCKETS;
      const live = this.#bucketIds[slot] === id;
      points.push({
        at: id * LIVE_CALL_BUCKET_MS,
        calls: live ? this.#calls[slot]! : 0,
        errors: live ? this.#errors[slot]! : 0,
      });
    }
    return { bucketMs: LIVE_CALL_BUCKET_MS, points };
  }

  /** Runs a hook's work so that nothing it throws reaches the tool set (or its other hooks). */
  #guard(work: () => void): void {
    try {
      work();
    } catch {
      // Watching calls must never change them.
    }
  }

  #started(event: ToolCallEvent): void {
    const call: LiveCall = Object.freeze({
      callId: event.callId,
      tool: event.name,
      ...(event.user !== undefined ? { user: event.user } : {}),
      status: LiveCallStatus.Running,
      startedAt: this.#now(),
      arguments: argumentsText(event.arguments),
    });
    const held: Held = { call };
    this.#keep(held);
    const same = this.#running.get(event.callId);
    if (same) same.push(held);
    else {
      if (this.#running.size >= MAX_RUNNING) this.#forgetOldestRunning();
      this.#running.set(event.callId, [held]);
    }
    this.#inFlight++;
    this.#emit({ type: 'call', call });
  }

  #ended(event: ToolResultEvent): void {
    const held = this.#takeRunning(event.callId, event.name);
    const now = this.#now();
    const durationMs = Math.round(event.durationMs);
    const { result } = event;
    const code = result.error?.code;
    const call: LiveCall = Object.freeze({
      ...(held?.call ?? {
        // It never started (unknown tool, arguments that are not a JSON object): it ends as it appears.
        callId: event.callId,
        tool: event.name,
        ...(event.user !== undefined ? { user: event.user } : {}),
        startedAt: now - durationMs,
        arguments: argumentsText(event.args),
      }),
      ...(event.caller !== undefined ? { caller: event.caller } : {}),
      status: result.isError ? LiveCallStatus.Error : LiveCallStatus.Ok,
      ...(code !== undefined ? { code } : {}),
      durationMs,
      content: cutText(result.content),
    });
    if (held) held.call = call;
    else this.#keep({ call });
    this.#tally(now, result.isError);
    this.#emit({ type: 'call', call });
  }

  #progressed(event: ToolProgressEvent): void {
    if (this.#listeners.size === 0) return;
    this.#emit({
      type: 'progress',
      progress: Object.freeze({
        callId: event.callId,
        tool: event.name,
        ...(event.user !== undefined ? { user: event.user } : {}),
        progress: event.progress,
        ...(event.total !== undefined ? { total: event.total } : {}),
        ...(event.message !== undefined ? { message: cutText(event.message) } : {}),
      }),
    });
  }

  #keep(held: Held): void {
    this.#ring[this.#count % this.#capacity] = held;
    this.#count++;
  }

  /** The running call of that id and tool, taken off the running list. */
  #takeRunning(callId: string, tool: string): Held | undefined {
    const list = this.#running.get(callId);
    if (!list) return undefined;
    const i = list.findIndex((h) => h.call.tool === tool);
    if (i === -1) return undefined;
    const [held] = list.splice(i, 1);
    if (list.length === 0) this.#running.delete(callId);
    this.#inFlight--;
    return held;
  }

  #forgetOldestRunning(): void {
    const [oldest] = this.#running;
    if (!oldest) return;
    this.#running.delete(oldest[0]);
    this.#inFlight -= oldest[1].length;
  }

  /** Counts an ended call in its bucket. */
  #tally(now: number, isError: boolean): void {
    const id = Math.floor(now / LIVE_CALL_BUCKET_MS);
    const slot = id % LIVE_CALL_BUCKETS;
    if (this.#bucketIds[slot] !== id) {
      this.#bucketIds[slot] = id;
      this.#calls[slot] = 0;
      this.#errors[slot] = 0;
    }
    this.#calls[slot]!++;
    if (isError) this.#errors[slot]!++;
  }

  #emit(event: LiveCallEvent): void {
    for (const listener of this.#listeners) {
      try {
        listener(event);
      } catch {
        // A subscriber's failure is its own; the call and the other subscribers go on.
      }
    }
  }
}

const encoder = new TextEncoder();

/** The arguments as cut JSON text; an object JSON cannot write (a cycle, a bigint) says so instead. */
function argumentsText(args: string | Readonly<Record<string, unknown>>): string {
  if (typeof args === 'string') return cutText(args);
  try {
    return cutText(JSON.stringify(args));
  } catch {
    return '(arguments that are not JSON)';
  }
}

/** `text` cut to at most {@link LIVE_CALL_TEXT_BYTES} UTF-8 bytes (never inside a character), then `…`. */
export function cutText(text: string, maxBytes = LIVE_CALL_TEXT_BYTES): string {
  // Fast path: even at 3 bytes per UTF-16 unit it fits.
  if (text.length * 3 <= maxBytes) return text;
  const room = new Uint8Array(maxBytes);
  const { read } = encoder.encodeInto(text, room);
  return read >= text.length ? text : `${text.slice(0, read)}…`;
}
