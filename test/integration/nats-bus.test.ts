/**
 * @module NatsBus against a real nats-server: subjects, queue groups, headers, no-responders, close,
 * reconnect.
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { NatsBus, type NatsBusStatus } from '../../src/bus/nats/index.js';
import { ToolbusError } from '../../src/errors/index.js';
import type { BusMessage } from '../../src/bus/index.js';
import { findNatsServer, startNatsServer, type NatsServer } from '../support/nats-server.js';

/** Waits until `check()` is true, polling; fails after `ms`. */
async function until(check: () => boolean, ms = 5_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('NatsBus', () => {
  let server: NatsServer;
  before(async () => {
    server = await startNatsServer({ jetstream: false });
  });
  after(() => server.stop());

  test('every written form of a topic reaches the same subject, and properties travel as headers', async (t) => {
    const bus = await NatsBus.connect({ servers: server.url });
    t.after(() => bus.close());
    assert.equal(bus.subjectOf('non-persistent://tg/request/joke'), 'request.tg.joke');
    const got: BusMessage[] = [];
    await bus.subscribe('request:tg:joke', (m) => void got.push(m));
    await bus.publish('non-persistent://tg/request/joke', '{"user":"alice"}', { id: 'c-1', deadline: '42' });
    await bus.publish('persistent://tg/request/joke', new TextEncoder().encode('two'));
    await until(() => got.length === 2, 5_000, 'two messages');
    assert.equal(got[0]?.topic, 'request:tg:joke');
    assert.equal(new TextDecoder().decode(got[0]?.body), '{"user":"alice"}');
    assert.deepEqual({ ...got[0]?.properties }, { id: 'c-1', deadline: '42' });
    assert.deepEqual({ ...got[1]?.properties }, {});
  });

  test('a subject prefix keeps installations apart', async (t) => {
    const a = await NatsBus.connect({ servers: server.url, subjectPrefix: 'site-a' });
    const b = await NatsBus.connect({ servers: server.url, subjectPrefix: 'site-b' });
    t.after(() => Promise.all([a.close(), b.close()]));
    assert.equal(a.subjectOf('request:tg:joke'), 'site-a.request.tg.joke');
    let inB = 0;
    await b.subscribe('request:tg:joke', () => void inB++);
    let unavailable: ToolbusError | undefined;
    await a.publish('request:tg:joke', 'x', {}, { onUnavailable: (e) => (unavailable = e) });
    await until(() => unavailable !== undefined, 5_000, 'no-responders');
    assert.equal(inB, 0);
  });

  test('a group is a queue group: each message reaches one member; ungrouped subscribers get all', async (t) => {
    const bus = await NatsBus.connect({ servers: server.url });
    t.after(() => bus.close());
    const counts = { a: 0, b: 0, all: 0 };
    await bus.subscribe('request:tg:work', () => void counts.a++, { group: 'workers' });
    await bus.subscribe('request:tg:work', () => void counts.b++, { group: 'workers' });
    await bus.subscribe('request:tg:work', () => void counts.all++);
    for (let i = 0; i < 200; i++) await bus.publish('request:tg:work', String(i));
    await until(() => counts.a + counts.b === 200 && counts.all === 200, 5_000, '200 deliveries');
    assert.ok(counts.a > 0 && counts.b > 0, `both members got work: ${JSON.stringify(counts)}`);
  });

  test('onUnavailable reports the no-responders signal with code unavailable, and only then', async (t) => {
    const bus = await NatsBus.connect({ servers: server.url });
    t.after(() => bus.close());
    const errors: ToolbusError[] = [];
    await bus.publish('request:tg:nobody', '{}', { id: '1' }, { onUnavailable: (e) => void errors.push(e) });
    await until(() => errors.length === 1, 5_000, 'unavailable');
    assert.ok(errors[0] instanceof ToolbusError);
    assert.equal(errors[0].code, 'unavailable');
    assert.match(errors[0].message, /topic 'request:tg:nobody'.*subject 'request\.tg\.nobody'/);

    let received = 0;
    await bus.subscribe('request:tg:somebody', () => void received++, { group: 'g' });
    for (let i = 0; i < 500; i++) {
      await bus.publish('request:tg:somebody', '{}', {}, { onUnavailable: (e) => void errors.push(e) });
    }
    await until(() => received === 500 && bus.pendingUnavailableWatches === 0, 5_000, 'watches to settle');
    assert.equal(errors.length, 1, 'no unavailable while a subscriber listens');
  });

  test('a throwing or rejecting handler is reported and the subscription keeps going', async (t) => {
    const reported: unknown[] = [];
    const bus = await NatsBus.connect({
      servers: server.url,
      hooks: { onHandlerError: ({ error }) => reported.push(error) },
    });
    t.after(() => bus.close());
    let n = 0;
    await bus.subscribe('notify:tg:boom', (m) => {
      n++;
      if (m.properties.kind === 'sync') throw new Error('sync boom');
      if (m.properties.kind === 'async') return Promise.reject(new Error('async boom'));
      return undefined;
    });
    await bus.publish('notify:tg:boom', '', { kind: 'sync' });
    await bus.publish('notify:tg:boom', '', { kind: 'async' });
    await bus.publish('notify:tg:boom', '', { kind: 'ok' });
    await until(() => n === 3 && reported.length === 2, 5_000, 'three deliveries');
    assert.deepEqual(
      reported.map((e) => (e as Error).message),
      ['sync boom', 'async boom'],
    );
  });

  test('unsubscribe stops delivery', async (t) => {
    const bus = await NatsBus.connect({ servers: server.url });
    t.after(() => bus.close());
    let n = 0;
    const sub = await bus.subscribe('notify:tg:once', () => void n++);
    await bus.publish('notify:tg:once', '1');
    await until(() => n === 1);
    await sub.unsubscribe();
    await sub.unsubscribe();
    let unavailable = false;
    await bus.publish('notify:tg:once', '2', {}, { onUnavailable: () => (unavailable = true) });
    await until(() => unavailable, 5_000, 'no-responders after unsubscribe');
    assert.equal(n, 1);
  });

  test('unsubscribe still delivers what the server routed before it: a queue member leaving loses nothing', async (t) => {
    const member = await NatsBus.connect({ servers: server.url });
    const publisher = await NatsBus.connect({ servers: server.url });
    t.after(() => Promise.all([member.close(), publisher.close()]));
    let got = 0;
    const sub = await member.subscribe('request:tg:leaving', () => void got++, { group: 'workers' });
    const sent = 50;
    for (let i = 0; i < sent; i++) void publisher.publish('request:tg:leaving', String(i));
    await Promise.resolve(); // the client writes the publishes in a microtask queued before this one
    // Block the event loop: the server routes every message to the member, whose client cannot read
    // them yet; then unsubscribe before it does. They were routed to this member only: dropping them
    // loses them (a tool call then hangs until its timeout).
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 300);
    await sub.unsubscribe();
    assert.equal(got, sent);
  });

  test('bad topics, groups, prefixes and oversized messages reject with typed errors', async (t) => {
    const bus = await NatsBus.connect({ servers: server.url });
    t.after(() => bus.close());
    await assert.rejects(bus.publish('a..b', 'x'), { name: 'ToolbusError', code: 'invalid-config' });
    await assert.rejects(bus.publish('bad topic', 'x'), {
      code: 'invalid-config',
      message: /topic 'bad topic'/,
    });
    await assert.rejects(
      bus.subscribe('ok', () => {}, { group: 'has space' }),
      {
        code: 'invalid-config',
        message: /group 'has space'/,
      },
    );
    await assert.rejects(bus.publish('big', new Uint8Array(2 * 1024 * 1024)), {
      code: 'too-large',
      message: /topic 'big'.*max_payload/,
    });
    await assert.rejects(bus.publish('ok', 'x', { 'bad key': 'v' }), {
      code: 'invalid-request',
      message: /property 'bad key'/,
    });
    assert.throws(() => new NatsBus(bus.connection, { subjectPrefix: 'a.>' }), { code: 'invalid-config' });
  });

  test('close is idempotent, resolves closed, runs onClosed, and later calls reject with closed', async () => {
    let closedHook = 0;
    const bus = await NatsBus.connect({ servers: server.url, hooks: { onClosed: () => void closedHook++ } });
    await Promise.all([bus.close(), bus.close()]);
    await bus.close();
    assert.equal(await bus.closed, undefined);
    assert.equal(closedHook, 1);
    assert.equal(bus.connection.isClosed(), true);
    await assert.rejects(bus.publish('x', 'y'), {
      name: 'ToolbusError',
      code: 'closed',
      message: /topic 'x'/,
    });
    await assert.rejects(
      bus.subscribe('x', () => {}),
      { code: 'closed' },
    );
  });

  test('a publish racing a close of the connection is reported through onUnavailable, never dropped silently', async () => {
    const bus = await NatsBus.connect({ servers: server.url });
    const closing = bus.connection.close();
    // The client still accepts this publish (it is closing, not closed) and then drops it.
    const unavailable: ToolbusError[] = [];
    await bus.publish('notify:tg:racing', 'x', {}, { onUnavailable: (e) => void unavailable.push(e) });
    await closing;
    assert.equal(await bus.closed, undefined);
    await until(() => unavailable.length === 1, 5_000, 'the racing publish reported');
    assert.equal(unavailable[0]?.code, 'closed');
    assert.match(unavailable[0]?.message ?? '', /topic 'notify:tg:racing'.*closed before/);
    // Once the bus knows, publishes reject.
    await assert.rejects(bus.publish('notify:tg:racing', 'y'), {
      name: 'ToolbusError',
      code: 'closed',
      message: /topic 'notify:tg:racing'/,
    });
    await bus.close();
  });

  test('a bus on a borrowed connection leaves the connection open on close', async (t) => {
    const owner = await NatsBus.connect({ servers: server.url });
    t.after(() => owner.close());
    const borrowed = new NatsBus(owner.connection);
    let n = 0;
    await borrowed.subscribe('notify:tg:borrowed', () => void n++);
    await borrowed.close();
    assert.equal(owner.connection.isClosed(), false);
    let unavailable = false;
    await owner.publish('notify:tg:borrowed', '', {}, { onUnavailable: () => (unavailable = true) });
    await until(() => unavailable, 5_000, 'subscription gone');
    assert.equal(n, 0);
  });

  test('connecting to a port with no server rejects with unavailable; an abort rejects with cancelled', async () => {
    await assert.rejects(
      NatsBus.connect({ servers: 'nats://127.0.0.1:1', connectTimeoutMs: 2_000, reconnect: false }),
      { name: 'ToolbusError', code: 'unavailable', message: /cannot connect to NATS/ },
    );
    await assert.rejects(NatsBus.connect({ servers: server.url, signal: AbortSignal.abort() }), {
      code: 'cancelled',
    });
  });
});

