import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { isToolbusError } from '../errors/index.js';
import { MemoryBus } from '../bus/index.js';
import { ToolServiceClientCache } from '../services/index.js';
import { ConfigResources, parseResourceItem } from './config-resources.js';
import type { ResourceChange } from '../tools/index.js';

const invalid = (pattern: RegExp) => (error: unknown) =>
  isToolbusError(error) && error.code === 'invalid-config' && pattern.test(error.message);

describe('parseResourceItem', () => {
  test('reads static and service-backed items; name defaults to the key', () => {
    const item = parseResourceItem('readme', { uri: 'docs://readme', 'mime-type': 'text/plain', text: 'hi' });
    assert.equal(item.name, 'readme');
    assert.equal(item.mimeType, 'text/plain');
    const city = parseResourceItem('city', {
      'uri-template': 'w://city/{name}',
      service: 'weather',
      units: 'metric',
      variables: [{ name: 'name', enum: ['Paris'] }],
    });
    assert.deepEqual(city.template?.variables, ['name']);
    assert.deepEqual(city.values, { units: 'metric' });
    assert.deepEqual(city.variables, [{ name: 'name', enum: ['Paris'] }]);
  });

  test('refuses bad items naming the item and the field', () => {
    const cases: [unknown, RegExp][] = [
      ['text', /config 'resource\/x': must be a JSON object/],
      [{ text: 'a' }, /give exactly one of 'uri' .* and 'uri-template'/],
      [{ uri: 'a://b', 'uri-template': 'a://{c}', service: 's' }, /give exactly one of 'uri'/],
      [{ uri: 'readme', text: 'a' }, /field 'uri' must be a URI with a scheme/],
      [{ uri: 'a://b', text: 3 }, /field 'text' must be a string, got number 3/],
      [{ uri: 'a://b' }, /give exactly one of 'text', 'blob' \(base64\) and 'service'/],
      [{ uri: 'a://b', blob: '!!' }, /field 'blob' must be base64/],
      [{ 'uri-template': 'a://{+p}', service: 's' }, /field 'uri-template': .*not a level-1 expression/],
      [{ 'uri-template': 'a://b', service: 's' }, /has no \{variables\}; use 'uri'/],
      [{ 'uri-template': 'a://{b}', text: 'x' }, /read through a tool service: give 'service'/],
      [
        { uri: 'a://b', text: 'x', colour: 'red' },
        /unknown field 'colour'; a static resource takes uri, name/,
      ],
      [{ uri: 'a://b', service: 's', type: 'x' }, /unknown field 'type'; a resource read through a service/],
      [{ uri: 'a://b', text: 'x', variables: [] }, /field 'variables' is for a 'uri-template' item/],
      [
        { 'uri-template': 'a://{b}', service: 's', variables: [{ name: 'c' }] },
        /'variables\[0\]\.name' must be a variable of the template \(b\), got "c"/,
      ],
      [
        { 'uri-template': 'a://{b}', service: 's', variables: [{ name: 'b', enum: [1] }] },
        /variable 'b': 'enum' must be a non-empty array of strings/,
      ],
      [{ uri: 'a://b', name: '', text: 'x' }, /field 'name' must not be empty/],
    ];
    for (const [value, pattern] of cases) {
      assert.throws(() => parseResourceItem('x', value), invalid(pattern), JSON.stringify(value));
    }
  });
});

