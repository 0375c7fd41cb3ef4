/**
 * @module What the registry has, for a person looking at it (the web console, `toolbus up`'s API):
 * where each live tool comes from, and the tool services with their live instances and the tools that
 * call them. Pure functions over the registry's state, so the registry only hands it over.
 */
import type { JsonValue } from '../schema/index.js';
import { parseToolServiceDescriptor, type ToolServiceDescriptor } from '../services/index.js';
import type { Tool } from '../tools/index.js';
import type { AnnouncedServices, BuiltTool, ConfigSnapshot } from './tool-set-plan.js';

/** Where a live tool of the registry comes from (see `ToolRegistry.toolOrigin`). */
export interface RegistryToolOrigin {
  /**
   * Where the registry keeps its build and reports its problems: `tool/<key>` for a config item,
   * `announced/<service>/<name>` for an announced tool.
   */
  source: string;
  /** The key of its `tool` item; none for an announced tool. */
  key?: string;
  /** Its tool type: `tool-service`, `mcp-tool`, `http`, `function`… */
  type: string;
  /** The tool service it calls, for a `tool-service` tool. */
  service?: string;
}

/** One live instance of an announced service. */
export interface RegistryServiceInstance {
  id: string;
  /** When it last announced itself (or sent a heartbeat), epoch ms. */
  lastSeen: number;
}

/** A tool service the registry knows: a `tool-service` item, an announced service, or both. */
export interface RegistryService {
  id: string;
  /**
   * `config` when a `tool-service` item has this id (config tools then use it), else `announced`.
   */
  source: 'config' | 'announced';
  /** Its descriptor (the item's, else the latest announcement's); undefined when it does not parse. */
  descriptor: ToolServiceDescriptor | undefined;
  /** Its live announced instances (none for a config service that does not announce itself). */
  instances: RegistryServiceInstance[];
  /** The live tools that call it, sorted. */
  tools: string[];
}

/** The live tools' origins by tool name: the builds whose tool is the one live under its name. */
export function toolOrigins(
  built: ReadonlyMap<string, BuiltTool>,
  live: { get(name: string): Tool | undefined },
  config: ConfigSnapshot,
): Map<string, RegistryToolOrigin> {
  const origins = new Map<string, RegistryToolOrigin>();
  for (const [source, { tool }] of built) {
    // A build left out (its name taken first) is kept too; only the live one is the tool's origin.
    if (live.get(tool.name) !== tool) continue;
    origins.set(tool.name, originOf(source, config));
  }
  return origins;
}

function originOf(source: string, config: ConfigSnapshot): RegistryToolOrigin {
  if (source.startsWith('announced/')) {
    const service = source.slice('announced/'.length, source.lastIndexOf('/'));
    return { source, type: 'tool-service', service };
  }
  const key = source.slice('tool/'.length);
  const item = config.get('tool', key);
  const type = isObject(item) && typeof item['type'] === 'string' ? item['type'] : 'unknown';
  const service = isObject(item) && typeof item['service'] === 'string' ? item['service'] : undefined;
  return { source, key, type, ...(type === 'tool-service' && service !== undefined ? { service } : {}) };
}

/** Every tool service of the config and of the announcements, by id. */
export function registryServices(
  config: ConfigSnapshot,
  announced: AnnouncedServices,
  instances: ReadonlyMap<string, RegistryServiceInstance[]>,
  origins: ReadonlyMap<string, RegistryToolOrigin>,
): RegistryService[] {
  const toolsOf = new Map<string, string[]>();
  for (const [name, origin] of origins) {
    if (origin.service === undefined) continue;
    const list = toolsOf.get(origin.service);
    if (list) list.push(name);
    else toolsOf.set(origin.service, [name]);
  }
  const services = new Map<string, RegistryService>();
  const add = (id: string, source: RegistryService['source'], value: JsonValue): void => {
    services.set(id, {
      id,
      source,
      descriptor: descriptorOf(id, value),
      instances: [...(instances.get(id) ?? [])].sort((a, b) => b.lastSeen - a.lastSeen),
      tools: (toolsOf.get(id) ?? []).sort(),
    });
  };
  for (const [id, value] of config.entries('tool-service')) add(id, 'config', value);
  for (const [id, entry] of announced) if (!services.has(id)) add(id, 'announced', entry.service);
  return [...services.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

function descriptorOf(id: string, value: JsonValue): ToolServiceDescriptor | undefined {
  if (!isObject(value)) return undefined;
  try {
    return parseToolServiceDescriptor({ ...value, id });
  } catch {
    return undefined; // the registry's problems say why
  }
}

function isObject(value: JsonValue | undefined): value is { [key: string]: JsonValue } {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
