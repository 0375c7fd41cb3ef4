import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { MemoryBus } from '../bus/index.js';
import { MemoryConfigStore } from '../config/index.js';
import type { ConfigChange, ConfigStore } from '../config/index.js';
import { ScriptedChatCompletionClient } from '../models/index.js';
import { DynamicToolService } from '../services/index.js';
import { FunctionTool } from '../tools/index.js';
import { ToolbusError } from '../errors/index.js';
import type { ToolTypeFactory } from './index.js';
import { ToolRegistry } from './index.js';

const jokeService = {
  id: 'joke-service',
  'request-queue': 'non-persistent://tg/request/joke',
  'response-queue': 'non-persistent://tg/response/joke',
  'config-params': [{ name: 'style', required: true }],
};
const tool = (name: string, extra: Record<string, unknown> = {}) => ({
  type: 'tool-service',
  name,
  description: `tool ${name}`,
  service: 'joke-service',
  style: 'pun',
  arguments: [{ name: 'topic', type: 'string', description: 'what about' }],
  ...extra,
});

interface Fixture {
  store: MemoryConfigStore;
  bus: MemoryBus;
  registry: ToolRegistry;
  service: DynamicToolService;
  names(): string[];
}

/** A store, a bus, a running joke service and a registry; all closed after the test. */
async function setup(
  t: { after: (fn: () => unknown) => void },
  options: { start?: boolean; invoke?: (args: Record<string, unknown>, signal: AbortSignal) => unknown } = {},
): Promise<Fixture> {
  const store = new MemoryConfigStore();
  const bus = new MemoryBus();
  const service = new DynamicToolService({
    bus,
    id: 'joke-service',
    topic: 'joke',
    invoke: (user, config, args, ctx) =>
      options.invoke
        ? options.invoke(args, ctx.signal)
        : `${String(config.style)} about ${String(args.topic)}`,
  });
  await service.start();
  const registry = new ToolRegistry({ store, bus, debounceMs: 5, announcements: false });
  t.after(async () => {
    await registry.close();
    await service.stop();
    await store.close();
    await bus.close();
  });
  if (options.start !== false) await registry.start();
  return {
    store,
    bus,
    registry,
    service,
    names: () =>
      registry.tools
        .list()
        .map((x) => x.name)
        .sort(),
  };
}

