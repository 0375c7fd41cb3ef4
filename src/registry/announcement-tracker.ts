/**
 * @module `AnnouncementTracker`: the services announcing themselves on the bus's `tool-descriptors`
 * topic, as live instances that last until they say goodbye or their time-to-live lapses.
 */
import type { BusSubscription, MessageBus } from '../bus/index.js';
import type { JsonObject } from '../schema/index.js';
import { TOOL_DESCRIPTORS_TOPIC, decodeAnnouncement, requestAnnouncements } from '../services/index.js';
import { MAX_TIMER_MS } from '../tools/index.js';
import type { AnnouncedServices } from './tool-set-plan.js';
import type { RegistryProblem } from './tool-type.js';

/** At most this many distinct malformed announcements are reported at once. */
const MAX_MALFORMED_PROBLEMS = 100;

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
}

interface Instance {
  serviceId: string;
  service: JsonObject;
  tools: JsonObject[];
  json: string;
  expiresAt: number;
  /** Orders instances by their latest changed announcement: the latest one wins in {@link services}. */
  seq: number;
}

/**
 * Tracks the live instances of self-announcing services. An `announce` adds or renews an instance until
 * `now() + ttlMs`; a `goodbye` removes it at once; one timer, armed for the earliest expiry, removes
 * the instances that lapsed. A malformed announcement is ignored and listed in {@link problems}.
 */
export class AnnouncementTracker {
  readonly #bus: MessageBus;
  readonly #now: () => number;
  readonly #signal: AbortSignal;
  readonly #onChange: () => void;
  /** Live instances by instance id. */
  readonly #instances = new Map<string, Instance>();
  #seq = 0;
  readonly #problems = new Map<string, RegistryProblem>();
  #subscription: BusSubscription | undefined;
  #expiryTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(bus: MessageBus, options: AnnouncementTrackerOptions) {
    this.#bus = bus;
    this.#now = options.now;
    this.#signal = options.signal;
    this.#onChange = options.onChange;
    this.#signal.addEventListener('abort', () => this.#clearExpiry(), { once: true });
  }

  /** Subscribes to the announcement topic. Rejects with the bus's error when that fails. */
  async start(): Promise<void> {
    this.#subscription = await this.#bus.subscribe(TOOL_DESCRIPTORS_TOPIC, (m) => this.#receive(m.body));
  }

  /**
   * Asks every service to announce now, instead of waiting for their heartbeats. Never rejects: a bus
   * that refuses is listed in {@link problems} (key `announced`, a warning).
   */
  async requestAnnouncements(): Promise<void> {
    await requestAnnouncements(this.#bus).catch((error: unknown) => {
      this.#problems.set('announced', {
        key: 'announced',
        message: `could not ask services to announce: ${(error as Error).message}`,
        severity: 'warning',
      });
    });
  }

  /** Leaves the announcement topic and forgets what was announced. */
  async stop(): Promise<void> {
    const subscription = this.#subscription;
    this.#subscription = undefined;
    await subscription?.unsubscribe().catch(() => undefined);
    this.#instances.clear();
    this.#clearExpiry();
  }

  /** The announced services, merged over their live instances (the latest announcement wins). */
  services(): AnnouncedServices {
    const out = new Map<string, { service: JsonObject; tools: Map<string, JsonObject> }>();
    const bySeq = [...this.#instances.values()].sort((a, b) => a.seq - b.seq);
    for (const instance of bySeq) {
      let entry = out.get(instance.serviceId);
      if (!entry) out.set(instance.serviceId, (entry = { service: instance.service, tools: new Map() }));
      entry.service = instance.service;
      for (const tool of instance.tools) entry.tools.set(String(tool['name']), tool);
    }
    return out;
  }

  /** How many live instances each announced service has now, by service id. */
  instanceCounts(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const { serviceId } of this.#instances.values())
      counts.set(serviceId, (counts.get(serviceId) ?? 0) + 1);
    return counts;
  }

  /** What was wrong with the announcements (malformed ones, a failed request), in arrival order. */
  problems(): RegistryProblem[] {
    return [...this.#problems.values()];
  }

  #receive(body: Uint8Array): void {
    let announcement;
    try {
      announcement = decodeAnnouncement(body);
    } catch (error) {
      if (this.#problems.size < MAX_MALFORMED_PROBLEMS) {
        const message = (error as Error).message;
        this.#problems.set(`announced/${message}`, {
          key: 'announced',
          message: `ignored a malformed announcement: ${message}`,
          severity: 'warning',
        });
      }
      return;
    }
    if (announcement.kind === 'announce') {
      const json = JSON.stringify([announcement.service, announcement.tools]);
      const previous = this.#instances.get(announcement.instanceId);
      this.#instances.set(announcement.instanceId, {
        serviceId: announcement.serviceDescriptor.id,
        service: announcement.service,
        tools: announcement.tools,
        json,
        expiresAt: this.#now() + announcement.ttlMs,
        seq: previous?.json === json ? previous.seq : ++this.#seq,
      });
      this.#scheduleExpiry();
      if (previous?.json !== json) this.#onChange();
    } else if (announcement.kind === 'goodbye') {
      if (this.#instances.delete(announcement.instanceId)) {
        this.#scheduleExpiry();
        this.#onChange();
      }
    }
  }

  #clearExpiry(): void {
    if (this.#expiryTimer) clearTimeout(this.#expiryTimer);
    this.#expiryTimer = undefined;
  }

  /** Arms the one timer for the earliest expiry among the live instances. */
  #scheduleExpiry(): void {
    this.#clearExpiry();
    if (this.#instances.size === 0 || this.#signal.aborted) return;
    const next = Math.min(...[...this.#instances.values()].map((i) => i.expiresAt));
    this.#expiryTimer = setTimeout(
      () => {
        this.#expiryTimer = undefined;
        if (this.#expire()) this.#onChange();
      },
      // Capped: a delay beyond setTimeout's maximum (a TTL of weeks) would fire after 1 ms, and again.
      Math.min(Math.max(0, next - this.#now()), MAX_TIMER_MS),
    );
  }

  /** Removes the instances whose time-to-live has passed and re-arms the timer; true if any went. */
  #expire(): boolean {
    const now = this.#now();
    let removed = false;
    for (const [id, instance] of this.#instances) {
      if (instance.expiresAt <= now) {
        this.#instances.delete(id);
        removed = true;
      }
    }
    this.#scheduleExpiry();
    return removed;
  }
}
