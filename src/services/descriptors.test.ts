import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { ToolbusError } from '../errors/index.js';
import {
  formatToolServiceDescriptor,
  formatToolServiceToolDescriptor,
  parseToolServiceDescriptor,
  parseToolServiceToolDescriptor,
} from './descriptors.js';

const example = (name: string): unknown =>
  JSON.parse(readFileSync(new URL(`../../examples/joke-service/${name}`, import.meta.url), 'utf8'));

const invalid = (fragment: RegExp) => (e: unknown) =>
  e instanceof ToolbusError && e.code === 'invalid-config' && fragment.test(e.message);

describe('tool-service descriptors', () => {
  test('parses the seed joke-service descriptor into camelCase', () => {
    assert.deepEqual(parseToolServiceDescriptor(example('joke-service.json')), {
      id: 'joke-service',
      requestQueue: 'non-persistent://tg/request/joke',
      delivery: 'request-response',
      responseQueue: 'non-persistent://tg/response/joke',
      configParams: [{ name: 'style', required: false }],
    });
  });

  test('accepts JSON text, bare-string params and a missing config-params; round-trips', () => {
    const parsed = parseToolServiceDescriptor(
      '{"id":"calc","request-queue":"request:tg:calc","response-queue":"response:tg:calc","config-params":["precision"]}',
    );
    assert.deepEqual(parsed.configParams, [{ name: 'precision', required: false }]);
    const none = parseToolServiceDescriptor({ id: 'c', 'request-queue': 'a', 'response-queue': 'b' });
    assert.deepEqual(none.configParams, []);
    assert.deepEqual(parseToolServiceDescriptor(formatToolServiceDescriptor(parsed)), parsed);
  });

  test('rejects malformed service descriptors with precise messages', () => {
    assert.throws(() => parseToolServiceDescriptor(null), invalid(/must be a JSON object, got null/));
    assert.throws(
      () =>
        parseToolServiceDescriptor({
          id: 'x',
          'request-queue': 'request:tg:x',
          'response-queue': 'response:tg:x',
          delivery: 'persistent',
        }),
      invalid(/tool service 'x': field 'delivery' must be "request-response" or "durable", got "persistent"/),
    );
    assert.throws(() => parseToolServiceDescriptor('{'), invalid(/not valid JSON/));
    assert.throws(
      () =>
        parseToolServiceDescriptor({
          id: 'loop',
          'request-queue': 'non-persistent://tg/request/loop',
          'response-queue': 'request:tg:loop',
        }),
      invalid(/tool service 'loop': request queue and response queue are the same topic 'request:tg:loop'/),
    );
    assert.throws(
      () => parseToolServiceDescriptor({ 'request-queue': 'a' }),
      invalid(/field 'id' must be a non-empty string/),
    );
    assert.throws(
      () => parseToolServiceDescriptor({ id: 'x', 'response-queue': 'b' }),
      invalid(/tool service 'x': field 'request-queue' must be a topic name/),
    );
    assert.throws(
      () => parseToolServiceDescriptor({ id: 'x', 'request-queue': 'bad topic', 'response-queue': 'b' }),
      invalid(/'request-queue'.*not a valid topic/),
    );
    assert.throws(
      () =>
        parseToolServiceDescriptor({
          id: 'x',
          'request-queue': 'a',
          'response-queue': 'b',
          'config-params': [{ name: 'c', required: 'yes' }],
        }),
      invalid(/'config-params\[0\].required' \(param 'c'\) must be a boolean/),
    );
    assert.throws(
      () =>
        parseToolServiceDescriptor({
          id: 'x',
          'request-queue': 'a',
          'response-queue': 'b',
          'config-params': ['name'],
        }),
      invalid(/config param 'name' clashes/),
    );
  });

  test('parses the seed tell-joke descriptor: arguments required by default, config values kept', () => {
    assert.deepEqual(parseToolServiceToolDescriptor(example('tell-joke.json')), {
      name: 'tell-joke',
      idempotent: false,
      description: 'Tell a joke on a given topic',
      service: 'joke-service',
      arguments: [
        {
          name: 'topic',
          type: 'string',
          description: 'The topic for the joke (e.g., programming, animals, food)',
          required: true,
        },
      ],
      values: { style: 'pun' },
    });
    const parsed = parseToolServiceToolDescriptor(example('tell-dad-joke.json'));
    assert.deepEqual(parseToolServiceToolDescriptor(formatToolServiceToolDescriptor(parsed)), parsed);
  });

  test('a "__proto__" key of a tool descriptor is kept as a value, not made the prototype of values', () => {
    // JSON.parse makes "__proto__" an own key, as a config store or the bus delivers it.
    const parsed = parseToolServiceToolDescriptor(
      JSON.parse(
        '{"type":"tool-service","name":"t","description":"d","service":"s","__proto__":{"polluted":true}}',
      ),
    );
    assert.equal(Object.getPrototypeOf(parsed.values), Object.prototype);
    assert.equal((parsed.values as { polluted?: unknown }).polluted, undefined);
    assert.deepEqual(Object.keys(parsed.values), ['__proto__']);
    assert.deepEqual(Object.getOwnPropertyDescriptor(parsed.values, '__proto__')?.value, { polluted: true });
    assert.match(JSON.stringify(formatToolServiceToolDescriptor(parsed)), /"__proto__":\{"polluted":true\}/);
  });

  test('rejects malformed tool descriptors with precise messages', () => {
    const base = { type: 'tool-service', name: 't', description: 'd', service: 's' };
    assert.throws(
      () => parseToolServiceToolDescriptor({ ...base, name: 'has space' }),
      invalid(/field 'name' must match/),
    );
    assert.throws(
      () => parseToolServiceToolDescriptor({ ...base, type: 'mcp-tool' }),
      invalid(/tool 't': field 'type' must be "tool-service"/),
    );
    assert.throws(
      () => parseToolServiceToolDescriptor({ ...base, service: undefined }),
      invalid(/field 'service' must name a tool service, got nothing/),
    );
    assert.throws(
      () =>
        parseToolServiceToolDescriptor({
          ...base,
          arguments: [{ name: 'a', type: 'date', description: '' }],
        }),
      invalid(
        /argument 'a' has type "date"; expected one of string, number, integer, boolean, object, array/,
      ),
    );
    assert.throws(
      () =>
        parseToolServiceToolDescriptor({
          ...base,
          arguments: [
            { name: 'a', type: 'string' },
            { name: 'a', type: 'number' },
          ],
        }),
      invalid(/argument 'a' is listed twice/),
    );
  });

  test('an argument may list the values it takes (enum): kept, round-tripped, checked against its type', () => {
    const base = { type: 'tool-service', name: 't', description: 'd', service: 's' };
    const parsed = parseToolServiceToolDescriptor({
      ...base,
      arguments: [
        { name: 'style', type: 'string', description: 'How', enum: ['pun', 'dad'] },
        { name: 'n', type: 'integer', description: 'Count', enum: [1, 2] },
      ],
    });
    assert.deepEqual(parsed.arguments[0]?.enum, ['pun', 'dad']);
    assert.deepEqual(formatToolServiceToolDescriptor(parsed)['arguments'], [
      { name: 'style', type: 'string', description: 'How', enum: ['pun', 'dad'] },
      { name: 'n', type: 'integer', description: 'Count', enum: [1, 2] },
    ]);
    const bad = (arg: Record<string, unknown>) => () =>
      parseToolServiceToolDescriptor({ ...base, arguments: [{ name: 'a', description: '', ...arg }] });
    assert.throws(
      bad({ type: 'string', enum: [] }),
      invalid(/argument 'a': 'enum' must be a non-empty array/),
    );
    assert.throws(bad({ type: 'string', enum: ['x', 3] }), invalid(/'enum' holds number 3, not a string/));
    assert.throws(bad({ type: 'integer', enum: [1.5] }), invalid(/'enum' holds number 1.5, not an integer/));
    assert.throws(
      bad({ type: 'object', enum: ['x'] }),
      invalid(/'enum' is for string, number, integer and boolean/),
    );
    assert.throws(bad({ type: 'string', enum: ['x', 'x'] }), invalid(/'enum' lists a value twice/));
  });
});
