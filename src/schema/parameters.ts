/**
 * @module Turns a tool's `parameters` (zod, any Standard JSON Schema, or raw JSON Schema) into the
 * object JSON Schema a function-calling API expects.
 */
import type { StandardJSONSchemaV1, StandardSchemaV1 } from '@standard-schema/spec';
import { z } from 'zod';
import { ToolbusError } from '../errors/index.js';
import { jsonSchemaCompiler } from './ajv.js';
import type { JsonObject, JsonSchema, JsonValue, ObjectJsonSchema } from './json.js';
import { setOwn } from './own-property.js';

/** A zod v4 schema (any `z.*` type; tools use `z.object`). */
export type ZodSchema = z.ZodType;

/** A Standard Schema that can also describe itself as JSON Schema (zod ≥ 4.2, ArkType, Valibot). */
export type StandardJsonSchema = StandardSchemaV1 & StandardJSONSchemaV1;

/** A raw JSON Schema object, as written by hand or received from an MCP server. */
export type RawJsonSchema = { readonly [key: string]: unknown };

/**
 * What a tool's `parameters` may be: a zod object, any Standard Schema with JSON Schema output, or a raw
 * JSON Schema object (validated with Ajv).
 */
export type ParametersSource = ZodSchema | StandardJsonSchema | RawJsonSchema;

/** The kind of a {@link ParametersSource}. */
export const SchemaKind = {
  Zod: 'zod',
  Standard: 'standard',
  JsonSchema: 'json-schema',
} as const;
/** One of {@link SchemaKind}'s values. */
export type SchemaKind = (typeof SchemaKind)[keyof typeof SchemaKind];

/** True for a zod v4 schema. */
export function isZodSchema(value: unknown): value is ZodSchema {
  return typeof value === 'object' && value !== null && '_zod' in value && '~standard' in value;
}

/** True for a Standard Schema that can emit JSON Schema (`~standard.jsonSchema.input`). */
export function isStandardJsonSchema(value: unknown): value is StandardJsonSchema {
  if (typeof value !== 'object' || value === null || !('~standard' in value)) return false;
  const standard = (value as { '~standard': unknown })['~standard'];
  if (typeof standard !== 'object' || standard === null) return false;
  const json = (standard as { jsonSchema?: unknown }).jsonSchema;
  return (
    typeof json === 'object' &&
    json !== null &&
    typeof (json as { input?: unknown }).input === 'function' &&
    typeof (standard as { validate?: unknown }).validate === 'function'
  );
}

/** Tells which kind of source `parameters` is. */
export function schemaKindOf(parameters: ParametersSource): SchemaKind {
  if (isZodSchema(parameters)) return SchemaKind.Zod;
  if (isStandardJsonSchema(parameters)) return SchemaKind.Standard;
  return SchemaKind.JsonSchema;
}

/** Top-level keys that describe the document, not the arguments, and are dropped from `parameters`. */
const DROPPED_TOP_LEVEL = new Set([
  '$schema',
  '$id',
  'title',
  'type',
  'properties',
  'required',
  'additionalProperties',
]);

/**
 * Converts a tool's parameters to the object schema sent to models:
 * `{ type: 'object', properties, required, additionalProperties: false, ... }`.
 *
 * - zod: `z.toJSONSchema(schema, { io: 'input' })`, the input side of transforms and defaults (what the
 *   model must send).
 * - Standard Schema: `~standard.jsonSchema.input({ target: 'draft-2020-12' })`.
 * - raw JSON Schema: checked against its meta-schema with Ajv; `$defs`/`$ref` kept as they are.
 *
 * Descriptions are kept everywhere; top-level `$schema`, `$id` and `title` are dropped. The result is a
 * fresh object (the source is never mutated) with a fixed key order, so output is deterministic.
 *
 * @throws {ToolbusError} `invalid-schema` when the source is not an object schema or is not valid JSON
 * Schema.
 * @example
 * ```ts
 * toParametersSchema(z.object({ ticker: z.string().describe('ticker') }));
 * // { type: 'object', properties: { ticker: { type: 'string', description: 'ticker' } },
 * //   required: ['ticker'], additionalProperties: false }
 * ```
 */
export function toParametersSchema(parameters: ParametersSource): ObjectJsonSchema {
  let raw: JsonObject;
  const kind = schemaKindOf(parameters);
  try {
    if (kind === SchemaKind.Zod) {
      raw = z.toJSONSchema(parameters as ZodSchema, { io: 'input', unrepresentable: 'any' }) as JsonObject;
    } else if (kind === SchemaKind.Standard) {
      raw = (parameters as StandardJsonSchema)['~standard'].jsonSchema.input({
        target: 'draft-2020-12',
      }) as JsonObject;
    } else {
      raw = toJsonObject(parameters as RawJsonSchema, '');
      const errors = isFlatObjectSchema(raw) ? [] : jsonSchemaCompiler.check(raw);
      if (errors.length > 0) {
        const detail = errors
          .slice(0, 5)
          .map((e) => `${e.instancePath || '(root)'} ${e.message ?? 'is invalid'}`)
          .join('; ');
        throw new ToolbusError('invalid-schema', `parameters: not a valid JSON Schema: ${detail}`);
      }
    }
  } catch (error) {
    if (error instanceof ToolbusError) throw error;
    throw new ToolbusError(
      'invalid-schema',
      `parameters: cannot convert the ${kind} schema to JSON Schema: ${(error as Error).message}`,
      { cause: error },
    );
  }
  return toObjectSchema(raw);
}

