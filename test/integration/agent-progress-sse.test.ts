/**
 * Tool progress, end to end up to the HTTP gateway's event stream: a tool service's streamed chunks and
 * a local tool's `ctx.progress` become `progress` events of the agent run, cross a real nats-server as
 * `progress` messages (only because the gateway's client asked), and reach `POST /api/v1/agent` as SSE
 * `progress` events before the answer. A TrustGraph-format request on the bus, which does not ask, sees
 * no progress message; a JSON answer has none. And the same through `toolbus up`'s own wiring, embedded.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { homeIo } from '../support/cli.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { NatsBus } from '../../src/bus/nats/index.js';
import {
  AgentClient,
  AgentService,
  DynamicToolService,
  FunctionExecutionResultMessage,
  FunctionTool,
  MemoryConfigStore,
  ToolSet,
  ToolUseAgent,
} from '../../src/index.js';
import type { LLMMessage, MessageBus } from '../../src/index.js';
import { ScriptedChatCompletionClient } from '../../src/models/index.js';
import { WireProperty, createToolServiceTool } from '../../src/services/index.js';
import { createGateway } from '../../src/gateway/index.js';
import { readServerSentEvents } from '../../src/cli/gateway-client.js';
import { gatewayAgent, startSystem } from '../../src/cli/system.js';
import { startNatsServer } from '../support/nats-server.js';

const TOKEN = 'progress-sse-token-0123456789abcdef';
const SERVICE = {
  id: 'report-service',
  'request-queue': 'non-persistent://tg/request/report',
  'response-queue': 'non-persistent://tg/response/report',
};
const REPORT_TOOL = {
  type: 'tool-service',
  name: 'report',
  description: 'Writes a report, page by page',
  service: 'report-service',
  arguments: [],
};

/** The tool service: three pages, each a streamed chunk (a progress step for the caller). */
function reportService(bus: MessageBus): DynamicToolService {
  return new DynamicToolService({
    bus,
    id: SERVICE.id,
    requestQueue: SERVICE['request-queue'],
    responseQueue: SERVICE['response-queue'],
    invoke: async (_user, _config, _args, ctx) => {
      for (let page = 1; page <= 3; page++) {
        // Apart by more than the agent's 100 ms coalescing: each page is its own event.
        if (page > 1) await new Promise((resolve) => setTimeout(resolve, 120));
        await ctx.write(`page ${page} `);
      }
      return 'end';
    },
  });
}

/** The tool results the model was given last, joined. */
function observations(messages: readonly LLMMessage[]): string {
  const last = messages.at(-1);
  assert.ok(last instanceof FunctionExecutionResultMessage, 'the last message holds the tool results');
  return last.content.map((r) => r.content).join(' | ');
}

interface SseEvent {
  event: string;
  data: Record<string, unknown>;
}

