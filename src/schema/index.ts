/**
 * @module schema: JSON Schema from zod, Standard Schema or raw JSON Schema; validation; provider profiles.
 */
export type { JsonValue, JsonObject, JsonSchema, ObjectJsonSchema } from './json.js';
export type { ToolSchema } from './tool-schema.js';
export {
  toParametersSchema,
  isZodSchema,
  isStandardJsonSchema,
  schemaKindOf,
  SchemaKind,
} from './parameters.js';
export type { ParametersSource, ZodSchema, StandardJsonSchema, RawJsonSchema } from './parameters.js';
export { compileSchema, SchemaProfile } from './profiles.js';
export { createValidator, formatPath, describeValue } from './validator.js';
export type { Validator, ValidationIssue, ValidationResult, CreateValidatorOptions } from './validator.js';
export { createNullNormalizer, admitsNull } from './null-normalizer.js';
export type { NullNormalizer } from './null-normalizer.js';
export { findJsonError } from './json-error.js';
export type { JsonErrorPosition } from './json-error.js';
export { MAX_JSON_DEPTH, jsonDepth } from './json-depth.js';
export { setOwn } from './own-property.js';
export { globMatches, anyGlobMatches } from './glob.js';
