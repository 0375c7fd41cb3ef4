import { describe, mock, test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryBus } from '../bus/index.js';
import { MemoryConfigStore } from '../config/index.js';
import {
  DynamicToolService,
  TOOL_DESCRIPTORS_TOPIC,
  ToolServiceClientCache,
  decodeAnnouncement,
  startAnnouncer,
} from '../services/index.js';
import type { DynamicToolServiceAnnounceOptions } from '../services/index.js';
import { ToolRegistry } from './index.js';
import type { ToolRegistryOptions } from './index.js';

const tellJoke = {
  name: 'tell-joke',
  description: 'Tell a joke',
  arguments: [{ name: 'topic', type: 'string', description: 'what about' }],
};

/** Lets queued bus deliveries (microtasks) and their follow-ups run. */
const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A junk announcement: service `junk-<i>` with one tool, as any bus peer may send. */
const junk = (i: number, ttlMs = 600_000) =>
  JSON.stringify({
    kind: 'announce',
    instance: `junk-${i}-1`,
    'ttl-ms': ttlMs,
    service: {
      id: `junk-${i}`,
      'request-queue': `request:tg:junk-${i}`,
      'response-queue': `response:tg:junk-${i}`,
    },
    tools: [{ name: `junk-tool-${i}`, description: 'junk', arguments: [] }],
  });

async function setup(
  t: { after: (fn: () => unknown) => void },
  options:
    | Omit<ToolRegistryOptions, 'store' | 'bus'>
    | ((bus: MemoryBus) => Omit<ToolRegistryOptions, 'store' | 'bus'>) = {},
) {
  const bus = new MemoryBus();
  const store = new MemoryConfigStore();
  const registry = new ToolRegistry({
    store,
    bus,
    debounceMs: 1,
    ...(typeof options === 'function' ? options(bus) : options),
  });
  const services: DynamicToolService[] = [];
  const startService = async (announce: Partial<DynamicToolServiceAnnounceOptions> = {}, reply = 'joke') => {
    const service = new DynamicToolService({
      bus,
      id: 'joke-service',
      topic: 'joke',
      invoke: (_user, _config, args) => `${reply} about ${String(args.topic)}`,
      announce: { tools: [tellJoke], ...announce },
    });
    await service.start();
    services.push(service);
    return service;
  };
  t.after(async () => {
    await registry.close();
    for (const s of services) await s.stop();
    await bus.close();
  });
  const settle = async () => {
    await flush();
    await registry.refresh();
  };
  const names = () => registry.tools.list().map((x) => x.name);
  return { bus, store, registry, startService, settle, names };
}

