/**
 * @module `RunStore`: run state and approval requests in the config store the system already has
 * (SQLite embedded, NATS KV distributed), so a paused run survives a restart and any replica can go on
 * with it. Decisions are compare-and-set writes: the first one wins, a second gets `already-decided`.
 */
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { MessageBus } from '../bus/index.js';
import { CONFIG_NAME_PATTERN, type ConfigChange, type ConfigStore } from '../config/index.js';
import { ToolbusError, isToolbusError, numberOption } from '../errors/index.js';
import type { JsonValue } from '../schema/index.js';
import {
  approvalFromJson,
  approvalId,
  approvalToJson,
  type ApprovalRequest,
  type ApprovalStatus,
} from './approval-request.js';
import {
  MAX_RUN_EVENT_CHARS,
  MAX_RUN_EVENTS,
  runFromJson,
  type RunEvent,
  type RunOwner,
  type RunState,
} from './run-state.js';

/** The config type of approval requests (one of the config layer's STATE_CONFIG_TYPES). */
export const APPROVAL_CONFIG_TYPE = 'approval';
/** The config type of saved runs (one of the config layer's STATE_CONFIG_TYPES). */
export const RUN_CONFIG_TYPE = 'run';
/** The bus topic new approval requests are published on. */
export const APPROVAL_REQUESTS_TOPIC = 'approval-requests';
/** How long a run's owner holds it without renewing: past it, another replica may take the run over. */
export const DEFAULT_RUN_LEASE_MS = 30_000;
/** How long finished runs and decided approvals are kept before {@link RunStore.prune} removes them (7 days). */
export const DEFAULT_RUN_RETENTION_MS = 7 * 24 * 3_600_000;

/** Options of {@link RunStore}. */
export interface RunStoreOptions {
  /** Where new approval requests are published (`approval-requests`). @default none: stored only */
  bus?: MessageBus;
  /** @default APPROVAL_REQUESTS_TOPIC ('approval-requests') */
  topic?: string;
  /** @default DEFAULT_RUN_LEASE_MS (30 000) */
  leaseMs?: number;
  /** Reports what went wrong in the background (a failed publish, a broken watch). @default ignored */
  onProblem?: (message: string, error?: unknown) => void;
}

/** A new approval request, before it has an id and a status. */
export interface NewApproval {
  runId: string;
  callId: string;
  tool: string;
  arguments: Record<string, unknown>;
  user?: string | undefined;
  principal?: string | undefined;
  /** Denied when nobody decides within this. @default no timeout */
  timeoutMs?: number | undefined;
}

/** A decision on an approval request. */
export interface DecideInput {
  decision: 'approve' | 'deny';
  /** The deciding principal's name. */
  by: string;
  reason?: string | undefined;
  /** Edited arguments (checked against the tool's schema by the caller). */
  arguments?: Record<string, unknown> | undefined;
}

/** A run held by this process: its state, saved with compare-and-set, and its lease kept fresh. */
export class RunHandle {
  readonly state: RunState;
  readonly #runs: RunStore;
  #revision: number;
  #saving: Promise<void> = Promise.resolve();
  #lost: ToolbusError | undefined;
  #timer: ReturnType<typeof setInterval> | undefined;

  /** @internal made by {@link RunStore.create} and {@link RunStore.claim}. */
  constructor(runs: RunStore, state: RunState, revision: number) {
    this.#runs = runs;
    this.state = state;
    this.#revision = revision;
    // The lease is renewed at a third of its length, so two missed renewals still leave it held.
    this.#timer = setInterval(() => void this.save().catch(() => undefined), runs.leaseMs / 3);
    this.#timer.unref?.();
  }

  /** Set when another process took the run over (this one's lease ran out): saves reject with it. */
  get lost(): ToolbusError | undefined {
    return this.#lost;
  }

  /** Adds an event to the saved state (its content capped), numbered after the last one. */
  record(event: Omit<RunEvent, 'seq'>): RunEvent {
    const events = this.state.events;
    const seq = (events[events.length - 1]?.seq ?? 0) + 1;
    const content =
      event.content.length > MAX_RUN_EVENT_CHARS
        ? `${event.content.slice(0, MAX_RUN_EVENT_CHARS)}… [${event.content.length - MAX_RUN_EVENT_CHARS} characters cut]`
        : event.content;
    const saved: RunEvent = { ...event, content, seq };
    events.push(saved);
    if (events.length > MAX_RUN_EVENTS) events.splice(0, events.length - MAX_RUN_EVENTS);
    return saved;
  }

