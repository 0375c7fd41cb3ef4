/**
 * @module JWT bearer tokens from an OpenID Connect provider, verified with `jose` against the provider's
 * JWKS: signature, issuer, audience, expiry. A claim (`sub` by default) is the user, a claim (`roles`
 * by default) the roles. `jose` is loaded at the first token, so a gateway without JWT never loads it.
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
  /** The `aud` every token must carry (one of them, when a token has several). */
  audience: string;
  /** The claim that names the user. @default 'sub' */
  userClaim?: string;
  /** The claim that lists the roles (an array or a space- or comma-separated string). @default 'roles' */
  rolesClaim?: string;
  /** The roles of a token without the roles claim. @default ['caller'] */
  defaultRoles?: readonly Role[];
  /** Accepted clock difference in seconds. @default 30 */
  clockToleranceSec?: number;
}

/** Verifies a JWT and turns it into a principal. */
export interface JwtVerifier {
  /**
   * The principal of `token`.
   * @throws ToolbusError `unauthorized` saying what is wrong (expired, wrong audience, bad signature…).
   */
  verify(token: string): Promise<Principal>;
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
 * A verifier for `options`. The JWKS is fetched at the first token and cached by `jose` (refetched when
 * a token names an unknown key, at most every 30 s).
 * @throws ToolbusError `usage` when `jwksUrl` is not an http(s) URL or `issuer`/`audience` is empty.
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
  if (!options.issuer || !options.audience) {
    throw new ToolbusError(
      'usage',
      'JWT verification needs an issuer and an audience (--jwt-issuer, --jwt-audience)',
    );
  }
  const userClaim = options.userClaim ?? 'sub';
  const rolesClaim = options.rolesClaim ?? 'roles';
  const defaultRoles = options.defaultRoles ?? [Role.Caller];
  let loaded: Promise<{ jose: typeof Jose; keys: ReturnType<typeof Jose.createRemoteJWKSet> }> | undefined;
  const load = () =>
    (loaded ??= import('jose').then((jose) => ({ jose, keys: jose.createRemoteJWKSet(url) })));

  return {
    async verify(token) {
      const { jose, keys } = await load();
      let payload: Record<string, unknown>;
      try {
        ({ payload } = await jose.jwtVerify(token, keys, {
          issuer: options.issuer,
          audience: options.audience,
          clockTolerance: options.clockToleranceSec ?? 30,
        }));
      } catch (error) {
        const code = (error as { code?: unknown }).code;
        const claim = (error as { claim?: unknown }).claim;
        let reason = typeof code === 'string' ? REASONS[code] : undefined;
        if (code === 'ERR_JWT_CLAIM_VALIDATION_FAILED' && typeof claim === 'string') {
          reason =
            claim === 'aud'
              ? `its audience is not '${options.audience}'`
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
          ? [...defaultRoles]
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
