/**
 * @module `CallTasks`: tool calls a caller starts and comes back to (`POST …/invoke?async=1`, `toolbus
 * call --async`, MCP tasks). A task is a `ToolSet` call under a task id (`newTaskId`), so it goes
 * through the same lookup, validation, policy and hooks as any call; its state is kept in the bus's
 * call store. A tool on a durable service keeps the task's state itself, under the same id, so the task
 * survives the process that started it; any other tool runs in this process, and a stop marks what is
 * still running as failed instead of leaving it `running` forever.
 */
import { randomUUID } from 'node:crypto';
import type { CallRecord, CallStore, MessageBus } from '../bus/index.js';
import { CALL_LEASE_MS, FINAL_CALL_STATUSES } from '../bus/index.js';
import { ToolbusError } from '../errors/index.js';
import { newTaskId, type ToolCallOptions, type ToolProvider, type ToolResult } from '../tools/index.js';
import {
  LOCAL_TASK_SERVICE,
  MAX_STORED_RESPONSE_CHARS,
  cancelStoredCall,
  storedResultSize,
  updateCall,
} from './call-state.js';

/** Options of {@link CallTasks}. */
export interface CallTasksOptions {
  /**
   * How long a call held by a process that cannot hand it on may go without a sign of life before it
   * is reported failed (see `CallRecord.holder`). @default CALL_LEASE_MS (30 000)
   */
  leaseMs?: number;
}

/** Options of {@link CallTasks.start}: those of `ToolSet.call` but the call id (the task's). */
export type CallTaskStartOptions = Omit<ToolCallOptions, 'callId' | 'signal'>;

/** Starts tool calls as tasks and reads, follows and cancels them (see the module). */
export class CallTasks {
  readonly #bus: MessageBus;
  readonly #store: CallStore;
  /** Tasks running in this process, to cancel them and to fail them on close. */
  readonly #running = new Map<string, AbortController>();
  /** This process, as the `holder` of the tasks it runs itself. */
  readonly #holder = randomUUID();
  readonly #leaseMs: number;
  #heartbeat: ReturnType<typeof setInterval> | undefined;
  #closed = false;

  /** @throws ToolbusError `unsupported` when the bus has no durable calls (nowhere to keep the states). */
  constructor(bus: MessageBus, options: CallTasksOptions = {}) {
    const store = bus.durable?.store;
    if (store === undefined) {
      throw new ToolbusError(
        'unsupported',
        'call tasks need a bus with durable calls (MemoryBus or NatsBus)',
      );
    }
    this.#bus = bus;
    this.#store = store;
    this.#leaseMs = options.leaseMs ?? CALL_LEASE_MS;
  }

  /** Tasks running in this process now. */
  get running(): number {
    return this.#running.size;
  }

  /**
   * Starts `tools.call(name, args)` as a task and resolves with its id once its state is stored
   * (`queued`); the call goes on in the background.
   */
  async start(
    tools: ToolProvider,
    name: string,
    args: string | Record<string, unknown>,
    options: CallTaskStartOptions = {},
  ): Promise<string> {
    if (this.#closed) throw new ToolbusError('closed', 'call tasks are closed');
    const id = newTaskId();
    const now = Date.now();
    const record: CallRecord = {
      id,
      service: LOCAL_TASK_SERVICE,
      tool: name,
      status: 'queued',
      attempt: 0,
      idempotencyKey: id,
      chunks: [],
      chunkCount: 0,
      createdAt: now,
      updatedAt: now,
      holder: this.#holder,
    };
    if (options.user !== undefined && options.user !== '') record.user = options.user;
    await this.#store.put(record, 0);
    const controller = new AbortController();
    this.#running.set(id, controller);
    this.#startHeartbeat();
    void tools
      .call(name, args, {
        ...options,
        callId: id,
        signal: controller.signal,
        timeoutMs: options.timeoutMs ?? Infinity,
      })
      .then(
        (result) => this.#settle(id, outcomeOf(result)),
        (error: unknown) =>
          this.#settle(id, {
            status: 'failed',
            error: { type: 'tool-error', message: error instanceof Error ? error.message : String(error) },
          }),
      )
      .finally(() => {
        this.#running.delete(id);
        if (this.#running.size === 0) this.#stopHeartbeat();
      });
    return id;
  }

