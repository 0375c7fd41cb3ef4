/**
 * @module `ToolbusMetrics`: the `toolbus_*` Prometheus series of one process, on a registry of its own
 * (never prom-client's global one, so tests and several gateways in one process do not clash). Tool
 * calls are counted by `ToolSet` hooks into a tally per tool (a few array writes a call: prom-client's
 * `inc` and `observe` hash their labels on every call, which costs more than a whole local tool call),
 * written into the series when they are scraped; everything else is read from live state then too.
 *
 * prom-client (some 30 files, about 100 ms of synchronous loading on a small machine) is loaded by
 * {@link ToolbusMetrics.load} or the first scrape, not at import: `toolbus up` loads it shortly after it
 * serves, so neither its start nor its first requests wait for it. Calls are tallied from the start.
 */
import { createRequire } from 'node:module';
import type * as PromClientModule from 'prom-client';
import type {
  Counter,
  Gauge,
  LabelValues,
  MetricObjectWithValues,
  MetricValueWithName,
  Registry,
} from 'prom-client';
import type { MessageBus } from '../bus/index.js';
import type { ChatCompletionClient, RequestUsage } from '../models/index.js';
import type { ToolRegistry } from '../registry/index.js';
import { WireErrorType, type DynamicToolServiceStats } from '../services/index.js';
import {
  LiveToolSet,
  type ToolResult,
  type ToolResultEvent,
  type ToolSet,
  type ToolSetHooks,
} from '../tools/index.js';

/** Upper bounds (seconds) of `toolbus_tool_call_duration_seconds`: 5 ms up to the default 60 s timeout. */
export const DEFAULT_TOOL_CALL_BUCKETS: readonly number[] = Object.freeze([
  0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
]);

/** The `tool` label of a call to a name the set does not have: caller-chosen text must not become a series. */
export const UNKNOWN_TOOL_LABEL = '(unknown)';

/** Options of {@link ToolbusMetrics}. */
export interface ToolbusMetricsOptions {
  /** Also collect prom-client's process metrics (CPU, memory, event loop, GC) on the registry. @default true */
  defaultMetrics?: boolean;
  /** Bucket upper bounds of the tool call duration histogram, in seconds. @default DEFAULT_TOOL_CALL_BUCKETS */
  durationBuckets?: readonly number[];
}

/** One scrape: the text exposition and its content type, as a `/metrics` route sends them. */
export interface MetricsExposition {
  contentType: string;
  body: string;
}

/**
 * What the metrics read of a tool service: its id and, when it has them, its counters. A
 * `DynamicToolService` fits; so does one from a consumer's own copy of toolbus.
 */
export interface ObservedService {
  readonly id: string;
  stats?(): DynamicToolServiceStats;
}

/** What the metrics read of a registry: its live tools, its problems and the announced instances. */
export type ObservedRegistry = Pick<ToolRegistry, 'tools' | 'problems' | 'announcedInstances'>;

/** Stops observing a source; idempotent. */
export type Unobserve = () => void;

/** The `outcome` label each counter of a service's `stats()` counts under (the wire error types). */
const SERVICE_OUTCOMES: readonly (readonly [keyof DynamicToolServiceStats, string])[] = [
  ['completed', 'ok'],
  ['failed', WireErrorType.ToolServiceError],
  ['rejected', WireErrorType.TooManyRequests],
  ['expired', WireErrorType.DeadlineExceeded],
  ['cancelled', WireErrorType.Cancelled],
  ['invalid', WireErrorType.InvalidRequest],
  ['unreadable', WireErrorType.InvalidRequest],
];

type Snapshot = Partial<Record<keyof DynamicToolServiceStats, number>>;

const DURATION_SERIES = 'toolbus_tool_call_duration_seconds';
const DURATION_HELP = 'Wall time of tool calls, queueing included.';
/** prom-client's types declare the metric type as an enum its runtime does not export: the text is the value. */
const HISTOGRAM_TYPE = 'histogram' as unknown as MetricObjectWithValues<MetricValueWithName<'tool'>>['type'];

