/**
 * @module A form generated from a tool's JSON Schema: a fieldset for each nested object, a select for
 * an enum, add/remove for arrays, a checkbox for a boolean, number inputs for numbers and integers, and
 * a JSON text field for what a form cannot show (free-form objects, unions). The form edits a *draft*
 * (what the inputs hold, e.g. a number as its text); {@link draftToValue} turns it into the arguments,
 * leaving out optional fields left empty, and says what is missing or wrong.
 */
import type { JsonSchema } from '../types.js';

/** What the inputs of a field hold. */
export type Draft = string | boolean | undefined | Draft[] | { [name: string]: Draft };

/** How a schema is shown. */
type Kind =
  | { kind: 'object'; schema: JsonSchema }
  | { kind: 'array'; schema: JsonSchema; items: JsonSchema }
  | { kind: 'enum'; schema: JsonSchema; options: unknown[] }
  | { kind: 'boolean'; schema: JsonSchema }
  | { kind: 'number'; schema: JsonSchema; integer: boolean }
  | { kind: 'string'; schema: JsonSchema }
  | { kind: 'json'; schema: JsonSchema };

/** Nesting deeper than this (a recursive schema) is edited as JSON. */
const MAX_DEPTH = 8;

/** The schema `$ref` points at in `root` (`#/$defs/…`, `#/definitions/…`), or the schema itself. */
function resolve(schema: JsonSchema, root: JsonSchema): JsonSchema {
  let current = schema;
  for (let hops = 0; current.$ref !== undefined && hops < 10; hops++) {
    const ref = current.$ref;
    if (!ref.startsWith('#')) return current;
    let target: unknown = root;
    for (const part of ref.slice(1).split('/').filter(Boolean)) {
      const name = decodeURIComponent(part.replace(/~1/g, '/').replace(/~0/g, '~'));
      target = target && typeof target === 'object' ? (target as Record<string, unknown>)[name] : undefined;
    }
    if (!target || typeof target !== 'object') return current;
    const { $ref: _ref, ...rest } = current;
    current = { ...(target as JsonSchema), ...rest };
  }
  if (current.allOf && current.allOf.length > 0) {
    // The common case of allOf: objects whose properties and required lists add up.
    const parts = current.allOf.map((s) => resolve(s, root));
    const { allOf: _allOf, ...rest } = current;
    return parts.reduce<JsonSchema>(
      (merged, part) => ({
        ...part,
        ...merged,
        properties: { ...part.properties, ...merged.properties },
        required: [...(merged.required ?? []), ...(part.required ?? [])],
      }),
      rest,
    );
  }
  return current;
}

/** The schema's one non-null type, if it has one. */
function typeOf(schema: JsonSchema): string | undefined {
  if (typeof schema.type === 'string') return schema.type;
  if (Array.isArray(schema.type)) {
    const types = schema.type.filter((t) => t !== 'null');
    return types.length === 1 ? types[0] : undefined;
  }
  if (schema.properties) return 'object';
  return undefined;
}

function kindOf(raw: JsonSchema, root: JsonSchema, depth: number): Kind {
  const schema = resolve(raw, root);
  if (depth > MAX_DEPTH) return { kind: 'json', schema };
  if (Array.isArray(schema.enum) && schema.enum.length > 0) {
    return { kind: 'enum', schema, options: schema.enum.filter((v) => v !== null) };
  }
  if (schema.const !== undefined) return { kind: 'enum', schema, options: [schema.const] };
  const union = schema.anyOf ?? schema.oneOf;
  if (union && union.length > 0) {
    const branches = union.map((s) => resolve(s, root)).filter((s) => s.type !== 'null');
    if (branches.every((b) => b.const !== undefined || (Array.isArray(b.enum) && b.enum.length > 0))) {
      const options = branches.flatMap((b) => (b.const !== undefined ? [b.const] : (b.enum ?? [])));
      return { kind: 'enum', schema, options };
    }
    if (branches.length === 1 && branches[0]) {
      // `T | null`: the field is T, left out when empty.
      const { anyOf: _a, oneOf: _o, ...rest } = schema;
      return kindOf({ ...branches[0], ...rest }, root, depth);
    }
    return { kind: 'json', schema };
  }
  switch (typeOf(schema)) {
    case 'object':
      return schema.properties && Object.keys(schema.properties).length > 0
        ? { kind: 'object', schema }
        : { kind: 'json', schema };
    case 'array':
      return schema.items && !Array.isArray(schema.items)
        ? { kind: 'array', schema, items: schema.items }
        : { kind: 'json', schema };
    case 'boolean':
      return { kind: 'boolean', schema };
    case 'integer':
      return { kind: 'number', schema, integer: true };
    case 'number':
      return { kind: 'number', schema, integer: false };
    case 'string':
      return { kind: 'string', schema };
    default:
      return { kind: 'json', schema };
  }
}

