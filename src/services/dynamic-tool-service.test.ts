import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryBus } from '../bus/index.js';
import { DynamicToolService } from './dynamic-tool-service.js';
import { ToolServiceClient } from './tool-service-client.js';

const queues = { requestQueue: 'request:tg:unit', responseQueue: 'response:tg:unit' };

test('every call gets a config object of its own, even when the same config text repeats', async (t) => {
  const bus = new MemoryBus();
  const seen: Record<string, unknown>[] = [];
  const service = new DynamicToolService({
    bus,
    ...queues,
    invoke: (_user, config) => {
      seen.push(config);
      const before = JSON.stringify(config);
      // A tool that changes its config must not change the next call's.
      config['style'] = 'changed';
      const nested = config['nested'] as { depth: number } | undefined;
      if (nested) nested.depth = -1;
      return before;
    },
  });
  await service.start();
  const client = new ToolServiceClient(bus, queues);
  t.after(async () => {
    await client.close();
    await service.stop();
    await bus.close();
  });

  const flat = '{"style":"pun","n":1,"ok":true,"none":null,"__proto__":"own"}';
  const nested = '{"style":"pun","nested":{"depth":1}}';
  for (const text of [flat, flat, flat, nested, nested, flat]) {
    assert.equal(await client.call('alice', text, {}), JSON.stringify(JSON.parse(text)));
  }
  assert.equal(new Set(seen).size, seen.length, 'no two calls share a config object');
  const first = seen[0]!;
  assert.equal(Object.getPrototypeOf(first), Object.prototype);
  assert.ok(Object.hasOwn(first, '__proto__'), "'__proto__' stays an own key, as JSON.parse leaves it");
  assert.deepEqual(Object.keys(seen[5]!), ['style', 'n', 'ok', 'none', '__proto__']);
});