describe('ConfigResources', () => {
  test('tells listeners what changed, reports a duplicate URI, and reads static items', async () => {
    const resources = new ConfigResources({ clients: () => undefined });
    const changes: ResourceChange[] = [];
    resources.onChange((change) => void changes.push(change));
    const lookup = (): undefined => undefined;
    const a = { uri: 'a://a', text: '1' };
    resources.update([['a', a]], lookup);
    resources.update([['a', a]], lookup); // nothing changed
    resources.update([['a', { uri: 'a://a', text: '2' }]], lookup);
    resources.update(
      [
        ['a', { uri: 'a://a', text: '2' }],
        ['b', { uri: 'a://a', text: 'dup' }],
      ],
      lookup,
    );
    resources.update(
      [
        ['a', { uri: 'a://a', name: 'renamed', text: '2' }],
        ['b', { uri: 'a://a', text: 'dup' }],
      ],
      lookup,
    );
    assert.deepEqual(changes, [
      { listChanged: true, updated: [] }, // a came
      { listChanged: false, updated: ['a://a'] }, // its text changed (an equal value object changes nothing)
      { listChanged: true, updated: ['a://a'] }, // renamed
    ]);
    assert.match(
      resources.problems().find((p) => p.key === 'resource/b')?.message ?? '',
      /uri 'a:\/\/a' is already served by config 'resource\/a'/,
    );
    const read = await resources.read('a://a', { signal: new AbortController().signal });
    assert.deepEqual(read, [{ uri: 'a://a', text: '2' }]);
    assert.equal(await resources.read('a://none', { signal: new AbortController().signal }), undefined);
  });

  test('a service-backed item is built as a tool-service tool: its problems are named by the item', async () => {
    const bus = new MemoryBus();
    const clients = new ToolServiceClientCache(bus);
    const resources = new ConfigResources({ clients: () => clients });
    const weather = {
      id: 'weather',
      'request-queue': 'non-persistent://tg/request/weather',
      'response-queue': 'non-persistent://tg/response/weather',
      'config-params': [{ name: 'units', required: true }],
    };
    resources.update(
      [
        ['city', { 'uri-template': 'w://city/{name}', service: 'weather', units: 'metric', colour: 'red' }],
        ['today', { uri: 'w://today', service: 'weather' }],
      ],
      (type, key) => (type === 'tool-service' && key === 'weather' ? weather : undefined),
    );
    assert.deepEqual(
      resources.problems().map((p) => [p.key, p.severity, p.message]),
      [
        [
          'resource/city',
          'warning',
          "config 'resource/city': key 'colour' is not a config param of tool service 'weather' (its params: 'units'); it is not forwarded",
        ],
        [
          'resource/today',
          'error',
          "config 'resource/today': missing required config param 'units' of tool service 'weather'",
        ],
      ],
    );
    assert.deepEqual(
      resources.templates().map((t) => t.uriTemplate),
      ['w://city/{name}'],
    );
    resources.close();
    await clients.close();
    await bus.close();
  });

  test('keys that read alike as tool names still get readers of their own', async () => {
    const bus = new MemoryBus();
    const clients = new ToolServiceClientCache(bus);
    const seen: string[] = [];
    const resources = new ConfigResources({
      clients: () => clients,
      toolSetOptions: { hooks: { onStart: ({ name }) => void seen.push(name) } },
    });
    const service = {
      id: 's',
      'request-queue': 'non-persistent://tg/request/s',
      'response-queue': 'non-persistent://tg/response/s',
    };
    const long = `k${'x'.repeat(60)}`;
    const keys = ['a.b', 'a_b', `${long}1`, `${long}2`];
    resources.update(
      keys.map((key, i) => [key, { uri: `s://${i}`, service: 's' }] as const),
      () => service,
    );
    assert.deepEqual(resources.problems(), []);
    for (let i = 0; i < keys.length; i++) {
      await assert.rejects(resources.read(`s://${i}`, { signal: AbortSignal.timeout(5000) }), /unavailable/);
    }
    assert.equal(new Set(seen).size, keys.length, seen.join(', '));
    assert.equal(seen[1], 'resource_a_b');
    resources.close();
    await clients.close();
    await bus.close();
  });

  test('a service-backed item without a bus is reported', () => {
    const resources = new ConfigResources({ clients: () => undefined });
    resources.update([['w', { uri: 'w://today', service: 'weather' }]], () => ({ id: 'weather' }));
    assert.match(resources.problems()[0]?.message ?? '', /needs a bus; pass \{ bus \} to ToolRegistry/);
    assert.deepEqual(resources.list(), []);
  });
});
