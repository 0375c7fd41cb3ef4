/**
 * @module Self-announcing tool services (the seed's "future considerations"): a service publishes its
 * tool-service descriptor and tool descriptors on the `tool-descriptors` topic with an instance id and a
 * time-to-live, repeats them as a heartbeat, says goodbye when it stops, and answers a registry's
 * "announce now" request.
 *
 * Wire format (UTF-8 JSON bodies on topic `tool-descriptors`, kebab-case as the seed's descriptors):
 *
 * ```json
 * { "kind": "announce", "instance": "joke-service-3f2a…", "ttl-ms": 15000,
 *   "service": { "id": "joke-service", "request-queue": "…", "response-queue": "…", "config-params": [] },
 *   "tools": [{ "type": "tool-service", "name": "tell-joke", "service": "joke-service", … }] }
 * { "kind": "goodbye", "instance": "joke-service-3f2a…", "service-id": "joke-service" }
 * { "kind": "announce-request" }
 * ```
 *
 * A receiver keeps an instance's tools until its TTL passes without a new `announce`, or its `goodbye`
 * arrives. Unknown kinds and extra fields are ignored, so the format can grow.
 */
import { randomUUID } from 'node:crypto';
import type { BusMessage, BusSubscription, MessageBus } from '../bus/index.js';
import type { JsonObject, JsonValue } from '../schema/index.js';
import { MAX_TIMER_MS } from '../tools/index.js';
import { ToolbusError } from '../errors/index.js';
import {
  parseToolServiceDescriptor,
  parseToolServiceToolDescriptor,
  type ToolServiceDescriptor,
} from './descriptors.js';

/** The topic announcements travel on. */
export const TOOL_DESCRIPTORS_TOPIC = 'tool-descriptors';
/** How long receivers keep an instance's tools without a heartbeat, by default. */
export const DEFAULT_ANNOUNCE_TTL_MS = 15_000;
/** How often an instance repeats its announcement, by default. */
export const DEFAULT_ANNOUNCE_HEARTBEAT_MS = 5_000;

/** The kinds of announcement messages. */
export const AnnouncementKind = {
  Announce: 'announce',
  Goodbye: 'goodbye',
  AnnounceRequest: 'announce-request',
} as const;
/** One of {@link AnnouncementKind}'s values. */
export type AnnouncementKind = (typeof AnnouncementKind)[keyof typeof AnnouncementKind];

/** A decoded announcement message. */
export type Announcement =
  | {
      kind: 'announce';
      instanceId: string;
      ttlMs: number;
      /** The tool-service descriptor JSON (kebab-case, as in config). */
      service: JsonObject;
      /** The parsed service descriptor. */
      serviceDescriptor: ToolServiceDescriptor;
      /** Tool descriptor JSON, each with `service` set to the service id. */
      tools: JsonObject[];
    }
  | { kind: 'goodbye'; instanceId: string; serviceId: string }
  | { kind: 'announce-request' };

/** Options of {@link startAnnouncer}. */
export interface AnnouncerOptions {
  /** The tool-service descriptor JSON: `{ id, request-queue, response-queue, config-params }`. */
  service: JsonObject;
  /**
   * The tool descriptors JSON (`type: "tool-service"`); `type` and `service` may be left out and are
   * filled in. @default []
   */
  tools?: readonly JsonObject[];
  /** This instance's id. @default `<service id>-<random uuid>` */
  instanceId?: string;
  /** How long receivers keep the tools without a heartbeat (finite, > 0). @default DEFAULT_ANNOUNCE_TTL_MS (15 000) */
  ttlMs?: number;
  /** How often to repeat the announcement; must be below `ttlMs`. @default min(DEFAULT_ANNOUNCE_HEARTBEAT_MS, ttlMs / 3) */
  heartbeatMs?: number;
  /** Called when publishing a heartbeat fails (the announcer keeps going). @default ignore */
  onError?: (error: unknown) => void;
}