  /**
   * Saves the state as it is now, renewing the lease. Saves run one at a time in call order.
   * @throws ToolbusError `config-conflict` once another process has taken the run over.
   */
  save(): Promise<void> {
    const next = this.#saving.then(() => this.#write());
    this.#saving = next.catch(() => undefined);
    return next;
  }

  /**
   * Saves a last time and lets go: the run keeps its status (a paused run waits, owned by nobody, for a
   * decision that any replica then acts on) and the lease is no longer renewed. Idempotent.
   */
  async release(): Promise<void> {
    if (this.#timer === undefined) return;
    clearInterval(this.#timer);
    this.#timer = undefined;
    delete this.state.owner;
    await this.save().catch(() => undefined);
  }

  async #write(): Promise<void> {
    if (this.#lost) throw this.#lost;
    const state = this.state;
    state.updated = new Date().toISOString();
    if (this.#timer !== undefined) state.owner = this.#runs.ownerRecord();
    try {
      this.#revision = await this.#runs.store.put(RUN_CONFIG_TYPE, state.id, state as unknown as JsonValue, {
        ifRevision: this.#revision,
      });
    } catch (error) {
      if (isToolbusError(error) && error.code === 'config-conflict') {
        clearInterval(this.#timer);
        this.#timer = undefined;
        this.#lost = new ToolbusError(
          'config-conflict',
          `run '${state.id}' was taken over by another process while this one held it (its lease of ` +
            `${this.#runs.leaseMs} ms ran out); this process stops working on it`,
        );
        throw this.#lost;
      }
      throw error;
    }
  }
}

type ChangeListener = (change: ConfigChange) => void;

/**
 * Run state and approval requests over a `ConfigStore`.
 *
 * @example
 * ```ts
 * const runs = new RunStore(store, { bus });
 * const agent = new ToolUseAgent({ model, tools, runs });
 * for (const approval of await runs.approvals({ status: 'pending' })) {
 *   await runs.decide(approval.id, { decision: 'approve', by: 'bob' });
 * }
 * ```
 */
export class RunStore {
  /** @internal */
  readonly store: ConfigStore;
  readonly leaseMs: number;
  /** This process's id in run owners. */
  readonly instance = randomBytes(8).toString('hex');
  readonly #bus: MessageBus | undefined;
  readonly #topic: string;
  readonly #onProblem: (message: string, error?: unknown) => void;
  readonly #listeners = new Set<ChangeListener>();
  #watch: AbortController | undefined;
  #closed = false;

  /** @throws ToolbusError `usage` for a `leaseMs` that is not a positive number. */
  constructor(store: ConfigStore, options: RunStoreOptions = {}) {
    this.store = store;
    this.leaseMs = numberOption('RunStore', 'leaseMs', options.leaseMs, DEFAULT_RUN_LEASE_MS);
    this.#bus = options.bus;
    this.#topic = options.topic ?? APPROVAL_REQUESTS_TOPIC;
    this.#onProblem = options.onProblem ?? (() => undefined);
  }

  /** The owner record this process writes into the runs it holds. */
  ownerRecord(): RunOwner {
    return {
      instance: this.instance,
      host: hostname(),
      pid: process.pid,
      leaseUntil: Date.now() + this.leaseMs,
    };
  }

  /**
   * True when nobody is running `state` any more: no owner, a lease past its end, or an owner on this
   * host whose process is gone (a `kill -9`: its runs are taken over at once, not after the lease).
   */
  isOrphan(state: RunState, now = Date.now()): boolean {
    const owner = state.owner;
    if (owner === undefined) return true;
    if (owner.instance === this.instance) return false;
    if (owner.leaseUntil < now) return true;
    if (owner.host !== hostname()) return false;
    if (owner.pid === process.pid) return true; // an earlier process that had this pid
    try {
      process.kill(owner.pid, 0);
      return false;
    } catch (error) {
      return (error as NodeJS.ErrnoException).code === 'ESRCH';
    }
  }

