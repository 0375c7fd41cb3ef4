/**
 * @module The one place that imports Ajv: compiles raw JSON Schema validators and checks schemas.
 */
import { createRequire } from 'node:module';
import type * as AjvModule from 'ajv';
import type { Ajv, ErrorObject, Options, ValidateFunction } from 'ajv';
import type * as Ajv2020Module from 'ajv/dist/2020.js';
import type { Ajv2020 } from 'ajv/dist/2020.js';
import type { JsonSchema } from './json.js';

// Ajv (CommonJS, about 100 files) is loaded on the first compile or check, not when toolbus loads: a
// start that compiles nothing (config tools with flat schemas, validated on first call) never loads it.
const load = createRequire(import.meta.url);

/** A compiled Ajv validator. */
export type AjvValidate = ValidateFunction;
/** One Ajv error. */
export type AjvError = ErrorObject;

/** Which Ajv dialect a raw schema needs. */
type Dialect = 'draft-07' | 'draft-2020-12';

/**
 * Holds the two Ajv instances (draft-07 and draft 2020-12) and a cache of compiled validators keyed by
 * schema object. One compiler lives per module instance: it is a pure cache (the same schema object
 * always yields an equivalent validator), not observable state, which is why it does not break the
 * "no module-level mutable state" rule in spirit. `addUsedSchema: false` keeps schemas with an `$id`
 * from being registered, so two tools whose schemas share an `$id` never clash.
 */
class JsonSchemaCompiler {
  #draft07: Ajv | undefined;
  #draft2020: Ajv2020 | undefined;
  readonly #cache = new WeakMap<object, AjvValidate>();

  #ajv(dialect: Dialect): Ajv {
    const options: Options = {
      allErrors: true,
      strict: false,
      useDefaults: true,
      addUsedSchema: false,
      validateFormats: false,
      logger: false,
    };
    if (dialect === 'draft-07') return (this.#draft07 ??= new (load('ajv') as typeof AjvModule).Ajv(options));
    return (this.#draft2020 ??= new (load('ajv/dist/2020.js') as typeof Ajv2020Module).Ajv2020(options));
  }

  /** Compiles (or returns the cached) validator for `schema`. Throws Ajv's error for a bad schema. */
  compile(schema: JsonSchema): AjvValidate {
    let validate = this.#cache.get(schema);
    if (validate === undefined) {
      const ajv = this.#ajv(dialectOf(schema));
      validate = ajv.compile(schema);
      // Ajv keeps its own strong cache keyed by the schema object; ours is weak, so drop Ajv's entry.
      ajv.removeSchema(schema);
      this.#cache.set(schema, validate);
    }
    return validate;
  }

  /** Checks `schema` against its meta-schema; returns the errors, or an empty list. */
  check(schema: JsonSchema): AjvError[] {
    const ajv = this.#ajv(dialectOf(schema));
    const ok = ajv.validateSchema(schema);
    return ok === true ? [] : [...(ajv.errors ?? [])];
  }
}

/** Draft-07 and older (explicit `$schema`, `definitions`, or tuple `items`) use the draft-07 engine. */
function dialectOf(schema: JsonSchema): Dialect {
  const declared = schema['$schema'];
  if (typeof declared === 'string') return /draft-0[4-7]/.test(declared) ? 'draft-07' : 'draft-2020-12';
  const text = JSON.stringify(schema);
  return text.includes('"definitions"') || /"items":\[/.test(text) ? 'draft-07' : 'draft-2020-12';
}

/** The shared compiler (see {@link JsonSchemaCompiler} for why it is module-level). */
export const jsonSchemaCompiler = new JsonSchemaCompiler();
