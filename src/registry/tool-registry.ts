/**
 * @module `ToolRegistry`: turns config items (and self-announced services) into a live tool set that
 * follows every change without a restart.
 */
import type { BusSubscription, MessageBus } from '../bus/index.js';
import type { ConfigChange, ConfigItem, ConfigStore } from '../config/index.js';
import { abortError, raceSignal, type ChatCompletionClient } from '../models/index.js';
import type { JsonObject, JsonValue } from '../schema/index.js';
import {
  TOOL_DESCRIPTORS_TOPIC,
  ToolServiceClientCache,
  decodeAnnouncement,
  parseToolServiceDescriptor,
  requestAnnouncements,
} from '../services/index.js';
import {
  LiveToolSet,
  MAX_TIMER_MS,
  ToolbusError,
  isToolbusError,
  onAbort,
  validateToolName,
} from '../tools/index.js';
import type { Tool, ToolSetOptions, ToolSet } from '../tools/index.js';
import {
  TOOL_TYPE_PROVIDERS,
  functionToolType,
  toolServiceToolType,
  toolTypeOf,
} from './builtin-tool-types.js';
import { assertConfigAllowed, configAllowlistFromEnv, type ConfigAllowlist } from './config-allowlist.js';
import { promptToolType, textCompletionToolType } from './model-tools.js';
import type { RegistryProblem, ToolTypeContext, ToolTypeFactory } from './tool-type.js';

/** How long the registry waits for more changes before rebuilding the tool set, by default. */
export const DEFAULT_REGISTRY_DEBOUNCE_MS = 25;
/** How long the registry waits before watching the store again after the watch failed, by default. */
export const DEFAULT_REGISTRY_RETRY_MS = 1_000;

/**
 * How long one tool's factory may take (e.g. an `mcp-tool` connecting to its server) before the registry
 * gives up on it for this reload, by default.
 */
export const DEFAULT_REGISTRY_BUILD_TIMEOUT_MS = 30_000;

/** Options of {@link ToolRegistry}. */
export interface ToolRegistryOptions {
  /** Where the `tool`, `tool-service`, `mcp`, `prompt` … items live. */
  store: ConfigStore;
  /** The bus `tool-service` tools call through and announcements arrive on. @default none */
  bus?: MessageBus;
  /** The model `text-completion` and `prompt` tools call. @default none */
  model?: ChatCompletionClient;
  /** Tools registered in code, which `function` items refer to by name. @default none */
  functions?: Iterable<Tool>;
  /**
   * Tool types besides the built-in ones (`tool-service`, `text-completion`, `prompt`, `function`), keyed
   * by the item's `type`, e.g. `{ http: httpToolType(), 'mcp-tool': mcpToolType() }`. A type given here
   * replaces a built-in one of the same name. @default {}
   */
  toolTypes?: Record<string, ToolTypeFactory>;
  /** Listen to self-announcing services on the bus. @default true when `bus` is given */
  announcements?: boolean;
  /** Options of every ToolSet the registry builds (timeouts, output cap, hooks). @default {} */
  toolSetOptions?: ToolSetOptions;
  /** Clients for `tool-service` tools; share one cache between registries. @default a cache of its own */
  clients?: ToolServiceClientCache;
  /** Changes arriving within this time are applied together. @default DEFAULT_REGISTRY_DEBOUNCE_MS (25) */
  debounceMs?: number;
  /**
   * Wait before re-watching a failed store; a positive number of ms (the constructor throws
   * `invalid-config` otherwise). @default DEFAULT_REGISTRY_RETRY_MS (1000)
   */
  retryMs?: number;
  /** The clock for announcement time-to-live, in epoch milliseconds. @default Date.now */
  now?: () => number;
  /**
   * How long a reload waits for one tool's factory (tools are built concurrently). A build that takes
   * longer is reported with code `timeout` under its key and the rest of the reload applies without it
   * (a tool that was live keeps its last good version). The build goes on: later reloads do not wait
   * for it again, it goes live when it finishes, and its `ctx.signal` aborts when its item changes or
   * goes or the registry closes. `Infinity`: wait without limit.
   * @default DEFAULT_REGISTRY_BUILD_TIMEOUT_MS (30000)
   */
  buildTimeoutMs?: number;
  /**
   * The programs (`mcp/<id>` items with `command`) and environment variables (`{ "env": NAME }` header
   * values) config may use. Checked on every tool item, config or announced, and on every item its
   * factory looks up, before the factory runs or a process is started: a tool that needs something not
   * listed is refused with code `not-allowed` in {@link ToolRegistry.problems} and never goes live. Read
   * once, at construction.
   * @default configAllowlistFromEnv(process.env): TOOLBUS_ALLOW_COMMANDS and TOOLBUS_ALLOW_ENV, else none
   */
  allowlist?: ConfigAllowlist;
}

