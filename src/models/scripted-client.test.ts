import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ToolbusError } from '../errors/index.js';
import type { ToolSchema } from '../tools/index.js';
import {
  AssistantMessage,
  FunctionExecutionResult,
  FunctionExecutionResultMessage,
  ScriptedChatCompletionClient,
  UserMessage,
  isFunctionCalls,
} from './index.js';
import type { CreateResult, FunctionCall } from './index.js';

const stockTool: ToolSchema = {
  name: 'get_stock_price',
  description: 'Get the stock price.',
  parameters: {
    type: 'object',
    properties: { ticker: { type: 'string' }, date: { type: 'string' } },
    required: ['ticker', 'date'],
    additionalProperties: false,
  },
  strict: false,
};
const call: FunctionCall = {
  id: 'call_1',
  name: 'get_stock_price',
  arguments: '{"ticker":"AAPL","date":"2021/01/01"}',
};
const question = new UserMessage({
  content: 'What is the stock price of AAPL on 2021/01/01?',
  source: 'user',
});

async function collect(stream: AsyncIterable<string | CreateResult>): Promise<(string | CreateResult)[]> {
  const out: (string | CreateResult)[] = [];
  for await (const item of stream) out.push(item);
  return out;
}

describe('ScriptedChatCompletionClient', () => {
  test('replays text and function calls in order and records every call', async () => {
    const model = new ScriptedChatCompletionClient([
      [call],
      { content: 'About $32.38.', usage: { promptTokens: 10, completionTokens: 5 } },
    ]);
    const first = await model.create([question], { tools: [stockTool], toolChoice: 'auto' });
    assert.ok(isFunctionCalls(first.content));
    assert.deepEqual(first.content, [call]);
    assert.equal(first.finishReason, 'function_calls');

    const history = [
      question,
      new AssistantMessage({ content: first.content, source: 'assistant' }),
      new FunctionExecutionResultMessage({
        content: [
          new FunctionExecutionResult({ callId: call.id, content: '32.38', isError: false, name: call.name }),
        ],
      }),
    ];
    const second = await model.create(history);
    assert.equal(second.content, 'About $32.38.');
    assert.equal(second.finishReason, 'stop');
    assert.deepEqual(model.totalUsage(), { promptTokens: 10, completionTokens: 5 });

    assert.equal(model.calls.length, 2);
    assert.deepEqual(
      model.calls[0]?.tools.map((t) => t.name),
      ['get_stock_price'],
    );
    assert.equal(model.calls[0]?.toolChoice, 'auto');
    assert.equal(model.calls[1]?.messages.length, 3);
    assert.equal(model.calls[1]?.messages[2]?.type, 'FunctionExecutionResultMessage');
    model.assertDone();
    await model.close();
  });

  test('records a copy of the messages, not the caller array', async () => {
    const model = new ScriptedChatCompletionClient(['ok']);
    const messages = [question];
    await model.create(messages);
    messages.push(question);
    assert.equal(model.calls[0]?.messages.length, 1);
  });

  test('streams text in chunks, then the result', async () => {
    const model = new ScriptedChatCompletionClient(['Hello world'], { chunkSize: 4 });
    const items = await collect(model.createStream([question]));
    assert.deepEqual(items.slice(0, -1), ['Hell', 'o wo', 'rld']);
    const last = items.at(-1) as CreateResult;
    assert.equal(last.content, 'Hello world');
    assert.equal(model.calls[0]?.stream, true);
  });

  test('streams explicit chunks, and the thought beside function calls', async () => {
    const model = new ScriptedChatCompletionClient([
      { content: 'abc', chunks: ['a', 'bc'] },
      { content: [call], thought: 'Let me look.', chunks: ['Let me', ' look.'] },
    ]);
    assert.deepEqual((await collect(model.createStream([question]))).slice(0, -1), ['a', 'bc']);
    const items = await collect(model.createStream([question], { tools: [stockTool] }));
    assert.deepEqual(items.slice(0, -1), ['Let me', ' look.']);
    const last = items.at(-1) as CreateResult;
    assert.deepEqual(last.content, [call]);
    assert.equal(last.thought, 'Let me look.');
  });

  test('a step function sees the messages and context and computes the reply', async () => {
    const model = new ScriptedChatCompletionClient([
      (messages, ctx) =>
        `call ${ctx.callNumber} saw ${messages.length} message(s) and ${ctx.tools.length} tool(s)`,
    ]);
    const result = await model.create([question, question], { tools: [stockTool] });
    assert.equal(result.content, 'call 1 saw 2 message(s) and 1 tool(s)');
  });

  test('a throwing step function fails that call with the thrown error', async () => {
    const boom = new ToolbusError('rate-limited', 'slow down');
    const model = new ScriptedChatCompletionClient([
      () => {
        throw boom;
      },
    ]);
    await assert.rejects(model.create([question]), (e) => e === boom);
  });

  test('fails loudly on an unexpected extra call, naming the call number', async () => {
    const model = new ScriptedChatCompletionClient(['only one']);
    await model.create([question]);
    await assert.rejects(model.create([question]), (e: unknown) => {
      assert.ok(e instanceof ToolbusError);
      assert.equal(e.code, 'model-error');
      assert.match(e.message, /unexpected call #2/);
      assert.match(e.message, /1 step\(s\), all consumed, so no call #2 was expected/);
      assert.match(e.message, /UserMessage "What is the stock price/);
      return true;
    });
  });

  test('assertDone() and close() fail when steps are left unconsumed', async () => {
    const model = new ScriptedChatCompletionClient(['one', [call], 'three']);
    await model.create([question]);
    assert.equal(model.remaining, 2);
    assert.throws(
      () => model.assertDone(),
      (e: unknown) =>
        e instanceof ToolbusError &&
        e.code === 'model-error' &&
        /2 of 3 script steps were not consumed/.test(e.message) &&
        /step #2: call\(s\) 'get_stock_price'/.test(e.message),
    );
    await assert.rejects(model.close(), /2 of 3 script steps were not consumed/);
    await assert.rejects(
      model.create([question]),
      (e: unknown) => e instanceof ToolbusError && e.code === 'closed',
    );
  });

  test('rejects malformed steps at construction with the step number', () => {
    assert.throws(
      () => new ScriptedChatCompletionClient(['ok', [{ id: 'c', name: 'x' } as FunctionCall]]),
      (e: unknown) =>
        e instanceof ToolbusError &&
        /step #2: function call \[0\] needs a string 'arguments'/.test(e.message),
    );
    assert.throws(
      () => new ScriptedChatCompletionClient([42 as unknown as string]),
      /step #1: a step must be text, FunctionCall\[\], \{ content, \.\.\. \} or a function/,
    );
  });

  test('refuses tools when modelInfo says it cannot call functions', async () => {
    const model = new ScriptedChatCompletionClient(['Thought: ...'], {
      modelInfo: { functionCalling: false },
    });
    assert.equal(model.modelInfo.functionCalling, false);
    await assert.rejects(model.create([question], { tools: [stockTool] }), (e: unknown) => {
      assert.ok(e instanceof ToolbusError);
      assert.equal(e.code, 'unsupported');
      assert.match(e.message, /cannot call functions.*'get_stock_price'/);
      return true;
    });
    // The refused call consumed nothing.
    assert.equal((await model.create([question])).content, 'Thought: ...');
  });

  test('honours the signal: before the call, while a step waits, and between stream chunks', async () => {
    const before = new ScriptedChatCompletionClient(['x']);
    await assert.rejects(
      before.create([question], { signal: AbortSignal.abort() }),
      (e: unknown) => e instanceof ToolbusError && e.code === 'cancelled',
    );
    assert.equal(before.remaining, 1);

    let sawAbort = false;
    const waiting = new ScriptedChatCompletionClient([
      (_m, ctx) =>
        new Promise<string>((resolve) => {
          ctx.signal.addEventListener('abort', () => {
            sawAbort = true;
            resolve('too late');
          });
        }),
    ]);
    const controller = new AbortController();
    const pending = waiting.create([question], { signal: controller.signal });
    setImmediate(() => controller.abort());
    await assert.rejects(pending, (e: unknown) => e instanceof ToolbusError && e.code === 'cancelled');
    assert.equal(sawAbort, true);

    const streaming = new ScriptedChatCompletionClient(['abcdefgh'], { chunkSize: 2 });
    const c2 = new AbortController();
    const seen: string[] = [];
    await assert.rejects(
      (async () => {
        for await (const item of streaming.createStream([question], { signal: c2.signal })) {
          seen.push(item as string);
          c2.abort();
        }
      })(),
      (e: unknown) => e instanceof ToolbusError && e.code === 'cancelled',
    );
    assert.deepEqual(seen, ['ab']);
  });
});
