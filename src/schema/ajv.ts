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

/** How many compiled validators the shared compiler keeps, by schema text, at most. */
export const MAX_CACHED_VALIDATORS = 512;
/** How many characters of schema text (the cache keys) it keeps, at most: big schemas evict sooner. */
export const MAX_CACHED_SCHEMA_CHARS = 4 * 2 ** 20;

/**
 * Holds the two Ajv instances (draft-07 and draft 2020-12) and a cache of compiled validators keyed by
 * the schema's JSON text: a registry's tools often share one argument schema (every tool of a service,
 * or generated descriptors), and compiling it once per tool cost most of a start over many tools. The
 * cache is a bounded LRU ({@link MAX_CACHED_VALIDATORS} entries, {@link MAX_CACHED_SCHEMA_CHARS} of
 * keys); a tool keeps its own validator, so an evicted entry only costs the next new tool a compile.
 *
 * One compiler lives per module instance: it is a pure cache (the same schema text always yields an
 * equivalent validator, since the options never let Ajv keep the schema object: no `verbose`), not
 * observable state, which is why it does not break the "no module-level mutable state" rule in
 * spirit. `addUsedSchema: false` keeps schemas with an `$id` from being registered, so two tools whose
 * schemas share an `$id` never clash.
 */
class JsonSchemaCompiler {
  #draft07: Ajv | undefined;
  #draft2020: Ajv2020 | undefined;
  /** Map order is use order: the first key is the least recently used. */
  readonly #cache = new Map<string, AjvValidate>();
  #cachedChars = 0;

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

  /**
   * Compiles (or returns the cached) validator for `schema`, a plain JSON object. `text` is its
   * `JSON.stringify`, when the caller has it already. Throws Ajv's error for a bad schema.
   */
  compile(schema: JsonSchema, text: string = JSON.stringify(schema)): AjvValidate {
    let validate = this.#cache.get(text);
    if (validate !== undefined) {
      this.#cache.delete(text);
      this.#cache.set(text, validate);
      return validate;
    }
    const ajv = this.#ajv(dialectOf(schema, text));
    validate = ajv.compile(schema);
    // Ajv keeps its own unbounded cache keyed by the schema object; this one is bounded, so drop Ajv's.
    ajv.removeSchema(schema);
    this.#cache.set(text, validate);
    this.#cachedChars += text.length;
    for (const [oldest] of this.#cache) {
      if (this.#cache.size <= MAX_CACHED_VALIDATORS && this.#cachedChars <= MAX_CACHED_SCHEMA_CHARS) break;
      if (oldest === text) break; // always keep the newest, however big
      this.#cache.delete(oldest);
      this.#cachedChars -= oldest.length;
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
function dialectOf(schema: JsonSchema, text?: string): Dialect {
  const declared = schema['$schema'];
  if (typeof declared === 'string') return /draft-0[4-7]/.test(declared) ? 'draft-07' : 'draft-2020-12';
  const json = text ?? JSON.stringify(schema);
  return json.includes('"definitions"') || /"items":\[/.test(json) ? 'draft-07' : 'draft-2020-12';
}

/** The shared compiler (see {@link JsonSchemaCompiler} for why it is module-level). */
export const jsonSchemaCompiler = new JsonSchemaCompiler();
