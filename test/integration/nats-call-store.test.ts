/**
 * @module NatsKvCallStore against a real nats-server with JetStream: the shared CallStore conformance
 * suite, plus what only a distributed store does (two connections, the bucket's settings).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Kvm } from '@nats-io/kv';
import { DEFAULT_CALL_BUCKET, NatsKvCallStore, connectNats } from '../../src/bus/nats/index.js';
import {
  assertEnds,
  callRecord,
  nextCall,
  runCallStoreConformance,
} from '../support/call-store-conformance.js';
import { startNatsServer, type NatsServer } from '../support/nats-server.js';

let server: NatsServer;
let buckets = 0;
before(async () => {
  server = await startNatsServer({ jetstream: true });
});
after(() => server.stop());

runCallStoreConformance(
  'NatsKvCallStore',
  async () =>
    new NatsKvCallStore(await connectNats({ servers: server.url }), {
      bucket: `calls-conformance-${++buckets}`,
      ownsConnection: true,
    }),
);

describe('NatsKvCallStore across connections', () => {
  test('two connections share records and claims', async (t) => {
    const bucket = `calls-shared-${++buckets}`;
    const a = new NatsKvCallStore(await connectNats({ servers: server.url }), {
      bucket,
      ownsConnection: true,
    });
    const b = new NatsKvCallStore(await connectNats({ servers: server.url }), {
      bucket,
      ownsConnection: true,
    });
    t.after(() => Promise.all([a.close(), b.close()]));
    const r1 = await a.put(callRecord('c-shared'), 0);
    assert.deepEqual(await b.get('c-shared'), { record: callRecord('c-shared'), revision: r1 });
    assert.equal(await b.put(callRecord('c-shared'), 0), undefined);
    const running = callRecord('c-shared', { status: 'running', attempt: 1 });
    const r2 = await b.put(running, r1!);
    assert.equal(await a.put(callRecord('c-shared', { status: 'failed' }), r1!), undefined);
    assert.deepEqual(await a.get('c-shared'), { record: running, revision: r2 });
    assert.equal(await a.claim('request:tg:joke', 'key', 'from-a'), 'from-a');
    assert.equal(await b.claim('request:tg:joke', 'key', 'from-b'), 'from-a');
  });

  test('a watch on one connection sees the other connection’s puts', async (t) => {
    const bucket = `calls-watch-${++buckets}`;
    const a = new NatsKvCallStore(await connectNats({ servers: server.url }), {
      bucket,
      ownsConnection: true,
    });
    const b = new NatsKvCallStore(await connectNats({ servers: server.url }), {
      bucket,
      ownsConnection: true,
    });
    t.after(() => Promise.all([a.close(), b.close()]));
    const controller = new AbortController();
    t.after(() => controller.abort());
    const watch = a.watch('c-cross', controller.signal)[Symbol.asyncIterator]();
    const first = nextCall(watch, 'the record put by b');
    await new Promise((resolve) => setTimeout(resolve, 50));
    const r1 = await b.put(callRecord('c-cross'), 0);
    assert.deepEqual(await first, { record: callRecord('c-cross'), revision: r1 });
    const done = callRecord('c-cross', { status: 'completed', response: 'ok' });
    const r2 = await b.put(done, r1!);
    assert.deepEqual(await nextCall(watch, 'completed, put by b'), { record: done, revision: r2 });
    await assertEnds(watch, 'after completed');
  });

  test('the bucket is made on first use with the ttl as max age; an existing one is used as it is', async (t) => {
    const connection = await connectNats({ servers: server.url });
    t.after(() => connection.close());
    const kvm = new Kvm(connection);
    assert.equal(new NatsKvCallStore(connection).bucket, DEFAULT_CALL_BUCKET);

    const bucket = `calls-ttl-${++buckets}`;
    const store = new NatsKvCallStore(connection, { bucket, ttlMs: 60_000 });
    t.after(() => store.close());
    await assert.rejects(
      kvm.open(bucket).then((kv) => kv.status()),
      'nothing is made before the first call',
    );
    await store.get('nothing');
    const status = await (await kvm.open(bucket)).status();
    assert.equal(status.ttl, 60_000);
    assert.equal(status.history, 1);

    const again = new NatsKvCallStore(connection, { bucket, ttlMs: 120_000 });
    t.after(() => again.close());
    assert.equal((await again.put(callRecord('c-existing'), 0)) !== undefined, true);
    assert.equal((await (await kvm.open(bucket)).status()).ttl, 60_000, 'left as it was');
  });

  test('the server drops a record ttlMs after its last write', async (t) => {
    const store = new NatsKvCallStore(await connectNats({ servers: server.url }), {
      bucket: `calls-expiry-${++buckets}`,
      ttlMs: 1_000,
      ownsConnection: true,
    });
    t.after(() => store.close());
    assert.equal(store.ttlMs, 1_000);
    await store.put(callRecord('c-expires'), 0);
    assert.equal(await store.claim('s', 'k', 'c-expires'), 'c-expires');
    assert.ok(await store.get('c-expires'));
    const deadline = Date.now() + 10_000;
    while ((await store.get('c-expires')) !== undefined) {
      assert.ok(Date.now() < deadline, 'the record was not dropped within 10 s');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.equal(await store.claim('s', 'k', 'next'), 'next', 'the claim expired too');
    assert.ok((await store.put(callRecord('c-expires'), 0)) !== undefined, 'created again at 0');
  });

  test('close stops watches and leaves a borrowed connection open; later calls reject with closed', async (t) => {
    const connection = await connectNats({ servers: server.url });
    t.after(() => connection.close());
    const store = new NatsKvCallStore(connection, { bucket: `calls-close-${++buckets}` });
    await store.put(callRecord('c-close'), 0);
    const controller = new AbortController();
    const watch = store.watch('c-close', controller.signal)[Symbol.asyncIterator]();
    await nextCall(watch, 'the current record');
    const pending = watch.next();
    await new Promise((resolve) => setTimeout(resolve, 20));
    await store.close();
    assert.equal((await pending).done, true);
    assert.equal(connection.isClosed(), false);
    await assert.rejects(store.get('c-close'), { code: 'closed' });
    await assert.rejects(store.put(callRecord('c-close'), 0), { code: 'closed' });
  });

  test('a bad bucket name or option is refused before any request', async (t) => {
    const connection = await connectNats({ servers: server.url });
    t.after(() => connection.close());
    assert.throws(() => new NatsKvCallStore(connection, { bucket: 'no.dots' }), { code: 'invalid-config' });
    assert.throws(() => new NatsKvCallStore(connection, { ttlMs: 0 }), { code: 'usage' });
    assert.throws(() => new NatsKvCallStore(connection, { replicas: 1.5 }), { code: 'usage' });
  });
});