  // ---- runs ----

  /**
   * Saves a new run, held by this process.
   * @throws ToolbusError `config-conflict` when a run of that id exists.
   */
  async create(state: RunState): Promise<RunHandle> {
    state.owner = this.ownerRecord();
    try {
      const revision = await this.store.put(RUN_CONFIG_TYPE, state.id, state as unknown as JsonValue, {
        ifRevision: 0,
      });
      return new RunHandle(this, state, revision);
    } catch (error) {
      if (isToolbusError(error) && error.code === 'config-conflict') {
        throw new ToolbusError(
          'config-conflict',
          `a run with id '${state.id}' exists already; use another id`,
        );
      }
      throw error;
    }
  }

  /**
   * Takes a run over to go on with it: only one that is not finished and that nobody else runs
   * ({@link isOrphan}). Resolves undefined when another process claimed it first.
   *
   * @throws ToolbusError `not-found` for an unknown run; `config-conflict` when it has finished or a
   * live process runs it.
   */
  async claim(id: string): Promise<RunHandle | undefined> {
    const found = await this.#read(id);
    if (!found) throw new ToolbusError('not-found', `no run with id '${id}'`);
    const { state, revision } = found;
    if (state.status === 'done' || state.status === 'failed') {
      throw new ToolbusError(
        'config-conflict',
        `run '${id}' has ${state.status === 'done' ? 'finished' : 'failed'} already`,
      );
    }
    if (!this.isOrphan(state)) {
      throw new ToolbusError(
        'config-conflict',
        `run '${id}' is being run by another process (${state.owner?.host} pid ${state.owner?.pid})`,
      );
    }
    state.owner = this.ownerRecord();
    try {
      const next = await this.store.put(RUN_CONFIG_TYPE, id, state as unknown as JsonValue, {
        ifRevision: revision,
      });
      return new RunHandle(this, state, next);
    } catch (error) {
      if (isToolbusError(error) && error.code === 'config-conflict') return undefined;
      throw error;
    }
  }

  /** The saved state of a run. */
  async run(id: string): Promise<RunState | undefined> {
    return (await this.#read(id))?.state;
  }

  /** Every saved run, newest first. */
  async runs(): Promise<RunState[]> {
    const items = await this.store.list(RUN_CONFIG_TYPE);
    return items
      .flatMap((item) => runFromJson(item.value) ?? [])
      .sort((a, b) => (a.created < b.created ? 1 : a.created > b.created ? -1 : 0));
  }

  async #read(id: string): Promise<{ state: RunState; revision: number } | undefined> {
    if (!isStoreKey(id)) return undefined;
    const item = await this.store.get(RUN_CONFIG_TYPE, id);
    const state = item && runFromJson(item.value);
    return state && item ? { state, revision: item.revision } : undefined;
  }

  // ---- approvals ----

