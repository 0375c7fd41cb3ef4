/**
 * @module `ToolRegistry`: turns config items (and self-announced services) into a live tool set that
 * follows every change without a restart.
 */
// Imported, not the global: `globalThis.performance` is a lazy getter, read on every use.
import { performance } from 'node:perf_hooks';
import { abortError, raceSignal } from '../errors/index.js';
import { ToolServiceClientCache } from '../services/index.js';
import { LiveToolSet, PROFILE_CONFIG_TYPE, onAbort } from '../tools/index.js';
import type {
  ObservableToolProvider,
  PromptProvider,
  ResourceProvider,
  Tool,
  ToolSearchHit,
  ToolSearchOptions,
  ToolSet,
} from '../tools/index.js';
import { AnnouncementTracker } from './announcement-tracker.js';
import { functionToolType, toolServiceToolType } from './builtin-tool-types.js';
import { ConfigMirror } from './config-mirror.js';
import { promptToolType, textCompletionToolType } from './model-tools.js';
import { RebuildScheduler } from './rebuild-scheduler.js';
import { RegistryProfiles } from './registry-profiles.js';
import {
  registryServices,
  toolOrigins,
  type RegistryService,
  type RegistryToolOrigin,
} from './registry-inventory.js';
import { closedError } from './registry-errors.js';
import { ToolBuilder } from './tool-builder.js';
import { resolveToolRegistryOptions, type ToolRegistryOptions } from './tool-registry-options.js';
import {
  eachToolSource,
  planToolSetSteps,
  type AnnouncedServices,
  type AnnouncedSourceCache,
  type BuildResult,
  type BuiltTool,
  type ToolSource,
} from './tool-set-plan.js';
import type { RegistryProblem, ToolTypeFactory } from './tool-type.js';
import { ConfigResources, RESOURCE_CONFIG_TYPE } from './config-resources.js';
import { ConfigPrompts } from './config-prompts.js';
import { configLookup } from './tool-set-plan.js';

