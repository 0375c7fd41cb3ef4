import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { CreateMessageRequestParams, CreateMessageResult } from '@modelcontextprotocol/server';
import { samplingRequestOf, samplingResult } from './mcp-sampling.js';

test('sampling blocks become parts: text, image and audio as themselves, anything else as text', () => {
  const request = samplingRequestOf({
    messages: [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'look' },
          { type: 'image', data: 'aGk=', mimeType: 'image/png' },
          { type: 'audio', data: 'aGk=', mimeType: 'audio/wav' },
          { type: 'tool_use', id: 'u1', name: 'x', input: {} },
        ],
      },
    ],
    maxTokens: 10,
  } as CreateMessageRequestParams);
  assert.deepEqual(request.messages[0]!.content, [
    { type: 'text', text: 'look' },
    { type: 'image', data: 'aGk=', mimeType: 'image/png' },
    { type: 'audio', data: 'aGk=', mimeType: 'audio/wav' },
    { type: 'text', text: '[tool_use content]' },
  ]);
  const result = samplingResult({
    role: 'assistant',
    model: 'm',
    content: { type: 'text', text: 'done' },
  } as CreateMessageResult);
  assert.deepEqual(result, { role: 'assistant', model: 'm', content: { type: 'text', text: 'done' } });
});
