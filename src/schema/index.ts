/**
 * @module schema: JSON Schema from zod, Standard Schema or raw JSON Schema; validation; provider profiles.
 */
export type { JsonValue, JsonObject, JsonSchema, ObjectJsonSchema } from './json.js';
