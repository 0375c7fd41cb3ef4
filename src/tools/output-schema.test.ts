/**
 * @module Output schemas: a result is checked against its tool's `outputSchema` in `ToolSet.call`, for
 * every kind of tool; a match is kept as `structured`, a mismatch is a `tool-error` saying what is wrong.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { FunctionTool } from './function-tool.js';
import { ToolSet } from './tool-set.js';
import { decorateTool } from './decorated-tool.js';

const forecast = z.object({ city: z.string(), celsius: z.number() });

function weather(result: unknown): FunctionTool {
  return new FunctionTool(() => result, {
    name: 'weather',
    description: 'The weather in a city',
    parameters: z.object({}),
    outputSchema: forecast,
  });
}

test('a result that matches the output schema is kept as structured, with its JSON as the text', async () => {
  const tool = weather({ city: 'Lima', celsius: 19.5 });
  assert.deepEqual(tool.outputSchema?.required, ['city', 'celsius']);
  const result = await new ToolSet([tool]).call('weather', {});
  assert.equal(result.isError, false);
  assert.deepEqual(result.structured, { city: 'Lima', celsius: 19.5 });
  assert.equal(result.content, '{"city":"Lima","celsius":19.5}');
});

test('a mismatch is a tool-error naming what is wrong; no structured value', async () => {
  const result = await new ToolSet([weather({ city: 'Lima', celsius: 'warm' })]).call('weather', {});
  assert.equal(result.isError, true);
  assert.equal(result.error?.code, 'tool-error');
  assert.match(
    result.content,
    /tool 'weather': its result does not match its output schema: 'celsius' must be number, got string/,
  );
  assert.equal(result.structured, undefined);
  const missing = await new ToolSet([weather({ city: 'Lima' })]).call('weather', {});
  assert.match(missing.content, /'celsius'/);
  const notObject = await new ToolSet([weather([1, 2])]).call('weather', {});
  assert.match(notObject.content, /it is an array; expected an object/);
});

test('a string result (a tool service, an HTTP endpoint) is read as JSON; text that is not JSON fails', async () => {
  const raw = { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] } as const;
  const text = (value: string): FunctionTool =>
    new FunctionTool(() => value, {
      name: 'count',
      description: 'Counts',
      parameters: z.object({}),
      outputSchema: raw,
    });
  const ok = await new ToolSet([text('{"n": 3}')]).call('count', {});
  assert.deepEqual([ok.isError, ok.structured, ok.content], [false, { n: 3 }, '{"n": 3}']);
  const bad = await new ToolSet([text('three')]).call('count', {});
  assert.match(bad.content, /it is text that is not JSON \("three"\); expected a JSON object/);
});

test('a structured result over the output cap fails with too-large instead of being cut', async () => {
  const big = new FunctionTool(() => ({ city: 'x'.repeat(5_000), celsius: 1 }), {
    name: 'weather',
    description: 'd',
    parameters: z.object({}),
    outputSchema: forecast,
  });
  const result = await new ToolSet([big], { maxOutputBytes: 1_000 }).call('weather', {});
  assert.equal(result.error?.code, 'too-large');
  assert.match(result.content, /over the 1000-byte cap; a result with an output schema cannot be cut/);
});

test('a decorated tool keeps its output schema; an output schema that is not an object is refused', async () => {
  const decorated = decorateTool(weather({ city: 'Oslo', celsius: -3 }), { tags: ['weather'] });
  assert.ok(decorated.outputSchema);
  assert.deepEqual((await new ToolSet([decorated]).call('weather', {})).structured, {
    city: 'Oslo',
    celsius: -3,
  });
  assert.throws(
    () =>
      new FunctionTool(() => 1, {
        name: 'n',
        description: 'd',
        parameters: z.object({}),
        outputSchema: z.number() as never,
      }),
    /tool 'n': its output schema: /,
  );
});
