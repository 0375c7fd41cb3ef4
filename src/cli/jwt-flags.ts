/**
 * @module The flags of `toolbus up` for an identity provider's tokens: `--jwt-*` (verify its JWTs) and
 * `--oauth`, `--oauth-issuer`, `--oauth-scopes`, `--public-url` (be an OAuth 2.1 resource server for it,
 * so MCP clients find the provider and get a token themselves), each also read from a `TOOLBUS_*`
 * variable.
 */
import { isToolbusError } from '../errors/index.js';
import { isHttpsOrLoopbackUrl, resolveResourceServer, type GatewayOAuthOptions } from '../gateway/index.js';
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

/**
 * The flags' values (else the `TOOLBUS_*` variables), checked: the companions here, the URLs and
 * scopes by the gateway's own checks ({@link resolveResourceServer}, as `createGateway` makes them).
 * @throws UsageError: a missing companion (`--jwt-jwks` without `--jwt-issuer`, `--oauth` without
 * `--jwt-jwks`), a URL that is not https off loopback, a public URL with a path, a bad scope, `--oauth`
 * with `--allowed-hosts '*'` but no `--public-url`.
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

  let jwt: JwtOptions | undefined;
  let oauth: GatewayOAuthOptions | undefined;
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
  } else {
    if (issuer === undefined || (audience === undefined && !oauthOn)) {
      throw new UsageError(
        '--jwt-jwks needs --jwt-issuer and --jwt-audience (or --oauth, where the resource URL is the ' +
          'audience): without them a token minted for another service would be accepted',
      );
    }
    if (!isHttpsOrLoopbackUrl(jwksUrl)) {
      throw new UsageError(
        `--jwt-jwks takes an https URL (http only on a loopback host) such as ` +
          `https://idp.example.com/.well-known/jwks.json: keys fetched in the clear could be swapped, got '${jwksUrl}'`,
      );
    }
    jwt = {
      jwksUrl,
      issuer,
      ...(audience !== undefined ? { audience } : {}),
      ...(userClaim ? { userClaim } : {}),
      ...(rolesClaim ? { rolesClaim } : {}),
      ...(oauthOn ? { resourceAudience: true, rolesFromScope: true } : {}),
    };
    if (oauthOn) {
      const scopes = oauthScopes === undefined ? [] : splitList(oauthScopes.replace(/\s+/g, ','));
      oauth = {
        authorizationServers: [oauthIssuer ?? issuer],
        ...(scopes.length > 0 ? { scopesSupported: scopes } : {}),
      };
    }
  }
  let publicOrigin: string | undefined;
  try {
    ({ publicOrigin } = resolveResourceServer({ oauth, publicUrl: publicUrlText, allowedHosts }));
  } catch (error) {
    // The gateway's own checks; its usage errors name the flags, and mean exit 2 here.
    if (isToolbusError(error) && error.code === 'usage') throw new UsageError(error.message);
    throw error;
  }
  return { jwt, oauth, publicUrl: publicOrigin };
}
