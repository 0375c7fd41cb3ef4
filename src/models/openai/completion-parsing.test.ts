import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ChatCompletion, ChatCompletionChunk } from 'openai/resources/chat/completions';
import { StreamAssembler, parseCompletion, splitThink, toFinishReason } from './completion-parsing.js';
import { retryAfterMsOf } from './provider-errors.js';

const identity = (n: string): string => n;

function completion(message: Record<string, unknown>, finish: string | null = 'stop'): ChatCompletion {
  return {
    id: 'x',
    object: 'chat.completion',
    created: 0,
    model: 'm',
    choices: [{ index: 0, message, finish_reason: finish, logprobs: null }],
  } as unknown as ChatCompletion;
}

test('finish reasons map to toolbus values; calls force function_calls', () => {
  assert.equal(toFinishReason('stop', false), 'stop');
  assert.equal(toFinishReason('end_turn', false), 'stop');
  assert.equal(toFinishReason('length', false), 'length');
  assert.equal(toFinishReason('content_filter', false), 'content_filter');
  assert.equal(toFinishReason('tool_calls', false), 'function_calls');
  assert.equal(toFinishReason('weird', false), 'unknown');
  assert.equal(toFinishReason('stop', true), 'function_calls'); // Ollama says 'stop' beside tool calls
});

test("tool calls cut by the token limit keep finish reason 'length' (their arguments may be cut off)", () => {
  assert.equal(toFinishReason('length', true), 'length');
  const result = parseCompletion(
    completion(
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{"a": "lo' } }],
      },
      'length',
    ),
    identity,
  );
  assert.equal(result.finishReason, 'length');
  assert.deepEqual(result.content, [{ id: 'c', name: 'f', arguments: '{"a": "lo' }]);
});

test('arguments sent as an object by a non-compliant server become JSON text; missing ids are filled', () => {
  const result = parseCompletion(
    completion({
      role: 'assistant',
      content: null,
      tool_calls: [{ type: 'function', function: { name: 'f', arguments: { a: 1 } } }],
    }),
    identity,
  );
  assert.deepEqual(result.content, [{ id: 'call_0', name: 'f', arguments: '{"a":1}' }]);
  assert.deepEqual(result.usage, { promptTokens: 0, completionTokens: 0 });
});

test('splitThink takes a leading <think> block only', () => {
  assert.deepEqual(splitThink('<think>a</think> b'), { thought: 'a', text: 'b' });
  assert.deepEqual(splitThink('b <think>a</think>'), { thought: undefined, text: 'b <think>a</think>' });
});

test('the stream assembler keeps the raw argument text, repeated names once, reasoning as thought', () => {
  const a = new StreamAssembler(identity);
  const chunks = [
    { choices: [{ index: 0, delta: { reasoning_content: 'Think.' }, finish_reason: null }] },
    {
      choices: [
        {
          index: 0,
          delta: { tool_calls: [{ index: 0, id: 'c', function: { name: 'f', arguments: '{"a"' } }] },
          finish_reason: null,
        },
      ],
    },
    {
      choices: [
        {
          index: 0,
          delta: { tool_calls: [{ index: 0, function: { name: 'f', arguments: ': 1 }' } }] },
          finish_reason: null,
        },
      ],
    },
    { choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] },
  ] as unknown as ChatCompletionChunk[];
  for (const c of chunks) assert.equal(a.push(c), undefined);
  assert.equal(a.finished, true);
  assert.deepEqual(a.result(), {
    content: [{ id: 'c', name: 'f', arguments: '{"a": 1 }' }],
    finishReason: 'function_calls',
    usage: { promptTokens: 0, completionTokens: 0 },
    thought: 'Think.',
  });
});

test('streamed parallel calls without an index (Gemini compatibility) stay separate calls', () => {
  const a = new StreamAssembler(identity);
  const delta = (toolCall: Record<string, unknown>, finish: string | null = null) =>
    ({
      choices: [{ index: 0, delta: { tool_calls: [toolCall] }, finish_reason: finish }],
    }) as unknown as ChatCompletionChunk;
  a.push(delta({ id: 'c1', function: { name: 'f', arguments: '{"a"' } }));
  a.push(delta({ function: { arguments: ': 1}' } }));
  a.push(delta({ id: 'c2', function: { name: 'g', arguments: '{"b": 2}' } }));
  a.push(delta({ id: 'c2', function: { arguments: '' } }, 'tool_calls'));
  assert.deepEqual(a.result().content, [
    { id: 'c1', name: 'f', arguments: '{"a": 1}' },
    { id: 'c2', name: 'g', arguments: '{"b": 2}' },
  ]);
});

test("a refusal (OpenAI's refusal field, whole or streamed) is the answer text, not an empty answer", () => {
  const whole = parseCompletion(
    completion({ role: 'assistant', content: null, refusal: "I can't help with that." }),
    identity,
  );
  assert.equal(whole.content, "I can't help with that.");
  const a = new StreamAssembler(identity);
  const pieces = ["I can't", ' help with that.'].map(
    (refusal) =>
      ({
        choices: [{ index: 0, delta: { refusal }, finish_reason: null }],
      }) as unknown as ChatCompletionChunk,
  );
  assert.deepEqual(
    pieces.map((p) => a.push(p)),
    ["I can't", ' help with that.'],
  );
  a.push({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] } as unknown as ChatCompletionChunk);
  assert.equal(a.result().content, "I can't help with that.");
});

test('retry-after: milliseconds header, seconds, HTTP date, garbage', () => {
  assert.equal(retryAfterMsOf(new Headers({ 'retry-after-ms': '250', 'retry-after': '9' })), 250);
  assert.equal(retryAfterMsOf(new Headers({ 'retry-after': '1.5' })), 1500);
  const inTenSeconds = new Date(Date.now() + 10_000).toUTCString();
  const fromDate = retryAfterMsOf(new Headers({ 'retry-after': inTenSeconds }));
  assert.ok(fromDate !== undefined && fromDate > 0 && fromDate <= 10_000);
  assert.equal(retryAfterMsOf(new Headers({ 'retry-after': 'soon' })), undefined);
  assert.equal(retryAfterMsOf(new Headers()), undefined);
});
