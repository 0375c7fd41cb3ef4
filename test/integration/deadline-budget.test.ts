/**
 * One deadline budget, end to end: the outermost caller's deadline (a `ToolSet.call` timeout, an agent
 * question's) travels in the call context to every hop, which derives its timer and the wire `deadline`
 * from it; a service drops expired work at that deadline even when the cancel message is lost.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { MemoryBus, canonicalTopic } from '../../src/bus/index.js';
import type { BusHandler, BusProperties, MessageBus, PublishOptions } from '../../src/bus/index.js';
import { AgentClient, AgentService, ToolUseAgent } from '../../src/agents/index.js';
import { ScriptedChatCompletionClient } from '../../src/models/index.js';
import {
  DynamicToolService,
  ToolServiceClient,
  createToolServiceTool,
  type ToolServiceInvoke,
} from '../../src/services/index.js';
import { FunctionTool, ToolError, ToolSet } from '../../src/tools/index.js';
import { ToolbusError } from '../../src/errors/index.js';

const queues = {
  requestQueue: 'non-persistent://tg/request/budget',
  responseQueue: 'non-persistent://tg/response/budget',
};

/** A bus that loses every cancellation (core NATS delivers at most once), counting what it dropped. */
class CancelLosingBus implements MessageBus {
  dropped = 0;
  constructor(readonly inner: MessageBus) {}

  publish(topic: string, body: Uint8Array | string, properties?: BusProperties, options?: PublishOptions) {
    if (canonicalTopic(topic).endsWith(':cancel')) {
      this.dropped++;
      return Promise.resolve();
    }
    return this.inner.publish(topic, body, properties, options);
  }

  subscribe(topic: string, handler: BusHandler, options?: { group?: string }) {
    return this.inner.subscribe(topic, handler, options);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}

/** Records the properties (and arrival time) of every request published on `queue`. */
async function recordRequests(bus: MessageBus, queue: string) {
  const seen: { properties: BusProperties; at: number }[] = [];
  const subscription = await bus.subscribe(queue, (message) => {
    seen.push({ properties: message.properties, at: Date.now() });
  });
  return { seen, stop: () => subscription.unsubscribe() };
}

/** The tool-service tool `budget` on `bus`, in a ToolSet, served by `invoke` on `serviceBus`. */
async function toolSetOverBus(
  t: { after: (fn: () => Promise<void>) => void },
  invoke: ToolServiceInvoke,
  { clientBus, serviceBus }: { clientBus: MessageBus; serviceBus: MessageBus },
) {
  const service = new DynamicToolService({ bus: serviceBus, id: 'budget-service', ...queues, invoke });
  await service.start();
  const client = new ToolServiceClient(clientBus, queues);
  const { tool } = createToolServiceTool({
    client,
    service: {
      id: 'budget-service',
      'request-queue': queues.requestQueue,
      'response-queue': queues.responseQueue,
    },
    tool: {
      type: 'tool-service',
      name: 'budget',
      description: 'Uses its budget',
      service: 'budget-service',
      arguments: [],
    },
  });
  t.after(async () => {
    await client.close();
    await service.stop({ signal: AbortSignal.abort() });
  });
  return { tools: new ToolSet([tool]), service, client };
}

/**
 * Compiles the tool's argument validator, which happens on its first call and can take a good part of a
 * short budget on a busy machine: a call the validator refuses, so nothing reaches the service.
 */
async function warmUp(tools: ToolSet): Promise<void> {
  const refused = await tools.call('budget', '{"unexpected": 1}');
  assert.equal(refused.error?.code, 'invalid-arguments');
}

/** Resolves with the signal's reason once it aborts. */
const aborted = (signal: AbortSignal): Promise<unknown> =>
  new Promise((resolve) => {
    if (signal.aborted) resolve(signal.reason);
    else signal.addEventListener('abort', () => resolve(signal.reason), { once: true });
  });

/** Rejects after `ms`: a bounded wait, never a silent hang. */
const within = <T>(work: Promise<T>, ms: number, what: string): Promise<T> =>
  Promise.race([
    work,
    new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error(`${what} within ${ms} ms`)), ms).unref(),
    ),
  ]);

