/**
 * The MCP client's OAuth 2.1 against real parts on 127.0.0.1: an authorization server (oidc-provider:
 * dynamic registration, PKCE, client_credentials with basic/post/private_key_jwt, refresh tokens, JWT
 * access tokens per resource) and an MCP server that requires its tokens (RFC 9728 metadata, 401 and
 * 403 insufficient_scope challenges). `mcpServerTools({ url, oauth })`, an `mcp/<id>` item in the
 * registry, refresh before expiry (across sessions sharing a store), step-up, and the failure paths.
 */
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { exportJWK } from 'jose';
import type { ClientMetadata } from 'oidc-provider';
import {
  ConfigMcpOAuthStore,
  McpSession,
  MemoryMcpOAuthStore,
  importMcpTools,
  loginMcpServer,
  mcpServerTools,
  mcpToolType,
  type McpAuthorizeRequest,
  type McpOAuthOptions,
} from '../../src/adapters/mcp/index.js';
import { MemoryConfigStore } from '../../src/config/index.js';
import { SqliteConfigStore } from '../../src/config/sqlite/index.js';
import { ToolRegistry } from '../../src/registry/index.js';
import { createGateway } from '../../src/gateway/index.js';
import { LiveToolSet } from '../../src/index.js';
import { BROKEN_TOKEN_TEXT, startAuthServer, type TestAuthServer } from '../fixtures/oauth-server.js';
import {
  startMcpOAuthServer,
  type McpOAuthServer,
  type McpOAuthServerOptions,
} from '../fixtures/mcp-oauth-server.js';

const SCOPES = 'mcp:tools mcp:admin';
const SECRET = 'svc-secret-0123456789';
/** The redirect URI of the pre-registered app; the test's browser never loads it. */
const APP_REDIRECT = 'http://127.0.0.1:9/callback';

const ecKey = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const PRIVATE_KEY = ecKey.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();

async function clients(): Promise<ClientMetadata[]> {
  const jwk = { ...(await exportJWK(ecKey.publicKey)), alg: 'ES256', use: 'sig' };
  const service = { grant_types: ['client_credentials'], redirect_uris: [], response_types: [] };
  return [
    {
      ...service,
      client_id: 'svc-basic',
      client_secret: SECRET,
      token_endpoint_auth_method: 'client_secret_basic',
    },
    {
      ...service,
      client_id: 'svc-post',
      client_secret: SECRET,
      token_endpoint_auth_method: 'client_secret_post',
    },
    {
      ...service,
      client_id: 'svc-jwt',
      token_endpoint_auth_method: 'private_key_jwt',
      token_endpoint_auth_signing_alg: 'ES256',
      jwks: { keys: [jwk] },
    },
    {
      client_id: 'app',
      token_endpoint_auth_method: 'none',
      application_type: 'native',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      redirect_uris: [APP_REDIRECT],
    },
  ];
}

interface Servers {
  mcp: McpOAuthServer;
  as: TestAuthServer;
}

/** An MCP server that requires OAuth and its authorization server, stopped after the test. */
async function servers(
  t: TestContext,
  options: { mcp?: McpOAuthServerOptions; ttlSeconds?: number; scopes?: string } = {},
): Promise<Servers> {
  const mcp = await startMcpOAuthServer(options.mcp);
  const as = await startAuthServer({
    resources: { [mcp.url]: options.scopes ?? SCOPES },
    clients: await clients(),
    ...(options.ttlSeconds !== undefined ? { accessTokenTtlSeconds: options.ttlSeconds } : {}),
  });
  mcp.trust(as);
  t.after(async () => {
    await as.close();
    await mcp.close();
  });
  return { mcp, as };
}

/** An `authorize` that plays a browser whose user approves, counting the authorizations. */
function browser(as: TestAuthServer): {
  authorize: (r: McpAuthorizeRequest) => Promise<URL>;
  count: () => number;
} {
  let count = 0;
  return {
    authorize: async (request) => {
      count++;
      return as.approve(request.url);
    },
    count: () => count,
  };
}

