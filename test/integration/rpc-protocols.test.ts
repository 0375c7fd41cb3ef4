/**
 * The request/response edge cases both bus protocols share, tested once against each of them: a tool
 * service (`DynamicToolService`) and the agent service (`AgentService`) sit on the same RPC layer
 * (`src/services/rpc/`), so a raw peer sees them agree on ids, deadlines, cancellation, capacity,
 * duplicates and stopping. Requests are written by hand, as a foreign peer would.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryBus } from '../../src/bus/index.js';
import type { BusProperties, MessageBus } from '../../src/bus/index.js';
import { AgentService } from '../../src/agents/index.js';
import { DynamicToolService } from '../../src/services/index.js';
import { ToolbusError } from '../../src/errors/index.js';

/** How a raw peer reads one protocol's replies. */
interface Protocol {
  name: string;
  requestQueue: string;
  responseQueue: string;
  /** A valid request body. */
  body: string;
  /** The wire type a passed deadline is answered with. */
  timeoutType: string;
  /** Starts the service; `handler` serves each call with its signal. */
  start(
    bus: MessageBus,
    handler: (signal: AbortSignal) => Promise<string>,
    options: { concurrency?: number; maxQueued?: number; problems: string[] },
  ): Promise<{ stop(signal?: AbortSignal): Promise<void> }>;
  /** The reply is the call's last. */
  isLast(reply: Reply): boolean;
  /** The wire error type of a reply, or undefined for a result. */
  errorType(reply: Reply): string | undefined;
  /** The result text of a last, successful reply. */
  result(reply: Reply): string;
}

interface Reply {
  body: Record<string, unknown>;
  properties: BusProperties;
}

const tool: Protocol = {
  name: 'tool service',
  requestQueue: 'request:tg:edge',
  responseQueue: 'response:tg:edge',
  body: '{"user":"alice","config":"{}","arguments":"{}"}',
  timeoutType: 'deadline-exceeded',
  async start(bus, handler, { concurrency, maxQueued, problems }) {
    const service = new DynamicToolService({
      bus,
      requestQueue: this.requestQueue,
      responseQueue: this.responseQueue,
      ...(concurrency !== undefined ? { concurrency } : {}),
      ...(maxQueued !== undefined ? { maxQueued } : {}),
      invoke: (_user, _config, _args, ctx) => handler(ctx.signal),
      hooks: { onMalformedMessage: ({ reason }) => void problems.push(reason) },
    });
    await service.start();
    return { stop: (signal) => service.stop(signal ? { signal } : {}) };
  },
  isLast: (reply) => reply.body['end_of_stream'] === true || reply.body['error'] !== null,
  errorType: (reply) => (reply.body['error'] as { type: string } | null)?.type,
  result: (reply) => reply.body['response'] as string,
};

const agent: Protocol = {
  name: 'agent service',
  requestQueue: 'request:tg:edge-agent',
  responseQueue: 'response:tg:edge-agent',
  body: '{"question":"q","user":"alice"}',
  timeoutType: 'timeout',
  async start(bus, handler, { concurrency, maxQueued, problems }) {
    const service = new AgentService({
      bus,
      requestQueue: this.requestQueue,
      responseQueue: this.responseQueue,
      ...(concurrency !== undefined ? { concurrency } : {}),
      ...(maxQueued !== undefined ? { maxQueued } : {}),
      agent: { run: (_question, options) => handler(options!.signal!) },
      hooks: { onProblem: ({ reason }) => void problems.push(reason) },
    });
    await service.start();
    return { stop: (signal) => service.stop(signal ? { signal } : {}) };
  },
  isLast: (reply) => reply.body['end_of_dialog'] === true,
  errorType: (reply) => (reply.body['error'] as { type: string } | null)?.type,
  result: (reply) => reply.body['content'] as string,
};

const decoder = new TextDecoder();