/** A rebuild checking many tools gives the event loop a turn after this long, in ms. */
const REBUILD_SLICE_MS = 5;

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
  /**
   * The `resource/<id>` items as resources for MCP clients (`createMcpServer(tools, { resources })`):
   * static text or blobs, or read through a tool service; following every change.
   */
  readonly resources: ResourceProvider;
  /**
   * The `prompt` tool items as MCP prompts of the same names (`createMcpServer(tools, { prompts })`),
   * with or without a model; following every change.
   */
  readonly prompts: PromptProvider;
  readonly #resources: ConfigResources;
  readonly #prompts = new ConfigPrompts();
  readonly #clients: ToolServiceClientCache | undefined;
  readonly #ownsClients: boolean;
  /** Aborts on close; every part below stops with it. */
  readonly #abort = new AbortController();
  readonly #mirror: ConfigMirror;
  readonly #announcements: AnnouncementTracker | undefined;
  readonly #builder: ToolBuilder;
  readonly #rebuilds: RebuildScheduler;
  /** The builds of the live set, by source. */
  #built = new Map<string, BuiltTool>();
  readonly #sourceCache: AnnouncedSourceCache = new WeakMap();
  #problems: RegistryProblem[] = [];
  readonly #listeners = new Set<(change: RegistryChange) => void>();
  readonly #profiles: RegistryProfiles;
  /** The profile items as of the last swap, so an edit of one alone still tells the listeners. */
  #profileItems: unknown[] = [];
  #originCache:
    { set: ToolSet; built: Map<string, BuiltTool>; origins: Map<string, RegistryToolOrigin> } | undefined;
  #started: Promise<void> | undefined;
  #closing: Promise<void> | undefined;

  constructor(options: ToolRegistryOptions) {
    const resolved = resolveToolRegistryOptions(options);
    const signal = this.#abort.signal;
    const changed = (): void => this.#schedule();
    this.#ownsClients = options.clients === undefined && options.bus !== undefined;
    this.#clients = options.clients ?? (options.bus ? new ToolServiceClientCache(options.bus) : undefined);
    const toolSetOptions = options.toolSetOptions ?? {};
    this.tools = new LiveToolSet([], {
      ...toolSetOptions,
      // A name the registry skipped: the one unknown-tool message says why (an agent, the gateway and
      // the MCP bridge all show it), before anything the caller adds.
      describeUnknown: (name) => {
        const skipped = this.#problems.find((p) => p.key === `tool/${name}` && p.severity === 'error');
        const own = toolSetOptions.describeUnknown?.(name);
        const why = skipped ? `its config item ${skipped.key} was skipped: ${skipped.message}` : undefined;
        return [why, own].filter((x) => x !== undefined).join('; ') || undefined;
      },
    });
    // Reads through a tool service are calls too: the same hooks, timeout, caps and concurrency.
    this.#resources = new ConfigResources({ clients: () => this.#clients, toolSetOptions });
    this.resources = this.#resources;
    this.prompts = this.#prompts;
    this.#mirror = new ConfigMirror(options.store, { retryMs: resolved.retryMs, signal, onChange: changed });
    this.#announcements =
      options.bus && resolved.announcements
        ? new AnnouncementTracker(options.bus, {
            now: resolved.now,
            signal,
            onChange: changed,
            limits: resolved.announcementLimits,
          })
        : undefined;
    this.#builder = new ToolBuilder({
      factories: toolFactories(options, () => this.#clients),
      bus: options.bus,
      model: options.model,
      allowlist: resolved.allowlist,
      buildTimeoutMs: resolved.buildTimeoutMs,
      signal,
      onLateBuild: changed,
    });
    this.#rebuilds = new RebuildScheduler(() => this.#build(), { debounceMs: resolved.debounceMs, signal });
    this.#profiles = new RegistryProfiles(this.#mirror, this.tools, (listener) => this.onChange(listener));
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

  /**
   * The live tools that best match `query`: BM25 over names, descriptions, argument names and
   * descriptions, and tags, with prefixes and small typos counted; best first. The index follows hot
   * reloads and announcements, re-indexing only the tools that changed.
   *
   * @throws ToolbusError `usage` for an empty query or a limit that is not a positive integer.
   * @example
   * ```ts
   * registry.search('weather forecast', { limit: 5 }).map((hit) => hit.name);
   * ```
   */
  search(query: string, options?: ToolSearchOptions): ToolSearchHit[] {
    return this.tools.search(query, options);
  }

  /** The ids of the `profile/<id>` items, sorted (those with problems too: see {@link problems}). */
  profiles(): string[] {
    return this.#profiles.ids();
  }

  /**
   * The tools of profile `id` (config item `profile/<id>`: `{ tools, tags, exclude }`), as a live view:
   * it follows the tools and the item. Pass it to an agent, or serve it at `/mcp/<id>`.
   *
   * @throws ToolbusError `not-found` naming the profiles there are; `invalid-config` for an item that
   * cannot be read.
   */
  profile(id: string): ObservableToolProvider {
    return this.#profiles.view(id);
  }

  /** Everything wrong with the config and announcements now, sorted by key. */
  problems(): RegistryProblem[] {
    const all = [
      ...this.#problems,
      ...this.#profiles.problems(),
      ...this.#resources.problems(),
      ...(this.#announcements?.problems() ?? []),
    ];
    const store = this.#mirror.problem;
    if (store) all.push(store);
    return all.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)).map((p) => ({ ...p }));
  }

  /**
   * How many live instances each self-announcing service has now, by service id (empty without a bus or
   * with `announcements: false`). For monitoring: a service whose count drops has lost replicas.
   */
  announcedInstances(): Map<string, number> {
    return this.#announcements?.instanceCounts() ?? new Map();
  }

  /**
   * Where the live tool `name` comes from: its config item (`tool/<key>`, its type and service) or the
   * announced service it belongs to. Undefined for a name that is not live.
   */
  toolOrigin(name: string): RegistryToolOrigin | undefined {
    return this.#origins().get(name);
  }

  /**
   * Every tool service known now, sorted by id: the `tool-service` items and the announced services,
   * each with its descriptor, its live instances (id, last seen) and the live tools that call it.
   */
  services(): RegistryService[] {
    return registryServices(
      this.#mirror,
      this.#announcedServices(),
      this.#announcements?.instances() ?? new Map(),
      this.#origins(),
    );
  }

  /** The live tools' origins, worked out again only after a swap (O(tools) then). */
  #origins(): Map<string, RegistryToolOrigin> {
    const set = this.tools.current;
    if (this.#originCache?.set !== set || this.#originCache.built !== this.#built) {
      this.#originCache = { set, built: this.#built, origins: toolOrigins(this.#built, set, this.#mirror) };
    }
    return this.#originCache.origins;
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
    this.#rebuilds.cancelScheduled();
    // The watch may deliver an acknowledged write later (NATS, another process on a SQLite file), so
    // read the store itself. A failing store is reported by the watch loop; build from what is known.
    await this.#mirror.refresh();
    return this.#rebuilds.run();
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
    await this.#announcements?.start();
    try {
      await this.#mirror.follow();
    } catch (error) {
      // A failed start is final (start() keeps rejecting), so nothing may keep listening to the bus,
      // building announced tools or arming TTL timers until someone remembers to call close().
      await this.#announcements?.stop();
      throw error;
    }
    await this.#rebuilds.run();
    await this.#announcements?.requestAnnouncements();
  }

  #schedule(): void {
    if (this.#started) this.#rebuilds.schedule();
  }

  #announcedServices = (): AnnouncedServices => this.#announcements?.services() ?? new Map();

  /**
   * Builds every tool (concurrently), decides the new set, and swaps it in. Resolves with its own work
   * in ms (the scheduler spaces rebuilds by it). A rebuild over thousands of tools (a flood of
   * announced services) gives the event loop a turn whenever it has worked {@link REBUILD_SLICE_MS}, so
   * calls and the bus keep flowing; a small one runs in one go.
   */
  async #build(): Promise<number> {
    const signal = this.#abort.signal;
    if (signal.aborted) return 0;
    let work = 0;
    let sliceStart = performance.now();
    const due = (): boolean => performance.now() - sliceStart >= REBUILD_SLICE_MS;
    /** Ends this slice of work: other callbacks run before the rebuild goes on. */
    const slice = async (): Promise<void> => {
      work += performance.now() - sliceStart;
      await new Promise<void>((resolve) => setImmediate(resolve));
      sliceStart = performance.now();
    };
    const sources: ToolSource[] = [];
    const results: (ToolSource & { result: BuildResult })[] = [];
    const builds: Promise<void>[] = [];
    for (const source of eachToolSource(this.#mirror, this.#announcedServices, this.#sourceCache)) {
      if (signal.aborted) break;
      const i = sources.push(source) - 1;
      const previous = this.#built.get(source.source);
      const reused = this.#builder.reusable(source, previous);
      if (reused) {
        results[i] = { ...source, result: { built: reused } };
      } else {
        const build = this.#builder.build(source, previous);
        builds.push(build.then((result) => void (results[i] = { ...source, result })));
      }
      if (due()) await slice();
    }
    work += performance.now() - sliceStart;
    await Promise.all(builds);
    sliceStart = performance.now();
    if (signal.aborted) {
      for (const entry of results) {
        const built = entry && 'built' in entry.result ? entry.result.built : undefined;
        if (built && this.#built.get(entry.source) !== built) built.controller.abort();
      }
      return work;
    }
    const steps = planToolSetSteps(this.#mirror, results, this.#built);
    let step = steps.next();
    while (!step.done) {
      if (due()) await slice();
      step = steps.next();
    }
    const plan = step.value;
    if (due()) await slice();
    for (const built of plan.unused) built.controller.abort();
    if (signal.aborted) {
      for (const [source, built] of plan.built)
        if (this.#built.get(source) !== built) built.controller.abort();
      return work;
    }
    for (const source of plan.outvoted) this.#builder.drop(source);
    this.#builder.keepOnly(new Set(sources.map((s) => s.source)));
    for (const built of plan.retired) {
      built.controller.abort(new Error(`tool '${built.tool.name}' left the registry`));
    }
    this.#built = plan.built;
    this.#problems = plan.problems;
    // Resources and prompts follow the same config (and announced services), in the same pass.
    this.#resources.update(
      this.#mirror.entries(RESOURCE_CONFIG_TYPE),
      configLookup(this.#mirror, this.#announcedServices),
    );
    this.#prompts.update(this.#mirror);
    this.#swap(plan.tools);
    return work + performance.now() - sliceStart;
  }

  /** Makes `tools` the live set, unless it already is, and tells the listeners. */
  #swap(tools: Tool[]): void {
    const before = this.tools.list();
    const profileItems = [...this.#mirror.entries(PROFILE_CONFIG_TYPE)].map(([, value]) => value);
    const sameProfiles =
      profileItems.length === this.#profileItems.length &&
      profileItems.every((value, i) => value === this.#profileItems[i]);
    this.#profileItems = profileItems;
    const same = before.length === tools.length && before.every((t, i) => t === tools[i]);
    if (same && sameProfiles) return;
    const set = same ? this.tools.current : this.tools.replace(tools);
    if (this.#listeners.size === 0) return;
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

  async #close(): Promise<void> {
    // Stops the watch, the debounce, the TTL timer and every build still running.
    this.#abort.abort();
    await this.#started?.catch(() => undefined);
    await this.#announcements?.stop();
    await this.#rebuilds.running?.catch(() => undefined);
    for (const built of this.#built.values()) built.controller.abort(new Error('the registry closed'));
    this.#resources.close();
    if (this.#ownsClients) await this.#clients?.close();
  }
}

/** The built-in tool types, then the caller's (which replace a built-in one of the same name). */
function toolFactories(
  options: ToolRegistryOptions,
  clients: () => ToolServiceClientCache | undefined,
): Map<string, ToolTypeFactory> {
  const functions = new Map<string, Tool>();
  for (const tool of options.functions ?? []) functions.set(tool.name, tool);
  return new Map<string, ToolTypeFactory>([
    ['tool-service', toolServiceToolType(clients)],
    ['text-completion', textCompletionToolType],
    ['prompt', promptToolType],
    ['function', functionToolType(functions)],
    ...Object.entries(options.toolTypes ?? {}),
  ]);
}