/** A running announcer; see {@link startAnnouncer}. */
export interface Announcer {
  readonly instanceId: string;
  /** Publishes the announcement now (besides the heartbeat). */
  announce(): Promise<void>;
  /** Stops the heartbeat and publishes a goodbye. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Announces a tool service and its tools on {@link TOOL_DESCRIPTORS_TOPIC}: once at start, every
 * `heartbeatMs`, and whenever a registry asks; `stop()` says goodbye.
 *
 * Rejects with `invalid-config` when a descriptor is malformed (the message names the field), or a
 * tool names another service.
 *
 * @example
 * ```ts
 * const announcer = await startAnnouncer(bus, {
 *   service: { id: 'joke-service', 'request-queue': 'request:tg:joke', 'response-queue': 'response:tg:joke' },
 *   tools: [{ name: 'tell-joke', description: 'Tell a joke', arguments: [{ name: 'topic', type: 'string' }] }],
 * });
 * // ...
 * await announcer.stop();
 * ```
 */
export async function startAnnouncer(bus: MessageBus, options: AnnouncerOptions): Promise<Announcer> {
  const service = parseToolServiceDescriptor(options.service);
  const tools = (options.tools ?? []).map((tool, index) => {
    const filled: JsonObject = { type: 'tool-service', service: service.id, ...tool };
    if (filled['service'] !== service.id) {
      throw new ToolbusError(
        'invalid-config',
        `announcer of tool service '${service.id}': tools[${index}] names service '${String(filled['service'])}'; ` +
          `an announcer announces the tools of its own service only`,
      );
    }
    parseToolServiceToolDescriptor(filled); // fail now, not in every registry
    return filled;
  });
  const ttlMs = options.ttlMs ?? DEFAULT_ANNOUNCE_TTL_MS;
  const heartbeatMs = options.heartbeatMs ?? Math.min(DEFAULT_ANNOUNCE_HEARTBEAT_MS, Math.floor(ttlMs / 3));
  // An infinite ttlMs would be sent as `null`, which every registry rejects.
  if (!Number.isFinite(ttlMs) || !(ttlMs > 0)) {
    throw new ToolbusError(
      'invalid-config',
      `announcer of tool service '${service.id}': ttlMs (${ttlMs}) must be a finite positive number`,
    );
  }
  if (!(heartbeatMs > 0) || heartbeatMs >= ttlMs) {
    throw new ToolbusError(
      'invalid-config',
      `announcer of tool service '${service.id}': heartbeatMs (${heartbeatMs}) must be > 0 and below ttlMs (${ttlMs})`,
    );
  }
  const instanceId = options.instanceId ?? `${service.id}-${randomUUID()}`;
  const body = JSON.stringify({
    kind: 'announce',
    instance: instanceId,
    'ttl-ms': ttlMs,
    service: options.service,
    tools,
  });
  const onError = options.onError ?? (() => undefined);
  let stopped: Promise<void> | undefined;
  const announce = (): Promise<void> =>
    stopped ? Promise.resolve() : bus.publish(TOOL_DESCRIPTORS_TOPIC, body, { kind: 'announce' });

  const subscription: BusSubscription = await bus.subscribe(TOOL_DESCRIPTORS_TOPIC, (message) => {
    // Every replica's heartbeat reaches every announcer: the `kind` property, when a sender sets it,
    // spares parsing the body of all but the rare announce-request.
    const kind = message.properties['kind'];
    if (kind !== undefined && kind !== 'announce-request') return undefined;
    if (isAnnounceRequest(message)) return announce().catch(onError);
    return undefined;
  });
  // Node runs a longer interval every millisecond instead; a heartbeat that rare is as good as none.
  const timer = setInterval(() => void announce().catch(onError), Math.min(heartbeatMs, MAX_TIMER_MS));
  // The service's own subscriptions keep the process alive; the heartbeat alone should not.
  timer.unref?.();
  try {
    await announce();
  } catch (error) {
    clearInterval(timer);
    await subscription.unsubscribe();
    throw error;
  }
  return {
    instanceId,
    announce,
    stop() {
      stopped ??= (async () => {
        clearInterval(timer);
        await subscription.unsubscribe();
        await bus.publish(
          TOOL_DESCRIPTORS_TOPIC,
          JSON.stringify({ kind: 'goodbye', instance: instanceId, 'service-id': service.id }),
          { kind: 'goodbye' },
        );
      })();
      return stopped;
    },
  };
}

/** Asks every announcer to announce now (a registry does this when it starts). */
export function requestAnnouncements(bus: MessageBus): Promise<void> {
  return bus.publish(TOOL_DESCRIPTORS_TOPIC, JSON.stringify({ kind: 'announce-request' }), {
    kind: 'announce-request',
  });
}

/**
 * Decodes an announcement body.
 * @throws ToolbusError `invalid-request` naming what is wrong (not JSON, unknown kind, bad field).
 */
export function decodeAnnouncement(body: Uint8Array | string): Announcement {
  const text = typeof body === 'string' ? body : new TextDecoder().decode(body);
  let value: JsonValue;
  try {
    value = JSON.parse(text) as JsonValue;
  } catch (error) {
    throw new ToolbusError('invalid-request', `announcement: body is not JSON`, { cause: error });
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) {
    throw new ToolbusError('invalid-request', 'announcement: body must be a JSON object');
  }
  const kind = value['kind'];
  if (kind === 'announce-request') return { kind };
  const instanceId = value['instance'];
  if (typeof instanceId !== 'string' || instanceId === '') {
    throw new ToolbusError('invalid-request', `announcement: 'instance' must be a non-empty string`);
  }
  if (kind === 'goodbye') {
    const serviceId = value['service-id'];
    return { kind, instanceId, serviceId: typeof serviceId === 'string' ? serviceId : '' };
  }
  if (kind !== 'announce') {
    throw new ToolbusError('invalid-request', `announcement: unknown kind ${JSON.stringify(kind)}`);
  }
  const ttlMs = value['ttl-ms'];
  // Finite: JSON's 1e400 parses to Infinity, and registries would keep that instance's tools forever.
  if (typeof ttlMs !== 'number' || !Number.isFinite(ttlMs) || !(ttlMs > 0)) {
    throw new ToolbusError(
      'invalid-request',
      `announcement from '${instanceId}': 'ttl-ms' must be a finite positive number`,
    );
  }
  const service = value['service'];
  if (!service || typeof service !== 'object' || Array.isArray(service)) {
    throw new ToolbusError(
      'invalid-request',
      `announcement from '${instanceId}': 'service' must be an object`,
    );
  }
  let serviceDescriptor: ToolServiceDescriptor;
  try {
    serviceDescriptor = parseToolServiceDescriptor(service);
  } catch (error) {
    throw new ToolbusError(
      'invalid-request',
      `announcement from '${instanceId}': ${(error as Error).message}`,
      { cause: error },
    );
  }
  const rawTools = value['tools'] ?? [];
  if (!Array.isArray(rawTools) || rawTools.some((t) => !t || typeof t !== 'object' || Array.isArray(t))) {
    throw new ToolbusError(
      'invalid-request',
      `announcement from '${instanceId}': 'tools' must be an array of objects`,
    );
  }
  return { kind, instanceId, ttlMs, service, serviceDescriptor, tools: rawTools as JsonObject[] };
}

/**
 * An announce-request is a few bytes: a longer body is some instance's announcement, and any peer may
 * flood the topic with those, so only short bodies are parsed, and only for their `kind`.
 */
const MAX_ANNOUNCE_REQUEST_BYTES = 4096;

function isAnnounceRequest(message: BusMessage): boolean {
  const text = message.text;
  if ((text?.length ?? message.body.byteLength) > MAX_ANNOUNCE_REQUEST_BYTES) return false;
  try {
    const value = JSON.parse(text ?? new TextDecoder().decode(message.body)) as unknown;
    return (value as { kind?: unknown } | null)?.kind === 'announce-request';
  } catch {
    return false;
  }
}

/** The `announce` option of `DynamicToolService`: what the service announces about itself. */
export interface DynamicToolServiceAnnounceOptions {
  /** The tool descriptors to announce (`type` and `service` are filled in). */
  tools: readonly JsonObject[];
  /** The service's `config-params`, as in its descriptor. @default [] */
  configParams?: readonly JsonValue[];
  /** @default DEFAULT_ANNOUNCE_TTL_MS (15 000) */
  ttlMs?: number;
  /** @default min(DEFAULT_ANNOUNCE_HEARTBEAT_MS, ttlMs / 3) */
  heartbeatMs?: number;
  /** @default `<service id>-<random uuid>` */
  instanceId?: string;
  /** Called when a heartbeat cannot be published. @default ignore */
  onError?: (error: unknown) => void;
}

/** Starts the announcer of a `DynamicToolService` from its queues and `announce` option. */
export function startServiceAnnouncer(
  bus: MessageBus,
  service: { id: string; requestQueue: string; responseQueue: string; delivery?: string },
  announce: DynamicToolServiceAnnounceOptions,
): Promise<Announcer> {
  const options: AnnouncerOptions = {
    service: {
      id: service.id,
      'request-queue': service.requestQueue,
      'response-queue': service.responseQueue,
      'config-params': [...(announce.configParams ?? [])],
      // Callers must enqueue, not publish: a durable service says so.
      ...(service.delivery === 'durable' ? { delivery: 'durable' } : {}),
    },
    tools: announce.tools,
  };
  if (announce.ttlMs !== undefined) options.ttlMs = announce.ttlMs;
  if (announce.heartbeatMs !== undefined) options.heartbeatMs = announce.heartbeatMs;
  if (announce.instanceId !== undefined) options.instanceId = announce.instanceId;
  if (announce.onError !== undefined) options.onError = announce.onError;
  return startAnnouncer(bus, options);
}