/** The finished calls of one tool (one `tool` label value), since the process started. */
interface ToolTally {
  readonly outcomes: Map<string, number>;
  /** Calls per duration bucket, not cumulative: slot i holds those ≤ bound i (and > bound i-1); the last, the rest. */
  readonly buckets: number[];
  sum: number;
  count: number;
}

/**
 * The `toolbus_*` series of one process:
 *
 * | series | type | fed by |
 * |--------|------|--------|
 * | `toolbus_tool_calls_total{tool,outcome}` | counter | {@link toolSetHooks} (`onResult`) |
 * | `toolbus_tool_call_duration_seconds{tool}` | histogram | {@link toolSetHooks} (`onResult`) |
 * | `toolbus_tool_calls_in_flight` | gauge | {@link observeToolSet}: `active + waiting` of the sets |
 * | `toolbus_service_requests_total{service,outcome}` | counter | {@link observeServices}: `stats()` |
 * | `toolbus_service_queue_depth{service}` | gauge | {@link observeServices}: `stats().queued` |
 * | `toolbus_registry_tools` | gauge | {@link observeRegistry}: the live set's size |
 * | `toolbus_registry_problems{severity}` | gauge | {@link observeRegistry}: `problems()` |
 * | `toolbus_announced_instances{service}` | gauge | {@link observeRegistry}: `announcedInstances()` |
 * | `toolbus_bus_connected` | gauge | {@link observeBus}: `bus.connected` (undefined counts as 1) |
 * | `toolbus_model_tokens_total{model,kind}` | counter | {@link observeModel}: `totalUsage()` |
 *
 * Counters fed from `stats()` and `totalUsage()` add what grew since the last scrape, so they stay
 * monotonic across a service reload; what an instance counted after the last scrape before it left is
 * not seen.
 *
 * @example
 * ```ts
 * const metrics = new ToolbusMetrics();
 * await metrics.load();
 * const registry = new ToolRegistry({ store, bus, toolSetOptions: { hooks: metrics.toolSetHooks() } });
 * metrics.observeRegistry(registry);
 * metrics.observeToolSet(registry.tools);
 * metrics.observeBus(bus);
 * const gateway = createGateway({ tools: registry.tools, token, metrics: () => metrics.scrape() });
 * ```
 */
export class ToolbusMetrics {
  readonly #options: ToolbusMetricsOptions;
  /** Upper bounds of the duration buckets, in seconds, ascending. */
  readonly #bounds: readonly number[];
  readonly #tallies = new Map<string, ToolTally>();
  #loading: Promise<Registry> | undefined;
  readonly #toolSets = new Set<() => number>();
  readonly #services = new Set<() => Iterable<ObservedService>>();
  /** What each service's counters were at the last scrape. */
  readonly #seen = new WeakMap<ObservedService, Snapshot>();
  readonly #registries = new Set<ObservedRegistry>();
  readonly #buses = new Set<MessageBus>();
  readonly #models = new Map<
    Pick<ChatCompletionClient, 'totalUsage'>,
    { name: string; last: RequestUsage }
  >();

  constructor(options: ToolbusMetricsOptions = {}) {
    this.#options = options;
    this.#bounds = [...(options.durationBuckets ?? DEFAULT_TOOL_CALL_BUCKETS)].sort((a, b) => a - b);
  }

  /**
   * Loads prom-client and makes the series, once; the first {@link scrape} does too. Call it once the
   * process serves, so the process series (event loop, GC) start then.
   */
  load(): Promise<void> {
    return this.#load().then(() => undefined);
  }

  /** The prom-client registry every series is on (loads prom-client). */
  registry(): Promise<Registry> {
    return this.#load();
  }