describe('self-announcing services', () => {
  test('an announced tool appears in a running registry and is callable', async (t) => {
    const f = await setup(t);
    await f.registry.start();
    assert.deepEqual(f.names(), []);
    await f.startService();
    await f.settle();
    assert.deepEqual(f.names(), ['tell-joke']);
    const result = await f.registry.tools.call('tell-joke', { topic: 'cats' });
    assert.deepEqual([result.isError, result.content], [false, 'joke about cats']);
  });

  test('a registry that starts later asks services to announce at once (no waiting for a heartbeat)', async (t) => {
    const f = await setup(t);
    await f.startService({ ttlMs: 600_000, heartbeatMs: 300_000 });
    await flush();
    await f.registry.start();
    await f.settle();
    assert.deepEqual(f.names(), ['tell-joke']);
  });

  test('an announcer answers an announce-request with or without the kind property, and only that kind', async (t) => {
    const f = await setup(t);
    await f.startService({ ttlMs: 600_000, heartbeatMs: 300_000 });
    await flush();
    const seen: string[] = [];
    await f.bus.subscribe(TOOL_DESCRIPTORS_TOPIC, (m) => void seen.push(decodeAnnouncement(m.body).kind));
    const request = JSON.stringify({ kind: 'announce-request' });
    // A peer that sets no properties: the body decides.
    await f.bus.publish(TOOL_DESCRIPTORS_TOPIC, request);
    await flush();
    assert.deepEqual(seen, ['announce-request', 'announce']);
    // Another instance's heartbeat or goodbye is not answered.
    await f.bus.publish(TOOL_DESCRIPTORS_TOPIC, JSON.stringify({ kind: 'goodbye', instance: 'x' }), {
      kind: 'goodbye',
    });
    await flush();
    assert.deepEqual(seen, ['announce-request', 'announce', 'goodbye']);
    await f.bus.publish(TOOL_DESCRIPTORS_TOPIC, request, { kind: 'announce-request' });
    await flush();
    assert.deepEqual(seen, ['announce-request', 'announce', 'goodbye', 'announce-request', 'announce']);
  });

  test('goodbye: stopping the service withdraws its tools', async (t) => {
    const f = await setup(t);
    await f.registry.start();
    const service = await f.startService();
    await f.settle();
    assert.deepEqual(f.names(), ['tell-joke']);
    await service.stop();
    await f.settle();
    assert.deepEqual(f.names(), []);
  });

  test('two instances of one service: the tool stays until the last one says goodbye', async (t) => {
    const f = await setup(t);
    await f.registry.start();
    const one = await f.startService({}, 'one');
    const two = await f.startService({}, 'two');
    await f.settle();
    assert.deepEqual(f.names(), ['tell-joke']);
    await one.stop();
    await f.settle();
    assert.deepEqual(f.names(), ['tell-joke']);
    const result = await f.registry.tools.call('tell-joke', { topic: 'x' });
    assert.deepEqual([result.isError, result.content], [false, 'two about x']);
    await two.stop();
    await f.settle();
    assert.deepEqual(f.names(), []);
  });

  test('heartbeats keep the tools; when they lapse past the TTL the tools are withdrawn', async (t) => {
    mock.timers.enable({ apis: ['setTimeout', 'setInterval'] });
    t.after(() => mock.timers.reset());
    let clock = 1_000_000;
    const f = await setup(t, { now: () => clock });
    const advance = async (ms: number) => {
      for (let done = 0; done < ms; done += 100) {
        clock += 100;
        mock.timers.tick(100);
        await flush();
      }
    };
    await f.registry.start();
    // A live announcer (heartbeat every 1 s, TTL 3 s) ...
    await f.startService({ ttlMs: 3_000, heartbeatMs: 1_000 });
    // ... and a crashed one: announced once, then nothing (no heartbeat, no goodbye).
    await f.bus.publish(
      TOOL_DESCRIPTORS_TOPIC,
      JSON.stringify({
        kind: 'announce',
        instance: 'crashed-1',
        'ttl-ms': 3_000,
        service: { id: 'calc', 'request-queue': 'request:tg:calc', 'response-queue': 'response:tg:calc' },
        tools: [{ name: 'add', description: 'Add', arguments: [] }],
      }),
    );
    await f.settle();
    assert.deepEqual(f.names().sort(), ['add', 'tell-joke']);
    await advance(2_900);
    await f.registry.refresh();
    assert.deepEqual(f.names().sort(), ['add', 'tell-joke'], 'still within the TTL');
    await advance(200);
    await f.registry.refresh();
    assert.deepEqual(f.names(), ['tell-joke'], 'the crashed instance lapsed; the live one kept beating');
    await advance(10_000);
    await f.registry.refresh();
    assert.deepEqual(f.names(), ['tell-joke']);
  });

  test('on a name conflict config wins over announcements, and it is reported', async (t) => {
    const f = await setup(t);
    await f.store.put('tool-service', 'config-jokes', {
      id: 'config-jokes',
      'request-queue': 'request:tg:joke',
      'response-queue': 'response:tg:joke',
    });
    await f.store.put('tool', 'tell-joke', {
      type: 'tool-service',
      name: 'tell-joke',
      description: 'from config',
      service: 'config-jokes',
      arguments: [],
    });
    await f.registry.start();
    await f.startService();
    await f.settle();
    assert.equal(f.registry.tools.get('tell-joke')?.description, 'from config');
    const problem = f.registry.problems().find((p) => p.key === 'announced/joke-service/tell-joke');
    assert.equal(problem?.severity, 'warning');
    assert.match(problem!.message, /config wins over announcements/);
  });

  test('a config tool may use an announced service', async (t) => {
    const f = await setup(t);
    await f.store.put('tool', 'pun', {
      type: 'tool-service',
      name: 'pun',
      description: 'A pun',
      service: 'joke-service',
      arguments: [{ name: 'topic', type: 'string' }],
    });
    await f.registry.start();
    assert.equal(f.registry.problems()[0]?.key, 'tool/pun');
    await f.startService();
    await f.settle();
    assert.deepEqual(f.names().sort(), ['pun', 'tell-joke']);
    assert.equal((await f.registry.tools.call('pun', { topic: 'y' })).content, 'joke about y');
  });

  test('a registry whose first load fails leaves no subscription on the bus', async (t) => {
    const bus = new MemoryBus();
    const store = new MemoryConfigStore();
    await store.close(); // the first load fails with `closed`
    const registry = new ToolRegistry({ store, bus, debounceMs: 1 });
    t.after(async () => {
      await registry.close();
      await bus.close();
    });
    await assert.rejects(registry.start(), { code: 'closed' });
    // Nobody listens on the announcement topic any more: a publish there reaches no one.
    const codes: string[] = [];
    await bus.publish(TOOL_DESCRIPTORS_TOPIC, '{}', undefined, {
      onUnavailable: (error) => void codes.push(error.code),
    });
    await flush();
    assert.deepEqual(codes, ['unavailable']);
  });

  test('announcers reject bad descriptors with invalid-config; bad announcements are decoded as errors', async () => {
    const bus = new MemoryBus();
    await assert.rejects(startAnnouncer(bus, { service: { id: 'x' } }), { code: 'invalid-config' });
    await assert.rejects(
      startAnnouncer(bus, {
        service: { id: 'x', 'request-queue': 'request:tg:x', 'response-queue': 'response:tg:x' },
        tools: [{ name: 'y', description: 'y', service: 'other' }],
      }),
      { code: 'invalid-config', message: /names service 'other'/ },
    );
    await assert.rejects(
      startAnnouncer(bus, {
        service: { id: 'x', 'request-queue': 'request:tg:x', 'response-queue': 'response:tg:x' },
        ttlMs: 1000,
        heartbeatMs: 1000,
      }),
      { code: 'invalid-config', message: /below ttlMs/ },
    );
    assert.throws(() => decodeAnnouncement('nope'), { code: 'invalid-request' });
    assert.throws(() => decodeAnnouncement('{"kind":"announce","instance":"i","ttl-ms":0}'), /ttl-ms/);
    assert.deepEqual(decodeAnnouncement('{"kind":"goodbye","instance":"i","service-id":"s"}'), {
      kind: 'goodbye',
      instanceId: 'i',
      serviceId: 's',
    });
    await bus.close();
  });

  test('an announced time-to-live of weeks keeps the tool without re-arming a timer every millisecond', async (t) => {
    const f = await setup(t);
    await f.registry.start();
    const warnings: string[] = [];
    const onWarning = (w: Error): void => void warnings.push(w.name);
    process.on('warning', onWarning);
    t.after(() => process.off('warning', onWarning));
    const announcement = {
      kind: 'announce',
      instance: 'joke-service-long',
      'ttl-ms': 60 * 24 * 3600 * 1000, // 60 days
      service: {
        id: 'joke-service',
        'request-queue': 'request:tg:joke',
        'response-queue': 'response:tg:joke',
      },
      tools: [{ type: 'tool-service', service: 'joke-service', ...tellJoke }],
    };
    await f.bus.publish(TOOL_DESCRIPTORS_TOPIC, JSON.stringify(announcement), { kind: 'announce' });
    await f.settle();
    await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(f.names(), ['tell-joke']);
    assert.deepEqual(warnings, []);
  });
});

