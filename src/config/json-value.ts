/**
 * @module Parsing config values as JSON, with the line, column and offset of the first error.
 */
import { MAX_JSON_DEPTH, findJsonError, jsonDepth, setOwn, type JsonValue } from '../schema/index.js';
import { ToolbusError } from '../errors/index.js';

/** Options of {@link parseJsonValue}. */
export interface ParseJsonValueOptions {
  /** Names the value in error messages, e.g. `config item 'tool/tell-joke'`. @default 'value' */
  what?: string;
}

/**
 * Parses JSON text into a {@link JsonValue}.
 *
 * @throws ToolbusError `invalid-config` naming the line, column and position of the error, e.g.
 *   `config item 'tool/x': invalid JSON at line 3, column 9 (position 27): unexpected '}'; expected a value`,
 *   or that it nests deeper than {@link MAX_JSON_DEPTH} levels.
 */
export function parseJsonValue(text: string, options: ParseJsonValueOptions = {}): JsonValue {
  return parseJson(text, () => options.what ?? 'value');
}

/** {@link parseJsonValue} naming the value only on failure: a store's list parses thousands of items. */
function parseJson(text: string, what: () => string): JsonValue {
  // Each level takes a bracket, so text no longer than the limit cannot nest deeper: skip the scan.
  if (text.length > MAX_JSON_DEPTH && jsonDepth(text, MAX_JSON_DEPTH) > MAX_JSON_DEPTH) throw tooDeep(what());
  try {
    return JSON.parse(text) as JsonValue;
  } catch (error) {
    const where = findJsonError(text) ?? { line: 1, column: 1, position: 0, reason: String(error) };
    throw new ToolbusError(
      'invalid-config',
      `${what()}: invalid JSON at line ${where.line}, column ${where.column} ` +
        `(position ${where.position}): ${where.reason}`,
      { cause: error },
    );
  }
}

/**
 * Checks that a value passed as a parsed object is plain JSON (no `undefined`, functions, `NaN`,
 * class instances or cycles) and returns a deep copy, so later changes by the caller do not leak in.
 *
 * @throws ToolbusError `invalid-config` naming the path of the bad part, e.g. `value.arguments[0].type`.
 */
export function toJsonValue(value: unknown, options: ParseJsonValueOptions = {}): JsonValue {
  const what = options.what ?? 'value';
  const seen = new Set<object>();
  // The depth is bounded as the copy goes: beyond it, this recursion (and every later walk) would
  // overflow the stack.
  const visit = (v: unknown, path: string, depth = 1): JsonValue => {
    if (v === null || typeof v === 'string' || typeof v === 'boolean') return v;
    if (typeof v === 'number') {
      if (Number.isFinite(v)) return v;
      throw notJson(what, path, `the number ${String(v)} has no JSON form`);
    }
    if (typeof v !== 'object') throw notJson(what, path, `a ${typeof v} has no JSON form`);
    if (seen.has(v)) throw notJson(what, path, 'it refers back to itself (a cycle)');
    if (depth > MAX_JSON_DEPTH) throw tooDeep(what);
    seen.add(v);
    try {
      if (Array.isArray(v)) return v.map((item, i) => visit(item, `${path}[${i}]`, depth + 1));
      const proto = Object.getPrototypeOf(v) as unknown;
      if (proto !== Object.prototype && proto !== null) {
        throw notJson(what, path, 'expected a plain object, array, string, number, boolean or null');
      }
      const out: { [key: string]: JsonValue } = {};
      for (const [k, item] of Object.entries(v)) {
        if (item === undefined) continue; // as JSON.stringify does
        setOwn(out, k, visit(item, `${path}.${k}`, depth + 1));
      }
      return out;
    } finally {
      seen.delete(v);
    }
  };
  return visit(value, 'value');
}

function tooDeep(what: string): ToolbusError {
  return new ToolbusError(
    'invalid-config',
    `${what}: nests deeper than ${MAX_JSON_DEPTH} levels of arrays and objects; flatten it`,
  );
}

function notJson(what: string, path: string, reason: string): ToolbusError {
  return new ToolbusError('invalid-config', `${what}: '${path}' is not JSON: ${reason}`);
}

/**
 * Resolves what `ConfigStore.put` accepts into a JSON value: a string is JSON text and is parsed (bad
 * text rejects with its position); anything else must already be plain JSON and is deep-copied.
 * @throws ToolbusError `invalid-config` naming the item `type/key`.
 */
export function toConfigValue(type: string, key: string, value: unknown): JsonValue {
  const what = `config item '${type}/${key}'`;
  return typeof value === 'string' ? parseJsonValue(value, { what }) : toJsonValue(value, { what });
}

/**
 * Parses an item's value as a store read it back. Text that is not JSON was written around toolbus
 * (`writtenWith` says how, e.g. `'nats kv put'`): the error names the item and how to repair it.
 * @throws ToolbusError `store-error`.
 */
export function parseStoredValue(text: string, type: string, key: string, writtenWith: string): JsonValue {
  try {
    return parseJson(text, () => `config item '${type}/${key}'`);
  } catch (error) {
    throw new ToolbusError(
      'store-error',
      `${(error as Error).message}. It was written around toolbus (e.g. with ${writtenWith}); write it ` +
        `again with 'toolbus config put ${type}/${key}' or delete it`,
      { cause: error },
    );
  }
}
