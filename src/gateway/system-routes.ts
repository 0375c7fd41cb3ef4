/**
 * @module `GET /api/v1/system` and `GET /api/v1/services`: the system around the gateway, for the web
 * console. What only the host knows (its version, bus, store, the registry's services) comes from
 * {@link GatewayInspector}; the gateway adds its own counts, readiness and call rates.
 */
import type { AccessPolicy } from '../policy/index.js';
import {
  LIVE_CALL_BUCKET_MS,
  LIVE_CALL_BUCKETS,
  type LiveCallFeed,
  type LiveCallRates,
} from '../observability/index.js';
import type { ToolProvider } from '../tools/index.js';
import type { GatewayConfigCheck } from './config-routes.js';
import { HttpError, sendJson } from './http-error.js';
import { redactMachinePaths } from './redact-paths.js';
import type { ReadinessReport } from './ready-route.js';
import type { RouteContext } from './route-context.js';
import { requirePermission } from './route-access.js';
import type { GatewayToolOrigin } from './tool-detail.js';
import type { GatewayProblem } from './tool-routes.js';

/** What `GET /api/v1/system` tells of the host, besides what the gateway knows itself. */
export interface GatewaySystemInfo {
  /** The toolbus version, e.g. `0.1.0`. */
  version: string;
  /** The message bus: its kind (`memory`, `nats`), a description for a person, whether it is connected. */
  bus: { kind: string; description: string; connected: boolean };
  /** The config store, e.g. `{ description: 'SQLite at .toolbus/config.db' }`. */
  store: { description: string };
}

/** A tool service as `GET /api/v1/services` lists it. */
export interface GatewayService {
  id: string;
  /** The descriptor's queues, config params and delivery; absent when the descriptor does not parse. */
  requestQueue?: string;
  responseQueue?: string;
  configParams?: { name: string; required: boolean }[];
  delivery?: string;
  /** `config` (a `tool-service` item) or `announced` (it announces itself, with no item). */
  source: 'config' | 'announced';
  /** Its live announced instances and when each was last heard from (epoch ms). */
  instances: { id: string; lastSeen: number }[];
  /** The live tools that call it. */
  tools: string[];
}

/**
 * What the host of a gateway (e.g. `toolbus up`) tells it about the system around it, for the web
 * console's routes. Each function is called per request, so answers stay current.
 */
export interface GatewayInspector {
  /** The host's version, bus and store, for `GET /api/v1/system`. */
  system(): GatewaySystemInfo;
  /** The tool services, for `GET /api/v1/services` (their tools filtered by the caller's policy). */
  services(): readonly GatewayService[];
  /** Where tool `name` comes from, for `GET /api/v1/tools?detail=1`. @default every tool is `code` */
  toolOrigin?(name: string): GatewayToolOrigin | undefined;
  /**
   * More checks for `POST /api/v1/config/{type}/{key}/check`, besides the gateway's own allowlist
   * check: e.g. what `toolbus config put` checks (descriptor parsing, the service lookup). @default none
   */
  checkConfig?: GatewayConfigCheck;
}

/** What the system routes need of the gateway. */
export interface SystemRouteOptions {
  inspector: GatewayInspector | undefined;
  policy: AccessPolicy;
  tools: ToolProvider;
  agent: boolean;
  problems: (() => readonly GatewayProblem[]) | undefined;
  liveCalls: LiveCallFeed | undefined;
  /** What `GET /api/v1/ready` answers a caller with the token. */
  readiness: () => Promise<ReadinessReport>;
  /** When the gateway was created, epoch ms. */
  startedAt: number;
}

function inspectorOf(options: SystemRouteOptions): GatewayInspector {
  if (options.inspector) return options.inspector;
  throw new HttpError(404, 'not-found', 'this gateway was given no system inspector (option inspect)');
}

/** `GET /api/v1/system`: version, uptime, bus, store, agent, counts, readiness and call rates. */
export async function handleSystem(ctx: RouteContext, options: SystemRouteOptions): Promise<void> {
  requirePermission(ctx, options.policy, 'read-tools', 'read the system state');
  const inspector = inspectorOf(options);
  const { version, bus, store } = inspector.system();
  const ready = await options.readiness();
  sendJson(
    ctx.res,
    200,
    {
      version,
      uptimeMs: Date.now() - options.startedAt,
      // A store file outside the working folder is shown by its name only, as in error answers.
      bus: { ...bus, description: redactMachinePaths(bus.description) },
      store: { ...store, description: redactMachinePaths(store.description) },
      agent: options.agent,
      counts: {
        tools: options.tools.list().length,
        services: inspector.services().length,
        problems: options.problems?.().length ?? 0,
        callsInFlight: options.liveCalls?.inFlight ?? 0,
      },
      ready,
      rates: options.liveCalls?.rates() ?? quietRates(),
    },
    ctx.headers,
  );
}

/** `GET /api/v1/services`: every tool service, its instances and (of those the caller may see) its tools. */
export function handleServices(ctx: RouteContext, options: SystemRouteOptions): void {
  const principal = requirePermission(ctx, options.policy, 'read-tools', 'list tool services');
  const services = inspectorOf(options)
    .services()
    .map((service) => ({
      ...service,
      tools: service.tools.filter((name) => options.policy.allows(principal, name)),
    }));
  sendJson(ctx.res, 200, { services }, ctx.headers);
}

/** The rates of a gateway with no live-call feed: empty buckets ending now. */
function quietRates(): LiveCallRates {
  const current = Math.floor(Date.now() / LIVE_CALL_BUCKET_MS);
  const points = Array.from({ length: LIVE_CALL_BUCKETS }, (_, i) => ({
    at: (current - LIVE_CALL_BUCKETS + 1 + i) * LIVE_CALL_BUCKET_MS,
    calls: 0,
    errors: 0,
  }));
  return { bucketMs: LIVE_CALL_BUCKET_MS, points };
}
