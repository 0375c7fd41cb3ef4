/**
 * @module Argument validation for every kind of schema, with one issue format.
 */
import type { StandardSchemaV1 } from '@standard-schema/spec';
import { z } from 'zod';
import { jsonSchemaCompiler, type AjvError, type AjvValidate } from './ajv.js';
import type { JsonObject, JsonValue, ObjectJsonSchema } from './json.js';
import { createNullNormalizer, localRefTarget, type NullNormalizer } from './null-normalizer.js';
import {
  SchemaKind,
  schemaKindOf,
  toParametersSchema,
  type ParametersSource,
  type StandardJsonSchema,
  type ZodSchema,
} from './parameters.js';

/** One reason a value failed validation. */
export interface ValidationIssue {
  /** Where, as `a.b[0].c`; `''` for the whole value. */
  path: string;
  /** What was wrong, in the validator's words. */
  message: string;
  /** What was expected there, e.g. `string` or `one of "a", "b"`. */
  expected?: string;
  /** What came, e.g. `number`, `null`, `missing`. */
  received?: string;
  /**
   * Set when the issue is a property the schema does not allow (`path` names it): the property names
   * the schema accepts at that place, so the model can be told what it should have sent.
   */
  allowed?: string[];
}

/** The outcome of a {@link Validator}. `value` is the validated (and, for zod, parsed) value. */
export type ValidationResult = { ok: true; value: unknown } | { ok: false; issues: ValidationIssue[] };

/**
 * Validates one value. Synchronous for zod (without async refinements) and raw JSON Schema; a Standard
 * Schema may answer with a promise.
 */
export type Validator = (value: unknown) => ValidationResult | Promise<ValidationResult>;

/** Options of {@link createValidator}. */
export interface CreateValidatorOptions {
  /**
   * The JSON Schema of `source`, if already computed by {@link toParametersSchema}; used for the
   * null normalisation. @default computed from `source`
   */
  jsonSchema?: ObjectJsonSchema;
  /** Treat `null` sent for an optional, non-nullable property as absent. @default true */
  normalizeNulls?: boolean;
}

/**
 * Creates a validator for a tool's parameters. It first removes nulls sent for optional properties
 * (see `null-normalizer.ts`), then validates: zod schemas with zod (transforms and defaults apply, the
 * parsed output is returned), Standard Schemas with their `validate`, raw JSON Schema with Ajv
 * (`allErrors`, `useDefaults`; compiled on the first call, once per schema text: see `ajv.ts`).
 *
 * @throws {ToolbusError} `invalid-schema` when `source` cannot be compiled.
 * @example
 * ```ts
 * const validate = createValidator(z.object({ n: z.number() }));
 * validate({ n: 'x' }); // { ok: false, issues: [{ path: 'n', expected: 'number', received: 'string', ... }] }
 * ```
 */
export function createValidator(source: ParametersSource, options: CreateValidatorOptions = {}): Validator {
  const kind = schemaKindOf(source);
  const jsonSchema = options.jsonSchema ?? toParametersSchema(source);
  // The per-schema work (the null plan, and for raw JSON Schema the Ajv validator) is done on the first
  // call, not here: a registry start builds many tools and calls few of them. Schema errors are still
  // reported here, by toParametersSchema (which checks a raw schema against its meta-schema).
  let normalizer: NullNormalizer | undefined = options.normalizeNulls === false ? unchanged : undefined;
  const normalize = (value: unknown): unknown => (normalizer ??= createNullNormalizer(jsonSchema))(value);
  if (kind === SchemaKind.Zod) {
    const schema = source as ZodSchema;
    return (value) => {
      const input = normalize(value);
      let result: z.ZodSafeParseResult<unknown>;
      try {
        result = schema.safeParse(input);
      } catch (error) {
        if (error instanceof z.core.$ZodAsyncError) {
          return schema.safeParseAsync(input).then((r) => fromZod(r, input, jsonSchema));
        }
        throw error;
      }
      return fromZod(result, input, jsonSchema);
    };
  }
  if (kind === SchemaKind.Standard) {
    const standard = (source as StandardJsonSchema)['~standard'];
    return (value) => {
      const input = normalize(value);
      const result = standard.validate(input);
      return result instanceof Promise
        ? result.then((r) => fromStandard(r, input))
        : fromStandard(result, input);
    };
  }
  const raw = withoutTopLevelNoise(jsonSchema, source as JsonObject);
  let compiled: CompiledRaw | undefined;
  return (value) => {
    compiled ??= compileRaw(raw);
    let input = normalize(value);
    // Ajv's useDefaults writes into the value; never touch the caller's object. A normalised copy is
    // shallow (nested objects are still the caller's), so it is cloned too.
    if (compiled.hasDefaults && typeof input === 'object' && input !== null) input = structuredClone(input);
    const validate = compiled.validate;
    if (validate(input)) return { ok: true, value: input };
    return { ok: false, issues: fromAjv(validate.errors ?? [], input, raw) };
  };
}