/** What {@link ToolRegistry.onChange} listeners receive after the tool set changed. */
export interface RegistryChange {
  /** The new set (already live). */
  tools: ToolSet;
  /** Names that appeared. */
  added: string[];
  /** Names that went. */
  removed: string[];
  problems: readonly RegistryProblem[];
}

interface StoredItem {
  value: JsonValue;
  revision: number;
}

interface Built {
  descriptorJson: string;
  /** `type/key` → JSON of what lookup returned (undefined: absent). */
  lookups: Map<string, { type: string; key: string; json: string | undefined }>;
  tool: Tool;
  warnings: string[];
  controller: AbortController;
}

type BuildResult = { built: Built } | { error: unknown };

/** A tool build that may still be running. */
interface Attempt {
  descriptorJson: string;
  /** What the factory looked up so far. */
  lookups: Built['lookups'];
  controller: AbortController;
  /** Settles when the build does, when buildTimeoutMs passes, or when it is dropped. */
  waited: Promise<void>;
  wake: () => void;
  timer?: ReturnType<typeof setTimeout> | undefined;
  /** buildTimeoutMs passed before the build settled. */
  expired?: boolean;
  settled: BuildResult | undefined;
}

interface Instance {
  serviceId: string;
  service: JsonObject;
  tools: JsonObject[];
  json: string;
  expiresAt: number;
  seq: number;
}

/**
 * Builds a live {@link ToolSet} (`registry.tools`, a `LiveToolSet`) from config and keeps it current.
 *
 * - **Each item on its own.** Every `tool` item is validated and built alone. A bad one is skipped and
 *   listed in {@link problems} (`{ key: 'tool/tell-joke', message }`); the good ones stay live. There is
 *   no all-or-nothing reload. A bad edit of a tool that was live keeps its last good version live
 *   (reported as an error) until the item is fixed or deleted, or an item it depends on is deleted.
 * - **Any change, any order.** The registry keeps a full copy of the config and rebuilds from all of it
 *   after every change, so changing only `tool-service` items never wipes tools and changing only `tool`
 *   items is never rejected for lack of services (TrustGraph's partial-type reload bugs). A tool whose
 *   service arrives later goes live when it does; deleting a service takes its tools out (reported).
 *   Tools whose item and looked-up items did not change are reused, not rebuilt.
 * - **Atomic swap.** The new set replaces the old one in one step (`LiveToolSet.replace`). A call in
 *   flight finishes on the set it started with; the next agent step sees the new set.
 * - **Self-announcing services.** With a bus, the registry listens on `tool-descriptors` and, at
 *   {@link start}, asks every service to announce at once. Announced tools appear at once and are
 *   withdrawn when the last instance of their service says goodbye or its heartbeat lapses (its TTL).
 *   **On a name conflict, config wins over announcements**: an announced tool whose name a config tool
 *   already uses is left out (reported as a warning). A config `tool-service` item also wins over an
 *   announced service of the same id for config tools; announced tools always use their own service.
 * - **Only what the operator allows.** A tool whose item (or an item it looks up, such as its
 *   `mcp/<id>`) runs a program or reads an environment variable not in {@link ToolRegistryOptions.allowlist}
 *   is refused (code `not-allowed`) before its factory runs, however the config was written.
 *
 * @example
 * ```ts
 * const registry = new ToolRegistry({ store, bus, model, toolTypes: { http: httpToolType() } });
 * await registry.start();
 * const agent = new ToolUseAgent({ model, tools: registry.tools });
 * for (const p of registry.problems()) console.warn(`${p.key}: ${p.message}`);
 * ```
 */
export class ToolRegistry {
  /** The live tool set; pass it to an agent, which reads it at each step. */
  readonly tools: LiveToolSet;
  readonly #store: ConfigStore;
  readonly #bus: MessageBus | undefined;
  readonly #model: ChatCompletionClient | undefined;
  readonly #factories: Map<string, ToolTypeFactory>;
  readonly #useAnnouncements: boolean;
  readonly #debounceMs: number;
  readonly #retryMs: number;
  readonly #buildTimeoutMs: number;
  readonly #now: () => number;
  readonly #clients: ToolServiceClientCache | undefined;
  readonly #ownsClients: boolean;
  readonly #allowlist: Required<ConfigAllowlist>;

