import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryBus } from '../bus/index.js';
import { ToolbusError } from '../errors/index.js';
import type { RunnableAgent } from './agent.js';
import { AgentClient } from './agent-client.js';
import { AgentService } from './agent-service.js';

const agent: RunnableAgent = { run: () => Promise.resolve('ok') };

const invalidConfig = (option: string) => (error: unknown) =>
  error instanceof ToolbusError &&
  error.code === 'usage' &&
  error.message.includes(`'${option}'`) &&
  /integer/.test(error.message);

test('AgentService refuses a maxQueued that would reject every request beyond concurrency', () => {
  const bus = new MemoryBus();
  for (const maxQueued of [-1, Number.NaN, 1.5, Number.POSITIVE_INFINITY, '4' as unknown as number]) {
    assert.throws(
      () => new AgentService({ bus, agent, maxQueued }),
      invalidConfig('maxQueued'),
      `maxQueued ${String(maxQueued)}`,
    );
  }
  for (const concurrency of [0, -2, Number.NaN, 2.5]) {
    assert.throws(() => new AgentService({ bus, agent, concurrency }), invalidConfig('concurrency'));
  }
  // 0 is valid: no queue, answer too-many-requests beyond concurrency.
  assert.ok(new AgentService({ bus, agent, maxQueued: 0 }));
  assert.ok(new AgentService({ bus, agent, maxQueued: 3, concurrency: 2 }));
});

test('AgentService and AgentClient refuse one topic for both queues (the service would answer its own replies)', () => {
  const bus = new MemoryBus();
  const same = { requestQueue: 'non-persistent://tg/request/agent', responseQueue: 'request:tg:agent' };
  const sameTopic = (error: unknown) =>
    error instanceof ToolbusError &&
    error.code === 'invalid-config' &&
    /request queue and response queue are the same topic 'request:tg:agent'/.test(error.message);
  assert.throws(() => new AgentService({ bus, agent, ...same }), sameTopic);
  assert.throws(() => new AgentClient(bus, same), sameTopic);
});

test('stop() after close() and close() after stop() resolve; start() after either rejects with closed', async () => {
  const bus = new MemoryBus();
  const service = new AgentService({ bus, agent });
  await service.start();
  await service.stop();
  await service.close();
  await assert.rejects(service.start(), { name: 'ToolbusError', code: 'closed' });
  await bus.close();
});
