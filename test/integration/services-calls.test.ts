/**
 * Client and service behaviour over a MemoryBus: failures, timeouts, cancellation, replicas, capacity,
 * graceful stop, dropped responses.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryBus, type MessageBus } from '../../src/bus/index.js';
import {
  DynamicToolService,
  RemoteToolError,
  ToolServiceClient,
  type DynamicToolServiceOptions,
  type ToolServiceInvokeContext,
} from '../../src/services/index.js';
import { ToolError } from '../../src/tools/index.js';
import { ToolbusError } from '../../src/errors/index.js';
import { foreignCall } from '../support/foreign-peer.js';

const queues = { requestQueue: 'request:tg:calls', responseQueue: 'response:tg:calls' };

async function setup(
  t: { after: (fn: () => unknown) => void },
  invoke: DynamicToolServiceOptions['invoke'],
  extra: Partial<DynamicToolServiceOptions> = {},
): Promise<{ bus: MemoryBus; service: DynamicToolService; client: ToolServiceClient }> {
  const bus = new MemoryBus();
  const service = new DynamicToolService({ bus, ...queues, invoke, ...extra });
  await service.start();
  const client = new ToolServiceClient(bus, queues);
  t.after(async () => {
    await client.close();
    await service.stop({ signal: AbortSignal.abort() });
    await bus.close();
  });
  return { bus, service, client };
}

/** Resolves when `signal` aborts (bounded by the test timeout). */
const aborted = (signal: AbortSignal): Promise<unknown> =>
  new Promise((resolve) => {
    if (signal.aborted) resolve(signal.reason);
    else signal.addEventListener('abort', () => resolve(signal.reason), { once: true });
  });

