/**
 * @module The options of `ToolRegistry`, their defaults, and their checks.
 */
import type { MessageBus } from '../bus/index.js';
import type { ConfigStore } from '../config/index.js';
import type { ChatCompletionClient } from '../models/index.js';
import type { ToolServiceClientCache } from '../services/index.js';
import { MAX_TIMER_MS } from '../tools/index.js';
import { numberOption } from '../errors/index.js';
import type { Tool, ToolSetOptions } from '../tools/index.js';
import { configAllowlistFromEnv, type ConfigAllowlist } from './config-allowlist.js';
import type { ToolTypeFactory } from './tool-type.js';

/** How long the registry waits for more changes before rebuilding the tool set, by default. */
export const DEFAULT_REGISTRY_DEBOUNCE_MS = 25;
/** How long the registry waits before watching the store again after the watch failed, by default. */
export const DEFAULT_REGISTRY_RETRY_MS = 1_000;

/**
 * How long one tool's factory may take (e.g. an `mcp-tool` connecting to its server) before the registry
 * gives up on it for this reload, by default.
 */
export const DEFAULT_REGISTRY_BUILD_TIMEOUT_MS = 30_000;

/**
 * What the registry takes from the `tool-descriptors` topic, at most: any bus peer may announce, so
 * these keep a flood of announcements from stalling the registry or filling its memory. Every field is
 * optional; see {@link DEFAULT_ANNOUNCEMENT_LIMITS}.
 *
 * An announcement over a cap is refused (not kept; an instance already kept stays as it was), counted,
 * and reported once per service in `ToolRegistry.problems()` (key `announced/<service id>`, a warning
 * with code `too-large`); at most 100 services are listed there, the refusals of any others are counted
 * under key `announced`.
 */
export interface AnnouncementLimitsOptions {
  /**
   * The largest announcement body parsed, in bytes; a larger one is dropped unread (counted under key
   * `announced`). @default DEFAULT_ANNOUNCEMENT_LIMITS.maxBytes (262 144, 256 KiB)
   */
  maxBytes?: number;
  /** The most tools one announcement may carry. @default DEFAULT_ANNOUNCEMENT_LIMITS.maxToolsPerAnnouncement (256) */
  maxToolsPerAnnouncement?: number;
  /**
   * The most live instances one service may have; a heartbeat of a kept instance is always taken.
   * @default DEFAULT_ANNOUNCEMENT_LIMITS.maxInstancesPerService (1000)
   */
  maxInstancesPerService?: number;
  /** The most distinct services announced at once. @default DEFAULT_ANNOUNCEMENT_LIMITS.maxServices (10 000) */
  maxServices?: number;
  /**
   * The most distinct announced tools (by service and name) kept at once: each one is built into the
   * tool set. @default DEFAULT_ANNOUNCEMENT_LIMITS.maxTools (10 000)
   */
  maxTools?: number;
  /**
   * The most bytes of announcement bodies kept at once, over every instance: the bound on what
   * announcements hold in memory. @default DEFAULT_ANNOUNCEMENT_LIMITS.maxTotalBytes (67 108 864, 64 MiB)
   */
  maxTotalBytes?: number;
  /**
   * The longest time-to-live taken, in ms: an announcement asking for more is kept, for this long
   * after each heartbeat, and reported (a `ttl-ms` of 1e308 would otherwise never lapse). Non-finite,
   * zero or negative ones are refused as malformed. @default DEFAULT_ANNOUNCEMENT_LIMITS.maxTtlMs (3 600 000, 1 h)
   */
  maxTtlMs?: number;
}

/** The default {@link AnnouncementLimitsOptions}. */
export const DEFAULT_ANNOUNCEMENT_LIMITS: Readonly<Required<AnnouncementLimitsOptions>> = Object.freeze({
  maxBytes: 256 * 1024,
  maxToolsPerAnnouncement: 256,
  maxInstancesPerService: 1_000,
  maxServices: 10_000,
  maxTools: 10_000,
  maxTotalBytes: 64 * 1024 * 1024,
  maxTtlMs: 3_600_000,
});

