/**
 * Golden schemas: each source shape under the default profile and under openai-strict, for zod, a
 * non-zod Standard Schema and raw JSON Schema. Exact objects (key order included, via JSON text) so any
 * change in output is a visible diff.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { StandardJSONSchemaV1, StandardSchemaV1 } from '@standard-schema/spec';
import { z } from 'zod';
import { ToolbusError } from '../errors/index.js';
import { compileSchema, createValidator, toParametersSchema, type JsonObject } from './index.js';

/** Compares as JSON text so key order counts (output must be deterministic). */
function same(actual: unknown, expected: unknown): void {
  assert.equal(JSON.stringify(actual, null, 1), JSON.stringify(expected, null, 1));
}

interface GoldenCase {
  zod: z.ZodObject;
  default: JsonObject;
  strict: JsonObject;
}

const cases: Record<string, GoldenCase> = {
  'required, optional and default fields': {
    zod: z.object({
      ticker: z.string().describe('Ticker symbol'),
      limit: z.number().int().min(1).max(100).default(10).describe('How many'),
      note: z.string().max(200).optional().describe('Free note'),
    }),
    default: {
      type: 'object',
      properties: {
        ticker: { type: 'string', description: 'Ticker symbol' },
        limit: { default: 10, description: 'How many', type: 'integer', minimum: 1, maximum: 100 },
        note: { description: 'Free note', type: 'string', maxLength: 200 },
      },
      required: ['ticker'],
      additionalProperties: false,
    },
    strict: {
      type: 'object',
      properties: {
        ticker: { type: 'string', description: 'Ticker symbol' },
        limit: { description: 'How many (default: 10)', type: ['integer', 'null'], minimum: 1, maximum: 100 },
        note: { description: 'Free note', type: ['string', 'null'] },
      },
      required: ['ticker', 'limit', 'note'],
      additionalProperties: false,
    },
  },
  nullable: {
    zod: z.object({
      when: z.string().nullable().describe('Date or null'),
      maybe: z.number().nullable().optional().describe('Optional and nullable'),
    }),
    default: {
      type: 'object',
      properties: {
        when: { description: 'Date or null', type: ['string', 'null'] },
        maybe: { description: 'Optional and nullable', type: ['number', 'null'] },
      },
      required: ['when'],
      additionalProperties: false,
    },
    strict: {
      type: 'object',
      properties: {
        when: { description: 'Date or null', type: ['string', 'null'] },
        maybe: { description: 'Optional and nullable', type: ['number', 'null'] },
      },
      required: ['when', 'maybe'],
      additionalProperties: false,
    },
  },
  'enum and literal with a description': {
    zod: z.object({
      unit: z.enum(['c', 'f']).describe('Temperature unit'),
      kind: z.literal('weather').describe('Always weather'),
      mode: z.enum(['fast', 'slow']).optional().describe('Mode'),
    }),
    default: {
      type: 'object',
      properties: {
        unit: { type: 'string', enum: ['c', 'f'], description: 'Temperature unit' },
        kind: { type: 'string', const: 'weather', description: 'Always weather' },
        mode: { description: 'Mode', type: 'string', enum: ['fast', 'slow'] },
      },
      required: ['unit', 'kind'],
      additionalProperties: false,
    },
    strict: {
      type: 'object',
      properties: {
        unit: { type: 'string', enum: ['c', 'f'], description: 'Temperature unit' },
        kind: { type: 'string', const: 'weather', description: 'Always weather' },
        mode: { anyOf: [{ type: 'string', enum: ['fast', 'slow'] }, { type: 'null' }], description: 'Mode' },
      },
      required: ['unit', 'kind', 'mode'],
      additionalProperties: false,
    },
  },
  'nested objects and arrays of objects': {
    zod: z.object({
      address: z
        .object({ city: z.string().describe('City'), zip: z.string().optional().describe('Zip') })
        .describe('Postal address'),
      tags: z
        .array(
          z
            .object({
              key: z.string().describe('Tag key'),
              value: z.string().optional().describe('Tag value'),
            })
            .describe('A tag'),
        )
        .describe('Tags'),
    }),
    default: {
      type: 'object',
      properties: {
        address: {
          type: 'object',
          properties: {
            city: { type: 'string', description: 'City' },
            zip: { description: 'Zip', type: 'string' },
          },
          required: ['city'],
          description: 'Postal address',
        },
        tags: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              key: { type: 'string', description: 'Tag key' },
              value: { description: 'Tag value', type: 'string' },
            },
            required: ['key'],
            description: 'A tag',
          },
          description: 'Tags',
        },
      },
      required: ['address', 'tags'],
      additionalProperties: false,
    },
    strict: {
      type: 'object',
      properties: {
        address: {
          type: 'object',
          properties: {
            city: { type: 'string', description: 'City' },
            zip: { description: 'Zip', type: ['string', 'null'] },
          },
          required: ['city', 'zip'],
          additionalProperties: false,
          description: 'Postal address',
        },
        tags: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              key: { type: 'string', description: 'Tag key' },
              value: { description: 'Tag value', type: ['string', 'null'] },
            },
            required: ['key', 'value'],
            additionalProperties: false,
            description: 'A tag',
          },
          description: 'Tags',
        },
      },
      required: ['address', 'tags'],
      additionalProperties: false,
    },
  },
  unions: {
    zod: z.object({
      target: z
        .union([z.string().describe('A name'), z.object({ id: z.number().describe('An id') })])
        .describe('Name or id'),
      either: z.union([z.string(), z.number()]).optional().describe('Text or number'),
    }),
    default: {
      type: 'object',
      properties: {
        target: {
          anyOf: [
            { type: 'string', description: 'A name' },
            {
              type: 'object',
              properties: { id: { type: 'number', description: 'An id' } },
              required: ['id'],
            },
          ],
          description: 'Name or id',
        },
        either: { description: 'Text or number', type: ['string', 'number'] },
      },
      required: ['target'],
      additionalProperties: false,
    },
    strict: {
      type: 'object',
      properties: {
        target: {
          anyOf: [
            { type: 'string', description: 'A name' },
            {
              type: 'object',
              properties: { id: { type: 'number', description: 'An id' } },
              required: ['id'],
              additionalProperties: false,
            },
          ],
          description: 'Name or id',
        },
        either: { description: 'Text or number', type: ['string', 'number', 'null'] },
      },
      required: ['target', 'either'],
      additionalProperties: false,
    },
  },
};

