/**
 * The agent service distributed over a real nats-server: the joke service, two agent-service replicas
 * and the client each on their own connection.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { NatsBus } from '../../src/bus/nats/index.js';
import {
  AgentClient,
  AgentService,
  DynamicToolService,
  FunctionExecutionResultMessage,
  ReActAgent,
  ToolUseAgent,
  ToolbusError,
  UserMessage,
} from '../../src/index.js';
import { ScriptedChatCompletionClient } from '../../src/models/index.js';
import { createToolServiceTool } from '../../src/services/index.js';
import type { LLMMessage, MessageBus } from '../../src/index.js';
import type { RunnableAgent } from '../../src/agents/index.js';
import { createJokeService } from '../../examples/joke-service/service.js';
import { startNatsServer, type NatsServer } from '../support/nats-server.js';

const readJson = (name: string): unknown =>
  JSON.parse(readFileSync(new URL(`../../examples/joke-service/${name}`, import.meta.url), 'utf8'));

function observation(messages: readonly LLMMessage[]): string {
  const last = messages.at(-1);
  if (last instanceof FunctionExecutionResultMessage) return last.content[0]!.content;
  if (last instanceof UserMessage) return last.content.replace(/^Observation: /, '');
  throw new Error('no observation');
}

describe('AgentService over NATS', () => {
  let server: NatsServer;
  const buses: MessageBus[] = [];
  const closers: (() => Promise<void>)[] = [];
  const connect = async (): Promise<MessageBus> => {
    const bus = await NatsBus.connect({ servers: server.url });
    buses.push(bus);
    return bus;
  };

  before(async () => {
    server = await startNatsServer({ jetstream: false });
  });
  after(async () => {
    for (const close of closers.reverse()) await close();
    for (const bus of buses) await bus.close();
    await server.stop();
  });

  test('two replicas in two styles answer through the joke service, each question once, with its user', async () => {
    const jokes = createJokeService(await connect(), { random: () => 0 });
    await jokes.start();
    closers.push(() => jokes.close());
    const served: string[] = [];
    for (const style of ['tool-use', 'react'] as const) {
      const bus = await connect();
      const { tool } = createToolServiceTool({
        bus,
        service: readJson('joke-service.json'),
        tool: readJson('tell-joke.json'),
      });
      const agent = (): RunnableAgent => {
        served.push(style);
        return style === 'tool-use'
          ? new ToolUseAgent({
              model: new ScriptedChatCompletionClient([
                [{ id: 'c1', name: 'tell-joke', arguments: '{"topic": "programming"}' }],
                (m) => observation(m),
              ]),
              tools: [tool],
            })
          : new ReActAgent({
              model: new ScriptedChatCompletionClient(
                [
                  'Thought: a joke\nAction: tell-joke\nArgs: {"topic": "programming"}',
                  (m) => `Final Answer: ${observation(m)}`,
                ],
                { modelInfo: { functionCalling: false } },
              ),
              tools: [tool],
            });
      };
      const service = new AgentService({ bus, agent });
      await service.start();
      closers.push(() => service.close());
    }
    const client = new AgentClient(await connect(), { timeoutMs: 20_000 });
    closers.push(() => client.close());
    // NATS picks a queue-group member at random: with 20 questions both replicas serve some (p ≈ 2e-6 not).
    const users = Array.from({ length: 20 }, (_, i) => `user${i}`);
    const answers = await Promise.all(
      users.map((user) => client.ask('Tell me a programming joke', { user })),
    );
    answers.forEach((answer, i) =>
      assert.match(answer, new RegExp(`^Hey ${users[i]}! Here's a pun for you:`)),
    );
    assert.equal(served.length, users.length, 'each question was served exactly once');
    assert.ok(
      served.includes('tool-use') && served.includes('react'),
      `both replicas served: ${served.join(', ')}`,
    );
  });

  test('cancelling a question over NATS aborts the remote tool call in the tool service', async () => {
    let reportAbort!: (reason: unknown) => void;
    const remoteAborted = new Promise<unknown>((resolve) => (reportAbort = resolve));
    let reportStart!: () => void;
    const remoteStarted = new Promise<void>((resolve) => (reportStart = resolve));
    const slow = new DynamicToolService({
      bus: await connect(),
      id: 'slow-service',
      topic: 'slow-nats',
      invoke: (_u, _c, _a, ctx) =>
        new Promise((_resolve, reject) => {
          ctx.signal.addEventListener('abort', () => {
            reportAbort(ctx.signal.reason);
            reject(ctx.signal.reason);
          });
          reportStart();
        }),
    });
    await slow.start();
    closers.push(() => slow.close());
    const bus = await connect();
    const { tool } = createToolServiceTool({
      bus,
      service: {
        id: 'slow-service',
        'request-queue': 'non-persistent://tg/request/slow-nats',
        'response-queue': 'non-persistent://tg/response/slow-nats',
      },
      tool: {
        type: 'tool-service',
        name: 'slow',
        description: 'Slow',
        service: 'slow-service',
        arguments: [],
      },
    });
    const service = new AgentService({
      bus,
      requestQueue: 'non-persistent://tg/request/agent-slow',
      responseQueue: 'non-persistent://tg/response/agent-slow',
      agent: () =>
        new ToolUseAgent({
          model: new ScriptedChatCompletionClient([[{ id: 'c1', name: 'slow', arguments: '{}' }]]),
          tools: [tool],
        }),
    });
    await service.start();
    closers.push(() => service.close());
    const client = new AgentClient(await connect(), {
      requestQueue: 'non-persistent://tg/request/agent-slow',
      responseQueue: 'non-persistent://tg/response/agent-slow',
    });
    closers.push(() => client.close());
    const controller = new AbortController();
    const asked = client.ask('slow please', { user: 'alice', signal: controller.signal });
    await remoteStarted;
    controller.abort();
    await assert.rejects(asked, { code: 'cancelled' });
    const timer = new Promise((_, reject) =>
      setTimeout(() => reject(new Error('the remote call was not cancelled within 5 s')), 5_000).unref(),
    );
    const reason = await Promise.race([remoteAborted, timer]);
    assert.ok(reason instanceof ToolbusError);
  });
});
