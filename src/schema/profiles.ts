/**
 * @module Schema profiles: one source schema compiled to what each provider accepts.
 */
import { ToolbusError } from '../errors/index.js';
import type { JsonObject, JsonValue, ObjectJsonSchema } from './json.js';
import { admitsNull, isRecordSchema, localRefTarget } from './null-normalizer.js';
import type { ToolSchema } from './tool-schema.js';

/** The provider dialects a schema can be compiled to. */
export const SchemaProfile = {
  /** The schema as converted: optional properties stay optional. */
  Default: 'default',
  /** OpenAI structured outputs (`strict: true`). */
  OpenAIStrict: 'openai-strict',
} as const;
/** One of {@link SchemaProfile}'s values. */
export type SchemaProfile = (typeof SchemaProfile)[keyof typeof SchemaProfile];

/**
 * Keywords OpenAI strict mode rejects, removed under `openai-strict`. Source: OpenAI "Structured Outputs
 * → Supported schemas" (platform.openai.com/docs/guides/structured-outputs#supported-schemas), which
 * lists as supported only: `type` (string, number, boolean, integer, object, array, null), `enum`,
 * `const`, `anyOf`, `$ref`/`$defs`, `description`, `title`; for strings `pattern` and `format`; for
 * numbers `multipleOf`, `maximum`, `exclusiveMaximum`, `minimum`, `exclusiveMinimum`; for arrays
 * `minItems`, `maxItems`; objects need `additionalProperties: false` and every property in `required`.
 * It lists as unsupported: strings `minLength`, `maxLength`; objects `patternProperties`,
 * `unevaluatedProperties`, `propertyNames`, `minProperties`, `maxProperties`; arrays
 * `unevaluatedItems`, `contains`, `minContains`, `maxContains`, `uniqueItems`; and composition with
 * `allOf`, `not`, `if`/`then`/`else`, `dependentRequired`, `dependentSchemas`. `default` is refused
 * ("'default' is not permitted"), as are `examples`, `$schema`, `$id`, `$comment`,
 * `contentEncoding`/`contentMediaType`, `readOnly`/`writeOnly`, `deprecated` and tuple `prefixItems`.
 */
const OPENAI_STRICT_REMOVED = new Set([
  'default',
  'examples',
  'minLength',
  'maxLength',
  'patternProperties',
  'unevaluatedProperties',
  'propertyNames',
  'minProperties',
  'maxProperties',
  'unevaluatedItems',
  'contains',
  'minContains',
  'maxContains',
  'uniqueItems',
  'not',
  'if',
  'then',
  'else',
  'dependentRequired',
  'dependentSchemas',
  'dependencies',
  '$schema',
  '$id',
  '$comment',
  'contentEncoding',
  'contentMediaType',
  'readOnly',
  'writeOnly',
  'deprecated',
]);

/** The `format` values OpenAI strict mode accepts (same source); any other `format` is removed. */
const OPENAI_STRICT_FORMATS = new Set([
  'date-time',
  'time',
  'date',
  'duration',
  'email',
  'hostname',
  'ipv4',
  'ipv6',
  'uuid',
]);

/**
 * Compiles a tool schema (or just its `parameters`) to a provider profile, returning a new object.
 *
 * `openai-strict`: every property is listed in `required`; a property that was optional becomes
 * nullable (`type: [T, 'null']`, or `anyOf: [..., { type: 'null' }]` for enums, consts, `$ref`s and
 * unions), with a removed `default` kept as text in its description; `additionalProperties: false` is
 * set on every object, including inside `$defs`, array `items` and `anyOf` branches; `oneOf` becomes
 * `anyOf`; a single-entry `allOf` is merged; keywords OpenAI rejects are removed (see
 * `OPENAI_STRICT_REMOVED`). For a `ToolSchema`, `strict` becomes `true`.
 *
 * `default`: a copy of the input.
 *
 * A record (`additionalProperties` with a value schema and no fixed properties) becomes an array of
 * `{ key, value }` entries, which the null normaliser turns back into an object before validation.
 *
 * @throws {ToolbusError} `unsupported` under `openai-strict` for shapes strict mode cannot express: a
 * free-form object (`additionalProperties: true` or fixed properties beside open ones, or an object
 * without `properties`), a record as the whole parameters object or with free-form values, tuples, and a
 * multi-entry `allOf` — the message names the property path.
 * @example
 * ```ts
 * compileSchema(tool.schema, 'openai-strict'); // { ..., parameters: { ..., required: [every key] }, strict: true }
 * ```
 */
