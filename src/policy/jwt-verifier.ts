/**
 * @module JWT bearer tokens from an OpenID Connect provider, verified with `jose` against the provider's
 * JWKS: signature, issuer, audience, expiry. A claim (`sub` by default) is the user, a claim (`roles`
 * by default) the roles. `jose` is loaded at the first token, so a gateway without JWT never loads it.
 *
 * For standard OAuth 2.1 access tokens (RFC 9068), two opt-ins: the URL of the resource the token was
 * sent to (RFC 8707: what the authorization server puts in `aud`) may be its audience, and
 * `toolbus:<role>` scopes may name the roles of a token without a roles claim (by default only
 * `caller` and `approver`).
 */
import type * as Jose from 'jose';
import { ToolbusError } from '../errors/index.js';
import { isRole, Role, splitList, type Principal } from './principal.js';

/** Options of {@link createJwtVerifier}. */
export interface JwtOptions {
  /** The provider's JWKS URL, e.g. `https://idp.example.com/.well-known/jwks.json`. */
  jwksUrl: string;
  /** The `iss` every token must carry. */
  issuer: string;
  /**
   * The `aud` every token must carry (one of them, when a token has several). Required unless
   * {@link resourceAudience} is set. @default none
   */
  audience?: string;
  /**
   * Also accept a token whose audience is the resource URL of the endpoint it was sent to (RFC 8707),
   * as the gateway names it in {@link JwtVerifyOptions.resources}: the audience an OAuth authorization
   * server gives a token minted for that resource. @default false
   */
  resourceAudience?: boolean;
  /**
   * Take the roles of a token without the roles claim from its `scope` claim (a space-separated string,
   * or `scp`): each `toolbus:<role>` scope ({@link ROLE_SCOPE_PREFIX}) of a role listed here grants that
   * role, other scopes none; a token with no such scope gets {@link defaultRoles}. `true` lists `caller`
   * and `approver`: many authorization servers let any user's client ask for any scope a resource
   * defines, so `admin` and `impersonate` come from the roles claim only, unless listed here, e.g.
   * `['caller', 'approver', 'admin']` for a server that grants `toolbus:admin` to admins alone.
   * @default false (scopes grant no role)
   */
  rolesFromScope?: boolean | readonly Role[];
  /** The claim that names the user. @default 'sub' */
  userClaim?: string;
  /** The claim that lists the roles (an array or a space- or comma-separated string). @default 'roles' */
  rolesClaim?: string;
  /** The roles of a token without the roles claim (or a `toolbus:<role>` scope). @default ['caller'] */
  defaultRoles?: readonly Role[];
  /** Accepted clock difference in seconds. @default 30 */
  clockToleranceSec?: number;
}

/** The prefix of the scopes that name a role when {@link JwtOptions.rolesFromScope} is set: `toolbus:caller`. */
export const ROLE_SCOPE_PREFIX = 'toolbus:';

/**
 * The roles `rolesFromScope: true` takes from scopes: not `admin` or `impersonate`, which would let
 * anyone who can sign in configure the gateway or act as another user.
 */
const SCOPE_ROLES: readonly Role[] = [Role.Caller, Role.Approver];

/** What {@link JwtVerifier.verify} knows of the request besides the token. */
export interface JwtVerifyOptions {
  /**
   * The resource URLs (RFC 8707) of the endpoint the token was sent to, e.g. the gateway's
   * `https://tools.example.com/mcp` and `https://tools.example.com`: accepted as the token's audience
   * when the verifier has {@link JwtOptions.resourceAudience}. Read only then, once per token: a getter
   * may build it on demand, so requests that never need it (a static token, no JWT) do not pay for it.
   * @default []
   */
  resources?: readonly string[];
}

/** Verifies a JWT and turns it into a principal. */
export interface JwtVerifier {
  /**
   * The principal of `token`.
   * @throws ToolbusError `unauthorized` saying what is wrong (expired, wrong audience, bad signature…).
   */
  verify(token: string, options?: JwtVerifyOptions): Promise<Principal>;
}

/** True when `token` has the shape of a JWS compact serialization (three base64url parts). */
export function looksLikeJwt(token: string): boolean {
  return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/.test(token);
}

/** What jose's error codes mean, for the 401 message. */
const REASONS: Record<string, string> = {
  ERR_JWT_EXPIRED: 'it has expired',
  ERR_JWT_CLAIM_VALIDATION_FAILED: 'a claim does not match',
  ERR_JWS_SIGNATURE_VERIFICATION_FAILED: 'its signature does not verify',
  ERR_JWKS_NO_MATCHING_KEY: "no key of the provider's JWKS signed it",
  ERR_JWKS_MULTIPLE_MATCHING_KEYS: "several keys of the provider's JWKS match it",
  ERR_JWS_INVALID: 'it is not a valid JWS',
  ERR_JWT_INVALID: 'it is not a valid JWT',
  ERR_JOSE_ALG_NOT_ALLOWED: 'its algorithm is not allowed',
  ERR_JOSE_NOT_SUPPORTED: 'its algorithm or key type is not supported',
  ERR_JWKS_TIMEOUT: "the provider's JWKS did not answer in time",
  ERR_JWKS_INVALID: "the provider's JWKS is not a valid key set",
};

/**
 * The roles of `allowed` that `toolbus:<role>` scopes of a `scope` (or `scp`) claim grant; undefined
 * when it names none of them.
 */
