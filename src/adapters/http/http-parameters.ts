/**
 * @module Explicit parameter locations of the HTTP tool: arguments always sent in the query string or
 * as a header, written the way OpenAPI's `style` and `explode` say.
 */
import { ToolError } from '../../tools/index.js';
import { ToolbusError } from '../../errors/index.js';
import { isHeaderName } from './header-value.js';

/** How a query or header argument's value is written, after OpenAPI's parameter `style`. */
export const HttpParameterStyle = {
  /** Query: `a=1&a=2` (exploded) or `a=1,2`; an object as `k=v` keys (exploded) or `a=k,v`. */
  Form: 'form',
  /** Query: an array as `a=1 2` (or repeated keys when exploded). */
  SpaceDelimited: 'spaceDelimited',
  /** Query: an array as `a=1|2` (or repeated keys when exploded). */
  PipeDelimited: 'pipeDelimited',
  /** Query: an object as `a[k]=v`. */
  DeepObject: 'deepObject',
  /** Header: an array as `1,2`; an object as `k,v` or, exploded, `k=v`. */
  Simple: 'simple',
  /** Query or header: the whole value as JSON text (an OpenAPI parameter given with `content`). */
  Json: 'json',
} as const;
/** One of {@link HttpParameterStyle}'s values. */
export type HttpParameterStyle = (typeof HttpParameterStyle)[keyof typeof HttpParameterStyle];

/**
 * One argument the HTTP tool always sends in the query string or as a header. In the options a plain
 * string stands for `{ name }`: the argument of that name, under the same name, in the default style.
 */
export interface HttpParameter {
  /** The query key or header name on the wire. */
  name: string;
  /** The argument whose value is sent. @default name */
  argument?: string;
  /** How arrays and objects are written. @default 'form' in the query, 'simple' in a header */
  style?: HttpParameterStyle;
  /** Arrays (and objects) as separate keys or items. @default true for 'form' and 'deepObject', else false */
  explode?: boolean;
}

/** Where an {@link HttpParameter} goes. */
export type HttpParameterLocation = 'query' | 'header';

/** An {@link HttpParameter} with its defaults applied. */
export interface ResolvedHttpParameter {
  name: string;
  argument: string;
  style: HttpParameterStyle;
  explode: boolean;
}

const STYLES: Record<HttpParameterLocation, readonly HttpParameterStyle[]> = {
  query: ['form', 'spaceDelimited', 'pipeDelimited', 'deepObject', 'json'],
  header: ['simple', 'json'],
};
const ENTRY_FIELDS = ['name', 'argument', 'style', 'explode'];
/** Headers fetch and the tool set themselves: an argument must not replace them. */
const RESERVED_HEADERS = ['content-type', 'content-length', 'host', 'connection', 'transfer-encoding'];
const DELIMITERS: Partial<Record<HttpParameterStyle, string>> = {
  form: ',',
  spaceDelimited: ' ',
  pipeDelimited: '|',
  deepObject: ',',
  simple: ',',
};

/**
 * Checks a `queryParams` / `headerParams` list and applies the defaults.
 *
 * @param field how messages name the list, e.g. `queryParams` or `query_params`.
 * @throws ToolbusError `invalid-config` naming the entry, what was wrong and what was expected.
 */
