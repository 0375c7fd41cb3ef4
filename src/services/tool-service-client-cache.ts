/**
 * @module `ToolServiceClientCache`: one `ToolServiceClient` per queue pair, shared by every tool that
 * calls the same service.
 */
import { canonicalTopic } from '../bus/index.js';
import type { MessageBus } from '../bus/index.js';
import { ToolbusError } from '../errors/index.js';
import { ToolServiceClient, type ToolServiceClientHooks } from './tool-service-client.js';

/** Options of {@link ToolServiceClientCache}. */
export interface ToolServiceClientCacheOptions {
  /** The default timeout of the clients. @default DEFAULT_TOOL_SERVICE_TIMEOUT_MS (60 000) */
  timeoutMs?: number;
  /** Hooks given to every client. @default none */
  hooks?: ToolServiceClientHooks;
}

/** How a cached client's calls reach the service (one client per queue pair and delivery). */
type ClientDelivery = 'request-response' | 'durable';

/** How often clients let go of with calls in flight are checked, to close them once they have none. */
const DRAIN_CHECK_MS = 1_000;

/** One cached client and who holds it. */
interface Entry {
  readonly client: ToolServiceClient;
  /** Holders that came through {@link ToolServiceClientCache.retain} and have not let go. */
  holders: number;
  /** Handed out by {@link ToolServiceClientCache.get}: kept until the cache closes. */
  pinned: boolean;
}

/**
 * Creates clients on demand and keeps them, keyed by the canonical request and response queues, so the
 * tools of one service share one response subscription. A client handed out by {@link get} stays until
 * {@link close}; one handed out by {@link retain} goes once its last holder lets go (a registry's
 * announced services come and go: their clients must not pile up).
 *
 * @example
 * ```ts
 * const clients = new ToolServiceClientCache(bus);
 * const client = clients.get('non-persistent://tg/request/joke', 'non-persistent://tg/response/joke');
 * await clients.close();
 * ```
 */
export class ToolServiceClientCache {
  readonly #bus: MessageBus;
  readonly #options: ToolServiceClientCacheOptions;
  readonly #clients = new Map<string, Entry>();
  /** Clients let go of while calls were in flight: closed once they have none. */
  readonly #draining = new Set<Entry>();
  /** Checks the draining clients while there are any. */
  #drainTimer: ReturnType<typeof setInterval> | undefined;
  #closed = false;

  constructor(bus: MessageBus, options: ToolServiceClientCacheOptions = {}) {
    this.#bus = bus;
    this.#options = { ...options };
  }

  /** The bus the clients use. */
  get bus(): MessageBus {
    return this.#bus;
  }

  /** Clients created so far. */
  get size(): number {
    return this.#clients.size;
  }

  /**
   * The client for this queue pair, created on first use.
   * @throws ToolbusError `invalid-config` for a malformed queue name, `closed` after {@link close}.
   */
  get(
    requestQueue: string,
    responseQueue: string,
    delivery: ClientDelivery = 'request-response',
  ): ToolServiceClient {
    const entry = this.#entry(
      this.#key(requestQueue, responseQueue, delivery),
      requestQueue,
      responseQueue,
      delivery,
    );
    entry.pinned = true;
    return entry.client;
  }

  /**
   * The client for this queue pair, held until `signal` aborts: then, if no other holder is left (and
   * {@link get} never handed it out), it is forgotten, and closed once no call of its is in flight
   * (checked every second). For a tool that lives as long as `signal`.
   * @throws ToolbusError `invalid-config` for a malformed queue name, `closed` after {@link close}.
   */
  retain(
    requestQueue: string,
    responseQueue: string,
    signal: AbortSignal,
    delivery: ClientDelivery = 'request-response',
  ): ToolServiceClient {
    const key = this.#key(requestQueue, responseQueue, delivery);
    const entry = this.#entry(key, requestQueue, responseQueue, delivery);
    entry.holders++;
    const release = (): void => this.#release(key, entry);
    if (signal.aborted) queueMicrotask(release);
    else signal.addEventListener('abort', release, { once: true });
    return entry.client;
  }

  /** Closes every client (their pending calls reject with `cancelled`). Idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#drainTimer);
    this.#drainTimer = undefined;
    const entries = [...this.#clients.values(), ...this.#draining];
    this.#clients.clear();
    this.#draining.clear();
    await Promise.all(entries.map((e) => e.client.close()));
  }

  #key(requestQueue: string, responseQueue: string, delivery: ClientDelivery): string {
    // A client created now would hold a bus subscription that no close() would ever end.
    if (this.#closed) {
      throw new ToolbusError(
        'closed',
        `tool service client cache is closed: cannot create a client for '${canonicalTopic(requestQueue)}'`,
      );
    }
    return `${canonicalTopic(requestQueue)} ${canonicalTopic(responseQueue)} ${delivery}`;
  }

  #entry(key: string, requestQueue: string, responseQueue: string, delivery: ClientDelivery): Entry {
    let entry = this.#clients.get(key);
    if (!entry) {
      const client = new ToolServiceClient(this.#bus, {
        requestQueue,
        responseQueue,
        delivery,
        timeoutMs: this.#options.timeoutMs,
        hooks: this.#options.hooks,
      });
      this.#clients.set(key, (entry = { client, holders: 0, pinned: false }));
    }
    return entry;
  }

  #release(key: string, entry: Entry): void {
    entry.holders--;
    if (entry.holders > 0 || entry.pinned || this.#closed) return;
    if (this.#clients.get(key) === entry) this.#clients.delete(key);
    if (entry.client.pendingCount === 0) {
      void entry.client.close().catch(() => undefined);
      return;
    }
    // Calls still running on a tool that just left finish on this client: close it once they have.
    this.#draining.add(entry);
    this.#drainTimer ??= setInterval(() => this.#drain(), DRAIN_CHECK_MS);
    this.#drainTimer.unref?.();
  }

  #drain(): void {
    for (const entry of this.#draining) {
      if (entry.client.pendingCount > 0) continue;
      this.#draining.delete(entry);
      void entry.client.close().catch(() => undefined);
    }
    if (this.#draining.size === 0) {
      clearInterval(this.#drainTimer);
      this.#drainTimer = undefined;
    }
  }

  /** Alias of {@link close}. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}
