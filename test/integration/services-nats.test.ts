/**
 * @module ToolServiceClient and DynamicToolService over a real nats-server: what NATS refuses (payload
 * size, header syntax) must reach the caller as the right error, never as a silent loss.
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { NatsBus } from '../../src/bus/nats/index.js';
import { DynamicToolService, ToolServiceClient } from '../../src/services/index.js';
import { ToolError } from '../../src/tools/index.js';
import { ToolbusError } from '../../src/errors/index.js';
import { startNatsServer, type NatsServer } from '../support/nats-server.js';

const queues = { requestQueue: 'request:tg:natscalls', responseQueue: 'response:tg:natscalls' };

describe('tool services on NATS', { timeout: 30_000 }, () => {
  let server: NatsServer;
  before(async () => {
    server = await startNatsServer({ jetstream: false });
  });
  after(() => server.stop());

  test('a request above the server max_payload fails at once with too-large, not unavailable', async (t) => {
    const bus = await NatsBus.connect({ servers: server.url });
    const service = new DynamicToolService({ bus, ...queues, invoke: () => 'ok' });
    await service.start();
    const client = new ToolServiceClient(bus, { ...queues, timeoutMs: 10_000 });
    t.after(async () => {
      await client.close();
      await service.stop();
      await bus.close();
    });
    const max = bus.connection.info!.max_payload;
    await assert.rejects(client.call('u', {}, { text: 'x'.repeat(max + 1) }), (e: unknown) => {
      assert.ok(e instanceof ToolError);
      assert.equal(e.code, 'too-large');
      assert.match(e.message, /max_payload/);
      return true;
    });
    assert.equal(await client.call('u', {}, { text: 'small' }), 'ok');
  });

  test('a property NATS headers cannot carry fails with invalid-request naming it, not unavailable', async (t) => {
    const bus = await NatsBus.connect({ servers: server.url });
    const service = new DynamicToolService({ bus, ...queues, invoke: () => 'ok' });
    await service.start();
    const client = new ToolServiceClient(bus, { ...queues, timeoutMs: 10_000 });
    t.after(async () => {
      await client.close();
      await service.stop();
      await bus.close();
    });
    await assert.rejects(client.call('u', {}, {}, { properties: { 'bad key': 'v' } }), (e: unknown) => {
      assert.ok(e instanceof ToolError);
      assert.equal(e.code, 'invalid-request');
      assert.match(e.message, /'bad key'/);
      assert.doesNotMatch(e.message, /unavailable/);
      return true;
    });
    assert.equal(client.stats().unavailable, 0);
    assert.equal(await client.call('u', {}, {}), 'ok');
  });

  test('a cancellation whose reason spans several lines still reaches the service', async (t) => {
    const bus = await NatsBus.connect({ servers: server.url });
    let seen!: (reason: unknown) => void;
    const serviceAborted = new Promise<unknown>((r) => (seen = r));
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    const service = new DynamicToolService({
      bus,
      ...queues,
      invoke: (_u, _c, _a, ctx) =>
        new Promise((_, reject) => {
          ctx.signal.addEventListener('abort', () => {
            seen(ctx.signal.reason);
            reject(ctx.signal.reason as Error);
          });
          started();
        }),
    });
    await service.start();
    const client = new ToolServiceClient(bus, { ...queues, timeoutMs: 5_000 });
    t.after(async () => {
      await client.close();
      await service.stop({ signal: AbortSignal.abort() });
      await bus.close();
    });
    const controller = new AbortController();
    const call = client.call('u', {}, {}, { signal: controller.signal });
    await running;
    controller.abort(new ToolError('cancelled', 'the user pressed stop\r\nin the chat window'));
    await assert.rejects(call, (e: unknown) => e instanceof ToolbusError && e.code === 'cancelled');
    const reason = await serviceAborted;
    assert.ok(reason instanceof ToolbusError);
    assert.equal(reason.code, 'cancelled');
    assert.match(reason.message, /the user pressed stop in the chat window/);
  });
});
