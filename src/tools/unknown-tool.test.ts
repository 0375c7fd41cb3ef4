import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { FunctionTool } from './function-tool.js';
import { ToolSet } from './tool-set.js';
import { NearestNames } from './nearest-names.js';
import { decorateTool } from './decorated-tool.js';
import { parseToolProfile, profileAccepts } from './tool-profile.js';
import { ToolbusError } from '../errors/index.js';

function tools(n: number, name = (i: number) => `add_${i}`): FunctionTool[] {
  return Array.from(
    { length: n },
    (_, i) =>
      new FunctionTool(() => i, { name: name(i), description: `tool ${i}`, parameters: z.object({}) }),
  );
}

describe('the unknown-tool message', () => {
  test('a small set lists every name, as before', async () => {
    const result = await new ToolSet(tools(3)).call('nope', '{}');
    assert.equal(result.content, "unknown tool 'nope'; available tools: 'add_0', 'add_1', 'add_2'");
  });

  test('with 10,000 tools it names at most the 5 nearest and stays under 2 KB', async () => {
    const names = ['get_weather', 'get_weather_alerts', 'set_weather', 'create_invoice', 'send_email'];
    const set = new ToolSet([
      ...tools(9_995),
      ...names.map((n) => new FunctionTool(() => n, { name: n, description: n, parameters: z.object({}) })),
    ]);
    const typo = await set.call('get_wether', '{}');
    assert.equal(typo.error?.code, 'unknown-tool');
    assert.match(
      typo.content,
      /^unknown tool 'get_wether'; did you mean 'get_weather'\? \(the nearest of 10000 tools\)$/,
    );
    const near = await set.call('add_12a', '{}');
    const named = near.content.match(/'add_\d+'/g) ?? [];
    assert.equal(named.length, 5);
    assert.ok(Buffer.byteLength(near.content) < 2048, `${near.content.length} characters`);
    const far = await set.call('x'.repeat(500), '{}');
    assert.match(far.content, /none of the 10000 tools has a similar name$/);
    assert.ok(Buffer.byteLength(far.content) < 2048);
  });

  test('NearestNames: one edit (insert, delete, substitute, swap) always found, case aside, nearest first', () => {
    const index = new NearestNames(['search_tools', 'send_mail', 'Get_Weather', 'get_weathers']);
    assert.deepEqual(index.find('get_weather', 5), ['Get_Weather', 'get_weathers']);
    assert.deepEqual(index.find('serach_tools', 5), ['search_tools']);
    assert.deepEqual(index.find('send_mai', 5), ['send_mail']);
    assert.deepEqual(index.find('sendXmail', 5), ['send_mail']);
    assert.deepEqual(index.find('unrelated', 5), []);
    assert.deepEqual(index.find('get_weather', 1), ['Get_Weather']);
  });
});

describe('tags', () => {
  test('FunctionTool and decorateTool carry checked tags, deduplicated; the schema does not show them', () => {
    const t = new FunctionTool(() => 1, {
      name: 'w',
      description: 'd',
      parameters: z.object({}),
      tags: ['weather', 'openapi:petstore', 'weather'],
    });
    assert.deepEqual(t.tags, ['weather', 'openapi:petstore']);
    assert.equal(JSON.stringify(t.schema).includes('weather'), false);
    const d = decorateTool(t, { tags: ['x'] });
    assert.deepEqual(d.tags, ['x']);
    assert.equal(d.schema, t.schema);
    assert.throws(
      () =>
        new FunctionTool(() => 1, {
          name: 'w',
          description: 'd',
          parameters: z.object({}),
          tags: ['has space'],
        }),
      (e: unknown) =>
        e instanceof ToolbusError &&
        e.code === 'invalid-schema' &&
        /tag 'has space' is not a tag/.test(e.message),
    );
  });
});

describe('profiles', () => {
  const [weather, invoice, admin] = ['weather-now', 'invoice-create', 'weather-admin-reset'].map(
    (name, i) =>
      new FunctionTool(() => i, {
        name,
        description: name,
        parameters: z.object({}),
        ...(name === 'invoice-create' ? { tags: ['billing'] } : {}),
      }),
  );

  test('tools globs or tags let a tool in, exclude keeps it out; an empty profile is every tool', () => {
    const p = parseToolProfile({ tools: ['weather-*'], tags: ['billing'], exclude: ['*-admin-*'] }, 'p');
    assert.deepEqual(
      [weather, invoice, admin].filter((t) => profileAccepts(p, t!)).map((t) => t!.name),
      ['weather-now', 'invoice-create'],
    );
    assert.equal(profileAccepts(parseToolProfile({}, 'p'), admin!), true);
    assert.equal(profileAccepts(parseToolProfile({ tags: ['billing'] }, 'p'), weather!), false);
  });

  test('a bad item is invalid-config naming the field', () => {
    const bad = (value: unknown, pattern: RegExp) =>
      assert.throws(
        () => parseToolProfile(value, "config 'profile/x'"),
        (e: unknown) => e instanceof ToolbusError && e.code === 'invalid-config' && pattern.test(e.message),
      );
    bad([], /must be a JSON object/);
    bad({ tool: ['x'] }, /unknown field 'tool'; expected 'tools'/);
    bad({ tools: 'weather-*' }, /field 'tools' must be an array of non-empty strings/);
    bad({ tags: [1] }, /field 'tags' must be an array/);
    bad({ description: 3 }, /'description' must be a string/);
  });
});
