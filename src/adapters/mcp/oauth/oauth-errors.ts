/**
 * @module What an OAuth failure of an MCP connection tells the caller: the SDK's auth errors mapped onto
 * toolbus codes (`unauthorized`, `forbidden`, `unavailable`, `invalid-config`) with a message that says
 * what happened and what to do, and never carries a token, a secret or an authorization code.
 */
import {
  AuthorizationServerMismatchError,
  InsecureTokenEndpointError,
  InsufficientScopeError,
  IssuerMismatchError,
  OAuthError,
  RegistrationRejectedError,
  SdkError,
  SdkErrorCode,
  UnauthorizedError,
} from '@modelcontextprotocol/client';
import { ToolbusError, isToolbusError } from '../../../errors/index.js';

/** The SDK stamps errors that escaped its transports' auth code with this symbol (shared across copies). */
const AUTH_SEAM = Symbol.for('mcp.authSeamEscape');

/** Text an authorization server or MCP server sent, made safe to quote: one line, at most 200 characters. */
export function quoted(text: string): string {
  // eslint-disable-next-line no-control-regex
  const line = text.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();
  return line.length > 200 ? `${line.slice(0, 197)}...` : line;
}

/** True when `error` came out of the SDK's authorization code (discovery, registration, token requests). */
export function isAuthFailure(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  return (
    (error as { [AUTH_SEAM]?: unknown })[AUTH_SEAM] === true ||
    error instanceof UnauthorizedError ||
    error instanceof OAuthError ||
    error instanceof RegistrationRejectedError ||
    error instanceof IssuerMismatchError ||
    error instanceof AuthorizationServerMismatchError ||
    error instanceof InsecureTokenEndpointError ||
    error instanceof InsufficientScopeError
  );
}

function causeText(error: unknown): string {
  const parts: string[] = [];
  let current: unknown = error;
  for (let depth = 0; depth < 3 && current instanceof Error; depth++) {
    const code = (current as { code?: unknown }).code;
    parts.push(typeof code === 'string' ? `${current.message} (${code})` : current.message);
    current = current.cause;
  }
  return quoted(parts.join(': '));
}

function isNetworkFailure(error: unknown): boolean {
  return /fetch failed|ECONNREFUSED|ECONNRESET|ENOTFOUND|EHOSTUNREACH|ETIMEDOUT|socket hang up/i.test(
    causeText(error),
  );
}

/**
 * The toolbus error for an OAuth failure talking to MCP server `serverId`, or undefined when `error`
 * is not one. `hint` says how to authorize again (e.g. "run 'toolbus mcp login files'").
 */
