/**
 * @module `McpOAuthProvider`: the SDK's `OAuthClientProvider` for one MCP server, with its state in an
 * `McpOAuthStore` (so tokens outlive the process and are shared by the processes sharing the store),
 * tokens refreshed shortly before they expire (once, even when several calls or processes notice at
 * the same time), `client_credentials` and JWT-bearer grants without a browser, and the hand-off of an
 * authorization a person must approve.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import {
  auth,
  createPrivateKeyJwtAuth,
  validateAuthorizationResponseIssuer,
  type AddClientAuthentication,
  type OAuthClientInformationContext,
  type OAuthClientMetadata,
  type OAuthClientProvider,
  type OAuthDiscoveryState,
  type StoredOAuthClientInformation,
  type StoredOAuthTokens,
} from '@modelcontextprotocol/client';
import type { JsonObject } from '../../../schema/index.js';
import { ToolbusError, isToolbusError } from '../../../errors/index.js';
import { toJsonValue } from '../../../config/index.js';
import {
  DEFAULT_REDIRECT_URL,
  McpOAuthGrant,
  type McpOAuthRedirect,
  type ResolvedMcpOAuthOptions,
} from './oauth-options.js';
import { MemoryMcpOAuthStore, type McpOAuthState, type McpOAuthStore } from './oauth-store.js';
import { oauthError, oauthRequestError, quoted } from './oauth-errors.js';

/** How long one process may hold the refresh lease before others assume it died. */
const REFRESH_LEASE_MS = 15_000;
/**
 * How long one renewal or code exchange may take in all. Below the lease, so no other process takes
 * the lease over while this one may still use a refresh token that rotates; and a slow authorization
 * server holds up the calls waiting for new tokens this long at most, not for fetch's five minutes.
 */
const OAUTH_DEADLINE_MS = 10_000;
/** How often a process waiting for another one's refresh looks again. */
const LEASE_POLL_MS = 100;
/** A compare-and-set that keeps losing this many times is a store problem, not a race. */
const MAX_WRITE_ATTEMPTS = 8;

type FetchLike = (url: string | URL, init?: RequestInit) => Promise<Response>;

