import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import {
  AgentClient,
  AgentService,
  DynamicToolService,
  FunctionExecutionResultMessage,
  FunctionTool,
  MemoryBus,
  ModelError,
  ReActAgent,
  ToolSet,
  ToolUseAgent,
  ToolbusError,
  UserMessage,
} from '../../src/index.js';
import { ScriptedChatCompletionClient } from '../../src/models/index.js';
import { WireProperty, createToolServiceTool } from '../../src/services/index.js';
import type { LLMMessage, MessageBus, Tool } from '../../src/index.js';
import type { AgentStreamEvent, RunnableAgent } from '../../src/agents/index.js';
import { createJokeService } from '../../examples/joke-service/service.js';

const readJson = (name: string): unknown =>
  JSON.parse(readFileSync(new URL(`../../examples/joke-service/${name}`, import.meta.url), 'utf8'));

type After = { after: (fn: () => Promise<void>) => void };

/** A bus with the joke service running and the `tell-joke` tool bound to it. */
async function jokeSetup(t: After): Promise<{ bus: MemoryBus; tools: ToolSet }> {
  const bus = new MemoryBus();
  const service = createJokeService(bus, { random: () => 0 });
  await service.start();
  const { tool } = createToolServiceTool({
    bus,
    service: readJson('joke-service.json'),
    tool: readJson('tell-joke.json'),
  });
  t.after(async () => {
    await service.close();
    await bus.close();
  });
  return { bus, tools: new ToolSet([tool]) };
}

/** Starts an agent service and a client on `bus`, both closed after the test. */
async function serve(
  t: After,
  bus: MessageBus,
  agent: ConstructorParameters<typeof AgentService>[0]['agent'],
): Promise<{ service: AgentService; client: AgentClient }> {
  const service = new AgentService({ bus, agent });
  await service.start();
  const client = new AgentClient(bus, { timeoutMs: 20_000 });
  t.after(async () => {
    await client.close();
    await service.close();
  });
  return { service, client };
}

function lastObservation(messages: readonly LLMMessage[]): string {
  const last = messages.at(-1);
  if (last instanceof FunctionExecutionResultMessage) return last.content[0]!.content;
  if (last instanceof UserMessage) return last.content.replace(/^Observation: /, '');
  throw new Error('no observation');
}

