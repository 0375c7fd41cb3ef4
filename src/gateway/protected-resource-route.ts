/**
 * @module The gateway as an OAuth 2.1 resource server, as the MCP authorization spec asks: the protected
 * resource metadata of RFC 9728 at `/.well-known/oauth-protected-resource` (and its path-suffixed forms
 * for `/mcp` and `/mcp/<id>`), the resource URLs a request is for (what an authorization server puts in
 * a token's audience, RFC 8707), and the `WWW-Authenticate` challenge that points a client at them.
 */
import type { IncomingMessage } from 'node:http';
import { ToolbusError } from '../errors/index.js';
import { HttpError, sendJson } from './http-error.js';
import { isHttpsOrLoopbackUrl } from './request-guard.js';
import type { RouteContext } from './route-context.js';
import type { Route } from './route-table.js';

/** Options of the gateway's OAuth resource server (`createGateway({ oauth })`). */
export interface GatewayOAuthOptions {
  /**
   * The issuer URLs of the authorization servers whose tokens the gateway accepts, advertised as the
   * metadata's `authorization_servers`: https, or http on a loopback host. At least one. Their tokens
   * are verified by the policy's JWT verifier (`AccessPolicy({ jwt })`), not here.
   */
  authorizationServers: readonly string[];
  /**
   * The scopes advertised as `scopes_supported`, which an MCP client asks for when it has no other
   * hint (e.g. `['toolbus:caller']`). Advertise only what every user may ask for: the authorization
   * server decides what it grants. @default none advertised
   */
  scopesSupported?: readonly string[];
  /** The metadata's `resource_name`, shown to people by some clients. @default 'toolbus' */
  resourceName?: string;
  /** A page for people about the gateway, the metadata's `resource_documentation`. @default none */
  resourceDocumentation?: string;
}

/** Where the protected resource metadata lives (RFC 9728 §3), before any resource path. */
export const PROTECTED_RESOURCE_PATH = '/.well-known/oauth-protected-resource';

/** How long a client or cache may keep the metadata, in seconds: briefly, so a changed issuer soon shows. */
export const PROTECTED_RESOURCE_MAX_AGE_SEC = 300;

/** {@link GatewayOAuthOptions} checked, with defaults. */
export interface ResolvedOAuthOptions {
  /** The issuer URLs, as given. */
  readonly authorizationServers: readonly string[];
  /** The scopes to advertise, without empty ones; undefined for none. */
  readonly scopesSupported: readonly string[] | undefined;
  /** The metadata's `resource_name`. */
  readonly resourceName: string;
  /** The metadata's `resource_documentation`, if any. */
  readonly resourceDocumentation: string | undefined;
}

/**
 * `text` as a URL without query, fragment or credentials: https, or http on a loopback host
 * ({@link isHttpsOrLoopbackUrl}); http on any host too when `anyHttp` (a page for people, not a URL
 * the gateway or its clients trust).
 */
function httpUrl(text: string, what: string, anyHttp = false): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ToolbusError('usage', `${what} must be a URL, got '${text.slice(0, 200)}'`);
  }
  if (!isHttpsOrLoopbackUrl(url) && !(anyHttp && url.protocol === 'http:')) {
    throw new ToolbusError(
      'usage',
      `${what} must be an ${anyHttp ? 'http(s) URL' : 'https URL (http only on a loopback host)'}, got '${url.protocol}//${url.host}'`,
    );
  }
  if (url.search !== '' || url.hash !== '' || url.username !== '' || url.password !== '') {
    throw new ToolbusError('usage', `${what} takes no query, fragment or credentials, got '${url.origin}…'`);
  }
  return url;
}

/** {@link GatewayOAuthOptions} checked, with defaults. */
function resolveOAuthOptions(options: GatewayOAuthOptions): ResolvedOAuthOptions {
  if (options.authorizationServers.length === 0) {
    throw new ToolbusError(
      'usage',
      'oauth.authorizationServers must name at least one authorization server (its issuer URL)',
    );
  }
  // An issuer is compared as a string by clients (RFC 8414 §3.3): advertise it exactly as given.
  const servers = options.authorizationServers.map((server) => {
    httpUrl(
      server,
      'an OAuth authorization server (toolbus up --oauth-issuer, else --jwt-issuer; option oauth.authorizationServers)',
    );
    return server;
  });
  if (options.resourceDocumentation !== undefined) {
    httpUrl(options.resourceDocumentation, 'oauth.resourceDocumentation', true);
  }
  const scopes = options.scopesSupported?.filter((scope) => scope !== '');
  for (const scope of scopes ?? []) {
    // RFC 6749 §3.3: scope tokens are printable ASCII without space, quote or backslash.
    if (!/^[\x21\x23-\x5b\x5d-\x7e]+$/.test(scope)) {
      throw new ToolbusError(
        'usage',
        `the OAuth scope '${scope.slice(0, 100)}' (toolbus up --oauth-scopes, option oauth.scopesSupported) ` +
          'is not a valid scope token (printable ASCII, no space, quote or backslash)',
      );
    }
  }
  return {
    authorizationServers: servers,
    scopesSupported: scopes !== undefined && scopes.length > 0 ? scopes : undefined,
    resourceName: options.resourceName ?? 'toolbus',
    resourceDocumentation: options.resourceDocumentation,
  };
}

