/**
 * @module The `oauth` option of an HTTP MCP server (`mcpServerTools({ url, oauth })`, an `mcp/<id>`
 * item's `"oauth"`): which OAuth 2.1 grant gets the tokens, the client's identity, and how a person
 * approves when one must.
 */
import { createPrivateKey } from 'node:crypto';
import { ToolbusError } from '../../../errors/index.js';
import type { McpOAuthStore } from './oauth-store.js';

/** How toolbus obtains tokens from the authorization server. */
export const McpOAuthGrant = {
  /** A person approves in a browser (PKCE); tokens are refreshed with the refresh token. */
  AuthorizationCode: 'authorization_code',
  /** A service authenticates as itself with its client credentials; no person involved. */
  ClientCredentials: 'client_credentials',
  /** RFC 7523 JWT bearer grant with an assertion from `assertion` (e.g. cross-app access, SEP-990). */
  JwtBearer: 'jwt-bearer',
} as const;
/** One of {@link McpOAuthGrant}'s values. */
export type McpOAuthGrant = (typeof McpOAuthGrant)[keyof typeof McpOAuthGrant];

/** How the client authenticates at the token endpoint. */
export type McpTokenEndpointAuthMethod =
  'client_secret_basic' | 'client_secret_post' | 'private_key_jwt' | 'none';

/** What {@link McpOAuthOptions.authorize} is asked to do: send a person to `url` and return the redirect. */
export interface McpAuthorizeRequest {
  /** The authorization URL to open in a browser. */
  url: URL;
  /** Where the authorization server sends the browser back to, with `code` and `state`. */
  redirectUrl: string;
  /** The `state` the redirect must carry; toolbus checks it again when the redirect comes back. */
  state: string;
  /** Aborted when the caller gives up (the call's or the login's signal). */
  signal: AbortSignal;
}

/**
 * The redirect a person's browser was sent to: the whole URL, or its query (`code`, `state`, `iss`,
 * or `error`).
 */
export type McpOAuthRedirect = URL | URLSearchParams | string;

/** What {@link McpOAuthOptions.assertion} gets to build a JWT authorization grant for the server. */
export interface McpJwtAssertionRequest {
  /** The MCP server's authorization server (its issuer), the grant's audience. */
  authorizationServerUrl: string;
  /** The MCP server's resource identifier (RFC 9728 `resource`). */
  resourceUrl: string;
  /** The scope being asked for, if any. */
  scope?: string;
  /** Aborts the request. */
  signal: AbortSignal;
}

/**
 * OAuth 2.1 for an MCP server over HTTP, as the MCP authorization spec describes it: discovery of
 * protected-resource and authorization-server metadata (with the 2025-03-26 fallbacks), client
 * registration (pre-registered, client ID metadata document, or dynamic), PKCE, scope selection and
 * step-up, refresh before expiry. Built on the official SDK's `auth()`.
 *
 * @example
 * ```ts
 * // A service: client credentials, no browser.
 * const tools = await mcpServerTools({
 *   url: 'https://mcp.example.com/mcp',
 *   oauth: { grant: 'client_credentials', clientId: 'svc', clientSecret: process.env.MCP_SECRET },
 * });
 * ```
 */
