/**
 * @module Which tool profile a request uses: the one it asks for (`?profile=`, `/mcp/<id>`, an agent
 * request's `profile`) or the one its principal is bound to; a bound principal may ask for no other.
 */
import { isToolbusError } from '../errors/index.js';
import type { Principal } from '../policy/index.js';
import type { ObservableToolProvider } from '../tools/index.js';
import { HttpError } from './http-error.js';

/** Looks up a profile's live tools; throws ToolbusError `not-found` (or `invalid-config`) otherwise. */
export type GatewayProfiles = (id: string) => ObservableToolProvider;

/**
 * The profile of a request: `requested`, or the principal's bound one.
 * @throws HttpError 403 when a bound principal asks for another profile.
 */
export function profileOf(principal: Principal, requested: string | undefined): string | undefined {
  const bound = principal.profile;
  if (requested !== undefined && requested !== '' && bound !== undefined && requested !== bound) {
    throw new HttpError(
      403,
      'forbidden',
      `principal '${principal.name}' is bound to profile '${bound}' and may not use profile '${requested.slice(0, 80)}'`,
      {},
      'profile',
    );
  }
  return requested === '' ? bound : (requested ?? bound);
}

/**
 * The tools of `profile` (all of `tools` without one).
 * @throws HttpError 404 for an unknown profile or a gateway without profiles; 400 for a broken item.
 */
export function profileTools(
  tools: ObservableToolProvider,
  profiles: GatewayProfiles | undefined,
  profile: string | undefined,
): ObservableToolProvider {
  if (profile === undefined) return tools;
  if (!profiles) throw new HttpError(404, 'not-found', 'this gateway serves no tool profiles');
  try {
    return profiles(profile);
  } catch (error) {
    if (isToolbusError(error) && (error.code === 'not-found' || error.code === 'invalid-config')) {
      throw new HttpError(error.code === 'not-found' ? 404 : 400, error.code, error.message);
    }
    throw error;
  }
}
