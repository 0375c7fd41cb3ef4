/**
 * @module A "foreign" tool-service peer, as TrustGraph would be: written only against `MessageBus` and
 * raw JSON, with none of toolbus's services code, so the conformance tests check our wire format
 * against an independent reading of the seed.
 */
import type { BusMessage, MessageBus } from '../../src/bus/index.js';

/** A message as the foreign peer saw it: raw text and properties. */
export interface RawMessage {
  text: string;
  properties: Record<string, string>;
}

const decoder = new TextDecoder();

function raw(message: BusMessage): RawMessage {
  return { text: decoder.decode(message.body), properties: { ...message.properties } };
}

/** What a foreign service handler returns: the response strings to send, the last with end_of_stream. */
export type ForeignReply = { chunks: string[] } | { error: { type: string; message: string } };

/**
 * A foreign service: reads `properties.id`, `JSON.parse`s the body and its `config` / `arguments` strings,
 * and answers with hand-written JSON (`end_of_stream: false` chunks, then a final `true`). It ignores
 * every property but `id`. Returns the requests it saw and a stop function.
 */
export async function startForeignService(
  bus: MessageBus,
  queues: { requestQueue: string; responseQueue: string },
  handle: (request: {
    user?: string;
    config: Record<string, unknown>;
    arguments: Record<string, unknown>;
  }) => ForeignReply,
): Promise<{ seen: RawMessage[]; stop: () => Promise<void> }> {
  const seen: RawMessage[] = [];
  const subscription = await bus.subscribe(
    queues.requestQueue,
    async (message) => {
      const m = raw(message);
      seen.push(m);
      const id = m.properties['id'] ?? 'unknown';
      const body = JSON.parse(m.text) as { user?: string; config?: string; arguments?: string };
      const reply = handle({
        user: body.user,
        config: body.config ? (JSON.parse(body.config) as Record<string, unknown>) : {},
        arguments: body.arguments ? (JSON.parse(body.arguments) as Record<string, unknown>) : {},
      });
      if ('error' in reply) {
        await bus.publish(
          queues.responseQueue,
          `{"error":{"type":${JSON.stringify(reply.error.type)},"message":${JSON.stringify(reply.error.message)}},"response":"","end_of_stream":true}`,
          { id },
        );
        return;
      }
      const chunks = reply.chunks;
      for (let i = 0; i < chunks.length; i++) {
        const last = i === chunks.length - 1;
        await bus.publish(
          queues.responseQueue,
          `{"error":null,"response":${JSON.stringify(chunks[i])},"end_of_stream":${last ? 'true' : 'false'}}`,
          { id },
        );
      }
    },
    { group: 'foreign-service' },
  );
  return { seen, stop: () => subscription.unsubscribe() };
}

/**
 * A foreign client: publishes `body` (raw text) with `properties` on the request queue and collects the
 * raw responses carrying the same `id` until one has `end_of_stream: true` (or `timeoutMs` passes).
 */
export async function foreignCall(
  bus: MessageBus,
  queues: { requestQueue: string; responseQueue: string },
  body: string,
  properties: Record<string, string>,
  timeoutMs = 2_000,
): Promise<RawMessage[]> {
  const responses: RawMessage[] = [];
  let done!: () => void;
  const finished = new Promise<void>((resolve) => (done = resolve));
  const subscription = await bus.subscribe(queues.responseQueue, (message) => {
    const m = raw(message);
    if (m.properties['id'] !== properties['id']) return;
    responses.push(m);
    if ((JSON.parse(m.text) as { end_of_stream?: boolean }).end_of_stream === true) done();
  });
  const timer = setTimeout(done, timeoutMs);
  try {
    await bus.publish(queues.requestQueue, body, properties);
    await finished;
  } finally {
    clearTimeout(timer);
    await subscription.unsubscribe();
  }
  return responses;
}