export interface McpOAuthOptions {
  /** How tokens are obtained. @default 'authorization_code' */
  grant?: McpOAuthGrant;
  /**
   * A client registered beforehand with the authorization server. Without it toolbus uses
   * {@link clientMetadataUrl} when the server supports client ID metadata documents, else dynamic
   * client registration. Required for `client_credentials` and `jwt-bearer`. @default none
   */
  clientId?: string;
  /** The pre-registered client's secret (`client_secret_basic` or `client_secret_post`). @default none */
  clientSecret?: string;
  /** A PEM (PKCS#8) private key: the client authenticates with `private_key_jwt`. @default none */
  privateKey?: string;
  /** The JWS algorithm of {@link privateKey}. @default from the key: RS256, ES256/384/512 or EdDSA */
  signingAlgorithm?: string;
  /**
   * How the client authenticates at the token endpoint.
   * @default 'private_key_jwt' with a privateKey; with a secret, the first of basic and post the server
   * supports; else 'none'
   */
  tokenEndpointAuthMethod?: McpTokenEndpointAuthMethod;
  /** An https URL serving this client's metadata document (SEP-991), used as its client ID. @default none */
  clientMetadataUrl?: string;
  /**
   * The scope to ask for when the server names none. As the MCP spec's scope selection says, the
   * server's choice comes first: the `scope` of its `WWW-Authenticate` challenge, else its metadata's
   * `scopes_supported`; `offline_access` is added when the authorization server offers it (for a
   * refresh token). A 403 `insufficient_scope` widens it (step-up). @default none
   */
  scope?: string;
  /** The client name sent when registering. @default 'toolbus' */
  clientName?: string;
  /**
   * The redirect URI of the `authorization_code` grant. A pre-registered client needs the one it was
   * registered with. @default the one of the last login, else 'http://127.0.0.1/callback'
   */
  redirectUrl?: string;
  /**
   * The authorization server (its issuer URL) the client credentials belong to: they are never sent to
   * another one. @default the first authorization server they are used with
   */
  issuer?: string;
  /** Where the state (registration, tokens) is kept. @default a new MemoryMcpOAuthStore */
  store?: McpOAuthStore;
  /**
   * Lets a person approve: open `request.url` in a browser and resolve with the redirect it comes back
   * to. Without it, a server that needs a person fails with code `unauthorized` saying what to do,
   * instead of waiting. @default none
   */
  authorize?: (request: McpAuthorizeRequest) => Promise<McpOAuthRedirect>;
  /** For `grant: 'jwt-bearer'`: returns the JWT authorization grant (e.g. an ID-JAG from an IdP). @default none */
  assertion?: (request: McpJwtAssertionRequest) => Promise<string>;
  /**
   * Refresh this long before the access token expires (at most a quarter of its lifetime), so a call
   * never goes out with a token about to expire. @default DEFAULT_REFRESH_MARGIN_MS (60 000)
   */
  refreshMarginMs?: number;
}

/** Default of {@link McpOAuthOptions.refreshMarginMs}: refresh one minute before expiry. */
export const DEFAULT_REFRESH_MARGIN_MS = 60_000;

/** The redirect URI when none is configured and no login chose one (RFC 8252 loopback, any port). */
export const DEFAULT_REDIRECT_URL = 'http://127.0.0.1/callback';

const GRANTS: readonly string[] = Object.values(McpOAuthGrant);
const AUTH_METHODS: readonly string[] = [
  'client_secret_basic',
  'client_secret_post',
  'private_key_jwt',
  'none',
];

/** {@link McpOAuthOptions} checked, with the signing algorithm known. */
export interface ResolvedMcpOAuthOptions extends Omit<McpOAuthOptions, 'grant' | 'clientName'> {
  grant: McpOAuthGrant;
  clientName: string;
  refreshMarginMs: number;
}

/**
 * How {@link checkMcpOAuthOptions} names what it refuses: where the options came from, and each option
 * as it was written there (an `mcp/<id>` item spells `clientId` as `client-id`).
 */
export interface McpOAuthOptionNaming {
  /** Starts every message, e.g. `config 'mcp/files'`. */
  where: string;
  /** The name an option was given as. */
  field: (option: keyof McpOAuthOptions) => string;
}

/** The options as `mcpServerTools({ url, oauth })` takes them. */
const OPTION_NAMING: McpOAuthOptionNaming = { where: 'MCP server', field: (option) => option };

function describe(value: unknown): string {
  if (value === '') return 'an empty string';
  if (value === null) return 'null';
  return Array.isArray(value) ? 'an array' : typeof value;
}

/** The JWS algorithm a PEM private key signs with by default; never shows the key in an error. */
function algorithmOf(
  pem: string,
  fail: (field: keyof McpOAuthOptions, expected: string) => never,
  name: (option: keyof McpOAuthOptions) => string,
): string {
  let key;
  try {
    key = createPrivateKey(pem);
  } catch {
    fail(
      'privateKey',
      'must be a PEM private key (PKCS#8, "-----BEGIN PRIVATE KEY-----"); it could not be read',
    );
  }
  const type = key.asymmetricKeyType;
  if (type === 'rsa' || type === 'rsa-pss') return type === 'rsa' ? 'RS256' : 'PS256';
  if (type === 'ed25519') return 'EdDSA';
  if (type === 'ec') {
    const curve = key.asymmetricKeyDetails?.namedCurve;
    if (curve === 'secp384r1') return 'ES384';
    if (curve === 'secp521r1') return 'ES512';
    return 'ES256';
  }
  return fail('privateKey', `is a ${String(type)} key; give '${name('signingAlgorithm')}' for it`);
}

function isLoopbackOrHttps(url: URL): boolean {
  return url.protocol === 'https:' || ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname);
}

/**
 * Checks `options` and fills in defaults. Throws `ToolbusError` `invalid-config` naming the field (never
 * a secret's value).
 */
export function resolveMcpOAuthOptions(options: McpOAuthOptions): ResolvedMcpOAuthOptions {
  return checkMcpOAuthOptions(options, OPTION_NAMING);
}