const unchanged: NullNormalizer = (value) => value;

/** A raw schema's Ajv validator (shared by every tool with the same schema text) and whether it has defaults. */
interface CompiledRaw {
  validate: AjvValidate;
  hasDefaults: boolean;
}

function compileRaw(raw: JsonObject): CompiledRaw {
  const text = JSON.stringify(raw);
  return { validate: jsonSchemaCompiler.compile(raw, text), hasDefaults: text.includes('"default"') };
}

/**
 * The schema Ajv compiles for a raw source: the converted parameters plus the source's `$schema`, so
 * the draft is chosen correctly; `additionalProperties` is as the source had it (models may add keys).
 */
function withoutTopLevelNoise(parameters: ObjectJsonSchema, source: JsonObject): JsonObject {
  const out: JsonObject = { ...parameters };
  if (typeof source['$schema'] === 'string') out['$schema'] = source['$schema'];
  if ('additionalProperties' in source && source['additionalProperties'] !== undefined) {
    out['additionalProperties'] = source['additionalProperties'];
  } else {
    delete out['additionalProperties'];
  }
  return out;
}

function fromZod(result: z.ZodSafeParseResult<unknown>, input: unknown, root: JsonObject): ValidationResult {
  if (result.success) return { ok: true, value: result.data };
  return {
    ok: false,
    issues: result.error.issues.flatMap((issue) =>
      // A strict object reports all its unknown keys at once; name each one, as Ajv does.
      issue.code === 'unrecognized_keys'
        ? issue.keys.map((key) => notAllowed(issue.path, key, input, root))
        : [zodIssue(issue, input)],
    ),
  };
}

/** The issue for a property `key` of the object at `segments` that its schema does not allow. */
function notAllowed(
  segments: readonly PropertyKey[],
  key: string,
  input: unknown,
  root: JsonObject,
): ValidationIssue {
  return {
    path: formatPath([...segments, key]),
    message: 'is not an allowed property',
    received: describeValue(valueAt(input, [...segments, key])),
    allowed: propertyNamesAt(root, segments),
  };
}

/**
 * The property names the schema `root` declares for the object at `segments` (following `$ref`s,
 * `items` and the branches of unions), in schema order.
 */
function propertyNamesAt(root: JsonObject, segments: readonly PropertyKey[]): string[] {
  let schemas = expand(root, root, 0);
  for (const segment of segments) {
    const next: JsonObject[] = [];
    for (const s of schemas) {
      const properties = s['properties'];
      const child =
        typeof segment === 'number'
          ? s['items']
          : isJsonObject(properties) && Object.hasOwn(properties, segment)
            ? properties[String(segment)]
            : s['additionalProperties'];
      if (isJsonObject(child)) next.push(...expand(child, root, 0));
    }
    schemas = next;
  }
  const names = schemas.flatMap((s) => (isJsonObject(s['properties']) ? Object.keys(s['properties']) : []));
  return [...new Set(names)];
}

/** `schema` with local `$ref`s followed and `allOf`/`anyOf`/`oneOf` branches listed (bounded depth). */
function expand(schema: JsonObject, root: JsonObject, depth: number): JsonObject[] {
  if (depth > 8) return [];
  let s = schema;
  const ref = s['$ref'];
  if (typeof ref === 'string' && ref.startsWith('#')) {
    const target = localRefTarget(ref, root);
    if (target === undefined) return [];
    s = target;
    if (typeof s['$ref'] === 'string') return expand(s, root, depth + 1);
  }
  const out = [s];
  for (const key of ['allOf', 'anyOf', 'oneOf'] as const) {
    const branches = s[key];
    if (!Array.isArray(branches)) continue;
    for (const b of branches) if (isJsonObject(b)) out.push(...expand(b, root, depth + 1));
  }
  return out;
}

function isJsonObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function zodIssue(issue: z.core.$ZodIssue, input: unknown): ValidationIssue {
  const path = formatPath(issue.path);
  const out: ValidationIssue = { path, message: issue.message };
  switch (issue.code) {
    case 'invalid_type': {
      out.expected = issue.expected;
      out.received = describeValue(valueAt(input, issue.path));
      break;
    }
    case 'invalid_value': {
      out.expected =
        issue.values.length === 1
          ? JSON.stringify(issue.values[0])
          : `one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`;
      out.received = excerpt(valueAt(input, issue.path));
      break;
    }
    case 'invalid_union': {
      out.expected = 'one of the allowed shapes';
      out.received = describeValue(valueAt(input, issue.path));
      break;
    }
    default:
      break;
  }
  return out;
}