test('without the nats-server binary the NATS tests fail with the install command, never skip', () => {
  assert.throws(() => findNatsServer({ PATH: '/nonexistent-dir', NATS_SERVER: '/nonexistent' }, []), {
    message: /nats-server was not found.*apt-get install -y nats-server/s,
  });
  assert.match(findNatsServer(), /nats-server$/);
});

describe('NatsBus reconnect', () => {
  test('status hooks see the disconnect and the reconnect; subscriptions work again afterwards', async (t) => {
    const server = await startNatsServer({ jetstream: false });
    t.after(() => server.stop());
    const statuses: NatsBusStatus[] = [];
    const bus = await NatsBus.connect({
      servers: server.url,
      reconnectWaitMs: 50,
      hooks: { onStatus: [(s) => void statuses.push(s)] },
    });
    t.after(() => bus.close());
    const got: string[] = [];
    await bus.subscribe('notify:tg:after', (m) => void got.push(new TextDecoder().decode(m.body)));
    await server.restart({ kill: true });
    await until(() => statuses.some((s) => s.type === 'reconnect'), 10_000, 'reconnect');
    assert.ok(statuses.some((s) => s.type === 'disconnect'));
    await bus.publish('notify:tg:after', 'hello again');
    await until(() => got.includes('hello again'), 5_000, 'message after reconnect');
  });
});