describe('golden schemas: zod', () => {
  for (const [name, c] of Object.entries(cases)) {
    test(`${name}: default profile`, () => {
      same(toParametersSchema(c.zod), c.default);
    });
    test(`${name}: openai-strict profile`, () => {
      same(compileSchema(toParametersSchema(c.zod), 'openai-strict'), c.strict);
    });
  }

  test('records keep their value schema and description; openai-strict sends them as { key, value } entries', () => {
    const schema = z.object({ scores: z.record(z.string(), z.number()).describe('Scores by name') });
    same(toParametersSchema(schema), {
      type: 'object',
      properties: {
        scores: {
          type: 'object',
          propertyNames: { type: 'string' },
          additionalProperties: { type: 'number' },
          description: 'Scores by name',
        },
      },
      required: ['scores'],
      additionalProperties: false,
    });
    same(compileSchema(toParametersSchema(schema), 'openai-strict'), {
      type: 'object',
      properties: {
        scores: {
          type: 'array',
          items: {
            type: 'object',
            properties: { key: { type: 'string' }, value: { type: 'number' } },
            required: ['key', 'value'],
            additionalProperties: false,
          },
          description: 'Scores by name (a map, given as a list of { key, value } entries)',
        },
      },
      required: ['scores'],
      additionalProperties: false,
    });
    // Optional records become nullable entry lists.
    const optional = z.object({ tags: z.record(z.string(), z.string()).optional() });
    same(compileSchema(toParametersSchema(optional), 'openai-strict').properties, {
      tags: {
        anyOf: [
          {
            type: 'array',
            items: {
              type: 'object',
              properties: { key: { type: 'string' }, value: { type: 'string' } },
              required: ['key', 'value'],
              additionalProperties: false,
            },
          },
          { type: 'null' },
        ],
        description: 'a map, given as a list of { key, value } entries',
      },
    });
    // What strict mode still cannot express is refused by path.
    const freeForm = z.object({ meta: z.record(z.string(), z.unknown()) });
    assert.throws(
      () => compileSchema(toParametersSchema(freeForm), 'openai-strict'),
      (e: unknown) =>
        e instanceof ToolbusError &&
        e.code === 'unsupported' &&
        e.message.includes("a record of free-form values at 'meta'") &&
        e.message.includes('strict: false'),
    );
  });

  test('the input side of a transform is what the model sees', () => {
    const schema = z.object({
      count: z
        .string()
        .transform((s) => s.length)
        .describe('Any text'),
    });
    same(toParametersSchema(schema), {
      type: 'object',
      properties: { count: { description: 'Any text', type: 'string' } },
      required: ['count'],
      additionalProperties: false,
    });
  });

  test('output is deterministic: converting twice gives identical text', () => {
    for (const c of Object.values(cases)) {
      assert.equal(JSON.stringify(toParametersSchema(c.zod)), JSON.stringify(toParametersSchema(c.zod)));
    }
  });

  test('a non-object zod schema is refused with invalid-schema', () => {
    assert.throws(
      () => toParametersSchema(z.string()),
      (e: unknown) =>
        e instanceof ToolbusError && e.code === 'invalid-schema' && /type 'object'/.test(e.message),
    );
  });
});

