import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createNullNormalizer } from './null-normalizer.js';
import { createValidator, type ValidationResult } from './index.js';

/** A record of objects whose `note` is optional, so a `null` there is removed (a copy is made). */
const recordSchema = {
  type: 'object',
  properties: {
    tags: {
      type: 'object',
      additionalProperties: { type: 'object', properties: { note: { type: 'string' } } },
    },
  },
} as const;

describe('a model-sent __proto__ key stays an own data property', () => {
  test('in a record whose value is normalised, the copy keeps its prototype', () => {
    const normalize = createNullNormalizer(recordSchema);
    const args = JSON.parse('{"tags":{"__proto__":{"note":null,"isAdmin":true}}}') as unknown;
    const out = normalize(args) as { tags: Record<string, unknown> };
    assert.notEqual(out, args);
    assert.equal(Object.getPrototypeOf(out.tags), Object.prototype);
    assert.equal(Object.hasOwn(out.tags, '__proto__'), true);
    assert.equal(out.tags['isAdmin'], undefined);
    assert.deepEqual(Object.getOwnPropertyDescriptor(out.tags, '__proto__')?.value, { isAdmin: true });
  });

  test('in a strict-mode { key, value } entry list turned back into a record', () => {
    const normalize = createNullNormalizer(recordSchema);
    const out = normalize({ tags: [{ key: '__proto__', value: { isAdmin: true } }] }) as {
      tags: Record<string, unknown>;
    };
    assert.equal(Object.getPrototypeOf(out.tags), Object.prototype);
    assert.equal(out.tags['isAdmin'], undefined);
    assert.deepEqual(Object.keys(out.tags), ['__proto__']);
  });

  test('the validated value a tool receives has no inherited properties', async () => {
    const validate = createValidator(recordSchema);
    const result: ValidationResult = await validate({
      tags: [{ key: '__proto__', value: { isAdmin: true } }],
    });
    assert.equal(result.ok, true);
    const tags = (result.ok ? result.value : {}) as { tags: Record<string, unknown> };
    assert.equal(Object.getPrototypeOf(tags.tags), Object.prototype);
    assert.equal('isAdmin' in tags.tags, false);
  });
});