describe('ToolRegistry: loading', () => {
  test('builds live tools from tool-service and tool items, and they call the service', async (t) => {
    const f = await setup(t, { start: false });
    await f.store.put('tool-service', 'joke-service', jokeService);
    await f.store.put('tool', 'tell-joke', tool('tell-joke'));
    await f.registry.start();
    assert.deepEqual(f.names(), ['tell-joke']);
    const result = await f.registry.tools.call('tell-joke', '{"topic":"cats"}');
    assert.deepEqual([result.isError, result.content], [false, 'pun about cats']);
    assert.deepEqual(f.registry.problems(), []);
  });

  test('a durable service descriptor: its tools call through the work queue, idempotent travels, and on the memory bus a warning says crash recovery needs NATS', async (t) => {
    const f = await setup(t, { start: false });
    const seen: { attempt: number; key: string | undefined }[] = [];
    const durable = new DynamicToolService({
      bus: f.bus,
      id: 'durable-joke',
      topic: 'durable-joke',
      delivery: 'durable',
      invoke: (_user, _config, args, ctx) => {
        seen.push({ attempt: ctx.attempt, key: ctx.idempotencyKey });
        return `durable ${String(args.topic)}`;
      },
    });
    await durable.start();
    t.after(() => durable.stop());
    await f.store.put('tool-service', 'durable-joke', {
      id: 'durable-joke',
      'request-queue': 'non-persistent://tg/request/durable-joke',
      'response-queue': 'non-persistent://tg/response/durable-joke',
      delivery: 'durable',
    });
    await f.store.put('tool', 'lasting', {
      type: 'tool-service',
      name: 'lasting',
      description: 'A joke that is not lost',
      service: 'durable-joke',
      idempotent: true,
      arguments: [{ name: 'topic', type: 'string', description: 'The topic' }],
    });
    await f.registry.start();
    const result = await f.registry.tools.call('lasting', '{"topic":"cats"}');
    assert.deepEqual([result.isError, result.content], [false, 'durable cats']);
    assert.equal(seen.length, 1);
    assert.equal(f.registry.tools.get('lasting')?.annotations?.idempotent, true);
    const problems = f.registry.problems();
    assert.equal(problems.length, 1, JSON.stringify(problems));
    assert.equal(problems[0]?.severity, 'warning');
    assert.match(
      problems[0]?.message ?? '',
      /durable, but this bus queues its calls in process memory.*Crash recovery needs NATS/,
    );
  });

  test('"approval": "always" makes every call of the tool need approval (schema unchanged); another value is a problem', async (t) => {
    const f = await setup(t, { start: false });
    await f.store.put('tool-service', 'joke-service', jokeService);
    await f.store.put('tool', 'plain', tool('plain'));
    await f.store.put('tool', 'careful', {
      ...(JSON.parse(JSON.stringify(tool('careful'))) as object),
      approval: 'always',
    });
    await f.store.put('tool', 'odd', {
      ...(JSON.parse(JSON.stringify(tool('odd'))) as object),
      approval: 'sometimes',
    });
    await f.registry.start();
    assert.deepEqual(f.names(), ['careful', 'plain']);
    const careful = f.registry.tools.get('careful')!;
    assert.equal(careful.needsApproval, true);
    assert.deepEqual(careful.schema.parameters, f.registry.tools.get('plain')!.schema.parameters);
    const refused = await f.registry.tools.call('careful', '{"topic":"cats"}');
    assert.equal(refused.error?.code, 'approval-required');
    const approved = await f.registry.tools.call('careful', '{"topic":"cats"}', { approvedBy: 'bob' });
    assert.equal(approved.content, 'pun about cats');
    assert.match(
      f.registry.problems()[0]?.message ?? '',
      /field 'approval' must be "always" or "never", got "sometimes"/,
    );
  });

  test('one bad tool is skipped and reported with its key; the good ones stay live', async (t) => {
    const f = await setup(t, { start: false });
    await f.store.put('tool-service', 'joke-service', jokeService);
    await f.store.put('tool', 'a-good', tool('a-good'));
    await f.store.put('tool', 'b-bad', tool('b-bad', { style: undefined })); // missing required param
    await f.store.put('tool', 'c-good', tool('c-good'));
    await f.store.put('tool', 'd-not-object', '[1, 2]');
    await f.store.put('tool', 'e-no-type', '{"name": "e"}');
    await f.registry.start();
    assert.deepEqual(f.names(), ['a-good', 'c-good']);
    const problems = f.registry.problems();
    assert.deepEqual(
      problems.map((p) => [p.key, p.severity, p.code]),
      [
        ['tool/b-bad', 'error', 'invalid-config'],
        ['tool/d-not-object', 'error', 'invalid-config'],
        ['tool/e-no-type', 'error', 'invalid-config'],
      ],
    );
    assert.match(problems[0]!.message, /missing required config param 'style'/);
    assert.match(problems[2]!.message, /field 'type' must name a tool type/);
  });

  test('a bad tool-service item is reported even when no tool uses it', async (t) => {
    const f = await setup(t, { start: false });
    await f.store.put('tool-service', 'broken', { id: 'broken', 'request-queue': 'bad queue name!' });
    await f.registry.start();
    const [problem] = f.registry.problems();
    assert.equal(problem?.key, 'tool-service/broken');
    assert.equal(problem?.code, 'invalid-config');
  });

  test("a tool-service item whose 'id' differs from its key: a warning, and tools that use the key work", async (t) => {
    const f = await setup(t, { start: false });
    await f.store.put('tool-service', 'joke-service', { ...jokeService, id: 'jokes' });
    await f.store.put('tool', 'tell-joke', tool('tell-joke'));
    await f.registry.start();
    assert.deepEqual(f.names(), ['tell-joke']);
    assert.equal((await f.registry.tools.call('tell-joke', { topic: 'x' })).content, 'pun about x');
    assert.deepEqual(
      f.registry.problems().map((p) => [p.key, p.severity]),
      [['tool-service/joke-service', 'warning']],
    );
  });

  test('a duplicate tool name: the first key wins, the other is reported', async (t) => {
    const f = await setup(t, { start: false });
    await f.store.put('tool-service', 'joke-service', jokeService);
    await f.store.put('tool', 'a', tool('same'));
    await f.store.put('tool', 'b', tool('same'));
    await f.registry.start();
    assert.deepEqual(f.names(), ['same']);
    assert.deepEqual(
      f.registry.problems().map((p) => p.key),
      ['tool/b'],
    );
    assert.match(f.registry.problems()[0]!.message, /already used by tool\/a/);
  });

  test('start rejects with the store error when the first load fails', async () => {
    const store = new MemoryConfigStore();
    await store.close();
    const registry = new ToolRegistry({ store });
    await assert.rejects(registry.start(), { code: 'closed' });
    await registry.close();
    await assert.rejects(registry.start(), (e: unknown) => e instanceof ToolbusError && e.code === 'closed');
  });
});

