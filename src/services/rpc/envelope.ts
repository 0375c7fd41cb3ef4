/**
 * @module The request/response envelope every protocol on the bus shares (tool services, the agent
 * service): the message properties, the control topic and how they are read. The one place where they
 * are parsed; the bodies belong to each protocol's codec (`services/wire.ts`, `agents/wire.ts`).
 *
 * | property      | on                 | meaning                                                              |
 * |---------------|--------------------|----------------------------------------------------------------------|
 * | `id`          | every message      | correlation id, unique per call; echoed on every response (required) |
 * | `deadline`    | request            | optional: epoch milliseconds (decimal) after which the caller has given up |
 * | `traceparent` | request, responses | optional: W3C trace context, echoed                                  |
 * | `tracestate`  | request, responses | optional: W3C trace context vendor state, echoed                     |
 * | `cancel`      | control message    | optional: the reason (free text) on a cancellation message           |
 * | `idempotency-key` | durable request | optional: the caller's idempotency key (else the `id`)              |
 * | `idempotent`  | durable request    | optional: `true` when the tool declares repeating a key is safe      |
 * | `task`        | durable request    | optional: `1` when the caller left (an async task) and its state was stored first |
 * | `tool`        | durable request    | optional: the tool's name, kept with the call's state                 |
 *
 * Cancellation: the caller publishes `{ id, cancel }` with an empty body on the control topic of the
 * request queue ({@link cancelTopicOf}); every replica listens to it without a group, so the one running
 * the call sees it. A peer that ignores every optional property still interoperates.
 */
import { canonicalTopic } from '../../bus/index.js';
import type { BusProperties } from '../../bus/index.js';
import { ToolbusError } from '../../errors/index.js';

/** The names of the message properties (see the module table). */
export const WireProperty = {
  Id: 'id',
  Deadline: 'deadline',
  Traceparent: 'traceparent',
  Tracestate: 'tracestate',
  Cancel: 'cancel',
  IdempotencyKey: 'idempotency-key',
  Idempotent: 'idempotent',
  Task: 'task',
  Tool: 'tool',
} as const;
/** One of {@link WireProperty}'s values. */
export type WireProperty = (typeof WireProperty)[keyof typeof WireProperty];

/** The longest `cancel` reason sent, in characters. */
const MAX_CANCEL_REASON = 500;

/**
 * The control topic that carries cancellations for the service on `requestQueue`: its canonical name
 * plus `:cancel` (`non-persistent://tg/request/joke` → `request:tg:joke:cancel`).
 */
export function cancelTopicOf(requestQueue: string): string {
  return `${canonicalTopic(requestQueue)}:cancel`;
}

/**
 * Reads the `id` property: a non-empty string, or undefined (absent, empty, or not a string, which a
 * JavaScript caller of `MemoryBus` can send although `BusProperties` says string).
 */
export function readId(properties: BusProperties | undefined): string | undefined {
  const id: unknown = properties?.[WireProperty.Id];
  return typeof id === 'string' && id !== '' ? id : undefined;
}

/**
 * Reads the `deadline` property (epoch ms), or undefined when there is none to honour. Decimal text is
 * the wire form; `''`, blank or unparsable text is ignored (`Number('')` is 0, which would make the
 * request look long expired). A finite number (a JavaScript caller of `MemoryBus`) is taken as it is;
 * any other value is ignored.
 */
export function readDeadline(properties: BusProperties): number | undefined {
  const raw: unknown = properties[WireProperty.Deadline];
  if (typeof raw === 'number') return Number.isFinite(raw) ? raw : undefined;
  if (typeof raw !== 'string' || raw.trim() === '') return undefined;
  const n = Number(raw);
  return Number.isFinite(n) ? n : undefined;
}

/** The response properties: the `id`, plus the trace context when the request carried it as text. */
export function echoPropertiesOf(id: string, properties: BusProperties): BusProperties {
  const traceparent: unknown = properties[WireProperty.Traceparent];
  if (typeof traceparent !== 'string') return { id };
  const tracestate: unknown = properties[WireProperty.Tracestate];
  return typeof tracestate === 'string' ? { id, traceparent, tracestate } : { id, traceparent };
}

/** The W3C `traceparent` of a request, when it carried one as text. */
export function readTraceparent(properties: BusProperties): string | undefined {
  const value: unknown = properties[WireProperty.Traceparent];
  return typeof value === 'string' ? value : undefined;
}

/** The reason of a cancellation message, when it carried one as non-empty text. */
export function readCancelReason(properties: BusProperties): string | undefined {
  const value: unknown = properties[WireProperty.Cancel];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/**
 * The `cancel` property for a reason: one line (NATS headers cannot carry a line break, and a refused
 * cancellation would be lost silently, leaving the service running until the deadline), at most 500
 * characters.
 */
export function cancelReasonOf(message: string): string {
  const line = message.replace(/\s*[\r\n]+\s*/g, ' ');
  return line.length > MAX_CANCEL_REASON ? `${line.slice(0, MAX_CANCEL_REASON)}…` : line;
}

/**
 * Checks that a service's request and response queues are two topics: with one topic for both, the
 * service would take its own responses for requests and answer them, forever.
 * @throws ToolbusError `invalid-config` naming the topic; `where` says whose queues they are.
 */
export function checkQueuePair(requestQueue: string, responseQueue: string, where: string): void {
  const topic = canonicalTopic(requestQueue);
  if (topic !== canonicalTopic(responseQueue)) return;
  throw new ToolbusError(
    'invalid-config',
    `${where}: request queue and response queue are the same topic '${topic}'; expected two topics, ` +
      `e.g. 'non-persistent://tg/request/joke' and 'non-persistent://tg/response/joke'`,
  );
}
