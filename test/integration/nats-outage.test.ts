/**
 * Outages are told as they are: a real `nats-server` is stopped for a while under load. Every call ends;
 * the ones sent while the bus is down fail at once with `unavailable` saying so (not at their timeout);
 * calls work again after the reconnect. Config reads and writes through the gateway answer 503
 * `unavailable` during the outage, never 500, and 200 again once JetStream is back.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { DynamicToolService, LiveToolSet, ToolServiceClient, isToolbusError } from '../../src/index.js';
import { NatsBus, NatsKvConfigStore, type NatsBusStatus } from '../../src/bus/nats/index.js';
import { createGateway } from '../../src/gateway/index.js';
import { startNatsServer } from '../support/nats-server.js';

/** Callers sending one call after another. */
const WORKERS = 4;
const OUTAGE_MS = 1_500;

async function until(check: () => boolean | Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await sleep(20);
  }
}

test('a NATS outage under load: every call ends, calls sent while down fail at once with unavailable, then work again', async (t) => {
  const server = await startNatsServer({ jetstream: false });
  t.after(() => server.stop());
  const serviceBus = await NatsBus.connect({ servers: server.url, reconnectWaitMs: 50 });
  t.after(() => serviceBus.close());
  const service = new DynamicToolService({
    bus: serviceBus,
    topic: 'outage',
    invoke: async () => {
      await sleep(2);
      return 'ok';
    },
  });
  await service.start();
  t.after(() => service.stop());
  const statuses: NatsBusStatus[] = [];
  const disconnectTimes: number[] = [];
  const clientBus = await NatsBus.connect({
    servers: server.url,
    reconnectWaitMs: 50,
    hooks: {
      onStatus: (status) => {
        statuses.push(status);
        if (status.type === 'disconnect') disconnectTimes.push(Date.now());
      },
    },
  });
  t.after(() => clientBus.close());
  assert.equal(clientBus.connected, true);
  const client = new ToolServiceClient(clientBus, {
    requestQueue: 'non-persistent://tg/request/outage',
    responseQueue: 'non-persistent://tg/response/outage',
    timeoutMs: 4_000,
  });
  t.after(() => client.close());

  // Open-loop load, as callers independent of each other send it: a call every few milliseconds,
  // whether or not the earlier ones have answered.
  interface Outcome {
    startedAt: number;
    down: boolean;
    code: string;
    message: string;
  }
  const calls: Promise<Outcome>[] = [];
  const send = (): void => {
    const startedAt = Date.now();
    const down = clientBus.connected === false;
    calls.push(
      client.call('alice', {}, {}).then(
        () => ({ startedAt, down, code: 'ok', message: '' }),
        (error: unknown) => ({
          startedAt,
          down,
          code: isToolbusError(error) ? error.code : `foreign: ${String(error)}`,
          message: (error as Error).message,
        }),
      ),
    );
  };
  const load = setInterval(() => {
    for (let i = 0; i < WORKERS; i++) send();
  }, 10);
  t.after(() => clearInterval(load));

  await sleep(300);
  await server.restart({ kill: true, downMs: OUTAGE_MS });
  await until(() => clientBus.connected === true, 15_000, 'the client bus reconnects');
  const reconnectedAt = Date.now();
  await sleep(500);
  clearInterval(load);
  const outcomes = await Promise.all(calls);

  const count = (code: string): number => outcomes.filter((o) => o.code === code).length;
  const summary = JSON.stringify({
    ok: count('ok'),
    unavailable: count('unavailable'),
    timeout: count('timeout'),
    calls: outcomes.length,
  });
  assert.ok(
    outcomes.every((o) => o.code === 'ok' || o.code === 'unavailable' || o.code === 'timeout'),
    `every call ended as ok, unavailable or timeout: ${summary}`,
  );
  const disconnect = statuses.find((s) => s.type === 'disconnect');
  assert.ok(disconnect, 'the disconnect is reported');
  const disconnectedAt = disconnectTimes[0]!;
  // Only a call already sent when the broker went away may wait for its timeout (its request or its
  // answer may be lost with the server); none sent once the bus knew it was down does.
  for (const o of outcomes.filter((o) => o.code === 'timeout')) {
    assert.ok(o.startedAt <= disconnectedAt, `a timed-out call was sent before the disconnect: ${summary}`);
  }
  const whileDown = outcomes.filter((o) => o.down);
  assert.ok(whileDown.length > 10, `calls were sent during the outage: ${summary}`);
  for (const call of whileDown) {
    assert.equal(call.code, 'unavailable', `a call sent while down: ${call.message}`);
    assert.match(
      call.message,
      /^tool service '[^']+' is unavailable: .*the bus is disconnected from NATS \(for \d+\.\d s\)/,
    );
  }
  assert.ok(
    outcomes.filter((o) => o.startedAt > reconnectedAt + 200).every((o) => o.code === 'ok'),
    `calls work again after the reconnect: ${summary}`,
  );
  const reconnect = statuses.find((s) => s.type === 'reconnect');
  assert.ok(
    reconnect && typeof reconnect.outageMs === 'number' && reconnect.outageMs >= OUTAGE_MS / 2,
    'the outage length is reported',
  );
});

test('config reads and writes during a NATS outage answer 503 unavailable, never 500, and 200 once it is back', async (t) => {
  const server = await startNatsServer({ jetstream: true });
  t.after(() => server.stop());
  const store = await NatsKvConfigStore.connect({ servers: server.url, reconnectWaitMs: 50 });
  t.after(() => store.close());
  const token = 'outage-test-token';
  const gateway = createGateway({ tools: new LiveToolSet([]), store, token });
  const url = await gateway.listen({ port: 0 });
  t.after(() => gateway.close());
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const item = JSON.stringify({ type: 'tool-service', service: 'joke-service' });
  await store.put('tool', 'seen', JSON.parse(item) as { type: string });

  const statuses = new Map<number, number>();
  const unavailable: { code: unknown; message: unknown }[] = [];
  const request = async (path: string, init: RequestInit = {}): Promise<number> => {
    const response = await fetch(`${url}${path}`, { ...init, headers });
    statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
    const body = (await response.json()) as { error?: { code?: unknown; message?: unknown } };
    if (response.status === 503) unavailable.push({ code: body.error?.code, message: body.error?.message });
    return response.status;
  };
  const probe = (): Promise<number[]> =>
    Promise.all([
      request('/api/v1/config/tool/seen'),
      request('/api/v1/config/tool/written', { method: 'PUT', body: item }),
    ]);
  assert.deepEqual(await probe(), [200, 200]);

  // Reads and writes every 100 ms, each on its own (a slow one does not hold the next back).
  const pending: Promise<number[]>[] = [];
  const load = setInterval(() => pending.push(probe()), 100);
  t.after(() => clearInterval(load));
  await server.restart({ kill: true, downMs: 2_000 });
  await until(
    async () => (await probe()).every((status) => status === 200),
    60_000,
    'config requests answer 200 once JetStream is back',
  );
  clearInterval(load);
  await Promise.all(pending);

  assert.deepEqual(
    [...statuses.keys()].sort(),
    [200, 503],
    `statuses: ${JSON.stringify(Object.fromEntries(statuses))}`,
  );
  for (const error of unavailable) {
    assert.equal(error.code, 'unavailable');
    assert.match(String(error.message), /disconnected from NATS|JetStream/);
  }
  assert.ok(
    unavailable.some((e) => /disconnected from NATS \(for \d+\.\d s\)/.test(String(e.message))),
    'the outage is named as such',
  );
});
