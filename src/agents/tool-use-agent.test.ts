import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import {
  AssistantMessage,
  FunctionExecutionResultMessage,
  ModelError,
  ScriptedChatCompletionClient,
} from '../models/index.js';
import type { FunctionCall, LLMMessage } from '../models/index.js';
import { FunctionTool, LiveToolSet } from '../tools/index.js';
import { ToolbusError } from '../errors/index.js';
import { MemoryConfigStore } from '../config/index.js';
import { RunStore } from '../runs/index.js';
import type { AgentEvent } from './agent.js';
import { ToolUseAgent } from './tool-use-agent.js';

const add = new FunctionTool(({ a, b }) => a + b, {
  name: 'add',
  description: 'Add two numbers.',
  parameters: z.object({ a: z.number(), b: z.number() }),
});
const fail = new FunctionTool(
  () => {
    throw new Error('the database is down');
  },
  { name: 'fail', description: 'Always fails.', parameters: z.object({}) },
);

function call(id: string, name: string, args: string): FunctionCall {
  return { id, name, arguments: args };
}

function results(messages: readonly LLMMessage[]): FunctionExecutionResultMessage[] {
  return messages.filter(
    (m): m is FunctionExecutionResultMessage => m instanceof FunctionExecutionResultMessage,
  );
}

