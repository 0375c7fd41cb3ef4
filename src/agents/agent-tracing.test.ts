/**
 * Tracing of an agent run, with the real SDK registered (in memory): the run is an `invoke_agent` span,
 * its model calls `chat {model}` spans (model, provider, token usage) and its tool calls `execute_tool`
 * spans, both children of the run; model messages are recorded only with `TOOLBUS_TRACE_CONTENT=1`.
 */
import { after, before, beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { z } from 'zod';
import { startTestTracing, parentIdOf, type TestTracing } from '../../test/support/tracing.js';
import { ScriptedChatCompletionClient } from '../models/index.js';
import { FunctionTool, TRACE_CONTENT_ENV, setTraceContent } from '../tools/index.js';
import { ReActAgent } from './react-agent.js';
import { ToolUseAgent } from './tool-use-agent.js';

const add = new FunctionTool(({ a, b }) => a + b, {
  name: 'add',
  description: 'Adds two numbers.',
  parameters: z.object({ a: z.number(), b: z.number() }),
});

let tracing: TestTracing;
before(() => {
  tracing = startTestTracing();
});
after(() => tracing.stop());
beforeEach(() => {
  tracing.reset();
  delete process.env[TRACE_CONTENT_ENV];
  // The variable is read once per process; forget what was read, so each test reads it afresh.
  setTraceContent(undefined);
});

function scripted(): ScriptedChatCompletionClient {
  return new ScriptedChatCompletionClient([
    {
      content: [{ id: 'call_1', name: 'add', arguments: '{"a": 2, "b": 3}' }],
      usage: { promptTokens: 11, completionTokens: 4 },
    },
    { content: 'It is 5.', usage: { promptTokens: 20, completionTokens: 3 } },
  ]);
}

test('a run is invoke_agent, with its chat and execute_tool spans as children', async () => {
  const agent = new ToolUseAgent({ model: scripted(), tools: [add], name: 'calculator' });
  assert.equal(await agent.run('What is 2 + 3?'), 'It is 5.');
  const run = tracing.one('invoke_agent calculator');
  assert.equal(run.kind, SpanKind.INTERNAL);
  assert.equal(run.attributes['gen_ai.operation.name'], 'invoke_agent');
  assert.equal(run.attributes['gen_ai.agent.name'], 'calculator');
  const runId = run.spanContext().spanId;
  const chats = tracing.spans().filter((s) => s.name === 'chat scripted');
  assert.equal(chats.length, 2);
  for (const chat of chats) {
    assert.equal(chat.kind, SpanKind.CLIENT);
    assert.equal(parentIdOf(chat), runId);
    assert.equal(chat.attributes['gen_ai.operation.name'], 'chat');
    assert.equal(chat.attributes['gen_ai.provider.name'], 'scripted');
    assert.equal(chat.attributes['gen_ai.request.model'], 'scripted');
    assert.equal(chat.attributes['gen_ai.input.messages'], undefined, 'no messages by default');
    assert.equal(chat.attributes['gen_ai.output.messages'], undefined);
  }
  assert.deepEqual(
    chats.map((c) => [c.attributes['gen_ai.usage.input_tokens'], c.attributes['gen_ai.usage.output_tokens']]),
    [
      [11, 4],
      [20, 3],
    ],
  );
  assert.deepEqual(chats[0]!.attributes['gen_ai.response.finish_reasons'], ['function_calls']);
  const tool = tracing.one('execute_tool add');
  assert.equal(parentIdOf(tool), runId);
  assert.equal(tool.attributes['gen_ai.tool.call.id'], 'call_1');
  for (const span of tracing.spans()) assert.equal(span.spanContext().traceId, run.spanContext().traceId);
});

test(`with ${TRACE_CONTENT_ENV}=1 the chat spans carry the messages in and out`, async () => {
  process.env[TRACE_CONTENT_ENV] = '1';
  const agent = new ToolUseAgent({ model: scripted(), tools: [add] });
  await agent.run('What is 2 + 3?');
  const [first, second] = tracing.spans().filter((s) => s.name === 'chat scripted');
  const input = JSON.parse(String(first!.attributes['gen_ai.input.messages'])) as unknown[];
  assert.deepEqual(input, [
    { role: 'system', parts: [{ type: 'text', content: 'You are a helpful AI assistant.' }] },
    { role: 'user', parts: [{ type: 'text', content: 'What is 2 + 3?' }] },
  ]);
  assert.deepEqual(JSON.parse(String(first!.attributes['gen_ai.output.messages'])), [
    {
      role: 'assistant',
      parts: [{ type: 'tool_call', id: 'call_1', name: 'add', arguments: '{"a": 2, "b": 3}' }],
      finish_reason: 'function_calls',
    },
  ]);
  const replayed = JSON.parse(String(second!.attributes['gen_ai.input.messages'])) as { role: string }[];
  assert.deepEqual(
    replayed.map((m) => m.role),
    ['system', 'user', 'assistant', 'tool'],
  );
});

test('a failed model call ends the chat and invoke_agent spans with its code', async () => {
  const model = new ScriptedChatCompletionClient([]);
  const agent = new ReActAgent({ model, tools: [add] });
  await assert.rejects(agent.run('Hi'), { code: 'model-error' });
  const run = tracing.one('invoke_agent react-agent');
  assert.equal(run.attributes['error.type'], 'model-error');
  assert.equal(run.status.code, SpanStatusCode.ERROR);
  const chat = tracing.spans().find((s) => s.name.startsWith('chat '))!;
  assert.equal(chat.attributes['error.type'], 'model-error');
  assert.equal(parentIdOf(chat), run.spanContext().spanId);
});

test('a streamed model call is one chat span, ended with the result', async () => {
  const model = new ScriptedChatCompletionClient([
    { content: 'Hello there', usage: { promptTokens: 5, completionTokens: 2 } },
  ]);
  const chunks: string[] = [];
  for await (const item of model.createStream([])) if (typeof item === 'string') chunks.push(item);
  assert.equal(chunks.join(''), 'Hello there');
  const chat = tracing.one('chat scripted');
  assert.equal(chat.attributes['gen_ai.usage.output_tokens'], 2);
  assert.equal(chat.status.code, SpanStatusCode.UNSET);
});
