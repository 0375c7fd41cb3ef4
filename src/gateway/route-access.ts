/**
 * @module What the routes ask of the access policy, as HTTP: 403 for a missing permission, a tool the
 * principal may not use or a user it may not name, 429 with `Retry-After` over a quota.
 */
import type { AccessPolicy, Permission, Principal } from '../policy/index.js';
import { isToolbusError } from '../errors/index.js';
import { HttpError } from './http-error.js';
import { headerValue, type RouteContext } from './route-context.js';

/** The principal of an authenticated route (the gateway authenticated it before the handler ran). */
export function principalOf(ctx: RouteContext): Principal {
  const principal = ctx.principal;
  if (!principal)
    throw new HttpError(401, 'unauthorized', 'this route needs a bearer token', {
      'www-authenticate': 'Bearer',
    });
  return principal;
}

/** Throws 403 naming the roles that would do, unless the principal has `permission`. */
export function requirePermission(
  ctx: RouteContext,
  policy: AccessPolicy,
  permission: Permission,
  what: string,
): Principal {
  const principal = principalOf(ctx);
  if (!policy.can(principal, permission)) {
    throw new HttpError(
      403,
      'forbidden',
      `principal '${principal.name}' may not ${what}: that takes the role ${policy.rolesFor(permission).join(' or ')}`,
      {},
      'role',
    );
  }
  return principal;
}

/** Throws 403 unless the principal may use tool `name`. */
export function requireTool(
  ctx: RouteContext,
  policy: AccessPolicy,
  principal: Principal,
  name: string,
): void {
  ctx.tool = name;
  if (!policy.allows(principal, name)) {
    throw new HttpError(
      403,
      'forbidden',
      `principal '${principal.name}' may not use tool '${name.slice(0, 80)}' (its tool policy does not allow it)`,
      {},
      'tool-policy',
    );
  }
}

/**
 * The user the request is for: the one it names (`bodyUser`, else `?user=`, else `X-Toolbus-User`) when
 * the principal may impersonate, else the principal's own.
 * @throws HttpError 403 naming the rule when it names another user without the `impersonate` role.
 */
export function userOf(
  ctx: RouteContext,
  policy: AccessPolicy,
  principal: Principal,
  defaultUser: string,
  bodyUser?: string,
): string {
  const requested = bodyUser ?? ctx.url.searchParams.get('user') ?? headerValue(ctx.req, 'x-toolbus-user');
  try {
    const user = policy.userFor(principal, requested, defaultUser);
    ctx.user = user;
    return user;
  } catch (error) {
    if (isToolbusError(error) && error.code === 'forbidden') {
      throw new HttpError(403, 'forbidden', error.message, {}, 'impersonate');
    }
    throw error;
  }
}

/**
 * Reserves a call against the principal's quotas (and tool `tool`'s); resolves with its release.
 * @throws HttpError 429 with `Retry-After` (whole seconds) when over a rate, a quota or the in-flight cap.
 */
export function admitCall(
  ctx: RouteContext,
  policy: AccessPolicy,
  principal: Principal,
  tool?: string,
): () => void {
  const admission = policy.admit(principal, tool);
  if (admission.ok) return admission.release;
  throw new HttpError(
    429,
    admission.code,
    admission.message,
    { 'retry-after': String(Math.max(1, Math.ceil(admission.retryAfterMs / 1000))) },
    admission.rule,
  );
}