/** A raw peer on one protocol's queues: sends requests by hand and collects the replies per id. */
async function rawPeer(bus: MessageBus, protocol: Protocol) {
  const replies = new Map<string, Reply[]>();
  const waiters = new Map<string, () => void>();
  const subscription = await bus.subscribe(protocol.responseQueue, (message) => {
    const id = message.properties['id']!;
    const reply = {
      body: JSON.parse(decoder.decode(message.body)) as Record<string, unknown>,
      properties: message.properties,
    };
    const list = replies.get(id) ?? [];
    list.push(reply);
    replies.set(id, list);
    if (protocol.isLast(reply)) waiters.get(id)?.();
  });
  return {
    send(properties: Record<string, unknown>, body = protocol.body): Promise<void> {
      return bus.publish(protocol.requestQueue, body, properties as BusProperties);
    },
    cancel(id: string): Promise<void> {
      return bus.publish(`${protocol.requestQueue}:cancel`, '', { id, cancel: 'the raw peer gave up' });
    },
    /** The replies of `id`, once its last one arrived (rejects after `ms`: never a silent hang). */
    async last(id: string, ms = 2_000): Promise<Reply> {
      const done = (): Reply | undefined => replies.get(id)?.find((r) => protocol.isLast(r));
      if (!done()) {
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`no last reply for '${id}' within ${ms} ms`)), ms);
          waiters.set(id, () => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
      return done()!;
    },
    count: (id: string): number => replies.get(id)?.length ?? 0,
    close: () => subscription.unsubscribe(),
  };
}

/** A handler that waits until its signal aborts, reporting the reason; or resolves when released. */
function gatedHandler() {
  const reasons: unknown[] = [];
  let runs = 0;
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  const handler = (signal: AbortSignal): Promise<string> =>
    new Promise<string>((resolve, reject) => {
      runs++;
      signal.addEventListener(
        'abort',
        () => {
          reasons.push(signal.reason);
          reject(signal.reason);
        },
        { once: true },
      );
      void released.then(() => resolve('ok'));
    });
  return { handler, reasons, release, runs: () => runs };
}

const tick = (ms = 5): Promise<void> => new Promise((r) => setTimeout(r, ms));