async function whoami(
  tools: Awaited<ReturnType<typeof mcpServerTools>>,
): Promise<{ sub: string; scopes: string[] }> {
  const result = await tools.call('whoami', {});
  assert.equal(result.isError, false, result.content);
  return JSON.parse(result.content) as { sub: string; scopes: string[] };
}

/** Rejects with the ToolbusError `mcpServerTools` fails with, for assertions. */
async function connectError(url: string, oauth: McpOAuthOptions): Promise<Error & { code: string }> {
  try {
    const tools = await mcpServerTools({ url, id: 'remote', oauth });
    await tools.close();
  } catch (error) {
    return error as Error & { code: string };
  }
  throw new Error('expected the connection to fail');
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('MCP client OAuth', { timeout: 120_000 }, () => {
  test('client_credentials with client_secret_basic, client_secret_post and private_key_jwt: no browser', async (t) => {
    const { mcp, as } = await servers(t);
    const cases: [McpOAuthOptions, string][] = [
      [{ grant: 'client_credentials', clientId: 'svc-basic', clientSecret: SECRET }, 'client_secret_basic'],
      [
        {
          grant: 'client_credentials',
          clientId: 'svc-post',
          clientSecret: SECRET,
          tokenEndpointAuthMethod: 'client_secret_post',
        },
        'client_secret_post',
      ],
      [{ grant: 'client_credentials', clientId: 'svc-jwt', privateKey: PRIVATE_KEY }, 'private_key_jwt'],
    ];
    for (const [oauth, method] of cases) {
      const tools = await mcpServerTools({ url: mcp.url, oauth });
      try {
        const me = await whoami(tools);
        assert.equal(me.sub, oauth.clientId);
        assert.deepEqual(me.scopes, ['mcp:tools'], 'the scope the server asked for');
        const last = as.tokenRequests.at(-1)!;
        assert.deepEqual(
          { grant: last.grantType, method: last.authMethod, resource: last.resource },
          { grant: 'client_credentials', method, resource: mcp.url },
        );
      } finally {
        await tools.close();
      }
    }
    assert.equal(as.registrations, 0, 'pre-registered clients do not register');
    assert.deepEqual(mcp.refusals, [], 'a service gets its token before its first request, not after a 401');
  });

  test('mcp/<id> items with client_credentials in the registry (secret, private key): read from allowed variables, tokens land in mcp-oauth/<id>', async (t) => {
    const { mcp, as } = await servers(t);
    const store = new MemoryConfigStore();
    await store.put('mcp', 'svc', {
      url: mcp.url,
      oauth: {
        grant: 'client_credentials',
        'client-id': 'svc-basic',
        'client-secret': { env: 'SVC_SECRET' },
      },
    });
    await store.put('mcp', 'svc-jwt', {
      url: mcp.url,
      oauth: { grant: 'client_credentials', 'client-id': 'svc-jwt', 'private-key': { env: 'SVC_KEY' } },
    });
    await store.put('tool', 'whoami', { type: 'mcp-tool', 'mcp-tool': 'svc', 'remote-name': 'whoami' });
    await store.put('tool', 'whoami-jwt', {
      type: 'mcp-tool',
      'mcp-tool': 'svc-jwt',
      'remote-name': 'whoami',
    });
    const mcpTools = mcpToolType({ store, env: { SVC_SECRET: SECRET, SVC_KEY: PRIVATE_KEY } });
    const registry = new ToolRegistry({
      store,
      allowlist: { env: ['SVC_*'] },
      toolTypes: { 'mcp-tool': mcpTools },
    });
    t.after(async () => {
      await registry.close();
      await mcpTools.close();
    });
    await registry.start();
    const result = await registry.tools.call('whoami', {});
    assert.equal(result.isError, false, result.content);
    assert.equal(JSON.parse(result.content).sub, 'svc-basic');
    const kept = (await store.get('mcp-oauth', 'svc'))?.value as { tokens?: { access_token?: string } };
    assert.equal(typeof kept.tokens?.access_token, 'string', 'the token is kept in mcp-oauth/svc');
    const jwt = await registry.tools.call('whoami-jwt', {});
    assert.equal(JSON.parse(jwt.content).sub, 'svc-jwt', jwt.content);
    assert.deepEqual(
      as.tokenRequests.map((r) => r.authMethod),
      ['client_secret_basic', 'private_key_jwt'],
    );

    // The same item where the operator did not allow the variable: refused before anything is sent.
    const refusing = new ToolRegistry({ store, toolTypes: { 'mcp-tool': mcpToolType({ store }) } });
    t.after(() => refusing.close());
    await refusing.start();
    const problem = refusing.problems().find((p) => p.key === 'tool/whoami');
    assert.equal(problem?.code, 'not-allowed');
    assert.match(problem?.message ?? '', /reads the environment variable 'SVC_SECRET'.*TOOLBUS_ALLOW_ENV/);
    assert.equal(as.tokenRequests.length, 2);
  });

  test('tokens are refreshed shortly before they expire, once for processes sharing the config store', async (t) => {
    const { mcp, as } = await servers(t, { ttlSeconds: 4 });
    // Two connections to one SQLite file, as two processes (toolbus up and toolbus mcp import) have.
    const dir = mkdtempSync(join(tmpdir(), 'toolbus-oauth-refresh-'));
    const configA = new SqliteConfigStore({ path: join(dir, 'config.db') });
    const configB = new SqliteConfigStore({ path: join(dir, 'config.db') });
    t.after(async () => {
      await configA.close();
      await configB.close();
      rmSync(dir, { recursive: true, force: true });
    });
    const storeA = new ConfigMcpOAuthStore(configA, 'remote');
    const { authorize } = browser(as);
    const first = await mcpServerTools({ url: mcp.url, oauth: { authorize, store: storeA } });
    t.after(() => first.close());
    await whoami(first);
    assert.equal(as.registrations, 1);
    assert.deepEqual(
      as.tokenRequests.map((r) => r.grantType),
      ['authorization_code'],
    );

    // The margin is a quarter of the 4 s lifetime: renewal is due 1 s before expiry.
    const renewalDue = async (): Promise<number> =>
      ((await storeA.read()).state?.['expires-at'] as number) - 1000 - Date.now() + 50;
    await sleep(await renewalDue());
    await whoami(first);
    assert.deepEqual(
      as.tokenRequests.map((r) => r.grantType),
      ['authorization_code', 'refresh_token'],
      'renewed with the refresh token before the request went out',
    );

    // The other "process" uses the stored tokens (no authorization of its own); both notice at once.
    const second = await mcpServerTools({
      url: mcp.url,
      oauth: { store: new ConfigMcpOAuthStore(configB, 'remote') },
    });
    t.after(() => second.close());
    await sleep(await renewalDue());
    const [a, b] = await Promise.all([whoami(first), whoami(second)]);
    assert.equal(a.sub, 'alice');
    assert.equal(b.sub, 'alice');
    assert.deepEqual(
      as.tokenRequests.map((r) => r.grantType),
      ['authorization_code', 'refresh_token', 'refresh_token'],
      'one refresh for both: a rotated refresh token is never used twice',
    );
    assert.deepEqual(
      mcp.refusals.filter((r) => r.reason === 'expired' || r.reason === 'invalid'),
      [],
      'no request ever went out with an expired token',
    );
  });

  test('step-up on 403 insufficient_scope: client_credentials asks for the wider scope; a person approves it once more', async (t) => {
    const { mcp, as } = await servers(t);
    const service = await mcpServerTools({
      url: mcp.url,
      oauth: { grant: 'client_credentials', clientId: 'svc-basic', clientSecret: SECRET },
    });
    t.after(() => service.close());
    const admin = await service.call('admin_echo', { text: 'hi' });
    assert.equal(admin.isError, false, admin.content);
    assert.equal(admin.content, 'admin: hi');
    assert.equal(as.tokenRequests.at(-1)?.scope, 'mcp:tools mcp:admin');
    assert.equal(mcp.refusals.filter((r) => r.reason === 'insufficient_scope').length, 1);

    const person = browser(as);
    const app = await mcpServerTools({
      url: mcp.url,
      oauth: { clientId: 'app', redirectUrl: APP_REDIRECT, authorize: person.authorize },
    });
    t.after(() => app.close());
    assert.deepEqual((await whoami(app)).scopes, ['mcp:tools']);
    assert.equal(person.count(), 1);
    const stepped = await app.call('admin_echo', { text: 'again' });
    assert.equal(stepped.isError, false, stepped.content);
    assert.equal(person.count(), 2, 'one more approval, for the wider scope');
    assert.deepEqual((await whoami(app)).scopes.sort(), ['mcp:admin', 'mcp:tools']);
  });

  test('a call that fails for another reason while a person authorizes is not sent again: the tool runs once', async (t) => {
    const { mcp, as } = await servers(t);
    let approvals = 0;
    let stepUpAsked!: () => void;
    const asked = new Promise<void>((resolve) => (stepUpAsked = resolve));
    let approve!: () => void;
    let approved = false;
    const approval = new Promise<void>((resolve) => (approve = resolve));
    const session = new McpSession({
      url: mcp.url,
      id: 'remote',
      oauth: {
        clientId: 'app',
        redirectUrl: APP_REDIRECT,
        authorize: async (request) => {
          // The first approval at once; the step-up's waits until the test lets it through.
          if (++approvals > 1) {
            stepUpAsked();
            await approval;
          }
          return as.approve(request.url);
        },
      },
    });
    t.after(() => session.close());
    await session.listTools();
    const admin = session.callTool('admin_echo', { text: 'hi' });
    await asked;
    // Meanwhile a call that times out (it reached the server and may have had an effect).
    const guard = setTimeout(() => ((approved = true), approve()), 20_000); // a hang guard only
    const failed = await session.callTool('sleep', { ms: 3000 }, { timeoutMs: 100 }).then(
      () => undefined,
      (error: unknown) => error as Error & { code?: string },
    );
    const settledBeforeApproval = !approved;
    clearTimeout(guard);
    approved = true;
    approve();
    assert.equal(failed?.code, 'timeout', failed?.message);
    assert.equal(mcp.toolRuns['sleep'], 1, 'the call was sent once');
    assert.ok(settledBeforeApproval, 'the failed call did not wait for the other caller’s authorization');
    const result = await admin;
    assert.deepEqual(result.content, [{ type: 'text', text: 'admin: hi' }]);
    assert.equal(approvals, 2);
  });

  /** A session logged in through a person (so with a refresh token), once its access token expired. */
  async function expiredSession(
    t: TestContext,
    { mcp, as }: Servers,
  ): Promise<{ session: McpSession; store: MemoryMcpOAuthStore }> {
    const store = new MemoryMcpOAuthStore();
    // The call timeout is longer than the renewal's, so a renewal that hangs shows as one.
    const session = new McpSession({
      url: mcp.url,
      id: 'remote',
      timeoutMs: 30_000,
      oauth: { authorize: browser(as).authorize, store },
    });
    t.after(() => session.close());
    await session.callTool('whoami', {});
    const expiresAt = (await store.read()).state?.['expires-at'] as number;
    await sleep(expiresAt - Date.now() + 50);
    return { session, store };
  }

  test('a token endpoint that never answers: calls fail as unavailable once the renewal gives up, and the next renewal works', async (t) => {
    const parts = await servers(t, { ttlSeconds: 2 });
    const { session } = await expiredSession(t, parts);
    parts.as.breakTokenEndpoint('hang');
    // Two calls waiting for the same renewal: neither waits longer than it.
    const failures = await Promise.all(
      [1, 2].map(() =>
        session.callTool('whoami', {}).then(
          () => undefined,
          (error: unknown) => error as Error & { code?: string },
        ),
      ),
    );
    for (const failure of failures) {
      assert.equal(failure?.code, 'unavailable', failure?.message);
      assert.match(
        failure?.message ?? '',
        /the OAuth authorization server of MCP server 'remote' did not answer within 10 s \(http:\/\/127\.0\.0\.1:\d+\/token\)/,
      );
    }
    parts.as.breakTokenEndpoint();
    const result = await session.callTool('whoami', {});
    assert.notEqual(result.isError, true);
    assert.deepEqual(
      parts.as.tokenRequests.map((r) => r.grantType),
      ['authorization_code', 'refresh_token', 'refresh_token'],
      'one renewal for both calls, then one that worked',
    );
  });

  test('a token endpoint that answers something that is not JSON: a clear error that quotes none of it', async (t) => {
    const parts = await servers(t, { ttlSeconds: 2 });
    const { session, store } = await expiredSession(t, parts);
    const refreshToken = ((await store.read()).state?.['tokens'] as { refresh_token: string }).refresh_token;
    parts.as.breakTokenEndpoint('not-json');
    const failure = await session.callTool('whoami', {}).then(
      () => undefined,
      (error: unknown) => error as Error & { code?: string },
    );
    assert.equal(failure?.code, 'unavailable', failure?.message);
    assert.match(
      failure?.message ?? '',
      /the OAuth authorization server of MCP server 'remote' answered \(http:\/\/127\.0\.0\.1:\d+\/token\) with something that is not JSON/,
    );
    for (const secret of [BROKEN_TOKEN_TEXT.slice(0, 10), refreshToken]) {
      assert.ok(!failure?.message.includes(secret), failure?.message);
    }
  });

  /** An mcp/remote item needing a person's login, logged in once; with its access token then. */
  async function loggedIn(
    t: TestContext,
    { mcp, as }: Servers,
  ): Promise<{ store: MemoryConfigStore; accessToken: () => Promise<string | undefined> }> {
    const store = new MemoryConfigStore();
    await store.put('mcp', 'remote', { url: mcp.url, oauth: {} });
    await loginMcpServer(store, 'remote', { open: (url) => void as.browse(url), allowlist: {} });
    const accessToken = async (): Promise<string | undefined> =>
      ((await store.get('mcp-oauth', 'remote'))?.value as { tokens?: { access_token?: string } })?.tokens
        ?.access_token;
    assert.equal(typeof (await accessToken()), 'string');
    t.after(() => store.close());
    return { store, accessToken };
  }

  /** A process using mcp/remote with the tokens in the store, as toolbus up does: who it is, or why not. */
  async function whoamiFromStore(mcp: McpOAuthServer, store: MemoryConfigStore): Promise<string> {
    const session = new McpSession({
      url: mcp.url,
      id: 'remote',
      oauth: { store: new ConfigMcpOAuthStore(store, 'remote') },
    });
    try {
      const result = await session.callTool('whoami', {});
      return (JSON.parse((result.content[0] as { text: string }).text) as { sub: string }).sub;
    } catch (error) {
      return `failed: ${(error as Error).message}`;
    } finally {
      await session.close();
    }
  }

  test('a login again that is cancelled or fails keeps the tokens there were', async (t) => {
    const parts = await servers(t);
    const { store, accessToken } = await loggedIn(t, parts);
    const before = await accessToken();
    const controller = new AbortController();
    await assert.rejects(
      loginMcpServer(store, 'remote', {
        open: () => controller.abort(),
        signal: controller.signal,
        allowlist: {},
      }),
      { code: 'cancelled' },
    );
    await assert.rejects(
      loginMcpServer(store, 'remote', { open: () => undefined, timeoutMs: 50, allowlist: {} }),
      { code: 'timeout' },
    );
    assert.equal(await accessToken(), before, 'the tokens are still there');
    assert.equal(await whoamiFromStore(parts.mcp, store), 'alice');
  });

  test('another process using the server during a login keeps working and does not break the login', async (t) => {
    const parts = await servers(t);
    const { store, accessToken } = await loggedIn(t, parts);
    const before = await accessToken();
    let meanwhile: string | undefined;
    const result = await loginMcpServer(store, 'remote', {
      allowlist: {},
      open: async (url) => {
        // While the person is away, another process (toolbus up) uses the server.
        meanwhile = await whoamiFromStore(parts.mcp, store);
        await parts.as.browse(url);
      },
    });
    assert.equal(meanwhile, 'alice', 'it kept the tokens there were while the login ran');
    assert.equal(result.tools, 4);
    const after = await accessToken();
    assert.ok(after !== undefined && after !== before, 'the login stored its new tokens');
    assert.equal(await whoamiFromStore(parts.mcp, store), 'alice');
    assert.deepEqual(Object.keys((await store.get('mcp-oauth', 'remote'))!.value as object).sort(), [
      'client',
      'discovery',
      'expires-at',
      'obtained-at',
      'server',
      'tokens',
    ]);
  });

  test('a running registry picks up a login: the tool that failed for want of one goes live, without a restart', async (t) => {
    const { mcp, as } = await servers(t);
    const store = new MemoryConfigStore();
    await store.put('mcp', 'remote', { url: mcp.url, oauth: {} });
    // No arguments: building the tool asks the server for its schema, which needs the login.
    await store.put('tool', 'whoami', { type: 'mcp-tool', 'mcp-tool': 'remote', 'remote-name': 'whoami' });
    const mcpTools = mcpToolType({ store });
    const registry = new ToolRegistry({ store, toolTypes: { 'mcp-tool': mcpTools } });
    t.after(async () => {
      await registry.close();
      await mcpTools.close();
    });
    await registry.start();
    assert.match(
      registry.problems().find((p) => p.key === 'tool/whoami')?.message ?? '',
      /toolbus mcp login/,
    );
    let guard: ReturnType<typeof setTimeout> | undefined;
    const live = new Promise<string>((resolve) => {
      registry.onChange((change) => {
        if (change.added.includes('whoami')) resolve('live');
      });
      // Only a hang guard: without the fix, nothing tells the registry.
      guard = setTimeout(() => resolve('never went live'), 30_000);
    });
    await loginMcpServer(store, 'remote', { open: (url) => void as.browse(url), allowlist: {} });
    assert.equal(await live, 'live');
    clearTimeout(guard);
    const result = await registry.tools.call('whoami', {});
    assert.equal(JSON.parse(result.content).sub, 'alice', result.content);
    assert.equal(
      registry.problems().find((p) => p.key === 'tool/whoami'),
      undefined,
    );
    assert.deepEqual(
      as.tokenRequests.map((r) => r.grantType),
      ['authorization_code'],
      'the session that had no tokens took the login’s at once, with no 401 and no refresh',
    );
  });

  test('no login yet: the registry and mcp import say to run toolbus mcp login, and register nothing', async (t) => {
    const { mcp, as } = await servers(t);
    const store = new MemoryConfigStore();
    await store.put('mcp', 'remote', { url: mcp.url, oauth: {} });
    await assert.rejects(importMcpTools(store, 'remote'), (error: Error & { code?: string }) => {
      assert.equal(error.code, 'unauthorized');
      assert.match(
        error.message,
        /MCP server 'remote' needs a person to authorize toolbus.*run 'toolbus mcp login remote'/,
      );
      return true;
    });
    await store.put('tool', 'whoami', { type: 'mcp-tool', 'mcp-tool': 'remote', 'remote-name': 'whoami' });
    const mcpTools = mcpToolType({ store });
    const registry = new ToolRegistry({ store, toolTypes: { 'mcp-tool': mcpTools } });
    t.after(async () => {
      await registry.close();
      await mcpTools.close();
    });
    await registry.start();
    const problem = registry.problems().find((p) => p.key === 'tool/whoami');
    assert.match(problem?.message ?? '', /run 'toolbus mcp login remote'/);
    assert.equal(as.registrations, 0, 'no client was registered that nobody could authorize');
  });

  test('a refused registration, a wrong client secret and a lying resource are clear errors that carry no secret', async (t) => {
    // The server asks for a scope the authorization server does not know: registration is refused.
    const strange = await servers(t, { mcp: { requiredScope: 'mcp:unknown' } });
    const refused = await connectError(strange.mcp.url, { authorize: browser(strange.as).authorize });
    assert.equal(refused.code, 'unauthorized');
    assert.match(
      refused.message,
      /refused to register toolbus as a client \(HTTP 400 invalid_client_metadata: .*\); register a client there/,
    );

    const { mcp, as } = await servers(t);
    const wrong = await connectError(mcp.url, {
      grant: 'client_credentials',
      clientId: 'svc-basic',
      clientSecret: 'not-the-secret-4242',
    });
    assert.equal(wrong.code, 'unauthorized');
    assert.match(wrong.message, /refused: invalid_client.*check the client ID and its secret or key/);
    assert.ok(!wrong.message.includes('not-the-secret-4242'));

    const liar = await servers(t, { mcp: { resourceOverride: 'https://evil.example.com/mcp' } });
    const person = browser(liar.as);
    const mismatch = await connectError(liar.mcp.url, { authorize: person.authorize });
    assert.equal(mismatch.code, 'unauthorized');
    assert.match(
      mismatch.message,
      /its protected resource metadata names the resource 'https:\/\/evil\.example\.com\/mcp', not this server/,
    );
    assert.equal(person.count(), 0, 'nobody was sent to authorize');
    assert.equal(liar.as.registrations, 0);
    assert.equal(as.registrations, 0);
  });

  test('an authorization server that is down: unavailable, saying which server could not be reached', async (t) => {
    const { mcp, as } = await servers(t);
    await as.close();
    const down = await connectError(mcp.url, {
      grant: 'client_credentials',
      clientId: 'svc-basic',
      clientSecret: SECRET,
    });
    assert.equal(down.code, 'unavailable');
    assert.match(
      down.message,
      /the OAuth authorization server of MCP server 'remote' could not be reached: fetch failed/,
    );
  });

  test('the gateway shows an mcp-oauth item with its secrets withheld and refuses to write one', async (t) => {
    const store = new MemoryConfigStore();
    await store.put('mcp-oauth', 'files', {
      server: 'https://mcp.example.com/mcp',
      tokens: {
        access_token: 'AT-SECRET',
        refresh_token: 'RT-SECRET',
        scope: 'mcp:tools',
        token_type: 'Bearer',
      },
    });
    const gateway = createGateway({
      tools: new LiveToolSet([]),
      store,
      token: 'admin-token-0123456789abcdef',
    });
    const url = await gateway.listen({ port: 0 });
    t.after(() => gateway.close());
    const api = (path: string, init: RequestInit = {}) =>
      fetch(`${url}${path}`, {
        ...init,
        headers: { authorization: 'Bearer admin-token-0123456789abcdef', 'content-type': 'application/json' },
      });
    const one = await api('/api/v1/config/mcp-oauth/files');
    const text = await one.text();
    assert.equal(one.status, 200);
    assert.ok(!text.includes('AT-SECRET') && !text.includes('RT-SECRET'), text);
    assert.deepEqual((JSON.parse(text) as { withheld: string[] }).withheld, [
      'tokens.access_token',
      'tokens.refresh_token',
    ]);
    const list = await (await api('/api/v1/config/mcp-oauth')).text();
    assert.ok(!list.includes('AT-SECRET') && list.includes('withheld'), list);
    const put = await api('/api/v1/config/mcp-oauth/files', { method: 'PUT', body: '{"tokens":{}}' });
    assert.equal(put.status, 403);
    assert.match(await put.text(), /only toolbus writes/);
    assert.equal((await api('/api/v1/config/mcp-oauth/files', { method: 'DELETE' })).status, 200);
    assert.equal(await store.get('mcp-oauth', 'files'), undefined, 'deleting is logging out');
  });
});