describe('ToolUseAgent', () => {
  test('loops model → tools → model until a text answer, emitting thought, observations and answer', async () => {
    const model = new ScriptedChatCompletionClient([
      {
        content: [call('c1', 'add', '{"a": 1, "b": 2}'), call('c2', 'add', '{"a": 3, "b": 4}')],
        thought: 'adding',
      },
      [call('c3', 'add', '{"a": 3, "b": 7}')],
      'The total is 10.',
    ]);
    const events: AgentEvent[] = [];
    const agent = new ToolUseAgent({ model, tools: [add] });
    const answer = await agent.run('What is (1+2)+(3+4)?', { onEvent: (e) => events.push(e) });
    assert.equal(answer, 'The total is 10.');
    model.assertDone();
    const second = model.calls[1]!.messages;
    assert.deepEqual(
      results(second)[0]!.content.map((r) => [r.callId, r.content, r.isError]),
      [
        ['c1', '3', false],
        ['c2', '7', false],
      ],
    );
    assert.deepEqual(
      model.calls[0]!.tools.map((t) => t.name),
      ['add'],
    );
    assert.deepEqual(
      events.map((e) => e.type),
      ['thought', 'observation', 'observation', 'thought', 'observation', 'answer'],
    );
    assert.equal(events[0]!.content, 'adding');
    assert.deepEqual(events.at(-1), {
      type: 'answer',
      content: 'The total is 10.',
      endOfMessage: true,
      iteration: 3,
      finishReason: 'answer',
    });
  });

  test('call ids repeated across steps or within one (servers that send none) are made unique in the run', async () => {
    const model = new ScriptedChatCompletionClient([
      [call('call_0', 'add', '{"a": 1, "b": 2}'), call('call_0', 'add', '{"a": 3, "b": 4}')],
      [call('call_0', 'add', '{"a": 5, "b": 6}')],
      'done',
    ]);
    const observed: string[] = [];
    const agent = new ToolUseAgent({ model, tools: [add] });
    await agent.run('sums', {
      onEvent: (e) => (e.type === 'observation' ? observed.push(`${e.callId}=${e.content}`) : undefined),
    });
    const last = model.calls[2]!.messages;
    const sent = last
      .filter((m): m is AssistantMessage => m instanceof AssistantMessage)
      .flatMap((m) => (m.content as FunctionCall[]).map((c) => c.id));
    const answered = results(last).flatMap((m) => m.content.map((r) => `${r.callId}=${r.content}`));
    assert.equal(new Set(sent).size, 3, `ids ${sent.join(', ')}`);
    assert.deepEqual(answered, [`${sent[0]}=3`, `${sent[1]}=7`, `${sent[2]}=11`]);
    assert.equal(sent[0], 'call_0');
    assert.deepEqual(observed.sort(), [...answered].sort());
  });

  test('runs the calls of a step in parallel, never more than parallelToolCalls at once', async () => {
    let running = 0;
    let peak = 0;
    const slow = new FunctionTool(
      async () => {
        running++;
        peak = Math.max(peak, running);
        await new Promise((r) => setTimeout(r, 5));
        running--;
        return 'ok';
      },
      { name: 'slow', description: 'Slow.', parameters: z.object({}) },
    );
    const calls = Array.from({ length: 6 }, (_, i) => call(`c${i}`, 'slow', '{}'));
    const model = new ScriptedChatCompletionClient([calls, 'done']);
    const agent = new ToolUseAgent({ model, tools: [slow], parallelToolCalls: 2 });
    assert.equal(await agent.run('go'), 'done');
    assert.equal(peak, 2);
    const order = results(model.calls[1]!.messages)[0]!.content.map((r) => r.callId);
    assert.deepEqual(
      order,
      calls.map((c) => c.id),
    );
  });

  test('tool errors, unknown tools and invalid arguments go back to the model as isError results', async () => {
    const model = new ScriptedChatCompletionClient([
      [call('c1', 'fail', '{}'), call('c2', 'nope', '{}'), call('c3', 'add', '{"a": "x", "b": 1}')],
      'Sorry.',
    ]);
    const agent = new ToolUseAgent({ model, tools: [add, fail] });
    const events: AgentEvent[] = [];
    assert.equal(await agent.run('try', { onEvent: (e) => events.push(e) }), 'Sorry.');
    const [failed, unknown, invalid] = results(model.calls[1]!.messages)[0]!.content;
    const codes = events.flatMap((e) => (e.type === 'observation' ? [e.code] : [])).sort();
    assert.deepEqual(
      codes,
      ['invalid-arguments', 'tool-error', 'unknown-tool'],
      'the code survives onto agent events',
    );
    assert.equal(failed!.isError, true);
    assert.match(failed!.content, /the database is down/);
    assert.equal(unknown!.isError, true);
    assert.match(unknown!.content, /unknown tool 'nope'; available tools: 'add', 'fail'/);
    assert.equal(invalid!.isError, true);
    assert.match(invalid!.content, /'a'/);
  });

  test('malformed argument JSON stays out of band: {} goes back to the model with an error result', async () => {
    const raw = '{"a": 1, "b": 2,, SECRET-GARBAGE';
    const model = new ScriptedChatCompletionClient([[call('c1', 'add', raw)], 'Could not add.']);
    const events: AgentEvent[] = [];
    const agent = new ToolUseAgent({ model, tools: [add] });
    await agent.run('add', { onEvent: (e) => events.push(e) });
    const sent = model.calls[1]!.messages;
    const assistant = sent.find((m): m is AssistantMessage => m instanceof AssistantMessage)!;
    assert.deepEqual(assistant.content, [{ id: 'c1', name: 'add', arguments: '{}' }]);
    const result = results(sent)[0]!.content[0]!;
    assert.equal(result.isError, true);
    // The one message of ToolSet.call: where the JSON broke, with a short excerpt, never the whole text.
    assert.match(result.content, /tool 'add': arguments are not valid JSON .* at position 16/);
    assert.ok(!JSON.stringify(assistant).includes('SECRET-GARBAGE'), 'the malformed text is never replayed');
    const observation = events.find((e) => e.type === 'observation');
    assert.equal(observation?.type === 'observation' && observation.rawArguments, raw);

    const model2 = new ScriptedChatCompletionClient([[call('c1', 'add', '[1, 2]')], 'ok']);
    await new ToolUseAgent({ model: model2, tools: [add] }).run('add');
    assert.match(
      results(model2.calls[1]!.messages)[0]!.content[0]!.content,
      /must be a JSON object, got an array/,
    );
  });

  test('stops at maxIterations with a clear final message', async () => {
    const model = new ScriptedChatCompletionClient([
      [call('c1', 'add', '{"a":1,"b":1}')],
      [call('c2', 'add', '{"a":1,"b":1}')],
    ]);
    const events: AgentEvent[] = [];
    const answer = await new ToolUseAgent({ model, tools: [add], maxIterations: 2 }).run('loop', {
      onEvent: (e) => events.push(e),
    });
    assert.match(answer, /stopped after 2 steps \(maxIterations = 2\) without reaching a final answer/);
    const last = events.at(-1);
    assert.equal(last?.type === 'answer' && last.finishReason, 'max-iterations');
    model.assertDone();
  });

  test('reflect: when the budget is used up, the model answers once more without tools (the guide’s agent)', async () => {
    const model = new ScriptedChatCompletionClient([[call('c1', 'add', '{"a":1,"b":1}')], 'It is 2.']);
    const agent = new ToolUseAgent({ model, tools: [add], maxIterations: 1, reflect: true });
    assert.equal(await agent.run('1+1?'), 'It is 2.');
    assert.equal(model.calls[1]!.tools.length, 0);
  });

  test('an empty answer cut by the token limit or a content filter rejects saying why, not with ""', async () => {
    const model = new ScriptedChatCompletionClient([
      { content: '', finishReason: 'length', thought: 'Let me think about this at length…' },
      [call('c1', 'add', '{"a":1,"b":1}')],
      { content: '', finishReason: 'content_filter' },
      { content: '', finishReason: 'stop' },
    ]);
    const agent = new ToolUseAgent({ model, tools: [add], maxIterations: 1, reflect: true });
    await assert.rejects(agent.run('1+1?'), (e: unknown) => {
      assert.ok(e instanceof ModelError && e.code === 'model-error');
      assert.match(
        e.message,
        /output token limit before writing an answer \(finish reason 'length'\), while reasoning; raise the model's maxTokens/,
      );
      return true;
    });
    await assert.rejects(agent.run('1+1?'), /content filter withheld the model's answer/);
    assert.equal(await agent.run('say nothing'), '', 'an empty answer the model chose stays an answer');
    model.assertDone();
  });

  test('tool-call arguments cut by the token limit fail the run saying so, not "not valid JSON" in a loop', async () => {
    const model = new ScriptedChatCompletionClient([
      { content: [call('c1', 'add', '{"a":1,"b"')], finishReason: 'length' },
      // Complete arguments beside 'length' (a later call was lost) still run.
      { content: [call('c2', 'add', '{"a":1,"b":1}')], finishReason: 'length' },
      'It is 2.',
    ]);
    const agent = new ToolUseAgent({ model, tools: [add] });
    const events: AgentEvent[] = [];
    await assert.rejects(agent.run('1+1?', { onEvent: (e) => events.push(e) }), (e: unknown) => {
      assert.ok(e instanceof ModelError && e.code === 'model-error');
      assert.match(
        e.message,
        /output was cut at its token limit \(finish reason 'length'\) in the arguments of tool 'add'; raise the model's maxTokens/,
      );
      return true;
    });
    assert.equal(model.calls.length, 1, 'the cut call is not sent back for the model to repeat');
    assert.ok(events.some((e) => e.type === 'error'));
    assert.equal(await agent.run('1+1?'), 'It is 2.');
    model.assertDone();
  });

  test('streaming: true is documented as ignored: whole events, and the model is asked with create', async () => {
    const model = new ScriptedChatCompletionClient([[call('c1', 'add', '{"a":1,"b":1}')], 'It is 2.']);
    const events: AgentEvent[] = [];
    const answer = await new ToolUseAgent({ model, tools: [add] }).run('1+1?', {
      streaming: true,
      onEvent: (e) => events.push(e),
    });
    assert.equal(answer, 'It is 2.');
    assert.ok(model.calls.every((c) => !c.stream));
    assert.ok(events.every((e) => e.endOfMessage));
    assert.deepEqual(
      events.map((e) => e.type),
      ['thought', 'observation', 'answer'],
    );
  });

  test("the reasoning behind the final answer (a reasoning model's thought) is emitted as a thought event", async () => {
    const model = new ScriptedChatCompletionClient([{ content: 'It is 2.', thought: 'One plus one.' }]);
    const events: AgentEvent[] = [];
    const answer = await new ToolUseAgent({ model, tools: [add] }).run('1+1?', {
      onEvent: (e) => events.push(e),
    });
    assert.equal(answer, 'It is 2.');
    assert.deepEqual(
      events.map((e) => [e.type, e.content]),
      [
        ['thought', 'One plus one.'],
        ['answer', 'It is 2.'],
      ],
    );
  });

  test('a model failure rejects with its error after an error event', async () => {
    const model = new ScriptedChatCompletionClient([
      () => {
        throw new ModelError('rate-limited', 'provider says slow down', { retryAfterMs: 10 });
      },
    ]);
    const events: AgentEvent[] = [];
    await assert.rejects(
      new ToolUseAgent({ model, tools: [add] }).run('x', { onEvent: (e) => events.push(e) }),
      {
        name: 'ModelError',
        code: 'rate-limited',
      },
    );
    assert.deepEqual(
      events.map((e) => e.type),
      ['error'],
    );
    assert.match(events[0]!.content, /slow down/);

    const thrower = new ScriptedChatCompletionClient([
      () => {
        throw new TypeError('socket hang up');
      },
    ]);
    await assert.rejects(new ToolUseAgent({ model: thrower, tools: [add] }).run('x'), (e: unknown) => {
      assert.ok(e instanceof ToolbusError);
      assert.equal(e.code, 'model-error');
      assert.match(e.message, /socket hang up/);
      assert.ok(e.cause instanceof TypeError);
      return true;
    });
  });

  test('the tool set is read afresh at each step, so a hot reload shows at the next step', async () => {
    const live = new LiveToolSet([add]);
    const hello = new FunctionTool(() => 'hello!', {
      name: 'hello',
      description: 'Greets.',
      parameters: z.object({}),
    });
    const model = new ScriptedChatCompletionClient([
      () => {
        live.replace([hello]);
        return [call('c1', 'hello', '{}')];
      },
      'greeted',
    ]);
    assert.equal(await new ToolUseAgent({ model, tools: live }).run('hi'), 'greeted');
    assert.deepEqual(
      model.calls[0]!.tools.map((t) => t.name),
      ['add'],
    );
    assert.deepEqual(
      model.calls[1]!.tools.map((t) => t.name),
      ['hello'],
    );
    assert.equal(results(model.calls[1]!.messages)[0]!.content[0]!.content, 'hello!');
  });

  test("the run's user reaches every tool call, whatever the model puts in the arguments", async () => {
    const seen: (string | undefined)[] = [];
    const whoami = new FunctionTool((_args, ctx) => (seen.push(ctx.user), ctx.user ?? 'nobody'), {
      name: 'whoami',
      description: 'Who is asking.',
      parameters: { type: 'object', properties: { user: { type: 'string' } } },
    });
    const model = new ScriptedChatCompletionClient([
      [call('c1', 'whoami', '{"user": "mallory"}'), call('c2', 'whoami', '{}')],
      'ok',
    ]);
    await new ToolUseAgent({ model, tools: [whoami], user: 'default-user' }).run('who?', { user: 'alice' });
    assert.deepEqual(seen, ['alice', 'alice']);
  });

  test("cancelling the run aborts its tool calls and rejects with 'cancelled'", async () => {
    let toolSignal: AbortSignal | undefined;
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    const hang = new FunctionTool(
      (_args, ctx) => {
        toolSignal = ctx.signal;
        started();
        return new Promise((_resolve, reject) =>
          ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)),
        );
      },
      { name: 'hang', description: 'Hangs.', parameters: z.object({}) },
    );
    const model = new ScriptedChatCompletionClient([[call('c1', 'hang', '{}')]]);
    const controller = new AbortController();
    const events: AgentEvent[] = [];
    const run = new ToolUseAgent({ model, tools: [hang] }).run('wait', {
      signal: controller.signal,
      onEvent: (e) => events.push(e),
    });
    await running;
    controller.abort();
    await assert.rejects(run, { name: 'ToolbusError', code: 'cancelled' });
    assert.equal(toolSignal?.aborted, true);
    assert.equal(events.at(-1)?.type, 'error');
  });

  test('refuses a non-positive maxIterations or parallelToolCalls', () => {
    const model = new ScriptedChatCompletionClient([]);
    assert.throws(() => new ToolUseAgent({ model, tools: [], maxIterations: 0 }), {
      code: 'usage',
      message: /ToolUseAgent: option 'maxIterations' must be a positive integer, got 0/,
    });
    assert.throws(() => new ToolUseAgent({ model, tools: [], parallelToolCalls: 1.5 }), {
      code: 'usage',
    });
  });
});

