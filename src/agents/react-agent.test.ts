import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { ModelError, ScriptedChatCompletionClient, SystemMessage, UserMessage } from '../models/index.js';
import type { LLMMessage } from '../models/index.js';
import { FunctionTool, LiveToolSet } from '../tools/index.js';
import type { ToolProvider } from '../tools/index.js';
import type { AgentEvent } from './agent.js';
import { ReActAgent } from './react-agent.js';

const textOnly = { modelInfo: { functionCalling: false } };

function lastUserText(messages: readonly LLMMessage[]): string {
  const last = messages.at(-1);
  assert.ok(last instanceof UserMessage, 'the last message is the observation');
  return last.content;
}

describe('ReActAgent', () => {
  test('runs Thought/Action/Args steps against tools, keeping argument types, until the Final Answer', async () => {
    const received: unknown[] = [];
    const multiply = new FunctionTool(
      (args) => {
        received.push(args);
        return args.a * args.b;
      },
      { name: 'multiply', description: 'Multiply.', parameters: z.object({ a: z.number(), b: z.number() }) },
    );
    const model = new ScriptedChatCompletionClient(
      [
        'Thought: first multiply\nAction: multiply\nArgs: {"a": 6, "b": 7}',
        '```\nThought: now double it\nover two lines\nAction: multiply\nArgs: {\n  "a": 42,\n  "b": 2\n}\n```',
        'Thought: done\nFinal Answer: 84\nwhich is 6 × 7 × 2',
      ],
      textOnly,
    );
    const events: AgentEvent[] = [];
    const agent = new ReActAgent({ model, tools: [multiply] });
    const answer = await agent.run('What is 6*7*2?', { onEvent: (e) => events.push(e) });
    assert.equal(answer, '84\nwhich is 6 × 7 × 2');
    assert.deepEqual(received, [
      { a: 6, b: 7 },
      { a: 42, b: 2 },
    ]);
    // The scratchpad replays the arguments as JSON: numbers stay numbers at the next step.
    const third = model.calls[2]!.messages;
    assert.ok(
      third.some(
        (m) =>
          m.type === 'AssistantMessage' &&
          m.content === 'Thought: first multiply\nAction: multiply\nArgs: {"a":6,"b":7}',
      ),
    );
    assert.equal(lastUserText(third), 'Observation: 84');
    const system = model.calls[0]!.messages[0];
    assert.ok(system instanceof SystemMessage);
    assert.match(system.content, /- multiply: Multiply\.\n {4}"a" \(number, required\)/);
    assert.match(system.content, /Final Answer:/);
    assert.equal(model.calls[0]!.tools.length, 0, 'no native tools are offered');
    assert.deepEqual(
      events.map((e) => e.type),
      ['thought', 'observation', 'thought', 'observation', 'thought', 'answer'],
    );
    assert.equal(events[2]!.content, 'now double it\nover two lines');
  });

  test('an unknown tool gets an observation listing the tools, and the loop goes on', async () => {
    const joke = new FunctionTool(() => 'a joke', {
      name: 'tell-joke',
      description: 'Jokes.',
      parameters: z.object({}),
    });
    const model = new ScriptedChatCompletionClient(
      [
        'Thought: t\nAction: tell_jokes\nArgs: {}',
        'Thought: t\nAction: tell-joke\nArgs: {}',
        'Final Answer: a joke',
      ],
      textOnly,
    );
    assert.equal(await new ReActAgent({ model, tools: [joke] }).run('joke?'), 'a joke');
    assert.match(
      lastUserText(model.calls[1]!.messages),
      /Error: unknown tool 'tell_jokes'; available tools: 'tell-joke'\. Use one of them in 'Action:'/,
    );
  });

  test('a parse failure gets an observation restating the format, and uses one iteration', async () => {
    const model = new ScriptedChatCompletionClient(
      ['I would say 4.', 'Thought: ok\nFinal Answer: 4'],
      textOnly,
    );
    const events: AgentEvent[] = [];
    assert.equal(
      await new ReActAgent({ model, tools: [] }).run('2+2', { onEvent: (e) => events.push(e) }),
      '4',
    );
    const observation = lastUserText(model.calls[1]!.messages);
    assert.match(
      observation,
      /could not be parsed: the reply has neither an 'Action:' line nor a 'Final Answer:' line/,
    );
    assert.match(observation, /Thought: <your reasoning>/);
    assert.ok(events.some((e) => e.type === 'observation' && e.isError));
  });

  test('a tool error becomes an "Error:" observation; maxIterations ends with a clear message', async () => {
    const broken = new FunctionTool(
      () => {
        throw new Error('backend down');
      },
      { name: 'broken', description: 'Broken.', parameters: z.object({}) },
    );
    const model = new ScriptedChatCompletionClient(
      ['Thought: t\nAction: broken\nArgs: {}', 'Thought: again\nAction: broken'],
      textOnly,
    );
    const answer = await new ReActAgent({ model, tools: [broken], maxIterations: 2 }).run('x');
    assert.match(answer, /stopped after 2 steps \(maxIterations = 2\)/);
    assert.match(lastUserText(model.calls[1]!.messages), /^Observation: Error: .*backend down/);
  });

  test('the tool list is read afresh at each step (hot reload) and the user reaches the tools', async () => {
    const seen: (string | undefined)[] = [];
    const v2 = new FunctionTool((_a, ctx) => (seen.push(ctx.user), 'v2'), {
      name: 'v2',
      description: 'New.',
      parameters: z.object({}),
    });
    const live = new LiveToolSet([]);
    const model = new ScriptedChatCompletionClient(
      [
        () => {
          live.replace([v2]);
          return 'Thought: try\nAction: v2\nArgs: {"user": "mallory"}';
        },
        'Final Answer: v2',
      ],
      textOnly,
    );
    await new ReActAgent({ model, tools: live }).run('x', { user: 'alice' });
    const first = model.calls[0]!.messages[0] as SystemMessage;
    const second = model.calls[1]!.messages[0] as SystemMessage;
    assert.doesNotMatch(first.content, /- v2:/);
    assert.match(second.content, /- v2: New\./);
    assert.deepEqual(seen, ['alice']);
  });

  test('streaming emits thoughts and the answer in pieces as the model writes them', async () => {
    const model = new ScriptedChatCompletionClient(['Thought: thinking hard\nFinal Answer: forty-two'], {
      ...textOnly,
      chunkSize: 3,
    });
    const events: AgentEvent[] = [];
    const answer = await new ReActAgent({ model, tools: [] }).run('?', {
      streaming: true,
      onEvent: (e) => events.push(e),
    });
    assert.equal(answer, 'forty-two');
    const thoughts = events.filter((e) => e.type === 'thought');
    const answers = events.filter((e) => e.type === 'answer');
    assert.ok(thoughts.length > 2, 'the thought arrives in several pieces');
    assert.equal(thoughts.map((e) => e.content).join(''), 'thinking hard');
    assert.equal(thoughts.at(-1)!.endOfMessage, true);
    assert.equal(answers.map((e) => e.content).join(''), 'forty-two');
    assert.equal(answers.at(-1)!.endOfMessage, true);
    assert.ok(answers.slice(0, -1).every((e) => !e.endOfMessage));
  });

  test('a custom provider whose call rejects gives an "Error:" observation, not a failed run', async () => {
    const search = new FunctionTool(() => 'unused', {
      name: 'search',
      description: 'Search.',
      parameters: z.object({}),
    });
    const provider: ToolProvider = {
      list: () => [search],
      get: (name) => (name === 'search' ? search : undefined),
      call: () => Promise.reject(new Error('connection reset')),
    };
    const model = new ScriptedChatCompletionClient(
      ['Thought: look it up\nAction: search\nArgs: {}', 'Thought: it failed\nFinal Answer: sorry'],
      textOnly,
    );
    const events: AgentEvent[] = [];
    const answer = await new ReActAgent({ model, tools: provider }).run('x', {
      onEvent: (e) => events.push(e),
    });
    assert.equal(answer, 'sorry');
    assert.match(
      lastUserText(model.calls[1]!.messages),
      /^Observation: Error: tool 'search' failed: connection reset/,
    );
    assert.ok(events.some((e) => e.type === 'observation' && e.isError && e.toolName === 'search'));
  });

  test('a reply cut by the token limit fails the run saying so, not "could not be parsed" in a loop', async () => {
    const cut = {
      content: 'Thought: multiply\nAction: multiply\nArgs: {"a": 6, "b',
      finishReason: 'length' as const,
    };
    for (const streaming of [false, true]) {
      const model = new ScriptedChatCompletionClient([cut, 'Final Answer: 42'], textOnly);
      await assert.rejects(new ReActAgent({ model, tools: [] }).run('6*7?', { streaming }), (e: unknown) => {
        assert.ok(e instanceof ModelError && e.code === 'model-error', String(e));
        assert.match(
          e.message,
          /the model's reply was cut at its token limit \(finish reason 'length'\).*raise the model's maxTokens/,
        );
        return true;
      });
      assert.equal(model.calls.length, 1, `streaming: ${streaming}`);
    }
  });

  test('a model failure rejects with its code', async () => {
    const model = new ScriptedChatCompletionClient([], textOnly);
    await assert.rejects(new ReActAgent({ model, tools: [] }).run('x'), { code: 'model-error' });
  });
});