describe('ToolRegistry: hot reload', () => {
  test('TrustGraph bug 1: changing only a tool-service item does not wipe the tools', async (t) => {
    const f = await setup(t, { start: false });
    await f.store.put('tool-service', 'joke-service', jokeService);
    await f.store.put('tool', 'tell-joke', tool('tell-joke'));
    await f.store.put('tool', 'tell-pun', tool('tell-pun'));
    await f.registry.start();
    // Only the service changes (a new optional param).
    await f.store.put('tool-service', 'joke-service', {
      ...jokeService,
      'config-params': [...jokeService['config-params'], { name: 'lang', required: false }],
    });
    await f.registry.refresh();
    assert.deepEqual(f.names(), ['tell-joke', 'tell-pun']);
    assert.equal((await f.registry.tools.call('tell-pun', { topic: 'dogs' })).content, 'pun about dogs');
  });

  test('TrustGraph bug 2: changing only a tool item is accepted (the services are still known)', async (t) => {
    const f = await setup(t);
    await f.store.put('tool-service', 'joke-service', jokeService);
    await f.registry.refresh();
    await f.store.put('tool', 'tell-joke', tool('tell-joke'));
    await f.registry.refresh();
    assert.deepEqual(f.names(), ['tell-joke']);
    await f.store.put('tool', 'tell-joke', tool('tell-joke', { style: 'limerick' }));
    await f.registry.refresh();
    assert.equal((await f.registry.tools.call('tell-joke', { topic: 'x' })).content, 'limerick about x');
    assert.deepEqual(f.registry.problems(), []);
  });

  test('a bad edit of a live tool is reported and its last good version keeps working', async (t) => {
    const f = await setup(t);
    await f.store.put('tool-service', 'joke-service', jokeService);
    await f.store.put('tool', 'tell-joke', tool('tell-joke'));
    await f.registry.refresh();
    await f.store.put('tool', 'tell-joke', tool('tell-joke', { style: undefined })); // required param gone
    await f.registry.refresh();
    assert.deepEqual(f.names(), ['tell-joke']);
    assert.equal((await f.registry.tools.call('tell-joke', { topic: 'x' })).content, 'pun about x');
    const [problem] = f.registry.problems();
    assert.deepEqual([problem?.key, problem?.severity], ['tool/tell-joke', 'error']);
    assert.match(problem!.message, /missing required config param 'style'.*last good version.*stays live/);
    // Fixed: the new version goes live and the problem is gone.
    await f.store.put('tool', 'tell-joke', tool('tell-joke', { style: 'limerick' }));
    await f.registry.refresh();
    assert.equal((await f.registry.tools.call('tell-joke', { topic: 'x' })).content, 'limerick about x');
    assert.deepEqual(f.registry.problems(), []);
    // A bad edit, then the item is deleted: the tool goes.
    await f.store.put('tool', 'tell-joke', '"not an object"');
    await f.registry.refresh();
    assert.deepEqual(f.names(), ['tell-joke']);
    await f.store.delete('tool', 'tell-joke');
    await f.registry.refresh();
    assert.deepEqual([f.names(), f.registry.problems()], [[], []]);
  });

  test('refresh() after a write shows it even when the watch delivers it later (NATS, another process)', async (t) => {
    const inner = new MemoryConfigStore();
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    // A watch that delivers each change only once released, as a remote store's watch lags its writes.
    const store: ConfigStore = {
      put: (type, key, value, options) => inner.put(type, key, value, options),
      get: (type, key) => inner.get(type, key),
      list: (type) => inner.list(type),
      delete: (type, key, options) => inner.delete(type, key, options),
      revision: () => inner.revision(),
      close: () => inner.close(),
      watch(options) {
        const it = inner.watch(options)[Symbol.asyncIterator]();
        return {
          [Symbol.asyncIterator]: (): AsyncIterator<ConfigChange> => ({
            next: async () => {
              const result = await it.next();
              await held;
              return result;
            },
            return: () => it.return!(),
          }),
        };
      },
    };
    const fn = (name: string) =>
      new FunctionTool(() => name, { name, description: name, parameters: z.object({}) });
    const registry = new ToolRegistry({ store, functions: [fn('a'), fn('b')], debounceMs: 1 });
    t.after(async () => {
      await registry.close();
      await inner.close();
    });
    await registry.start();
    await store.put('tool', 'a', { type: 'function', name: 'a' });
    await store.put('tool', 'b', { type: 'function', name: 'b' });
    await registry.refresh();
    assert.deepEqual(
      registry.tools
        .list()
        .map((x) => x.name)
        .sort(),
      ['a', 'b'],
    );
    await store.delete('tool', 'a');
    await registry.refresh();
    assert.deepEqual(
      registry.tools.list().map((x) => x.name),
      ['b'],
    );
    // The late deliveries (put a, put b, delete a) change nothing; later changes still arrive by watch.
    release();
    await store.put('tool', 'a', { type: 'function', name: 'a' });
    for (let i = 0; i < 200 && registry.tools.list().length < 2; i++)
      await new Promise((r) => setTimeout(r, 5));
    assert.deepEqual(
      registry.tools
        .list()
        .map((x) => x.name)
        .sort(),
      ['a', 'b'],
    );
  });

  test('two refreshes at once: the older snapshot, arriving last, does not undo the newer one', async (t) => {
    const inner = new MemoryConfigStore();
    let holdLists = false;
    let releaseLists!: () => void;
    const listsHeld = new Promise<void>((resolve) => (releaseLists = resolve));
    const store: ConfigStore = {
      put: (type, key, value, options) => inner.put(type, key, value, options),
      get: (type, key) => inner.get(type, key),
      // Reads now, answers when released: a slow read of an older state.
      list: (type) => {
        const items = inner.list(type);
        return holdLists ? items.then(async (v) => (await listsHeld, v)) : items;
      },
      delete: (type, key, options) => inner.delete(type, key, options),
      revision: () => inner.revision(),
      close: () => inner.close(),
      watch: () => ({
        // A watch that never delivers: only refresh() reads the store.
        [Symbol.asyncIterator]: (): AsyncIterator<ConfigChange> => ({
          next: () => new Promise<never>(() => undefined),
          return: () => Promise.resolve({ value: undefined, done: true }),
        }),
      }),
    };
    const fn = (name: string) =>
      new FunctionTool(() => name, { name, description: name, parameters: z.object({}) });
    const registry = new ToolRegistry({ store, functions: [fn('a'), fn('b')], debounceMs: 1 });
    t.after(async () => {
      await registry.close();
      await inner.close();
    });
    await registry.start();
    await store.put('tool', 'a', { type: 'function', name: 'a' });
    holdLists = true;
    const older = registry.refresh();
    await new Promise((r) => setTimeout(r, 5)); // its list has read [a]
    holdLists = false;
    await store.put('tool', 'b', { type: 'function', name: 'b' });
    await registry.refresh();
    releaseLists();
    await older;
    assert.deepEqual(
      registry.tools
        .list()
        .map((x) => x.name)
        .sort(),
      ['a', 'b'],
    );
  });

  test('a tool whose service arrives later goes live when it does (either order)', async (t) => {
    const f = await setup(t);
    await f.store.put('tool', 'tell-joke', tool('tell-joke'));
    await f.registry.refresh();
    assert.deepEqual(f.names(), []);
    const [problem] = f.registry.problems();
    assert.equal(problem?.key, 'tool/tell-joke');
    assert.match(
      problem!.message,
      /unknown tool service 'joke-service'; add config item 'tool-service\/joke-service'/,
    );
    await f.store.put('tool-service', 'joke-service', jokeService);
    await f.registry.refresh();
    assert.deepEqual(f.names(), ['tell-joke']);
    assert.deepEqual(f.registry.problems(), []);
  });

  test('deletes: a deleted tool goes; a deleted service takes its tools out, reported', async (t) => {
    const f = await setup(t, { start: false });
    await f.store.put('tool-service', 'joke-service', jokeService);
    await f.store.put('tool', 'a', tool('a'));
    await f.store.put('tool', 'b', tool('b'));
    await f.registry.start();
    await f.store.delete('tool', 'a');
    await f.registry.refresh();
    assert.deepEqual(f.names(), ['b']);
    await f.store.delete('tool-service', 'joke-service');
    await f.registry.refresh();
    assert.deepEqual(f.names(), []);
    assert.deepEqual(
      f.registry.problems().map((p) => p.key),
      ['tool/b'],
    );
  });

  test('changes are applied by the watch without refresh(), and onChange reports them', async (t) => {
    const f = await setup(t);
    const changes: { added: string[]; removed: string[] }[] = [];
    const seen = new Promise<void>((resolve) =>
      f.registry.onChange((c) => {
        changes.push({ added: c.added, removed: c.removed });
        if (c.added.includes('tell-joke')) resolve();
      }),
    );
    await f.store.put('tool-service', 'joke-service', jokeService);
    await f.store.put('tool', 'tell-joke', tool('tell-joke'));
    await seen;
    assert.deepEqual(changes.at(-1), { added: ['tell-joke'], removed: [] });
  });

  test('an unchanged tool is reused (same object) when other items change', async (t) => {
    const f = await setup(t, { start: false });
    await f.store.put('tool-service', 'joke-service', jokeService);
    await f.store.put('tool', 'a', tool('a'));
    await f.registry.start();
    const before = f.registry.tools.get('a');
    await f.store.put('tool', 'b', tool('b'));
    await f.registry.refresh();
    assert.equal(f.registry.tools.get('a'), before);
    await f.store.put('tool-service', 'joke-service', {
      ...jokeService,
      'request-queue': 'request:tg:joke2',
    });
    await f.registry.refresh();
    assert.notEqual(f.registry.tools.get('a'), before, 'rebuilt because its service changed');
  });

  test('a call in flight finishes on the set it started with; the next call sees the new set', async (t) => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const f = await setup(t, {
      start: false,
      invoke: async (args) => {
        await gate;
        return `done ${String(args.topic)}`;
      },
    });
    await f.store.put('tool-service', 'joke-service', jokeService);
    await f.store.put('tool', 'slow', tool('slow'));
    await f.registry.start();
    const inFlight = f.registry.tools.call('slow', { topic: 'a' });
    await f.store.delete('tool', 'slow');
    await f.registry.refresh();
    assert.deepEqual(f.names(), []);
    release();
    const result = await inFlight;
    assert.deepEqual([result.isError, result.content], [false, 'done a']);
    const after = await f.registry.tools.call('slow', { topic: 'b' });
    assert.equal(after.isError, true);
    assert.equal(after.error?.code, 'unknown-tool');
  });

  test('a burst of changes ends in the consistent final set', async (t) => {
    const f = await setup(t);
    await f.store.put('tool-service', 'joke-service', jokeService);
    for (let i = 0; i < 30; i++) await f.store.put('tool', `t${i}`, tool(`t${i}`));
    for (let i = 0; i < 30; i += 2) await f.store.delete('tool', `t${i}`);
    await f.registry.refresh();
    assert.equal(f.names().length, 15);
    assert.ok(f.names().every((n) => Number(n.slice(1)) % 2 === 1));
  });
});