test('ask is run with a question whose errors reject without an error event (the gateway shape)', async () => {
  const model = new ScriptedChatCompletionClient([]);
  const events: AgentEvent[] = [];
  await assert.rejects(
    new ToolUseAgent({ model, tools: [add] }).ask('x', { onEvent: (e) => events.push(e) }),
    { code: 'model-error' },
  );
  assert.equal(events.length, 0);
  const ok = new ScriptedChatCompletionClient(['hello']);
  assert.equal(
    await new ToolUseAgent({ model: ok, tools: [] }).ask('hi', { onEvent: (e) => events.push(e) }),
    'hello',
  );
  assert.deepEqual(
    events.map((e) => e.type),
    ['answer'],
  );
});

test('history turns come between the system message and the question', async () => {
  const model = new ScriptedChatCompletionClient(['Still 4.']);
  await new ToolUseAgent({ model, tools: [], systemMessage: 'Be brief.' }).run('And now?', {
    history: [
      { role: 'user', content: '2+2?' },
      { role: 'assistant', content: '4' },
    ],
  });
  assert.deepEqual(
    model.calls[0]!.messages.map((m) => [m.type, m.content]),
    [
      ['SystemMessage', 'Be brief.'],
      ['UserMessage', '2+2?'],
      ['AssistantMessage', '4'],
      ['UserMessage', 'And now?'],
    ],
  );
});

