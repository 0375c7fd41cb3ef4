import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ToolbusError } from '../../errors/index.js';
import {
  AssistantMessage,
  FunctionExecutionResult,
  FunctionExecutionResultMessage,
  SystemMessage,
  UserMessage,
} from '../index.js';
import type { LLMMessage } from '../index.js';
import { toOpenAIMessages } from './message-conversion.js';

test('converts every message kind; one tool message per function result', () => {
  const messages: LLMMessage[] = [
    new SystemMessage({ content: 'You are helpful.' }),
    new UserMessage({ content: 'Prices?', source: 'user' }),
    new AssistantMessage({
      content: [
        { id: 'c1', name: 'get_stock_price', arguments: '{"ticker":"AAPL"}' },
        { id: 'c2', name: 'files.read', arguments: '{not json' },
      ],
      thought: 'Two lookups.',
    }),
    new FunctionExecutionResultMessage({
      content: [
        new FunctionExecutionResult({ callId: 'c1', content: '32.38', name: 'get_stock_price' }),
        new FunctionExecutionResult({
          callId: 'c2',
          content: 'invalid JSON',
          isError: true,
          name: 'files.read',
        }),
      ],
    }),
    new AssistantMessage({ content: 'AAPL is $32.38.' }),
  ];
  assert.deepEqual(toOpenAIMessages(messages, { toolName: (n) => n.replace('.', '_') }), [
    { role: 'system', content: 'You are helpful.' },
    { role: 'user', content: 'Prices?' },
    {
      role: 'assistant',
      content: 'Two lookups.',
      tool_calls: [
        { id: 'c1', type: 'function', function: { name: 'get_stock_price', arguments: '{"ticker":"AAPL"}' } },
        // Malformed arguments are not replayed (providers reject the whole conversation); the result says why.
        { id: 'c2', type: 'function', function: { name: 'files_read', arguments: '{}' } },
      ],
    },
    { role: 'tool', tool_call_id: 'c1', content: '32.38' },
    { role: 'tool', tool_call_id: 'c2', content: 'invalid JSON' },
    { role: 'assistant', content: 'AAPL is $32.38.' },
  ]);
});

test('an assistant message with calls and no thought sends content null', () => {
  const [out] = toOpenAIMessages([
    new AssistantMessage({ content: [{ id: 'a', name: 'x', arguments: '{}' }] }),
  ]);
  assert.equal((out as { content: unknown }).content, null);
});

test('an unknown message type fails with invalid-arguments naming it', () => {
  assert.throws(
    () => toOpenAIMessages([{ type: 'ImageMessage', content: '' } as unknown as LLMMessage]),
    (e: unknown) =>
      e instanceof ToolbusError &&
      e.code === 'invalid-arguments' &&
      /unknown message type 'ImageMessage'/.test(e.message),
  );
});

test('with vision, the images of a round of results follow its tool messages in one user message', () => {
  const round = new FunctionExecutionResultMessage({
    content: [
      new FunctionExecutionResult({
        callId: 'c1',
        content: 'Sales\n[image: image/png, 3 bytes]',
        name: 'chart',
        parts: [
          { type: 'text', text: 'Sales' },
          { type: 'image', data: 'AAAA', mimeType: 'image/png' },
        ],
      }),
      new FunctionExecutionResult({ callId: 'c2', content: '42', name: 'count' }),
      new FunctionExecutionResult({
        callId: 'c3',
        content: '[audio: audio/wav, 3 bytes]',
        name: 'listen',
        parts: [{ type: 'audio', data: 'AAAA', mimeType: 'audio/wav' }],
      }),
    ],
  });
  assert.deepEqual(toOpenAIMessages([round], { vision: true }), [
    { role: 'tool', tool_call_id: 'c1', content: 'Sales\n[image: image/png, 3 bytes]' },
    { role: 'tool', tool_call_id: 'c2', content: '42' },
    { role: 'tool', tool_call_id: 'c3', content: '[audio: audio/wav, 3 bytes]' },
    {
      role: 'user',
      content: [
        { type: 'text', text: 'The image returned by chart (call c1):' },
        { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
      ],
    },
  ]);
  // Without vision (the default), the text that describes the image is all the model gets.
  assert.equal(toOpenAIMessages([round]).length, 3);
});
