/**
 * @module The `"oauth"` object of an `mcp/<id>` config item, in kebab-case: `grant`, `client-id`,
 * `client-secret`, `private-key`, `signing-algorithm`, `token-endpoint-auth-method`,
 * `client-metadata-url`, `scope`, `client-name`, `redirect-url`, `issuer`, `refresh-margin-ms`.
 * Config never holds a secret: `client-secret` and `private-key` are only `{ "env": "NAME" }`, read from
 * the environment of the process that connects, and only for variables the operator allows
 * (`TOOLBUS_ALLOW_ENV`, checked where config is used).
 */
import type { JsonObject, JsonValue } from '../../../schema/index.js';
import { ToolbusError, didYouMean } from '../../../errors/index.js';
import { McpOAuthGrant, type McpOAuthOptions, type McpTokenEndpointAuthMethod } from './oauth-options.js';

/** Where `{ "env": NAME }` values are read: `process.env` or a map of the same shape. */
export type McpConfigEnvironment = Readonly<Record<string, string | undefined>>;

/** The text fields of the `oauth` object and the option each sets. */
const TEXT_FIELDS = {
  'client-id': 'clientId',
  'signing-algorithm': 'signingAlgorithm',
  'client-metadata-url': 'clientMetadataUrl',
  scope: 'scope',
  'client-name': 'clientName',
  'redirect-url': 'redirectUrl',
  issuer: 'issuer',
} as const;

/** The secret fields: `{ "env": NAME }` only. */
const SECRET_FIELDS = { 'client-secret': 'clientSecret', 'private-key': 'privateKey' } as const;

const OTHER_FIELDS = ['grant', 'token-endpoint-auth-method', 'refresh-margin-ms'];
const KNOWN_FIELDS = [...Object.keys(TEXT_FIELDS), ...Object.keys(SECRET_FIELDS), ...OTHER_FIELDS];

const GRANT_NAMES: Record<string, McpOAuthGrant> = {
  authorization_code: McpOAuthGrant.AuthorizationCode,
  'authorization-code': McpOAuthGrant.AuthorizationCode,
  client_credentials: McpOAuthGrant.ClientCredentials,
  'client-credentials': McpOAuthGrant.ClientCredentials,
};

const AUTH_METHODS = ['client_secret_basic', 'client_secret_post', 'private_key_jwt', 'none'];

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

function isObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function describe(value: JsonValue | undefined): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : typeof value;
}

/**
 * Parses the `oauth` object of config item `mcp/<id>` (`where` names it in messages) into
 * {@link McpOAuthOptions}, reading secrets from `env` (with `env` undefined, secrets are only checked
 * for their `{ "env": NAME }` form and left out: a check before the item is stored). Throws
 * `ToolbusError` `invalid-config` naming the field and what is expected; a missing variable is named, a
 * value never shown.
 *
 * @example
 * ```json
 * { "grant": "client_credentials", "client-id": "reports", "client-secret": { "env": "REPORTS_SECRET" } }
 * ```
 */
export function parseOAuthConfig(
  value: JsonValue,
  where: string,
  env: McpConfigEnvironment | undefined,
): McpOAuthOptions {
  if (!isObject(value)) {
    throw new ToolbusError(
      'invalid-config',
      `${where}: 'oauth' must be an object such as {"grant": "authorization_code"}, got ${describe(value)}`,
    );
  }
  for (const field of Object.keys(value)) {
    if (!KNOWN_FIELDS.includes(field)) {
      throw new ToolbusError(
        'invalid-config',
        `${where}: 'oauth' has no field '${field}'${didYouMean(field, KNOWN_FIELDS)}; it takes ${KNOWN_FIELDS.join(', ')}`,
      );
    }
  }
  const options: McpOAuthOptions = {};
  const grant = value['grant'];
  if (grant !== undefined) {
    const known = typeof grant === 'string' ? GRANT_NAMES[grant] : undefined;
    if (known === undefined) {
      throw new ToolbusError(
        'invalid-config',
        `${where}: 'oauth.grant' must be "authorization_code" or "client_credentials", got ` +
          (typeof grant === 'string' ? `'${grant.slice(0, 40)}'` : describe(grant)),
      );
    }
    options.grant = known;
  }
  for (const [field, option] of Object.entries(TEXT_FIELDS)) {
    const text = value[field];
    if (text === undefined) continue;
    if (typeof text !== 'string' || text === '') {
      throw new ToolbusError(
        'invalid-config',
        `${where}: 'oauth.${field}' must be a non-empty string, got ${describe(text)}`,
      );
    }
    options[option] = text;
  }
  const method = value['token-endpoint-auth-method'];
  if (method !== undefined) {
    if (typeof method !== 'string' || !AUTH_METHODS.includes(method)) {
      throw new ToolbusError(
        'invalid-config',
        `${where}: 'oauth.token-endpoint-auth-method' must be one of ${AUTH_METHODS.join(', ')}`,
      );
    }
    options.tokenEndpointAuthMethod = method as McpTokenEndpointAuthMethod;
  }
  const margin = value['refresh-margin-ms'];
  if (margin !== undefined) {
    if (typeof margin !== 'number' || !Number.isFinite(margin) || margin < 0) {
      throw new ToolbusError(
        'invalid-config',
        `${where}: 'oauth.refresh-margin-ms' must be a number of ms >= 0, got ${describe(margin)}`,
      );
    }
    options.refreshMarginMs = margin;
  }
  for (const [field, option] of Object.entries(SECRET_FIELDS)) {
    const spec = value[field];
    if (spec === undefined) continue;
    const name = isObject(spec) && Object.keys(spec).length === 1 ? spec['env'] : undefined;
    if (typeof name !== 'string' || !ENV_NAME.test(name)) {
      throw new ToolbusError(
        'invalid-config',
        `${where}: 'oauth.${field}' must be {"env": "VARIABLE_NAME"}: config never holds a secret, it names ` +
          'the environment variable that does',
      );
    }
    if (env === undefined) continue;
    const secret = env[name];
    if (secret === undefined || secret === '') {
      throw new ToolbusError(
        'invalid-config',
        `${where}: 'oauth.${field}' takes its value from environment variable '${name}', which is not set`,
      );
    }
    options[option] = secret;
  }
  return options;
}