  #config = new Map<string, Map<string, StoredItem>>();
  /** Watched changes at or below this store revision are already in `#config` (from a refresh). */
  #floor = 0;
  /** Buffers collecting watched changes while a refresh reads the store. */
  readonly #recording = new Set<ConfigChange[]>();
  #loaded = false;
  #built = new Map<string, Built>();
  /** Builds still running (or finished after their timeout and not yet taken in), by source. */
  readonly #attempts = new Map<string, Attempt>();
  #instances = new Map<string, Instance>();
  #seq = 0;
  #problems: RegistryProblem[] = [];
  #storeProblem: RegistryProblem | undefined;
  #announcementProblems = new Map<string, RegistryProblem>();
  readonly #listeners = new Set<(change: RegistryChange) => void>();

  #started: Promise<void> | undefined;
  #closing: Promise<void> | undefined;
  readonly #abort = new AbortController();
  #subscription: BusSubscription | undefined;
  #debounceTimer: ReturnType<typeof setTimeout> | undefined;
  #expiryTimer: ReturnType<typeof setTimeout> | undefined;
  #rebuilding: Promise<void> | undefined;
  #dirty = false;

  constructor(options: ToolRegistryOptions) {
    this.#store = options.store;
    this.#bus = options.bus;
    this.#model = options.model;
    this.#useAnnouncements = options.announcements ?? options.bus !== undefined;
    this.#debounceMs = checkDelay(
      'debounceMs',
      options.debounceMs ?? DEFAULT_REGISTRY_DEBOUNCE_MS,
      'zero-ok',
    );
    this.#retryMs = checkDelay('retryMs', options.retryMs ?? DEFAULT_REGISTRY_RETRY_MS, 'positive');
    this.#buildTimeoutMs = options.buildTimeoutMs ?? DEFAULT_REGISTRY_BUILD_TIMEOUT_MS;
    if (!(this.#buildTimeoutMs > 0)) {
      throw new ToolbusError(
        'invalid-config',
        `ToolRegistry: option 'buildTimeoutMs' must be a positive number of milliseconds (Infinity ` +
          `for no limit), got ${String(options.buildTimeoutMs)}`,
      );
    }
    this.#now = options.now ?? Date.now;
    // Copied, so a caller changing its arrays later cannot widen what this registry allows.
    const allowlist = options.allowlist ?? configAllowlistFromEnv(process.env);
    this.#allowlist = { commands: [...(allowlist.commands ?? [])], env: [...(allowlist.env ?? [])] };
    this.#ownsClients = options.clients === undefined && options.bus !== undefined;
    this.#clients = options.clients ?? (options.bus ? new ToolServiceClientCache(options.bus) : undefined);
    this.tools = new LiveToolSet([], options.toolSetOptions ?? {});
    const functions = new Map<string, Tool>();
    for (const tool of options.functions ?? []) functions.set(tool.name, tool);
    this.#factories = new Map<string, ToolTypeFactory>([
      ['tool-service', toolServiceToolType(() => this.#clients)],
      ['text-completion', textCompletionToolType],
      ['prompt', promptToolType],
      ['function', functionToolType(functions)],
      ...Object.entries(options.toolTypes ?? {}),
    ]);
  }

