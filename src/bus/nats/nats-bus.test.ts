import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { NatsConnection } from '@nats-io/transport-node';
import { NatsBus } from './nats-bus.js';

type Callback = (error: Error | null, msg: unknown) => void;

/** Just enough of a NATS connection to drive NatsBus's subscription callbacks by hand. */
function fakeConnection(): { connection: NatsConnection; callbacks: Map<string, Callback> } {
  const callbacks = new Map<string, Callback>();
  const fake = {
    info: { max_payload: 1 << 20 },
    closed: () => new Promise(() => undefined),
    status: () => ({ [Symbol.asyncIterator]: () => ({ next: () => new Promise(() => undefined) }) }),
    subscribe: (subject: string, options: { callback: Callback }) => {
      callbacks.set(subject, options.callback);
      let closed = false;
      return { isClosed: () => closed, unsubscribe: () => (closed = true) };
    },
    flush: () => Promise.resolve(),
    publish: () => undefined,
    isClosed: () => false,
  };
  return { connection: fake as unknown as NatsConnection, callbacks };
}

test('a subscription the server refuses (permissions violation) delivers no phantom message', async (t) => {
  const { connection, callbacks } = fakeConnection();
  const bus = new NatsBus(connection);
  t.after(() => bus.close());
  const seen: unknown[] = [];
  await bus.subscribe('request:tg:joke', (m) => void seen.push(m));
  const callback = callbacks.get('request.tg.joke');
  assert.ok(callback);
  // What nats.js does on `-ERR 'Permissions Violation for Subscription to ...'`.
  assert.doesNotThrow(() => callback(new Error('Permissions Violation'), {}));
  assert.deepEqual(seen, []);
});

test('a refused no-responders inbox does not throw into the NATS client', async (t) => {
  const { connection, callbacks } = fakeConnection();
  const bus = new NatsBus(connection);
  t.after(() => bus.close());
  await bus.publish('request:tg:joke', '{}', { id: '1' }, { onUnavailable: () => undefined });
  const inbox = [...callbacks.keys()].find((subject) => subject.startsWith('_INBOX.'));
  assert.ok(inbox);
  // A throw here would end the client's socket reader and leave the connection deaf.
  assert.doesNotThrow(() => callbacks.get(inbox)!(new Error('Permissions Violation'), {}));
});

test('the size check counts the header block as the server does, so a near-limit message is too-large', async (t) => {
  const { connection } = fakeConnection();
  const bus = new NatsBus(connection);
  t.after(() => bus.close());
  const max = 1 << 20;
  // 10 bytes under the limit; the block `NATS/1.0\r\nid: 1\r\n\r\n` is 19 bytes.
  await assert.rejects(bus.publish('big', new Uint8Array(max - 10), { id: '1' }), {
    code: 'too-large',
    message: /topic 'big'.*max_payload/,
  });
  await bus.publish('big', new Uint8Array(max - 19), { id: '1' });
});