function fromStandard(result: StandardSchemaV1.Result<unknown>, input: unknown): ValidationResult {
  if (result.issues === undefined) return { ok: true, value: result.value };
  return {
    ok: false,
    issues: result.issues.map((issue) => {
      const segments = (issue.path ?? []).map((p) =>
        typeof p === 'object' && p !== null ? (p as StandardSchemaV1.PathSegment).key : p,
      );
      return {
        path: formatPath(segments),
        message: issue.message,
        received: describeValue(valueAt(input, segments)),
      };
    }),
  };
}

function fromAjv(errors: AjvError[], input: unknown, root: JsonObject): ValidationIssue[] {
  // A failed anyOf/oneOf also reports every branch's errors; keep only the summary for that place.
  const unions = errors.filter((e) => e.keyword === 'anyOf' || e.keyword === 'oneOf');
  const kept = errors.filter(
    (e) =>
      unions.includes(e) ||
      !unions.some(
        (u) =>
          e.schemaPath.startsWith(u.schemaPath.replace(/\/(anyOf|oneOf)$/, '/$1/')) &&
          e.instancePath.startsWith(u.instancePath),
      ),
  );
  const issues: ValidationIssue[] = [];
  for (const e of kept) {
    const segments = pointerToSegments(e.instancePath);
    const params = e.params as Record<string, unknown>;
    switch (e.keyword) {
      case 'required': {
        const missing = String(params['missingProperty']);
        issues.push({
          path: formatPath([...segments, missing]),
          message: 'is required',
          expected: 'a value',
          received: 'missing',
        });
        break;
      }
      case 'additionalProperties': {
        issues.push(notAllowed(segments, String(params['additionalProperty']), input, root));
        break;
      }
      // The 2020-12 way to close an object (it sees properties declared in allOf/$ref branches too):
      // the same issue, not Ajv's "must NOT have unevaluated properties" about the whole object.
      case 'unevaluatedProperties': {
        issues.push(notAllowed(segments, String(params['unevaluatedProperty']), input, root));
        break;
      }
      case 'type':
        issues.push({
          path: formatPath(segments),
          message: e.message ?? 'has the wrong type',
          expected: Array.isArray(params['type']) ? params['type'].join(' or ') : String(params['type']),
          received: describeValue(valueAt(input, segments)),
        });
        break;
      case 'enum':
        issues.push({
          path: formatPath(segments),
          message: e.message ?? 'is not an allowed value',
          expected: `one of ${(params['allowedValues'] as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`,
          received: excerpt(valueAt(input, segments)),
        });
        break;
      case 'const':
        issues.push({
          path: formatPath(segments),
          message: e.message ?? 'is not the allowed value',
          expected: JSON.stringify(params['allowedValue']),
          received: excerpt(valueAt(input, segments)),
        });
        break;
      case 'anyOf':
      case 'oneOf':
        issues.push({
          path: formatPath(segments),
          message: 'matches none of the allowed shapes',
          expected: 'one of the allowed shapes',
          received: describeValue(valueAt(input, segments)),
        });
        break;
      default:
        issues.push({
          path: formatPath(segments),
          message: e.message ?? `fails '${e.keyword}'`,
          received: excerpt(valueAt(input, segments)),
        });
    }
  }
  return issues;
}

function pointerToSegments(pointer: string): (string | number)[] {
  if (pointer === '') return [];
  return pointer
    .slice(1)
    .split('/')
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((p) => (/^\d+$/.test(p) ? Number(p) : p));
}

/** Formats a path as `a.b[0].c`. */
export function formatPath(segments: readonly PropertyKey[]): string {
  let out = '';
  for (const segment of segments) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else out += out === '' ? String(segment) : `.${String(segment)}`;
  }
  return out;
}

function valueAt(input: unknown, segments: readonly PropertyKey[]): unknown {
  let current = input;
  for (const segment of segments) {
    if (typeof current !== 'object' || current === null) return undefined;
    current = (current as Record<PropertyKey, unknown>)[segment];
  }
  return current;
}

/** Names the JSON type of a value: `string`, `number`, `integer`... `null`, `array`, `missing`. */
export function describeValue(value: unknown): string {
  if (value === undefined) return 'missing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

/** A short rendering of a received value (never a whole payload). */
function excerpt(value: unknown): string {
  if (value === undefined) return 'missing';
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 40 ? `${text.slice(0, 37)}...` : text;
}