function rolesOfScope(payload: Record<string, unknown>, allowed: readonly Role[]): Role[] | undefined {
  const claim = payload['scope'] ?? payload['scp'];
  const scopes =
    typeof claim === 'string'
      ? claim.split(/\s+/)
      : Array.isArray(claim)
        ? claim.filter((s): s is string => typeof s === 'string')
        : [];
  const roles = scopes
    .filter((scope) => scope.startsWith(ROLE_SCOPE_PREFIX))
    .map((scope) => scope.slice(ROLE_SCOPE_PREFIX.length))
    .filter((role): role is Role => isRole(role) && allowed.includes(role));
  return roles.length > 0 ? [...new Set(roles)] : undefined;
}

/**
 * A verifier for `options`. The JWKS is fetched at the first token and cached by `jose` (refetched when
 * a token names an unknown key, at most every 30 s).
 * @throws ToolbusError `usage` when `jwksUrl` is not an http(s) URL, `issuer` is empty, `audience` is
 * empty without `resourceAudience`, or `rolesFromScope` lists something that is not a role.
 */
export function createJwtVerifier(options: JwtOptions): JwtVerifier {
  let url: URL;
  try {
    url = new URL(options.jwksUrl);
  } catch {
    throw new ToolbusError('usage', `the JWKS URL '${options.jwksUrl.slice(0, 200)}' is not a URL`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new ToolbusError('usage', `the JWKS URL must be http(s), got ${url.protocol}`);
  }
  const resourceAudience = options.resourceAudience === true;
  if (!options.issuer || (!options.audience && !resourceAudience)) {
    throw new ToolbusError(
      'usage',
      'JWT verification needs an issuer and an audience (--jwt-issuer, --jwt-audience), or the resource ' +
        'URL as the audience (resourceAudience, toolbus up --oauth)',
    );
  }
  const scopeRoles = options.rolesFromScope === true ? SCOPE_ROLES : options.rolesFromScope || [];
  const notRoles = scopeRoles.filter((role) => !isRole(role));
  if (notRoles.length > 0) {
    throw new ToolbusError(
      'usage',
      `rolesFromScope lists ${notRoles.map((r) => `'${String(r).slice(0, 50)}'`).join(', ')}, not roles ` +
        `(${Object.values(Role).join(', ')})`,
    );
  }
  const audience = options.audience === '' ? undefined : options.audience;
  const userClaim = options.userClaim ?? 'sub';
  const rolesClaim = options.rolesClaim ?? 'roles';
  const defaultRoles = options.defaultRoles ?? [Role.Caller];
  let loaded: Promise<{ jose: typeof Jose; keys: ReturnType<typeof Jose.createRemoteJWKSet> }> | undefined;
  const load = () =>
    (loaded ??= import('jose').then((jose) => ({ jose, keys: jose.createRemoteJWKSet(url) })));

  return {
    async verify(token, verifyOptions = {}) {
      // Fails closed: with no audience to check against, no token is accepted.
      const audiences = [
        ...(audience !== undefined ? [audience] : []),
        ...(resourceAudience ? (verifyOptions.resources ?? []) : []),
      ];
      if (audiences.length === 0) {
        throw new ToolbusError(
          'unauthorized',
          'the JWT was refused: this endpoint has no audience to check it against',
        );
      }
      const { jose, keys } = await load();
      let payload: Record<string, unknown>;
      try {
        ({ payload } = await jose.jwtVerify(token, keys, {
          issuer: options.issuer,
          audience: audiences,
          clockTolerance: options.clockToleranceSec ?? 30,
        }));
      } catch (error) {
        const code = (error as { code?: unknown }).code;
        const claim = (error as { claim?: unknown }).claim;
        let reason = typeof code === 'string' ? REASONS[code] : undefined;
        if (code === 'ERR_JWT_CLAIM_VALIDATION_FAILED' && typeof claim === 'string') {
          reason =
            claim === 'aud'
              ? audiences.length === 1
                ? `its audience is not '${audiences[0]}'`
                : `its audience is none of ${audiences.map((a) => `'${a}'`).join(', ')}`
              : claim === 'iss'
                ? `its issuer is not '${options.issuer}'`
                : `its '${claim}' claim does not hold`;
        }
        // jose's generic error comes only from fetching the JWKS: a non-200 answer or a body that is not JSON.
        if (
          code === 'ERR_JWKS_TIMEOUT' ||
          code === 'ERR_JOSE_GENERIC' ||
          (reason === undefined && !(typeof code === 'string'))
        ) {
          // The provider could not be reached: our side, not the caller's token.
          throw new ToolbusError(
            'unavailable',
            `cannot verify the JWT: the provider's JWKS at ${url.origin} could not be fetched`,
          );
        }
        throw new ToolbusError('unauthorized', `the JWT was refused: ${reason ?? 'it does not verify'}`);
      }
      const user = payload[userClaim];
      if (typeof user !== 'string' || user === '') {
        throw new ToolbusError(
          'unauthorized',
          `the JWT was refused: it has no '${userClaim}' claim naming the user`,
        );
      }
      const claimed = payload[rolesClaim];
      const names =
        claimed === undefined
          ? ((scopeRoles.length > 0 ? rolesOfScope(payload, scopeRoles) : undefined) ?? [...defaultRoles])
          : Array.isArray(claimed)
            ? claimed.filter((r): r is string => typeof r === 'string')
            : typeof claimed === 'string'
              ? splitList(claimed.replace(/\s+/g, ','))
              : [];
      return {
        name: `jwt:${user}`,
        roles: names.filter(isRole),
        user,
        via: 'jwt',
      };
    },
  };
}
