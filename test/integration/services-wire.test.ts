/**
 * Wire conformance: our client and service against a "foreign" peer written only against MessageBus and
 * raw JSON (test/support/foreign-peer.ts), in both directions.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryBus } from '../../src/bus/index.js';
import {
  DynamicToolService,
  RemoteToolError,
  ToolServiceClient,
  type MalformedMessageContext,
} from '../../src/services/index.js';
import { foreignCall, startForeignService } from '../support/foreign-peer.js';

const queues = {
  requestQueue: 'non-persistent://tg/request/joke',
  responseQueue: 'non-persistent://tg/response/joke',
};

describe('our client talking to a foreign service', () => {
  test('sends the golden request JSON with an id and deadline, and returns the response string', async (t) => {
    const bus = new MemoryBus();
    t.after(() => bus.close());
    const foreign = await startForeignService(bus, queues, (req) => ({
      chunks: [`${req.user}:${String(req.config['style'])}:${String(req.arguments['topic'])}`],
    }));
    const client = new ToolServiceClient(bus, queues);
    t.after(() => client.close());
    const reply = await client.call('alice', { style: 'pun' }, { topic: 'cats' });
    assert.equal(reply, 'alice:pun:cats');
    assert.equal(foreign.seen.length, 1);
    const seen = foreign.seen[0]!;
    assert.equal(
      seen.text,
      '{"user":"alice","config":"{\\"style\\":\\"pun\\"}","arguments":"{\\"topic\\":\\"cats\\"}"}',
    );
    assert.equal(typeof seen.properties['id'], 'string');
    assert.ok(seen.properties['id']!.length > 0);
    assert.match(seen.properties['deadline']!, /^\d+$/);
    assert.equal(client.pendingCount, 0);
  });

  test('streams chunks in order; call() joins them', async (t) => {
    const bus = new MemoryBus();
    t.after(() => bus.close());
    await startForeignService(bus, queues, () => ({ chunks: ['Hey ', 'alice', '! ', 'pun'] }));
    const client = new ToolServiceClient(bus, queues);
    t.after(() => client.close());
    const chunks: string[] = [];
    for await (const chunk of client.stream('alice', {}, {})) chunks.push(chunk);
    assert.deepEqual(chunks, ['Hey ', 'alice', '! ', 'pun']);
    assert.equal(await client.call('alice', {}, {}), 'Hey alice! pun');
  });

  test('a foreign error object becomes a tool-error keeping the remote type and message', async (t) => {
    const bus = new MemoryBus();
    t.after(() => bus.close());
    await startForeignService(bus, queues, () => ({
      error: { type: 'rag-error', message: 'collection missing' },
    }));
    const client = new ToolServiceClient(bus, queues);
    t.after(() => client.close());
    await assert.rejects(client.call('alice', {}, {}), (e: unknown) => {
      assert.ok(e instanceof RemoteToolError);
      assert.equal(e.code, 'tool-error');
      assert.equal(e.remoteType, 'rag-error');
      assert.match(e.message, /rag-error/);
      assert.match(e.message, /collection missing/);
      return true;
    });
  });
});

describe('a foreign client talking to our service', () => {
  async function startService(
    bus: MemoryBus,
    invoke: ConstructorParameters<typeof DynamicToolService>[0]['invoke'],
    hooks?: { onMalformedMessage?: (c: MalformedMessageContext) => void },
  ): Promise<DynamicToolService> {
    const service = new DynamicToolService({ bus, id: 'joke-service', topic: 'joke', invoke, hooks });
    await service.start();
    return service;
  }

  test('answers the golden response with the id echoed (no user field, as TrustGraph at HEAD sends)', async (t) => {
    const bus = new MemoryBus();
    t.after(() => bus.close());
    const service = await startService(
      bus,
      (user, config, args) => `[${user}] ${String(config['style'])} about ${String(args['topic'])}`,
    );
    t.after(() => service.stop());
    const responses = await foreignCall(
      bus,
      queues,
      '{"config":"{\\"style\\":\\"pun\\"}","arguments":"{\\"topic\\":\\"cats\\"}"}',
      { id: 'req-1' },
    );
    assert.equal(responses.length, 1);
    assert.equal(responses[0]!.text, '{"error":null,"response":"[] pun about cats","end_of_stream":true}');
    assert.deepEqual(responses[0]!.properties, { id: 'req-1' });
  });

  test('a non-string result is sent as JSON text; the trace context is echoed', async (t) => {
    const bus = new MemoryBus();
    t.after(() => bus.close());
    const service = await startService(bus, () => ({ answer: 42, list: [1, 2] }));
    t.after(() => service.stop());
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const responses = await foreignCall(bus, queues, '{"user":"u","config":"","arguments":""}', {
      id: 'req-2',
      traceparent,
    });
    assert.equal(
      responses[0]!.text,
      '{"error":null,"response":"{\\"answer\\":42,\\"list\\":[1,2]}","end_of_stream":true}',
    );
    assert.deepEqual(responses[0]!.properties, { id: 'req-2', traceparent });
  });

  test('a result with content parts: response is still a plain string, the parts ride beside it', async (t) => {
    const bus = new MemoryBus();
    t.after(() => bus.close());
    const png = 'iVBORw0KGgo=';
    const service = await startService(bus, () => [
      { type: 'text', text: 'A cat' },
      { type: 'image', data: png, mimeType: 'image/png' },
    ]);
    t.after(() => service.stop());
    const responses = await foreignCall(bus, queues, '{"user":"u","config":"{}","arguments":"{}"}', {
      id: 'p',
    });
    assert.equal(responses.length, 1);
    // What a TrustGraph ToolServiceResponse reads: error, response (a str), end_of_stream.
    const { error, response, end_of_stream, parts } = JSON.parse(responses[0]!.text) as Record<
      string,
      unknown
    >;
    assert.deepEqual([error, response, end_of_stream], [null, 'A cat\n[image: image/png, 8 bytes]', true]);
    assert.deepEqual(parts, [
      { type: 'text', text: 'A cat' },
      { type: 'image', data: png, mimeType: 'image/png' },
    ]);
  });

  test('streams with end_of_stream false chunks in order, then a last true', async (t) => {
    const bus = new MemoryBus();
    t.after(() => bus.close());
    const service = await startService(bus, async (_u, _c, _a, ctx) => {
      await ctx.write('one ');
      await ctx.write('two ');
      await ctx.write({ n: 3 });
      return 'end';
    });
    t.after(() => service.stop());
    const responses = await foreignCall(bus, queues, '{"user":"u","config":"{}","arguments":"{}"}', {
      id: 's',
    });
    assert.deepEqual(
      responses.map((r) => r.text),
      [
        '{"error":null,"response":"one ","end_of_stream":false}',
        '{"error":null,"response":"two ","end_of_stream":false}',
        '{"error":null,"response":"{\\"n\\":3}","end_of_stream":false}',
        '{"error":null,"response":"end","end_of_stream":true}',
      ],
    );
    assert.ok(responses.every((r) => r.properties['id'] === 's'));
  });

  test('a thrown error becomes the golden tool-service-error shape', async (t) => {
    const bus = new MemoryBus();
    t.after(() => bus.close());
    const service = await startService(bus, () => {
      throw new Error('no jokes today');
    });
    t.after(() => service.stop());
    const responses = await foreignCall(bus, queues, '{"user":"u","config":"{}","arguments":"{}"}', {
      id: 'e',
    });
    assert.equal(
      responses[0]!.text,
      '{"error":{"type":"tool-service-error","message":"no jokes today"},"response":"","end_of_stream":true}',
    );
    assert.equal(service.stats().failed, 1);
  });

  test('a malformed message with a readable id gets invalid-request; one without is counted, never a crash', async (t) => {
    const bus = new MemoryBus();
    t.after(() => bus.close());
    const malformed: MalformedMessageContext[] = [];
    let calls = 0;
    const service = await startService(
      bus,
      () => {
        calls++;
        return 'fine';
      },
      { onMalformedMessage: (c) => malformed.push(c) },
    );
    t.after(() => service.stop());

    const notJson = await foreignCall(bus, queues, 'this is not json', { id: 'bad-1' });
    assert.equal(notJson.length, 1);
    const body = JSON.parse(notJson[0]!.text) as {
      error: { type: string; message: string };
      end_of_stream: boolean;
    };
    assert.equal(body.error.type, 'invalid-request');
    assert.match(body.error.message, /not JSON/);
    assert.equal(body.end_of_stream, true);
    assert.equal(notJson[0]!.properties['id'], 'bad-1');

    const badField = await foreignCall(bus, queues, '{"user":"u","config":"[1]","arguments":"{}"}', {
      id: 'bad-2',
    });
    assert.match(badField[0]!.text, /"type":"invalid-request".*'config' must hold a JSON object/);

    // No id at all, and an empty id: nothing to answer; counted and reported.
    await bus.publish(queues.requestQueue, '{"user":"u","config":"{}","arguments":"{}"}', {});
    await bus.publish(queues.requestQueue, 'garbage', { id: '' });
    const ok = await foreignCall(bus, queues, '{"user":"u","config":"{}","arguments":"{}"}', { id: 'good' });
    assert.match(ok[0]!.text, /"response":"fine"/);
    assert.equal(calls, 1);
    const stats = service.stats();
    assert.equal(stats.invalid, 2);
    assert.equal(stats.unreadable, 2);
    assert.equal(malformed.length, 4);
    assert.equal(malformed.filter((m) => m.id === undefined).length, 2);
  });

  test('our client and our service interoperate with a foreign peer on the same queues', async (t) => {
    const bus = new MemoryBus();
    t.after(() => bus.close());
    const service = await startService(bus, (user, _c, args) => `${user}/${String(args['x'])}`);
    t.after(() => service.stop());
    const client = new ToolServiceClient(bus, queues);
    t.after(() => client.close());
    const [ours, theirs] = await Promise.all([
      client.call('alice', {}, { x: 1 }),
      foreignCall(bus, queues, '{"user":"bob","config":"{}","arguments":"{\\"x\\":2}"}', { id: 'f-1' }),
    ]);
    assert.equal(ours, 'alice/1');
    assert.equal(theirs[0]!.text, '{"error":null,"response":"bob/2","end_of_stream":true}');
    // The foreign client's response reached our client too (shared response queue): ignored, not an error.
    assert.equal(client.stats().foreign, 1);
    assert.deepEqual(client.stats().dropped, { late: 0, duplicate: 0, unknown: 0, malformed: 0 });
  });
});
