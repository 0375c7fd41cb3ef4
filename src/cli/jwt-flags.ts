/**
 * @module The flags of `toolbus up` for an identity provider's tokens: `--jwt-*` (verify its JWTs) and
 * `--oauth`, `--oauth-issuer`, `--oauth-scopes`, `--public-url` (be an OAuth 2.1 resource server for it,
 * so MCP clients find the provider and get a token themselves), each also read from a `TOOLBUS_*`
 * variable.
 */
import type { GatewayOAuthOptions } from '../gateway/index.js';
import { isLoopbackHost } from '../gateway/index.js';
import { splitList, type JwtOptions } from '../policy/index.js';
import { UsageError, type CliIO } from './command.js';

/** The JWT and OAuth flags `toolbus up` takes. */
export const JWT_FLAGS = {
  'jwt-jwks': { type: 'string' },
  'jwt-issuer': { type: 'string' },
  'jwt-audience': { type: 'string' },
  'jwt-user-claim': { type: 'string' },
  'jwt-roles-claim': { type: 'string' },
  oauth: { type: 'boolean' },
  'oauth-issuer': { type: 'string' },
  'oauth-scopes': { type: 'string' },
  'public-url': { type: 'string' },
} as const;

/** Help text lines for {@link JWT_FLAGS}. */
export const JWT_FLAGS_HELP = `  --jwt-jwks URL     also accept JWTs of an OpenID Connect provider, verified with its JWKS at URL
                     (https, or http on loopback); needs --jwt-issuer, and --jwt-audience or --oauth
  --jwt-issuer ISS   the "iss" every JWT must carry
  --jwt-audience AUD the "aud" every JWT must carry (with --oauth, the resource URL does too)
  --jwt-user-claim C the claim naming the user the calls are for (default: sub)
  --jwt-roles-claim C
                     the claim listing the roles, an array or a space-separated string (default:
                     roles; a token without it is a caller)
  --oauth            be an OAuth 2.1 resource server for that provider, so MCP clients (Claude
                     Desktop, the MCP Inspector…) sign the user in instead of taking a pasted token:
                     serve /.well-known/oauth-protected-resource (and /mcp's at …/mcp) naming the
                     authorization server, point every 401 at it, accept a token whose audience is
                     the resource URL it is sent to (https://HOST/mcp), and, for a token without
                     the roles claim, take the roles caller and approver from its toolbus:caller
                     and toolbus:approver scopes (none: caller). admin and impersonate come only
                     from the roles claim: any user's client may ask for any scope. Needs
                     --jwt-jwks and --jwt-issuer (README: "Signing in MCP clients with OAuth")
  --oauth-issuer URL the authorization server to advertise (default: --jwt-issuer); implies --oauth
  --oauth-scopes SCOPES
                     scopes to advertise as scopes_supported, which clients then ask for, e.g.
                     toolbus:caller (default: none); implies --oauth
  --public-url URL   the gateway's public origin behind a TLS proxy, e.g. https://tools.example.com:
                     the origin of its resource URLs, and a name it answers to (default: the name
                     and port a request reaches it at). Needed with --oauth behind a proxy`;

/** Help text lines for the variables of {@link JWT_FLAGS}. */
export const JWT_ENV_HELP = `  TOOLBUS_JWT_JWKS, TOOLBUS_JWT_ISSUER, TOOLBUS_JWT_AUDIENCE, TOOLBUS_JWT_USER_CLAIM,
  TOOLBUS_JWT_ROLES_CLAIM, TOOLBUS_OAUTH (1), TOOLBUS_OAUTH_ISSUER, TOOLBUS_OAUTH_SCOPES,
  TOOLBUS_PUBLIC_URL
                     as the --jwt-*, --oauth* and --public-url flags`;

/** What the flags of {@link JWT_FLAGS} ask for. */
export interface JwtFlagSettings {
  /** The provider whose JWTs the gateway accepts; undefined without `--jwt-jwks`. */
  jwt: JwtOptions | undefined;
  /** The OAuth resource server's settings; undefined without `--oauth`. */
  oauth: GatewayOAuthOptions | undefined;
  /** `--public-url`, as an origin. */
  publicUrl: string | undefined;
}

type JwtFlagValues = {
  [K in keyof typeof JWT_FLAGS]?: (typeof JWT_FLAGS)[K]['type'] extends 'boolean'
    ? boolean | undefined
    : string | undefined;
};

/** `text` as an http(s) URL; https unless on a loopback host. @throws UsageError naming the flag. */
function secureUrl(flag: string, text: string, example: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new UsageError(`${flag} takes a URL such as ${example}, got '${text}'`);
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopbackHost(url.hostname))) {
    throw new UsageError(
      `${flag} must be an https URL (http only on 127.0.0.1 or localhost): what is fetched in the clear could be swapped, got '${url.protocol}//${url.host}'`,
    );
  }
  return url;
}

