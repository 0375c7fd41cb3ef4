/**
 * @module NatsKvConfigStore against a real nats-server with JetStream: the shared ConfigStore conformance
 * suite, plus what only a distributed store does (two connections, restart).
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { Kvm } from '@nats-io/kv';
import { NatsBus, NatsKvConfigStore } from '../../src/bus/nats/index.js';
import { z } from 'zod';
import { ToolRegistry } from '../../src/registry/index.js';
import { FunctionTool } from '../../src/tools/index.js';
import { runConfigStoreConformance, takeChanges } from '../support/config-store-conformance.js';
import { startNatsServer, type NatsServer } from '../support/nats-server.js';

let server: NatsServer;
let buckets = 0;
before(async () => {
  server = await startNatsServer({ jetstream: true });
});
after(() => server.stop());

runConfigStoreConformance('NatsKvConfigStore', () =>
  NatsKvConfigStore.connect({ servers: server.url, bucket: `conformance-${++buckets}` }),
);

describe('NatsKvConfigStore across connections', () => {
  test('a put by one process-like connection reaches the watch of another, with the same revision', async (t) => {
    const bucket = `shared-${++buckets}`;
    const a = await NatsKvConfigStore.connect({ servers: server.url, bucket });
    const b = await NatsKvConfigStore.connect({ servers: server.url, bucket });
    t.after(() => Promise.all([a.close(), b.close()]));
    const watch = b.watch();
    const seen = takeChanges(watch, 2);
    await new Promise((r) => setTimeout(r, 50));
    const r1 = await a.put('tool', 'tell-joke', { service: 'joke-service' });
    await a.delete('tool', 'tell-joke');
    const changes = await seen;
    assert.deepEqual(changes[0], {
      kind: 'put',
      type: 'tool',
      key: 'tell-joke',
      value: { service: 'joke-service' },
      revision: r1,
    });
    assert.equal(changes[1]?.kind, 'delete');
    assert.equal(changes[1]?.revision, await b.revision());
  });

  test('a store on a borrowed connection or an opened KV leaves the connection open on close', async (t) => {
    const bus = await NatsBus.connect({ servers: server.url });
    t.after(() => bus.close());
    const bucket = `borrowed-${++buckets}`;
    const onConnection = new NatsKvConfigStore(bus.connection, { bucket });
    const revision = await onConnection.put('tool', 'a', '1');
    await onConnection.close();
    assert.equal(bus.connection.isClosed(), false);
    await assert.rejects(onConnection.get('tool', 'a'), { name: 'ToolbusError', code: 'closed' });
    const kv = await new Kvm(bus.connection).open(bucket);
    const onKv = new NatsKvConfigStore(kv);
    t.after(() => onKv.close());
    assert.deepEqual(await onKv.get('tool', 'a'), { type: 'tool', key: 'a', value: 1, revision });
  });

  test('text that is not JSON, written around toolbus, is reported naming the item; the registry keeps its tools', async (t) => {
    const bucket = `foreign-${++buckets}`;
    const store = await NatsKvConfigStore.connect({ servers: server.url, bucket });
    t.after(() => store.close());
    const ok = new FunctionTool(() => 'ok', { name: 'ok', description: 'ok', parameters: z.object({}) });
    await store.put('tool', 'ok', { type: 'function', name: 'ok' });
    const registry = new ToolRegistry({ store, functions: [ok], debounceMs: 1, retryMs: 20 });
    t.after(() => registry.close());
    await registry.start();
    const watch = store.watch();
    const bus = await NatsBus.connect({ servers: server.url });
    t.after(() => bus.close());
    const kv = await new Kvm(bus.connection).open(bucket);
    await kv.put('tool.ok', '{"type": "function", "name": ok}'); // as with `nats kv put`, a typo
    const expected = /config item 'tool\/ok': invalid JSON at line 1, column 30.*toolbus config put tool\/ok/;
    await assert.rejects(takeChanges(watch, 1, 10_000), { code: 'store-error', message: expected });
    await assert.rejects(store.list(), { code: 'store-error', message: expected });
    for (let i = 0; i < 200 && !registry.problems().some((p) => p.key === 'store'); i++)
      await new Promise((r) => setTimeout(r, 10));
    assert.match(registry.problems().find((p) => p.key === 'store')?.message ?? '', expected);
    assert.deepEqual(
      registry.tools.list().map((x) => x.name),
      ['ok'],
    );
    await store.put('tool', 'ok', { type: 'function', name: 'ok' }); // fixed: the problem goes
    for (let i = 0; i < 200 && registry.problems().length > 0; i++)
      await new Promise((r) => setTimeout(r, 10));
    assert.deepEqual(registry.problems(), []);
  });

  test('keys with dots and equals signs survive the KV key encoding', async (t) => {
    const store = await NatsKvConfigStore.connect({ servers: server.url, bucket: `names-${++buckets}` });
    t.after(() => store.close());
    await store.put('tool', 'v1.2', '1');
    await store.put('tool', 'a=b', '2');
    await store.put('tool.x', 'k', '3');
    assert.deepEqual(
      (await store.list()).map((i) => `${i.type}/${i.key}=${String(i.value)}`),
      ['tool/a=b=2', 'tool/v1.2=1', 'tool.x/k=3'],
    );
    assert.deepEqual(
      (await store.list('tool')).map((i) => i.key),
      ['a=b', 'v1.2'],
    );
  });

  test('a bad bucket name is invalid-config; a server without JetStream is unavailable', async (t) => {
    await assert.rejects(NatsKvConfigStore.connect({ servers: server.url, bucket: 'a.b' }), {
      code: 'invalid-config',
      message: /bucket 'a\.b'/,
    });
    const plain = await startNatsServer({ jetstream: false });
    t.after(() => plain.stop());
    await assert.rejects(NatsKvConfigStore.connect({ servers: plain.url, connectTimeoutMs: 2_000 }), {
      name: 'ToolbusError',
      code: 'unavailable',
      message: /JetStream/,
    });
  });

  test('connecting to a silent server: an abort ends the attempt with timeout (AbortSignal.timeout) or cancelled, no server is unavailable', async (t) => {
    // Accepts TCP and never sends NATS's INFO: the client waits for its connect timeout.
    const sockets = new Set<Socket>();
    const silent = createServer((socket) => {
      sockets.add(socket);
      socket.on('error', () => undefined);
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    t.after(async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    });
    const { port } = silent.address() as AddressInfo;
    const started = performance.now();
    await assert.rejects(
      NatsKvConfigStore.connect({
        servers: `nats://127.0.0.1:${port}`,
        connectTimeoutMs: 20_000,
        signal: AbortSignal.timeout(200),
      }),
      { name: 'ToolbusError', code: 'timeout', message: /connecting to NATS at .* timed out/ },
    );
    assert.ok(performance.now() - started < 5_000, 'the abort ends the attempt, not the connect timeout');
    await assert.rejects(
      NatsKvConfigStore.connect({ servers: 'nats://127.0.0.1:1', connectTimeoutMs: 2_000, reconnect: false }),
      {
        name: 'ToolbusError',
        code: 'unavailable',
        message: /cannot connect to NATS.*expected a running nats-server/,
      },
    );
  });

  test('config survives a nats-server restart and a watch resumes after the reconnect', async (t) => {
    const own = await startNatsServer({ jetstream: true });
    t.after(() => own.stop());
    const store = await NatsKvConfigStore.connect({ servers: own.url, reconnectWaitMs: 50 });
    t.after(() => store.close());
    const rev = await store.put('tool-service', 'joke-service', { id: 'joke-service' });
    const watch = store.watch();
    const first = takeChanges(watch, 1, 15_000);
    await new Promise((r) => setTimeout(r, 50));
    await own.restart({ kill: true });
    let item;
    for (let i = 0; i < 100 && item === undefined; i++) {
      item = await store.get('tool-service', 'joke-service').catch(() => undefined);
      if (item === undefined) await new Promise((r) => setTimeout(r, 100));
    }
    assert.deepEqual(item, {
      type: 'tool-service',
      key: 'joke-service',
      value: { id: 'joke-service' },
      revision: rev,
    });
    const after = await store.put('tool', 'after-restart', '{}');
    const [change] = await first;
    assert.equal(change?.key, 'after-restart');
    assert.equal(change?.revision, after);
  });
});