describe('ToolRegistry: tool types', () => {
  test('function: a tool registered in code, referenced by name (and renamed)', async (t) => {
    const store = new MemoryConfigStore();
    const price = new FunctionTool(({ ticker }: { ticker: string }) => `${ticker}: 32.38`, {
      name: 'get_stock_price',
      description: 'Get the stock price',
      parameters: z.object({ ticker: z.string() }),
    });
    const registry = new ToolRegistry({ store, functions: [price], debounceMs: 1 });
    t.after(() => registry.close());
    await store.put('tool', 'stock', { type: 'function', name: 'get_stock_price' });
    await store.put('tool', 'quote', {
      type: 'function',
      function: 'get_stock_price',
      name: 'quote',
      description: 'A quote',
    });
    await store.put('tool', 'missing', { type: 'function', name: 'nope' });
    await registry.start();
    assert.equal(registry.tools.get('get_stock_price'), price);
    assert.equal(registry.tools.get('quote')?.schema.description, 'A quote');
    assert.equal((await registry.tools.call('quote', { ticker: 'AAPL' })).content, 'AAPL: 32.38');
    const [problem] = registry.problems();
    assert.equal(problem?.key, 'tool/missing');
    assert.match(problem!.message, /no function tool named 'nope'.*registered: 'get_stock_price'/);
  });

  test('text-completion and prompt call the registry model (template filled from the arguments)', async (t) => {
    const store = new MemoryConfigStore();
    const model = new ScriptedChatCompletionClient(['Paris', 'Why did the cat...']);
    const registry = new ToolRegistry({ store, model });
    t.after(() => registry.close());
    await store.put('tool', 'ask', { type: 'text-completion', name: 'ask', description: 'Ask the LLM' });
    await store.put('prompt', 'joke', {
      template: 'Tell a {{style}} joke about {{topic}}',
      system: 'Be brief',
    });
    await store.put('tool', 'joke', {
      type: 'prompt',
      name: 'joke',
      description: 'A joke',
      template: 'joke',
      arguments: [
        { name: 'topic', type: 'string', description: 'about' },
        { name: 'style', type: 'string', description: 'style' },
      ],
    });
    await registry.start();
    assert.deepEqual(registry.tools.get('ask')?.schema.parameters.required, ['question']);
    assert.equal((await registry.tools.call('ask', { question: 'Capital of France?' })).content, 'Paris');
    assert.equal(
      (await registry.tools.call('joke', { topic: 'cats', style: 'dry' })).content,
      'Why did the cat...',
    );
    const sent = model.calls[1]!.messages.map((m) => (m as { content: string }).content);
    assert.deepEqual(sent, ['Be brief', 'Tell a dry joke about cats']);
    assert.equal(model.calls[0]!.messages.at(-1)?.constructor.name, 'UserMessage');
  });

  test('prompt and text-completion without a model, or with an undeclared placeholder, are reported', async (t) => {
    const store = new MemoryConfigStore();
    const registry = new ToolRegistry({ store });
    t.after(() => registry.close());
    await store.put('tool', 'ask', { type: 'text-completion', description: 'Ask' });
    await registry.start();
    assert.match(registry.problems()[0]!.message, /pass \{ model \} to ToolRegistry/);
    const withModel = new ToolRegistry({ store, model: new ScriptedChatCompletionClient([]) });
    t.after(() => withModel.close());
    await store.put('tool', 'p', {
      type: 'prompt',
      description: 'x',
      template: 'Hello {{who}}',
      arguments: [{ name: 'name', type: 'string' }],
    });
    await withModel.start();
    const p = withModel.problems().find((x) => x.key === 'tool/p');
    assert.match(p!.message, /uses \{\{who\}\}, which is not one of its arguments \('name'\)/);
  });

  test('http and mcp-tool without a factory are reported with the option that provides them', async (t) => {
    const store = new MemoryConfigStore();
    const registry = new ToolRegistry({ store });
    t.after(() => registry.close());
    await store.put('tool', 'web', { type: 'http', url: 'https://example.com' });
    await store.put('tool', 'files', { type: 'mcp-tool', 'mcp-tool': 'files' });
    await store.put('tool', 'odd', { type: 'knowledge-query' });
    await registry.start();
    const byKey = Object.fromEntries(registry.problems().map((p) => [p.key, p.message]));
    assert.match(byKey['tool/web']!, /httpToolType\(\)/);
    assert.match(byKey['tool/files']!, /toolbus\/mcp/);
    assert.match(byKey['tool/odd']!, /unknown tool type 'knowledge-query'; known types: tool-service/);
  });

  test('a custom type uses lookup(); the tool is rebuilt when the looked-up item changes; its signal aborts when dropped', async (t) => {
    const store = new MemoryConfigStore();
    const signals: AbortSignal[] = [];
    const mcpTool: ToolTypeFactory = (descriptor, ctx) => {
      const server = ctx.lookup('mcp', String(descriptor['mcp-tool']));
      if (server === undefined) {
        throw new ToolbusError(
          'invalid-config',
          `config 'tool/${ctx.key}': no config item 'mcp/${String(descriptor['mcp-tool'])}'`,
        );
      }
      signals.push(ctx.signal);
      const url = (server as { url: string }).url;
      return new FunctionTool(() => url, { name: ctx.key, description: 'mcp', parameters: z.object({}) });
    };
    const registry = new ToolRegistry({ store, toolTypes: { 'mcp-tool': mcpTool }, debounceMs: 1 });
    t.after(() => registry.close());
    await store.put('tool', 'files', { type: 'mcp-tool', 'mcp-tool': 'fs' });
    await registry.start();
    assert.equal(registry.problems()[0]?.key, 'tool/files');
    await store.put('mcp', 'fs', { url: 'http://one' });
    await registry.refresh();
    assert.equal((await registry.tools.call('files', {})).content, 'http://one');
    await store.put('mcp', 'fs', { url: 'http://two' });
    await registry.refresh();
    assert.equal((await registry.tools.call('files', {})).content, 'http://two');
    assert.deepEqual(
      signals.map((s) => s.aborted),
      [true, false],
    );
    await registry.close();
    assert.equal(signals[1]!.aborted, true);
  });
});

