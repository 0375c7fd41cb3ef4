import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { MemoryBus } from '../bus/index.js';
import { ToolbusError } from '../errors/index.js';
import { ScriptedChatCompletionClient } from '../models/index.js';
import { WireProperty } from '../services/index.js';
import { FunctionTool } from '../tools/index.js';
import type { RunnableAgent } from './agent.js';
import { AgentClient, type AgentStreamEvent } from './agent-client.js';
import { AgentService, DEFAULT_AGENT_REQUEST_QUEUE, DEFAULT_AGENT_RESPONSE_QUEUE } from './agent-service.js';
import { ToolUseAgent } from './tool-use-agent.js';

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

/**
 * An agent service whose runs call `convert` (three progress reports at once, then a result) and answer;
 * `listening` records, per call, whether the tool had a `ctx.progress`.
 */
async function progressSetup(t: { after: (fn: () => Promise<void>) => void }) {
  const bus = new MemoryBus();
  const listening: boolean[] = [];
  const convert = new FunctionTool(
    async (_args: Record<string, never>, ctx) => {
      listening.push(ctx.progress !== undefined);
      for (let i = 1; i <= 3; i++) ctx.progress?.({ progress: i, total: 3, message: `page ${i}` });
      await new Promise((resolve) => setTimeout(resolve, 5));
      return 'converted';
    },
    { name: 'convert', description: 'Converts.', parameters: z.object({}) },
  );
  const service = new AgentService({
    bus,
    agent: () =>
      new ToolUseAgent({
        model: new ScriptedChatCompletionClient([[{ id: 'c1', name: 'convert', arguments: '{}' }], 'done']),
        tools: [convert],
      }),
  });
  await service.start();
  const client = new AgentClient(bus, { timeoutMs: 10_000 });
  t.after(async () => {
    await client.close();
    await service.close();
    await bus.close();
  });
  return { bus, client, listening };
}

/** Publishes a raw request and collects its responses (as JSON) until the one with end_of_dialog. */
async function rawAsk(bus: MemoryBus, id: string, body: object): Promise<Record<string, unknown>[]> {
  const responses: Record<string, unknown>[] = [];
  let done!: () => void;
  const ended = new Promise<void>((resolve) => (done = resolve));
  const sub = await bus.subscribe(DEFAULT_AGENT_RESPONSE_QUEUE, (m) => {
    if (m.properties[WireProperty.Id] !== id) return;
    const response = JSON.parse(new TextDecoder().decode(m.body)) as Record<string, unknown>;
    responses.push(response);
    if (response['end_of_dialog'] === true) done();
  });
  try {
    await bus.publish(DEFAULT_AGENT_REQUEST_QUEUE, JSON.stringify(body), { [WireProperty.Id]: id });
    await ended;
  } finally {
    await sub.unsubscribe();
  }
  return responses;
}

test('a TrustGraph-format request (no progress field) gets no progress messages, and its tools are not asked to report', async (t) => {
  const { bus, listening } = await progressSetup(t);
  const responses = await rawAsk(bus, 'tg-1', { question: 'convert it', user: 'alice' });
  assert.deepEqual(
    responses.map((r) => r['message_type']),
    ['thought', 'observation', 'answer'],
  );
  assert.deepEqual(listening, [false]);
});

test("a request with progress: true gets the tool's progress as progress messages before the observation", async (t) => {
  const { bus, listening } = await progressSetup(t);
  const responses = await rawAsk(bus, 'tb-1', { question: 'convert it', progress: true });
  assert.deepEqual(listening, [true]);
  assert.deepEqual(
    responses.map((r) => r['message_type']),
    ['thought', 'progress', 'progress', 'observation', 'answer'],
  );
  assert.deepEqual(responses[2], {
    message_type: 'progress',
    content: '{"call_id":"c1","tool":"convert","progress":3,"total":3,"message":"page 3"}',
    end_of_message: true,
    end_of_dialog: false,
    error: null,
  });
  // A request the service cannot read is refused, not run without progress.
  const refused = await rawAsk(bus, 'tb-2', { question: 'convert it', progress: 'yes' });
  assert.deepEqual(
    refused.map((r) => r['message_type']),
    ['error'],
  );
  assert.match(
    String((refused[0]!['error'] as { message: string }).message),
    /field 'progress' must be a boolean/,
  );
});

test('AgentClient asks for progress when ask() has an onEvent (or a stream opts in), and hands reports back parsed', async (t) => {
  const { client, listening } = await progressSetup(t);
  const events: AgentStreamEvent[] = [];
  assert.equal(await client.ask('convert it', { onEvent: (e) => events.push(e) }), 'done');
  const progress = events.filter((e) => e.type === 'progress');
  assert.deepEqual(progress.at(-1), {
    type: 'progress',
    content: '{"call_id":"c1","tool":"convert","progress":3,"total":3,"message":"page 3"}',
    endOfMessage: true,
    endOfDialog: false,
    callId: 'c1',
    toolName: 'convert',
    progress: { progress: 3, total: 3, message: 'page 3' },
  });
  assert.equal(await client.ask('convert it'), 'done');
  assert.equal(await client.ask('convert it', { onEvent: () => undefined, progress: false }), 'done');
  const streamed: string[] = [];
  for await (const e of client.stream('convert it')) streamed.push(e.type);
  assert.deepEqual(streamed, ['thought', 'observation', 'answer'], 'a stream reader gets no surprise type');
  const optedIn: string[] = [];
  for await (const e of client.stream('convert it', { progress: true })) optedIn.push(e.type);
  assert.ok(optedIn.includes('progress'));
  assert.deepEqual(listening, [true, false, false, false, true]);
});

test('AgentClient drops a progress message whose content it cannot read, and the question goes on', async (t) => {
  const bus = new MemoryBus();
  const client = new AgentClient(bus, { timeoutMs: 10_000 });
  t.after(async () => {
    await client.close();
    await bus.close();
  });
  const requests: Record<string, unknown>[] = [];
  // A service that sends a broken report, a good one, then the answer.
  await bus.subscribe(DEFAULT_AGENT_REQUEST_QUEUE, (m) => {
    requests.push(JSON.parse(new TextDecoder().decode(m.body)) as Record<string, unknown>);
    const id = m.properties[WireProperty.Id]!;
    const reply = (message_type: string, content: string, end_of_dialog = false) =>
      bus.publish(
        DEFAULT_AGENT_RESPONSE_QUEUE,
        JSON.stringify({ message_type, content, end_of_message: true, end_of_dialog, error: null }),
        { [WireProperty.Id]: id },
      );
    void (async () => {
      await reply('progress', 'not json');
      await reply('progress', '{"call_id": "c1", "tool": "t", "progress": "half"}');
      await reply('progress', '{"call_id": "c1", "tool": "t", "progress": 2}');
      await reply('answer', 'fine', true);
    })();
  });
  const events: AgentStreamEvent[] = [];
  assert.equal(await client.ask('q', { onEvent: (e) => events.push(e) }), 'fine');
  assert.equal(requests[0]!['progress'], true);
  assert.deepEqual(
    events.map((e) => [e.type, e.progress]),
    [
      ['progress', { progress: 2 }],
      ['answer', undefined],
    ],
  );
});