export function compileSchema(schema: ToolSchema, profile: SchemaProfile): ToolSchema;
export function compileSchema(schema: ObjectJsonSchema, profile: SchemaProfile): ObjectJsonSchema;
export function compileSchema(
  schema: ToolSchema | ObjectJsonSchema,
  profile: SchemaProfile,
): ToolSchema | ObjectJsonSchema {
  if (isToolSchema(schema)) {
    const parameters = compileParameters(schema.parameters, profile, schema.name);
    return {
      name: schema.name,
      description: schema.description,
      parameters,
      strict: profile === SchemaProfile.OpenAIStrict ? true : schema.strict,
    };
  }
  return compileParameters(schema, profile, undefined);
}

function isToolSchema(schema: ToolSchema | ObjectJsonSchema): schema is ToolSchema {
  return typeof schema['name'] === 'string' && typeof schema['parameters'] === 'object';
}

function compileParameters(
  parameters: ObjectJsonSchema,
  profile: SchemaProfile,
  toolName: string | undefined,
): ObjectJsonSchema {
  if (profile === SchemaProfile.Default) return structuredClone(parameters);
  if (profile !== SchemaProfile.OpenAIStrict) {
    throw new ToolbusError(
      'unsupported',
      `schema profile '${String(profile)}' is unknown; expected one of ${Object.values(SchemaProfile)
        .map((p) => `'${p}'`)
        .join(', ')}`,
    );
  }
  const strict = new OpenAIStrictCompiler(parameters, toolName);
  return strict.root();
}

function isObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** One pass over a schema tree producing the OpenAI strict dialect. */
class OpenAIStrictCompiler {
  readonly #source: ObjectJsonSchema;
  readonly #label: string;

  constructor(source: ObjectJsonSchema, toolName: string | undefined) {
    this.#source = source;
    this.#label = toolName === undefined ? 'schema' : `tool '${toolName}'`;
  }

  root(): ObjectJsonSchema {
    return this.#node(this.#source, '') as ObjectJsonSchema;
  }

  #fail(path: string, what: string): never {
    throw new ToolbusError(
      'unsupported',
      `${this.#label}: ${what} at '${path || '(root)'}' cannot be expressed in OpenAI strict mode, which needs ` +
        `every object closed (additionalProperties: false) with known properties; use an array of ` +
        `{ key, value } objects or send the tool with strict: false`,
    );
  }

  /** Compiles one schema node. */
  #node(schema: JsonValue, path: string): JsonValue {
    if (!isObject(schema)) return schema;
    let s: JsonObject = schema;
    // allOf with one entry is a wrapper (pydantic, zod .and() of one): merge it.
    const allOf = s['allOf'];
    if (Array.isArray(allOf)) {
      if (allOf.length === 1 && isObject(allOf[0])) {
        const { allOf: _drop, ...rest } = s;
        s = { ...allOf[0], ...rest };
      } else {
        this.#fail(path, `an 'allOf' of ${allOf.length} schemas`);
      }
    }
    // OpenAI refuses keywords beside a `$ref` ("$ref cannot have keywords {'description'}"), so such a
    // node is inlined with its siblings winning, as the openai SDK's own toStrictJsonSchema does.
    const ref = s['$ref'];
    if (
      typeof ref === 'string' &&
      Object.keys(s).some((k) => k !== '$ref' && !OPENAI_STRICT_REMOVED.has(k))
    ) {
      const { $ref: _ref, ...siblings } = s;
      s = { ...this.#resolve(ref, path), ...siblings };
    }
    const out: JsonObject = {};
    for (const [key, value] of Object.entries(s)) {
      if (OPENAI_STRICT_REMOVED.has(key)) continue;
      switch (key) {
        case 'format':
          if (typeof value === 'string' && OPENAI_STRICT_FORMATS.has(value)) out[key] = value;
          break;
        case 'properties':
        case 'required':
        case 'additionalProperties':
          break; // handled below, for objects
        case 'items':
          if (Array.isArray(value)) this.#fail(path, 'a tuple (array-form items)');
          out[key] = this.#node(value, `${path}[]`);
          break;
        case 'prefixItems':
          this.#fail(path, 'a tuple (prefixItems)');
          break;
        case 'anyOf':
        case 'oneOf':
          out['anyOf'] = (Array.isArray(value) ? value : []).map((branch, i) =>
            this.#node(branch, `${path}|${i}`),
          );
          break;
        case '$defs':
        case 'definitions':
          if (isObject(value)) {
            const defs: JsonObject = {};
            for (const [name, def] of Object.entries(value)) defs[name] = this.#node(def, `${key}.${name}`);
            out[key] = defs;
          }
          break;
        default:
          out[key] = value;
      }
    }
    const isObjectType =
      s['type'] === 'object' ||
      (Array.isArray(s['type']) && s['type'].includes('object')) ||
      'properties' in s;
    if (isObjectType && path !== '' && isRecordSchema(s)) return this.#record(s, out, path);
    if (isObjectType) this.#object(s, out, path);
    return out;
  }

  /**
   * A record (free-form keys, one value schema) becomes a list of `{ key, value }` entries, the only
   * shape strict mode can express; `createNullNormalizer` turns such a list back into an object before
   * validation, so the tool still receives its record.
   */
  #record(s: JsonObject, out: JsonObject, path: string): JsonObject {
    const value = this.#node(s['additionalProperties'] as JsonObject, `${path}{}`);
    if (!isObject(value) || !['type', 'anyOf', '$ref', 'enum', 'const'].some((k) => k in value)) {
      this.#fail(path, 'a record of free-form values');
    }
    const note = RECORD_ENTRIES_NOTE;
    const description = typeof out['description'] === 'string' ? `${out['description']} (${note})` : note;
    return {
      type: 'array',
      items: {
        type: 'object',
        properties: { key: { type: 'string' }, value },
        required: ['key', 'value'],
        additionalProperties: false,
      },
      description,
    };
  }

  /** Resolves a local `$ref` (`#/$defs/x`, `#/definitions/x`) in the source schema. */
  #resolve(ref: string, path: string): JsonObject {
    const target = localRefTarget(ref, this.#source);
    if (target === undefined)
      this.#fail(path, `the reference '${ref}' (not a local $defs/definitions entry)`);
    return target;
  }

  /** Closes an object: every property required, optionals nullable, `additionalProperties: false`. */
  #object(s: JsonObject, out: JsonObject, path: string): void {
    const properties = s['properties'];
    const extra = s['additionalProperties'];
    const open = extra !== undefined && extra !== false;
    const none = !isObject(properties) || Object.keys(properties).length === 0;
    if (open && none) this.#fail(path, 'a record (free-form keys) as the whole parameters object');
    if (open) this.#fail(path, 'an object with additional properties');
    if (!isObject(properties)) this.#fail(path, 'a free-form object (no properties)');
    const required = new Set(Array.isArray(s['required']) ? s['required'] : []);
    const props: JsonObject = {};
    for (const [key, prop] of Object.entries(properties)) {
      const childPath = path === '' ? key : `${path}.${key}`;
      const compiled = this.#node(prop, childPath);
      props[key] = required.has(key) || admitsNull(prop, this.#source) ? compiled : nullable(compiled, prop);
    }
    // Fixed key order for deterministic output.
    const rest = { ...out };
    for (const key of Object.keys(out)) delete out[key];
    if ('type' in rest) out['type'] = rest['type'] ?? 'object';
    else out['type'] = 'object';
    out['properties'] = props;
    out['required'] = Object.keys(props);
    out['additionalProperties'] = false;
    for (const [key, value] of Object.entries(rest)) if (!(key in out)) out[key] = value;
  }
}

