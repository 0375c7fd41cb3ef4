/**
 * @module Treats a `null` that a strict-mode model sent for an optional property as absent.
 *
 * OpenAI strict mode makes every property required, so optional properties become nullable and the
 * model sends `null` for "not given" (AutoGen #4997). Before validation, such nulls are removed, so the
 * source schema's own defaults and optionality apply. A property that is nullable in the source schema
 * keeps its `null`.
 *
 * Strict mode also cannot express a record, so `openai-strict` sends records as lists of
 * `{ key, value }` entries; such a list, where the source schema has a record, becomes an object again.
 */
import type { JsonObject, JsonValue } from './json.js';
import { setOwn } from './own-property.js';

/** What to do inside one object schema. */
interface ObjectPlan {
  /** Optional properties whose schema does not admit `null`: a `null` there means "absent". */
  readonly optional: Set<string>;
  /** Plans of nested objects and arrays, by property name. */
  readonly children: Map<string, Plan>;
}
/** What to do inside one array schema. */
interface ArrayPlan {
  readonly items: Plan;
}
/** What to do with a record: turn a `{ key, value }` entry list into an object, then plan each value. */
interface RecordPlan {
  readonly values: Plan | undefined;
}
type Plan = ObjectPlan | ArrayPlan | RecordPlan;

/** Returns `value` with optional-property nulls removed (a copy when anything changed, else `value`). */
export type NullNormalizer = (value: unknown) => unknown;

const identity: NullNormalizer = (value) => value;

/**
 * Builds a normaliser for `schema` (a JSON Schema; `$ref`s into `$defs`/`definitions` are followed). The
 * plan is computed once, so applying it costs a walk of the value and a copy only when a null is removed.
 */
export function createNullNormalizer(schema: JsonObject): NullNormalizer {
  const plan = planFor(schema, schema, new Map());
  if (plan === undefined) return identity;
  return (value) => apply(value, plan);
}

function apply(value: unknown, plan: Plan): unknown {
  if ('values' in plan) return applyRecord(value, plan);
  if ('items' in plan) {
    if (!Array.isArray(value)) return value;
    let out: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      const next = apply(item, plan.items);
      if (next !== item) {
        out ??= value.slice();
        out[i] = next;
      }
    }
    return out ?? value;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
  const record = value as Record<string, unknown>;
  let out: Record<string, unknown> | undefined;
  for (const key in record) {
    const item = record[key];
    if (item === null) {
      if (plan.optional.has(key)) {
        out ??= { ...record };
        delete out[key];
      }
      continue;
    }
    const child = plan.children.get(key);
    if (child === undefined) continue;
    const next = apply(item, child);
    if (next !== item) {
      out ??= { ...record };
      out[key] = next; // safe for `__proto__`: the spread copy already has it as an own property
    }
  }
  return out ?? value;
}

function isEntry(item: unknown): item is { key: string; value: unknown } {
  return (
    typeof item === 'object' &&
    item !== null &&
    typeof (item as { key?: unknown }).key === 'string' &&
    'value' in item &&
    Object.keys(item).length === 2
  );
}

function applyRecord(value: unknown, plan: RecordPlan): unknown {
  let record = value;
  if (Array.isArray(value) && value.every(isEntry)) {
    // The source schema wants an object here, so an entry list can only be the strict-mode form.
    const out: Record<string, unknown> = {};
    for (const entry of value) setOwn(out, entry.key, entry.value);
    record = out;
  }
  if (plan.values === undefined || typeof record !== 'object' || record === null || Array.isArray(record)) {
    return record;
  }
  let out: Record<string, unknown> | undefined;
  const source = record as Record<string, unknown>;
  for (const key in source) {
    const item = source[key];
    const next = apply(item, plan.values);
    if (next !== item) {
      out ??= { ...source };
      out[key] = next; // safe for `__proto__`: the spread copy already has it as an own property
    }
  }
  return out ?? record;
}

function isObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Follows a local `$ref` (`#/$defs/x`, `#/definitions/x`). */
function resolve(schema: JsonObject, root: JsonObject): JsonObject {
  let current = schema;
  for (let hops = 0; hops < 32; hops++) {
    const ref = current['$ref'];
    if (typeof ref !== 'string') return current;
    const target = localRefTarget(ref, root);
    if (target === undefined) return current;
    current = target;
  }
  return current;
}

