/**
 * @module Content parts: a tool that returns text, images, audio or resources as parts gets them kept as
 * `ToolResult.parts` (within the set's caps) beside their text; anything else is text as before.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { FunctionTool } from './function-tool.js';
import { ToolSet } from './tool-set.js';
import { valueAsString } from './base-tool.js';
import { isBase64 } from './content-parts.js';

/** A 1×1 transparent PNG. */
const PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';

function returning(value: unknown): FunctionTool {
  return new FunctionTool(() => value, { name: 'chart', description: 'Draws', parameters: z.object({}) });
}

test('a FunctionTool returning image parts: the parts are kept, the text describes the image', async () => {
  const result = await new ToolSet([
    returning([
      { type: 'text', text: 'Sales by month' },
      { type: 'image', data: PNG, mimeType: 'image/png' },
    ]),
  ]).call('chart', {});
  assert.equal(result.isError, false, result.content);
  assert.deepEqual(result.parts, [
    { type: 'text', text: 'Sales by month' },
    { type: 'image', data: PNG, mimeType: 'image/png' },
  ]);
  assert.equal(result.content, 'Sales by month\n[image: image/png, 70 bytes]');
  // One part alone is parts too; a resource keeps its uri and text.
  const one = await new ToolSet([returning({ type: 'audio', data: 'UklGRg==', mimeType: 'audio/wav' })]).call(
    'chart',
    {},
  );
  assert.deepEqual(one.parts, [{ type: 'audio', data: 'UklGRg==', mimeType: 'audio/wav' }]);
  assert.equal(one.content, '[audio: audio/wav, 4 bytes]');
  const doc = await new ToolSet([
    returning([{ type: 'resource', uri: 'file:///notes.md', mimeType: 'text/markdown', text: '# Notes' }]),
  ]).call('chart', {});
  assert.equal(doc.content, '[resource: file:///notes.md, text/markdown]\n# Notes');
});

test('a broken image part is a tool-error saying what is wrong, not base64 text for the model', async () => {
  const noMime = await new ToolSet([returning([{ type: 'image', data: PNG }])]).call('chart', {});
  assert.equal(noMime.isError, true);
  assert.equal(noMime.error?.code, 'tool-error');
  assert.match(
    noMime.content,
    /part 0 of its result \(image\) needs a 'mimeType' such as 'image\/png', got nothing/,
  );
  const notBase64 = await new ToolSet([
    returning([
      { type: 'text', text: 'x' },
      { type: 'image', data: 'not base64!', mimeType: 'image/png' },
    ]),
  ]).call('chart', {});
  assert.match(notBase64.content, /part 1 of its result \(image\) needs its bytes base64-encoded in 'data'/);
});

test('data that only looks like parts is JSON as before', async () => {
  for (const value of [[{ type: 'cat', name: 'Tom' }], [{ type: 'text' }], [], { type: 'image', url: 'x' }]) {
    const result = await new ToolSet([returning(value)]).call('chart', {});
    assert.equal(result.isError, false);
    assert.equal(result.parts, undefined);
    assert.equal(result.content, JSON.stringify(value));
  }
});

test('media over the media cap is left out, and the text says so; the rest is kept', async () => {
  const big = 'A'.repeat(4000); // 3000 bytes decoded
  const tools = new ToolSet(
    [
      returning([
        { type: 'image', data: PNG, mimeType: 'image/png' },
        { type: 'image', data: big, mimeType: 'image/jpeg' },
      ]),
    ],
    { maxMediaBytes: 1000 },
  );
  const result = await tools.call('chart', {});
  assert.equal(result.isError, false);
  assert.equal(result.parts?.length, 2);
  assert.deepEqual(result.parts?.[0], { type: 'image', data: PNG, mimeType: 'image/png' });
  assert.deepEqual(result.parts?.[1], {
    type: 'text',
    text: '[image: image/jpeg, 3000 bytes]: left out, over the 1000-byte media cap of one result',
  });
  assert.match(result.content, /left out, over the 1000-byte media cap/);
  assert.throws(() => new ToolSet([], { maxMediaBytes: -1 }), /maxMediaBytes/);
});

test('text parts over the output cap are cut like any output; the media stays', async () => {
  const result = await new ToolSet(
    [
      returning([
        { type: 'text', text: 'x'.repeat(5000) },
        { type: 'image', data: PNG, mimeType: 'image/png' },
      ]),
    ],
    { maxOutputBytes: 1024 },
  ).call('chart', {});
  assert.equal(result.isError, false);
  assert.ok((result.truncatedBytes ?? 0) > 3900, String(result.truncatedBytes));
  assert.equal(result.parts?.length, 2);
  assert.equal(result.parts?.[0]?.type, 'text');
  assert.ok(Buffer.byteLength((result.parts?.[0] as { text: string }).text) <= 1024);
  assert.deepEqual(result.parts?.[1], { type: 'image', data: PNG, mimeType: 'image/png' });
});

test('valueAsString gives the text of parts (for runJson callers), JSON for broken ones', () => {
  assert.equal(
    valueAsString([{ type: 'image', data: PNG, mimeType: 'image/png' }]),
    '[image: image/png, 70 bytes]',
  );
  assert.equal(valueAsString([{ type: 'image', data: PNG }]), JSON.stringify([{ type: 'image', data: PNG }]));
});

test('isBase64: standard base64 padded to a multiple of 4, the empty text included', () => {
  for (const text of ['', 'AAAA', 'aGk=', 'aA==', 'a+/9']) assert.equal(isBase64(text), true, text);
  for (const text of ['AAA', 'aGk', 'a-_9', 'aGk=A===', 'aG k=', '====']) {
    assert.equal(isBase64(text), false, text);
  }
});