describe('ToolRegistry: a tool whose build never finishes', () => {
  const echo = (name: string) =>
    new FunctionTool(() => name, { name, description: name, parameters: z.object({}) });

  test(
    'it is given up after buildTimeoutMs and reported; the other tools load and hot reload goes on',
    { timeout: 10_000 },
    async (t) => {
      const store = new MemoryConfigStore();
      const hung: AbortSignal[] = [];
      // An mcp-tool whose server hangs on connect: the factory never returns.
      const hang: ToolTypeFactory = (_descriptor, ctx) => {
        hung.push(ctx.signal);
        return new Promise<never>(() => undefined);
      };
      const registry = new ToolRegistry({
        store,
        functions: [echo('a'), echo('b')],
        toolTypes: { hang },
        debounceMs: 1,
        buildTimeoutMs: 50,
      });
      t.after(async () => {
        await registry.close();
        await store.close();
      });
      await store.put('tool', 'a', { type: 'function', name: 'a' });
      await store.put('tool', 'stuck', { type: 'hang' });
      await registry.start();
      assert.deepEqual(
        registry.tools.list().map((x) => x.name),
        ['a'],
      );
      const problem = registry.problems().find((p) => p.key === 'tool/stuck');
      assert.equal(problem?.code, 'timeout');
      assert.match(problem.message, /longer than 50 ms \(buildTimeoutMs\)/);

      await store.put('tool', 'b', { type: 'function', name: 'b' });
      await registry.refresh();
      assert.deepEqual(
        registry.tools
          .list()
          .map((x) => x.name)
          .sort(),
        ['a', 'b'],
      );
      // The hung build was not started again (nor waited for again), and is told to give up once its
      // item goes.
      assert.equal(hung.length, 1);
      assert.equal(hung[0]!.aborted, false);
      await store.delete('tool', 'stuck');
      await registry.refresh();
      assert.equal(hung[0]!.aborted, true);
      assert.deepEqual(registry.problems(), []);
    },
  );

  test('a build that finishes after buildTimeoutMs goes live by itself', { timeout: 10_000 }, async (t) => {
    const store = new MemoryConfigStore();
    let finish!: () => void;
    const finished = new Promise<void>((resolve) => (finish = resolve));
    let calls = 0;
    const slow: ToolTypeFactory = async (_descriptor, ctx) => {
      calls++;
      await finished; // e.g. `npx` fetching an MCP server on first use
      return echo(ctx.key);
    };
    const registry = new ToolRegistry({ store, toolTypes: { slow }, debounceMs: 1, buildTimeoutMs: 20 });
    t.after(async () => {
      await registry.close();
      await store.close();
    });
    await store.put('tool', 'late', { type: 'slow' });
    await registry.start();
    assert.deepEqual(registry.tools.list(), []);
    assert.equal(registry.problems()[0]?.code, 'timeout');
    const live = new Promise<string[]>((resolve) => registry.onChange((c) => resolve(c.added)));
    finish();
    assert.deepEqual(await live, ['late']);
    assert.deepEqual(registry.problems(), []);
    assert.equal(calls, 1);
  });

  test(
    'items are built concurrently, and close does not wait for a hung build',
    { timeout: 10_000 },
    async (t) => {
      const store = new MemoryConfigStore();
      // Each `pair` build waits until the other one has started: built one at a time, neither finishes.
      let arrived = 0;
      let release!: () => void;
      const bothStarted = new Promise<void>((resolve) => (release = resolve));
      const pair: ToolTypeFactory = async (_descriptor, ctx) => {
        if (++arrived === 2) release();
        await bothStarted;
        return echo(ctx.key);
      };
      const hang: ToolTypeFactory = () => new Promise<never>(() => undefined);
      const registry = new ToolRegistry({ store, toolTypes: { pair, hang }, buildTimeoutMs: 60_000 });
      t.after(() => store.close());
      await store.put('tool', 'x', { type: 'pair' });
      await store.put('tool', 'y', { type: 'pair' });
      await registry.start();
      assert.deepEqual(
        registry.tools.list().map((x) => x.name),
        ['x', 'y'],
      );
      await store.put('tool', 'stuck', { type: 'hang' });
      const refreshed = registry.refresh();
      await registry.close(); // must not wait a minute for the hung build
      await refreshed;

      // Nor a start that waits for its first set.
      const second = new ToolRegistry({ store, toolTypes: { hang }, buildTimeoutMs: 60_000 });
      const started = second.start();
      await new Promise((resolve) => setImmediate(resolve)); // the first build has begun
      await second.close();
      await started.catch(() => undefined); // settles (does not wait a minute either)
    },
  );

  test('buildTimeoutMs must be a positive number of ms', () => {
    const store = new MemoryConfigStore();
    for (const buildTimeoutMs of [0, -1, Number.NaN]) {
      assert.throws(() => new ToolRegistry({ store, buildTimeoutMs }), {
        code: 'usage',
        message: /option 'buildTimeoutMs' must be a positive number \(or Infinity for no limit\)/,
      });
    }
  });
});