export function oauthError(error: unknown, serverId: string, hint: string): ToolbusError | undefined {
  if (isToolbusError(error)) return error;
  const server = `MCP server '${serverId}'`;
  const options = { cause: error };
  if (error instanceof SdkError && error.code === SdkErrorCode.ClientHttpAuthentication) {
    return new ToolbusError(
      'unauthorized',
      `${server} refused the access token even after toolbus obtained a new one (HTTP 401); ${hint}`,
      options,
    );
  }
  if (error instanceof SdkError && error.code === SdkErrorCode.ClientHttpForbidden) {
    return new ToolbusError(
      'forbidden',
      `${server} still answers 403 insufficient_scope after toolbus asked for the scope it named: ` +
        'the authorization server did not grant it to this client or user',
      options,
    );
  }
  if (error instanceof InsufficientScopeError) {
    const scope = error.requiredScope ? ` '${quoted(error.requiredScope)}'` : '';
    return new ToolbusError('forbidden', `${server} needs scope${scope} (403 insufficient_scope)`, options);
  }
  if (error instanceof UnauthorizedError) {
    return new ToolbusError('unauthorized', `${server} requires authorization (HTTP 401); ${hint}`, options);
  }
  if (error instanceof RegistrationRejectedError) {
    let detail = `HTTP ${error.status}`;
    try {
      const body = JSON.parse(error.body) as { error?: unknown; error_description?: unknown };
      if (typeof body.error === 'string') detail += ` ${body.error}`;
      if (typeof body.error_description === 'string') detail += `: ${body.error_description}`;
    } catch {
      // Not an RFC 7591 error document: the status says enough.
    }
    return new ToolbusError(
      'unauthorized',
      `the authorization server of ${server} refused to register toolbus as a client (${quoted(detail)}); ` +
        "register a client there and configure it (oauth.clientId, or 'client-id' in the mcp item)",
      options,
    );
  }
  if (error instanceof OAuthError) {
    const description = error.message && error.message !== error.code ? `: ${quoted(error.message)}` : '';
    const what =
      error.code === 'invalid_client' || error.code === 'unauthorized_client'
        ? ' (check the client ID and its secret or key)'
        : error.code === 'invalid_grant'
          ? ` (the grant expired or was revoked; ${hint})`
          : '';
    return new ToolbusError(
      'unauthorized',
      `the authorization server of ${server} refused: ${quoted(error.code)}${description}${what}`,
      options,
    );
  }
  if (error instanceof IssuerMismatchError && error.kind === 'authorization_response') {
    // The issuer a redirect claims may be an attacker's (a mix-up attack): it is not repeated.
    return new ToolbusError(
      'unauthorized',
      `refused the authorization redirect for ${server}: it names another authorization server than the ` +
        'one toolbus sent the person to; nothing was stored',
      options,
    );
  }
  if (error instanceof IssuerMismatchError || error instanceof AuthorizationServerMismatchError) {
    return new ToolbusError(
      'unauthorized',
      `refused to authorize with ${server}: the authorization server is not the one its metadata or the ` +
        `client credentials name (${quoted(error.message)})`,
      options,
    );
  }
  if (error instanceof InsecureTokenEndpointError) {
    return new ToolbusError(
      'invalid-config',
      `the token endpoint of ${server}'s authorization server is not https (${quoted(error.tokenEndpoint)}); ` +
        'toolbus sends credentials only over https or to a loopback address',
      options,
    );
  }
  if (!isAuthFailure(error)) return undefined;
  const message = error instanceof Error ? error.message : String(error);
  const mismatch = /^Protected resource (\S+) does not match expected (\S+)/.exec(message);
  if (mismatch) {
    return new ToolbusError(
      'unauthorized',
      `refused to authorize with ${server}: its protected resource metadata names the resource ` +
        `'${quoted(mismatch[1]!)}', not this server ('${quoted(mismatch[2]!)}'); toolbus does not get ` +
        'tokens for another resource',
      options,
    );
  }
  if (/does not support dynamic client registration/i.test(message)) {
    return new ToolbusError(
      'unauthorized',
      `the authorization server of ${server} offers no dynamic client registration: register a client ` +
        "there and configure it (oauth.clientId, or 'client-id' in the mcp item)",
      options,
    );
  }
  if (isNetworkFailure(error)) return oauthRequestError(error, serverId);
  return new ToolbusError('unauthorized', `authorizing with ${server} failed: ${causeText(error)}`, options);
}

/**
 * The toolbus error (`unavailable`) for an OAuth request of MCP server `serverId` (discovery,
 * registration, tokens) to `url` that got no usable answer: none within `timeoutMs` when given, a
 * body that is not JSON when `notJson`, else a network failure. The answer itself is never quoted: it
 * may echo a credential.
 */
export function oauthRequestError(
  error: unknown,
  serverId: string,
  detail: { url?: URL; timeoutMs?: number; notJson?: boolean } = {},
): ToolbusError {
  const server = `the OAuth authorization server of MCP server '${serverId}'`;
  const where = detail.url === undefined ? '' : ` (${detail.url.origin}${detail.url.pathname})`;
  const options = { cause: error };
  if (detail.timeoutMs !== undefined) {
    return new ToolbusError(
      'unavailable',
      `${server} did not answer within ${detail.timeoutMs / 1000} s${where}; try again later`,
      options,
    );
  }
  if (detail.notJson) {
    return new ToolbusError(
      'unavailable',
      `${server} answered${where} with something that is not JSON, so toolbus could not read it`,
      options,
    );
  }
  return new ToolbusError('unavailable', `${server} could not be reached: ${causeText(error)}`, options);
}