test('a tool that outlives toolTimeoutMs gives the model a timeout result, and the loop goes on', async () => {
  const hang = new FunctionTool(
    (_args, ctx) =>
      new Promise((_resolve, reject) =>
        ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)),
      ),
    { name: 'hang', description: 'Hangs.', parameters: z.object({}) },
  );
  const model = new ScriptedChatCompletionClient([[call('c1', 'hang', '{}')], 'gave up']);
  assert.equal(await new ToolUseAgent({ model, tools: [hang], toolTimeoutMs: 20 }).run('x'), 'gave up');
  const result = results(model.calls[1]!.messages)[0]!.content[0]!;
  assert.equal(result.isError, true);
  assert.match(result.content, /tim(ed|e) ?out/i);
});

/** A tool that sends `steps` progress reports at once (a flood), then answers; records whether anyone listened. */
function flooder(listening: boolean[]): FunctionTool {
  return new FunctionTool(
    async ({ steps }: { steps: number }, ctx) => {
      listening.push(ctx.progress !== undefined);
      for (let i = 1; i <= steps; i++) ctx.progress?.({ progress: i, total: steps, message: `row ${i}` });
      await new Promise((resolve) => setTimeout(resolve, 5));
      return `${steps} rows`;
    },
    { name: 'convert', description: 'Converts rows.', parameters: z.object({ steps: z.number() }) },
  );
}