/** The first failure of an `auth()` run's requests: the SDK's refresh swallows some of them. */
interface OAuthRun {
  failure?: ToolbusError;
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/**
 * An authorization the SDK started and a person must approve, with its PKCE verifier: kept in memory
 * by the process that started it, never in the store, where another process starting one of its own
 * would overwrite it and make this one fail with invalid_grant.
 */
interface PendingAuthorization {
  url: URL;
  state: string;
  codeVerifier: string;
}

/** What a login or an authorization obtained, for a person to read (never the tokens themselves). */
export interface McpOAuthGrantSummary {
  /** The scopes granted, as the authorization server reported them. */
  scope: string | undefined;
  /** When the access token expires (ms since the epoch), when the server said. */
  expiresAt: number | undefined;
  /** Whether a refresh token was issued (the grant can be renewed without a person). */
  refreshable: boolean;
  /** The authorization server that issued the tokens. */
  issuer: string | undefined;
}

type Mutable = { [key: string]: JsonObject[string] };

function objectField(state: McpOAuthState | undefined, field: string): JsonObject | undefined {
  const value = state?.[field];
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? value : undefined;
}

function numberField(object: JsonObject | undefined, field: string): number | undefined {
  const value = object?.[field];
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

function stringField(object: JsonObject | undefined, field: string): string | undefined {
  const value = object?.[field];
  return typeof value === 'string' ? value : undefined;
}

function paramsOf(redirect: McpOAuthRedirect): URLSearchParams {
  if (redirect instanceof URLSearchParams) return redirect;
  if (redirect instanceof URL) return redirect.searchParams;
  const text = String(redirect);
  if (/^[a-z][a-z0-9+.-]*:/i.test(text)) return new URL(text).searchParams;
  return new URLSearchParams(text.startsWith('?') ? text.slice(1) : text);
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The OAuth client of one MCP server. `McpSession` creates it from `oauth` options and hands it to the
 * SDK's HTTP transports, which call it for tokens and run discovery, registration, refresh and step-up
 * through it.
 */
export class McpOAuthProvider implements OAuthClientProvider {
  readonly #serverUrl: URL;
  readonly #serverId: string;
  readonly #options: ResolvedMcpOAuthOptions;
  readonly #store: McpOAuthStore;
  /** Identifies this provider's refresh lease in a shared store. */
  readonly #owner = randomUUID();
  #cache: { state: McpOAuthState | undefined; version: number } | undefined;
  #pending: PendingAuthorization | undefined;
  /** The verifier of the authorization the SDK is starting (it saves it before redirecting). */
  #codeVerifier: string | undefined;
  /** The authorization whose code is being exchanged for tokens. */
  #exchanging: PendingAuthorization | undefined;
  #lastState: string | undefined;
  #authorizing: Promise<void> | undefined;
  #renewing: Promise<ToolbusError | undefined> | undefined;
  #authorizationServerUrl: string | undefined;
  #resourceUrl: string | undefined;

  /** `private_key_jwt` client authentication, when the options give a private key. */
  readonly addClientAuthentication?: AddClientAuthentication;

  constructor(serverUrl: URL, serverId: string, options: ResolvedMcpOAuthOptions) {
    this.#serverUrl = serverUrl;
    this.#serverId = serverId;
    this.#options = options;
    this.#store = options.store ?? new MemoryMcpOAuthStore();
    if (options.privateKey !== undefined && options.clientId !== undefined) {
      this.addClientAuthentication = createPrivateKeyJwtAuth({
        issuer: options.clientId,
        subject: options.clientId,
        privateKey: options.privateKey,
        alg: options.signingAlgorithm ?? 'RS256',
      });
    }
  }

  /** What to tell a person who must authorize: the store's hint, else how to pass `authorize`. */
  get loginHint(): string {
    return this.#store.loginHint ?? 'pass oauth.authorize to let a person approve in a browser';
  }

  // --- OAuthClientProvider ------------------------------------------------------------------------

  get redirectUrl(): string | undefined {
    if (this.#options.grant !== McpOAuthGrant.AuthorizationCode) return undefined;
    return this.#options.redirectUrl ?? DEFAULT_REDIRECT_URL;
  }

  get clientMetadataUrl(): string | undefined {
    return this.#options.clientMetadataUrl;
  }

  get clientMetadata(): OAuthClientMetadata {
    const interactive = this.#options.grant === McpOAuthGrant.AuthorizationCode;
    const redirect = this.redirectUrl;
    const method =
      this.#options.tokenEndpointAuthMethod ??
      (this.#options.privateKey !== undefined
        ? 'private_key_jwt'
        : this.#options.clientSecret !== undefined
          ? 'client_secret_basic'
          : 'none');
    return {
      client_name: this.#options.clientName,
      redirect_uris: redirect === undefined ? [] : [redirect],
      // refresh_token is listed so that servers gating refresh tokens on it issue one, and so that
      // the SDK asks for offline_access where the server offers it.
      grant_types: interactive
        ? ['authorization_code', 'refresh_token']
        : [
            this.#options.grant === McpOAuthGrant.JwtBearer
              ? 'urn:ietf:params:oauth:grant-type:jwt-bearer'
              : this.#options.grant,
          ],
      response_types: interactive ? ['code'] : [],
      token_endpoint_auth_method: method,
      ...(this.#options.scope !== undefined ? { scope: this.#options.scope } : {}),
    };
  }

  state(): string {
    this.#lastState = randomBytes(24).toString('base64url');
    return this.#lastState;
  }

  async clientInformation(
    ctx?: OAuthClientInformationContext,
  ): Promise<StoredOAuthClientInformation | undefined> {
    const state = await this.#read(ctx !== undefined);
    const stored = objectField(state, 'client');
    const options = this.#options;
    if (options.clientId !== undefined) {
      const storedIssuer =
        stringField(stored, 'client_id') === options.clientId ? stringField(stored, 'issuer') : undefined;
      // Bound to the authorization server it is first used with, unless the options name it.
      const issuer = options.issuer ?? storedIssuer ?? ctx?.issuer;
      if (issuer !== undefined && storedIssuer === undefined && options.issuer === undefined) {
        await this.#bindClient(options.clientId, issuer);
      }
      const method = this.clientMetadata.token_endpoint_auth_method;
      return {
        client_id: options.clientId,
        ...(options.clientSecret !== undefined ? { client_secret: options.clientSecret } : {}),
        ...(method !== undefined && method !== 'private_key_jwt'
          ? { token_endpoint_auth_method: method }
          : {}),
        ...(issuer !== undefined ? { issuer } : {}),
      } as StoredOAuthClientInformation;
    }
    if (stored !== undefined && typeof stored['client_id'] === 'string') {
      const registeredFor = stored['redirect_uris'];
      const redirect = this.redirectUrl;
      // A client registered for another redirect URI cannot take part in a new authorization with
      // this one: register again. Without a person to authorize, the old one still refreshes.
      if (
        options.authorize !== undefined &&
        redirect !== undefined &&
        stringField(stored, 'client_id') !== options.clientMetadataUrl &&
        Array.isArray(registeredFor) &&
        !registeredFor.includes(redirect)
      ) {
        return undefined;
      }
      return stored as unknown as StoredOAuthClientInformation;
    }
    if (
      options.grant === McpOAuthGrant.AuthorizationCode &&
      options.authorize === undefined &&
      options.clientMetadataUrl === undefined
    ) {
      // Registering a client nobody can authorize would only leave a stray registration behind.
      throw this.#needsPerson();
    }
    return undefined;
  }

  async saveClientInformation(info: StoredOAuthClientInformation): Promise<void> {
    if (this.#options.clientId !== undefined) {
      // A configured client's secret stays where it was configured; only the binding is kept.
      if (info.issuer !== undefined) await this.#bindClient(this.#options.clientId, info.issuer);
      return;
    }
    await this.#update((s) => ({ ...s, client: toJsonValue(info) as JsonObject }));
  }

  async tokens(ctx?: OAuthClientInformationContext): Promise<StoredOAuthTokens | undefined> {
    // With ctx, the SDK's auth() is asking: read what the store holds now (another process may have
    // refreshed). Without, the transport wants a token for a request: renew first when it is due; and
    // with none known, look again (a login may have stored some since).
    const known = objectField(this.#cache?.state, 'tokens') !== undefined;
    let state = await this.#read(ctx !== undefined || !known);
    if (ctx === undefined && this.#renewalDue(state)) {
      const failure = await this.#renew();
      state = this.#cache?.state;
      // Without a token that still works the request would only meet a 401, and try the same server
      // again: fail now, saying why.
      if (failure !== undefined && !this.#usable(state)) throw failure;
    }
    const tokens = objectField(state, 'tokens');
    return tokens === undefined || typeof tokens['access_token'] !== 'string'
      ? undefined
      : (tokens as unknown as StoredOAuthTokens);
  }

  async saveTokens(tokens: StoredOAuthTokens): Promise<void> {
    const now = Date.now();
    const expiresIn = typeof tokens.expires_in === 'number' ? tokens.expires_in : undefined;
    await this.#update((s) => {
      const next: Mutable = {
        ...s,
        tokens: toJsonValue(tokens),
        'obtained-at': now,
      };
      if (expiresIn !== undefined) next['expires-at'] = now + expiresIn * 1000;
      else delete next['expires-at'];
      delete next['pending'];
      return next as McpOAuthState;
    });
  }

  redirectToAuthorization(authorizationUrl: URL): void {
    this.#pending = {
      url: authorizationUrl,
      state: this.#lastState ?? '',
      codeVerifier: this.#codeVerifier ?? '',
    };
    this.#codeVerifier = undefined;
  }

  saveCodeVerifier(codeVerifier: string): void {
    this.#codeVerifier = codeVerifier;
  }

  codeVerifier(): string {
    const verifier = this.#exchanging?.codeVerifier;
    if (!verifier) {
      throw new ToolbusError(
        'unauthorized',
        `MCP server '${this.#serverId}': no authorization is in progress; start again`,
      );
    }
    return verifier;
  }

  async saveDiscoveryState(discovery: OAuthDiscoveryState): Promise<void> {
    await this.#update((s) => ({ ...s, discovery: toJsonValue(discovery) as JsonObject }));
  }

  async discoveryState(): Promise<OAuthDiscoveryState | undefined> {
    const discovery = objectField(await this.#read(false), 'discovery');
    return discovery as unknown as OAuthDiscoveryState | undefined;
  }

  async invalidateCredentials(scope: 'all' | 'client' | 'tokens' | 'verifier' | 'discovery'): Promise<void> {
    if (scope === 'all' || scope === 'verifier') this.#codeVerifier = undefined;
    // Tokens are dropped only if they are still the ones this provider handed out: another process
    // may have stored fresh ones meanwhile, which a stale failure must not erase.
    const known = stringField(objectField(this.#cache?.state, 'tokens'), 'access_token');
    await this.#update((s) => {
      const next: Mutable = { ...s };
      if (scope === 'all' || scope === 'tokens') {
        if (known === undefined || stringField(objectField(s, 'tokens'), 'access_token') === known) {
          delete next['tokens'];
          delete next['expires-at'];
        }
      }
      if ((scope === 'all' || scope === 'client') && this.#options.clientId === undefined)
        delete next['client'];
      // Written by earlier versions, which kept the verifier in the store.
      if (scope === 'all' || scope === 'verifier') delete next['pending'];
      if (scope === 'all' || scope === 'discovery') delete next['discovery'];
      return next as McpOAuthState;
    });
  }

  saveAuthorizationServerUrl(url: string): void {
    this.#authorizationServerUrl = url;
  }

  saveResourceUrl(url: string): void {
    this.#resourceUrl = url;
  }

  async prepareTokenRequest(scope?: string): Promise<URLSearchParams | undefined> {
    const grant = this.#options.grant;
    if (grant === McpOAuthGrant.AuthorizationCode) return undefined;
    if (grant === McpOAuthGrant.ClientCredentials) {
      const params = new URLSearchParams({ grant_type: 'client_credentials' });
      if (scope) params.set('scope', scope);
      return params;
    }
    const authorizationServerUrl = this.#authorizationServerUrl;
    const resourceUrl = this.#resourceUrl;
    if (authorizationServerUrl === undefined || resourceUrl === undefined) {
      throw new ToolbusError(
        'unauthorized',
        `MCP server '${this.#serverId}' publishes no protected resource metadata naming its authorization ` +
          "server, which grant 'jwt-bearer' needs",
      );
    }
    const assertion = await this.#options.assertion!({
      authorizationServerUrl,
      resourceUrl,
      ...(scope ? { scope } : {}),
      signal: AbortSignal.timeout(60_000),
    });
    const params = new URLSearchParams({
      grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer',
      assertion,
    });
    if (scope) params.set('scope', scope);
    return params;
  }

  // --- toolbus ------------------------------------------------------------------------------------

  /** What the stored tokens grant, for a person to read; undefined without tokens. */
  async summary(): Promise<McpOAuthGrantSummary | undefined> {
    const state = await this.#read(true);
    const tokens = objectField(state, 'tokens');
    if (tokens === undefined) return undefined;
    return {
      scope: stringField(tokens, 'scope'),
      expiresAt: numberField(state, 'expires-at'),
      refreshable: typeof tokens['refresh_token'] === 'string',
      issuer: stringField(tokens, 'issuer'),
    };
  }

  /**
   * After a request failed for want of authorization: when the SDK started an authorization a person
   * must approve, runs it through `oauth.authorize` (or fails with `unauthorized` saying what to do)
   * and resolves true, so the caller retries. Resolves false when nothing was started. Concurrent
   * callers share one authorization.
   */
  async recoverAuthorization(signal: AbortSignal): Promise<boolean> {
    if (this.#authorizing) {
      await this.#authorizing;
      return true;
    }
    const pending = this.#pending;
    this.#pending = undefined;
    if (!pending) return false;
    const run = this.#authorize(pending, signal);
    this.#authorizing = run;
    try {
      await run;
    } finally {
      if (this.#authorizing === run) this.#authorizing = undefined;
    }
    return true;
  }

  /** Drops an authorization the SDK started that nobody will complete. */
  discardPendingAuthorization(): void {
    this.#pending = undefined;
  }

  async #authorize(pending: PendingAuthorization, signal: AbortSignal): Promise<void> {
    const authorize = this.#options.authorize;
    if (authorize === undefined) throw this.#needsPerson();
    const redirectUrl = this.redirectUrl ?? DEFAULT_REDIRECT_URL;
    let redirect: McpOAuthRedirect;
    try {
      redirect = await authorize({ url: pending.url, redirectUrl, state: pending.state, signal });
    } catch (error) {
      if (isToolbusError(error)) throw error;
      throw new ToolbusError(
        signal.aborted ? 'cancelled' : 'unauthorized',
        `authorizing toolbus with MCP server '${this.#serverId}' did not complete: ${quoted(error instanceof Error ? error.message : String(error))}`,
        { cause: error },
      );
    }
    const params = paramsOf(redirect);
    if (params.get('state') !== pending.state) {
      throw new ToolbusError(
        'unauthorized',
        `MCP server '${this.#serverId}': the authorization redirect carries a 'state' that is not the one toolbus ` +
          'sent (a stale or forged redirect); nothing was stored, start again',
      );
    }
    const code = params.get('code');
    const iss = params.get('iss') ?? undefined;
    const discovery = objectField(await this.#read(true), 'discovery');
    const metadata = objectField(discovery, 'authorizationServerMetadata');
    if (!code) {
      // The error text is the server's to show only once the redirect is known to come from it.
      validateAuthorizationResponseIssuer({
        iss,
        expectedIssuer: stringField(metadata, 'issuer'),
        issParameterSupported: metadata?.['authorization_response_iss_parameter_supported'] === true,
      });
      const error = params.get('error') ?? 'no code';
      const description = params.get('error_description');
      throw new ToolbusError(
        'unauthorized',
        `the authorization server of MCP server '${this.#serverId}' did not authorize toolbus: ${quoted(error)}` +
          (description ? ` (${quoted(description)})` : ''),
      );
    }
    const run: OAuthRun = {};
    this.#exchanging = pending;
    const result = await auth(this, {
      serverUrl: this.#serverUrl,
      authorizationCode: code,
      ...(iss ? { iss } : {}),
      fetchFn: this.#fetchWithin(AbortSignal.timeout(OAUTH_DEADLINE_MS), run),
    })
      .catch((error: unknown) => {
        throw oauthError(error, this.#serverId, this.loginHint) ?? run.failure ?? error;
      })
      .finally(() => (this.#exchanging = undefined));
    if (result !== 'AUTHORIZED') {
      throw new ToolbusError(
        'unauthorized',
        `MCP server '${this.#serverId}': the authorization code was not accepted`,
      );
    }
  }

  #needsPerson(): ToolbusError {
    return new ToolbusError(
      'unauthorized',
      `MCP server '${this.#serverId}' needs a person to authorize toolbus (OAuth authorization code) and none ` +
        `can here: ${this.loginHint}`,
    );
  }

  /**
   * True when the stored access token expires within the margin and can be renewed without a person,
   * or when a service (client_credentials, jwt-bearer) has none yet.
   */
  #renewalDue(state: McpOAuthState | undefined): boolean {
    const tokens = objectField(state, 'tokens');
    const service = this.#options.grant !== McpOAuthGrant.AuthorizationCode;
    // A service fetches its first token before its first request, instead of after a 401.
    if (tokens === undefined) return service;
    const expiresAt = numberField(state, 'expires-at');
    if (expiresAt === undefined) return false;
    const silent = typeof tokens['refresh_token'] === 'string' || service;
    if (!silent) return false;
    const obtainedAt = numberField(state, 'obtained-at') ?? expiresAt;
    const margin = Math.min(this.#options.refreshMarginMs, (expiresAt - obtainedAt) / 4);
    return Date.now() >= expiresAt - margin;
  }

  /** True when `state` holds an access token that has not expired (as far as the server said). */
  #usable(state: McpOAuthState | undefined): boolean {
    if (typeof objectField(state, 'tokens')?.['access_token'] !== 'string') return false;
    const expiresAt = numberField(state, 'expires-at');
    return expiresAt === undefined || Date.now() < expiresAt;
  }

  /**
   * Renews the tokens once for every concurrent caller of this process. Never rejects: resolves with
   * why the authorization server gave no tokens, when it was asked and failed.
   */
  #renew(): Promise<ToolbusError | undefined> {
    this.#renewing ??= this.#renewOnce().finally(() => (this.#renewing = undefined));
    return this.#renewing;
  }

  /**
   * Renews under a lease in the store, so that processes sharing it refresh once: a rotated refresh
   * token used twice would be refused (and may revoke the grant). A process that finds another's lease
   * waits for its tokens. The renewal ends within {@link OAUTH_DEADLINE_MS}; a failure is left to
   * the request, which goes out with the old token while it has not expired.
   */
  async #renewOnce(): Promise<ToolbusError | undefined> {
    const deadline = Date.now() + REFRESH_LEASE_MS + 5_000;
    while (Date.now() < deadline) {
      const { state, version } = await this.#reload();
      if (!this.#renewalDue(state)) return undefined;
      const lease = objectField(state, 'refreshing');
      const holder = stringField(lease, 'owner');
      const until = numberField(lease, 'until') ?? 0;
      if (holder !== undefined && holder !== this.#owner && until > Date.now()) {
        await sleep(Math.min(LEASE_POLL_MS, until - Date.now()));
        continue;
      }
      try {
        const next = { ...state, refreshing: { owner: this.#owner, until: Date.now() + REFRESH_LEASE_MS } };
        this.#cache = { state: next, version: await this.#store.write(next, version) };
      } catch (error) {
        if (isToolbusError(error) && error.code === 'config-conflict') continue;
        return undefined;
      }
      const run: OAuthRun = {};
      try {
        const fetchFn = this.#fetchWithin(AbortSignal.timeout(OAUTH_DEADLINE_MS), run);
        if ((await auth(this, { serverUrl: this.#serverUrl, fetchFn })) === 'AUTHORIZED') return undefined;
        // A refresh that failed otherwise than with an OAuth error fell back to a new authorization,
        // which nobody is here to approve: what failed is in `run`.
        this.#pending = undefined;
        return run.failure;
      } catch (error) {
        return (
          oauthError(error, this.#serverId, this.loginHint) ??
          run.failure ??
          new ToolbusError(
            'unauthorized',
            `renewing the tokens of MCP server '${this.#serverId}' failed: ${quoted(error instanceof Error ? error.message : String(error))}`,
            { cause: error },
          )
        );
      } finally {
        await this.#update((s) => {
          if (stringField(objectField(s, 'refreshing'), 'owner') !== this.#owner) return s;
          const next: Mutable = { ...s };
          delete next['refreshing'];
          return next as McpOAuthState;
        }).catch(() => undefined);
      }
    }
    return undefined;
  }

  /**
   * `fetch` for the requests of one `auth()` run (discovery, registration, tokens): each ends when
   * `deadline` aborts; an answer that is not JSON (every OAuth answer is) fails without being quoted,
   * since it may echo a credential. The first failure is kept in `run` as a toolbus error; a network
   * failure is thrown as it came, since the SDK tells those apart from other errors.
   */
  #fetchWithin(deadline: AbortSignal, run: OAuthRun): FetchLike {
    return async (input, init) => {
      const url = new URL(input);
      const callerSignal = init?.signal ?? undefined;
      const signal = callerSignal ? AbortSignal.any([callerSignal, deadline]) : deadline;
      let failure: ToolbusError;
      try {
        const response = await fetch(input, { ...init, signal });
        if (!response.ok) return response;
        const text = await response.clone().text();
        if (text === '' || isJson(text)) return response;
        failure = oauthRequestError(undefined, this.#serverId, { url, notJson: true });
      } catch (error) {
        if (callerSignal?.aborted) throw error;
        if (!deadline.aborted) {
          run.failure ??= oauthRequestError(error, this.#serverId, { url });
          throw error;
        }
        failure = oauthRequestError(error, this.#serverId, { url, timeoutMs: OAUTH_DEADLINE_MS });
      }
      run.failure ??= failure;
      throw failure;
    };
  }

  async #bindClient(clientId: string, issuer: string): Promise<void> {
    await this.#update((s) => ({ ...s, client: { client_id: clientId, issuer } }));
  }

  /** The state for this server: from the cache, or from the store when `fresh` or nothing is cached. */
  async #read(fresh: boolean): Promise<McpOAuthState | undefined> {
    if (!fresh && this.#cache) return this.#cache.state;
    return (await this.#reload()).state;
  }

  async #reload(): Promise<{ state: McpOAuthState | undefined; version: number }> {
    const { state, version } = await this.#store.read();
    // State written for another URL (the item now names another server) is not this server's.
    const mine = state !== undefined && state.server === this.#serverUrl.href ? state : undefined;
    this.#cache = { state: mine, version };
    return this.#cache;
  }

  /** Applies `change` to the stored state with compare-and-set, reading again after a conflict. */
  async #update(change: (state: McpOAuthState) => McpOAuthState): Promise<void> {
    for (let attempt = 0; attempt < MAX_WRITE_ATTEMPTS; attempt++) {
      const { state, version } = attempt === 0 && this.#cache ? this.#cache : await this.#reload();
      const next = { ...change(state ?? {}), server: this.#serverUrl.href };
      try {
        this.#cache = { state: next, version: await this.#store.write(next, version) };
        return;
      } catch (error) {
        if (!(isToolbusError(error) && error.code === 'config-conflict')) throw error;
      }
    }
    throw new ToolbusError(
      'store-error',
      `MCP server '${this.#serverId}': the OAuth state kept changing under toolbus; it was not saved`,
    );
  }
}

/**
 * What a new login starts from: the client registration and the discovery results of `state`, not its
 * tokens. A login runs on a copy of its own (a `MemoryMcpOAuthStore`), so the processes using the
 * tokens meanwhile keep them, and a failed or cancelled login loses nothing.
 */
export function loginSeed(state: McpOAuthState | undefined): McpOAuthState | undefined {
  if (state === undefined) return undefined;
  const seed: Mutable = {};
  for (const field of ['server', 'client', 'discovery']) {
    const value = state[field];
    if (value !== undefined) seed[field] = value;
  }
  return seed as McpOAuthState;
}

/**
 * Puts the state of a login that succeeded in `store`, over whatever is there, with compare-and-set
 * (read again after a conflict). A refresh that another process holds the lease for is let end first:
 * it would otherwise save the old grant's tokens over the new ones.
 */
export async function saveLogin(store: McpOAuthStore, state: McpOAuthState, serverId: string): Promise<void> {
  for (let conflicts = 0; conflicts < MAX_WRITE_ATTEMPTS;) {
    const { state: current, version } = await store.read();
    const until = numberField(objectField(current, 'refreshing'), 'until') ?? 0;
    if (until > Date.now()) {
      await sleep(Math.min(LEASE_POLL_MS, until - Date.now()));
      continue;
    }
    try {
      await store.write(state, version);
      return;
    } catch (error) {
      if (!(isToolbusError(error) && error.code === 'config-conflict')) throw error;
      conflicts++;
    }
  }
  throw new ToolbusError(
    'store-error',
    `MCP server '${serverId}': the OAuth state kept changing under toolbus; the login was not saved, run it again`,
  );
}