/** The note added to a record's description under `openai-strict`. */
const RECORD_ENTRIES_NOTE = 'a map, given as a list of { key, value } entries';

/** Makes a compiled property schema nullable, keeping its description on the outside. */
function nullable(compiled: JsonValue, source: JsonValue): JsonValue {
  if (!isObject(compiled)) return compiled;
  const description = withDefault(compiled['description'], isObject(source) ? source['default'] : undefined);
  const type = compiled['type'];
  // Scalars take the `type: [T, 'null']` form; objects, arrays, enums, consts, refs and unions an anyOf.
  const scalar = (t: JsonValue): boolean => t !== 'object' && t !== 'array';
  const simple =
    !('enum' in compiled) &&
    !('const' in compiled) &&
    !('$ref' in compiled) &&
    !('anyOf' in compiled) &&
    (typeof type === 'string' ? scalar(type) : Array.isArray(type) && type.every(scalar));
  if (simple && typeof type === 'string') {
    return withDescription({ ...compiled, type: [type, 'null'] }, description);
  }
  if (simple && Array.isArray(type)) {
    return withDescription({ ...compiled, type: [...type, 'null'] }, description);
  }
  if ('anyOf' in compiled && Array.isArray(compiled['anyOf'])) {
    return withDescription({ ...compiled, anyOf: [...compiled['anyOf'], { type: 'null' }] }, description);
  }
  const { description: _inner, ...inner } = compiled;
  const out: JsonObject = { anyOf: [inner, { type: 'null' }] };
  if (description !== undefined) out['description'] = description;
  return out;
}

function withDescription(schema: JsonObject, description: string | undefined): JsonObject {
  if (description === undefined) return schema;
  const { description: _old, ...rest } = schema;
  // Keep `description` where it was in key order when it existed, else append.
  return 'description' in schema
    ? Object.fromEntries(Object.entries(schema).map(([k, v]) => [k, k === 'description' ? description : v]))
    : { ...rest, description };
}

/** Strict mode has no `default`; say it in the description so the model still knows it. */
function withDefault(description: JsonValue | undefined, value: JsonValue | undefined): string | undefined {
  const text = typeof description === 'string' ? description : undefined;
  if (value === undefined) return text;
  const note = `(default: ${JSON.stringify(value)})`;
  return text === undefined ? note : `${text} ${note}`;
}
