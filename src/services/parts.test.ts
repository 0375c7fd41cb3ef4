/**
 * @module Content parts and progress over tool services: parts travel in the response's optional
 * `parts` field while `response` stays a plain string for TrustGraph peers; streamed chunks restart the
 * timeout of a tool whose descriptor sets `max-total-timeout-ms`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { MemoryBus } from '../bus/index.js';
import { ToolSet } from '../tools/index.js';
import { DynamicToolService } from './dynamic-tool-service.js';
import { ToolServiceClient } from './tool-service-client.js';
import { createToolServiceTool } from './tool-service-tool.js';
import { decodeResponse, encodeRequest } from './wire.js';

const PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
const queues = { requestQueue: 'request:tg:chart', responseQueue: 'response:tg:chart' };
const serviceDescriptor = {
  id: 'chart',
  'request-queue': queues.requestQueue,
  'response-queue': queues.responseQueue,
  'config-params': [],
};
function toolDescriptor(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    type: 'tool-service',
    name: 'draw-chart',
    description: 'Draws a chart',
    service: 'chart',
    arguments: [{ name: 'title', type: 'string', description: 'The title' }],
    ...extra,
  };
}

test('a service returning parts: a toolbus caller gets the parts, a TrustGraph peer a plain string', async (t) => {
  const bus = new MemoryBus();
  const service = new DynamicToolService({
    bus,
    ...queues,
    invoke: (_user, _config, args) => [
      { type: 'text', text: `Chart: ${String(args['title'])}` },
      { type: 'image', data: PNG, mimeType: 'image/png' },
    ],
  });
  await service.start();
  t.after(async () => {
    await service.stop();
    await bus.close();
  });

  const { tool } = createToolServiceTool({ bus, service: serviceDescriptor, tool: toolDescriptor() });
  const result = await new ToolSet([tool]).call('draw-chart', { title: 'Sales' });
  assert.equal(result.isError, false, result.content);
  assert.deepEqual(result.parts, [
    { type: 'text', text: 'Chart: Sales' },
    { type: 'image', data: PNG, mimeType: 'image/png' },
  ]);
  assert.equal(result.content, 'Chart: Sales\n[image: image/png, 70 bytes]');

  // A foreign peer publishes the seed's request and reads `response` only: a string.
  const bodies: string[] = [];
  const got = new Promise<void>((resolve) => {
    void bus.subscribe(queues.responseQueue, (message) => {
      bodies.push(new TextDecoder().decode(message.body));
      resolve();
    });
  });
  await bus.publish(
    queues.requestQueue,
    encodeRequest({ user: 'bob', config: '{}', arguments: '{"title":"Costs"}' }),
    { id: 'tg-1' },
  );
  await got;
  const raw = JSON.parse(bodies[0]!) as Record<string, unknown>;
  assert.equal(typeof raw['response'], 'string');
  assert.equal(raw['response'], 'Chart: Costs\n[image: image/png, 70 bytes]');
  assert.equal(raw['end_of_stream'], true);
  assert.equal(raw['error'], null);
  assert.deepEqual(raw['parts'], [
    { type: 'text', text: 'Chart: Costs' },
    { type: 'image', data: PNG, mimeType: 'image/png' },
  ]);
});

test('a malformed parts field is refused with what was expected; a broken part fails the call', async (t) => {
  assert.throws(
    () => decodeResponse('{"error":null,"response":"x","end_of_stream":true,"parts":"nope"}'),
    /field 'parts' must be an array of content parts .*got string/,
  );
  assert.throws(
    () =>
      decodeResponse(
        '{"error":null,"response":"x","end_of_stream":true,"parts":[{"type":"image","data":"AAAA"}]}',
      ),
    /field 'parts' has part 0 of its result \(image\) needs a 'mimeType'/,
  );
  assert.deepEqual(
    decodeResponse('{"error":null,"response":"x","end_of_stream":true,"parts":[{"type":"text","text":"x"}]}')
      .parts,
    [{ type: 'text', text: 'x' }],
  );

  const bus = new MemoryBus();
  const service = new DynamicToolService({
    bus,
    ...queues,
    invoke: () => [{ type: 'image', data: 'AAAA', mimeType: 'text/plain' }],
  });
  await service.start();
  t.after(async () => {
    await service.stop();
    await bus.close();
  });
  const client = new ToolServiceClient(bus, { ...queues, timeoutMs: 5_000 });
  await assert.rejects(client.call('', {}, {}), /needs a 'mimeType' such as 'image\/png', got 'text\/plain'/);
  await client.close();
});

test('streamed chunks restart the timeout of a tool with max-total-timeout-ms; without it the call times out', async (t) => {
  const bus = new MemoryBus();
  const service = new DynamicToolService({
    bus,
    ...queues,
    invoke: async (_user, _config, _args, ctx) => {
      for (let i = 0; i < 6; i++) {
        await sleep(50);
        await ctx.write(`step ${i + 1}`);
      }
      return ' done';
    },
  });
  await service.start();
  t.after(async () => {
    await service.stop();
    await bus.close();
  });
  const progressing = createToolServiceTool({
    bus,
    service: serviceDescriptor,
    tool: toolDescriptor({ 'max-total-timeout-ms': 10_000 }),
  }).tool;
  assert.equal(progressing.maxTotalTimeoutMs, 10_000);
  const reports: number[] = [];
  const ok = await new ToolSet([progressing], { timeoutMs: 150 }).call(
    'draw-chart',
    { title: 'x' },
    { onProgress: (p) => reports.push(p.progress) },
  );
  assert.equal(ok.isError, false, ok.content);
  assert.match(ok.content, /step 6 done$/);
  assert.deepEqual(reports, [1, 2, 3, 4, 5, 6]);

  const plain = createToolServiceTool({ bus, service: serviceDescriptor, tool: toolDescriptor() }).tool;
  const late = await new ToolSet([plain], { timeoutMs: 150 }).call('draw-chart', { title: 'x' });
  assert.equal(late.error?.code, 'timeout');

  assert.throws(
    () =>
      createToolServiceTool({
        bus,
        service: serviceDescriptor,
        tool: toolDescriptor({ 'max-total-timeout-ms': '1h' }),
      }),
    /field 'max-total-timeout-ms' must be a positive whole number of milliseconds, got "1h"/,
  );
});

test('a durable service keeps the parts of a result with the call: result() and a task see them', async (t) => {
  const bus = new MemoryBus();
  const durable = { requestQueue: 'request:tg:chart-d', responseQueue: 'response:tg:chart-d' };
  const service = new DynamicToolService({
    bus,
    ...durable,
    delivery: 'durable',
    invoke: () => [
      { type: 'text', text: 'Kept' },
      { type: 'image', data: PNG, mimeType: 'image/png' },
    ],
  });
  await service.start();
  const client = new ToolServiceClient(bus, { ...durable, delivery: 'durable', timeoutMs: 5_000 });
  t.after(async () => {
    await client.close();
    await service.stop();
    await bus.close();
  });
  const { tool } = createToolServiceTool({
    client,
    service: {
      ...serviceDescriptor,
      'request-queue': durable.requestQueue,
      'response-queue': durable.responseQueue,
      delivery: 'durable',
    },
    tool: toolDescriptor(),
  });
  let heard: unknown;
  const text = await client.call('', {}, {}, { id: 'call-parts', onParts: (parts) => (heard = parts) });
  assert.equal(text, 'Kept\n[image: image/png, 70 bytes]');
  assert.deepEqual(
    (heard as { type: string }[]).map((p) => p.type),
    ['text', 'image'],
  );
  let record = await client.result('call-parts');
  for (let i = 0; i < 100 && record?.status !== 'completed'; i++) {
    await sleep(10);
    record = await client.result('call-parts');
  }
  assert.equal(record?.response, 'Kept\n[image: image/png, 70 bytes]');
  assert.deepEqual(record?.parts, [
    { type: 'text', text: 'Kept' },
    { type: 'image', data: PNG, mimeType: 'image/png' },
  ]);
  // A task (a task id on a durable service) ends with the same parts.
  const task = await new ToolSet([tool]).call(
    'draw-chart',
    { title: 'x' },
    { callId: 'task-0b7e1a52-2f8e-4c55-9d51-6f1e2c3b4a59' },
  );
  assert.equal(task.isError, false, task.content);
  assert.deepEqual(
    task.parts?.map((p) => p.type),
    ['text', 'image'],
  );
});