describe('AgentService with the joke tool service', () => {
  test('ToolUseAgent on the bus: the answer and its events stream back, the user greets through the service', async (t) => {
    const { bus, tools } = await jokeSetup(t);
    const models: ScriptedChatCompletionClient[] = [];
    const { client } = await serve(t, bus, () => {
      const model = new ScriptedChatCompletionClient([
        [{ id: 'c1', name: 'tell-joke', arguments: '{"topic": "cats"}' }],
        (messages) => `Here is your joke: ${lastObservation(messages)}`,
      ]);
      models.push(model);
      return new ToolUseAgent({ model, tools });
    });
    const events: AgentStreamEvent[] = [];
    const answer = await client.ask('Tell me a joke about cats', {
      user: 'alice',
      onEvent: (e) => events.push(e),
    });
    assert.match(answer, /^Here is your joke: Hey alice! Here's a pun for you:/);
    assert.deepEqual(
      events.map((e) => e.type),
      ['thought', 'observation', 'answer'],
    );
    assert.match(events[1]!.content, /^Hey alice! Here's a pun/);
    assert.equal(events[2]!.endOfDialog, true);
    assert.equal(models.length, 1);
    models[0]!.assertDone();
    assert.equal(client.pendingCount, 0);
  });

  test('ReActAgent on the bus, streaming: thoughts arrive in pieces, then the observation and the answer', async (t) => {
    const { bus, tools } = await jokeSetup(t);
    const { client } = await serve(
      t,
      bus,
      () =>
        new ReActAgent({
          model: new ScriptedChatCompletionClient(
            [
              'Thought: the user wants a cat joke\nAction: tell-joke\nArgs: {"topic": "cats"}',
              (messages) => `Thought: got one\nFinal Answer: ${lastObservation(messages)}`,
            ],
            { modelInfo: { functionCalling: false }, chunkSize: 5 },
          ),
          tools,
        }),
    );
    const events: AgentStreamEvent[] = [];
    for await (const event of client.stream('A cat joke, please', { user: 'bob', streaming: true }))
      events.push(event);
    const thoughtPieces = events.filter((e) => e.type === 'thought' && !e.endOfMessage);
    assert.ok(thoughtPieces.length > 1, 'the first thought streams in several pieces');
    assert.equal(
      thoughtPieces
        .map((e) => e.content)
        .join('')
        .startsWith('the user wants a cat joke'),
      true,
    );
    const observation = events.find((e) => e.type === 'observation');
    assert.match(observation?.content ?? '', /^Hey bob! Here's a pun for you:/);
    const answer = events
      .filter((e) => e.type === 'answer')
      .map((e) => e.content)
      .join('');
    assert.match(answer, /^Hey bob! Here's a pun for you:/);
    const last = events.at(-1)!;
    assert.deepEqual([last.type, last.endOfMessage, last.endOfDialog], ['answer', true, true]);
  });

  test("the request's user reaches the tool service's envelope; a 'user' argument from the model does not replace it", async (t) => {
    const bus = new MemoryBus();
    const seen: { user: string; args: Record<string, unknown> }[] = [];
    const whoami = new DynamicToolService({
      bus,
      id: 'whoami-service',
      topic: 'whoami',
      invoke: (user, _config, args) => {
        seen.push({ user, args });
        return `you are ${user}`;
      },
    });
    await whoami.start();
    t.after(async () => {
      await whoami.close();
      await bus.close();
    });
    const { tool } = createToolServiceTool({
      bus,
      service: {
        id: 'whoami-service',
        'request-queue': 'non-persistent://tg/request/whoami',
        'response-queue': 'non-persistent://tg/response/whoami',
        'config-params': [],
      },
      tool: {
        type: 'tool-service',
        name: 'whoami',
        description: 'Says who is asking',
        service: 'whoami-service',
        arguments: [{ name: 'user', type: 'string', description: 'ignored' }],
      },
    });
    const tools: Tool[] = [tool];
    const { client } = await serve(
      t,
      bus,
      () =>
        new ToolUseAgent({
          model: new ScriptedChatCompletionClient([
            [{ id: 'c1', name: 'whoami', arguments: '{"user": "mallory"}' }],
            (messages) => lastObservation(messages),
          ]),
          tools,
        }),
    );
    assert.equal(await client.ask('who am I?', { user: 'alice' }), 'you are alice');
    assert.deepEqual(seen, [{ user: 'alice', args: { user: 'mallory' } }]);
  });
});

describe('AgentService failure paths', () => {
  test('a model failure ends the dialog with an agent-error; ask rejects, stream yields the error', async (t) => {
    const bus = new MemoryBus();
    t.after(() => bus.close());
    const { client } = await serve(
      t,
      bus,
      () =>
        new ToolUseAgent({
          model: new ScriptedChatCompletionClient([
            () => {
              throw new ModelError('authentication', 'invalid API key for provider');
            },
          ]),
          tools: [],
        }),
    );
    await assert.rejects(client.ask('hi', { user: 'alice' }), (e: unknown) => {
      assert.ok(e instanceof ToolbusError);
      assert.equal(e.code, 'service-error');
      assert.match(e.message, /returned error 'agent-error': invalid API key for provider/);
      return true;
    });
    const events: AgentStreamEvent[] = [];
    for await (const event of client.stream('hi')) events.push(event);
    assert.deepEqual(
      events.map((e) => [e.type, e.endOfDialog]),
      [['error', true]],
    );
    assert.match(events[0]!.content, /invalid API key/);
  });

  test('an invalid request is answered invalid-request; no service listening is unavailable', async (t) => {
    const bus = new MemoryBus();
    t.after(() => bus.close());
    const lonely = new AgentClient(bus, { requestQueue: 'non-persistent://tg/request/nobody' });
    t.after(() => lonely.close());
    await assert.rejects(lonely.ask('anyone?'), { name: 'ToolbusError', code: 'unavailable' });

    const { client } = await serve(
      t,
      bus,
      new ToolUseAgent({ model: new ScriptedChatCompletionClient([]), tools: [] }),
    );
    await assert.rejects(client.ask('   '), (e: unknown) => {
      assert.ok(e instanceof ToolbusError);
      assert.equal(e.code, 'invalid-request');
      assert.match(e.message, /field 'question' must be a non-empty string/);
      return true;
    });
  });

  test('replicas share the request queue: each question is answered once, by one of them', async (t) => {
    const bus = new MemoryBus();
    t.after(() => bus.close());
    const served = { a: 0, b: 0 };
    const replica =
      (name: 'a' | 'b'): (() => RunnableAgent) =>
      () => ({
        run: async (question: string) => {
          served[name]++;
          return `${name} answers ${question}`;
        },
      });
    const { client } = await serve(t, bus, replica('a'));
    const second = new AgentService({ bus, agent: replica('b') });
    await second.start();
    t.after(() => second.close());
    const answers = await Promise.all([1, 2, 3, 4, 5, 6].map((n) => client.ask(`q${n}`)));
    answers.forEach((answer, i) => assert.match(answer, new RegExp(`^[ab] answers q${i + 1}$`)));
    assert.equal(served.a + served.b, 6);
    assert.ok(served.a > 0 && served.b > 0, `both replicas served (a=${served.a}, b=${served.b})`);
  });
});

describe('AgentService cancellation', () => {
  test("cancelling a question cancels the agent's run and its remote tool call in the tool service", async (t) => {
    const bus = new MemoryBus();
    let remoteAborted!: (reason: unknown) => void;
    const remoteAbort = new Promise<unknown>((resolve) => (remoteAborted = resolve));
    let remoteStarted!: () => void;
    const started = new Promise<void>((resolve) => (remoteStarted = resolve));
    const slow = new DynamicToolService({
      bus,
      id: 'slow-service',
      topic: 'slow',
      invoke: (_user, _config, _args, ctx) =>
        new Promise((_resolve, reject) => {
          ctx.signal.addEventListener('abort', () => {
            remoteAborted(ctx.signal.reason);
            reject(ctx.signal.reason);
          });
          remoteStarted();
        }),
    });
    await slow.start();
    t.after(async () => {
      await slow.close();
      await bus.close();
    });
    const { tool } = createToolServiceTool({
      bus,
      service: {
        id: 'slow-service',
        'request-queue': 'non-persistent://tg/request/slow',
        'response-queue': 'non-persistent://tg/response/slow',
      },
      tool: {
        type: 'tool-service',
        name: 'slow',
        description: 'Takes forever',
        service: 'slow-service',
        arguments: [],
      },
    });
    const { client, service } = await serve(
      t,
      bus,
      () =>
        new ToolUseAgent({
          model: new ScriptedChatCompletionClient([[{ id: 'c1', name: 'slow', arguments: '{}' }]]),
          tools: [tool],
        }),
    );
    const controller = new AbortController();
    const asked = client.ask('do the slow thing', { user: 'alice', signal: controller.signal });
    await started;
    assert.equal(service.runningCount, 1);
    controller.abort();
    await assert.rejects(asked, { name: 'ToolbusError', code: 'cancelled' });
    const bounded = new Promise((_, reject) =>
      setTimeout(() => reject(new Error('the remote tool call was not cancelled within 5 s')), 5_000).unref(),
    );
    const reason = await Promise.race([remoteAbort, bounded]);
    assert.ok(reason instanceof ToolbusError, 'the remote service saw its signal abort');
    await service.close();
    assert.equal(service.runningCount, 0);
  });
});

describe('AgentClient streams and deadlines', () => {
  /** A service whose agent waits until its run is aborted, reporting the reason. */
  async function hangingService(t: After): Promise<{ client: AgentClient; aborted: Promise<unknown> }> {
    const bus = new MemoryBus();
    t.after(() => bus.close());
    let report!: (reason: unknown) => void;
    const aborted = new Promise<unknown>((resolve) => (report = resolve));
    const agent: RunnableAgent = {
      run: (_question, options) =>
        new Promise((_resolve, reject) => {
          options?.onEvent?.({ type: 'thought', content: 'waiting', endOfMessage: true, iteration: 1 });
          options?.signal?.addEventListener('abort', () => {
            report(options.signal?.reason);
            reject(options.signal?.reason);
          });
        }),
    };
    const { client } = await serve(t, bus, agent);
    return { client, aborted };
  }

  test('leaving a stream early cancels the run in the service', async (t) => {
    const { client, aborted } = await hangingService(t);
    for await (const event of client.stream('wait')) {
      assert.equal(event.type, 'thought');
      break;
    }
    const reason = await aborted;
    assert.ok(reason instanceof ToolbusError);
    assert.equal(reason.code, 'cancelled');
    assert.equal(client.pendingCount, 0);
    const stream = client.stream('again');
    for await (const _ of stream) break;
    assert.throws(() => stream[Symbol.asyncIterator](), {
      code: 'invalid-request',
      message: /already been iterated/,
    });
  });

  test("a question past its timeout rejects with 'timeout' and the service stops the run", async (t) => {
    const { client, aborted } = await hangingService(t);
    await assert.rejects(client.ask('wait', { timeoutMs: 50 }), { name: 'ToolbusError', code: 'timeout' });
    const reason = await aborted;
    assert.ok(reason instanceof ToolbusError);
    assert.ok(['cancelled', 'timeout'].includes(reason.code));
  });
});

test('a replica at capacity answers too-many-requests instead of queueing without bound', async (t) => {
  const bus = new MemoryBus();
  t.after(() => bus.close());
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const service = new AgentService({
    bus,
    concurrency: 1,
    maxQueued: 1,
    agent: { run: async (question) => (await gate, `done ${question}`) },
  });
  await service.start();
  t.after(() => service.close());
  const client = new AgentClient(bus);
  t.after(() => client.close());
  const first = client.ask('1');
  const second = client.ask('2');
  await assert.rejects(client.ask('3'), (e: unknown) => {
    assert.ok(e instanceof ToolbusError);
    assert.equal(e.code, 'too-many-requests');
    assert.match(e.message, /at capacity \(1 running, 1 queued\)/);
    return true;
  });
  release();
  assert.deepEqual(await Promise.all([first, second]), ['done 1', 'done 2']);
});

test('closing the client while a question is still subscribing rejects it with closed, not a timeout', async (t) => {
  const bus = new MemoryBus();
  t.after(() => bus.close());
  const service = new AgentService({ bus, agent: { run: async (question) => `done ${question}` } });
  await service.start();
  t.after(() => service.close());
  const client = new AgentClient(bus, { timeoutMs: 5_000 });
  const asked = client.ask('q');
  await client.close();
  await assert.rejects(asked, { name: 'ToolbusError', code: 'closed' });
  assert.equal(client.pendingCount, 0);
});

test('a deadline further away than setTimeout allows does not end the run at once', async (t) => {
  const bus = new MemoryBus();
  t.after(() => bus.close());
  const service = new AgentService({
    bus,
    agent: {
      run: async (question, options) => {
        await new Promise((r) => setTimeout(r, 20));
        options?.signal?.throwIfAborted();
        return `done ${question}`;
      },
    },
  });
  await service.start();
  t.after(() => service.close());
  const replies: string[] = [];
  const sub = await bus.subscribe('non-persistent://tg/response/agent', (m) => {
    replies.push(new TextDecoder().decode(m.body));
  });
  t.after(() => sub.unsubscribe());
  const deadline = String(Date.now() + 30 * 24 * 3600 * 1000); // 30 days
  await bus.publish('non-persistent://tg/request/agent', JSON.stringify({ question: 'far' }), {
    [WireProperty.Id]: 'q1',
    [WireProperty.Deadline]: deadline,
  });
  while (replies.length === 0) await new Promise((r) => setTimeout(r, 5));
  assert.match(replies[0]!, /"message_type":"answer","content":"done far"/);
});

test('a client timeout longer than setTimeout allows (or Infinity) does not time out at once; a bad one is refused clearly', async (t) => {
  const bus = new MemoryBus();
  t.after(() => bus.close());
  const deadlines: (string | undefined)[] = [];
  const sub = await bus.subscribe('non-persistent://tg/request/agent', (m) => {
    deadlines.push(m.properties[WireProperty.Deadline]);
  });
  t.after(() => sub.unsubscribe());
  const service = new AgentService({
    bus,
    agent: {
      run: async (question) => {
        await new Promise((r) => setTimeout(r, 20));
        return `done ${question}`;
      },
    },
  });
  await service.start();
  t.after(() => service.close());
  const client = new AgentClient(bus, { timeoutMs: 30 * 24 * 3600 * 1000 }); // 30 days
  t.after(() => client.close());
  assert.equal(await client.ask('far'), 'done far');
  assert.equal(await client.ask('never', { timeoutMs: Infinity }), 'done never');
  assert.ok(Number(deadlines[0]) > Date.now() + 29 * 24 * 3600 * 1000);
  assert.equal(deadlines[1], undefined, 'no deadline property when there is no timeout');
  for (const bad of [0, -5, Number.NaN]) {
    await assert.rejects(client.ask('x', { timeoutMs: bad }), {
      code: 'usage',
      message: /option 'timeoutMs' must be a positive number \(or Infinity for no limit\)/,
    });
    assert.throws(() => new AgentClient(bus, { timeoutMs: bad }), { code: 'usage' });
  }
});

test('a request without a user ("" on the wire) leaves the agent\'s default user in place', async (t) => {
  const bus = new MemoryBus();
  t.after(() => bus.close());
  const seen: (string | undefined)[] = [];
  const whoami = new FunctionTool(async (_args: Record<string, never>, ctx) => (seen.push(ctx?.user), 'ok'), {
    name: 'whoami',
    description: 'Who is asking.',
    parameters: z.object({}),
  });
  const model = new ScriptedChatCompletionClient([
    [{ id: 'c1', name: 'whoami', arguments: '{}' }],
    'anonymous it is',
    [{ id: 'c2', name: 'whoami', arguments: '{}' }],
    'alice it is',
  ]);
  const { client } = await serve(
    t,
    bus,
    new ToolUseAgent({ model, tools: [whoami], user: 'service-default' }),
  );
  assert.equal(await client.ask('who?'), 'anonymous it is');
  assert.equal(await client.ask('who?', { user: 'alice' }), 'alice it is');
  assert.deepEqual(seen, ['service-default', 'alice']);
});

test('a request repeated with the same id while it runs is reported and dropped, not run twice', async (t) => {
  const bus = new MemoryBus();
  t.after(() => bus.close());
  let runs = 0;
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const problems: string[] = [];
  const service = new AgentService({
    bus,
    concurrency: 1,
    hooks: { onProblem: (p) => problems.push(p.reason) },
    agent: { run: async (question) => (runs++, await gate, `done ${question}`) },
  });
  await service.start();
  t.after(() => service.close());
  const replies: string[] = [];
  const sub = await bus.subscribe('non-persistent://tg/response/agent', (m) => {
    replies.push(new TextDecoder().decode(m.body));
  });
  t.after(() => sub.unsubscribe());
  const send = () =>
    bus.publish('non-persistent://tg/request/agent', JSON.stringify({ question: 'q' }), {
      [WireProperty.Id]: 'same',
    });
  await send();
  await send();
  assert.equal(service.runningCount, 1);
  assert.match(problems[0] ?? '', /agent request 'same' is already being handled; the duplicate was dropped/);
  release();
  for (let i = 0; i < 100 && replies.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(runs, 1);
  assert.equal(replies.length, 1);
  assert.equal(JSON.parse(replies[0]!).content, 'done q');
});

test('a failed response subscription rejects that question and the next one subscribes again', async (t) => {
  const bus = new MemoryBus();
  t.after(() => bus.close());
  const service = new AgentService({ bus, agent: { run: async (question) => `done ${question}` } });
  await service.start();
  t.after(() => service.close());
  let failures = 1;
  const flaky = new Proxy(bus, {
    get(target, key, receiver) {
      if (key === 'subscribe' && failures > 0) {
        failures--;
        return () => Promise.reject(new ToolbusError('unavailable', 'the bus is down'));
      }
      const value = Reflect.get(target, key, receiver) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  }) as MessageBus;
  const client = new AgentClient(flaky, { timeoutMs: 5_000 });
  t.after(() => client.close());
  await assert.rejects(client.ask('first'), { name: 'ToolbusError', code: 'unavailable' });
  assert.equal(await client.ask('second'), 'done second');
});
