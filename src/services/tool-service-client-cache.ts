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

/**
 * Creates clients on demand and keeps them, keyed by the canonical request and response queues, so the
 * tools of one service share one response subscription.
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
  readonly #clients = new Map<string, ToolServiceClient>();
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
  get(requestQueue: string, responseQueue: string): ToolServiceClient {
    // A client created now would hold a bus subscription that no close() would ever end.
    if (this.#closed) {
      throw new ToolbusError(
        'closed',
        `tool service client cache is closed: cannot create a client for '${canonicalTopic(requestQueue)}'`,
      );
    }
    const key = `${canonicalTopic(requestQueue)} ${canonicalTopic(responseQueue)}`;
    let client = this.#clients.get(key);
    if (!client) {
      client = new ToolServiceClient(this.#bus, {
        requestQueue,
        responseQueue,
        timeoutMs: this.#options.timeoutMs,
        hooks: this.#options.hooks,
      });
      this.#clients.set(key, client);
    }
    return client;
  }

  /** Closes every client (their pending calls reject with `cancelled`). Idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    const clients = [...this.#clients.values()];
    this.#clients.clear();
    await Promise.all(clients.map((c) => c.close()));
  }

  /** Alias of {@link close}. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}