  /**
   * Stores an approval request and publishes it on the bus. A request for the same run and call that
   * exists already (a resumed run asking again) is returned as it is, decided or not.
   */
  async request(input: NewApproval): Promise<ApprovalRequest> {
    const id = approvalId(input.runId, input.callId);
    const now = Date.now();
    const request: ApprovalRequest = {
      id,
      runId: input.runId,
      callId: input.callId,
      tool: input.tool,
      arguments: input.arguments,
      ...(input.user !== undefined ? { user: input.user } : {}),
      ...(input.principal !== undefined ? { principal: input.principal } : {}),
      time: new Date(now).toISOString(),
      ...(input.timeoutMs !== undefined && Number.isFinite(input.timeoutMs)
        ? { expiresAt: new Date(now + input.timeoutMs).toISOString() }
        : {}),
      status: 'pending',
    };
    try {
      await this.store.put(APPROVAL_CONFIG_TYPE, id, approvalToJson(request), { ifRevision: 0 });
    } catch (error) {
      if (isToolbusError(error) && error.code === 'config-conflict') {
        const existing = await this.approval(id);
        if (existing) return existing;
      }
      throw error;
    }
    if (this.#bus) {
      await this.#bus
        .publish(this.#topic, JSON.stringify(request), { id })
        .catch((error: unknown) =>
          this.#onProblem(`could not publish approval request '${id}': ${String(error)}`, error),
        );
    }
    return request;
  }

  /** One approval request. */
  async approval(id: string): Promise<ApprovalRequest | undefined> {
    return (await this.#readApproval(id))?.request;
  }

  /** Approval requests, newest first; `status` filters (`'all'` or absent: every one). */
  async approvals(filter: { status?: ApprovalStatus | 'all' } = {}): Promise<ApprovalRequest[]> {
    const items = await this.store.list(APPROVAL_CONFIG_TYPE);
    return items
      .flatMap((item) => approvalFromJson(item.value) ?? [])
      .filter((a) => filter.status === undefined || filter.status === 'all' || a.status === filter.status)
      .sort((a, b) => (a.time < b.time ? 1 : a.time > b.time ? -1 : 0));
  }

  /**
   * Decides an approval request. The first decision wins; a request past its `expiresAt` is denied as
   * timed out instead.
   *
   * @throws ToolbusError `not-found` for an unknown id; `already-decided` (HTTP 409) when it was decided
   * (or timed out) before, saying by whom.
   */
  async decide(id: string, input: DecideInput): Promise<ApprovalRequest> {
    for (;;) {
      const found = await this.#readApproval(id);
      if (!found) throw new ToolbusError('not-found', `no approval request with id '${id}'`);
      const { request, revision } = found;
      if (request.status !== 'pending') throw alreadyDecided(request);
      const expired = request.expiresAt !== undefined && Date.parse(request.expiresAt) <= Date.now();
      const decided: ApprovalRequest = expired
        ? { ...request, status: 'denied', decision: timeoutDecision(request) }
        : {
            ...request,
            status: input.decision === 'approve' ? 'approved' : 'denied',
            decision: {
              by: input.by,
              ...(input.reason ? { reason: input.reason } : {}),
              ...(input.arguments && input.decision === 'approve' ? { arguments: input.arguments } : {}),
              time: new Date().toISOString(),
            },
          };
      try {
        await this.store.put(APPROVAL_CONFIG_TYPE, id, approvalToJson(decided), { ifRevision: revision });
      } catch (error) {
        if (isToolbusError(error) && error.code === 'config-conflict') continue; // someone was first: say who
        throw error;
      }
      if (expired) throw alreadyDecided(decided);
      return decided;
    }
  }

  /**
   * Resolves with the request once it is decided: by a person through any process, or (past its
   * `expiresAt`) denied as timed out by this one.
   *
   * @throws the signal's reason when it aborts first; ToolbusError `not-found` when the request is gone.
   */
  waitForDecision(id: string, signal?: AbortSignal): Promise<ApprovalRequest> {
    return new Promise<ApprovalRequest>((resolve, reject) => {
      let done = false;
      let timer: ReturnType<typeof setTimeout> | undefined;
      let unlisten = (): void => undefined;
      // The watch is the fast path; a slow poll covers a watch that broke and is being restarted.
      const poll = setInterval(() => void check(), 10_000);
      poll.unref?.();
      const finish = (error: unknown, request?: ApprovalRequest): void => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        clearInterval(poll);
        unlisten();
        signal?.removeEventListener('abort', onAbort);
        if (request) resolve(request);
        else reject(error);
      };
      const check = async (): Promise<void> => {
        try {
          const request = await this.approval(id);
          if (done) return;
          if (!request)
            return finish(new ToolbusError('not-found', `approval request '${id}' is gone from the store`));
          if (request.status !== 'pending') return finish(undefined, request);
          if (request.expiresAt !== undefined && timer === undefined) {
            const wait = Math.max(0, Date.parse(request.expiresAt) - Date.now());
            timer = setTimeout(() => void expire(), Math.min(wait, 2_147_000_000));
          }
        } catch (error) {
          this.#onProblem(`could not read approval request '${id}': ${String(error)}`, error);
        }
      };
      const expire = async (): Promise<void> => {
        timer = undefined;
        const request = await this.approval(id).catch(() => undefined);
        if (done) return;
        const left = request?.expiresAt === undefined ? 0 : Date.parse(request.expiresAt) - Date.now();
        if (request?.status === 'pending' && left > 0) {
          timer = setTimeout(() => void expire(), left + 1); // a timer that fired early
          return;
        }
        try {
          await this.decide(id, { decision: 'deny', by: 'toolbus' });
        } catch {
          // decided meanwhile, or timed out just now: the check below reads the outcome
        }
        await check();
      };
      const onAbort = (): void => finish(signal?.reason);
      if (signal?.aborted) return finish(signal.reason);
      signal?.addEventListener('abort', onAbort, { once: true });
      unlisten = this.onChange((change) => {
        if (change.type === APPROVAL_CONFIG_TYPE && change.key === id) void check();
      });
      void check();
    });
  }

  async #readApproval(id: string): Promise<{ request: ApprovalRequest; revision: number } | undefined> {
    if (!isStoreKey(id)) return undefined;
    const item = await this.store.get(APPROVAL_CONFIG_TYPE, id);
    const request = item && approvalFromJson(item.value);
    return request && item ? { request, revision: item.revision } : undefined;
  }

