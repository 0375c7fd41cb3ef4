/**
 * @module Turning a LangChain tool's schema (zod v3, zod v4 or JSON Schema) into the object schema a
 * toolbus `ToolSchema` carries.
 */
import { toJsonSchema } from '@langchain/core/utils/json_schema';
import { isToolbusError, ToolbusError } from '../../errors/index.js';
import { toParametersSchema } from '../../schema/index.js';
import type { ObjectJsonSchema } from '../../schema/index.js';

/**
 * Converts `schema` to the closed object schema toolbus sends to models (see `toParametersSchema`).
 * LangChain's converter handles zod v3 as well as v4; `$schema` is dropped.
 *
 * @throws ToolbusError `invalid-schema` naming the tool when the schema does not describe an object.
 */
export function objectSchemaOf(schema: unknown, owner: string): ObjectJsonSchema {
  try {
    const json: unknown =
      schema === undefined ? { type: 'object', properties: {} } : toJsonSchema(schema as never);
    if (typeof json !== 'object' || json === null || Array.isArray(json)) {
      throw new ToolbusError('invalid-schema', 'parameters: must be an object schema');
    }
    const { $schema: _dropped, ...rest } = json as Record<string, unknown>;
    return toParametersSchema(rest);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new ToolbusError(
      isToolbusError(error) ? error.code : 'invalid-schema',
      `${owner}: its schema cannot be used as tool parameters: ${message}`,
      { cause: error },
    );
  }
}
