/**
 * @module What `toolbus up` tells its gateway about the system around it (`GatewayOptions.inspect`):
 * the version, the bus and the store, the registry's tool services and where each tool comes from,
 * and the checks `toolbus config put` runs, for the web console's routes.
 */
import { readFileSync } from 'node:fs';
import { isAbsolute, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { MessageBus } from '../bus/index.js';
import type { ConfigStore } from '../config/index.js';
import type { GatewayInspector, GatewayService, GatewayToolOrigin } from '../gateway/index.js';
import type { RegistryService, RegistryToolOrigin, ToolRegistry } from '../registry/index.js';
import { checkConfigItem } from './config-check.js';
import { displayNatsUrl } from './nats-security.js';

/** The package's root folder (`src/cli/` and `dist/cli/` both sit two levels below it). */
export const PACKAGE_ROOT = new URL('../../', import.meta.url);

/** The web console's build, `<package root>/dist/console` (written by `npm run build`). */
export function consoleDir(): string {
  return fileURLToPath(new URL('dist/console/', PACKAGE_ROOT));
}

/** The toolbus version of package.json, or `unknown` when it cannot be read. */
export function packageVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('package.json', PACKAGE_ROOT), 'utf8')) as {
      version?: unknown;
    };
    return typeof pkg.version === 'string' ? pkg.version : 'unknown';
  } catch {
    return 'unknown';
  }
}

/** What {@link systemInspector} reads. */
export interface SystemInspectorParts {
  bus: MessageBus;
  /** The bus's NATS URL; undefined for the in-process bus. */
  busNats: string | undefined;
  store: ConfigStore;
  /** The store's SQLite file; undefined for another store (NATS key-value). */
  storeFile: string | undefined;
  /** The store as the banner names it (`sqlite /path`, `nats-kv nats://…`). */
  storeDescription: string;
  registry: ToolRegistry;
  /** Where `toolbus up` runs: a store file inside it is shown relative to it. */
  cwd: string;
}

/** The gateway's inspector for a running system. */
export function systemInspector(parts: SystemInspectorParts): GatewayInspector {
  const version = packageVersion();
  const { bus, registry, store } = parts;
  const busInfo = parts.busNats
    ? { kind: 'nats', description: `NATS at ${displayNatsUrl(parts.busNats)}` }
    : { kind: 'memory', description: 'in-process (memory)' };
  const storeDescription =
    parts.storeFile === undefined
      ? parts.storeDescription.replace(/^nats-kv /, 'NATS key-value at ')
      : `SQLite at ${shownPath(parts.storeFile, parts.cwd)}`;
  return {
    system: () => ({
      version,
      bus: { ...busInfo, connected: bus.connected !== false },
      store: { description: storeDescription },
    }),
    services: () => registry.services().map(gatewayService),
    toolOrigin: (name) => {
      const origin = registry.toolOrigin(name);
      return origin ? gatewayToolOrigin(origin) : undefined;
    },
    checkConfig: (type, key, value) => checkConfigItem(store, type, key, value),
  };
}

function gatewayService(service: RegistryService): GatewayService {
  const d = service.descriptor;
  return {
    id: service.id,
    ...(d
      ? {
          requestQueue: d.requestQueue,
          responseQueue: d.responseQueue,
          configParams: d.configParams.map((p) => ({ name: p.name, required: p.required })),
          delivery: d.delivery,
        }
      : {}),
    source: service.source,
    instances: service.instances,
    tools: service.tools,
  };
}

/** `mcp-tool` items are MCP servers' tools, `function` items code registered with the registry. */
function gatewayToolOrigin(origin: RegistryToolOrigin): GatewayToolOrigin {
  if (origin.key === undefined) return { source: 'announced', problemKey: origin.source };
  const source = origin.type === 'mcp-tool' ? 'mcp' : origin.type === 'function' ? 'code' : 'config';
  return { source, key: origin.source, problemKey: origin.source };
}

/** A path inside `cwd` as relative to it (`.toolbus/config.db`), any other as it is. */
function shownPath(path: string, cwd: string): string {
  const rel = relative(cwd, path);
  return rel !== '' && !rel.startsWith('..') && !isAbsolute(rel) ? rel : path;
}
