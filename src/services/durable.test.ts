/**
 * @module Durable tool calls on the memory bus: the same API as on NATS (results kept, async tasks,
 * cancel, idempotency, redelivery), without crash recovery.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { MemoryBus, MemoryCallStore } from '../bus/index.js';
import { FunctionTool, ToolSet } from '../tools/index.js';
import { CallTasks } from './call-tasks.js';
import { DynamicToolService, type ToolServiceInvokeContext } from './dynamic-tool-service.js';
import { ToolServiceClient } from './tool-service-client.js';

const queues = { requestQueue: 'request:tg:durable', responseQueue: 'response:tg:durable' };

function durableClient(bus: MemoryBus): ToolServiceClient {
  return new ToolServiceClient(bus, { ...queues, delivery: 'durable', timeoutMs: 5_000 });
}

test('a durable call returns its result, and the store keeps it for result()', async () => {
  const bus = new MemoryBus();
  const seen: ToolServiceInvokeContext[] = [];
  const service = new DynamicToolService({
    bus,
    ...queues,
    delivery: 'durable',
    invoke: (user, _config, args, ctx) => {
      seen.push(ctx);
      return `hi ${user}: ${String(args['x'])}`;
    },
  });
  await service.start();
  const client = durableClient(bus);
  const text = await client.call('alice', {}, { x: 1 }, { id: 'call-1', toolName: 'greet' });
  assert.equal(text, 'hi alice: 1');
  assert.equal(seen[0]!.attempt, 1);
  assert.equal(seen[0]!.redelivered, false);
  assert.equal(seen[0]!.idempotencyKey, 'call-1');
  await waitFor(async () => (await client.result('call-1'))?.status === 'completed');
  const record = await client.result('call-1');
  assert.equal(record?.response, 'hi alice: 1');
  assert.equal(record?.tool, 'greet');
  assert.equal(record?.user, 'alice');
  assert.equal(record?.attempt, 1);
  await client.close();
  await service.stop();
  await bus.close();
});

test('a call made before any replica runs waits in the queue and is served once one starts', async () => {
  const bus = new MemoryBus();
  const client = durableClient(bus);
  const pending = client.call('', {}, {});
  await sleep(50);
  const service = new DynamicToolService({
    bus,
    ...queues,
    delivery: 'durable',
    invoke: () => 'late but served',
  });
  await service.start();
  assert.equal(await pending, 'late but served');
  await client.close();
  await service.stop();
  await bus.close();
});

test('start() returns at once; watch() sees the chunks and the result; a new client reads it', async () => {
  const bus = new MemoryBus();
  const service = new DynamicToolService({
    bus,
    ...queues,
    delivery: 'durable',
    invoke: async (_u, _c, _a, ctx) => {
      await ctx.write('one ');
      await sleep(20);
      await ctx.write('two ');
      await sleep(20);
      return 'three';
    },
  });
  await service.start();
  const client = durableClient(bus);
  const id = await client.start('bob', {}, {}, { toolName: 'count' });
  const first = await client.result(id);
  assert.ok(first && ['queued', 'running'].includes(first.status), `status ${first?.status}`);
  const states: string[] = [];
  let chunks = 0;
  for await (const record of client.watch(id)) {
    states.push(record.status);
    chunks = Math.max(chunks, record.chunkCount);
  }
  assert.equal(states.at(-1), 'completed');
  assert.equal(chunks, 2);
  await client.close();
  const later = durableClient(bus);
  const record = await later.result(id);
  assert.equal(record?.response, 'one two three');
  assert.deepEqual(record?.chunks, []);
  await later.close();
  await service.stop();
  await bus.close();
});

test('cancel(): a queued task ends cancelled and never runs; a running one is stopped', async () => {
  const bus = new MemoryBus();
  const client = durableClient(bus);
  const queued = await client.start('', {}, { n: 1 });
  const cancelled = await client.cancel(queued, 'not needed');
  assert.equal(cancelled?.status, 'cancelled');
  let ran = 0;
  const service = new DynamicToolService({
    bus,
    ...queues,
    delivery: 'durable',
    invoke: async (_u, _c, args, ctx) => {
      ran++;
      if (args['n'] === 2) {
        await new Promise((_resolve, reject) =>
          ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)),
        );
      }
      return 'done';
    },
  });
  await service.start();
  await sleep(50);
  assert.equal(ran, 0, 'the cancelled task did not run');
  const running = await client.start('', {}, { n: 2 });
  await waitFor(async () => (await client.result(running))?.status === 'running');
  await client.cancel(running);
  await waitFor(async () => (await client.result(running))?.status === 'cancelled');
  assert.match((await client.result(running))?.error?.message ?? '', /cancelled/);
  assert.equal(await client.cancel('no-such-call'), undefined);
  await client.close();
  await service.stop();
  await bus.close();
});

test('an idempotent tool answers a repeated key with the first outcome; another tool runs again', async () => {
  const bus = new MemoryBus();
  let runs = 0;
  const service = new DynamicToolService({
    bus,
    ...queues,
    delivery: 'durable',
    invoke: (_u, _c, _a, ctx) => `run ${++runs} key ${String(ctx.idempotencyKey)}`,
  });
  await service.start();
  const client = durableClient(bus);
  const a = await client.call('', {}, {}, { idempotencyKey: 'order-42', idempotent: true });
  const b = await client.call('', {}, {}, { idempotencyKey: 'order-42', idempotent: true });
  assert.equal(a, 'run 1 key order-42');
  assert.equal(b, a);
  assert.equal(runs, 1);
  const c = await client.call('', {}, {}, { idempotencyKey: 'order-42' });
  assert.equal(c, 'run 2 key order-42');
  await client.close();
  await service.stop();
  await bus.close();
});

test('a replica made to stop gives its running call back: another runs it, with attempt 2', async () => {
  const bus = new MemoryBus();
  const attempts: number[] = [];
  // The first replica takes the call and is stopped without finishing it: a forced stop gives it back.
  const stuck = new DynamicToolService({
    bus,
    ...queues,
    delivery: 'durable',
    invoke: async (_u, _c, _a, ctx) => {
      attempts.push(ctx.attempt);
      await new Promise((_resolve, reject) =>
        ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)),
      );
    },
  });
  await stuck.start();
  const client = durableClient(bus);
  const pending = client.call('', {}, {}, { id: 'moved' });
  await waitFor(() => attempts.length === 1);
  const healthy = new DynamicToolService({
    bus,
    ...queues,
    delivery: 'durable',
    invoke: (_u, _c, _a, ctx) => {
      attempts.push(ctx.attempt);
      return `attempt ${ctx.attempt}, redelivered ${ctx.redelivered}`;
    },
  });
  await healthy.start();
  await stuck.stop({ signal: AbortSignal.timeout(10) });
  assert.equal(await pending, 'attempt 2, redelivered true');
  assert.deepEqual(attempts, [1, 2]);
  await client.close();
  await healthy.stop();
  await bus.close();
});

test('a durable service or client on a bus without durable calls is refused with a clear error', () => {
  const bus = new MemoryBus();
  const bare = {
    publish: bus.publish.bind(bus),
    subscribe: bus.subscribe.bind(bus),
    close: bus.close.bind(bus),
  };
  assert.throws(
    () => new DynamicToolService({ bus: bare, ...queues, delivery: 'durable', invoke: () => '' }),
    /delivery 'durable' needs a bus with durable calls/,
  );
  assert.throws(
    () => new ToolServiceClient(bare, { ...queues, delivery: 'durable' }),
    /delivery 'durable' needs a bus with durable calls/,
  );
  assert.throws(
    () => new ToolServiceClient(bus, { ...queues, delivery: 'sometimes' as 'durable' }),
    /option 'delivery' must be 'request-response' or 'durable', got "sometimes"/,
  );
});

async function waitFor(check: () => boolean | Promise<boolean>, ms = 3_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await sleep(10);
  }
}

test('a task whose process died is reported failed once its lease ran out, saying crash recovery needs NATS', async () => {
  const store = new MemoryCallStore();
  // The process that held the call: gone, its last sign of life a minute ago.
  await store.put(
    {
      id: 'task-orphan',
      service: 'request:tg:durable',
      status: 'running',
      attempt: 1,
      idempotencyKey: 'task-orphan',
      chunks: [],
      chunkCount: 0,
      createdAt: Date.now() - 60_000,
      updatedAt: Date.now() - 60_000,
      holder: 'a-process-that-is-gone',
    },
    0,
  );
  const bus = new MemoryBus({ callStore: store });
  const tasks = new CallTasks(bus);
  const record = await tasks.get('task-orphan');
  assert.equal(record?.status, 'failed');
  assert.match(record?.error?.message ?? '', /stopped before it finished.*only on NATS/);
  assert.equal((await store.get('task-orphan'))?.record.status, 'failed', 'and stored so');
  await tasks.close();
  await bus.close();
});

test('CallTasks: an in-process tool runs as a task; close() fails what is still running instead of leaving it', async () => {
  const bus = new MemoryBus();
  const tasks = new CallTasks(bus, { leaseMs: 60_000 });
  const tools = new ToolSet([
    new FunctionTool(
      async ({ ms }: { ms: number }) => {
        await sleep(ms);
        return `slept ${ms}`;
      },
      { name: 'nap', description: 'Sleeps', parameters: z.object({ ms: z.number() }) },
    ),
  ]);
  const quick = await tasks.start(tools, 'nap', { ms: 10 }, { user: 'carol' });
  let last;
  for await (const record of tasks.watch(quick, AbortSignal.timeout(5_000))) last = record;
  assert.equal(last?.status, 'completed');
  assert.equal(last?.response, 'slept 10');
  assert.equal(last?.user, 'carol');
  const bad = await tasks.start(tools, 'nap', { ms: 'long' });
  await waitFor(async () => (await tasks.get(bad))?.status === 'failed');
  assert.match((await tasks.get(bad))?.error?.message ?? '', /invalid arguments/);
  const slow = await tasks.start(tools, 'nap', { ms: 10_000 });
  await tasks.close();
  const stopped = await tasks.get(slow);
  assert.equal(stopped?.status, 'failed');
  assert.match(stopped?.error?.message ?? '', /stopped before it finished/);
  await bus.close();
});

test('CallTasks: a task whose result (its image parts included) is too large to keep fails too-large, not running for good', async () => {
  const bus = new MemoryBus();
  const tasks = new CallTasks(bus, { leaseMs: 60_000 });
  // 1.2 MB of base64: within the set's media cap, over what a call record keeps.
  const big = 'A'.repeat(1_200_000);
  const tools = new ToolSet([
    new FunctionTool(() => [{ type: 'image', data: big, mimeType: 'image/png' }], {
      name: 'render',
      description: 'Renders',
      parameters: z.object({}),
    }),
    new FunctionTool(() => [{ type: 'image', data: 'AAAA', mimeType: 'image/png' }], {
      name: 'thumb',
      description: 'A thumbnail',
      parameters: z.object({}),
    }),
  ]);
  const id = await tasks.start(tools, 'render', {});
  await waitFor(async () => (await tasks.get(id))?.status === 'failed');
  const record = await tasks.get(id);
  assert.equal(record?.error?.type, 'too-large');
  assert.match(record?.error?.message ?? '', /too large to keep \(\d+ characters; at most 900000\)/);
  const small = await tasks.start(tools, 'thumb', {});
  await waitFor(async () => (await tasks.get(small))?.status === 'completed');
  assert.deepEqual((await tasks.get(small))?.parts, [{ type: 'image', data: 'AAAA', mimeType: 'image/png' }]);
  await tasks.close();
  await bus.close();
});

test('a call whose deadline passes in the queue fails deadline-exceeded when a replica takes it, and never runs', async () => {
  const bus = new MemoryBus();
  const client = durableClient(bus);
  await assert.rejects(client.call('', {}, {}, { id: 'too-late', timeoutMs: 50 }), { code: 'timeout' });
  let ran = 0;
  const service = new DynamicToolService({ bus, ...queues, delivery: 'durable', invoke: () => ++ran });
  await service.start();
  await waitFor(async () => (await client.result('too-late'))?.status === 'failed');
  assert.equal((await client.result('too-late'))?.error?.type, 'deadline-exceeded');
  assert.equal(ran, 0);
  await client.close();
  await service.stop();
  await bus.close();
});

test('a result too large to keep reaches its caller whole; its stored state says why it was not kept', async () => {
  const bus = new MemoryBus();
  const big = 'x'.repeat(1_000_000);
  const service = new DynamicToolService({ bus, ...queues, delivery: 'durable', invoke: () => big });
  await service.start();
  const client = durableClient(bus);
  assert.equal((await client.call('', {}, {}, { id: 'big' })).length, big.length);
  await waitFor(async () => (await client.result('big'))?.status === 'failed');
  const record = await client.result('big');
  assert.equal(record?.error?.type, 'too-large');
  assert.match(
    record?.error?.message ?? '',
    /was sent to its caller but is too large to keep \(1000000 characters/,
  );
  assert.equal(record?.response, undefined);
  await client.close();
  await service.stop();
  await bus.close();
});