test("a tool's progress reaches onEvent as progress events of the call, the last report before its observation", async () => {
  const listening: boolean[] = [];
  const convert = new FunctionTool(
    async ({ steps }: { steps: number }, ctx) => {
      listening.push(ctx.progress !== undefined);
      for (let i = 1; i <= steps; i++) ctx.progress?.({ progress: i, total: steps });
      await new Promise((resolve) => setTimeout(resolve, 5));
      return 'converted';
    },
    { name: 'convert', description: 'Converts.', parameters: z.object({ steps: z.number() }) },
  );
  const script = () =>
    new ScriptedChatCompletionClient(
      ['Thought: convert\nAction: convert\nArgs: {"steps": 30}', 'Thought: done\nFinal Answer: ok'],
      textOnly,
    );
  const events: AgentEvent[] = [];
  assert.equal(
    await new ReActAgent({ model: script(), tools: [convert] }).run('go', { onEvent: (e) => events.push(e) }),
    'ok',
  );
  assert.deepEqual(
    events.map((e) => [e.type, e.type === 'progress' ? e.progress.progress : undefined]),
    [
      ['thought', undefined],
      ['progress', 1],
      ['progress', 30],
      ['observation', undefined],
      ['thought', undefined],
      ['answer', undefined],
    ],
  );
  const last = events[2]!;
  assert.ok(last.type === 'progress');
  assert.deepEqual([last.toolName, last.callId, last.iteration], ['convert', 'react-1', 1]);
  // Nobody listening: the tool is not asked to report.
  await new ReActAgent({ model: script(), tools: [convert] }).run('go');
  assert.deepEqual(listening, [true, false]);
});