/** Asks the gateway for a streamed answer and reads every event until the stream ends. */
async function askStreamed(url: string, question: string): Promise<SseEvent[]> {
  const res = await fetch(`${url}/api/v1/agent`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${TOKEN}`,
      'content-type': 'application/json',
      accept: 'text/event-stream',
    },
    body: JSON.stringify({ question, user: 'alice' }),
    signal: AbortSignal.timeout(10_000),
  });
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /text\/event-stream/);
  const events: SseEvent[] = [];
  for await (const { event, data } of readServerSentEvents(res.body!)) {
    events.push({ event, data: JSON.parse(data) as Record<string, unknown> });
  }
  return events;
}

/** Publishes a TrustGraph-format request (no `progress` field) and collects its responses. */
async function askRaw(bus: MessageBus, id: string, question: string): Promise<Record<string, unknown>[]> {
  const responses: Record<string, unknown>[] = [];
  let done!: () => void;
  const ended = new Promise<void>((resolve) => (done = resolve));
  const sub = await bus.subscribe('non-persistent://tg/response/agent', (m) => {
    if (m.properties[WireProperty.Id] !== id) return;
    const response = JSON.parse(new TextDecoder().decode(m.body)) as Record<string, unknown>;
    responses.push(response);
    if (response['end_of_dialog'] === true) done();
  });
  try {
    await bus.publish(
      'non-persistent://tg/request/agent',
      JSON.stringify({ question, user: 'bob', streaming: false }),
      { [WireProperty.Id]: id },
    );
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      ended,
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error('no end_of_dialog in 10 s')), 10_000);
      }),
    ]).finally(() => clearTimeout(timer));
  } finally {
    await sub.unsubscribe();
  }
  return responses;
}

function progressOf(events: SseEvent[], tool: string): Record<string, unknown>[] {
  return events.filter((e) => e.event === 'progress' && e.data['toolName'] === tool).map((e) => e.data);
}

test('over NATS: tool progress reaches the gateway SSE stream as progress events before the answer; TrustGraph requests and JSON answers get none', async (t: TestContext) => {
  const nats = await startNatsServer({ jetstream: false });
  const closers: (() => Promise<unknown>)[] = [() => nats.stop()];
  t.after(async () => {
    for (const close of closers.reverse()) await close();
  });
  const connect = async (): Promise<MessageBus> => {
    const bus = await NatsBus.connect({ servers: nats.url });
    closers.push(() => bus.close());
    return bus;
  };

  // The tool service, on its own connection.
  const service = reportService(await connect());
  await service.start();
  closers.push(() => service.close());

  // The agent service: the remote `report` tool and a local `count` that reports steps with a total.
  const agentBus = await connect();
  const { tool: report } = createToolServiceTool({ bus: agentBus, service: SERVICE, tool: REPORT_TOOL });
  const listening: boolean[] = [];
  const count = new FunctionTool(
    async ({ items }: { items: number }, ctx) => {
      listening.push(ctx.progress !== undefined);
      for (let i = 1; i <= items; i++) ctx.progress?.({ progress: i, total: items, message: `item ${i}` });
      await new Promise((resolve) => setTimeout(resolve, 20));
      return `${items} items`;
    },
    { name: 'count', description: 'Counts items', parameters: z.object({ items: z.number() }) },
  );
  const tools = new ToolSet([report, count]);
  const agents = new AgentService({
    bus: agentBus,
    agent: () =>
      new ToolUseAgent({
        model: new ScriptedChatCompletionClient([
          [
            { id: 'c1', name: 'report', arguments: '{}' },
            { id: 'c2', name: 'count', arguments: '{"items": 5}' },
          ],
          (messages) => `done: ${observations(messages)}`,
        ]),
        tools,
      }),
  });
  await agents.start();
  closers.push(() => agents.close());

  // The gateway, its agent the bus client as `toolbus up` wires it.
  const client = new AgentClient(await connect());
  closers.push(() => client.close());
  const gateway = createGateway({
    tools,
    store: new MemoryConfigStore(),
    token: TOKEN,
    agent: gatewayAgent(client),
  });
  const url = await gateway.listen({ host: '127.0.0.1', port: 0 });
  closers.push(() => gateway.close());

  const events = await askStreamed(url, 'Write the report and count');
  const answerAt = events.findIndex((e) => e.event === 'answer');
  assert.deepEqual(events.at(-1), {
    event: 'answer',
    data: { type: 'answer', content: 'done: page 1 page 2 page 3 end | 5 items' },
  });
  const progressAt = events.map((e, i) => (e.event === 'progress' ? i : -1)).filter((i) => i >= 0);
  assert.ok(
    progressAt.length > 0 && progressAt.every((i) => i < answerAt),
    'progress comes before the answer',
  );

  // The tool service's chunks: one event per page, in order, each the same shape as `approval` events
  // (`content` the JSON text, the parsed fields beside it).
  assert.deepEqual(progressOf(events, 'report'), [
    {
      type: 'progress',
      content: '{"call_id":"c1","tool":"report","progress":1,"message":"page 1 "}',
      toolName: 'report',
      callId: 'c1',
      progress: { progress: 1, message: 'page 1 ' },
    },
    {
      type: 'progress',
      content: '{"call_id":"c1","tool":"report","progress":2,"message":"page 2 "}',
      toolName: 'report',
      callId: 'c1',
      progress: { progress: 2, message: 'page 2 ' },
    },
    {
      type: 'progress',
      content: '{"call_id":"c1","tool":"report","progress":3,"message":"page 3 "}',
      toolName: 'report',
      callId: 'c1',
      progress: { progress: 3, message: 'page 3 ' },
    },
  ]);
  // The local tool's five reports at once: coalesced to the first and the last, with their total.
  assert.deepEqual(
    progressOf(events, 'count').map((d) => d['progress']),
    [
      { progress: 1, total: 5, message: 'item 1' },
      { progress: 5, total: 5, message: 'item 5' },
    ],
  );
  // Each call's progress comes before its observation.
  for (const tool of ['report', 'count']) {
    const lastProgress = events.findLastIndex((e) => e.event === 'progress' && e.data['toolName'] === tool);
    const observation = events.findIndex(
      (e) =>
        e.event === 'observation' && String(e.data['content']).includes(tool === 'report' ? 'page' : 'items'),
    );
    assert.ok(lastProgress >= 0 && lastProgress < observation, `${tool}: progress, then its observation`);
  }

  // A JSON answer: no progress anywhere, and the tools are not asked to report.
  const plain = await fetch(`${url}/api/v1/agent`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ question: 'again' }),
  });
  assert.equal(plain.status, 200);
  assert.deepEqual(await plain.json(), { answer: 'done: page 1 page 2 page 3 end | 5 items' });

  // A TrustGraph client on the bus does not know `progress`: it gets none.
  const raw = await askRaw(await connect(), 'tg-question-1', 'Write the report and count');
  assert.deepEqual(
    raw.map((r) => r['message_type']),
    ['thought', 'observation', 'observation', 'answer'],
  );
  assert.equal(raw.at(-1)!['content'], 'done: page 1 page 2 page 3 end | 5 items');
  assert.deepEqual(listening, [true, false, false], 'only the streamed question asked the tool for progress');
});

test("toolbus up (embedded, memory bus): a tool service's chunks reach the gateway SSE stream as progress events", async (t: TestContext) => {
  const home = await mkdtemp(join(tmpdir(), 'toolbus-progress-'));
  const { io, errors: stderrText } = homeIo(home);
  const model = new ScriptedChatCompletionClient([
    [{ id: 'c1', name: 'report', arguments: '{}' }],
    (messages) => `done: ${observations(messages)}`,
  ]);
  const system = await startSystem(
    { examples: false, model, token: TOKEN, agentUnavailableMessage: 'no model' },
    io,
  );
  t.after(async () => {
    await system.close();
    await rm(home, { recursive: true, force: true });
  });
  const service = reportService(system.bus);
  await service.start();
  t.after(() => service.close());
  await system.store.put('tool-service', SERVICE.id, JSON.stringify(SERVICE));
  await system.store.put('tool', REPORT_TOOL.name, JSON.stringify(REPORT_TOOL));
  for (let i = 0; i < 100 && !system.tools.get('report'); i++) await new Promise((r) => setTimeout(r, 20));
  assert.ok(
    system.tools.get('report'),
    `the registry built the tool; problems: ${JSON.stringify(system.problems())}`,
  );
  const url = await system.gateway.listen({ host: '127.0.0.1', port: 0 });

  const events = await askStreamed(url, 'Write the report');
  assert.deepEqual(
    events.map((e) => e.event),
    ['thought', 'progress', 'progress', 'progress', 'observation', 'answer'],
    stderrText(),
  );
  assert.deepEqual(
    progressOf(events, 'report').map((d) => [d['callId'], d['progress']]),
    [
      ['c1', { progress: 1, message: 'page 1 ' }],
      ['c1', { progress: 2, message: 'page 2 ' }],
      ['c1', { progress: 3, message: 'page 3 ' }],
    ],
  );
  assert.equal(events.at(-1)!.data['content'], 'done: page 1 page 2 page 3 end');
});