describe('announcements cannot stall a registry', () => {
  test('good tools stay listed and callable during a flood of junk services; what is kept is capped', async (t) => {
    const f = await setup(t, { announcementLimits: { maxServices: 20 } });
    await f.registry.start();
    await f.startService();
    await f.settle();
    let calls = 0;
    for (let batch = 0; batch < 20; batch++) {
      for (let i = batch * 200; i < (batch + 1) * 200; i++)
        void f.bus.publish(TOOL_DESCRIPTORS_TOPIC, junk(i));
      await flush();
      const result = await f.registry.tools.call('tell-joke', { topic: `batch ${batch}` });
      assert.deepEqual([result.isError, result.content], [false, `joke about batch ${batch}`]);
      calls++;
    }
    await f.registry.refresh();
    assert.equal(calls, 20);
    assert.ok(f.registry.tools.get('tell-joke'), 'the good tool is still listed');
    const services = f.registry.announcedInstances();
    assert.equal(services.size, 20, 'the good service and the first 19 junk ones');
    assert.ok(services.has('joke-service'));
    assert.equal(f.names().length, 20);
    const problems = f.registry.problems();
    assert.ok(problems.length <= 102, `problems are bounded, got ${problems.length}`);
    const summary = problems.find((p) => p.key === 'announced' && /by reason/.test(p.message));
    assert.match(summary?.message ?? '', /by reason: 3881 services/, '4000 - 19 kept - 100 listed');
  });

  test('a ttl-ms of 1e308 is kept only for maxTtlMs after its last announcement, and reported', async (t) => {
    mock.timers.enable({ apis: ['setTimeout', 'setInterval'] });
    t.after(() => mock.timers.reset());
    let clock = 1_000_000;
    const f = await setup(t, { now: () => clock, announcementLimits: { maxTtlMs: 5_000 } });
    const advance = async (ms: number) => {
      for (let done = 0; done < ms; done += 100) {
        clock += 100;
        mock.timers.tick(100);
        await flush();
      }
      await f.registry.refresh();
    };
    await f.registry.start();
    await f.bus.publish(TOOL_DESCRIPTORS_TOPIC, junk(1, 1e308));
    await f.settle();
    assert.deepEqual(f.names(), ['junk-tool-1']);
    const problem = f.registry.problems().find((p) => p.key === 'announced/junk-1');
    assert.equal(problem?.severity, 'warning');
    assert.match(
      problem!.message,
      /'ttl-ms' \(1e\+308\) is over the cap of 5000 ms \(announcementLimits\.maxTtlMs\)/,
    );
    await advance(4_900);
    assert.deepEqual(f.names(), ['junk-tool-1']);
    await advance(200);
    assert.deepEqual(f.names(), [], 'it stopped announcing, so it went after maxTtlMs');
  });

  test('announcementLimits must be positive integers', () => {
    const store = new MemoryConfigStore();
    const bus = new MemoryBus();
    for (const [name, value] of [
      ['maxServices', 0],
      ['maxBytes', -1],
      ['maxTtlMs', Number.NaN],
      ['maxTools', 1.5],
      ['maxInstancesPerService', Infinity],
    ] as const) {
      assert.throws(() => new ToolRegistry({ store, bus, announcementLimits: { [name]: value } }), {
        code: 'usage',
        message: new RegExp(`option 'announcementLimits\\.${name}' must be a positive integer`),
      });
    }
  });

  test('the clients of announced services that went are closed and forgotten, not piled up', async (t) => {
    let clients!: ToolServiceClientCache;
    const f = await setup(t, (bus) => ({ clients: (clients = new ToolServiceClientCache(bus)) }));
    t.after(() => clients.close());
    await f.registry.start();
    await f.startService();
    await f.settle();
    for (let i = 0; i < 50; i++) {
      await f.bus.publish(TOOL_DESCRIPTORS_TOPIC, junk(i));
      await f.settle();
      assert.ok(f.registry.tools.get(`junk-tool-${i}`));
      await f.bus.publish(
        TOOL_DESCRIPTORS_TOPIC,
        JSON.stringify({ kind: 'goodbye', instance: `junk-${i}-1` }),
      );
      await f.settle();
    }
    assert.deepEqual(f.names(), ['tell-joke']);
    assert.equal(clients.size, 1, "only the live service's client is left");
    const result = await f.registry.tools.call('tell-joke', { topic: 'churn' });
    assert.deepEqual([result.isError, result.content], [false, 'joke about churn']);
  });
});