/** Options of `ToolRegistry`. */
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
  /** Caps on what announcements may make the registry keep. @default DEFAULT_ANNOUNCEMENT_LIMITS */
  announcementLimits?: AnnouncementLimitsOptions;
  /** Options of every ToolSet the registry builds (timeouts, output cap, hooks). @default {} */
  toolSetOptions?: ToolSetOptions;
  /** Clients for `tool-service` tools; share one cache between registries. @default a cache of its own */
  clients?: ToolServiceClientCache;
  /**
   * Changes arriving within this time are applied together. After a costly rebuild (thousands of
   * announced tools) the next one waits longer: 4 times that rebuild's own work, up to 1 s, so a stream
   * of changes cannot keep the registry rebuilding. `refresh()` never waits.
   * @default DEFAULT_REGISTRY_DEBOUNCE_MS (25)
   */
  debounceMs?: number;
  /**
   * Wait before re-watching a failed store; a positive number of ms (the constructor throws
   * `usage` otherwise). @default DEFAULT_REGISTRY_RETRY_MS (1000)
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
   * listed is refused with code `not-allowed` in `ToolRegistry.problems()` and never goes live. Read
   * once, at construction.
   * @default configAllowlistFromEnv(process.env): TOOLBUS_ALLOW_COMMANDS and TOOLBUS_ALLOW_ENV, else none
   */
  allowlist?: ConfigAllowlist;
}

/** The timing and allowlist options of a registry with their defaults applied and checked. */
export interface ResolvedToolRegistryOptions {
  debounceMs: number;
  retryMs: number;
  buildTimeoutMs: number;
  now: () => number;
  /** A copy: a caller changing its arrays later cannot widen what the registry allows. */
  allowlist: Required<ConfigAllowlist>;
  /** Whether the registry listens to announcements (only with a bus). */
  announcements: boolean;
  /** Every cap, defaults applied. */
  announcementLimits: Required<AnnouncementLimitsOptions>;
}

/**
 * Applies the defaults and checks the delays. Throws `usage` naming the option for a delay that would
 * spin or never fire (setTimeout fires NaN, a negative delay or one beyond its maximum after about 1 ms,
 * so such a retryMs re-watched a failing store in a tight loop).
 */
export function resolveToolRegistryOptions(options: ToolRegistryOptions): ResolvedToolRegistryOptions {
  const owner = 'ToolRegistry';
  const max = MAX_TIMER_MS;
  const debounceMs = numberOption(owner, 'debounceMs', options.debounceMs, DEFAULT_REGISTRY_DEBOUNCE_MS, {
    zero: true,
    max,
  });
  const retryMs = numberOption(owner, 'retryMs', options.retryMs, DEFAULT_REGISTRY_RETRY_MS, { max });
  const buildTimeoutMs = numberOption(
    owner,
    'buildTimeoutMs',
    options.buildTimeoutMs,
    DEFAULT_REGISTRY_BUILD_TIMEOUT_MS,
    { infinity: true },
  );
  const allowlist = options.allowlist ?? configAllowlistFromEnv(process.env);
  return {
    debounceMs,
    retryMs,
    buildTimeoutMs,
    now: options.now ?? Date.now,
    allowlist: { commands: [...(allowlist.commands ?? [])], env: [...(allowlist.env ?? [])] },
    announcements: options.bus !== undefined && (options.announcements ?? true),
    announcementLimits: resolveAnnouncementLimits(options.announcementLimits ?? {}),
  };
}

/** Applies the defaults and checks every cap: a positive integer, else `usage` naming the option. */
function resolveAnnouncementLimits(limits: AnnouncementLimitsOptions): Required<AnnouncementLimitsOptions> {
  const owner = 'ToolRegistry';
  const resolved = { ...DEFAULT_ANNOUNCEMENT_LIMITS };
  for (const name of Object.keys(resolved) as (keyof AnnouncementLimitsOptions)[]) {
    resolved[name] = numberOption(owner, `announcementLimits.${name}`, limits[name], resolved[name], {
      integer: true,
    });
  }
  return resolved;
}
