/**
 * @module The SSE events of one 2025-era session, kept so a client whose stream broke can resume it
 * with `Last-Event-ID` (SEP-1699): a bounded in-memory implementation of the SDK's `EventStore`. Only
 * the most recent events are kept, by count and by bytes; a client that comes back after more than that
 * has passed resumes from the oldest event still kept.
 */
import type { EventId, EventStore, JSONRPCMessage, StreamId } from '@modelcontextprotocol/server';

/** Events kept per session by default. */
export const DEFAULT_MAX_EVENTS_PER_SESSION = 1000;
/** Bytes of events (their JSON) kept per session by default: 16 MiB. */
export const DEFAULT_MAX_EVENT_BYTES_PER_SESSION = 16 * 1024 * 1024;

interface StoredEvent {
  readonly streamId: StreamId;
  readonly seq: number;
  readonly message: JSONRPCMessage;
  /** The UTF-8 bytes of its JSON. */
  readonly bytes: number;
}

/** Event ids are `<streamId>.<seq>`: the stream is known from the id even once its events are gone. */
function parseEventId(eventId: EventId): { streamId: StreamId; seq: number } | undefined {
  const dot = eventId.lastIndexOf('.');
  if (dot <= 0) return undefined;
  const seq = Number(eventId.slice(dot + 1));
  return Number.isSafeInteger(seq) && seq > 0 ? { streamId: eventId.slice(0, dot), seq } : undefined;
}

/** A bounded in-memory {@link EventStore} for one session (see the module). */
export class MemoryEventStore implements EventStore {
  readonly #max: number;
  readonly #maxBytes: number;
  /** Events by sequence number, oldest first (a Map keeps insertion order). */
  readonly #events = new Map<number, StoredEvent>();
  /** The bytes of the events kept. */
  #bytes = 0;
  #seq = 0;

  /**
   * @param maxEvents the most events kept; older ones are dropped.
   * @param maxBytes the most bytes of events (their JSON) kept; older ones are dropped, but the newest
   * is always kept (a few large results must not hold a session's memory unbounded).
   */
  constructor(
    maxEvents: number = DEFAULT_MAX_EVENTS_PER_SESSION,
    maxBytes: number = DEFAULT_MAX_EVENT_BYTES_PER_SESSION,
  ) {
    this.#max = maxEvents;
    this.#maxBytes = maxBytes;
  }

  async storeEvent(streamId: StreamId, message: JSONRPCMessage): Promise<EventId> {
    const seq = ++this.#seq;
    const bytes = Buffer.byteLength(JSON.stringify(message));
    this.#events.set(seq, { streamId, seq, message, bytes });
    this.#bytes += bytes;
    while (this.#events.size > this.#max || (this.#bytes > this.#maxBytes && this.#events.size > 1)) {
      const [oldest, event] = this.#events.entries().next().value as [number, StoredEvent];
      this.#events.delete(oldest);
      this.#bytes -= event.bytes;
    }
    return `${streamId}.${seq}`;
  }

  async getStreamIdForEventId(eventId: EventId): Promise<StreamId | undefined> {
    const parsed = parseEventId(eventId);
    return parsed !== undefined && parsed.seq <= this.#seq ? parsed.streamId : undefined;
  }

  async replayEventsAfter(
    lastEventId: EventId,
    { send }: { send: (eventId: EventId, message: JSONRPCMessage) => Promise<void> },
  ): Promise<StreamId> {
    const parsed = parseEventId(lastEventId);
    if (parsed === undefined || parsed.seq > this.#seq) throw new Error(`unknown event id '${lastEventId}'`);
    for (const event of [...this.#events.values()]) {
      // A priming event carries no message: nothing to send again.
      if (event.seq <= parsed.seq || event.streamId !== parsed.streamId) continue;
      if (Object.keys(event.message).length === 0) continue;
      await send(`${event.streamId}.${event.seq}`, event.message);
    }
    return parsed.streamId;
  }
}
