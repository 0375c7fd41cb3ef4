import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { toParametersSchema } from './index.js';

describe('toParametersSchema: raw JSON Schema from a remote server', () => {
  test("a '__proto__' key is copied as an own key, never as the copy's prototype", () => {
    // JSON.parse (as for an MCP server's tools/list answer) makes '__proto__' an ordinary own key.
    const remote = JSON.parse(
      '{"type": "object", "properties": {"city": {"type": "string"}}, ' +
        '"__proto__": {"properties": {"evil": {"type": "string"}}, "required": ["evil"]}}',
    ) as Record<string, unknown>;
    const schema = toParametersSchema(remote);
    assert.equal(Object.getPrototypeOf(schema), Object.prototype);
    assert.deepEqual(Object.keys(schema.properties), ['city']);
    assert.deepEqual(schema.required, []);
    assert.ok(Object.hasOwn(schema, '__proto__'));
  });

  test("a property named '__proto__' stays a declared property", () => {
    const remote = JSON.parse(
      '{"type": "object", "properties": {"__proto__": {"type": "string"}}, "required": ["__proto__"]}',
    ) as Record<string, unknown>;
    const schema = toParametersSchema(remote);
    assert.deepEqual(Object.keys(schema.properties), ['__proto__']);
    assert.equal(Object.getPrototypeOf(schema.properties), Object.prototype);
  });
});

test('flat object schemas skip the meta-schema check; anything else, or a bad one, still gets it', () => {
  const flat = {
    type: 'object',
    properties: { topic: { type: 'string', description: 'What about' } },
    required: ['topic'],
    additionalProperties: false,
  } as const;
  assert.deepEqual(toParametersSchema(flat).required, ['topic']);
  // Duplicates in 'required' are not flat-valid: the meta-schema check reports them.
  assert.throws(() => toParametersSchema({ ...flat, required: ['topic', 'topic'] }), {
    code: 'invalid-schema',
  });
  assert.throws(() => toParametersSchema({ type: 'object', properties: { a: { type: 'strng' } } }), {
    code: 'invalid-schema',
  });
});

test('a value JSON cannot hold is refused with invalid-schema naming where it is', () => {
  const source = {
    type: 'object',
    properties: { a: { type: 'number', minimum: Number.NaN }, b: { enum: ['x', () => 'y'] } },
  };
  assert.throws(() => toParametersSchema(source), {
    code: 'invalid-schema',
    message: "parameters: the value at '/properties/a/minimum' is not JSON (got number)",
  });
  const copy = toParametersSchema({ type: 'object', properties: { a: { enum: [1, 'x', null, true] } } });
  assert.deepEqual(copy.properties, { a: { enum: [1, 'x', null, true] } });
});
