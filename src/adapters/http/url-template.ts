/**
 * @module URL templates of the HTTP tool: `{param}` placeholders after the origin, each value
 * percent-encoded as one path segment or query value.
 */
import { ToolError } from '../../tools/index.js';
import { ToolbusError } from '../../errors/index.js';

/** A placeholder such as `{city}`: a name of letters, digits, `_` and `-`. */
const PLACEHOLDER = /\{([^{}]*)\}/g;
const PARAM_NAME = /^[A-Za-z_][A-Za-z0-9_-]*$/;

/** A parsed URL template: a fixed origin, then a path (and optional query) with placeholders. */
export interface UrlTemplate {
  /** The template as written, e.g. `https://api.example.com/v1/users/{id}`. */
  readonly source: string;
  /** The placeholder names, in order of first appearance, without duplicates. */
  readonly params: readonly string[];
}

/**
 * Parses a URL template. Placeholders may appear only after the origin (`scheme://host:port`), so
 * a model can never choose which host is called.
 *
 * @throws ToolbusError `invalid-config` when the template is not an absolute http(s) URL, has a
 *   placeholder in its origin, or a placeholder name that is not an identifier.
 */
export function parseUrlTemplate(source: string, owner: string): UrlTemplate {
  const match = /^(https?):\/\/([^/?#]*)(.*)$/i.exec(source);
  if (!match) {
    throw new ToolbusError(
      'invalid-config',
      `${owner}: url '${source}' must be an absolute http:// or https:// URL`,
    );
  }
  const origin = match[2] ?? '';
  if (origin.includes('{') || origin.includes('}')) {
    throw new ToolbusError(
      'invalid-config',
      `${owner}: url '${source}' has a placeholder in its host; placeholders are allowed only in the path and query`,
    );
  }
  const params: string[] = [];
  for (const m of (match[3] ?? '').matchAll(PLACEHOLDER)) {
    const name = m[1] ?? '';
    if (!PARAM_NAME.test(name)) {
      throw new ToolbusError(
        'invalid-config',
        `${owner}: url '${source}' has placeholder '{${name}}'; expected a name of letters, digits, '_' or '-'`,
      );
    }
    if (!params.includes(name)) params.push(name);
  }
  try {
    new URL(source.replace(PLACEHOLDER, 'x'));
  } catch (error) {
    throw new ToolbusError('invalid-config', `${owner}: url '${source}' is not a valid URL`, {
      cause: error,
    });
  }
  return { source, params };
}

/**
 * Builds the template from AutoGen's separate fields.
 *
 * @throws ToolbusError `invalid-config` on a bad scheme, host, port or path.
 */
export function urlTemplateFromParts(
  parts: { scheme: string; host: string; port: number | undefined; path: string },
  owner: string,
): UrlTemplate {
  const { scheme, host, port, path } = parts;
  if (scheme !== 'http' && scheme !== 'https') {
    throw new ToolbusError('invalid-config', `${owner}: scheme must be 'http' or 'https', got '${scheme}'`);
  }
  if (host === '' || /[/?#@{}\s]/.test(host)) {
    throw new ToolbusError(
      'invalid-config',
      `${owner}: host must be a bare host name or IP address (no scheme, path or placeholder), got '${host}'`,
    );
  }
  if (port !== undefined && (!Number.isInteger(port) || port < 1 || port > 65_535)) {
    throw new ToolbusError(
      'invalid-config',
      `${owner}: port must be an integer from 1 to 65535, got ${String(port)}`,
    );
  }
  const hostPart = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  const pathPart = path.startsWith('/') ? path : `/${path}`;
  return parseUrlTemplate(`${scheme}://${hostPart}${port === undefined ? '' : `:${port}`}${pathPart}`, owner);
}

/**
 * Substitutes the placeholders with percent-encoded argument values (spaces, non-ASCII and `/`
 * included), so a value always stays inside its own segment.
 *
 * @throws ToolError `invalid-arguments` when a value is missing, is not a string, number or boolean,
 *   or is `.`/`..` (which would move up the path), or is empty in the path (which would name another
 *   resource).
 */
export function expandUrlTemplate(
  template: UrlTemplate,
  args: Readonly<Record<string, unknown>>,
  toolName: string,
): URL {
  const queryAt = template.source.search(/[?#]/);
  const text = template.source.replace(PLACEHOLDER, (_whole, name: string, offset: number) => {
    const value = args[name];
    if (value === undefined || value === null) {
      throw new ToolError(
        'invalid-arguments',
        `tool '${toolName}': argument '${name}' is required (it is part of the URL path)`,
        { toolName },
      );
    }
    if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') {
      throw new ToolError(
        'invalid-arguments',
        `tool '${toolName}': argument '${name}' must be a string, number or boolean (it is part of the URL path), got ${Array.isArray(value) ? 'array' : typeof value}`,
        { toolName },
      );
    }
    const raw = String(value);
    // An empty path value names another resource: `/items/{id}` would become `/items/`.
    if (raw === '' && (queryAt < 0 || offset < queryAt)) {
      throw new ToolError(
        'invalid-arguments',
        `tool '${toolName}': argument '${name}' must not be empty (it is part of the URL path)`,
        { toolName },
      );
    }
    if (raw === '.' || raw === '..') {
      throw new ToolError(
        'invalid-arguments',
        `tool '${toolName}': argument '${name}' must not be '${raw}' (it is part of the URL path)`,
        { toolName },
      );
    }
    return encodeURIComponent(raw);
  });
  return new URL(text);
}
