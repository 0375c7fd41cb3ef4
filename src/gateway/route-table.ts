/**
 * @module The gateway's routes as a table: each a path pattern, the methods it takes, whether it needs
 * the token, and a small handler. Finding the route, answering 405 with `Allow` and 404 with the list of
 * routes happen here once.
 */
import { HttpError, methodNotAllowed } from './http-error.js';
import type { RouteContext } from './route-context.js';

/** One route of the gateway. */
export interface Route {
  /** Matches the whole path (without a trailing slash); its capture groups are the handler's `params`. */
  readonly path: RegExp;
  /** The methods it answers, e.g. `['GET', 'HEAD']`. */
  readonly methods: readonly string[];
  /**
   * Answered without the token (liveness, readiness and the web console's files; `Host` and `Origin`
   * are still checked). @default false
   */
  readonly public?: boolean;
  /** Handles a request whose path and method matched. */
  handle(ctx: RouteContext, params: readonly string[]): void | Promise<void>;
}

/** The matched route and the path's captures, or throws the 404/405 the caller should answer. */
export function findRoute(
  routes: readonly Route[],
  path: string,
  method: string,
): { route: Route; params: string[] } {
  for (const route of routes) {
    const match = route.path.exec(path);
    if (!match) continue;
    if (!route.methods.includes(method)) throw methodNotAllowed(method, path, route.methods.join(', '));
    return { route, params: match.slice(1).map((p) => p ?? '') };
  }
  throw new HttpError(
    404,
    'not-found',
    `no route for ${method} ${path.slice(0, 200)}; see /api/v1/health, /api/v1/tools, /api/v1/agent and /api/v1/config/{type}`,
  );
}
