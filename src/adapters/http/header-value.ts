/**
 * @module Header values of the HTTP tool: static strings, or values read from the environment at call
 * time so secrets never live in config.
 */
import { ToolError } from '../../tools/index.js';
import { ToolbusError } from '../../errors/index.js';

/**
 * A header value taken from an environment variable when the tool is called, e.g.
 * `{ "env": "API_TOKEN", "prefix": "Bearer " }` sends `Authorization: Bearer <value of API_TOKEN>`.
 * The variable is read on every call, so a rotated secret is picked up without a reload.
 */
export interface EnvHeaderValue {
  /** The environment variable's name. */
  env: string;
  /** Text put before the value. @default '' */
  prefix?: string;
}

/** One configured header: a static value, or an {@link EnvHeaderValue}. */
export type HttpHeaderValue = string | EnvHeaderValue;

/** Where {@link EnvHeaderValue}s are looked up: `process.env` or any map of the same shape. */
export type HeaderEnvironment = Readonly<Record<string, string | undefined>>;

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** True when `name` is a valid HTTP header name (an RFC 9110 token). */
export function isHeaderName(name: string): boolean {
  return HEADER_NAME.test(name);
}

/**
 * Checks the configured headers and returns a fresh copy.
 *
 * @throws ToolbusError `invalid-config` naming the header that is not a valid name or value shape.
 */
export function checkHeaders(
  headers: Readonly<Record<string, unknown>>,
  owner: string,
): Record<string, HttpHeaderValue> {
  const out: Record<string, HttpHeaderValue> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (!isHeaderName(name)) {
      throw new ToolbusError(
        'invalid-config',
        `${owner}: header name '${name}' is not a valid HTTP header name`,
      );
    }
    if (typeof value === 'string') {
      if (/[\r\n\0]/.test(value)) {
        throw new ToolbusError('invalid-config', `${owner}: header '${name}' must not contain line breaks`);
      }
      out[name] = value;
      continue;
    }
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
      const { env, prefix, ...rest } = value as Record<string, unknown>;
      const extra = Object.keys(rest);
      if (
        typeof env === 'string' &&
        ENV_NAME.test(env) &&
        (prefix === undefined || typeof prefix === 'string')
      ) {
        if (extra.length > 0) {
          throw new ToolbusError(
            'invalid-config',
            `${owner}: header '${name}' has unknown field '${extra[0]}'; expected only 'env' and 'prefix'`,
          );
        }
        out[name] = prefix === undefined ? { env } : { env, prefix };
        continue;
      }
    }
    throw new ToolbusError(
      'invalid-config',
      `${owner}: header '${name}' must be a string or { "env": "VARIABLE_NAME", "prefix"?: string }`,
    );
  }
  return out;
}

/**
 * Resolves the headers for one call. Never puts a secret's value in an error message. `secret` holds the
 * (lower-case) names of headers taken from the environment, `secretValues` their values, so that text
 * quoted from a response can be redacted.
 *
 * @throws ToolError `invalid-config` naming the header and the missing variable.
 */
export function resolveHeaders(
  headers: Readonly<Record<string, HttpHeaderValue>>,
  env: HeaderEnvironment,
  toolName: string,
): { values: Record<string, string>; secret: Set<string>; secretValues: string[] } {
  const values: Record<string, string> = {};
  const secret = new Set<string>();
  const secretValues: string[] = [];
  for (const [name, spec] of Object.entries(headers)) {
    if (typeof spec === 'string') {
      values[name] = spec;
      continue;
    }
    const value = env[spec.env];
    if (value === undefined || value === '') {
      throw new ToolError(
        'invalid-config',
        `tool '${toolName}': header '${name}' takes its value from environment variable '${spec.env}', which is not set`,
        { toolName },
      );
    }
    if (/[\r\n\0]/.test(value)) {
      throw new ToolError(
        'invalid-config',
        `tool '${toolName}': environment variable '${spec.env}' (for header '${name}') contains a line break`,
        { toolName },
      );
    }
    values[name] = `${spec.prefix ?? ''}${value}`;
    secret.add(name.toLowerCase());
    secretValues.push(value);
  }
  return { values, secret, secretValues };
}
