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
import { McpOAuthGrant, checkMcpOAuthOptions, type McpOAuthOptions } from './oauth-options.js';

/** Where `{ "env": NAME }` values are read: `process.env` or a map of the same shape. */
export type McpConfigEnvironment = Readonly<Record<string, string | undefined>>;

/** An option's name in the `oauth` object: `clientId` is `client-id`. */
const fieldOf = (option: keyof McpOAuthOptions): string =>
  option.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`);

/** The options config sets as written (besides `grant` and the secrets); their checks apply. */
const OPTIONS = [
  'clientId',
  'signingAlgorithm',
  'tokenEndpointAuthMethod',
  'clientMetadataUrl',
  'scope',
  'clientName',
  'redirectUrl',
  'issuer',
  'refreshMarginMs',
] as const satisfies readonly (keyof McpOAuthOptions)[];

/** The secret options: `{ "env": NAME }` only. */
const SECRETS = ['clientSecret', 'privateKey'] as const satisfies readonly (keyof McpOAuthOptions)[];

const KNOWN_FIELDS = ['grant', ...OPTIONS.map(fieldOf), ...SECRETS.map(fieldOf)];

const GRANT_NAMES: Record<string, McpOAuthGrant> = {
  authorization_code: McpOAuthGrant.AuthorizationCode,
  'authorization-code': McpOAuthGrant.AuthorizationCode,
  client_credentials: McpOAuthGrant.ClientCredentials,
  'client-credentials': McpOAuthGrant.ClientCredentials,
};

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Stands for a secret that is not read (a check before the item is stored). */
const UNREAD_SECRET = '(not read)';

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
 * for their `{ "env": NAME }` form and left out: a check before the item is stored). The options get
 * the checks of `resolveMcpOAuthOptions`, fields named as in config, so an item that would fail once
 * used fails when it is stored. Throws `ToolbusError` `invalid-config` naming the field and what is
 * expected; a missing variable is named, a value never shown.
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
  // Values go to the options as written; the options' checks say what is wrong with them.
  const options: Record<string, unknown> = {};
  for (const option of OPTIONS) {
    if (value[fieldOf(option)] !== undefined) options[option] = value[fieldOf(option)];
  }
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
    options['grant'] = known;
  }
  const unread: string[] = [];
  for (const option of SECRETS) {
    const field = fieldOf(option);
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
    if (env === undefined) {
      unread.push(option);
      continue;
    }
    const secret = env[name];
    if (secret === undefined || secret === '') {
      throw new ToolbusError(
        'invalid-config',
        `${where}: 'oauth.${field}' takes its value from environment variable '${name}', which is not set`,
      );
    }
    options[option] = secret;
  }
  const checked: Record<string, unknown> = { ...options };
  for (const option of unread) checked[option] = UNREAD_SECRET;
  // A key that is not read cannot tell its algorithm: that check waits for the key.
  if (unread.includes('privateKey')) checked['signingAlgorithm'] ??= 'RS256';
  checkMcpOAuthOptions(checked as McpOAuthOptions, { where, field: fieldOf });
  return options as McpOAuthOptions;
}
