/**
 * @module Output schemas: what a tool's result must look like (`Tool.outputSchema`, MCP's
 * `outputSchema`). `ToolSet` checks each result of a tool that has one here, once for every kind of
 * tool: a mismatch is the tool's failure (`tool-error`, saying what is wrong), a match is kept as the
 * result's `structured` value beside its text.
 */
import {
  createValidator,
  type JsonObject,
  type ObjectJsonSchema,
  type ValidationIssue,
  type Validator,
} from '../schema/index.js';
import { ToolError } from './errors.js';

/** One validator per schema object: tools share theirs across calls, and a registry rebuild brings new ones. */
const validators = new WeakMap<ObjectJsonSchema, Validator>();

/**
 * Checks `value`, a tool's return value, against its output schema. A string (what a tool service or an
 * HTTP endpoint answers) is read as JSON first. Resolves to the structured value, or a `tool-error`.
 */
export function checkToolOutput(
  toolName: string,
  schema: ObjectJsonSchema,
  value: unknown,
): { structured: JsonObject } | ToolError {
  let data = value;
  if (typeof value === 'string') {
    try {
      data = JSON.parse(value) as unknown;
    } catch {
      return mismatch(toolName, `it is text that is not JSON (${preview(value)}); expected a JSON object`);
    }
  }
  if (data === null || typeof data !== 'object' || Array.isArray(data)) {
    return mismatch(
      toolName,
      `it is ${data === null ? 'null' : Array.isArray(data) ? 'an array' : typeof data}; expected an object`,
    );
  }
  let validate = validators.get(schema);
  if (validate === undefined) {
    // The JSON Schema itself (a zod schema was converted when the tool was made): Ajv, synchronous.
    validate = createValidator(schema as JsonObject, { jsonSchema: schema, normalizeNulls: false });
    validators.set(schema, validate);
  }
  const result = validate(data);
  if (result instanceof Promise) {
    return mismatch(toolName, 'its output schema validates asynchronously, which results cannot wait for');
  }
  if (!result.ok) return mismatch(toolName, describeIssues(result.issues));
  return { structured: data as JsonObject };
}

function describeIssues(issues: readonly ValidationIssue[]): string {
  return issues
    .slice(0, 10)
    .map((issue) => {
      const where = issue.path === '' ? 'the result' : `'${issue.path}'`;
      const detail =
        issue.expected !== undefined
          ? `must be ${issue.expected}${issue.received !== undefined ? `, got ${issue.received}` : ''}`
          : issue.message;
      return `${where} ${detail}`;
    })
    .join('; ');
}

function mismatch(toolName: string, what: string): ToolError {
  return new ToolError(
    'tool-error',
    `tool '${toolName}': its result does not match its output schema: ${what}`,
    {
      toolName,
    },
  );
}

function preview(text: string): string {
  return JSON.stringify(text.length > 40 ? `${text.slice(0, 40)}…` : text);
}