/** A tiny Standard Schema (no zod): uppercases `city`, requires it to be a string. */
function tinyStandardSchema(): StandardSchemaV1<{ city: string }> & StandardJSONSchemaV1<{ city: string }> {
  const jsonSchema = {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    title: 'CityArgs',
    type: 'object',
    properties: {
      city: { type: 'string', description: 'City name' },
      units: { type: 'string', enum: ['metric', 'imperial'], description: 'Unit system' },
    },
    required: ['city'],
  };
  return {
    '~standard': {
      version: 1,
      vendor: 'tiny',
      validate(value: unknown) {
        const v = value as { city?: unknown; units?: unknown };
        if (typeof v !== 'object' || v === null || typeof v.city !== 'string') {
          return { issues: [{ message: 'city must be a string', path: ['city'] }] };
        }
        if (v.units !== undefined && v.units !== 'metric' && v.units !== 'imperial') {
          return { issues: [{ message: 'units must be metric or imperial', path: [{ key: 'units' }] }] };
        }
        return { value: { city: v.city.toUpperCase() } };
      },
      jsonSchema: {
        input: () => structuredClone(jsonSchema),
        output: () => structuredClone(jsonSchema),
      },
    },
  } as StandardSchemaV1<{ city: string }> & StandardJSONSchemaV1<{ city: string }>;
}

describe('golden schemas: non-zod Standard Schema', () => {
  const expectedDefault = {
    type: 'object',
    properties: {
      city: { type: 'string', description: 'City name' },
      units: { type: 'string', enum: ['metric', 'imperial'], description: 'Unit system' },
    },
    required: ['city'],
    additionalProperties: false,
  };

  test('default profile: $schema and title dropped, additionalProperties false added', () => {
    same(toParametersSchema(tinyStandardSchema()), expectedDefault);
  });

  test('openai-strict profile', () => {
    same(compileSchema(toParametersSchema(tinyStandardSchema()), 'openai-strict'), {
      type: 'object',
      properties: {
        city: { type: 'string', description: 'City name' },
        units: {
          anyOf: [{ type: 'string', enum: ['metric', 'imperial'] }, { type: 'null' }],
          description: 'Unit system',
        },
      },
      required: ['city', 'units'],
      additionalProperties: false,
    });
  });

  test("validation uses the schema's own validate (its output is returned) after null normalisation", async () => {
    const validate = createValidator(tinyStandardSchema());
    assert.deepEqual(await validate({ city: 'lima', units: null }), { ok: true, value: { city: 'LIMA' } });
    const bad = await validate({ city: 3 });
    assert.equal(bad.ok, false);
    assert.deepEqual(!bad.ok && bad.issues[0], {
      path: 'city',
      message: 'city must be a string',
      received: 'number',
    });
  });
});