/**
 * A record: no fixed properties, and one schema for the values of any key. The `openai-strict` profile
 * sends exactly these as `{ key, value }` entry lists and the normaliser turns exactly these back, so
 * both ask here.
 */
export function isRecordSchema(s: JsonObject): boolean {
  const properties = s['properties'];
  return (
    isObject(s['additionalProperties']) && (!isObject(properties) || Object.keys(properties).length === 0)
  );
}

/**
 * The object a local `$ref` (`#/$defs/x`, `#/definitions/x`, JSON Pointer escapes decoded) names in
 * `root`, following own keys only; undefined for a non-local reference or one that names no object.
 * Shared by the schema layer (null normaliser, strict profile, validation messages).
 */
export function localRefTarget(ref: string, root: JsonObject): JsonObject | undefined {
  if (!ref.startsWith('#')) return undefined;
  let target: JsonValue | undefined = root;
  for (const part of ref.slice(1).split('/').filter(Boolean)) {
    const key = decodeURIComponent(part).replace(/~1/g, '/').replace(/~0/g, '~');
    target = isObject(target) && Object.hasOwn(target, key) ? target[key] : undefined;
  }
  return isObject(target) ? target : undefined;
}

/** True when `null` is a valid value of `schema` (or the schema says nothing about it). */
export function admitsNull(schema: JsonValue | undefined, root: JsonObject): boolean {
  if (schema === true || schema === undefined) return true;
  if (!isObject(schema)) return false;
  const s = resolve(schema, root);
  const type = s['type'];
  if (type === 'null' || (Array.isArray(type) && type.includes('null'))) return true;
  if (Array.isArray(s['enum']) && s['enum'].includes(null)) return true;
  if ('const' in s && s['const'] === null) return true;
  for (const key of ['anyOf', 'oneOf'] as const) {
    const branches = s[key];
    if (Array.isArray(branches) && branches.some((b) => admitsNull(b, root))) return true;
  }
  // An unconstrained schema ({} or only annotations) admits null.
  return (
    type === undefined &&
    !('$ref' in s) &&
    !('enum' in s) &&
    !('const' in s) &&
    !('properties' in s) &&
    !('items' in s) &&
    !('allOf' in s) &&
    !('anyOf' in s) &&
    !('oneOf' in s) &&
    !('not' in s)
  );
}

function planFor(
  schema: JsonValue | undefined,
  root: JsonObject,
  seen: Map<JsonObject, Plan | undefined>,
): Plan | undefined {
  if (!isObject(schema)) return undefined;
  const s = resolve(schema, root);
  if (seen.has(s)) return seen.get(s);
  // A nullable union of one real shape (what strict mode produces): plan for that shape.
  for (const key of ['anyOf', 'oneOf'] as const) {
    const branches = s[key];
    if (Array.isArray(branches)) {
      const real = branches.filter((b) => !(isObject(b) && resolve(b, root)['type'] === 'null'));
      if (real.length === 1) return planFor(real[0], root, seen);
      return undefined;
    }
  }
  const properties = s['properties'];
  if (isRecordSchema(s)) {
    seen.set(s, undefined);
    const plan: RecordPlan = { values: planFor(s['additionalProperties'] as JsonObject, root, seen) };
    seen.set(s, plan);
    return plan;
  }
  if (isObject(properties)) {
    const plan: ObjectPlan = { optional: new Set(), children: new Map() };
    seen.set(s, plan);
    const required = new Set(Array.isArray(s['required']) ? s['required'] : []);
    for (const [key, prop] of Object.entries(properties)) {
      if (!required.has(key) && !admitsNull(prop, root)) plan.optional.add(key);
      const child = planFor(prop, root, seen);
      if (child !== undefined) plan.children.set(key, child);
    }
    const useful = plan.optional.size > 0 || plan.children.size > 0;
    seen.set(s, useful ? plan : undefined);
    return useful ? plan : undefined;
  }
  const items = s['items'];
  if (isObject(items)) {
    seen.set(s, undefined);
    const child = planFor(items, root, seen);
    const plan = child === undefined ? undefined : { items: child };
    seen.set(s, plan);
    return plan;
  }
  return undefined;
}