  #load(): Promise<Registry> {
    this.#loading ??= Promise.resolve().then(() =>
      this.#create(createRequire(import.meta.url)('prom-client') as typeof PromClientModule),
    );
    return this.#loading;
  }

  #create({ Counter, Gauge, Histogram, Registry, collectDefaultMetrics }: typeof PromClientModule): Registry {
    const options = this.#options;
    const registry = new Registry();
    const registers = [registry];
    const tallies = this.#tallies;
    const toolCalls: Counter<'tool' | 'outcome'> = new Counter({
      name: 'toolbus_tool_calls_total',
      help: "Tool calls finished, by tool and outcome ('ok' or the error code).",
      labelNames: ['tool', 'outcome'],
      registers,
      // The tallies are totals since the start: written afresh, they stay monotonic.
      collect: () => {
        toolCalls.reset();
        for (const [tool, tally] of tallies) {
          for (const [outcome, n] of tally.outcomes) toolCalls.inc({ tool, outcome }, n);
        }
      },
    });
    const bounds = this.#bounds;
    /** The duration histogram, read from the tallies: prom-client formats it, the hook only counts. */
    class TalliedHistogram extends Histogram<'tool'> {
      getForPromString(): Promise<MetricObjectWithValues<MetricValueWithName<'tool'>>> {
        const values: MetricValueWithName<'tool'>[] = [];
        for (const [tool, tally] of tallies) {
          let cumulative = 0;
          for (let i = 0; i <= bounds.length; i++) {
            cumulative += tally.buckets[i]!;
            const le = i < bounds.length ? bounds[i]! : '+Inf';
            // `le` is the histogram's own label, beside the declared `tool`.
            const labels = { le, tool } as LabelValues<'tool'>;
            values.push({ metricName: `${DURATION_SERIES}_bucket`, labels, value: cumulative });
          }
          values.push({ metricName: `${DURATION_SERIES}_sum`, labels: { tool }, value: tally.sum });
          values.push({ metricName: `${DURATION_SERIES}_count`, labels: { tool }, value: tally.count });
        }
        return Promise.resolve({
          name: DURATION_SERIES,
          help: DURATION_HELP,
          type: HISTOGRAM_TYPE,
          aggregator: 'sum',
          values,
          // Part of the declared type only; the registry never calls it on a result.
          collect: () => undefined,
        });
      }

      override get(): Promise<MetricObjectWithValues<MetricValueWithName<'tool'>>> {
        return this.getForPromString();
      }
    }
    new TalliedHistogram({
      name: DURATION_SERIES,
      help: DURATION_HELP,
      labelNames: ['tool'],
      buckets: [...bounds],
      registers,
    });
    const inFlight: Gauge = new Gauge({
      name: 'toolbus_tool_calls_in_flight',
      help: 'Tool calls running or waiting for a slot now.',
      registers,
      collect: () => inFlight.set(sum(this.#toolSets, (count) => count())),
    });
    const requests: Counter<'service' | 'outcome'> = new Counter({
      name: 'toolbus_service_requests_total',
      help: "Requests a tool service answered (or dropped), by service id and outcome ('ok' or the wire error type).",
      labelNames: ['service', 'outcome'],
      registers,
      collect: () => this.#countRequests(requests),
    });
    const queueDepth: Gauge<'service'> = new Gauge({
      name: 'toolbus_service_queue_depth',
      help: 'Requests waiting for a free slot of a tool service now, by service id.',
      labelNames: ['service'],
      registers,
      collect: () => {
        queueDepth.reset();
        for (const service of this.#currentServices()) {
          queueDepth.inc({ service: service.id }, readStats(service)?.queued ?? 0);
        }
      },
    });
    const tools: Gauge = new Gauge({
      name: 'toolbus_registry_tools',
      help: 'Tools in the live tool set of the registry.',
      registers,
      collect: () => tools.set(sum(this.#registries, (r) => r.tools.list().length)),
    });
    const problems: Gauge<'severity'> = new Gauge({
      name: 'toolbus_registry_problems',
      help: 'Problems the registry reports now (skipped items, warnings), by severity.',
      labelNames: ['severity'],
      registers,
      collect: () => {
        const all = [...this.#registries].flatMap((r) => r.problems());
        const errors = all.filter((p) => p.severity !== 'warning').length;
        problems.set({ severity: 'error' }, errors);
        problems.set({ severity: 'warning' }, all.length - errors);
      },
    });
    const announced: Gauge<'service'> = new Gauge({
      name: 'toolbus_announced_instances',
      help: 'Live instances of each self-announcing tool service, by service id.',
      labelNames: ['service'],
      registers,
      collect: () => {
        announced.reset();
        for (const registry of this.#registries) {
          for (const [service, count] of registry.announcedInstances()) announced.inc({ service }, count);
        }
      },
    });
    const connected: Gauge = new Gauge({
      name: 'toolbus_bus_connected',
      help: 'Whether the message bus is connected to its broker (1) or not (0); an embedded bus is 1.',
      registers,
      // Several buses: 1 only while every one is connected.
      collect: () => connected.set([...this.#buses].every((bus) => bus.connected !== false) ? 1 : 0),
    });
    const tokens: Counter<'model' | 'kind'> = new Counter({
      name: 'toolbus_model_tokens_total',
      help: "Tokens the model clients reported, by model and kind ('input' prompt, 'output' completion).",
      labelNames: ['model', 'kind'],
      registers,
      collect: () => this.#countTokens(tokens),
    });
    if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: registry });
    return registry;
  }

  /**
   * Hooks that count every finished call of a `ToolSet` (pass them in `ToolSetOptions.hooks`, or a
   * registry's `toolSetOptions.hooks`). A call to an unknown name counts under {@link UNKNOWN_TOOL_LABEL}.
   */
  toolSetHooks(): ToolSetHooks {
    return { onResult: (event: ToolResultEvent) => this.#record(event) };
  }

  /**
   * Reads `toolbus_tool_calls_in_flight` from a set's running and waiting calls. For a `LiveToolSet`,
   * the sets it swapped out count too until their calls have finished.
   */
  observeToolSet(tools: ToolSet | LiveToolSet): Unobserve {
    let count: () => number;
    let stop: () => void = () => undefined;
    if (tools instanceof LiveToolSet) {
      const draining = new Set<ToolSet>();
      let last = tools.current;
      stop = tools.onChange((set) => {
        if (set !== last) draining.add(last);
        last = set;
      });
      count = () => {
        const current = tools.current;
        let n = busy(current);
        for (const set of draining) {
          const m = set === current ? 0 : busy(set);
          if (m === 0) draining.delete(set);
          else n += m;
        }
        return n;
      };
    } else {
      count = () => busy(tools);
    }
    this.#toolSets.add(count);
    return () => {
      stop();
      this.#toolSets.delete(count);
    };
  }

  /**
   * Reads the request counters and queue depth of tool services from their `stats()`. `services` is
   * called at each scrape, so it can follow reloads; replicas sharing an id add up.
   */
  observeServices(services: () => Iterable<ObservedService>): Unobserve {
    this.#services.add(services);
    return () => void this.#services.delete(services);
  }

  /** Reads the live tool count, the problems and the announced instances of a registry. */
  observeRegistry(registry: ObservedRegistry): Unobserve {
    this.#registries.add(registry);
    return () => void this.#registries.delete(registry);
  }

  /** Reads `toolbus_bus_connected` from `bus.connected` (a bus that does not say counts as connected). */
  observeBus(bus: MessageBus): Unobserve {
    this.#buses.add(bus);
    return () => void this.#buses.delete(bus);
  }

  /**
   * Counts a model client's tokens from its `totalUsage()` under the `model` label `name` (one label
   * value per client: a model name, never anything per request).
   */
  observeModel(name: string, model: Pick<ChatCompletionClient, 'totalUsage'>): Unobserve {
    this.#models.set(model, { name, last: { promptTokens: 0, completionTokens: 0 } });
    return () => void this.#models.delete(model);
  }

  /** Collects every series now, in the Prometheus text format. */
  async scrape(): Promise<MetricsExposition> {
    const registry = await this.#load();
    const body = await registry.metrics();
    return { contentType: registry.contentType, body };
  }

  #record(event: ToolResultEvent): void {
    const outcome = outcomeOf(event.result);
    const tool = outcome === 'unknown-tool' ? UNKNOWN_TOOL_LABEL : event.name;
    let tally = this.#tallies.get(tool);
    if (tally === undefined) {
      tally = {
        outcomes: new Map(),
        buckets: new Array<number>(this.#bounds.length + 1).fill(0),
        sum: 0,
        count: 0,
      };
      this.#tallies.set(tool, tally);
    }
    tally.outcomes.set(outcome, (tally.outcomes.get(outcome) ?? 0) + 1);
    const seconds = event.durationMs / 1000;
    const bounds = this.#bounds;
    // Most calls are short: the scan from the smallest bound ends early.
    let i = 0;
    while (i < bounds.length && seconds > bounds[i]!) i++;
    tally.buckets[i]! += 1;
    tally.sum += seconds;
    tally.count += 1;
  }

  *#currentServices(): Iterable<ObservedService> {
    for (const list of this.#services) {
      try {
        yield* list();
      } catch {
        // A source that cannot list its services now is left out of this scrape.
      }
    }
  }

  #countRequests(counter: Counter<'service' | 'outcome'>): void {
    for (const service of this.#currentServices()) {
      const stats = readStats(service);
      if (stats === undefined) continue;
      const last = this.#seen.get(service) ?? {};
      for (const [field, outcome] of SERVICE_OUTCOMES) {
        const grew = (stats[field] ?? 0) - (last[field] ?? 0);
        // 'ok' always, so a service shows up before its first request.
        if (grew > 0 || outcome === 'ok') counter.inc({ service: service.id, outcome }, Math.max(0, grew));
      }
      this.#seen.set(service, stats);
    }
  }

  #countTokens(counter: Counter<'model' | 'kind'>): void {
    for (const [model, entry] of this.#models) {
      let usage: RequestUsage;
      try {
        usage = model.totalUsage();
      } catch {
        continue;
      }
      counter.inc(
        { model: entry.name, kind: 'input' },
        Math.max(0, usage.promptTokens - entry.last.promptTokens),
      );
      counter.inc(
        { model: entry.name, kind: 'output' },
        Math.max(0, usage.completionTokens - entry.last.completionTokens),
      );
      entry.last = { promptTokens: usage.promptTokens, completionTokens: usage.completionTokens };
    }
  }
}

/** 'ok', or the error code of a failed call ('tool-error' when it has none). */
function outcomeOf(result: ToolResult): string {
  if (!result.isError) return 'ok';
  // A code from another process (a remote error) is checked at run time: only short code-like text.
  const code: unknown = result.error?.code;
  return typeof code === 'string' && /^[a-z][a-z-]{0,39}$/.test(code) ? code : 'tool-error';
}

/** Calls of a set running or waiting for a slot. */
function busy(set: ToolSet): number {
  return set.active + set.waiting;
}

/** A service's counters as numbers, or undefined when it has no `stats()` (or it throws). */
function readStats(service: ObservedService): Snapshot | undefined {
  if (typeof service.stats !== 'function') return undefined;
  try {
    const stats = service.stats();
    const out: Snapshot = {};
    for (const [field, value] of Object.entries(stats)) {
      if (typeof value === 'number' && Number.isFinite(value))
        out[field as keyof DynamicToolServiceStats] = value;
    }
    return out;
  } catch {
    return undefined;
  }
}

function sum<T>(items: Iterable<T>, value: (item: T) => number): number {
  let total = 0;
  for (const item of items) total += value(item);
  return total;
}