describe('golden schemas: raw JSON Schema', () => {
  const raw = {
    $schema: 'http://json-schema.org/draft-07/schema#',
    title: 'SearchArgs',
    type: 'object',
    properties: {
      query: { type: 'string', minLength: 1, description: 'What to search for' },
      filter: { $ref: '#/definitions/Filter', description: 'Optional filter' },
      sort: { type: 'string', enum: ['new', 'top'], default: 'top', description: 'Sort order' },
      pages: {
        type: 'array',
        items: { $ref: '#/definitions/Page' },
        uniqueItems: true,
        description: 'Pages',
      },
    },
    required: ['query', 'pages'],
    definitions: {
      Filter: {
        type: 'object',
        description: 'A filter',
        properties: {
          lang: { type: 'string', description: 'Language code', format: 'iso-639' },
          since: { type: 'string', format: 'date', description: 'Since date' },
        },
        required: ['lang'],
      },
      Page: {
        type: 'object',
        properties: { n: { type: 'integer', description: 'Page number' } },
        required: ['n'],
      },
    },
  } as const;

  test('default profile keeps $ref/definitions and every description', () => {
    same(toParametersSchema(raw), {
      type: 'object',
      properties: raw.properties,
      required: ['query', 'pages'],
      additionalProperties: false,
      definitions: raw.definitions,
    });
  });

  test('openai-strict closes objects inside definitions and items, inlines $ref with siblings, removes unsupported keywords', () => {
    same(compileSchema(toParametersSchema(raw), 'openai-strict'), {
      type: 'object',
      properties: {
        query: { type: 'string', description: 'What to search for' },
        // A $ref with a sibling keyword is inlined (OpenAI refuses keywords beside $ref).
        filter: {
          anyOf: [
            {
              type: 'object',
              properties: {
                lang: { type: 'string', description: 'Language code' },
                since: { type: ['string', 'null'], format: 'date', description: 'Since date' },
              },
              required: ['lang', 'since'],
              additionalProperties: false,
            },
            { type: 'null' },
          ],
          description: 'Optional filter',
        },
        sort: {
          anyOf: [{ type: 'string', enum: ['new', 'top'] }, { type: 'null' }],
          description: 'Sort order (default: "top")',
        },
        pages: { type: 'array', items: { $ref: '#/definitions/Page' }, description: 'Pages' },
      },
      required: ['query', 'filter', 'sort', 'pages'],
      additionalProperties: false,
      definitions: {
        Filter: {
          type: 'object',
          properties: {
            lang: { type: 'string', description: 'Language code' },
            since: { type: ['string', 'null'], format: 'date', description: 'Since date' },
          },
          required: ['lang', 'since'],
          additionalProperties: false,
          description: 'A filter',
        },
        Page: {
          type: 'object',
          properties: { n: { type: 'integer', description: 'Page number' } },
          required: ['n'],
          additionalProperties: false,
        },
      },
    });
  });

  test('validated with Ajv through $ref, defaults applied, caller object untouched', () => {
    const validate = createValidator(raw);
    const args = { query: 'x', pages: [{ n: 1 }], filter: null };
    const ok = validate(args);
    assert.deepEqual(ok, { ok: true, value: { query: 'x', pages: [{ n: 1 }], sort: 'top' } });
    assert.deepEqual(args, { query: 'x', pages: [{ n: 1 }], filter: null });
    const bad = validate({ query: '', pages: [{ n: 'one' }], filter: { lang: 5 } });
    assert.ok(!(bad instanceof Promise) && !bad.ok);
    const byPath = Object.fromEntries(bad.issues.map((i) => [i.path, i]));
    assert.equal(byPath['pages[0].n']?.expected, 'integer');
    assert.equal(byPath['pages[0].n']?.received, 'string');
    assert.equal(byPath['filter.lang']?.received, 'number');
    assert.match(byPath['query']?.message ?? '', /fewer than 1/);
  });

  test('an invalid JSON Schema is refused with invalid-schema naming the problem', () => {
    assert.throws(
      () => toParametersSchema({ type: 'object', properties: { a: { type: 'strung' } } }),
      (e: unknown) =>
        e instanceof ToolbusError && e.code === 'invalid-schema' && e.message.includes('/properties/a/type'),
    );
  });

  test('a top-level anyOf is refused: parameters must be one object schema', () => {
    assert.throws(
      () => toParametersSchema({ anyOf: [{ type: 'object' }, { type: 'string' }] }),
      (e: unknown) =>
        e instanceof ToolbusError && e.code === 'invalid-schema' && e.message.includes("'anyOf'"),
    );
  });
});
