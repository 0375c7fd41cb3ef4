import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { createValidator, type ValidationResult } from './index.js';

async function check(v: ValidationResult | Promise<ValidationResult>): Promise<ValidationResult> {
  return v;
}

describe('strict-mode nulls are treated as absent before validation', () => {
  const schema = z.object({
    city: z.string().describe('City'),
    limit: z.number().default(5).describe('Limit'),
    note: z.string().optional(),
    when: z.string().nullable(),
    address: z.object({ zip: z.string().optional(), street: z.string() }).optional(),
    tags: z.array(z.object({ key: z.string(), value: z.string().optional() })).optional(),
  });
  const validate = createValidator(schema);

  test('a null for an optional property is dropped, so its default applies', async () => {
    const args = { city: 'Lima', limit: null, note: null, when: null, address: null, tags: null };
    const result = await check(validate(args));
    assert.deepEqual(result, { ok: true, value: { city: 'Lima', limit: 5, when: null } });
    // The caller's object is not mutated.
    assert.equal(args.limit, null);
  });

  test('nulls inside nested objects and array items are normalised too', async () => {
    const result = await check(
      validate({
        city: 'x',
        when: 'today',
        address: { zip: null, street: 'Main' },
        tags: [{ key: 'a', value: null }],
      }),
    );
    assert.deepEqual(result, {
      ok: true,
      value: { city: 'x', limit: 5, when: 'today', address: { street: 'Main' }, tags: [{ key: 'a' }] },
    });
  });

  test('a null for a required, non-nullable property still fails, naming path, expected and received', async () => {
    const result = await check(validate({ city: null, when: null }));
    assert.equal(result.ok, false);
    assert.deepEqual(
      !result.ok && result.issues.map(({ path, expected, received }) => ({ path, expected, received })),
      [{ path: 'city', expected: 'string', received: 'null' }],
    );
  });

  test('normalisation can be turned off', async () => {
    const strictNulls = createValidator(schema, { normalizeNulls: false });
    const result = await check(strictNulls({ city: 'x', when: null, note: null }));
    assert.equal(result.ok, false);
    assert.equal(!result.ok && result.issues[0]?.path, 'note');
  });

  test('raw JSON Schema: null for an optional property is absent; for a nullable one it stays', async () => {
    const raw = createValidator({
      type: 'object',
      properties: { a: { type: 'string' }, b: { type: ['string', 'null'] } },
      required: [],
    });
    assert.deepEqual(await check(raw({ a: null, b: null })), { ok: true, value: { b: null } });
  });

  test("raw JSON Schema defaults never write into the caller's nested objects, also after a null was dropped", async () => {
    const raw = createValidator({
      type: 'object',
      properties: {
        a: { type: 'string' },
        inner: { type: 'object', properties: { n: { type: 'number', default: 5 } } },
      },
    });
    const args = { a: null, inner: {} };
    assert.deepEqual(await check(raw(args)), { ok: true, value: { inner: { n: 5 } } });
    assert.deepEqual(args, { a: null, inner: {} });
  });
});

describe('zod validation', () => {
  test('returns the parsed output (transforms and defaults applied)', async () => {
    const validate = createValidator(
      z.object({ n: z.string().transform((s) => s.length), d: z.boolean().default(true) }),
    );
    assert.deepEqual(await check(validate({ n: 'abc' })), { ok: true, value: { n: 3, d: true } });
  });

  test('async refinements are supported', async () => {
    const validate = createValidator(
      z.object({ id: z.string().refine(async (s) => s.startsWith('u-'), 'must start with u-') }),
    );
    assert.deepEqual(await check(validate({ id: 'u-1' })), { ok: true, value: { id: 'u-1' } });
    const bad = await check(validate({ id: 'x' }));
    assert.equal(!bad.ok && bad.issues[0]?.message, 'must start with u-');
  });

  test('enum failures say which values are allowed and what came', async () => {
    const validate = createValidator(z.object({ unit: z.enum(['c', 'f']) }));
    const bad = await check(validate({ unit: 'k' }));
    assert.deepEqual(!bad.ok && bad.issues[0], {
      path: 'unit',
      message: bad.ok ? '' : bad.issues[0]?.message,
      expected: 'one of "c", "f"',
      received: '"k"',
    });
  });

  test('array paths use [index]', async () => {
    const validate = createValidator(z.object({ items: z.array(z.object({ n: z.number() })) }));
    const bad = await check(validate({ items: [{ n: 1 }, { n: 'two' }] }));
    assert.equal(!bad.ok && bad.issues[0]?.path, 'items[1].n');
  });
});

describe('a property the schema does not allow', () => {
  test('raw JSON Schema (additionalProperties: false): the issue names the key and the allowed names', async () => {
    const validate = createValidator({
      type: 'object',
      properties: { topic: { type: 'string' } },
      required: ['topic'],
      additionalProperties: false,
    });
    const bad = await check(validate({ topic: 'x', top: 'cats' }));
    assert.deepEqual(!bad.ok && bad.issues, [
      { path: 'top', message: 'is not an allowed property', received: 'string', allowed: ['topic'] },
    ]);
  });

  test('raw JSON Schema: a nested closed object lists its own names (through $ref)', async () => {
    const validate = createValidator({
      type: 'object',
      properties: { where: { $ref: '#/$defs/place' } },
      $defs: {
        place: {
          type: 'object',
          properties: { city: { type: 'string' }, zip: { type: 'string' } },
          additionalProperties: false,
        },
      },
      additionalProperties: false,
    });
    const bad = await check(validate({ where: { town: 'Lima' } }));
    assert.deepEqual(!bad.ok && bad.issues.map(({ path, allowed }) => ({ path, allowed })), [
      { path: 'where.town', allowed: ['city', 'zip'] },
    ]);
  });

  test('raw JSON Schema 2020-12 (unevaluatedProperties: false): the same issue, names from allOf too', async () => {
    const validate = createValidator({
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      properties: { topic: { type: 'string' } },
      allOf: [{ properties: { n: { type: 'number' } } }],
      unevaluatedProperties: false,
    });
    const bad = await check(validate({ topic: 'x', top: 'cats' }));
    assert.deepEqual(!bad.ok && bad.issues, [
      { path: 'top', message: 'is not an allowed property', received: 'string', allowed: ['topic', 'n'] },
    ]);
  });

  test('zod strict object: one issue per unknown key, each with the allowed names', async () => {
    const validate = createValidator(
      z.strictObject({ topic: z.string(), inner: z.strictObject({ a: z.number() }).optional() }),
    );
    const bad = await check(validate({ topic: 'x', top: 1, tpc: 2, inner: { a: 1, b: 1 } }));
    assert.deepEqual(!bad.ok && bad.issues.map(({ path, allowed }) => ({ path, allowed })), [
      { path: 'inner.b', allowed: ['a'] },
      { path: 'top', allowed: ['topic', 'inner'] },
      { path: 'tpc', allowed: ['topic', 'inner'] },
    ]);
  });
});
