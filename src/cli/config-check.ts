/**
 * @module What `toolbus config put` tells a user about an item the registry would skip: the two seed
 * levels (`tool-service` and `tool-service` tools) checked as the registry checks them, so a mistake is
 * seen when the item is written, not later in `toolbus up`'s problem list.
 */
import { MemoryBus } from '../bus/index.js';
import { didYouMean } from '../errors/index.js';
import { importLeaf } from './import-leaf.js';
import type { ConfigStore } from '../config/index.js';
import type { JsonObject, JsonValue } from '../schema/index.js';
import { PROFILE_CONFIG_TYPE, parseToolProfile } from '../tools/index.js';
import { RESOURCE_CONFIG_TYPE, parseResourceItem } from '../registry/index.js';
import {
  PRINCIPAL_CONFIG_TYPE,
  QUOTA_CONFIG_TYPE,
  ROLE_CONFIG_TYPE,
  Role,
  decodePrincipalItem,
  decodeQuotaItem,
  decodeRoleItem,
} from '../policy/index.js';
import {
  ToolServiceClientCache,
  createToolServiceTool,
  parseToolServiceDescriptor,
  parseToolServiceToolDescriptor,
} from '../services/index.js';

/** The tool types a registry wired by the CLI builds: the registry's own and the CLI's (tool-types.ts). */
const TOOL_TYPES = ['tool-service', 'text-completion', 'prompt', 'function', 'http', 'mcp-tool'];

/** One finding of {@link checkConfigItem}. */
export interface ConfigCheckFinding {
  /** True when the registry skips the item (an error); false for a warning or a note. */
  skipped: boolean;
  message: string;
}

/**
 * Checks a `tool-service` item, or a `tool` item: its type, and for `type: "tool-service"` its
 * descriptor against its service item, when there is one. `principal`, `role` and `quota` items are
 * read as the gateway's access policy reads them, `resource` items as the registry reads them, and an
 * `mcp` item with `oauth` as the MCP client reads it (a secret written into it is refused). Other types
 * are not checked here.
 * @returns What is wrong and what is expected; empty when nothing was found.
 */
export async function checkConfigItem(
  store: ConfigStore,
  type: string,
  key: string,
  value: JsonValue,
): Promise<ConfigCheckFinding[]> {
  try {
    if (type === 'tool-service') {
      if (!isObject(value)) throw new Error('a tool-service item must be a JSON object');
      parseToolServiceDescriptor({ id: key, ...value });
      return await checkToolsOfService(store, key, value);
    }
    if (type === RESOURCE_CONFIG_TYPE) {
      const item = parseResourceItem(key, value);
      if (item.service === undefined || (await store.get('tool-service', item.service)) !== undefined)
        return [];
      return [
        {
          skipped: false,
          message:
            `there is no item 'tool-service/${item.service}' yet; the resource is served once it is added ` +
            '(or once that service announces itself)',
        },
      ];
    }
    if (type === PROFILE_CONFIG_TYPE) {
      parseToolProfile(value, `config '${type}/${key}'`);
      return [];
    }
    if (type === PRINCIPAL_CONFIG_TYPE) {
      decodePrincipalItem(key, value);
      return [];
    }
    if (type === ROLE_CONFIG_TYPE) {
      decodeRoleItem(key, value);
      const roles: string[] = Object.values(Role);
      if (roles.includes(key)) return [];
      // A role no principal can hold: stored (roles may come later), but likely a typo.
      return [
        {
          skipped: false,
          message: `'${key}' is not a role${didYouMean(key, roles)}, so it applies to no principal; roles are ${roles.join(', ')}`,
        },
      ];
    }
    if (type === QUOTA_CONFIG_TYPE) {
      decodeQuotaItem(key, value);
      return [];
    }
    if (type === 'mcp' && isObject(value) && value['oauth'] !== undefined) {
      // A secret written into the item itself must never be stored: check the oauth object now.
      const { parseMcpConfig } = await importLeaf('mcp', () => import('../adapters/mcp/index.js'));
      parseMcpConfig(key, value, { readSecrets: false });
      return [];
    }
    if (type !== 'tool') return [];
    if (!isObject(value) || typeof value['type'] !== 'string' || value['type'] === '') {
      throw new Error(
        `a tool item must be a JSON object whose 'type' names a tool type (${TOOL_TYPES.join(', ')})`,
      );
    }
    const toolType = value['type'];
    if (!TOOL_TYPES.includes(toolType)) {
      throw new Error(
        `unknown tool type '${toolType}'${didYouMean(toolType, TOOL_TYPES)}; known types: ${TOOL_TYPES.join(', ')}`,
      );
    }
    if (toolType !== 'tool-service') return [];
    const tool = value['name'] === undefined ? { ...value, name: key } : value;
    const { service: serviceId } = parseToolServiceToolDescriptor(tool);
    const service = (await store.get('tool-service', serviceId))?.value;
    if (service === undefined) {
      return [
        {
          skipped: false,
          message:
            `there is no item 'tool-service/${serviceId}' yet; the tool goes live once it is added ` +
            '(or once that service announces itself)',
        },
      ];
    }
    if (!isObject(service)) return []; // the service item itself is reported when it is written
    const { warnings } = await buildAgainst(tool, serviceId, service);
    return warnings.map((message) => ({ skipped: false, message }));
  } catch (error) {
    return [{ skipped: true, message: messageOf(error) }];
  }
}

/**
 * The `tool` items of type `tool-service` that use service `serviceId`: what deleting it takes out of
 * the registry.
 */
export async function toolsUsingService(store: ConfigStore, serviceId: string): Promise<string[]> {
  return (await store.list('tool'))
    .filter(
      (i) => isObject(i.value) && i.value['type'] === 'tool-service' && i.value['service'] === serviceId,
    )
    .map((i) => `tool/${i.key}`);
}

/** A changed service can break the tools already using it (e.g. a new required config param). */
async function checkToolsOfService(
  store: ConfigStore,
  serviceId: string,
  service: JsonObject,
): Promise<ConfigCheckFinding[]> {
  const findings: ConfigCheckFinding[] = [];
  for (const item of await store.list('tool')) {
    const tool = item.value;
    if (!isObject(tool) || tool['type'] !== 'tool-service' || tool['service'] !== serviceId) continue;
    try {
      await buildAgainst(tool['name'] === undefined ? { ...tool, name: item.key } : tool, serviceId, service);
    } catch (error) {
      findings.push({
        skipped: false,
        message:
          `tool/${item.key}, which uses this service, will not go live with it: ${messageOf(error)} ` +
          '(a running registry keeps its last good version)',
      });
    }
  }
  return findings;
}

/** Builds the tool as the registry would, on a throwaway bus; throws what the registry would report. */
async function buildAgainst(
  tool: JsonObject,
  serviceId: string,
  service: JsonObject,
): Promise<{ warnings: string[] }> {
  const bus = new MemoryBus();
  const clients = new ToolServiceClientCache(bus);
  try {
    return createToolServiceTool({ clients, service: { ...service, id: serviceId }, tool });
  } finally {
    await clients.close();
    await bus.close();
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function isObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
