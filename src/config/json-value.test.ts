import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ToolbusError } from '../errors/index.js';
import { parseJsonValue, toJsonValue } from './index.js';
import { findJsonError } from '../schema/index.js';

describe('parseJsonValue', () => {
  test('parses valid JSON', () => {
    assert.deepEqual(parseJsonValue('{"a": [1, "x", null, true]}'), { a: [1, 'x', null, true] });
  });

  test('bad JSON rejects with invalid-config, the thing named, and the line/column/position', () => {
    assert.throws(
      () => parseJsonValue('{\n  "a": 1,\n}', { what: "config item 'tool/x'" }),
      (e: unknown) => {
        assert.ok(e instanceof ToolbusError);
        assert.equal(e.code, 'invalid-config');
        assert.match(
          e.message,
          /^config item 'tool\/x': invalid JSON at line 2, column 9 \(position 10\): trailing comma/,
        );
        return true;
      },
    );
  });

  for (const [text, line, column, reason] of [
    ['', 1, 1, /expected a value/],
    ['{"a" 1}', 1, 6, /expected ':'/],
    ["{'a': 1}", 1, 2, /double quotes/],
    ['[1, 2', 1, 6, /expected ',' or '\]'/],
    ['"abc', 1, 1, /unterminated string/],
    ['{"a": tru}', 1, 7, /expected a value/],
    ['1 2', 1, 3, /after the end/],
    ['[01]', 1, 3, /malformed number/],
  ] as const) {
    test(`finds the error in ${JSON.stringify(text)}`, () => {
      const where = findJsonError(text);
      assert.ok(where);
      assert.equal(where.line, line);
      assert.equal(where.column, column);
      assert.match(where.reason, reason);
    });
  }

  test('findJsonError agrees with JSON.parse on valid text', () => {
    for (const text of ['{}', '[]', '"\\u00e9\\n"', '-1.5e3', ' {"a":{"b":[null,false]}} ']) {
      assert.equal(findJsonError(text), undefined, text);
    }
  });
});

describe('toJsonValue', () => {
  test('deep-copies plain JSON and drops undefined properties', () => {
    const v = { a: [1], b: undefined };
    const out = toJsonValue(v);
    assert.deepEqual(out, { a: [1] });
    v.a.push(2);
    assert.deepEqual(out, { a: [1] });
  });

  test('rejects values with no JSON form, naming the path', () => {
    assert.throws(() => toJsonValue({ a: [NaN] }), { code: 'invalid-config', message: /'value\.a\[0\]'/ });
    assert.throws(() => toJsonValue({ d: new Date() }), { code: 'invalid-config', message: /plain object/ });
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    assert.throws(() => toJsonValue(cyclic), { code: 'invalid-config', message: /cycle/ });
  });
});

describe('nesting limit', () => {
  test('text or values nested deeper than MAX_JSON_DEPTH are refused with invalid-config naming the limit', () => {
    const deepText = '['.repeat(100_000) + ']'.repeat(100_000);
    assert.throws(() => parseJsonValue(deepText, { what: "config item 'tool/x'" }), {
      code: 'invalid-config',
      message: /config item 'tool\/x': nests deeper than 512 levels/,
    });
    let deep: unknown[] = [];
    for (let i = 0; i < 20_000; i++) deep = [deep];
    assert.throws(() => toJsonValue(deep), { code: 'invalid-config', message: /deeper than 512 levels/ });
    assert.ok(Array.isArray(parseJsonValue('['.repeat(512) + ']'.repeat(512))), 'the limit itself is fine');
  });
});

describe('__proto__ keys', () => {
  test('a parsed object with a "__proto__" key keeps it as data, as the same value written as text does', async () => {
    const parsed = JSON.parse('{"__proto__":{"a":1},"b":2}') as unknown;
    const copy = toJsonValue(parsed) as Record<string, unknown>;
    assert.deepEqual(Object.keys(copy), ['__proto__', 'b']);
    assert.equal(Object.getPrototypeOf(copy), Object.prototype);
    assert.equal((copy as { a?: unknown }).a, undefined, 'nothing inherited');
    const { MemoryConfigStore } = await import('./index.js');
    const store = new MemoryConfigStore();
    await store.put('tool', 'x', parsed as never);
    await store.put('tool', 'y', '{"__proto__":{"a":1},"b":2}');
    assert.equal(JSON.stringify((await store.get('tool', 'x'))?.value), '{"__proto__":{"a":1},"b":2}');
    assert.equal(JSON.stringify((await store.get('tool', 'y'))?.value), '{"__proto__":{"a":1},"b":2}');
    await store.close();
  });
});