/** Normalises a converted schema to the `{ type: 'object', properties, required, additionalProperties }` shape. */
function toObjectSchema(raw: JsonObject): ObjectJsonSchema {
  const type = raw['type'];
  if (type !== undefined && type !== 'object') {
    throw new ToolbusError(
      'invalid-schema',
      `parameters: must be an object schema (type 'object'), got type ${JSON.stringify(type)}`,
    );
  }
  if (type === undefined && raw['properties'] === undefined) {
    const combinator = ['anyOf', 'oneOf', 'allOf'].find((k) => k in raw);
    if (combinator !== undefined) {
      throw new ToolbusError(
        'invalid-schema',
        `parameters: must be an object schema with 'properties', got a top-level '${combinator}'`,
      );
    }
  }
  const properties = raw['properties'] ?? {};
  if (typeof properties !== 'object' || properties === null || Array.isArray(properties)) {
    throw new ToolbusError('invalid-schema', `parameters: 'properties' must be an object`);
  }
  const required = raw['required'] ?? [];
  if (!Array.isArray(required) || !required.every((r) => typeof r === 'string')) {
    throw new ToolbusError('invalid-schema', `parameters: 'required' must be an array of property names`);
  }
  const out: ObjectJsonSchema = {
    type: 'object',
    properties: properties as { [key: string]: JsonValue },
    required: [...(required as string[])],
    additionalProperties: false,
  };
  for (const [key, value] of Object.entries(raw)) {
    if (!DROPPED_TOP_LEVEL.has(key)) setOwn(out, key, value);
  }
  return out;
}

/** Deep-copies a raw schema into plain JSON, rejecting values JSON cannot hold (the error names where). */
function toJsonObject(value: RawJsonSchema, path: string): JsonObject {
  try {
    return copyObject(value, undefined);
  } catch (error) {
    if (error !== NOT_JSON) throw error;
  }
  // Only now the paths: building one per node cost more than the copy (a registry copies thousands).
  return copyObject(value, path);
}

/** Thrown by a copy without paths; the copy is then made again with them, for the message. */
const NOT_JSON = Symbol('not JSON');

function copyObject(value: RawJsonSchema, path: string | undefined): JsonObject {
  const out: JsonObject = {};
  for (const key of Object.keys(value)) {
    setOwn(out, key, copyValue(value[key], path === undefined ? undefined : `${path}/${key}`));
  }
  return out;
}

function copyValue(value: unknown, path: string | undefined): JsonValue {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') {
    if (Number.isFinite(value)) return value;
  } else if (Array.isArray(value)) {
    return value.map((item, i) => copyValue(item, path === undefined ? undefined : `${path}/${i}`));
  } else if (typeof value === 'object') {
    return copyObject(value as RawJsonSchema, path);
  }
  if (path === undefined) throw NOT_JSON;
  throw new ToolbusError(
    'invalid-schema',
    `parameters: the value at '${path || '/'}' is not JSON (got ${typeof value})`,
  );
}

export type { JsonSchema };

const FLAT_TYPES = new Set(['string', 'number', 'integer', 'boolean', 'object', 'array', 'null']);
const has = (o: JsonObject, allowed: readonly string[]): boolean =>
  Object.keys(o).every((k) => allowed.includes(k));
const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * True for the flat object schemas config tools are built from (`argumentsToJsonSchema`): valid under
 * every draft's meta-schema by construction, so they need no Ajv check.
 */
function isFlatObjectSchema(raw: JsonObject): boolean {
  if (
    raw['type'] !== 'object' ||
    !has(raw, ['type', 'properties', 'required', 'additionalProperties', 'description', 'title'])
  )
    return false;
  if ('description' in raw && typeof raw['description'] !== 'string') return false;
  if ('title' in raw && typeof raw['title'] !== 'string') return false;
  if ('additionalProperties' in raw && typeof raw['additionalProperties'] !== 'boolean') return false;
  const required = raw['required'];
  if (
    required !== undefined &&
    !(
      Array.isArray(required) &&
      required.every((r) => typeof r === 'string') &&
      new Set(required).size === required.length
    )
  ) {
    return false;
  }
  const properties = raw['properties'];
  if (properties === undefined) return true;
  if (!isObject(properties)) return false;
  return Object.values(properties).every((p) => {
    if (!isObject(p) || !has(p, ['type', 'description', 'title', 'items'])) return false;
    if (typeof p['type'] !== 'string' || !FLAT_TYPES.has(p['type'])) return false;
    if ('description' in p && typeof p['description'] !== 'string') return false;
    if ('title' in p && typeof p['title'] !== 'string') return false;
    return !('items' in p) || (isObject(p['items']) && Object.keys(p['items']).length === 0);
  });
}