  /**
   * Loads every item, builds the first tool set, starts following the store, and (with a bus) listens
   * to announcements and asks services to announce now. Resolves once the first set is live.
   * Idempotent. Rejects with the store's error (e.g. `store-error`) when the first load fails (the
   * registry then leaves the bus and stays failed: later calls reject the same way; create a new one to
   * retry), `closed` after {@link close}, or `cancelled` (`timeout` for an `AbortSignal.timeout`) when
   * `options.signal` aborts first (the registry then closes).
   */
  start(options: { signal?: AbortSignal } = {}): Promise<void> {
    if (this.#closing) return Promise.reject(closedError());
    const signal = options.signal;
    if (signal?.aborted) return Promise.reject(abortError(signal, 'ToolRegistry.start'));
    this.#started ??= this.#start();
    if (!signal) return this.#started;
    // Giving up on start closes the registry, so nothing keeps loading in the background.
    const stop = onAbort(signal, () => void this.close());
    return raceSignal(this.#started, signal, 'ToolRegistry.start').finally(stop);
  }

  /** Everything wrong with the config and announcements now, sorted by key. */
  problems(): RegistryProblem[] {
    const all = [...this.#problems, ...this.#announcementProblems.values()];
    if (this.#storeProblem) all.push(this.#storeProblem);
    return all.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)).map((p) => ({ ...p }));
  }

  /**
   * Calls `listener` after each change of the tool set. Returns a function that removes it. A listener
   * that throws does not stop the registry or the other listeners.
   */
  onChange(listener: (change: RegistryChange) => void): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  /**
   * Reads the store and applies what changed now (without waiting for the watch or the debounce), and
   * resolves when the tool set is current: after `await store.put(...)`, from this process or any
   * other, `await registry.refresh()` shows the change. Handy in tests and after a known write.
   */
  async refresh(): Promise<void> {
    if (this.#debounceTimer) {
      clearTimeout(this.#debounceTimer);
      this.#debounceTimer = undefined;
    }
    // The watch may deliver an acknowledged write later (NATS, another process on a SQLite file), so
    // read the store itself. A failing store is reported by the watch loop; build from what is known.
    if (this.#loaded && !this.#abort.signal.aborted) await this.#resync().catch(() => undefined);
    return this.#rebuild();
  }

  /** Replaces the config copy with a fresh read, keeping the watched changes that arrive meanwhile. */
  async #resync(): Promise<void> {
    const meanwhile: ConfigChange[] = [];
    this.#recording.add(meanwhile);
    try {
      // Every change up to `base` is in the list that follows; the watch may still deliver them.
      const base = await this.#store.revision();
      const items = await this.#store.list();
      // A concurrent refresh may already have put a newer snapshot in place: keep that one.
      if (this.#abort.signal.aborted || base < this.#floor) return;
      this.#config = toConfig(items);
      this.#floor = Math.max(this.#floor, base);
      for (const change of meanwhile) this.#applyChange(change);
    } finally {
      this.#recording.delete(meanwhile);
    }
  }

  /**
   * Stops following the store and the bus, releases what the tools hold (their `ctx.signal` aborts)
   * and closes the tool-service clients it created. The current tool set stays readable. Idempotent.
   */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  /** Alias of {@link close}. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  async #start(): Promise<void> {
    if (this.#bus && this.#useAnnouncements) {
      this.#subscription = await this.#bus.subscribe(TOOL_DESCRIPTORS_TOPIC, (m) =>
        this.#onAnnouncement(m.body),
      );
    }
    let firstLoad!: { resolve: () => void; reject: (e: unknown) => void };
    const loaded = new Promise<void>((resolve, reject) => (firstLoad = { resolve, reject }));
    void this.#watchLoop(firstLoad);
    try {
      await loaded;
    } catch (error) {
      // A failed start is final (start() keeps rejecting), so nothing may keep listening to the bus,
      // building announced tools or arming TTL timers until someone remembers to call close().
      await this.#stopAnnouncements();
      throw error;
    }
    await this.#rebuild();
    if (this.#bus && this.#useAnnouncements) {
      await requestAnnouncements(this.#bus).catch((error: unknown) => {
        this.#announcementProblems.set('announced', {
          key: 'announced',
          message: `could not ask services to announce: ${(error as Error).message}`,
          severity: 'warning',
        });
      });
    }
  }

  /** Leaves the announcement topic and forgets what was announced. */
  async #stopAnnouncements(): Promise<void> {
    const subscription = this.#subscription;
    this.#subscription = undefined;
    await subscription?.unsubscribe().catch(() => undefined);
    this.#instances.clear();
    if (this.#expiryTimer) clearTimeout(this.#expiryTimer);
    this.#expiryTimer = undefined;
  }

  /** Follows the store: snapshot + watch, and again after a failure (the full snapshot resyncs). */
  async #watchLoop(first: { resolve: () => void; reject: (e: unknown) => void } | undefined): Promise<void> {
    const signal = this.#abort.signal;
    // A settled promise ignores a later reject: this only reaches a start still waiting for its first
    // load (closed before it finished), which must settle or close, awaiting it, would hang.
    const initial = first;
    try {
      while (!signal.aborted) {
        try {
          // Watch before listing, so no change between the two is missed.
          const watch = this.#store.watch({ signal });
          let items: ConfigItem[];
          try {
            items = await this.#store.list();
          } catch (error) {
            // End the watch opened for this attempt, or every retry would leave one open (buffering
            // changes, or holding a consumer on the server) until the registry closes.
            await Promise.resolve(watch[Symbol.asyncIterator]().return?.()).catch(() => undefined);
            throw error;
          }
          this.#config = toConfig(items);
          this.#floor = 0; // a new watch on a (possibly replaced) store: its revisions count afresh
          this.#loaded = true;
          this.#storeProblem = undefined;
          if (first) {
            first.resolve();
            first = undefined;
          } else this.#schedule();
          for await (const change of watch) {
            for (const buffer of this.#recording) buffer.push(change);
            if (this.#applyChange(change)) this.#schedule();
          }
          return; // the watch ended without error: the store or the registry closed
        } catch (error) {
          if (signal.aborted) return;
          if (first) {
            first.reject(error);
            return;
          }
          this.#storeProblem = {
            key: 'store',
            message: `the config store failed; retrying every ${this.#retryMs} ms: ${(error as Error).message}`,
            severity: 'error',
            ...(isToolbusError(error) ? { code: error.code } : {}),
          };
          await new Promise<void>((resolve) => {
            const onAbort = (): void => (clearTimeout(timer), resolve());
            // Removed when the timer fires, or every retry would leave a listener on the signal.
            const timer = setTimeout(
              () => (signal.removeEventListener('abort', onAbort), resolve()),
              this.#retryMs,
            );
            signal.addEventListener('abort', onAbort, { once: true });
          });
        }
      }
    } finally {
      initial?.reject(closedError());
    }
  }

  /** Applies one watched change to the config copy; false when it was already known. */
  #applyChange(change: ConfigChange): boolean {
    if (change.revision <= this.#floor) return false;
    let byKey = this.#config.get(change.type);
    const known = byKey?.get(change.key);
    if (known && known.revision >= change.revision) return false;
    if (change.kind === 'delete') {
      if (!known) return false;
      byKey!.delete(change.key);
      return true;
    }
    if (!byKey) this.#config.set(change.type, (byKey = new Map()));
    byKey.set(change.key, { value: change.value ?? null, revision: change.revision });
    return true;
  }

  #onAnnouncement(body: Uint8Array): void {
    let announcement;
    try {
      announcement = decodeAnnouncement(body);
    } catch (error) {
      if (this.#announcementProblems.size < 100) {
        const message = (error as Error).message;
        this.#announcementProblems.set(`announced/${message}`, {
          key: 'announced',
          message: `ignored a malformed announcement: ${message}`,
          severity: 'warning',
        });
      }
      return;
    }
    if (announcement.kind === 'announce') {
      const json = JSON.stringify([announcement.service, announcement.tools]);
      const previous = this.#instances.get(announcement.instanceId);
      this.#instances.set(announcement.instanceId, {
        serviceId: announcement.serviceDescriptor.id,
        service: announcement.service,
        tools: announcement.tools,
        json,
        expiresAt: this.#now() + announcement.ttlMs,
        seq: previous?.json === json ? previous.seq : ++this.#seq,
      });
      this.#scheduleExpiry();
      if (previous?.json !== json) this.#schedule();
    } else if (announcement.kind === 'goodbye') {
      if (this.#instances.delete(announcement.instanceId)) {
        this.#scheduleExpiry();
        this.#schedule();
      }
    }
  }

  #scheduleExpiry(): void {
    if (this.#expiryTimer) clearTimeout(this.#expiryTimer);
    this.#expiryTimer = undefined;
    if (this.#instances.size === 0 || this.#abort.signal.aborted) return;
    const next = Math.min(...[...this.#instances.values()].map((i) => i.expiresAt));
    this.#expiryTimer = setTimeout(
      () => {
        this.#expiryTimer = undefined;
        const now = this.#now();
        let removed = false;
        for (const [id, instance] of this.#instances) {
          if (instance.expiresAt <= now) {
            this.#instances.delete(id);
            removed = true;
          }
        }
        this.#scheduleExpiry();
        if (removed) this.#schedule();
      },
      // Capped: a delay beyond setTimeout's maximum (a TTL of weeks) would fire after 1 ms, and again.
      Math.min(Math.max(0, next - this.#now()), MAX_TIMER_MS),
    );
  }

  #schedule(): void {
    if (this.#abort.signal.aborted || !this.#started) return;
    if (this.#debounceTimer) return;
    this.#debounceTimer = setTimeout(() => {
      this.#debounceTimer = undefined;
      void this.#rebuild();
    }, this.#debounceMs);
  }

  /** Runs one rebuild at a time; a change during a rebuild runs another right after it. */
  #rebuild(): Promise<void> {
    if (this.#rebuilding) {
      this.#dirty = true;
      return this.#rebuilding;
    }
    this.#rebuilding = (async () => {
      try {
        do {
          this.#dirty = false;
          await this.#build();
        } while (this.#dirty && !this.#abort.signal.aborted);
      } finally {
        this.#rebuilding = undefined;
      }
    })();
    return this.#rebuilding;
  }

  #lookupConfig = (type: string, key: string): JsonValue | undefined => {
    const value = this.#config.get(type)?.get(key)?.value;
    if (value !== undefined || type !== 'tool-service') return value;
    return this.#announcedServices().get(key)?.service; // a config tool may use an announced service
  };

  /** The announced services, merged over their live instances (the latest announcement wins). */
  #announcedServices(): Map<string, { service: JsonObject; tools: Map<string, JsonObject> }> {
    const out = new Map<string, { service: JsonObject; tools: Map<string, JsonObject> }>();
    const bySeq = [...this.#instances.values()].sort((a, b) => a.seq - b.seq);
    for (const instance of bySeq) {
      let entry = out.get(instance.serviceId);
      if (!entry) out.set(instance.serviceId, (entry = { service: instance.service, tools: new Map() }));
      entry.service = instance.service;
      for (const tool of instance.tools) entry.tools.set(String(tool['name']), tool);
    }
    return out;
  }

  async #build(): Promise<void> {
    if (this.#abort.signal.aborted) return;
    const problems: RegistryProblem[] = [];
    const next = new Map<string, Built>();
    const tools: Tool[] = [];
    const owners = new Map<string, string>(); // tool name → source key

    // tool-service items are checked on their own, so a bad one is reported even if no tool uses it.
    for (const [key, item] of sorted(this.#config.get('tool-service'))) {
      try {
        const value = item.value;
        if (!value || typeof value !== 'object' || Array.isArray(value)) {
          throw new TypeError(`a tool-service item must be a JSON object`);
        }
        const descriptor = parseToolServiceDescriptor({ id: key, ...value });
        if (descriptor.id !== key) {
          problems.push({
            key: `tool-service/${key}`,
            message: `its 'id' is '${descriptor.id}' but its key is '${key}'; tools refer to services by key`,
            severity: 'warning',
          });
        }
      } catch (error) {
        problems.push(problemOf(`tool-service/${key}`, error));
      }
    }

    const add = (source: string, built: Built): void => {
      next.set(source, built);
      for (const message of built.warnings) problems.push({ key: source, message, severity: 'warning' });
      const owner = owners.get(built.tool.name);
      if (owner !== undefined) {
        problems.push({
          key: source,
          message: `tool name '${built.tool.name}' is already used by ${owner}; this one is left out (names must be unique)`,
          severity: source.startsWith('announced/') ? 'warning' : 'error',
        });
        return;
      }
      owners.set(built.tool.name, source);
      tools.push(built.tool);
    };

    // Every tool is built at once, then added in a fixed order: one slow factory (an MCP server that
    // hangs on connect) delays the reload by at most buildTimeoutMs, not once per item after it.
    const configBuilds = sorted(this.#config.get('tool')).map(([key, item]) => {
      const source = `tool/${key}`;
      return { source, result: this.#buildOne(source, key, item.value, this.#lookupConfig) };
    });
    const announcedBuilds: {
      source: string;
      name: string;
      lookup: (type: string, key: string) => JsonValue | undefined;
      result: Promise<BuildResult>;
    }[] = [];
    for (const [serviceId, entry] of sorted(this.#announcedServices())) {
      const lookup = (type: string, key: string): JsonValue | undefined =>
        type === 'tool-service' && key === serviceId ? entry.service : this.#lookupConfig(type, key);
      for (const [name, descriptor] of sorted(entry.tools)) {
        const source = `announced/${serviceId}/${name}`;
        const filled = { type: 'tool-service', service: serviceId, ...descriptor };
        announcedBuilds.push({ source, name, lookup, result: this.#buildOne(source, name, filled, lookup) });
      }
    }

    for (const { source, result } of configBuilds) {
      const r = await result;
      if ('error' in r) this.#keepLastGood(source, r.error, this.#lookupConfig, problems, add);
      else add(source, r.built);
    }
    // Announced tools come after config ones, so on a name conflict config wins.
    for (const { source, name, lookup, result } of announcedBuilds) {
      const r = await result;
      const owner = owners.get(name);
      if (owner !== undefined && !owner.startsWith('announced/')) {
        // Built for nothing: release it, unless it is the one already live (the loop below does that).
        if ('built' in r && this.#built.get(source) !== r.built) r.built.controller.abort();
        const pending = this.#attempts.get(source);
        if (pending) this.#dropAttempt(source, pending);
        problems.push({
          key: source,
          message: `config ${owner} defines a tool named '${name}' too; config wins over announcements, so the announced one is left out`,
          severity: 'warning',
        });
        continue;
      }
      if ('error' in r) this.#keepLastGood(source, r.error, lookup, problems, add);
      else add(source, r.built);
    }
    // A build still running for an item that is gone is no longer wanted.
    const wanted = new Set([...configBuilds, ...announcedBuilds].map((b) => b.source));
    for (const [source, attempt] of [...this.#attempts]) {
      if (!wanted.has(source)) this.#dropAttempt(source, attempt);
    }

    if (this.#abort.signal.aborted) {
      for (const [source, built] of next) if (this.#built.get(source) !== built) built.controller.abort();
      return;
    }
    for (const [source, built] of this.#built) {
      if (next.get(source) !== built)
        built.controller.abort(new Error(`tool '${built.tool.name}' left the registry`));
    }
    this.#built = next;
    this.#problems = problems;

    const before = this.tools.list();
    const same = before.length === tools.length && before.every((t, i) => t === tools[i]);
    if (same) return;
    const set = this.tools.replace(tools);
    const beforeNames = new Set(before.map((t) => t.name));
    const afterNames = new Set(tools.map((t) => t.name));
    const change: RegistryChange = {
      tools: set,
      added: [...afterNames].filter((n) => !beforeNames.has(n)),
      removed: [...beforeNames].filter((n) => !afterNames.has(n)),
      problems: this.problems(),
    };
    for (const listener of [...this.#listeners]) {
      try {
        listener(change);
      } catch {
        // A listener's failure is its own; the registry and the other listeners carry on.
      }
    }
  }

  /**
   * Reports an item whose new version failed to build. A bad edit must not take a working tool away
   * (the user fixes the item while agents keep using the tool), so the last good build stays live,
   * unless an item it looked up was deleted: a deleted dependency is a deliberate removal.
   */
  #keepLastGood(
    source: string,
    error: unknown,
    lookup: (type: string, key: string) => JsonValue | undefined,
    problems: RegistryProblem[],
    add: (source: string, built: Built) => void,
  ): void {
    const previous = this.#built.get(source);
    const usable =
      previous !== undefined &&
      [...previous.lookups.values()].every(
        (l) => l.json === undefined || lookup(l.type, l.key) !== undefined,
      );
    const problem = problemOf(source, error);
    if (!usable) {
      problems.push(problem);
      return;
    }
    problem.message += `; the last good version of tool '${previous.tool.name}' stays live until this is fixed`;
    problems.push(problem);
    add(source, previous);
  }

  /**
   * Builds one tool, or reuses the previous one when its item and everything it looked up are unchanged.
   * Waits for a factory at most buildTimeoutMs, so one that hangs (an MCP server that never answers)
   * cannot hold up the others. Such a build goes on: later reloads do not wait for it again, and when it
   * finishes a reload takes it in. An edit of the item (or of what it looked up) starts a new one.
   */
  async #buildOne(
    source: string,
    key: string,
    descriptor: JsonValue,
    lookup: (type: string, key: string) => JsonValue | undefined,
  ): Promise<BuildResult> {
    const descriptorJson = JSON.stringify(descriptor);
    const unchanged = (b: { descriptorJson: string; lookups: Built['lookups'] }): boolean =>
      b.descriptorJson === descriptorJson &&
      [...b.lookups.values()].every((l) => jsonOf(lookup(l.type, l.key)) === l.json);
    const previous = this.#built.get(source);
    if (previous && unchanged(previous)) return { built: previous };
    let attempt = this.#attempts.get(source);
    if (attempt && !unchanged(attempt)) {
      this.#dropAttempt(source, attempt);
      attempt = undefined;
    }
    attempt ??= this.#startAttempt(source, key, descriptor, descriptorJson, lookup);
    await attempt.waited;
    if (attempt.settled) {
      if (this.#attempts.get(source) === attempt) this.#attempts.delete(source);
      return attempt.settled;
    }
    if (this.#abort.signal.aborted) return { error: closedError() };
    return {
      error: new ToolbusError(
        'timeout',
        `building it has taken longer than ${this.#buildTimeoutMs} ms (buildTimeoutMs); the other ` +
          'tools were applied without it, and it goes live when its build finishes',
      ),
    };
  }

  /** Starts a build; `waited` settles when it does, when buildTimeoutMs passes, or on close. */
  #startAttempt(
    source: string,
    key: string,
    descriptor: JsonValue,
    descriptorJson: string,
    lookup: (type: string, key: string) => JsonValue | undefined,
  ): Attempt {
    const controller = new AbortController();
    const lookups: Built['lookups'] = new Map();
    const warnings: string[] = [];
    // The first item the allowlist refused. Factories may catch a lookup's error and throw their own
    // (mcp-tool wraps it in `invalid-config`), or carry on without the item: the refusal is reported
    // either way, and the tool never goes live.
    let refused: unknown;
    const ctx: ToolTypeContext = {
      key,
      bus: this.#bus,
      model: this.#model,
      signal: controller.signal,
      lookup: (type, itemKey) => {
        const value = lookup(type, itemKey);
        lookups.set(`${type}/${itemKey}`, { type, key: itemKey, json: jsonOf(value) });
        try {
          assertConfigAllowed(this.#allowlist, type, itemKey, value);
        } catch (error) {
          refused ??= error;
          throw error;
        }
        return value === undefined ? undefined : structuredClone(value);
      },
      warn: (message) => void warnings.push(message),
    };
    let wake!: () => void;
    const waited = new Promise<void>((resolve) => (wake = resolve));
    const attempt: Attempt = { descriptorJson, lookups, controller, waited, wake, settled: undefined };
    attempt.timer =
      this.#buildTimeoutMs === Infinity
        ? undefined
        : setTimeout(
            () => {
              attempt.expired = true;
              wake();
            },
            Math.min(this.#buildTimeoutMs, MAX_TIMER_MS),
          );
    const build = async (): Promise<BuildResult> => {
      try {
        // Before the factory: nothing of a refused item may run, not even its type's checks.
        assertConfigAllowed(this.#allowlist, 'tool', key, descriptor);
        const { type, descriptor: object } = toolTypeOf(descriptor, ctx);
        const factory = this.#factories.get(type);
        if (!factory) throw unknownType(type, key, [...this.#factories.keys()]);
        const tool = await factory(structuredClone(object), ctx);
        if (refused !== undefined) throw refused;
        validateToolName(tool.name);
        return { built: { descriptorJson, lookups, tool, warnings, controller } };
      } catch (error) {
        controller.abort();
        return { error: refused ?? error };
      }
    };
    void build().then((result) => {
      attempt.settled = result;
      clearTimeout(attempt.timer);
      wake();
      // It outlived its timeout, so the reload went on without it: take it in now.
      if (attempt.expired && this.#attempts.get(source) === attempt) this.#schedule();
    });
    this.#attempts.set(source, attempt);
    return attempt;
  }

  /** Gives up on a build still running or not taken in (its item changed or went, or the registry closed). */
  #dropAttempt(source: string, attempt: Attempt): void {
    if (this.#attempts.get(source) === attempt) this.#attempts.delete(source);
    clearTimeout(attempt.timer);
    attempt.controller.abort();
    attempt.wake();
  }

  async #close(): Promise<void> {
    this.#abort.abort();
    if (this.#debounceTimer) clearTimeout(this.#debounceTimer);
    if (this.#expiryTimer) clearTimeout(this.#expiryTimer);
    this.#debounceTimer = this.#expiryTimer = undefined;
    // A hung build must neither hold up close (nor a start waiting for it) nor keep the process
    // alive with its timer.
    for (const [source, attempt] of [...this.#attempts]) this.#dropAttempt(source, attempt);
    await this.#started?.catch(() => undefined);
    await this.#subscription?.unsubscribe().catch(() => undefined);
    await this.#rebuilding?.catch(() => undefined);
    for (const built of this.#built.values()) built.controller.abort(new Error('the registry closed'));
    if (this.#ownsClients) await this.#clients?.close();
  }
}

function sorted<V>(map: Map<string, V> | undefined): [string, V][] {
  return [...(map ?? new Map<string, V>())].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

/**
 * A delay setTimeout honours: NaN, a negative one or one beyond its maximum fires after about 1 ms, so
 * a retryMs like that re-watched a failing store in a tight loop.
 */
function checkDelay(name: string, value: number, zero: 'zero-ok' | 'positive'): number {
  const low = zero === 'zero-ok' ? value >= 0 : value > 0;
  if (typeof value === 'number' && low && value <= MAX_TIMER_MS) return value;
  throw new ToolbusError(
    'invalid-config',
    `ToolRegistry: option '${name}' must be ${zero === 'zero-ok' ? '0 or ' : ''}a positive number of ` +
      `milliseconds (at most ${MAX_TIMER_MS}), got ${String(value)}`,
  );
}

function toConfig(items: ConfigItem[]): Map<string, Map<string, StoredItem>> {
  const config = new Map<string, Map<string, StoredItem>>();
  for (const item of items) {
    let byKey = config.get(item.type);
    if (!byKey) config.set(item.type, (byKey = new Map()));
    byKey.set(item.key, { value: item.value, revision: item.revision });
  }
  return config;
}

function jsonOf(value: JsonValue | undefined): string | undefined {
  return value === undefined ? undefined : JSON.stringify(value);
}

function problemOf(key: string, error: unknown): RegistryProblem {
  const message = error instanceof Error ? error.message : String(error);
  return { key, message, severity: 'error', ...(isToolbusError(error) ? { code: error.code } : {}) };
}

function unknownType(type: string, key: string, known: string[]): ToolbusError {
  const provider = TOOL_TYPE_PROVIDERS[type];
  const message = provider
    ? `config 'tool/${key}': tool type '${type}' is not installed in this registry; ${provider}`
    : `config 'tool/${key}': unknown tool type '${type}'; known types: ${known.join(', ')}`;
  return new ToolbusError('invalid-config', message);
}

function closedError(): ToolbusError {
  return new ToolbusError('closed', 'ToolRegistry is closed; create a new one');
}
