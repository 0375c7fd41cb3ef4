/**
 * @module JSON value and JSON Schema types shared by every layer.
 */

/** Any value that survives `JSON.stringify` / `JSON.parse` unchanged. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/** A JSON object. */
export type JsonObject = { [key: string]: JsonValue };

/**
 * A JSON Schema document (draft 2020-12 or draft-07), kept as plain JSON so it can be sent to a model
 * provider unchanged.
 */
export type JsonSchema = JsonObject;

/**
 * The `parameters` of a tool schema: always an object schema with closed properties, the shape a
 * function-calling API expects.
 */
export interface ObjectJsonSchema extends JsonObject {
  type: 'object';
  properties: { [key: string]: JsonValue };
  required: string[];
  additionalProperties: false;
}