describe('ToolRegistry: lifecycle', () => {
  test('retryMs and debounceMs that would spin are refused with usage naming the option', () => {
    // A retryMs of 0 (or NaN, or beyond setTimeout's maximum) re-watched a failing store about every
    // millisecond, burning a core while the store was down.
    const store = new MemoryConfigStore();
    for (const retryMs of [0, -1, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 31]) {
      assert.throws(() => new ToolRegistry({ store, retryMs }), {
        code: 'usage',
        message: /option 'retryMs' must be a positive number \(at most 2147483647\)/,
      });
    }
    for (const debounceMs of [-1, Number.NaN, 2 ** 31]) {
      assert.throws(() => new ToolRegistry({ store, debounceMs }), {
        code: 'usage',
        message: /option 'debounceMs' must be 0 or a positive number/,
      });
    }
    new ToolRegistry({ store, retryMs: 1, debounceMs: 0 }).close();
  });

  test('start with an aborted signal rejects with cancelled; close is idempotent', async () => {
    const store = new MemoryConfigStore();
    const registry = new ToolRegistry({ store });
    const controller = new AbortController();
    controller.abort();
    await assert.rejects(registry.start({ signal: controller.signal }), { code: 'cancelled' });
    await registry.close();
    await registry.close();
    await assert.rejects(registry.start(), { code: 'closed' });
  });

  test('a signal aborting while start waits for a hung store rejects with cancelled and closes the registry', async (t) => {
    const inner = new MemoryConfigStore();
    t.after(() => inner.close());
    let releaseList!: () => void;
    const listed = new Promise<void>((resolve) => (releaseList = resolve));
    // A store that never answers list() until the test lets it.
    const store: ConfigStore = {
      put: (type, key, value, options) => inner.put(type, key, value, options),
      get: (type, key) => inner.get(type, key),
      list: async (type) => (await listed, inner.list(type)),
      delete: (type, key, options) => inner.delete(type, key, options),
      revision: () => inner.revision(),
      watch: (options) => inner.watch(options),
      close: () => Promise.resolve(),
    };
    const registry = new ToolRegistry({ store });
    const controller = new AbortController();
    const started = registry.start({ signal: controller.signal });
    controller.abort();
    await assert.rejects(started, { code: 'cancelled' });
    releaseList();
    await assert.rejects(registry.start(), { code: 'closed' });
  });

  test('close while start is still loading settles both: start rejects with closed', async (t) => {
    const store = new MemoryConfigStore();
    const bus = new MemoryBus();
    t.after(async () => {
      await store.close();
      await bus.close();
    });
    const registry = new ToolRegistry({ store, bus });
    const started = registry.start();
    await registry.close();
    await assert.rejects(started, { code: 'closed' });
  });

  test('a failed store watch is reported as a problem, retried, and the changes missed meanwhile arrive', async (t) => {
    const inner = new MemoryConfigStore();
    const breakers: ((error: unknown) => void)[] = [];
    // Delegates to a memory store; each watch can be broken from the test.
    const store: ConfigStore = {
      put: (type, key, value, options) => inner.put(type, key, value, options),
      get: (type, key) => inner.get(type, key),
      list: (type) => inner.list(type),
      delete: (type, key, options) => inner.delete(type, key, options),
      revision: () => inner.revision(),
      close: () => inner.close(),
      watch(options) {
        const changes = inner.watch(options)[Symbol.asyncIterator]();
        const broken = new Promise<never>((_resolve, reject) => breakers.push(reject));
        broken.catch(() => undefined);
        return {
          [Symbol.asyncIterator]: (): AsyncIterator<ConfigChange> => ({
            next: () => Promise.race([changes.next(), broken]),
            return: () => changes.return!(),
          }),
        };
      },
    };
    const price = new FunctionTool(() => 1, { name: 'p', description: 'p', parameters: z.object({}) });
    const registry = new ToolRegistry({ store, functions: [price], debounceMs: 1, retryMs: 20 });
    t.after(async () => {
      await registry.close();
      await inner.close();
    });
    await registry.start();
    const until = async (done: () => boolean): Promise<void> => {
      for (let i = 0; i < 200 && !done(); i++) await new Promise((r) => setTimeout(r, 5));
      assert.ok(done());
    };

    breakers.at(-1)!(new ToolbusError('store-error', 'the disk went away'));
    await until(() => registry.problems().some((p) => p.key === 'store'));
    const problem = registry.problems().find((p) => p.key === 'store')!;
    assert.equal(problem.code, 'store-error');
    assert.match(problem.message, /retrying every 20 ms: the disk went away/);

    await inner.put('tool', 'p', { type: 'function', name: 'p' }); // before or after the re-watch: it arrives
    await until(() => registry.tools.list().length === 1);
    assert.deepEqual(registry.problems(), []);
  });

  test("a failing list ends that attempt's watch, however often it is retried", async (t) => {
    const inner = new MemoryConfigStore();
    let failLists = 0;
    let open = 0; // watches opened and not yet ended
    const breakers: ((error: unknown) => void)[] = [];
    const store: ConfigStore = {
      put: (type, key, value, options) => inner.put(type, key, value, options),
      get: (type, key) => inner.get(type, key),
      list: (type) => {
        if (failLists <= 0) return inner.list(type);
        failLists--;
        return Promise.reject(new ToolbusError('store-error', 'list failed'));
      },
      delete: (type, key, options) => inner.delete(type, key, options),
      revision: () => inner.revision(),
      close: () => inner.close(),
      watch(options) {
        const it = inner.watch(options)[Symbol.asyncIterator]();
        open++;
        let ended = false;
        const end = (): void => {
          if (ended) return;
          ended = true;
          open--;
        };
        const broken = new Promise<never>((_resolve, reject) => breakers.push(reject));
        broken.catch(() => undefined);
        return {
          [Symbol.asyncIterator]: (): AsyncIterator<ConfigChange> => ({
            next: () =>
              Promise.race([it.next(), broken]).catch((error: unknown) => {
                end();
                throw error;
              }),
            return: () => (end(), it.return!()),
          }),
        };
      },
    };
    failLists = 1; // the first load fails: start rejects, and its watch is ended
    const failed = new ToolRegistry({ store, debounceMs: 1, retryMs: 5 });
    await assert.rejects(failed.start(), { code: 'store-error' });
    assert.equal(open, 0);
    await failed.close();

    const registry = new ToolRegistry({ store, debounceMs: 1, retryMs: 5 });
    t.after(async () => {
      await registry.close();
      await inner.close();
    });
    await registry.start();
    assert.equal(open, 1);
    failLists = 5; // the live watch breaks, then five re-lists fail before one succeeds
    breakers.at(-1)!(new ToolbusError('store-error', 'the disk went away'));
    for (let i = 0; i < 400; i++) {
      if (failLists === 0 && !registry.problems().some((p) => p.key === 'store')) break;
      await new Promise((r) => setTimeout(r, 5));
    }
    assert.equal(failLists, 0);
    assert.equal(open, 1);
  });

  test('after close, store changes no longer reach the tool set', async (t) => {
    const store = new MemoryConfigStore();
    const price = new FunctionTool(() => 1, { name: 'p', description: 'p', parameters: z.object({}) });
    const registry = new ToolRegistry({ store, functions: [price], debounceMs: 1 });
    t.after(() => store.close());
    await registry.start();
    await registry.close();
    await store.put('tool', 'p', { type: 'function', name: 'p' });
    await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(registry.tools.list(), []);
  });
});
