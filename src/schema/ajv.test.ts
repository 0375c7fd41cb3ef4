import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_CACHED_VALIDATORS, jsonSchemaCompiler } from './ajv.js';
import { createValidator } from './validator.js';

const schema = (n: number): { [key: string]: unknown } => ({
  type: 'object',
  properties: { a: { type: 'number', minimum: n } },
  required: ['a'],
});

test('equal schemas share one compiled validator, whichever object they come in', () => {
  const first = jsonSchemaCompiler.compile(schema(-1) as never);
  assert.equal(jsonSchemaCompiler.compile(schema(-1) as never), first, 'a copy of the same schema');
  assert.notEqual(jsonSchemaCompiler.compile(schema(-2) as never), first, 'a different schema');
});

test('the validator cache is bounded: the least recently used schema is compiled again', () => {
  const kept = jsonSchemaCompiler.compile(schema(1_000_000) as never);
  const evicted = jsonSchemaCompiler.compile(schema(1_000_001) as never);
  for (let i = 0; i < MAX_CACHED_VALIDATORS - 1; i++) {
    jsonSchemaCompiler.compile(schema(2_000_000 + i) as never);
    // Used again now and then, so it stays among the most recently used.
    if (i % 100 === 0) assert.equal(jsonSchemaCompiler.compile(schema(1_000_000) as never), kept);
  }
  assert.equal(jsonSchemaCompiler.compile(schema(1_000_000) as never), kept);
  assert.notEqual(jsonSchemaCompiler.compile(schema(1_000_001) as never), evicted);
});

test('tools sharing a raw schema get their own results (Ajv errors do not leak between them)', () => {
  const parameters = {
    type: 'object',
    properties: { n: { type: 'number' }, tag: { type: 'string', default: 'x' } },
    required: ['n'],
  };
  const one = createValidator(structuredClone(parameters));
  const two = createValidator(structuredClone(parameters));
  const bad = one({ n: 'one' });
  assert.deepEqual(two({ n: 2 }), { ok: true, value: { n: 2, tag: 'x' } });
  assert.equal((bad as { ok: boolean }).ok, false);
  assert.deepEqual(
    (bad as { issues: { path: string; received?: string }[] }).issues.map((i) => [i.path, i.received]),
    [['n', 'string']],
  );
  const args = { n: 3 };
  assert.deepEqual(one(args), { ok: true, value: { n: 3, tag: 'x' } });
  assert.deepEqual(args, { n: 3 }, "defaults are never written into the caller's object");
});
