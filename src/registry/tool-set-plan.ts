/**
 * @module The registry's decisions, with no timers, stores or factories: which tools to build from the
 * config and the announced services, and, from their build results and the previous builds, the new
 * tool list with its problems (config wins over announcements, names are unique, a bad edit keeps the
 * last good version, what to release).
 */
import type { JsonObject, JsonValue } from '../schema/index.js';
import { parseToolServiceDescriptor } from '../services/index.js';
import type { Tool } from '../tools/index.js';
import { problemOf } from './registry-errors.js';
import type { RegistryProblem } from './tool-type.js';

/** Reads one config item (or an item standing in for one) by type and key; undefined when absent. */
export type Lookup = (type: string, key: string) => JsonValue | undefined;

/** What the plan reads of the config: the registry's `ConfigMirror`, or a fixed copy in tests. */
export interface ConfigSnapshot {
  /** The value of one item, or undefined. */
  get(type: string, key: string): JsonValue | undefined;
  /** The items of one type as `[key, value]`, in any order. */
  entries(type: string): Iterable<readonly [string, JsonValue]>;
}

/** One announced service: its descriptor and its tools by name, merged over its live instances. */
export interface AnnouncedService {
  readonly service: JsonObject;
  readonly tools: ReadonlyMap<string, JsonObject>;
}

/** The announced services by service id. */
export type AnnouncedServices = ReadonlyMap<string, AnnouncedService>;

/** One tool to build: its item (or announcement) and how its factory looks up other items. */
export interface ToolSource {
  /** Where it is reported and its build kept: `tool/<key>` or `announced/<service>/<name>`. */
  source: string;
  /** The key its factory sees (`ctx.key`): the item's key, or the announced tool's name. */
  key: string;
  descriptor: JsonValue;
  lookup: Lookup;
  /** For an announced tool, the name it was announced under (a config tool of that name wins). */
  announcedName?: string | undefined;
}

/** What a factory's `ctx.lookup` returned for one item, kept to tell whether a rebuild is needed. */
export interface RecordedLookup {
  type: string;
  key: string;
  /** JSON of the value (undefined: the item was absent). */
  json: string | undefined;
}

/** A tool built from a {@link ToolSource}, with what it depended on. */
export interface BuiltTool {
  descriptorJson: string;
  /** `type/key` → what lookup returned. */
  lookups: Map<string, RecordedLookup>;
  tool: Tool;
  warnings: string[];
  /** Aborted (the tool's `ctx.signal`) when the tool leaves the registry. */
  controller: AbortController;
}

/** How one build ended: the tool, or what its factory (or the allowlist, or the timeout) threw. */
export type BuildResult = { built: BuiltTool } | { error: unknown };

/** What {@link planToolSet} decided. */
export interface ToolSetPlan {
  /** The tools of the new set, in order. */
  tools: Tool[];
  /** The builds the new set keeps, by source (the `previous` of the next plan). */
  built: Map<string, BuiltTool>;
  /** Everything wrong with the config's tools and services, in the order found. */
  problems: RegistryProblem[];
  /** Fresh builds of announced tools outvoted by config: nothing uses them, so release them. */
  unused: BuiltTool[];
  /** Sources of the outvoted announced tools: a build of theirs still running is not wanted. */
  outvoted: string[];
  /** Builds of `previous` the new set no longer keeps: release them once it is live. */
  retired: BuiltTool[];
}

/**
 * The lookup of config tools: the config item, or for `tool-service` an announced service of that id
 * when the config has none (a config tool may use an announced service). Reads both when called.
 */
export function configLookup(config: ConfigSnapshot, announced: () => AnnouncedServices): Lookup {
  return (type, key) => {
    const value = config.get(type, key);
    if (value !== undefined || type !== 'tool-service') return value;
    return announced().get(key)?.service;
  };
}

/**
 * The sources of announced services already made, by service entry: reused while an entry is unchanged
 * (the announcement tracker replaces an entry when it changes), so an unchanged service's tools keep
 * the same descriptor objects from one rebuild to the next. Only valid for one config and one
 * `announced` function.
 */
export type AnnouncedSourceCache = WeakMap<AnnouncedService, readonly ToolSource[]>;

/**
 * The tools to build, in the order they are added: every `tool` item by key, then every announced tool
 * by service id and name. An announced tool looks up its own service first (announced tools always
 * use their own service), then the config.
 */
export function toolSources(
  config: ConfigSnapshot,
  announced: () => AnnouncedServices,
  cache?: AnnouncedSourceCache,
): ToolSource[] {
  return [...eachToolSource(config, announced, cache)];
}

/**
 * {@link toolSources} one at a time, so that a caller going through thousands of them can pause in
 * between. The items and services are the ones there at the first `next()`.
 */
export function* eachToolSource(
  config: ConfigSnapshot,
  announced: () => AnnouncedServices,
  cache: AnnouncedSourceCache = new WeakMap(),
): Generator<ToolSource, void, undefined> {
  const lookup = configLookup(config, announced);
  const services = sorted(announced());
  for (const [key, descriptor] of sorted(config.entries('tool'))) {
    yield { source: `tool/${key}`, key, descriptor, lookup };
  }
  for (const [serviceId, entry] of services) {
    let sources = cache.get(entry);
    if (!sources) cache.set(entry, (sources = announcedSources(serviceId, entry, lookup)));
    yield* sources;
  }
}