/**
 * The flags' values (else the `TOOLBUS_*` variables), checked.
 * @throws UsageError naming the flag: a missing companion (`--jwt-jwks` without `--jwt-issuer`, `--oauth`
 * without `--jwt-jwks`), a URL that is not https off loopback, a public URL with a path, `--oauth` with
 * `--allowed-hosts '*'` but no `--public-url`.
 */
export function parseJwtFlags(
  values: JwtFlagValues,
  env: CliIO['env'],
  allowedHosts: readonly string[],
): JwtFlagSettings {
  const pick = (flag: Exclude<keyof typeof JWT_FLAGS, 'oauth'>): string | undefined => {
    const value = values[flag] ?? env[`TOOLBUS_${flag.toUpperCase().replace(/-/g, '_')}`];
    return value === undefined || value.trim() === '' ? undefined : value.trim();
  };
  const jwksUrl = pick('jwt-jwks');
  const issuer = pick('jwt-issuer');
  const audience = pick('jwt-audience');
  const userClaim = pick('jwt-user-claim');
  const rolesClaim = pick('jwt-roles-claim');
  const oauthIssuer = pick('oauth-issuer');
  const oauthScopes = pick('oauth-scopes');
  const publicUrlText = pick('public-url');
  const oauthOn =
    values.oauth === true ||
    /^(1|true|yes|on)$/i.test(env['TOOLBUS_OAUTH'] ?? '') ||
    oauthIssuer !== undefined ||
    oauthScopes !== undefined;

  let publicUrl: string | undefined;
  if (publicUrlText !== undefined) {
    const url = secureUrl('--public-url', publicUrlText, 'https://tools.example.com');
    if (url.pathname !== '/' || url.search !== '' || url.hash !== '') {
      throw new UsageError(
        `--public-url takes an origin such as https://tools.example.com (scheme, host and port only): the ` +
          `gateway's routes and its /.well-known metadata are at the root, got '${publicUrlText}'`,
      );
    }
    publicUrl = url.origin;
  }

  if (jwksUrl === undefined) {
    if (issuer ?? audience ?? userClaim ?? rolesClaim) {
      throw new UsageError(
        'the --jwt-* options need --jwt-jwks URL, the JWKS of the provider whose tokens to accept',
      );
    }
    if (oauthOn) {
      throw new UsageError(
        '--oauth needs --jwt-jwks URL and --jwt-issuer ISS: the gateway verifies the authorization ' +
          "server's tokens with its keys",
      );
    }
    return { jwt: undefined, oauth: undefined, publicUrl };
  }
  if (issuer === undefined || (audience === undefined && !oauthOn)) {
    throw new UsageError(
      '--jwt-jwks needs --jwt-issuer and --jwt-audience (or --oauth, where the resource URL is the ' +
        'audience): without them a token minted for another service would be accepted',
    );
  }
  secureUrl('--jwt-jwks', jwksUrl, 'https://idp.example.com/.well-known/jwks.json');
  const jwt: JwtOptions = {
    jwksUrl,
    issuer,
    ...(audience !== undefined ? { audience } : {}),
    ...(userClaim ? { userClaim } : {}),
    ...(rolesClaim ? { rolesClaim } : {}),
    ...(oauthOn ? { resourceAudience: true, rolesFromScope: true } : {}),
  };
  if (!oauthOn) return { jwt, oauth: undefined, publicUrl };

  const advertised = oauthIssuer ?? issuer;
  const server = secureUrl(
    oauthIssuer ? '--oauth-issuer' : '--jwt-issuer',
    advertised,
    'https://idp.example.com',
  );
  if (server.search !== '' || server.hash !== '') {
    throw new UsageError(
      `${oauthIssuer ? '--oauth-issuer' : '--jwt-issuer'} must be an issuer URL without query or fragment, got '${advertised}'`,
    );
  }
  if (publicUrl === undefined && allowedHosts.includes('*')) {
    throw new UsageError(
      "--oauth with --allowed-hosts '*' needs --public-url, the URL clients reach the gateway at: " +
        'resource URLs built from any Host a client sends would accept tokens minted for other servers',
    );
  }
  const scopes = oauthScopes === undefined ? [] : splitList(oauthScopes.replace(/\s+/g, ','));
  for (const scope of scopes) {
    if (!/^[\x21\x23-\x5b\x5d-\x7e]+$/.test(scope)) {
      throw new UsageError(`--oauth-scopes: '${scope}' is not an OAuth scope (printable ASCII, no quotes)`);
    }
  }
  return {
    jwt,
    oauth: { authorizationServers: [advertised], ...(scopes.length > 0 ? { scopesSupported: scopes } : {}) },
    publicUrl,
  };
}