/** The origin of a gateway's public URL (`https://tools.example.com`). */
function resolvePublicUrl(text: string): string {
  const what = 'the public URL (toolbus up --public-url, option publicUrl)';
  const url = httpUrl(text, what);
  if (url.pathname !== '/') {
    throw new ToolbusError(
      'usage',
      `${what} must be an origin such as https://tools.example.com, without a path: the gateway's ` +
        `routes and its /.well-known metadata are at the root, got '${text.slice(0, 200)}'`,
    );
  }
  return url.origin;
}

/** A gateway's settings as an OAuth resource server: the {@link GatewayOptions} fields of these names. */
export interface ResourceServerOptions {
  /** `createGateway({ oauth })`. */
  oauth?: GatewayOAuthOptions | undefined;
  /** `createGateway({ publicUrl })`. */
  publicUrl?: string | undefined;
  /** `createGateway({ allowedHosts })`. */
  allowedHosts?: readonly string[] | undefined;
}

/** {@link ResourceServerOptions} checked. */
export interface ResolvedResourceServer {
  /** The OAuth options with their defaults; undefined without `oauth`. */
  readonly oauth: ResolvedOAuthOptions | undefined;
  /** The origin of `publicUrl` (`https://tools.example.com`); undefined without it. */
  readonly publicOrigin: string | undefined;
}

/**
 * Checks a gateway's resource server settings as `createGateway` does, so a caller (toolbus up) can
 * refuse them before starting anything.
 * @throws ToolbusError `usage` for: no authorization server, or one that is not an https URL (http on
 * loopback) without query or fragment; a scope that is not a scope token; a public URL that is not
 * such a URL of an origin alone (its resource URLs are https, RFC 9728 §1.2; a path prefix would move
 * the well-known metadata out of the gateway's reach); `oauth` with `allowedHosts: ['*']` but no
 * `publicUrl`.
 */
export function resolveResourceServer(options: ResourceServerOptions): ResolvedResourceServer {
  const publicOrigin = options.publicUrl === undefined ? undefined : resolvePublicUrl(options.publicUrl);
  const oauth = options.oauth === undefined ? undefined : resolveOAuthOptions(options.oauth);
  if (oauth && publicOrigin === undefined && options.allowedHosts?.some((h) => h.trim() === '*')) {
    // A Host let in only by '*' names no resource URL (the client chose it: a token minted for that
    // name must not verify here), so clients reaching the gateway under such a name could never sign in.
    throw new ToolbusError(
      'usage',
      "OAuth with allowedHosts '*' (toolbus up --allowed-hosts '*') needs the public URL, the URL " +
        'clients reach the gateway at (toolbus up --public-url, option publicUrl): a resource URL is ' +
        'never built from a Host that only the wildcard lets in',
    );
  }
  return { oauth, publicOrigin };
}

/** Only these characters may reach a resource URL built from a request, so it is safe in a header too. */
const SAFE_ORIGIN = /^http:\/\/[a-z0-9.\-[\]:]+$/;

/**
 * The origin of the gateway's resource URLs for `req`: `publicOrigin` when given, else `http://` (the
 * gateway serves plain http; behind a TLS proxy it is given its public URL), the host name it was asked
 * for (`knownHost`, one the gateway answers to by name) and the port it was reached on. The port is the
 * socket's, not the `Host` header's: a token minted for another server on this machine must not become
 * valid here by naming that server's port. Undefined without a known host, or once the connection is
 * closed.
 */
export function requestOrigin(
  req: IncomingMessage,
  knownHost: string | undefined,
  publicOrigin: string | undefined,
): string | undefined {
  if (publicOrigin !== undefined) return publicOrigin;
  if (knownHost === undefined) return undefined;
  const port = req.socket.localPort;
  // A closed socket has no port: the origin is then unknown, not the scheme's default port's.
  if (port === undefined) return undefined;
  let origin: string;
  try {
    origin = new URL(`http://${knownHost}:${port}`).origin;
  } catch {
    return undefined;
  }
  return SAFE_ORIGIN.test(origin) ? origin : undefined;
}

