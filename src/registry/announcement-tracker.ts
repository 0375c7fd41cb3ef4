/**
 * @module `AnnouncementTracker`: the services announcing themselves on the bus's `tool-descriptors`
 * topic, as live instances that last until they say goodbye or their time-to-live lapses.
 *
 * Any bus peer may announce, so every message costs O(log n) at most: an exact repeat of an instance's
 * announcement (a heartbeat) is recognised by its text without parsing it, expiry is a heap, the merged
 * view of a service is recomputed only when one of its instances changed, and what is kept is capped
 * ({@link AnnouncementLimitsOptions}).
 */
import { Buffer } from 'node:buffer';
import type { BusMessage, BusSubscription, MessageBus } from '../bus/index.js';
import type { JsonObject } from '../schema/index.js';
import {
  TOOL_DESCRIPTORS_TOPIC,
  decodeAnnouncement,
  requestAnnouncements,
  type Announcement,
} from '../services/index.js';
import { MAX_TIMER_MS } from '../tools/index.js';
import { ExpiryHeap, type Expiring } from './expiry-heap.js';
import type { AnnouncementLimitsOptions } from './tool-registry-options.js';
import type { AnnouncedService, AnnouncedServices } from './tool-set-plan.js';
import type { RegistryProblem } from './tool-type.js';

/** At most this many distinct malformed announcements are listed in the problems. */
const MAX_MALFORMED_PROBLEMS = 100;
/** At most this many services are listed with what was refused of them; the rest are only counted. */
const MAX_SERVICE_PROBLEMS = 100;

const decoder = new TextDecoder();

/** Options of {@link AnnouncementTracker}; all required (the registry resolves its defaults). */
export interface AnnouncementTrackerOptions {
  /** The clock time-to-live is measured by, in epoch milliseconds. */
  now: () => number;
  /** Stops the expiry timer when it aborts (call {@link AnnouncementTracker.stop} to leave the topic). */
  signal: AbortSignal;
  /**
   * Called when the announced services changed: a new instance or a changed announcement, a goodbye,
   * or an instance whose time-to-live lapsed. Not for a heartbeat that repeats what was announced.
   */
  onChange: () => void;
  /** What is kept at most. */
  limits: Required<AnnouncementLimitsOptions>;
}

/** Why an announcement was refused (or, for `ttl`, kept for less than it asked). */
type Refusal = 'tools-per-announcement' | 'instances' | 'services' | 'tools' | 'bytes' | 'ttl';

interface Instance extends Expiring {
  readonly id: string;
  readonly serviceId: string;
  service: JsonObject;
  tools: JsonObject[];
  /** The body as received: the same text again is a heartbeat, recognised without parsing. */
  text: string;
  bytes: number;
  /** The time-to-live taken (capped at `maxTtlMs`). */
  ttlMs: number;
  /** Orders instances by their latest changed announcement: the latest one wins in {@link services}. */
  seq: number;
}

interface ServiceState {
  readonly instances: Set<Instance>;
  /** How many of its instances announce each tool name: the service's tools are the names counted. */
  readonly toolNames: Map<string, number>;
}

/** What was refused of one service: per reason, how often and the last offending value. */
type ServiceRefusals = Map<Refusal, { count: number; value: number }>;

/**
 * Tracks the live instances of self-announcing services. An `announce` adds or renews an instance until
 * `now() + ttlMs`; a `goodbye` removes it at once; one timer, armed for the earliest expiry, removes
 * the instances that lapsed. A malformed announcement, or one over a cap, is ignored and listed in
 * {@link problems}.
 */
export class AnnouncementTracker {
  readonly #bus: MessageBus;
  readonly #now: () => number;
  readonly #signal: AbortSignal;
  readonly #onChange: () => void;
  readonly #limits: Required<AnnouncementLimitsOptions>;
  /** Live instances by instance id. */
  readonly #instances = new Map<string, Instance>();
  /** Live instances by the text of their latest announcement. */
  readonly #byText = new Map<string, Instance>();
  readonly #services = new Map<string, ServiceState>();
  /** The merged view by service id, current except for the services in {@link #dirty}. */
  readonly #merged = new Map<string, AnnouncedService>();
  readonly #dirty = new Set<string>();
  readonly #expiries = new ExpiryHeap<Instance>();
  #seq = 0;
  #toolCount = 0;
  #totalBytes = 0;