describe('one deadline budget', { timeout: 20_000 }, () => {
  test('ToolSet.call with timeoutMs 300 sends a wire deadline at most 300 ms ahead, not the client default', async (t) => {
    const bus = new MemoryBus();
    t.after(() => bus.close());
    const { tools } = await toolSetOverBus(t, (_u, _c, _a, ctx) => `deadline ${ctx.deadline}`, {
      clientBus: bus,
      serviceBus: bus,
    });
    await warmUp(tools);
    const requests = await recordRequests(bus, queues.requestQueue);
    t.after(requests.stop);
    const before = Date.now();
    const result = await tools.call('budget', '{}', { timeoutMs: 300 });
    assert.equal(result.isError, false, result.content);
    assert.equal(requests.seen.length, 1);
    const { properties, at } = requests.seen[0]!;
    const deadline = Number(properties['deadline']);
    assert.ok(deadline <= at + 300, `the wire deadline is ${deadline - at} ms ahead, at most 300`);
    assert.ok(deadline >= before + 300, 'and it is the call budget, not less');
    // The service's ctx saw the same deadline.
    assert.equal(result.content, `deadline ${deadline}`);
  });

  test('a caller deadline sooner than the timeout bounds the call, the tool context and the wire', async (t) => {
    const bus = new MemoryBus();
    t.after(() => bus.close());
    const { tools } = await toolSetOverBus(t, (_u, _c, _a, ctx) => aborted(ctx.signal).then(() => 'late'), {
      clientBus: bus,
      serviceBus: bus,
    });
    await warmUp(tools);
    const requests = await recordRequests(bus, queues.requestQueue);
    t.after(requests.stop);
    const deadline = Date.now() + 100;
    const result = await tools.call('budget', '{}', { deadline, timeoutMs: 60_000 });
    assert.equal(result.isError, true);
    assert.equal(result.error?.code, 'timeout');
    assert.ok(Date.now() >= deadline - 5, 'the call ran until about its deadline');
    assert.equal(Number(requests.seen[0]!.properties['deadline']), deadline);
  });

  test('a service drops expired work at the deadline even when the cancel message is lost', async (t) => {
    const bus = new MemoryBus();
    t.after(() => bus.close());
    const lossy = new CancelLosingBus(bus);
    let abortedAt = 0;
    let reason: unknown;
    let sawAbort!: () => void;
    const serviceAborted = new Promise<void>((r) => (sawAbort = r));
    const { tools, service } = await toolSetOverBus(
      t,
      async (_u, _c, _a, ctx) => {
        reason = await aborted(ctx.signal);
        abortedAt = Date.now();
        sawAbort();
        throw reason;
      },
      { clientBus: lossy, serviceBus: bus },
    );
    await warmUp(tools);
    const requests = await recordRequests(bus, queues.requestQueue);
    t.after(requests.stop);
    const result = await tools.call('budget', '{}', { timeoutMs: 200 });
    // The caller gets its timeout from its own timer, not from a late response.
    assert.equal(result.error?.code, 'timeout');
    assert.match(result.content, /timed out after 200 ms/);
    assert.ok(lossy.dropped >= 1, 'the cancellation was lost');
    // The service stops the work on its own, at the deadline the caller sent.
    await within(serviceAborted, 5_000, 'the service did not abort the expired work');
    const deadline = Number(requests.seen[0]!.properties['deadline']);
    assert.ok(reason instanceof ToolbusError);
    assert.equal(reason.code, 'timeout', 'aborted by the deadline, not by a cancellation');
    assert.ok(abortedAt >= deadline, 'not before the deadline');
    while (service.stats().inFlight > 0) await new Promise((r) => setTimeout(r, 5));
    assert.equal(service.stats().expired, 1);
    assert.equal(service.stats().cancelled, 0);
  });

  test('ToolServiceClient.call with a deadline sooner than its timeout times out there and sends it', async (t) => {
    const bus = new MemoryBus();
    t.after(() => bus.close());
    const requests = await recordRequests(bus, queues.requestQueue);
    t.after(requests.stop);
    const client = new ToolServiceClient(bus, { ...queues, timeoutMs: 60_000 });
    t.after(() => client.close());
    // Only the recorder listens: the request is delivered, and nobody answers.
    const deadline = Date.now() + 80;
    await assert.rejects(client.call('u', {}, {}, { deadline, toolName: 'budget' }), (e: unknown) => {
      assert.ok(e instanceof ToolError);
      assert.equal(e.code, 'timeout');
      assert.equal(e.toolName, 'budget');
      return true;
    });
    assert.equal(Number(requests.seen[0]!.properties['deadline']), deadline);
    const passed = client.call('u', {}, {}, { deadline: Date.now() - 1 });
    await assert.rejects(passed, { code: 'timeout', message: /deadline passed before call/ });
    await assert.rejects(client.call('u', {}, {}, { deadline: Number.NaN }), { code: 'invalid-config' });
    assert.equal(requests.seen.length, 1, 'nothing is sent past the deadline');
    assert.equal(client.pendingCount, 0);
  });

  test("an agent question's budget reaches the agent service and every tool call of its run", async (t) => {
    const bus = new MemoryBus();
    t.after(() => bus.close());
    const { tools } = await toolSetOverBus(t, (_u, _c, _a, ctx) => `tool deadline ${ctx.deadline}`, {
      clientBus: bus,
      serviceBus: bus,
    });
    const agentRequests = await recordRequests(bus, 'non-persistent://tg/request/agent');
    const toolRequests = await recordRequests(bus, queues.requestQueue);
    t.after(agentRequests.stop);
    t.after(toolRequests.stop);
    const service = new AgentService({
      bus,
      agent: () =>
        new ToolUseAgent({
          model: new ScriptedChatCompletionClient([
            [{ id: 'c1', name: 'budget', arguments: '{}' }],
            (messages) => String((messages.at(-1) as { content: { content: string }[] }).content[0]!.content),
          ]),
          tools,
        }),
    });
    await service.start();
    t.after(() => service.close());
    const client = new AgentClient(bus);
    t.after(() => client.close());
    const outer = Date.now() + 2_000;
    const answer = await client.ask('use the tool', { timeoutMs: 60_000, deadline: outer });
    const agentDeadline = Number(agentRequests.seen[0]!.properties['deadline']);
    const toolDeadline = Number(toolRequests.seen[0]!.properties['deadline']);
    assert.equal(agentDeadline, outer, "the question's deadline is the outer caller's");
    assert.ok(toolDeadline <= agentDeadline, "the tool call gets no more than what is left of the run's");
    assert.equal(answer, `tool deadline ${toolDeadline}`);
  });

  test("a ToolSet's deadline option that is not a number is refused; one already passed does not run the tool", async () => {
    let runs = 0;
    const echo = new FunctionTool(async () => (runs++, 'ok'), {
      name: 'echo',
      description: 'echo',
      parameters: z.object({}),
    });
    const tools = new ToolSet([echo]);
    const bad = await tools.call('echo', '{}', { deadline: Number.NaN });
    assert.equal(bad.error?.code, 'usage');
    assert.match(bad.content, /deadline must be epoch milliseconds/);
    const passed = await tools.call('echo', '{}', { deadline: Date.now() - 1 });
    assert.equal(passed.error?.code, 'timeout');
    assert.equal(runs, 0);
    const ok = await tools.call('echo', '{}', { deadline: Date.now() + 10_000 });
    assert.equal(ok.content, 'ok');
  });
});
