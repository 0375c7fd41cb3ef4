import { mock, test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryBus } from '../bus/index.js';
import { ToolbusError } from '../errors/index.js';
import { DynamicToolService } from './dynamic-tool-service.js';
import { ToolServiceClientCache } from './tool-service-client-cache.js';

const request = 'request:tg:cache';
const response = 'response:tg:cache';

test('ToolServiceClientCache shares one client per queue pair, in any topic form', async (t) => {
  const bus = new MemoryBus();
  const clients = new ToolServiceClientCache(bus);
  t.after(async () => {
    await clients.close();
    await bus.close();
  });
  const client = clients.get(request, response);
  assert.equal(
    clients.get('non-persistent://tg/request/cache', 'non-persistent://tg/response/cache'),
    client,
  );
  assert.equal(clients.size, 1);
});

test('ToolServiceClientCache.get after close() refuses with closed instead of creating a client nobody closes', async (t) => {
  const bus = new MemoryBus();
  const clients = new ToolServiceClientCache(bus);
  t.after(() => bus.close());
  const before = clients.get(request, response);
  await clients.close();
  await assert.rejects(
    before.call('u', {}, {}),
    (e: unknown) => e instanceof ToolbusError && e.code === 'closed',
  );
  assert.throws(
    () => clients.get(request, response),
    (e: unknown) => e instanceof ToolbusError && e.code === 'closed' && /closed/.test(e.message),
  );
  assert.equal(clients.size, 0);
  await clients.close();
});

test('ToolServiceClientCache.retain: the client goes with its last holder, after its calls in flight', async (t) => {
  mock.timers.enable({ apis: ['setInterval'] });
  t.after(() => mock.timers.reset());
  const bus = new MemoryBus();
  const clients = new ToolServiceClientCache(bus);
  t.after(async () => {
    await clients.close();
    await bus.close();
  });
  let release!: (text: string) => void;
  const started = new Promise<void>((resolve) => {
    const service = new DynamicToolService({
      bus,
      id: 'cache',
      topic: 'cache',
      invoke: () => {
        resolve();
        return new Promise<string>((done) => (release = done));
      },
    });
    t.after(() => service.stop());
    void service.start();
  });
  const one = new AbortController();
  const two = new AbortController();
  const client = clients.retain(request, response, one.signal);
  assert.equal(clients.retain(request, response, two.signal), client);
  const call = client.call('u', {}, {});
  await started;
  one.abort();
  await Promise.resolve();
  assert.equal(clients.size, 1, 'another holder is left');
  two.abort();
  await Promise.resolve();
  assert.equal(clients.size, 0, 'forgotten once nobody holds it');
  release('done');
  assert.equal(await call, 'done', 'the call in flight finished on it');
  mock.timers.tick(1_000); // the check of clients let go of with calls in flight
  await Promise.resolve();
  const next = clients.retain(request, response, new AbortController().signal);
  assert.notEqual(next, client, 'a later holder gets a new client');
  await assert.rejects(client.call('u', {}, {}), { code: 'closed' });
});

test('ToolServiceClientCache: a client handed out by get() stays when its holders go', async (t) => {
  const bus = new MemoryBus();
  const clients = new ToolServiceClientCache(bus);
  t.after(async () => {
    await clients.close();
    await bus.close();
  });
  const holder = new AbortController();
  const client = clients.retain(request, response, holder.signal);
  assert.equal(clients.get(request, response), client);
  holder.abort();
  await Promise.resolve();
  assert.equal(clients.size, 1);
  assert.equal(clients.get(request, response), client);
});