test("a tool's progress reaches onEvent as coalesced progress events, the last report before the observation", async () => {
  const listening: boolean[] = [];
  const model = new ScriptedChatCompletionClient([[call('c1', 'convert', '{"steps": 200}')], 'converted']);
  const events: AgentEvent[] = [];
  const answer = await new ToolUseAgent({ model, tools: [flooder(listening)] }).run('convert', {
    onEvent: (e) => events.push(e),
  });
  assert.equal(answer, 'converted');
  assert.deepEqual(listening, [true]);
  assert.deepEqual(
    events.map((e) => e.type),
    ['thought', 'progress', 'progress', 'observation', 'answer'],
    '200 reports within 100 ms: the first at once and the last (trailing) one, before the observation',
  );
  const [first, last] = events.filter((e) => e.type === 'progress');
  assert.deepEqual(last, {
    type: 'progress',
    content: '{"call_id":"c1","tool":"convert","progress":200,"total":200,"message":"row 200"}',
    endOfMessage: true,
    iteration: 1,
    toolName: 'convert',
    callId: 'c1',
    progress: { progress: 200, total: 200, message: 'row 200' },
  });
  assert.equal(first?.type === 'progress' && first.progress.progress, 1);
});

test('without onEvent, or with progress: false, the tool sees no ctx.progress and no progress event is emitted', async () => {
  const listening: boolean[] = [];
  const tools = [flooder(listening)];
  const script = () => new ScriptedChatCompletionClient([[call('c1', 'convert', '{"steps": 3}')], 'ok']);
  await new ToolUseAgent({ model: script(), tools }).run('convert');
  const events: AgentEvent[] = [];
  await new ToolUseAgent({ model: script(), tools }).run('convert', {
    progress: false,
    onEvent: (e) => events.push(e),
  });
  assert.deepEqual(listening, [false, false]);
  assert.deepEqual(
    events.map((e) => e.type),
    ['thought', 'observation', 'answer'],
  );
});

test('a kept run streams progress to its listener but never saves it with the run', async (t) => {
  const runs = new RunStore(new MemoryConfigStore());
  t.after(() => runs.close());
  const model = new ScriptedChatCompletionClient([[call('c1', 'convert', '{"steps": 2}')], 'ok']);
  const events: AgentEvent[] = [];
  await new ToolUseAgent({ model, tools: [flooder([])], runs }).run('convert', {
    runId: 'run-progress',
    onEvent: (e) => events.push(e),
  });
  assert.ok(events.some((e) => e.type === 'progress'));
  const saved = await runs.run('run-progress');
  assert.deepEqual(
    saved?.events.map((e) => e.type),
    ['thought', 'observation', 'answer'],
  );
});