/**
 * {@link resolveMcpOAuthOptions}, with messages that name the fields as `naming` says: the one set of
 * checks for the option object and for the `"oauth"` of an `mcp/<id>` item.
 */
export function checkMcpOAuthOptions(
  options: McpOAuthOptions,
  naming: McpOAuthOptionNaming,
): ResolvedMcpOAuthOptions {
  const name = (option: keyof McpOAuthOptions): string => `oauth.${naming.field(option)}`;
  const fail = (field: keyof McpOAuthOptions, expected: string): never => {
    throw new ToolbusError('invalid-config', `${naming.where}: '${name(field)}' ${expected}`);
  };
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new ToolbusError('invalid-config', `${naming.where}: 'oauth' must be an object of OAuth options`);
  }
  const grant = options.grant ?? McpOAuthGrant.AuthorizationCode;
  if (!GRANTS.includes(grant)) fail('grant', `must be one of ${GRANTS.join(', ')}, got '${String(grant)}'`);
  for (const field of [
    'clientId',
    'clientSecret',
    'privateKey',
    'signingAlgorithm',
    'clientMetadataUrl',
    'scope',
    'clientName',
    'redirectUrl',
    'issuer',
  ] as const) {
    const value: unknown = options[field];
    if (value !== undefined && (typeof value !== 'string' || value === '')) {
      fail(field, `must be a non-empty string, got ${describe(value)}`);
    }
  }
  const method = options.tokenEndpointAuthMethod;
  if (method !== undefined && !AUTH_METHODS.includes(method)) {
    fail('tokenEndpointAuthMethod', `must be one of ${AUTH_METHODS.join(', ')}, got '${String(method)}'`);
  }
  if (options.clientSecret !== undefined && options.privateKey !== undefined) {
    fail('clientSecret', `and '${name('privateKey')}' are two ways to authenticate the client: give one`);
  }
  if (
    (options.clientSecret !== undefined || options.privateKey !== undefined) &&
    options.clientId === undefined
  ) {
    fail(
      'clientId',
      'is needed with a client secret or private key (they belong to a pre-registered client)',
    );
  }
  if (method === 'private_key_jwt' && options.privateKey === undefined) {
    fail('privateKey', `is needed for '${name('tokenEndpointAuthMethod')}' 'private_key_jwt'`);
  }
  if (
    (method === 'client_secret_basic' || method === 'client_secret_post') &&
    options.clientSecret === undefined
  ) {
    fail('clientSecret', `is needed for '${name('tokenEndpointAuthMethod')}' '${method}'`);
  }
  if (grant !== McpOAuthGrant.AuthorizationCode && options.clientId === undefined) {
    fail('clientId', `is needed for grant '${grant}': a service authenticates as a pre-registered client`);
  }
  if (grant === McpOAuthGrant.JwtBearer && typeof options.assertion !== 'function') {
    fail('assertion', "must be a function for grant 'jwt-bearer'");
  }
  if (options.authorize !== undefined && typeof options.authorize !== 'function') {
    fail('authorize', 'must be a function (request) => Promise<redirect>');
  }
  for (const field of ['redirectUrl', 'clientMetadataUrl', 'issuer'] as const) {
    const text = options[field];
    if (text === undefined) continue;
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      return fail(field, `must be an absolute URL, got '${text.slice(0, 80)}'`);
    }
    if (field === 'clientMetadataUrl' && (url.protocol !== 'https:' || url.pathname === '/')) {
      fail(field, 'must be an https URL with a path (a client ID metadata document)');
    }
    if (field === 'redirectUrl' && !isLoopbackOrHttps(url)) {
      fail(field, 'must be https, or http on a loopback address (127.0.0.1, localhost, [::1])');
    }
  }
  const margin: unknown = options.refreshMarginMs;
  if (margin !== undefined && (typeof margin !== 'number' || !Number.isFinite(margin) || margin < 0)) {
    fail(
      'refreshMarginMs',
      `must be a number of ms >= 0, got ${typeof margin === 'number' ? margin : describe(margin)}`,
    );
  }
  const signingAlgorithm =
    options.privateKey === undefined
      ? undefined
      : (options.signingAlgorithm ?? algorithmOf(options.privateKey, fail, name));
  return {
    ...options,
    grant,
    clientName: options.clientName ?? 'toolbus',
    refreshMarginMs: (margin as number | undefined) ?? DEFAULT_REFRESH_MARGIN_MS,
    ...(signingAlgorithm !== undefined ? { signingAlgorithm } : {}),
  };
}