describe('ToolServiceClient and DynamicToolService', { timeout: 20_000 }, () => {
  test('a service that throws gives the caller a tool-error with the remote type and message', async (t) => {
    const { client } = await setup(t, () => {
      throw new Error('the joke database is on fire');
    });
    await assert.rejects(client.call('alice', {}, {}), (e: unknown) => {
      assert.ok(e instanceof RemoteToolError);
      assert.equal(e.code, 'tool-error');
      assert.equal(e.remoteType, 'tool-service-error');
      assert.match(e.message, /tool-service-error.*the joke database is on fire/);
      return true;
    });
    assert.equal(client.pendingCount, 0);
  });

  test('forty calls sharing one signal: no MaxListeners warning, and aborting it cancels every one', async (t) => {
    const { client } = await setup(
      t,
      (_user, _config, _args, ctx) => aborted(ctx.signal).then(() => 'late'),
      {
        concurrency: 100,
      },
    );
    const warnings: string[] = [];
    const onWarning = (w: Error): void => void warnings.push(w.name);
    process.on('warning', onWarning);
    t.after(() => process.off('warning', onWarning));
    const controller = new AbortController();
    const calls = Array.from({ length: 40 }, (_, n) =>
      client.call('alice', {}, { n }, { signal: controller.signal }).then(
        () => 'answered',
        (e: ToolbusError) => e.code,
      ),
    );
    await new Promise((resolve) => setImmediate(resolve));
    controller.abort();
    assert.deepEqual(
      await Promise.all(calls),
      Array.from({ length: 40 }, () => 'cancelled'),
    );
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(warnings, []);
    assert.equal(client.pendingCount, 0);
  });

  test('a slow service hits the timeout; the service sees its signal abort', async (t) => {
    let sawAbort!: (reason: unknown) => void;
    const serviceAborted = new Promise<unknown>((r) => (sawAbort = r));
    const { client, service } = await setup(t, async (_u, _c, _a, ctx) => {
      sawAbort(await aborted(ctx.signal));
      return 'too late';
    });
    await assert.rejects(client.call('alice', {}, {}, { timeoutMs: 50 }), (e: unknown) => {
      assert.ok(e instanceof ToolError);
      assert.equal(e.code, 'timeout');
      assert.match(e.message, /no response within 50 ms/);
      return true;
    });
    const reason = await serviceAborted;
    assert.ok(reason instanceof ToolbusError);
    assert.equal(client.pendingCount, 0);
    assert.equal(client.stats().timedOut, 1);
    // The service's late error response is dropped as late, never resolving anything.
    await new Promise((r) => setTimeout(r, 10));
    assert.equal(client.stats().dropped.late, 1);
    assert.equal(service.stats().inFlight, 0);
  });

  test('cancelling with a signal rejects with cancelled (or the ToolbusError reason) and aborts the service', async (t) => {
    const reasons: unknown[] = [];
    const { client } = await setup(t, async (_u, _c, _a, ctx) => {
      reasons.push(await aborted(ctx.signal));
      return 'x';
    });
    const controller = new AbortController();
    const call = client.call('alice', {}, {}, { signal: controller.signal });
    setTimeout(() => controller.abort(new Error('user pressed stop')), 5);
    await assert.rejects(call, (e: unknown) => {
      assert.ok(e instanceof ToolError);
      assert.equal(e.code, 'cancelled');
      assert.equal((e.cause as Error).message, 'user pressed stop');
      return true;
    });
    const custom = new ToolbusError('cancelled', 'the agent gave up');
    await assert.rejects(
      client.call('alice', {}, {}, { signal: AbortSignal.abort(custom) }),
      (e: unknown) => e === custom,
    );
    for (let i = 0; i < 50 && reasons.length < 1; i++) await new Promise((r) => setTimeout(r, 5));
    assert.equal(reasons.length, 1);
    assert.equal(client.pendingCount, 0);
  });

  test('leaving a stream early cancels the remote call mid-stream', async (t) => {
    let sawAbort!: () => void;
    const serviceAborted = new Promise<void>((r) => (sawAbort = r));
    let written = 0;
    const { client, service } = await setup(t, async (_u, _c, _a, ctx) => {
      ctx.signal.addEventListener('abort', () => sawAbort(), { once: true });
      for (let i = 0; i < 1000 && !ctx.signal.aborted; i++) {
        await ctx.write(`chunk-${i} `);
        written++;
        await new Promise((r) => setTimeout(r, 2));
      }
      return 'done';
    });
    const got: string[] = [];
    for await (const chunk of client.stream('alice', {}, {})) {
      got.push(chunk);
      if (got.length === 3) break;
    }
    assert.deepEqual(got, ['chunk-0 ', 'chunk-1 ', 'chunk-2 ']);
    await serviceAborted;
    assert.ok(written < 1000);
    assert.equal(client.pendingCount, 0);
    for (let i = 0; i < 50 && service.stats().inFlight > 0; i++) await new Promise((r) => setTimeout(r, 5));
    assert.equal(service.stats().cancelled, 1);
  });

  test('a stream can be iterated once; a second iteration fails clearly', async (t) => {
    const { client } = await setup(t, () => 'one');
    const stream = client.stream('alice', {}, {});
    const chunks: string[] = [];
    for await (const c of stream) chunks.push(c);
    assert.deepEqual(chunks, ['one']);
    assert.throws(
      () => stream[Symbol.asyncIterator](),
      (e: unknown) => e instanceof ToolbusError && e.code === 'usage' && /iterated once/.test(e.message),
    );
  });

  test('two replicas share the load: each request is handled exactly once', async (t) => {
    const bus = new MemoryBus();
    const handled = new Map<number, string[]>();
    const replicas = ['r1', 'r2'].map(
      (name) =>
        new DynamicToolService({
          bus,
          ...queues,
          invoke: async (_u, _c, args) => {
            const n = args['n'] as number;
            handled.set(n, [...(handled.get(n) ?? []), name]);
            await new Promise((r) => setTimeout(r, 1));
            return `${name}:${n}`;
          },
        }),
    );
    for (const r of replicas) await r.start();
    const client = new ToolServiceClient(bus, queues);
    t.after(async () => {
      await client.close();
      for (const r of replicas) await r.stop();
      await bus.close();
    });
    const results = await Promise.all(Array.from({ length: 200 }, (_, n) => client.call('u', {}, { n })));
    assert.equal(handled.size, 200);
    for (const [, by] of handled) assert.equal(by.length, 1);
    const counts = replicas.map((r) => r.stats().completed);
    assert.equal(counts[0]! + counts[1]!, 200);
    assert.ok(counts[0]! > 0 && counts[1]! > 0, `both replicas served: ${counts.join(', ')}`);
    results.forEach((r, n) => assert.match(r, new RegExp(`^r[12]:${n}$`)));
  });

  test('cancellation reaches the replica running the call, whichever it is', async (t) => {
    const bus = new MemoryBus();
    const abortedBy: string[] = [];
    const started: string[] = [];
    const replicas = ['r1', 'r2'].map(
      (name) =>
        new DynamicToolService({
          bus,
          ...queues,
          invoke: async (_u, _c, _a, ctx) => {
            started.push(name);
            await aborted(ctx.signal);
            abortedBy.push(name);
            return 'x';
          },
        }),
    );
    for (const r of replicas) await r.start();
    const client = new ToolServiceClient(bus, queues);
    t.after(async () => {
      await client.close();
      for (const r of replicas) await r.stop({ signal: AbortSignal.abort() });
      await bus.close();
    });
    const controller = new AbortController();
    const calls = [0, 1].map((n) => client.call('u', {}, { n }, { signal: controller.signal }));
    for (let i = 0; i < 100 && started.length < 2; i++) await new Promise((r) => setTimeout(r, 2));
    assert.deepEqual([...started].sort(), ['r1', 'r2']);
    controller.abort();
    for (const call of calls)
      await assert.rejects(call, (e: unknown) => (e as ToolError).code === 'cancelled');
    for (let i = 0; i < 100 && abortedBy.length < 2; i++) await new Promise((r) => setTimeout(r, 2));
    assert.deepEqual([...abortedBy].sort(), ['r1', 'r2']);
  });

  test('over capacity the service answers too-many-requests instead of queueing without bound', async (t) => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const { client, service } = await setup(
      t,
      async () => {
        await gate;
        return 'ok';
      },
      { concurrency: 1, maxQueued: 1 },
    );
    const calls = [0, 1, 2].map((n) => client.call('u', {}, { n }));
    const third = await calls[2]!.then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(third instanceof RemoteToolError);
    assert.equal(third.remoteType, 'too-many-requests');
    assert.match(third.message, /at capacity \(1 running, 1 queued\)/);
    release();
    assert.deepEqual(await Promise.all(calls.slice(0, 2)), ['ok', 'ok']);
    assert.equal(service.stats().rejected, 1);
  });

  test('stop() is graceful: finishes calls in flight, takes no new ones', async (t) => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    const { client, service } = await setup(t, async () => {
      started();
      await gate;
      return 'finished';
    });
    const inFlight = client.call('u', {}, {});
    await running;
    let stopped = false;
    const stopping = service.stop().then(() => (stopped = true));
    await new Promise((r) => setTimeout(r, 5));
    assert.equal(stopped, false);
    await assert.rejects(client.call('u', {}, {}), (e: unknown) => (e as ToolError).code === 'unavailable');
    release();
    assert.equal(await inFlight, 'finished');
    await stopping;
    assert.equal(stopped, true);
    await service.stop();
    await assert.rejects(service.start(), (e: unknown) => (e as ToolbusError).code === 'closed');
  });

  test('fails fast with unavailable when no service listens', { timeout: 5_000 }, async (t) => {
    const bus = new MemoryBus();
    const client = new ToolServiceClient(bus, {
      requestQueue: 'request:tg:nobody',
      responseQueue: 'response:tg:nobody',
    });
    t.after(async () => {
      await client.close();
      await bus.close();
    });
    await assert.rejects(client.call('u', {}, {}), (e: unknown) => {
      assert.ok(e instanceof ToolError);
      assert.equal(e.code, 'unavailable');
      assert.match(e.message, /nothing is subscribed to request queue 'request:tg:nobody'/);
      return true;
    });
    assert.equal(client.pendingCount, 0);
  });

  test('a request whose deadline has passed is skipped with deadline-exceeded', async (t) => {
    let calls = 0;
    const { bus, service } = await setup(t, () => {
      calls++;
      return 'x';
    });
    const responses = await foreignCall(bus, queues, '{"user":"u","config":"{}","arguments":"{}"}', {
      id: 'old',
      deadline: String(Date.now() - 1_000),
    });
    assert.match(responses[0]!.text, /"type":"deadline-exceeded"/);
    assert.equal(calls, 0);
    assert.equal(service.stats().expired, 1);
  });

  test('duplicate, late and unknown-id responses are dropped and counted, never resolving the wrong call', async (t) => {
    const bus = new MemoryBus();
    const ids: string[] = [];
    await bus.subscribe(
      queues.requestQueue,
      async (m) => {
        const id = m.properties['id']!;
        ids.push(id);
        const body = JSON.parse(new TextDecoder().decode(m.body)) as { arguments: string };
        const args = JSON.parse(body.arguments) as { mode: string };
        if (args.mode === 'slow') return; // never answers: the call times out
        const reply = `{"error":null,"response":"for-${id}","end_of_stream":true}`;
        await bus.publish(queues.responseQueue, reply, { id });
        await bus.publish(queues.responseQueue, reply, { id }); // duplicate
      },
      { group: 'g' },
    );
    const client = new ToolServiceClient(bus, queues);
    t.after(async () => {
      await client.close();
      await bus.close();
    });
    const first = await client.call('u', {}, { mode: 'twice' });
    assert.equal(first, `for-${ids[0]}`);
    await assert.rejects(
      client.call('u', {}, { mode: 'slow' }, { timeoutMs: 20 }),
      (e: unknown) => (e as ToolError).code === 'timeout',
    );
    await bus.publish(queues.responseQueue, '{"error":null,"response":"late","end_of_stream":true}', {
      id: ids[1]!,
    });
    await bus.publish(queues.responseQueue, '{"error":null,"response":"?","end_of_stream":true}', {
      id: `${ids[0]}zz`,
    });
    await bus.publish(queues.responseQueue, '{"error":null,"response":"?","end_of_stream":true}', {});
    await bus.publish(queues.responseQueue, '{"error":null,"response":"x","end_of_stream":true}', {
      id: 'someone-else',
    });
    const second = await client.call('u', {}, { mode: 'twice' });
    assert.equal(second, `for-${ids[2]}`);
    await new Promise((r) => setTimeout(r, 5));
    assert.deepEqual(client.stats().dropped, { late: 1, duplicate: 2, unknown: 1, malformed: 1 });
    assert.equal(client.stats().foreign, 1);
    assert.equal(client.pendingCount, 0);
  });

  test('many clients share one response queue; each gets only its own replies', async (t) => {
    const { bus } = await setup(t, async (user, _c, args) => {
      await new Promise((r) => setTimeout(r, 1));
      return `${user}:${String(args['n'])}`;
    });
    const clients = ['a', 'b', 'c'].map(() => new ToolServiceClient(bus, queues));
    t.after(() => Promise.all(clients.map((c) => c.close())));
    const results = await Promise.all(
      clients.flatMap((c, ci) => Array.from({ length: 30 }, (_, n) => c.call(`user${ci}`, {}, { n }))),
    );
    results.forEach((r, i) => assert.equal(r, `user${Math.floor(i / 30)}:${i % 30}`));
    for (const c of clients) {
      assert.equal(c.stats().foreign, 60);
      assert.deepEqual(c.stats().dropped, { late: 0, duplicate: 0, unknown: 0, malformed: 0 });
      assert.equal(c.pendingCount, 0);
    }
  });

  test('close() rejects pending calls with cancelled and tells the service; later calls reject closed', async (t) => {
    let sawAbort!: () => void;
    const serviceAborted = new Promise<void>((r) => (sawAbort = r));
    const { client } = await setup(t, async (_u, _c, _a, ctx) => {
      await aborted(ctx.signal);
      sawAbort();
      return 'x';
    });
    const pending = client.call('u', {}, {});
    await new Promise((r) => setTimeout(r, 5));
    await client.close();
    await client.close();
    await assert.rejects(pending, (e: unknown) => (e as ToolError).code === 'cancelled');
    await serviceAborted;
    await assert.rejects(client.call('u', {}, {}), (e: unknown) => (e as ToolError).code === 'closed');
    assert.equal(client.pendingCount, 0);
  });

  test('a subclass serves calls by overriding invoke(); ctx carries id, deadline and trace context', async (t) => {
    const seen: { id: string; deadline: number | undefined; traceparent: string | undefined }[] = [];
    class EchoService extends DynamicToolService {
      protected override invoke(
        user: string,
        config: Record<string, unknown>,
        args: Record<string, unknown>,
        ctx: ToolServiceInvokeContext,
      ): unknown {
        seen.push({ id: ctx.id, deadline: ctx.deadline, traceparent: ctx.traceparent });
        return { user, config, args };
      }
    }
    const bus = new MemoryBus();
    const service = new EchoService({ bus, ...queues });
    await service.start();
    const client = new ToolServiceClient(bus, queues);
    t.after(async () => {
      await client.close();
      await service.stop();
      await bus.close();
    });
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const before = Date.now();
    const reply = await client.call(
      'alice',
      { style: 'pun' },
      { topic: 'cats' },
      { timeoutMs: 5_000, properties: { traceparent } },
    );
    assert.equal(reply, '{"user":"alice","config":{"style":"pun"},"args":{"topic":"cats"}}');
    assert.equal(seen.length, 1);
    assert.equal(seen[0]!.traceparent, traceparent);
    assert.ok(seen[0]!.id.length > 0);
    assert.ok(seen[0]!.deadline! >= before + 5_000, "the deadline is the caller's timeout from now");
  });

  test('a service without invoke answers tool-service-error saying what is missing', async (t) => {
    const { client } = await setup(t, undefined);
    await assert.rejects(client.call('u', {}, {}), (e: unknown) => {
      assert.ok(e instanceof RemoteToolError);
      assert.match(e.message, /has no invoke: pass 'invoke' in the options or override invoke\(\)/);
      return true;
    });
  });

  test('a running call is aborted when its deadline passes, and answered deadline-exceeded', async (t) => {
    let sawAbort!: (reason: unknown) => void;
    const serviceAborted = new Promise<unknown>((r) => (sawAbort = r));
    const { bus, service } = await setup(t, async (_u, _c, _a, ctx) => {
      sawAbort(await aborted(ctx.signal));
      return 'late';
    });
    const responses = await foreignCall(bus, queues, '{"user":"u","config":"{}","arguments":"{}"}', {
      id: 'soon',
      deadline: String(Date.now() + 30),
    });
    assert.match(responses[0]!.text, /"type":"deadline-exceeded"/);
    const reason = await serviceAborted;
    assert.ok(reason instanceof ToolbusError);
    assert.equal(reason.code, 'timeout');
    assert.equal(service.stats().expired, 1);
  });

  test('a call with a timeout beyond 24.8 days (the timer maximum) runs to its result', async (t) => {
    // Node runs a setTimeout longer than 2^31-1 ms after 1 ms: the deadline backstop must not.
    const { client } = await setup(t, async (_u, _c, _a, ctx) => {
      const signal = ctx.signal;
      await new Promise((resolve) => setTimeout(resolve, 50));
      return signal.aborted ? 'aborted' : 'done';
    });
    assert.equal(await client.call('u', {}, {}, { timeoutMs: 30 * 24 * 3_600_000 }), 'done');
  });

  test('stop() with an aborted signal aborts the running calls, then resolves', async (t) => {
    const reasons: unknown[] = [];
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    const { client, service } = await setup(t, async (_u, _c, _a, ctx) => {
      started();
      reasons.push(await aborted(ctx.signal));
      throw ctx.signal.reason;
    });
    const call = client.call('u', {}, {});
    await running;
    const controller = new AbortController();
    const stopping = service.stop({ signal: controller.signal });
    controller.abort();
    await stopping;
    assert.equal(reasons.length, 1);
    assert.match((reasons[0] as Error).message, /is stopping/);
    await assert.rejects(call, (e: unknown) => e instanceof RemoteToolError && e.remoteType === 'cancelled');
  });

  test(
    'stop({ signal }) ends when the signal aborts even while start() waits on the bus; the start fails closed',
    { timeout: 5_000 },
    async (t) => {
      // A bus whose subscription to the request queue hangs until released, as during a NATS outage.
      const bus = new MemoryBus();
      let release!: () => void;
      const outage = new Promise<void>((r) => (release = r));
      let subscribing!: () => void;
      const waiting = new Promise<void>((r) => (subscribing = r));
      const gated: MessageBus = {
        publish: (...a) => bus.publish(...a),
        subscribe: async (topic, handler, options) => {
          if (topic === queues.requestQueue) {
            subscribing();
            await outage;
          }
          return bus.subscribe(topic, handler, options);
        },
        close: () => bus.close(),
      };
      const service = new DynamicToolService({ bus: gated, ...queues, invoke: () => 'ok' });
      t.after(async () => {
        release();
        await bus.close();
      });
      const starting = service.start();
      await waiting;
      const controller = new AbortController();
      const stopping = service.stop({ signal: controller.signal });
      controller.abort();
      await stopping;
      await assert.rejects(starting, (e: unknown) => e instanceof ToolbusError && e.code === 'closed');
      // When the bus comes back, what the abandoned start subscribed is released: nobody serves calls.
      release();
      const client = new ToolServiceClient(bus, queues);
      t.after(() => client.close());
      // (A live but stopping service would answer too, so look for the client's own "nobody listens".)
      let outcome = '';
      for (let i = 0; i < 50 && !/nothing is subscribed/.test(outcome); i++) {
        await new Promise((r) => setTimeout(r, 10));
        outcome = await client.call('u', {}, {}).then(
          (text) => text,
          (e: unknown) => (e as Error).message,
        );
      }
      assert.match(outcome, /nothing is subscribed/, 'the late subscription was unsubscribed');
    },
  );

  test('start() after a failed start tries again instead of repeating the old failure', async (t) => {
    // The first subscription fails, as a NATS flush does when the server is unreachable.
    const bus = new MemoryBus();
    let failures = 1;
    const flaky: MessageBus = {
      publish: (...a) => bus.publish(...a),
      subscribe: (topic, handler, options) =>
        failures-- > 0
          ? Promise.reject(new ToolbusError('unavailable', `cannot subscribe to topic '${topic}'`))
          : bus.subscribe(topic, handler, options),
      close: () => bus.close(),
    };
    const service = new DynamicToolService({ bus: flaky, ...queues, invoke: () => 'ok' });
    const client = new ToolServiceClient(bus, queues);
    t.after(async () => {
      await client.close();
      await service.stop();
      await bus.close();
    });
    await assert.rejects(service.start(), (e: unknown) => (e as ToolbusError).code === 'unavailable');
    await service.start();
    assert.equal(await client.call('u', {}, {}), 'ok');
  });

  test(
    'stop({ signal }) during an earlier graceful stop() still aborts the running calls',
    { timeout: 5_000 },
    async (t) => {
      let started!: () => void;
      const running = new Promise<void>((r) => (started = r));
      const { client, service } = await setup(t, async (_u, _c, _a, ctx) => {
        started();
        await aborted(ctx.signal);
        throw ctx.signal.reason;
      });
      const call = client.call('u', {}, {});
      await running;
      const graceful = service.stop();
      const controller = new AbortController();
      const forced = service.stop({ signal: controller.signal });
      controller.abort();
      await forced;
      await graceful;
      await assert.rejects(
        call,
        (e: unknown) => e instanceof RemoteToolError && e.remoteType === 'cancelled',
      );
    },
  );

  test('a stream consumer that falls too far behind fails with too-large and the call is cancelled', async (t) => {
    let sawAbort!: () => void;
    const serviceAborted = new Promise<void>((r) => (sawAbort = r));
    const bus = new MemoryBus();
    const service = new DynamicToolService({
      bus,
      ...queues,
      invoke: async (_u, _c, _a, ctx) => {
        ctx.signal.addEventListener('abort', () => sawAbort(), { once: true });
        for (let i = 0; i < 100 && !ctx.signal.aborted; i++) await ctx.write(`c${i}`).catch(() => undefined);
        return 'end';
      },
    });
    await service.start();
    const client = new ToolServiceClient(bus, { ...queues, maxBufferedChunks: 5 });
    t.after(async () => {
      await client.close();
      await service.stop();
      await bus.close();
    });
    const iterator = client.stream('u', {}, {})[Symbol.asyncIterator]();
    await serviceAborted;
    const got: string[] = [];
    await assert.rejects(
      (async () => {
        for (;;) {
          const r = await iterator.next();
          if (r.done) break;
          got.push(r.value);
        }
      })(),
      (e: unknown) =>
        e instanceof ToolError && e.code === 'too-large' && /more than 5 chunks behind/.test(e.message),
    );
    assert.deepEqual(got, ['c0', 'c1', 'c2', 'c3', 'c4']);
    assert.equal(client.pendingCount, 0);
  });

  test('a stream whose buffer is full when the last response arrives still ends with every chunk', async (t) => {
    let finished!: () => void;
    const serviceDone = new Promise<void>((r) => (finished = r));
    const bus = new MemoryBus();
    const service = new DynamicToolService({
      bus,
      ...queues,
      invoke: async (_u, _c, _a, ctx) => {
        for (let i = 0; i < 5; i++) await ctx.write(`c${i}`);
        setImmediate(finished);
        return 'end';
      },
    });
    await service.start();
    const client = new ToolServiceClient(bus, { ...queues, maxBufferedChunks: 5 });
    t.after(async () => {
      await client.close();
      await service.stop();
      await bus.close();
    });
    const iterator = client.stream('u', {}, {})[Symbol.asyncIterator]();
    await serviceDone;
    const got: string[] = [];
    for (;;) {
      const r = await iterator.next();
      if (r.done) break;
      got.push(r.value);
    }
    assert.deepEqual(got, ['c0', 'c1', 'c2', 'c3', 'c4', 'end']);
    assert.equal(client.pendingCount, 0);
  });

  test('a queued call whose deadline passes while it waits is answered deadline-exceeded, not run', async (t) => {
    let clock = 0;
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const ran: string[] = [];
    const bus = new MemoryBus();
    const service = new DynamicToolService({
      bus,
      ...queues,
      concurrency: 1,
      now: () => clock,
      invoke: async (_u, _c, args) => {
        ran.push(String(args['n']));
        if (args['n'] === 1) await released;
        return 'ok';
      },
    });
    await service.start();
    const client = new ToolServiceClient(bus, { ...queues, now: () => 0, timeoutMs: 10_000 });
    t.after(async () => {
      await client.close();
      await service.stop({ signal: AbortSignal.abort() });
      await bus.close();
    });
    const first = client.call('u', {}, { n: 1 });
    const second = client.call('u', {}, { n: 2 });
    while (service.stats().queued === 0) await new Promise((r) => setImmediate(r));
    clock = 20_000; // both deadlines (10 000) have passed; only the queued call has not started
    release();
    assert.equal(await first, 'ok');
    // The service answers deadline-exceeded; the caller sees a timeout, the remote error as the cause.
    await assert.rejects(second, (e: unknown) => {
      assert.ok(e instanceof ToolError);
      assert.equal(e.code, 'timeout');
      assert.match(e.message, /no result within the timeout.*deadline-exceeded/);
      assert.ok(e.cause instanceof RemoteToolError && e.cause.remoteType === 'deadline-exceeded');
      return true;
    });
    assert.deepEqual(ran, ['1']);
    assert.equal(service.stats().expired, 1);
  });

  test('a result too large for the bus is answered with an error at once, not left to the timeout', async (t) => {
    /** A bus with a message size limit, as NATS has (max_payload). */
    class SmallBus extends MemoryBus {
      override publish(...args: Parameters<MemoryBus['publish']>): Promise<void> {
        if (args[1].length > 1_000) {
          return Promise.reject(
            new ToolbusError('too-large', `the message is above max_payload of 1000 bytes`),
          );
        }
        return super.publish(...args);
      }
    }
    const bus = new SmallBus();
    const publishErrors: unknown[] = [];
    const service = new DynamicToolService({
      bus,
      ...queues,
      invoke: () => 'x'.repeat(5_000),
      hooks: { onPublishError: ({ error }) => void publishErrors.push(error) },
    });
    await service.start();
    const client = new ToolServiceClient(bus, { ...queues, timeoutMs: 30_000 });
    t.after(async () => {
      await client.close();
      await service.stop();
      await bus.close();
    });
    await assert.rejects(client.call('u', {}, {}), (e: unknown) => {
      assert.ok(e instanceof RemoteToolError);
      assert.equal(e.remoteType, 'tool-service-error');
      assert.match(e.message, /result could not be sent.*max_payload/);
      return true;
    });
    assert.equal(publishErrors.length, 1);
    assert.equal(client.pendingCount, 0);
  });

  test('a request reusing the id of a call in progress is dropped and reported, the first call unharmed', async (t) => {
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const reasons: string[] = [];
    let runs = 0;
    const { bus, service } = await setup(
      t,
      async () => {
        runs++;
        await released;
        return 'first';
      },
      { hooks: { onMalformedMessage: ({ reason }) => void reasons.push(reason) } },
    );
    const body = '{"user":"u","config":"{}","arguments":"{}"}';
    const first = foreignCall(bus, queues, body, { id: 'same' });
    while (service.stats().inFlight === 0) await new Promise((r) => setImmediate(r));
    await bus.publish(queues.requestQueue, body, { id: 'same' });
    await new Promise((r) => setImmediate(r));
    assert.equal(runs, 1);
    assert.match(reasons[0] ?? '', /reuses the id of a call in progress/);
    release();
    const responses = await first;
    assert.match(responses[0]!.text, /"response":"first"/);
    assert.equal(service.stats().inFlight, 0);
  });

  test('cancelling a queued call frees its queue slot at once', async (t) => {
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let runs = 0;
    const { client, service } = await setup(
      t,
      async () => {
        runs++;
        await released;
        return 'ok';
      },
      { concurrency: 1, maxQueued: 1 },
    );
    const first = client.call('u', {}, {});
    const controller = new AbortController();
    const second = client.call('u', {}, {}, { signal: controller.signal });
    while (service.stats().queued === 0) await new Promise((r) => setImmediate(r));
    controller.abort();
    await assert.rejects(second, (e: unknown) => e instanceof ToolError && e.code === 'cancelled');
    while (service.stats().queued !== 0) await new Promise((r) => setImmediate(r));
    assert.equal(service.stats().cancelled, 1);
    // The slot is free: a third call is queued, not refused with too-many-requests.
    const third = client.call('u', {}, {});
    release();
    assert.equal(await first, 'ok');
    assert.equal(await third, 'ok');
    assert.equal(runs, 2);
  });

  test(
    'a result whose then() throws (or whose then getter throws) is answered tool-service-error and leaves the running list',
    { timeout: 5_000 },
    async (t) => {
      const results: unknown[] = [
        {
          then(): never {
            throw new Error('then exploded');
          },
        },
        {
          get then(): never {
            throw new Error('then getter exploded');
          },
        },
      ];
      let n = 0;
      const { client, service } = await setup(t, () => results[n++]);
      for (const expected of [/then exploded/, /then getter exploded/]) {
        await assert.rejects(client.call('u', {}, {}), (e: unknown) => {
          assert.ok(e instanceof RemoteToolError);
          assert.equal(e.remoteType, 'tool-service-error');
          assert.match(e.message, expected);
          return true;
        });
      }
      assert.equal(service.stats().inFlight, 0);
      // A graceful stop waits for running calls: it finishes only if the calls left the running list.
      await service.stop();
    },
  );

  test('bad numeric options fail with usage, bad queues with invalid-config', () => {
    const bus = new MemoryBus();
    assert.throws(
      () => new DynamicToolService({ bus, topic: 'x', concurrency: 0 }),
      (e: unknown) => e instanceof ToolbusError && e.code === 'usage' && /'concurrency'/.test(e.message),
    );
    assert.throws(
      () => new ToolServiceClient(bus, { requestQueue: 'bad queue', responseQueue: 'r' }),
      (e: unknown) => e instanceof ToolbusError && e.code === 'invalid-config',
    );
    // One topic for both would feed the service its own responses as requests, forever.
    const same = { requestQueue: 'non-persistent://tg/request/x', responseQueue: 'request:tg:x' };
    for (const create of [
      () => new DynamicToolService({ bus, ...same }),
      () => new ToolServiceClient(bus, same),
    ]) {
      assert.throws(
        create,
        (e: unknown) =>
          e instanceof ToolbusError &&
          e.code === 'invalid-config' &&
          /request queue and response queue are the same topic 'request:tg:x'/.test(e.message),
      );
    }
    for (const maxBufferedChunks of [0, -5, Number.NaN, 1.5]) {
      assert.throws(
        () => new ToolServiceClient(bus, { ...queues, maxBufferedChunks }),
        (e: unknown) =>
          e instanceof ToolbusError &&
          e.code === 'usage' &&
          /'maxBufferedChunks' must be a positive integer/.test(e.message),
      );
    }
    assert.throws(
      () => new ToolServiceClient(bus, { ...queues, timeoutMs: -1 }),
      (e: unknown) => e instanceof ToolbusError && e.code === 'usage' && /'timeoutMs'/.test(e.message),
    );
  });
});
