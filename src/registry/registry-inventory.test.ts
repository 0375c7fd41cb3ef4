import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryBus } from '../bus/index.js';
import { MemoryConfigStore } from '../config/index.js';
import { DynamicToolService } from '../services/index.js';
import { ToolRegistry } from './index.js';

const jokeService = {
  id: 'joke-service',
  'request-queue': 'non-persistent://tg/request/joke',
  'response-queue': 'non-persistent://tg/response/joke',
  'config-params': [{ name: 'style', required: false }],
};
const tellJoke = {
  type: 'tool-service',
  name: 'tell-joke',
  description: 'Tell a joke',
  service: 'joke-service',
  arguments: [{ name: 'topic', type: 'string', description: 'what about' }],
};

test('services() lists config and announced services with their instances and tools; toolOrigin() says where a tool comes from', async (t) => {
  const bus = new MemoryBus();
  const store = new MemoryConfigStore();
  let now = 1_700_000_000_000;
  const registry = new ToolRegistry({ store, bus, debounceMs: 1, now: () => now });
  const weather = new DynamicToolService({
    bus,
    id: 'weather-service',
    topic: 'weather',
    invoke: () => 'sunny',
    announce: {
      tools: [{ name: 'forecast', description: 'The forecast', arguments: [] }],
      ttlMs: 600_000,
      heartbeatMs: 300_000,
    },
  });
  t.after(async () => {
    await registry.close();
    await weather.stop();
    await store.close();
    await bus.close();
  });
  await store.put('tool-service', 'joke-service', jokeService);
  await store.put('tool', 'tell-joke', tellJoke);
  await store.put('tool-service', 'broken', { 'request-queue': 42 });
  await registry.start();
  await weather.start();
  await new Promise((resolve) => setImmediate(resolve));
  await registry.refresh();

  const services = registry.services();
  assert.deepEqual(
    services.map((s) => [s.id, s.source, s.tools]),
    [
      ['broken', 'config', []],
      ['joke-service', 'config', ['tell-joke']],
      ['weather-service', 'announced', ['forecast']],
    ],
  );
  assert.equal(services[0]!.descriptor, undefined, 'a descriptor that does not parse is left out');
  assert.deepEqual(services[1]!.descriptor?.configParams, [{ name: 'style', required: false }]);
  assert.deepEqual(services[1]!.instances, [], 'a config service that does not announce has no instances');
  const [instance] = services[2]!.instances;
  assert.equal(typeof instance!.id, 'string');
  assert.equal(instance!.lastSeen, now, 'last seen: when it announced, by the registry clock');
  now += 1000;

  assert.deepEqual(registry.toolOrigin('tell-joke'), {
    source: 'tool/tell-joke',
    key: 'tell-joke',
    type: 'tool-service',
    service: 'joke-service',
  });
  assert.deepEqual(registry.toolOrigin('forecast'), {
    source: 'announced/weather-service/forecast',
    type: 'tool-service',
    service: 'weather-service',
  });
  assert.equal(registry.toolOrigin('nope'), undefined);

  // A deleted tool goes from its service's list and has no origin any more.
  await store.delete('tool', 'tell-joke');
  await registry.refresh();
  assert.equal(registry.toolOrigin('tell-joke'), undefined);
  assert.deepEqual(registry.services().find((s) => s.id === 'joke-service')?.tools, []);
});