  #requestProblem: RegistryProblem | undefined;
  /** Malformed announcements by message, with how often each came. */
  readonly #malformed = new Map<string, number>();
  #malformedUnlisted = 0;
  #oversized = { count: 0, largest: 0 };
  readonly #refusals = new Map<string, ServiceRefusals>();
  /** Refusals of services beyond {@link MAX_SERVICE_PROBLEMS}, by reason. */
  readonly #unlistedRefusals = new Map<Refusal, number>();

  #subscription: BusSubscription | undefined;
  #expiryTimer: ReturnType<typeof setTimeout> | undefined;
  /** When the armed timer fires (it may fire before the earliest expiry: it then re-arms). */
  #expiryTimerAt = 0;

  constructor(bus: MessageBus, options: AnnouncementTrackerOptions) {
    this.#bus = bus;
    this.#now = options.now;
    this.#signal = options.signal;
    this.#onChange = options.onChange;
    this.#limits = options.limits;
    this.#signal.addEventListener('abort', () => this.#clearExpiry(), { once: true });
  }

  /** Subscribes to the announcement topic. Rejects with the bus's error when that fails. */
  async start(): Promise<void> {
    this.#subscription = await this.#bus.subscribe(TOOL_DESCRIPTORS_TOPIC, (m) => this.#receive(m));
  }