export function resolveHttpParameters(
  list: unknown,
  location: HttpParameterLocation,
  field: string,
  owner: string,
): ResolvedHttpParameter[] {
  if (!Array.isArray(list)) {
    throw new ToolbusError(
      'invalid-config',
      `${owner}: ${field} must be an array of argument names or { "name", "argument"?, "style"?, "explode"? } objects`,
    );
  }
  const out: ResolvedHttpParameter[] = [];
  const styles = STYLES[location];
  list.forEach((entry: unknown, index) => {
    const at = `${owner}: ${field}[${index}]`;
    let resolved: { name: unknown; argument?: unknown; style?: unknown; explode?: unknown };
    if (typeof entry === 'string') resolved = { name: entry };
    else if (typeof entry === 'object' && entry !== null && !Array.isArray(entry)) {
      const unknown = Object.keys(entry).find((k) => !ENTRY_FIELDS.includes(k));
      if (unknown !== undefined) {
        throw new ToolbusError(
          'invalid-config',
          `${at}: unknown field '${unknown}'; expected 'name', 'argument', 'style' and 'explode'`,
        );
      }
      resolved = entry as typeof resolved;
    } else {
      throw new ToolbusError(
        'invalid-config',
        `${at} must be an argument name or a { "name", "argument"?, "style"?, "explode"? } object`,
      );
    }
    const { name, argument = name, style = styles[0], explode } = resolved;
    if (typeof name !== 'string' || name === '') {
      throw new ToolbusError('invalid-config', `${at}: 'name' must be a non-empty string`);
    }
    if (typeof argument !== 'string' || argument === '') {
      throw new ToolbusError('invalid-config', `${at}: 'argument' must be a non-empty string`);
    }
    if (typeof style !== 'string' || !(styles as readonly string[]).includes(style)) {
      throw new ToolbusError(
        'invalid-config',
        `${at}: 'style' must be one of ${styles.map((s) => `'${s}'`).join(', ')} in the ${location}, got ${JSON.stringify(style)}`,
      );
    }
    if (explode !== undefined && typeof explode !== 'boolean') {
      throw new ToolbusError('invalid-config', `${at}: 'explode' must be true or false`);
    }
    if (location === 'header') {
      if (!isHeaderName(name)) {
        throw new ToolbusError('invalid-config', `${at}: '${name}' is not a valid HTTP header name`);
      }
      if (RESERVED_HEADERS.includes(name.toLowerCase())) {
        throw new ToolbusError(
          'invalid-config',
          `${at}: header '${name}' is set by the tool itself and cannot come from an argument`,
        );
      }
    }
    const wire = location === 'header' ? name.toLowerCase() : name;
    if (out.some((p) => (location === 'header' ? p.name.toLowerCase() : p.name) === wire)) {
      throw new ToolbusError('invalid-config', `${at}: '${name}' is listed twice`);
    }
    out.push({
      name,
      argument,
      style: style as HttpParameterStyle,
      explode: explode ?? (style === 'form' || style === 'deepObject'),
    });
  });
  return out;
}

/** One item of an array or object value, as text: scalars as they are, anything else as JSON. */
function itemText(value: unknown): string {
  return typeof value === 'object' && value !== null ? JSON.stringify(value) : String(value);
}

function definedEntries(value: object): [string, unknown][] {
  return Object.entries(value).filter(([, v]) => v !== undefined && v !== null);
}

/**
 * Appends one query argument to `params` in its style. `undefined` and `null` are not sent, like an
 * argument the model left out.
 */
export function appendQueryParameter(
  params: URLSearchParams,
  parameter: ResolvedHttpParameter,
  value: unknown,
): void {
  if (value === undefined || value === null) return;
  const { name, style, explode } = parameter;
  if (style === 'json') {
    params.append(name, JSON.stringify(value));
    return;
  }
  const delimiter = DELIMITERS[style] ?? ',';
  if (Array.isArray(value)) {
    const items = value.filter((v) => v !== undefined && v !== null).map(itemText);
    if (explode) for (const item of items) params.append(name, item);
    else params.append(name, items.join(delimiter));
    return;
  }
  if (typeof value === 'object') {
    const entries = definedEntries(value);
    if (style === 'deepObject') {
      for (const [key, v] of entries) params.append(`${name}[${key}]`, itemText(v));
    } else if (explode) {
      for (const [key, v] of entries) params.append(key, itemText(v));
    } else {
      params.append(name, entries.flatMap(([key, v]) => [key, itemText(v)]).join(delimiter));
    }
    return;
  }
  params.append(name, String(value));
}

/**
 * The header value of one header argument in its style, or `undefined` when the argument is not set.
 *
 * @throws ToolError `invalid-arguments` when the value would contain a line break.
 */
export function headerParameterValue(
  parameter: ResolvedHttpParameter,
  value: unknown,
  toolName: string,
): string | undefined {
  if (value === undefined || value === null) return undefined;
  let text: string;
  if (parameter.style === 'json') text = JSON.stringify(value);
  else if (Array.isArray(value)) {
    text = value
      .filter((v) => v !== undefined && v !== null)
      .map(itemText)
      .join(',');
  } else if (typeof value === 'object') {
    const entries = definedEntries(value);
    text = parameter.explode
      ? entries.map(([key, v]) => `${key}=${itemText(v)}`).join(',')
      : entries.flatMap(([key, v]) => [key, itemText(v)]).join(',');
  } else text = String(value);
  if (/[\r\n\0]/.test(text)) {
    throw new ToolError(
      'invalid-arguments',
      `tool '${toolName}': argument '${parameter.argument}' (header '${parameter.name}') must not contain line breaks`,
      { toolName },
    );
  }
  return text;
}