/** The path of the protected resource a request path belongs to: `/mcp`, `/mcp/<id>`, or `''` (the whole gateway). */
function resourcePathOf(path: string): string {
  return /^\/mcp(?:\/[^/]+)?$/.test(path) ? path : '';
}

/**
 * The resource URLs (RFC 8707) a request to `path` is for, most specific first: the endpoint's own
 * (`<origin>/mcp/<id>`, `<origin>/mcp`) and the gateway's (`<origin>`), as a resource covers the paths
 * below it. A token minted for any of them may be used there.
 */
export function resourcesOf(origin: string, path: string): string[] {
  const resourcePath = resourcePathOf(path);
  const resources = [origin];
  if (resourcePath !== '') resources.unshift(`${origin}/mcp`);
  if (resourcePath !== '' && resourcePath !== '/mcp') resources.unshift(origin + resourcePath);
  return resources;
}

/** The URL of the protected resource metadata for a request to `path` (the path-suffixed form for `/mcp`). */
export function resourceMetadataUrl(origin: string, path: string): string {
  return origin + PROTECTED_RESOURCE_PATH + resourcePathOf(path);
}

/** The value of a `WWW-Authenticate` parameter as a quoted string: printable ASCII, no quote or backslash (RFC 6750 §3). */
function quoted(value: string): string {
  return `"${value
    .slice(0, 300)
    .replace(/[^\x20-\x7e]/g, '?')
    .replace(/["\\]/g, "'")}"`;
}

/** What a {@link bearerChallenge} says. */
export interface BearerChallenge {
  /** The protected resource metadata's URL (RFC 9728 §5.1). */
  resourceMetadata?: string | undefined;
  /** `invalid_token` for a token that was sent and refused (RFC 6750 §3.1). */
  error?: 'invalid_token' | undefined;
  /** Why, for the developer reading it. */
  description?: string | undefined;
}

/** A `WWW-Authenticate: Bearer …` header value; just `Bearer` when it says nothing more. */
export function bearerChallenge(challenge: BearerChallenge): string {
  const params = [
    ...(challenge.resourceMetadata !== undefined
      ? [`resource_metadata=${quoted(challenge.resourceMetadata)}`]
      : []),
    ...(challenge.error !== undefined ? [`error="${challenge.error}"`] : []),
    ...(challenge.description !== undefined ? [`error_description=${quoted(challenge.description)}`] : []),
  ];
  return params.length === 0 ? 'Bearer' : `Bearer ${params.join(', ')}`;
}

/**
 * The metadata routes (public: a client reads them before it has a token; `Host` and `Origin` are
 * checked as on every route): the gateway's own at {@link PROTECTED_RESOURCE_PATH}, and, when it serves
 * MCP, `/mcp`'s and each profile endpoint's at the path-suffixed form (`…/mcp`, `…/mcp/<id>`).
 * They say only what RFC 9728 asks: the resource, its authorization servers and how to send a token.
 */
export function protectedResourceRoutes(
  oauth: ResolvedOAuthOptions,
  originOf: (ctx: RouteContext) => string | undefined,
  servesMcp: boolean,
): Route[] {
  const send = (ctx: RouteContext, resourcePath: string): void => {
    const origin = originOf(ctx);
    if (origin === undefined) {
      // The Host was checked (a name only '*' lets in needs publicUrl, which is then the origin), but an
      // allowed name may still make no safe URL (e.g. 'my_host'), or the connection is gone.
      throw new HttpError(
        400,
        'invalid-request',
        'the Host header names no host the gateway can build its resource URL from; give the gateway ' +
          'its public URL (toolbus up --public-url, option publicUrl)',
      );
    }
    sendJson(
      ctx.res,
      200,
      {
        resource: origin + resourcePath,
        authorization_servers: oauth.authorizationServers,
        bearer_methods_supported: ['header'],
        ...(oauth.scopesSupported !== undefined ? { scopes_supported: oauth.scopesSupported } : {}),
        resource_name: oauth.resourceName,
        ...(oauth.resourceDocumentation !== undefined
          ? { resource_documentation: oauth.resourceDocumentation }
          : {}),
      },
      { ...ctx.headers, 'cache-control': `public, max-age=${PROTECTED_RESOURCE_MAX_AGE_SEC}` },
    );
  };
  return [
    {
      path: /^\/\.well-known\/oauth-protected-resource$/,
      methods: ['GET'],
      public: true,
      handle: (ctx) => send(ctx, ''),
    },
    ...(servesMcp
      ? [
          {
            path: /^\/\.well-known\/oauth-protected-resource(\/mcp(?:\/[^/]+)?)$/,
            methods: ['GET'],
            public: true,
            handle: (ctx: RouteContext, [resourcePath]: readonly string[]) => send(ctx, resourcePath!),
          },
        ]
      : []),
  ];
}