function announcedSources(serviceId: string, entry: AnnouncedService, lookup: Lookup): ToolSource[] {
  const own: Lookup = (type, key) =>
    type === 'tool-service' && key === serviceId ? entry.service : lookup(type, key);
  return sorted(entry.tools).map(([name, descriptor]) => ({
    source: `announced/${serviceId}/${name}`,
    key: name,
    descriptor: { type: 'tool-service', service: serviceId, ...descriptor },
    lookup: own,
    announcedName: name,
  }));
}

/**
 * Decides the new tool set from the build results (one per {@link toolSources} entry, in that order)
 * and the builds of the current set.
 *
 * - Every `tool-service` item is checked, so a bad one is reported even if no tool uses it.
 * - Tools are added in order and the first of a name wins; later ones are reported (an error for
 *   config, a warning for announced tools).
 * - An announced tool named like a config tool is left out with a warning: config wins.
 * - A failed build keeps the previous build of that source live (and says so), unless an item that
 *   build looked up has since gone: a deleted dependency is a deliberate removal.
 */
export function planToolSet(
  config: ConfigSnapshot,
  results: readonly (ToolSource & { result: BuildResult })[],
  previous: ReadonlyMap<string, BuiltTool>,
): ToolSetPlan {
  const steps = planToolSetSteps(config, results, previous);
  let step = steps.next();
  while (!step.done) step = steps.next();
  return step.value;
}

/** How many results (or previous builds) {@link planToolSetSteps} goes through between two pauses. */
const PLAN_STEP = 64;

/**
 * {@link planToolSet} in steps: it pauses every {@link PLAN_STEP} results and previous builds (a pause
 * per item cost more than the item: about half of a rebuild over 1,000 unchanged tools), and returns
 * the plan, so that a caller deciding over thousands of tools can let other work run in between.
 */
export function* planToolSetSteps(
  config: ConfigSnapshot,
  results: readonly (ToolSource & { result: BuildResult })[],
  previous: ReadonlyMap<string, BuiltTool>,
): Generator<void, ToolSetPlan, undefined> {
  const plan: ToolSetPlan = {
    tools: [],
    built: new Map(),
    problems: toolServiceProblems(config),
    unused: [],
    outvoted: [],
    retired: [],
  };
  const owners = new Map<string, string>(); // tool name → source
  const add = (source: string, built: BuiltTool): void => {
    plan.built.set(source, built);
    for (const message of built.warnings) plan.problems.push({ key: source, message, severity: 'warning' });
    const owner = owners.get(built.tool.name);
    if (owner !== undefined) {
      plan.problems.push({
        key: source,
        message: `tool name '${built.tool.name}' is already used by ${owner}; this one is left out (names must be unique)`,
        severity: source.startsWith('announced/') ? 'warning' : 'error',
      });
      return;
    }
    owners.set(built.tool.name, source);
    plan.tools.push(built.tool);
  };

  let count = 0;
  for (const { source, lookup, result, announcedName } of results) {
    if (++count % PLAN_STEP === 0) yield;
    const owner = announcedName === undefined ? undefined : owners.get(announcedName);
    if (owner !== undefined && !owner.startsWith('announced/')) {
      // Built for nothing: release it, unless it is the one already live (retired below).
      if ('built' in result && previous.get(source) !== result.built) plan.unused.push(result.built);
      plan.outvoted.push(source);
      plan.problems.push({
        key: source,
        message: `config ${owner} defines a tool named '${announcedName}' too; config wins over announcements, so the announced one is left out`,
        severity: 'warning',
      });
      continue;
    }
    if ('built' in result) {
      add(source, result.built);
      continue;
    }
    const problem = problemOf(source, result.error);
    const last = previous.get(source);
    const usable =
      last !== undefined &&
      [...last.lookups.values()].every((l) => l.json === undefined || lookup(l.type, l.key) !== undefined);
    if (usable) {
      problem.message += `; the last good version of tool '${last.tool.name}' stays live until this is fixed`;
    }
    plan.problems.push(problem);
    if (usable) add(source, last);
  }
  for (const [source, built] of previous) {
    if (++count % PLAN_STEP === 0) yield;
    if (plan.built.get(source) !== built) plan.retired.push(built);
  }
  return plan;
}

/** Problems of the `tool-service` items themselves, by key. */
function toolServiceProblems(config: ConfigSnapshot): RegistryProblem[] {
  const problems: RegistryProblem[] = [];
  for (const [key, value] of sorted(config.entries('tool-service'))) {
    try {
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
  return problems;
}

function sorted<V>(entries: Iterable<readonly [string, V]>): [string, V][] {
  return Array.from(entries, ([key, value]): [string, V] => [key, value]).sort(([a], [b]) =>
    a < b ? -1 : a > b ? 1 : 0,
  );
}