function optionLabel(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function sameValue(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/**
 * The draft that shows `value` (e.g. a default, or arguments edited as JSON); undefined for an empty
 * field. Values the form cannot show are dropped (properties outside the schema).
 */
export function valueToDraft(raw: JsonSchema, root: JsonSchema, value: unknown, depth = 0): Draft {
  const k = kindOf(raw, root, depth);
  const { schema } = k;
  const given = value === undefined ? schema.default : value;
  switch (k.kind) {
    case 'object': {
      const source = given && typeof given === 'object' && !Array.isArray(given) ? given : {};
      const draft: Record<string, Draft> = {};
      for (const [name, child] of Object.entries(schema.properties ?? {})) {
        draft[name] = valueToDraft(child, root, (source as Record<string, unknown>)[name], depth + 1);
      }
      return draft;
    }
    case 'array':
      return Array.isArray(given) ? given.map((v) => valueToDraft(k.items, root, v, depth + 1)) : [];
    case 'enum': {
      const index = k.options.findIndex((o) => sameValue(o, given));
      return index < 0 ? '' : String(index);
    }
    case 'boolean':
      return typeof given === 'boolean' ? given : undefined;
    case 'number':
      return typeof given === 'number' ? String(given) : '';
    case 'string':
      return typeof given === 'string' ? given : '';
    case 'json':
      return given === undefined ? '' : JSON.stringify(given, null, 2);
  }
}

/** A draft as arguments, with what is missing or wrong. */
export interface DraftValue {
  /** The value; undefined when the field is left out. */
  value: unknown;
  /** "topic: required", "count: must be an integer", … */
  errors: string[];
}

function isEmptyDraft(draft: Draft): boolean {
  if (draft === undefined || draft === '') return true;
  if (Array.isArray(draft)) return draft.length === 0;
  if (typeof draft === 'object') return Object.values(draft).every(isEmptyDraft);
  return false;
}

/**
 * Turns the draft into the arguments. Optional fields left empty are left out (an optional object whose
 * fields are all empty too); a required one left empty is an error.
 */
export function draftToValue(
  raw: JsonSchema,
  root: JsonSchema,
  draft: Draft,
  options: { required: boolean; path: string; depth?: number },
): DraftValue {
  const depth = options.depth ?? 0;
  const k = kindOf(raw, root, depth);
  const { schema } = k;
  const path = options.path || 'arguments';
  const missing = (): DraftValue =>
    options.required ? { value: undefined, errors: [`${path}: required`] } : { value: undefined, errors: [] };
  switch (k.kind) {
    case 'object': {
      const fields = draft && typeof draft === 'object' && !Array.isArray(draft) ? draft : {};
      if (!options.required && isEmptyDraft(fields)) return { value: undefined, errors: [] };
      const value: Record<string, unknown> = {};
      const errors: string[] = [];
      const required = new Set(schema.required ?? []);
      for (const [name, child] of Object.entries(schema.properties ?? {})) {
        const result = draftToValue(child, root, fields[name], {
          required: required.has(name),
          path: options.path ? `${options.path}.${name}` : name,
          depth: depth + 1,
        });
        errors.push(...result.errors);
        if (result.value !== undefined) value[name] = result.value;
      }
      return { value, errors };
    }
    case 'array': {
      const items = Array.isArray(draft) ? draft : [];
      if (items.length === 0 && !options.required) return { value: undefined, errors: [] };
      const errors: string[] = [];
      const value = items.map((item, i) => {
        const result = draftToValue(k.items, root, item, {
          required: true,
          path: `${path}[${i}]`,
          depth: depth + 1,
        });
        errors.push(...result.errors);
        return result.value;
      });
      if (schema.minItems !== undefined && value.length < schema.minItems) {
        errors.push(`${path}: needs at least ${schema.minItems} item${schema.minItems === 1 ? '' : 's'}`);
      }
      return { value, errors };
    }
    case 'enum': {
      if (typeof draft !== 'string' || draft === '') return missing();
      return { value: k.options[Number(draft)], errors: [] };
    }
    case 'boolean':
      if (typeof draft !== 'boolean') return options.required ? { value: false, errors: [] } : missing();
      return { value: draft, errors: [] };
    case 'number': {
      const text = typeof draft === 'string' ? draft.trim() : '';
      if (text === '') return missing();
      const n = Number(text);
      if (!Number.isFinite(n)) return { value: undefined, errors: [`${path}: must be a number`] };
      if (k.integer && !Number.isInteger(n)) return { value: n, errors: [`${path}: must be an integer`] };
      return { value: n, errors: [] };
    }
    case 'string':
      if (typeof draft !== 'string' || draft === '') return missing();
      return { value: draft, errors: [] };
    case 'json': {
      const text = typeof draft === 'string' ? draft.trim() : '';
      if (text === '') return missing();
      try {
        return { value: JSON.parse(text), errors: [] };
      } catch (error) {
        return { value: undefined, errors: [`${path}: not valid JSON (${String(error)})`] };
      }
    }
  }
}

/** An id usable in HTML from a field's path. */
function idOf(path: string[]): string {
  return `arg-${path.join('-').replace(/[^A-Za-z0-9_-]/g, '_')}`;
}

/** Props of {@link SchemaFields}. */
export interface SchemaFieldsProps {
  /** The tool's parameters: an object schema. */
  schema: JsonSchema;
  draft: Draft;
  onChange(draft: Draft): void;
  /** Disables every input (while a call runs). */
  disabled?: boolean;
}

/** The inputs of an object schema's properties (the top level of the invoke form). */
export function SchemaFields({ schema, draft, onChange, disabled }: SchemaFieldsProps) {
  const k = kindOf(schema, schema, 0);
  if (k.kind !== 'object') {
    if (k.kind === 'json' && Object.keys(resolve(schema, schema).properties ?? {}).length === 0) {
      return <p class="hint">This tool takes no arguments.</p>;
    }
    return (
      <Field
        schema={schema}
        root={schema}
        path={['arguments']}
        label="Arguments"
        required
        draft={draft}
        onChange={onChange}
        depth={0}
        disabled={disabled}
      />
    );
  }
  return (
    <ObjectFields
      schema={k.schema}
      root={schema}
      path={[]}
      draft={draft}
      onChange={onChange}
      depth={0}
      disabled={disabled}
    />
  );
}

interface FieldProps {
  schema: JsonSchema;
  root: JsonSchema;
  path: string[];
  label: string;
  required: boolean;
  draft: Draft;
  onChange(draft: Draft): void;
  depth: number;
  disabled: boolean | undefined;
}

function ObjectFields(props: Omit<FieldProps, 'label' | 'required'>) {
  const { schema, root, path, draft, onChange, depth, disabled } = props;
  const fields = draft && typeof draft === 'object' && !Array.isArray(draft) ? draft : {};
  const required = new Set(schema.required ?? []);
  return (
    <>
      {Object.entries(schema.properties ?? {}).map(([name, child]) => (
        <Field
          key={name}
          schema={child}
          root={root}
          path={[...path, name]}
          label={resolve(child, root).title ?? name}
          required={required.has(name)}
          draft={fields[name]}
          onChange={(next) => onChange({ ...fields, [name]: next })}
          depth={depth + 1}
          disabled={disabled}
        />
      ))}
    </>
  );
}

function RequiredMark({ required }: { required: boolean }) {
  return required ? (
    <span class="required">
      {' '}
      <span aria-hidden="true" title="required">
        *
      </span>
      <span class="visually-hidden">(required)</span>
    </span>
  ) : (
    <span class="optional"> (optional)</span>
  );
}

/** The field's description and limits, as one line; undefined when it has none. */
function hintOf(schema: JsonSchema): string | undefined {
  const limits: string[] = [];
  if (schema.minimum !== undefined) limits.push(`min ${schema.minimum}`);
  if (schema.maximum !== undefined) limits.push(`max ${schema.maximum}`);
  if (schema.maxLength !== undefined) limits.push(`at most ${schema.maxLength} characters`);
  if (schema.format) limits.push(schema.format);
  const parts = [schema.description, limits.join(', ')].filter((p) => p);
  return parts.length > 0 ? parts.join(' · ') : undefined;
}

function Description({ id, schema }: { id: string; schema: JsonSchema }) {
  const hint = hintOf(schema);
  return hint ? (
    <p id={id} class="hint">
      {hint}
    </p>
  ) : null;
}

function Field(props: FieldProps) {
  const { root, path, label, required, draft, onChange, depth, disabled } = props;
  const k = kindOf(props.schema, root, depth);
  const { schema } = k;
  const id = idOf(path);
  const hintId = `${id}-hint`;
  const aria = {
    'aria-describedby': hintOf(schema) !== undefined ? hintId : undefined,
    'aria-required': required ? true : undefined,
  } as const;

  switch (k.kind) {
    case 'object':
      return (
        <fieldset class="nested" data-field={path.join('.')}>
          <legend>
            {label}
            <RequiredMark required={required} />
          </legend>
          <Description id={hintId} schema={schema} />
          <ObjectFields
            schema={schema}
            root={root}
            path={path}
            draft={draft}
            onChange={onChange}
            depth={depth}
            disabled={disabled}
          />
        </fieldset>
      );
    case 'array': {
      const items = Array.isArray(draft) ? draft : [];
      const itemSchema = resolve(k.items, root);
      const maxed = schema.maxItems !== undefined && items.length >= schema.maxItems;
      return (
        <fieldset class="nested array" data-field={path.join('.')}>
          <legend>
            {label}
            <RequiredMark required={required} />
          </legend>
          <Description id={hintId} schema={schema} />
          {items.length === 0 && <p class="hint">No items.</p>}
          <ol class="array-items">
            {items.map((item, i) => (
              <li key={i} class="array-item">
                <Field
                  schema={itemSchema}
                  root={root}
                  path={[...path, String(i)]}
                  label={`${label} item ${i + 1}`}
                  required
                  draft={item}
                  onChange={(next) => onChange(items.map((old, j) => (j === i ? next : old)))}
                  depth={depth + 1}
                  disabled={disabled}
                />
                <button
                  type="button"
                  class="button small"
                  disabled={disabled}
                  aria-label={`Remove ${label} item ${i + 1}`}
                  onClick={() => onChange(items.filter((_, j) => j !== i))}
                >
                  Remove
                </button>
              </li>
            ))}
          </ol>
          <button
            type="button"
            class="button small"
            disabled={disabled || maxed}
            onClick={() => onChange([...items, valueToDraft(itemSchema, root, undefined, depth + 1)])}
          >
            Add {label} item
          </button>
        </fieldset>
      );
    }
    case 'enum':
      return (
        <div class="field">
          <label for={id}>
            {label}
            <RequiredMark required={required} />
          </label>
          <select
            id={id}
            value={typeof draft === 'string' ? draft : ''}
            disabled={disabled}
            onChange={(e) => onChange(e.currentTarget.value)}
            {...aria}
          >
            <option value="">{required ? 'Choose…' : '(leave out)'}</option>
            {k.options.map((option, i) => (
              <option key={i} value={String(i)}>
                {optionLabel(option)}
              </option>
            ))}
          </select>
          <Description id={hintId} schema={schema} />
        </div>
      );
    case 'boolean':
      return (
        <div class="field checkbox">
          <input
            id={id}
            type="checkbox"
            checked={draft === true}
            disabled={disabled}
            onChange={(e) => onChange(e.currentTarget.checked)}
            {...aria}
          />
          <label for={id}>
            {label}
            <RequiredMark required={required} />
            {!required && draft === undefined && <span class="optional"> — left out</span>}
          </label>
          {!required && draft !== undefined && (
            <button
              type="button"
              class="button small ghost"
              disabled={disabled}
              aria-label={`Leave ${label} out`}
              onClick={() => onChange(undefined)}
            >
              Leave out
            </button>
          )}
          <Description id={hintId} schema={schema} />
        </div>
      );
    case 'number':
      return (
        <div class="field">
          <label for={id}>
            {label}
            <RequiredMark required={required} />
          </label>
          <input
            id={id}
            type="number"
            inputMode={k.integer ? 'numeric' : 'decimal'}
            step={k.integer ? 1 : 'any'}
            min={schema.minimum}
            max={schema.maximum}
            value={typeof draft === 'string' ? draft : ''}
            disabled={disabled}
            onInput={(e) => onChange(e.currentTarget.value)}
            {...aria}
          />
          <Description id={hintId} schema={schema} />
        </div>
      );
    case 'string': {
      const long = (schema.maxLength ?? 0) > 200 || schema.format === 'textarea';
      return (
        <div class="field">
          <label for={id}>
            {label}
            <RequiredMark required={required} />
          </label>
          {long ? (
            <textarea
              id={id}
              rows={4}
              value={typeof draft === 'string' ? draft : ''}
              maxLength={schema.maxLength}
              disabled={disabled}
              onInput={(e) => onChange(e.currentTarget.value)}
              {...aria}
            />
          ) : (
            <input
              id={id}
              type="text"
              value={typeof draft === 'string' ? draft : ''}
              maxLength={schema.maxLength}
              disabled={disabled}
              onInput={(e) => onChange(e.currentTarget.value)}
              {...aria}
            />
          )}
          <Description id={hintId} schema={schema} />
        </div>
      );
    }
    case 'json':
      return (
        <div class="field">
          <label for={id}>
            {label} (JSON)
            <RequiredMark required={required} />
          </label>
          <textarea
            id={id}
            class="mono"
            rows={3}
            spellcheck={false}
            value={typeof draft === 'string' ? draft : ''}
            disabled={disabled}
            onInput={(e) => onChange(e.currentTarget.value)}
            {...aria}
          />
          <Description id={hintId} schema={schema} />
        </div>
      );
  }
}
