/**
 * @module The JSON shape of one tool as a function-calling API expects it.
 */
import type { ObjectJsonSchema } from './json.js';

/**
 * The JSON shape a function-calling API expects, as in the Saptiva-Agents guide's `get_stock_price`
 * example: `{ name, description, parameters, strict }`.
 */
export interface ToolSchema {
  name: string;
  description: string;
  parameters: ObjectJsonSchema;
  /** Ask the provider to enforce the schema exactly (OpenAI structured outputs). */
  strict: boolean;
}
