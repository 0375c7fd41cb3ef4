import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryBus } from '../bus/index.js';
import { MemoryConfigStore } from '../config/index.js';
import { DynamicToolService } from '../services/index.js';
import { FunctionTool } from '../tools/index.js';
import { ToolbusError } from '../errors/index.js';
import { z } from 'zod';
import { ToolRegistry, type ToolTypeFactory } from './index.js';

const service = {
  id: 'svc',
  'request-queue': 'non-persistent://tg/request/svc',
  'response-queue': 'non-persistent://tg/response/svc',
};
const item = (name: string, description: string, extra: Record<string, unknown> = {}) => ({
  type: 'tool-service',
  name,
  description,
  service: 'svc',
  arguments: [{ name: 'q', type: 'string', description: 'what to look for' }],
  ...extra,
});

async function setup(
  t: { after: (fn: () => unknown) => void },
  toolTypes: Record<string, ToolTypeFactory> = {},
) {
  const store = new MemoryConfigStore();
  const bus = new MemoryBus();
  const svc = new DynamicToolService({
    bus,
    id: 'svc',
    topic: 'svc',
    invoke: (_u, _c, args) => `got ${String(args['q'])}`,
  });
  await svc.start();
  await store.put('tool-service', 'svc', service);
  const registry = new ToolRegistry({ store, bus, debounceMs: 1, announcements: false, toolTypes });
  await registry.start();
  t.after(async () => {
    await registry.close();
    await svc.stop();
    await bus.close();
  });
  const put = async (type: string, key: string, value: Parameters<MemoryConfigStore['put']>[2]) => {
    await store.put(type, key, value);
    await registry.refresh();
  };
  return { store, registry, put };
}

describe('ToolRegistry: tags, search and profiles', () => {
  test('an item\'s "tags" and "approval" apply to any tool type; its factory never sees them', async (t) => {
    const seen: string[][] = [];
    const strict: ToolTypeFactory = (descriptor, ctx) => {
      seen.push(Object.keys(descriptor));
      return new FunctionTool(() => 'ok', { name: ctx.key, description: 'strict', parameters: z.object({}) });
    };
    const f = await setup(t, { strict });
    await f.put('tool', 'picky', { type: 'strict', tags: ['ops', 'ops'], approval: 'always' });
    const built = f.registry.tools.get('picky')!;
    assert.deepEqual(built.tags, ['ops']);
    assert.equal(built.needsApproval, true);
    assert.deepEqual(seen.at(-1), ['type']);
    await f.put('tool', 'bad', { type: 'strict', tags: ['no spaces allowed'] });
    const problem = f.registry.problems().find((p) => p.key === 'tool/bad');
    assert.match(
      problem?.message ?? '',
      /config 'tool\/bad': field 'tags': tag 'no spaces allowed' is not a tag/,
    );
  });

  test('search follows hot reload: a put tool is found at once, a deleted one is gone, tags count', async (t) => {
    const f = await setup(t);
    await f.put('tool', 'get-weather', item('get-weather', 'Current weather for a city'));
    await f.put('tool', 'file-taxes', item('file-taxes', 'Submit a tax return', { tags: ['finance'] }));
    assert.equal(f.registry.search('weather city')[0]?.name, 'get-weather');
    assert.equal(f.registry.search('finance')[0]?.name, 'file-taxes');
    assert.deepEqual(f.registry.search('finance')[0]?.tags, ['finance']);
    await f.store.delete('tool', 'get-weather');
    await f.registry.refresh();
    assert.deepEqual(f.registry.search('weather'), []);
    assert.throws(
      () => f.registry.search(''),
      (e: unknown) => e instanceof ToolbusError && e.code === 'usage',
    );
  });

  test('announced tools are searchable with their tags, and leave the index when their service goes', async (t) => {
    const bus = new MemoryBus();
    const registry = new ToolRegistry({ store: new MemoryConfigStore(), bus, debounceMs: 1 });
    const announcer = new DynamicToolService({
      bus,
      id: 'maps',
      topic: 'maps',
      invoke: () => 'route',
      announce: {
        tools: [
          {
            name: 'plan-route',
            description: 'Driving directions between two places',
            tags: ['geo'],
            arguments: [{ name: 'from', type: 'string', description: 'start address' }],
          },
        ],
      },
    });
    t.after(async () => {
      await registry.close();
      await bus.close();
    });
    await registry.start();
    await announcer.start();
    for (let i = 0; i < 100 && !registry.tools.get('plan-route'); i++) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    assert.equal(registry.search('directions')[0]?.name, 'plan-route');
    assert.deepEqual(registry.search('geo')[0]?.tags, ['geo']);
    assert.equal(registry.search('address')[0]?.name, 'plan-route');
    await announcer.stop();
    for (let i = 0; i < 100 && registry.tools.get('plan-route'); i++) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    assert.deepEqual(registry.search('directions'), []);
  });

  test('a profile is a live view: it follows its item and the tools; a broken or unknown one is reported', async (t) => {
    const f = await setup(t);
    for (const name of ['weather-now', 'weather-admin', 'invoice-create']) {
      await f.put('tool', name, item(name, name, name === 'invoice-create' ? { tags: ['billing'] } : {}));
    }
    let changes = 0;
    f.registry.onChange(() => changes++);
    await f.put('profile', 'ops', { tools: ['weather-*'], exclude: ['*-admin'] });
    assert.ok(changes >= 1, 'a profile edit alone tells the listeners');
    const ops = f.registry.profile('ops');
    let viewChanges = 0;
    const stop = ops.onChange?.(() => viewChanges++) as () => void;
    assert.deepEqual(
      ops.list().map((x) => x.name),
      ['weather-now'],
    );
    assert.equal((await ops.call('weather-now', { q: 'x' })).content, 'got x');
    assert.equal((await ops.call('invoice-create', { q: 'x' })).error?.code, 'unknown-tool');
    await f.put('profile', 'ops', { tools: ['weather-*'], tags: ['billing'] });
    assert.equal(viewChanges, 1, "the view's listeners hear of an edit of its item alone");
    stop();
    assert.deepEqual(
      ops
        .list()
        .map((x) => x.name)
        .sort(),
      ['invoice-create', 'weather-admin', 'weather-now'],
    );
    await f.put('tool', 'weather-later', item('weather-later', 'later'));
    assert.ok(ops.list().some((x) => x.name === 'weather-later'));
    assert.deepEqual(f.registry.profiles(), ['ops']);

    assert.throws(
      () => f.registry.profile('opz'),
      (e: unknown) =>
        e instanceof ToolbusError &&
        e.code === 'not-found' &&
        /did you mean 'ops'\?\); profiles: ops/.test(e.message),
    );
    await f.put('profile', 'broken', { tools: 'weather-*' });
    assert.match(
      f.registry.problems().find((p) => p.key === 'profile/broken')?.message ?? '',
      /field 'tools' must be an array/,
    );
    assert.throws(
      () => f.registry.profile('broken'),
      (e: unknown) => e instanceof ToolbusError && e.code === 'invalid-config',
    );
    await f.store.delete('profile', 'ops');
    await f.registry.refresh();
    assert.deepEqual(ops.list(), [], 'a view of a deleted profile lists nothing');
  });
});