for (const protocol of [tool, agent]) {
  describe(`RPC edge cases: ${protocol.name}`, { timeout: 20_000 }, () => {
    async function setup(
      t: { after: (fn: () => Promise<void>) => void },
      handler: (signal: AbortSignal) => Promise<string>,
      options: { concurrency?: number; maxQueued?: number } = {},
    ) {
      const bus = new MemoryBus();
      const problems: string[] = [];
      const service = await protocol.start(bus, handler, { ...options, problems });
      const peer = await rawPeer(bus, protocol);
      t.after(async () => {
        await peer.close();
        await service.stop(AbortSignal.abort());
        await bus.close();
      });
      return { bus, service, peer, problems };
    }

    test("a 'deadline' of '' or unparsable text is no deadline: the request is served", async (t) => {
      const { peer } = await setup(t, async () => 'ok');
      for (const [id, deadline] of [
        ['blank', ''],
        ['space', ' '],
        ['word', 'soon'],
      ] as const) {
        await peer.send({ id, deadline });
        const reply = await peer.last(id);
        assert.equal(protocol.errorType(reply), undefined, `deadline ${JSON.stringify(deadline)}`);
        assert.equal(protocol.result(reply), 'ok');
      }
    });

    test('a non-string deadline (a JavaScript caller) is read or ignored, and always answered', async (t) => {
      const { peer } = await setup(t, async () => 'ok');
      // A finite number is read as epoch ms: 5 ms after 1970 has long passed.
      await peer.send({ id: 'number', deadline: 5 });
      assert.equal(protocol.errorType(await peer.last('number')), protocol.timeoutType);
      for (const [id, deadline] of [
        ['object', {}],
        ['boolean', true],
        ['nan', Number.NaN],
      ] as const) {
        await peer.send({ id, deadline });
        assert.equal(protocol.result(await peer.last(id)), 'ok', `deadline ${String(deadline)}`);
      }
    });

    test('a passed deadline is answered at once, without running the handler', async (t) => {
      let runs = 0;
      const { peer } = await setup(t, async () => (runs++, 'ok'));
      await peer.send({ id: 'old', deadline: String(Date.now() - 1_000) });
      const reply = await peer.last('old');
      assert.equal(protocol.errorType(reply), protocol.timeoutType);
      assert.equal(runs, 0);
    });

    test("a running call's signal aborts at its deadline, with code timeout, cancel message or not", async (t) => {
      const gate = gatedHandler();
      const { peer } = await setup(t, gate.handler);
      const deadline = Date.now() + 60;
      await peer.send({ id: 'soon', deadline: String(deadline) });
      const reply = await peer.last('soon');
      assert.ok(Date.now() >= deadline, 'not aborted before the deadline');
      assert.equal(protocol.errorType(reply), protocol.timeoutType);
      assert.ok(gate.reasons[0] instanceof ToolbusError);
      assert.equal(gate.reasons[0].code, 'timeout');
    });

    test('a cancel on the control topic aborts the running call; a queued one is answered at once', async (t) => {
      const gate = gatedHandler();
      const { peer } = await setup(t, gate.handler, { concurrency: 1, maxQueued: 1 });
      await peer.send({ id: 'running' });
      await peer.send({ id: 'queued' });
      while (gate.runs() === 0) await tick(1);
      await peer.cancel('queued');
      assert.equal(protocol.errorType(await peer.last('queued')), 'cancelled');
      await peer.cancel('running');
      assert.equal(protocol.errorType(await peer.last('running')), 'cancelled');
      assert.match((gate.reasons[0] as Error).message, /was cancelled by the caller: the raw peer gave up/);
      assert.equal(gate.runs(), 1, 'the cancelled queued call never ran');
    });

    test('beyond concurrency and the queue, a request is answered too-many-requests', async (t) => {
      const gate = gatedHandler();
      const { peer } = await setup(t, gate.handler, { concurrency: 1, maxQueued: 1 });
      await peer.send({ id: 'a' });
      await peer.send({ id: 'b' });
      await peer.send({ id: 'c' });
      const refused = await peer.last('c');
      assert.equal(protocol.errorType(refused), 'too-many-requests');
      gate.release();
      assert.equal(protocol.result(await peer.last('a')), 'ok');
      assert.equal(protocol.result(await peer.last('b')), 'ok');
    });

    test('a request reusing the id of a call in progress is dropped and reported, even with a bad body', async (t) => {
      const gate = gatedHandler();
      const { peer, problems } = await setup(t, gate.handler);
      await peer.send({ id: 'same' });
      while (gate.runs() === 0) await tick(1);
      await peer.send({ id: 'same' });
      await peer.send({ id: 'same' }, 'not json');
      await tick();
      assert.equal(gate.runs(), 1);
      assert.equal(peer.count('same'), 0, 'nothing was answered under the id in progress');
      assert.equal(problems.length, 2);
      gate.release();
      assert.equal(protocol.result(await peer.last('same')), 'ok');
      await tick();
      assert.equal(peer.count('same'), 1);
    });

    test('a request without a readable id (missing, empty, a number) is dropped and reported, never a crash', async (t) => {
      const { peer, problems } = await setup(t, async () => 'ok');
      await peer.send({});
      await peer.send({ id: '' });
      await peer.send({ id: 5 });
      await peer.send({ id: 'fine' });
      assert.equal(protocol.result(await peer.last('fine')), 'ok');
      assert.equal(problems.length, 3);
    });

    test('a malformed body gets invalid-request under its id; trace context is echoed only as text', async (t) => {
      const { peer } = await setup(t, async () => 'ok');
      await peer.send({ id: 'bad' }, '[1, 2]');
      assert.equal(protocol.errorType(await peer.last('bad')), 'invalid-request');
      await peer.send({ id: 'traced', traceparent: 't-1', tracestate: 's-1' });
      assert.deepEqual((await peer.last('traced')).properties, {
        id: 'traced',
        traceparent: 't-1',
        tracestate: 's-1',
      });
      await peer.send({ id: 'odd', traceparent: 42 });
      assert.deepEqual((await peer.last('odd')).properties, { id: 'odd' });
    });

    test('a graceful stop lets the running call finish and answers requests still arriving unavailable', async (t) => {
      const gate = gatedHandler();
      const { peer, service } = await setup(t, gate.handler);
      await peer.send({ id: 'running' });
      while (gate.runs() === 0) await tick(1);
      // A request already on its way when the stop begins: answered, not lost.
      const sent = peer.send({ id: 'late' });
      const stopping = service.stop();
      await sent;
      assert.equal(protocol.errorType(await peer.last('late')), 'unavailable');
      gate.release();
      assert.equal(protocol.result(await peer.last('running')), 'ok');
      await stopping;
    });

    test('a stop whose signal aborts aborts the running call and answers the queued one', async (t) => {
      const gate = gatedHandler();
      const { peer, service } = await setup(t, gate.handler, { concurrency: 1 });
      await peer.send({ id: 'running' });
      await peer.send({ id: 'queued' });
      while (gate.runs() === 0) await tick(1);
      await service.stop(AbortSignal.abort());
      const stopType = protocol === agent ? 'unavailable' : 'cancelled';
      assert.equal(protocol.errorType(await peer.last('running')), stopType);
      assert.equal(protocol.errorType(await peer.last('queued')), stopType);
      assert.match((gate.reasons[0] as Error).message, /is stopping/);
    });
  });
}