  /**
   * The task's state, or undefined when the store has none (unknown id, or expired). A call whose
   * process died with it (see `CallRecord.holder`) is reported, and stored, `failed`.
   */
  async get(id: string): Promise<CallRecord | undefined> {
    const record = (await this.#store.get(id))?.record;
    return record && this.#orphaned(record) ? this.#failOrphan(id) : record;
  }

  /**
   * Yields the task's state now and after every change, until it is final or `signal` aborts. A call
   * whose process died with it ends `failed` once its lease has run out.
   */
  async *watch(id: string, signal: AbortSignal): AsyncIterable<CallRecord> {
    const stop = new AbortController();
    const end = (): void => stop.abort();
    signal.addEventListener('abort', end, { once: true });
    let orphanCheck: ReturnType<typeof setTimeout> | undefined;
    try {
      for await (const stored of this.#store.watch(id, stop.signal)) {
        clearTimeout(orphanCheck);
        const record = stored.record;
        if (FINAL_CALL_STATUSES.has(record.status)) {
          yield record;
          return;
        }
        if (this.#orphaned(record)) {
          const failed = await this.#failOrphan(id);
          if (failed) yield failed;
          return;
        }
        yield record;
        // No word from its holder within the lease: look again (the watch has nothing new to say).
        if (record.holder !== undefined && !FINAL_CALL_STATUSES.has(record.status)) {
          orphanCheck = setTimeout(end, Math.max(0, record.updatedAt + this.#leaseMs - Date.now()) + 50);
        }
      }
      // The lease check woke the watch: the holder may be gone.
      if (stop.signal.aborted && !signal.aborted) {
        const last = await this.get(id);
        if (last && FINAL_CALL_STATUSES.has(last.status)) yield last;
        else if (last) yield* this.watch(id, signal);
      }
    } finally {
      clearTimeout(orphanCheck);
      signal.removeEventListener('abort', end);
    }
  }

  /** A live call held by a process that has not refreshed it within the lease, and not by this one. */
  #orphaned(record: CallRecord): boolean {
    if (FINAL_CALL_STATUSES.has(record.status) || record.holder === undefined) return false;
    if (record.holder === this.#holder && this.#running.has(record.id)) return false;
    if (record.holder === this.#bus.durable?.queue.holder) return false;
    return Date.now() - record.updatedAt > this.#leaseMs;
  }

  async #failOrphan(id: string): Promise<CallRecord | undefined> {
    return updateCall(this.#store, id, (record) =>
      this.#orphaned(record)
        ? {
            ...record,
            status: 'failed',
            chunks: [],
            error: {
              type: 'unavailable',
              message:
                `the process that ran call '${id}' stopped before it finished. toolbus keeps calls ` +
                `across a crash only on NATS, for a tool service with "delivery": "durable" (toolbus up --nats …)`,
            },
            updatedAt: Date.now(),
          }
        : undefined,
    );
  }

  #startHeartbeat(): void {
    if (this.#heartbeat !== undefined) return;
    this.#heartbeat = setInterval(() => {
      for (const id of this.#running.keys()) {
        void updateCall(this.#store, id, (record) =>
          record.holder === this.#holder && !FINAL_CALL_STATUSES.has(record.status)
            ? { ...record, updatedAt: Date.now() }
            : undefined,
        ).catch(() => undefined);
      }
    }, this.#leaseMs / 3);
    this.#heartbeat.unref?.();
  }

  #stopHeartbeat(): void {
    clearInterval(this.#heartbeat);
    this.#heartbeat = undefined;
  }

  /**
   * Cancels a task (or any durable call): see {@link cancelStoredCall}; one running in this process is
   * aborted too. Resolves with its state after the request, or undefined when there is none.
   */
  async cancel(id: string, reason = 'cancelled by the caller'): Promise<CallRecord | undefined> {
    const local = this.#running.get(id);
    const record = await cancelStoredCall(this.#bus, this.#store, id, reason);
    local?.abort(new ToolbusError('cancelled', `call '${id}' was cancelled: ${reason}`));
    return record;
  }

  /**
   * Stops: tasks running in this process are aborted and stored as failed (`unavailable`); those a
   * durable service runs go on there. Idempotent.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#stopHeartbeat();
    const running = [...this.#running];
    for (const [, controller] of running) {
      controller.abort(new ToolbusError('unavailable', 'the process running the call stopped'));
    }
    await Promise.all(
      running.map(([id]) =>
        this.#settle(id, {
          status: 'failed',
          error: {
            type: 'unavailable',
            message: `the process running call '${id}' stopped before it finished`,
          },
        }),
      ),
    );
  }

  /** Stores a task's outcome, unless a durable service stored one first (its own is the one kept). */
  async #settle(id: string, outcome: Partial<CallRecord>): Promise<void> {
    try {
      await updateCall(this.#store, id, (record) =>
        // A durable service took the task over (its service is the request queue): its state is its own.
        FINAL_CALL_STATUSES.has(record.status) || record.service !== LOCAL_TASK_SERVICE
          ? undefined
          : { ...record, ...outcome, chunks: [], updatedAt: Date.now() },
      );
    } catch {
      // The store is down: the task's caller sees it `running` until the record expires.
    }
  }
}

/** A task's final state from its `ToolResult`. */
function outcomeOf(result: ToolResult): Partial<CallRecord> {
  if (!result.isError) {
    const size = storedResultSize(result.content, result.parts);
    if (size > MAX_STORED_RESPONSE_CHARS) {
      // A record the store cannot hold would leave the task `running` for good.
      return {
        status: 'failed',
        error: {
          type: 'too-large',
          message: `the task's result is too large to keep (${size} characters; at most ${MAX_STORED_RESPONSE_CHARS})`,
        },
      };
    }
    return {
      status: 'completed',
      response: result.content,
      ...(result.parts !== undefined ? { parts: result.parts } : {}),
    };
  }
  const code = result.error?.code ?? 'tool-error';
  return {
    status: code === 'cancelled' ? 'cancelled' : 'failed',
    error: { type: code, message: result.content },
  };
}
