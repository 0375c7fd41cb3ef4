/**
 * Tracing across the bus, with the real SDK registered (in memory): a tool-service call is a CLIENT span
 * whose W3C trace context travels as the request's `traceparent` property, and the service's SERVER span
 * continues it; failures set `error.type`.
 */
import { after, before, beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { SpanKind, SpanStatusCode, context, trace } from '@opentelemetry/api';
import { startTestTracing, parentIdOf, type TestTracing } from '../../../test/support/tracing.js';
import { MemoryBus } from '../../bus/index.js';
import { ToolbusError } from '../../errors/index.js';
import { startSpan } from '../../tools/index.js';
import { DynamicToolService } from '../dynamic-tool-service.js';
import { ToolServiceClient } from '../tool-service-client.js';

const queues = { requestQueue: 'non-persistent://tg/request/traced', responseQueue: 'response:tg:traced' };
const NAME = 'request:tg:traced/invoke';

let tracing: TestTracing;
before(() => {
  tracing = startTestTracing();
});
after(() => tracing.stop());
beforeEach(() => tracing.reset());

test('the client span puts its traceparent on the request; the service span is its child', async (t) => {
  const bus = new MemoryBus();
  const seen: { traceparent: string | undefined; inner: string | undefined }[] = [];
  const service = new DynamicToolService({
    bus,
    ...queues,
    invoke: (_user, _config, args, ctx) => {
      // A span the handler starts belongs to the served call's trace.
      const inner = startSpan('handler work', {});
      inner.end();
      seen.push({ traceparent: ctx.traceparent, inner: inner.spanContext().spanId });
      if (args.fail) throw new ToolbusError('unavailable', 'backend down');
      return 'ok';
    },
  });
  await service.start();
  const client = new ToolServiceClient(bus, queues);
  t.after(async () => {
    await client.close();
    await service.stop();
    await bus.close();
  });

  assert.equal(await client.call('alice', {}, {}, { toolName: 'tell-joke' }), 'ok');
  const clientSpan = tracing.spans().find((s) => s.name === NAME && s.kind === SpanKind.CLIENT);
  const serverSpan = tracing.spans().find((s) => s.name === NAME && s.kind === SpanKind.SERVER);
  assert.ok(clientSpan && serverSpan, `spans: ${JSON.stringify(tracing.spans().map((s) => s.name))}`);
  const { traceId, spanId } = clientSpan.spanContext();
  assert.match(seen[0]!.traceparent ?? '', new RegExp(`^00-${traceId}-${spanId}-01$`));
  assert.equal(serverSpan.spanContext().traceId, traceId);
  assert.equal(parentIdOf(serverSpan), spanId);
  assert.equal(parentIdOf(tracing.one('handler work')), serverSpan.spanContext().spanId);
  assert.equal(clientSpan.attributes['gen_ai.tool.name'], 'tell-joke');
  assert.equal(clientSpan.attributes['rpc.system'], 'toolbus');
  assert.equal(clientSpan.attributes['rpc.service'], 'request:tg:traced');
  assert.equal(clientSpan.attributes['rpc.method'], 'invoke');
  assert.equal(typeof clientSpan.attributes['toolbus.rpc.id'], 'string');
  assert.equal(serverSpan.attributes['toolbus.rpc.id'], clientSpan.attributes['toolbus.rpc.id']);

  tracing.reset();
  await assert.rejects(client.call('alice', {}, { fail: true }));
  const failedServer = tracing.spans().find((s) => s.name === NAME && s.kind === SpanKind.SERVER)!;
  const failedClient = tracing.spans().find((s) => s.name === NAME && s.kind === SpanKind.CLIENT)!;
  assert.equal(failedServer.attributes['error.type'], 'unavailable');
  assert.equal(failedServer.status.code, SpanStatusCode.ERROR);
  assert.equal(failedClient.attributes['error.type'], 'tool-error');
  assert.equal(failedClient.status.code, SpanStatusCode.ERROR);
});

test('a call made inside a span continues its trace; a request without a traceparent starts a new one', async (t) => {
  const bus = new MemoryBus();
  const service = new DynamicToolService({ bus, ...queues, invoke: () => 'ok' });
  await service.start();
  const client = new ToolServiceClient(bus, queues);
  t.after(async () => {
    await client.close();
    await service.stop();
    await bus.close();
  });
  const outer = startSpan('outer', {});
  await context.with(trace.setSpan(context.active(), outer), () => client.call('bob', {}, {}));
  outer.end();
  const clientSpan = tracing.spans().find((s) => s.kind === SpanKind.CLIENT)!;
  assert.equal(parentIdOf(clientSpan), outer.spanContext().spanId);

  tracing.reset();
  // A peer that sends no trace context (another implementation, an old client).
  const reply = new Promise<void>((resolve) => {
    void bus.subscribe(queues.responseQueue, () => resolve());
  });
  await bus.publish(queues.requestQueue, JSON.stringify({ user: 'u', config: '{}', arguments: '{}' }), {
    id: 'foreign-1',
  });
  await reply;
  const serverSpan = tracing.spans().find((s) => s.kind === SpanKind.SERVER)!;
  assert.equal(parentIdOf(serverSpan), undefined, 'a root span');
});
