/**
 * @module `RunResumer`: goes on with saved runs that nobody runs any more. A paused run whose process
 * stopped (or whose caller went away) is resumed once one of its approvals is decided or expires; a
 * run left mid-step by a process that died is resumed at once. Any replica may do it: the first to
 * claim the run (a compare-and-set write) does.
 */
import { ToolbusError, isToolbusError } from '../errors/index.js';
import {
  APPROVAL_CONFIG_TYPE,
  RUN_CONFIG_TYPE,
  approvalFromJson,
  pendingApprovals,
  runFromJson,
  type RunState,
  type RunStore,
} from '../runs/index.js';

/** Options of {@link RunResumer}. */
export interface RunResumerOptions {
  runs: RunStore;
  /** Goes on with a run (claims it, then runs it to its end); `signal` aborts when the resumer closes. */
  resume: (state: RunState, signal: AbortSignal) => Promise<unknown>;
  /** Runs resumed at once by this process; more wait for the next check. @default 8 */
  concurrency?: number;
  /** @default ignored */
  onProblem?: (message: string, error?: unknown) => void;
}

/** Watches the run store and resumes orphaned runs (see the module). */
export class RunResumer {
  readonly #options: Required<RunResumerOptions>;
  /** Unfinished runs, by id, as last seen. */
  readonly #known = new Map<string, RunState>();
  readonly #active = new Set<string>();
  readonly #controller = new AbortController();
  #unlisten: (() => void) | undefined;
  #timer: ReturnType<typeof setInterval> | undefined;
  #pruneTimer: ReturnType<typeof setInterval> | undefined;

  constructor(options: RunResumerOptions) {
    this.#options = { concurrency: 8, onProblem: () => undefined, ...options };
  }

  /** Starts watching, then looks at every saved run once. */
  async start(): Promise<void> {
    if (this.#unlisten || this.#controller.signal.aborted) return;
    const { runs } = this.#options;
    this.#unlisten = runs.onChange((change) => {
      if (change.type === RUN_CONFIG_TYPE) {
        const state = change.kind === 'put' ? runFromJson(change.value) : undefined;
        if (!state || state.status === 'done' || state.status === 'failed') this.#known.delete(change.key);
        else {
          this.#known.set(state.id, state);
          void this.#consider(state);
        }
      } else if (change.type === APPROVAL_CONFIG_TYPE && change.kind === 'put') {
        const request = approvalFromJson(change.value);
        const state = request && request.status !== 'pending' ? this.#known.get(request.runId) : undefined;
        if (state) void this.#consider(state);
      }
    });
    for (const state of await runs.runs()) {
      if (state.status === 'done' || state.status === 'failed') continue;
      this.#known.set(state.id, state);
    }
    // Leases run out and approvals expire without a change in the store: look again now and then.
    this.#timer = setInterval(() => this.#considerAll(), Math.min(runs.leaseMs / 2, 5_000));
    this.#timer.unref?.();
    this.#considerAll();
    // Finished runs and decided approvals older than the retention go, now and every hour.
    const prune = (): void =>
      void runs
        .prune()
        .catch((error: unknown) =>
          this.#options.onProblem(`pruning old runs failed: ${String(error)}`, error),
        );
    this.#pruneTimer = setInterval(prune, 3_600_000);
    this.#pruneTimer.unref?.();
    prune();
  }

  #considerAll(): void {
    for (const state of this.#known.values()) void this.#consider(state);
  }

  async #consider(state: RunState): Promise<void> {
    const { runs, concurrency } = this.#options;
    if (this.#controller.signal.aborted || this.#active.has(state.id)) return;
    if (this.#active.size >= concurrency || !runs.isOrphan(state)) return;
    if (state.status === 'paused' && !(await this.#anyDecided(state))) return;
    if (this.#active.has(state.id)) return;
    this.#active.add(state.id);
    try {
      await this.#options.resume(state, this.#controller.signal);
    } catch (error) {
      // Claimed by another replica first, or finished meanwhile: theirs to run.
      if (isToolbusError(error) && (error.code === 'config-conflict' || error.code === 'not-found')) return;
      if (this.#controller.signal.aborted) return;
      this.#options.onProblem(`resuming run '${state.id}' failed: ${(error as Error).message}`, error);
    } finally {
      this.#active.delete(state.id);
    }
  }

  /** True when a paused run has something to act on: a decided or expired approval. */
  async #anyDecided(state: RunState): Promise<boolean> {
    const ids = pendingApprovals(state);
    if (ids.length === 0) return true;
    const now = Date.now();
    for (const id of ids) {
      const request = await this.#options.runs.approval(id).catch(() => undefined);
      if (!request || request.status !== 'pending') return true;
      if (request.expiresAt !== undefined && Date.parse(request.expiresAt) <= now) return true;
    }
    return false;
  }

  /** Stops watching; runs it resumed are let go (a paused one stays paused for the next process). */
  close(): void {
    clearInterval(this.#timer);
    clearInterval(this.#pruneTimer);
    this.#unlisten?.();
    this.#controller.abort(new ToolbusError('unavailable', 'the agent service is stopping'));
  }
}