  /**
   * Asks every service to announce now, instead of waiting for their heartbeats. Never rejects: a bus
   * that refuses is listed in {@link problems} (key `announced`, a warning).
   */
  async requestAnnouncements(): Promise<void> {
    await requestAnnouncements(this.#bus).catch((error: unknown) => {
      this.#requestProblem = {
        key: 'announced',
        message: `could not ask services to announce: ${(error as Error).message}`,
        severity: 'warning',
      };
    });
  }

  /** Leaves the announcement topic and forgets what was announced. */
  async stop(): Promise<void> {
    const subscription = this.#subscription;
    this.#subscription = undefined;
    await subscription?.unsubscribe().catch(() => undefined);
    this.#instances.clear();
    this.#byText.clear();
    this.#services.clear();
    this.#merged.clear();
    this.#dirty.clear();
    this.#expiries.clear();
    this.#toolCount = 0;
    this.#totalBytes = 0;
    this.#clearExpiry();
  }

  /**
   * The announced services, merged over their live instances (the latest announcement wins). The same
   * map every time, brought up to date by this call (only the services that changed are merged again);
   * an entry is replaced, never changed, so an entry read earlier stays as it was.
   */
  services(): AnnouncedServices {
    for (const serviceId of this.#dirty) {
      const state = this.#services.get(serviceId);
      if (state) this.#merged.set(serviceId, merge(state));
      else this.#merged.delete(serviceId);
    }
    this.#dirty.clear();
    return this.#merged;
  }

  /** How many live instances each announced service has now, by service id. */
  instanceCounts(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const [serviceId, state] of this.#services) counts.set(serviceId, state.instances.size);
    return counts;
  }

  /**
   * The live instances of each announced service, by service id: each instance's id and when it was
   * last heard from (its latest announcement or heartbeat, epoch ms by the tracker's clock).
   */
  instances(): Map<string, { id: string; lastSeen: number }[]> {
    const out = new Map<string, { id: string; lastSeen: number }[]>();
    for (const [serviceId, state] of this.#services) {
      // A renewal sets `expiresAt` to now + ttl, so that minus the ttl is when it was heard.
      out.set(
        serviceId,
        [...state.instances].map((i) => ({ id: i.id, lastSeen: i.expiresAt - i.ttlMs })),
      );
    }
    return out;
  }

  /** What was wrong with the announcements (malformed, over a cap, a failed request), by key. */
  problems(): RegistryProblem[] {
    const problems: RegistryProblem[] = [];
    if (this.#requestProblem) problems.push({ ...this.#requestProblem });
    for (const [message, count] of this.#malformed) {
      problems.push({
        key: 'announced',
        message: `ignored a malformed announcement: ${message}${count > 1 ? ` (${count} times)` : ''}`,
        severity: 'warning',
      });
    }
    if (this.#malformedUnlisted > 0) {
      problems.push({
        key: 'announced',
        message: `ignored ${this.#malformedUnlisted} more malformed announcements (not listed)`,
        severity: 'warning',
      });
    }
    if (this.#oversized.count > 0) {
      problems.push({
        key: 'announced',
        message:
          `ignored ${announcements(this.#oversized.count)} larger than ${this.#limits.maxBytes} bytes ` +
          `(announcementLimits.maxBytes), unread; the largest had ${this.#oversized.largest} bytes`,
        severity: 'warning',
        code: 'too-large',
      });
    }
    for (const [serviceId, refusals] of this.#refusals) {
      const parts = [...refusals].map(([reason, { count, value }]) => this.#describe(reason, count, value));
      problems.push({
        key: `announced/${serviceId}`,
        message: parts.join('; '),
        severity: 'warning',
        ...(refusals.size > 1 || !refusals.has('ttl') ? { code: 'too-large' } : {}),
      });
    }
    if (this.#unlistedRefusals.size > 0) {
      const parts = [...this.#unlistedRefusals].map(([reason, count]) => `${count} ${reason}`);
      problems.push({
        key: 'announced',
        message:
          `refused announcements of more services than are listed (${MAX_SERVICE_PROBLEMS}), ` +
          `by reason: ${parts.join(', ')}`,
        severity: 'warning',
        code: 'too-large',
      });
    }
    return problems;
  }

  #receive(message: BusMessage): void {
    const text = message.text;
    const bytes =
      text === undefined
        ? message.body.byteLength
        : text.length > this.#limits.maxBytes
          ? text.length // at least this many bytes: too many, without counting them
          : Buffer.byteLength(text);
    if (bytes > this.#limits.maxBytes) {
      this.#oversized.count++;
      this.#oversized.largest = Math.max(this.#oversized.largest, bytes);
      return;
    }
    const body = text ?? decoder.decode(message.body);
    const known = this.#byText.get(body);
    if (known) {
      this.#renew(known);
      return;
    }
    let announcement: Announcement;
    try {
      announcement = decodeAnnouncement(body);
    } catch (error) {
      this.#malformedAnnouncement((error as Error).message);
      return;
    }
    if (announcement.kind === 'announce') {
      this.#announce(announcement, body, bytes);
    } else if (announcement.kind === 'goodbye') {
      const instance = this.#instances.get(announcement.instanceId);
      if (instance) {
        this.#forget(instance);
        this.#onChange();
      }
    }
  }

  #announce(announcement: Extract<Announcement, { kind: 'announce' }>, text: string, bytes: number): void {
    const serviceId = announcement.serviceDescriptor.id;
    const limits = this.#limits;
    const tools = announcement.tools;
    if (tools.length > limits.maxToolsPerAnnouncement) {
      return this.#refuse(serviceId, 'tools-per-announcement', tools.length);
    }
    let ttlMs = announcement.ttlMs;
    if (ttlMs > limits.maxTtlMs) {
      this.#refuse(serviceId, 'ttl', ttlMs);
      ttlMs = limits.maxTtlMs;
    }
    let previous = this.#instances.get(announcement.instanceId);
    let changed = false;
    if (previous && previous.serviceId !== serviceId) {
      // An instance id now announcing another service: a new instance of that one.
      this.#forget(previous);
      previous = undefined;
      changed = true;
    }
    const state = this.#services.get(serviceId);
    const refusal = this.#overCap(state, previous, tools, bytes);
    if (refusal) {
      this.#refuse(serviceId, refusal, refusal === 'tools' ? this.#toolCount : bytes);
      if (changed) this.#onChange();
      return;
    }

    if (previous) {
      // Not the same text (that is a heartbeat), but maybe the same announcement written differently.
      changed =
        JSON.stringify([previous.service, previous.tools]) !== JSON.stringify([announcement.service, tools]);
      this.#byText.delete(previous.text);
      this.#totalBytes += bytes - previous.bytes;
      previous.text = text;
      previous.bytes = bytes;
      previous.ttlMs = ttlMs;
      this.#byText.set(text, previous);
      if (changed) {
        const own = this.#services.get(serviceId)!;
        this.#countTools(own, previous.tools, -1);
        this.#countTools(own, tools, 1);
        previous.service = announcement.service;
        previous.tools = tools;
        previous.seq = ++this.#seq;
        this.#dirty.add(serviceId);
      }
      this.#renew(previous);
    } else {
      const instance: Instance = {
        id: announcement.instanceId,
        serviceId,
        service: announcement.service,
        tools,
        text,
        bytes,
        ttlMs,
        seq: ++this.#seq,
        expiresAt: 0,
        heapIndex: -1,
      };
      let own = state;
      if (!own) this.#services.set(serviceId, (own = { instances: new Set(), toolNames: new Map() }));
      own.instances.add(instance);
      this.#countTools(own, tools, 1);
      this.#instances.set(instance.id, instance);
      this.#byText.set(text, instance);
      this.#totalBytes += bytes;
      // The newest instance wins every name it announces: merging it in now costs O(its service's
      // tools) and spares services() a backlog after a flood of new services. (A dirty service is
      // merged in full there anyway.)
      if (!this.#dirty.has(serviceId)) {
        const merged = this.#merged.get(serviceId);
        const mergedTools = new Map(merged?.tools);
        for (const tool of tools) mergedTools.set(toolName(tool), tool);
        this.#merged.set(serviceId, { service: announcement.service, tools: mergedTools });
      }
      this.#renew(instance);
      changed = true;
    }
    if (changed) this.#onChange();
  }

  /** The cap an announcement would go over if it were kept, if any. */
  #overCap(
    state: ServiceState | undefined,
    previous: Instance | undefined,
    tools: readonly JsonObject[],
    bytes: number,
  ): Refusal | undefined {
    const limits = this.#limits;
    if (!previous && !state && this.#services.size >= limits.maxServices) return 'services';
    if (!previous && state && state.instances.size >= limits.maxInstancesPerService) return 'instances';
    if (this.#totalBytes - (previous?.bytes ?? 0) + bytes > limits.maxTotalBytes) return 'bytes';
    if (this.#toolCount + newNames(state, tools) > limits.maxTools) return 'tools';
    return undefined;
  }

  /** Pushes the instance's expiry out to `now + ttl`. */
  #renew(instance: Instance): void {
    instance.expiresAt = this.#now() + instance.ttlMs;
    this.#expiries.set(instance);
    this.#armExpiry();
  }

  /** Removes an instance (the caller reports the change). */
  #forget(instance: Instance): void {
    this.#instances.delete(instance.id);
    if (this.#byText.get(instance.text) === instance) this.#byText.delete(instance.text);
    this.#expiries.delete(instance);
    this.#totalBytes -= instance.bytes;
    const state = this.#services.get(instance.serviceId);
    if (state) {
      state.instances.delete(instance);
      this.#countTools(state, instance.tools, -1);
      if (state.instances.size === 0) this.#services.delete(instance.serviceId);
    }
    this.#dirty.add(instance.serviceId);
    if (this.#expiries.size === 0) this.#clearExpiry();
  }

  /** Adds (`by` 1) or takes away (-1) one instance's tools from its service's counts. */
  #countTools(state: ServiceState, tools: readonly JsonObject[], by: 1 | -1): void {
    for (const name of new Set(tools.map(toolName))) {
      const count = (state.toolNames.get(name) ?? 0) + by;
      if (count > 0) {
        if (count === 1 && by === 1) this.#toolCount++;
        state.toolNames.set(name, count);
      } else {
        state.toolNames.delete(name);
        this.#toolCount--;
      }
    }
  }

  #malformedAnnouncement(message: string): void {
    const count = this.#malformed.get(message);
    if (count !== undefined) this.#malformed.set(message, count + 1);
    else if (this.#malformed.size < MAX_MALFORMED_PROBLEMS) this.#malformed.set(message, 1);
    else this.#malformedUnlisted++;
  }

  /** Counts a refusal of `serviceId`'s announcement, listed once per service (the first ones only). */
  #refuse(serviceId: string, reason: Refusal, value: number): void {
    let refusals = this.#refusals.get(serviceId);
    if (!refusals) {
      if (this.#refusals.size >= MAX_SERVICE_PROBLEMS) {
        this.#unlistedRefusals.set(reason, (this.#unlistedRefusals.get(reason) ?? 0) + 1);
        return;
      }
      this.#refusals.set(serviceId, (refusals = new Map()));
    }
    const entry = refusals.get(reason);
    if (entry) {
      entry.count++;
      entry.value = value;
    } else {
      refusals.set(reason, { count: 1, value });
    }
  }

  /** What a problem says of one kind of refusal of a service. */
  #describe(reason: Refusal, count: number, value: number): string {
    const limits = this.#limits;
    if (reason === 'ttl') {
      return (
        `its 'ttl-ms' (${value}) is over the cap of ${limits.maxTtlMs} ms (announcementLimits.maxTtlMs): ` +
        `its instances are kept ${limits.maxTtlMs} ms after each announcement`
      );
    }
    const why = {
      'tools-per-announcement': `it carried ${value} tools, more than the ${limits.maxToolsPerAnnouncement} one announcement may (announcementLimits.maxToolsPerAnnouncement)`,
      instances: `the service has ${limits.maxInstancesPerService} live instances already, the most one service may have (announcementLimits.maxInstancesPerService)`,
      services: `${limits.maxServices} services are announced already, the most the registry keeps (announcementLimits.maxServices)`,
      tools: `${value} announced tools are kept already and it would add more than the ${limits.maxTools} the registry keeps (announcementLimits.maxTools)`,
      bytes: `keeping its ${value} bytes would take the announcements kept past ${limits.maxTotalBytes} bytes (announcementLimits.maxTotalBytes)`,
    }[reason];
    return `refused ${announcements(count)}: ${why}`;
  }

  #clearExpiry(): void {
    if (this.#expiryTimer) clearTimeout(this.#expiryTimer);
    this.#expiryTimer = undefined;
  }

  /** Arms the one timer for the earliest expiry, unless the armed one fires by then anyway. */
  #armExpiry(): void {
    const first = this.#expiries.peek();
    if (!first || this.#signal.aborted) return this.#clearExpiry();
    if (this.#expiryTimer && this.#expiryTimerAt <= first.expiresAt) return;
    this.#clearExpiry();
    const now = this.#now();
    // Capped: a delay beyond setTimeout's maximum would fire after 1 ms, and again.
    const delay = Math.min(Math.max(0, first.expiresAt - now), MAX_TIMER_MS);
    this.#expiryTimerAt = now + delay;
    this.#expiryTimer = setTimeout(() => {
      this.#expiryTimer = undefined;
      if (this.#expire()) this.#onChange();
    }, delay);
  }

  /** Removes the instances whose time-to-live has passed and re-arms the timer; true if any went. */
  #expire(): boolean {
    const now = this.#now();
    let removed = false;
    let instance: Instance | undefined;
    while ((instance = this.#expiries.popExpired(now))) {
      this.#forget(instance);
      removed = true;
    }
    this.#armExpiry();
    return removed;
  }
}

/** "an announcement", "3 announcements". */
function announcements(count: number): string {
  return count === 1 ? 'an announcement' : `${count} announcements`;
}

function toolName(tool: JsonObject): string {
  return String(tool['name']);
}

/** How many of `tools`' names the service does not announce yet. */
function newNames(state: ServiceState | undefined, tools: readonly JsonObject[]): number {
  let count = 0;
  for (const name of new Set(tools.map(toolName))) if (!state?.toolNames.has(name)) count++;
  return count;
}

/** A service's descriptor and tools over its instances: the latest changed announcement wins. */
function merge(state: ServiceState): AnnouncedService {
  const bySeq = [...state.instances].sort((a, b) => a.seq - b.seq);
  const tools = new Map<string, JsonObject>();
  for (const instance of bySeq) for (const tool of instance.tools) tools.set(toolName(tool), tool);
  return { service: bySeq[bySeq.length - 1]!.service, tools };
}
