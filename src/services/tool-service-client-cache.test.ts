import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryBus } from '../bus/index.js';
import { ToolbusError } from '../errors/index.js';
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