  /**
   * Removes finished (done or failed) runs and decided approvals last written more than `olderThanMs`
   * ago; pending approvals and unfinished runs stay whatever their age. Resolves with how many items
   * went. Safe to run on several replicas at once.
   */
  async prune(olderThanMs: number = DEFAULT_RUN_RETENTION_MS): Promise<number> {
    const before = new Date(Date.now() - olderThanMs).toISOString();
    let removed = 0;
    for (const state of await this.runs()) {
      if ((state.status === 'done' || state.status === 'failed') && state.updated < before) {
        if (await this.store.delete(RUN_CONFIG_TYPE, state.id)) removed++;
      }
    }
    for (const request of await this.approvals()) {
      if (request.status !== 'pending' && (request.decision?.time ?? request.time) < before) {
        if (await this.store.delete(APPROVAL_CONFIG_TYPE, request.id)) removed++;
      }
    }
    return removed;
  }

  // ---- changes ----

  /**
   * Calls `listener` with every change of a run or an approval, from any process. One watch of the store
   * serves every listener; it starts with the first. Returns the function that stops listening.
   */
  onChange(listener: ChangeListener): () => void {
    this.#listeners.add(listener);
    if (!this.#watch && !this.#closed) this.#startWatch();
    return () => void this.#listeners.delete(listener);
  }

  #startWatch(): void {
    const controller = new AbortController();
    this.#watch = controller;
    void (async () => {
      while (!controller.signal.aborted) {
        try {
          for await (const change of this.store.watch({ signal: controller.signal })) {
            if (change.type !== RUN_CONFIG_TYPE && change.type !== APPROVAL_CONFIG_TYPE) continue;
            for (const listener of [...this.#listeners]) {
              try {
                listener(change);
              } catch {
                // a listener's problem
              }
            }
          }
        } catch (error) {
          if (controller.signal.aborted) return;
          this.#onProblem(`the watch of runs and approvals failed, retrying: ${String(error)}`, error);
        }
        if (!controller.signal.aborted) await new Promise((resolve) => setTimeout(resolve, 1_000).unref?.());
      }
    })();
  }

  /** Stops the watch. Runs and approvals stay in the store. Idempotent. */
  close(): void {
    this.#closed = true;
    this.#watch?.abort();
    this.#listeners.clear();
  }
}

/** What `decide` rejects with for a request that was decided before. */
function alreadyDecided(request: ApprovalRequest): ToolbusError {
  const d = request.decision;
  const how = d?.timedOut
    ? `denied at ${d.time}: nobody decided before it expired at ${request.expiresAt}`
    : `${request.status} by ${d?.by ?? 'someone'}${d ? ` at ${d.time}` : ''}`;
  return new ToolbusError('already-decided', `approval request '${request.id}' was already ${how}`);
}

function timeoutDecision(request: ApprovalRequest): ApprovalRequest['decision'] {
  const waited = request.expiresAt ? Date.parse(request.expiresAt) - Date.parse(request.time) : 0;
  return {
    by: 'toolbus',
    reason: `nobody decided within ${waited} ms (approvalTimeoutMs)`,
    time: new Date().toISOString(),
    timedOut: true,
  };
}

/** Ids that cannot be config keys are unknown, not errors of the store. */
function isStoreKey(id: string): boolean {
  return CONFIG_NAME_PATTERN.test(id);
}
