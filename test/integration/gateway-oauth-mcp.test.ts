/**
 * An MCP client signs in with OAuth instead of a pasted token, against real parts: a real `toolbus up`
 * (a child process, `--jwt-jwks … --jwt-issuer … --oauth`), a real OAuth 2.1 authorization server
 * (oidc-provider, test/fixtures/oauth-server.ts) and the official MCP SDK client with an
 * `OAuthClientProvider`. The client gets 401, finds the authorization server in the gateway's protected
 * resource metadata, registers itself, has the user approve (PKCE), gets a JWT minted for the MCP
 * endpoint's URL, and then lists and calls tools as that user.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  auth,
  Client,
  StreamableHTTPClientTransport,
  UnauthorizedError,
  type OAuthClientMetadata,
  type OAuthClientProvider,
  type OAuthDiscoveryState,
  type StoredOAuthClientInformation,
  type StoredOAuthTokens,
} from '@modelcontextprotocol/client';
import { decodeJwt } from 'jose';
import { startAuthServer, type TestAuthServer } from '../fixtures/oauth-server.js';
import { interrupt, startCli, type StartedCli } from '../support/cli.js';
import { rawRequest } from '../support/raw-http.js';

const ADMIN_TOKEN = 'oauth-roundtrip-admin-token-0123456789';
const SERVICE = { id: 'reporting-service', secret: 'reporting-service-secret-0123456789' };

let as: TestAuthServer;
let home: string;
let up: StartedCli;
let url: string;
let mcpUrl: string;

/** A port free a moment ago on 127.0.0.1: the authorization server must know the MCP URL before up starts. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

before(async () => {
  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  mcpUrl = `${url}/mcp`;
  as = await startAuthServer({
    resources: {
      [mcpUrl]: 'toolbus:caller toolbus:admin',
      [url]: 'toolbus:caller toolbus:admin',
      'https://elsewhere.example.com/mcp': 'toolbus:caller',
    },
    // A service of ours with client credentials, for tokens minted for other resources.
    clients: [
      {
        client_id: SERVICE.id,
        client_secret: SERVICE.secret,
        grant_types: ['client_credentials'],
        redirect_uris: [],
        response_types: [],
      },
    ],
  });
  home = await mkdtemp(join(tmpdir(), 'toolbus-oauth-'));
  up = await startCli(
    [
      'up',
      '--port',
      String(port),
      '--jwt-jwks',
      as.jwksUri,
      '--jwt-issuer',
      as.issuer,
      '--oauth',
      '--oauth-scopes',
      'toolbus:caller',
    ],
    { PATH: process.env.PATH, HOME: process.env.HOME, TOOLBUS_HOME: home, TOOLBUS_TOKEN: ADMIN_TOKEN },
    /Press Ctrl-C to stop\./,
  );
  assert.ok(up.output().includes(`gateway   ${url}`), up.output());
});

after(async () => {
  if (up?.child.exitCode === null) await interrupt(up.child);
  await as?.close();
  if (home) await rm(home, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
});

/**
 * An MCP client's OAuth state, kept in memory as a desktop app keeps it on disk. Its user approves
 * whatever is asked: `redirectToAuthorization` plays the browser, and keeps where it was sent back to
 * for `finishAuth`.
 */
class ApprovingOAuthProvider implements OAuthClientProvider {
  readonly redirectUrl = 'http://127.0.0.1:1/oauth/callback';
  /** The query of the redirect back from the authorization server (`code`, `state`, `iss`). */
  callback: URLSearchParams | undefined;
  #client: StoredOAuthClientInformation | undefined;
  #tokens: StoredOAuthTokens | undefined;
  #verifier = '';
  #discovery: OAuthDiscoveryState | undefined;

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'toolbus OAuth round trip',
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  clientInformation(): StoredOAuthClientInformation | undefined {
    return this.#client;
  }
  saveClientInformation(info: StoredOAuthClientInformation): void {
    this.#client = info;
  }
  tokens(): StoredOAuthTokens | undefined {
    return this.#tokens;
  }
  saveTokens(tokens: StoredOAuthTokens): void {
    this.#tokens = tokens;
  }
  saveCodeVerifier(verifier: string): void {
    this.#verifier = verifier;
  }
  codeVerifier(): string {
    return this.#verifier;
  }
  saveDiscoveryState(state: OAuthDiscoveryState): void {
    this.#discovery = state;
  }
  discoveryState(): OAuthDiscoveryState | undefined {
    return this.#discovery;
  }
  async redirectToAuthorization(authorizationUrl: URL): Promise<void> {
    const back = await as.approve(authorizationUrl);
    this.callback = back.searchParams;
  }
}

/** A fetch that keeps a line per request (`POST http://…/mcp → 401`), for what the client did. */
function recordingFetch(log: string[]): typeof fetch {
  return async (input, init) => {
    const response = await fetch(input, init);
    const target = new URL(input instanceof Request ? input.url : String(input));
    log.push(`${init?.method ?? 'GET'} ${target.origin}${target.pathname} → ${response.status}`);
    return response;
  };
}

/** The audit entries of the gateway (admin token), polled until `match` finds one. */
async function auditEntry(
  match: (entry: Record<string, unknown>) => boolean,
): Promise<Record<string, unknown>> {
  for (let i = 0; i < 200; i++) {
    const res = await fetch(`${url}/api/v1/audit?limit=100`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    assert.equal(res.status, 200);
    const { entries } = (await res.json()) as { entries: Record<string, unknown>[] };
    const found = entries.find(match);
    if (found) return found;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('no such audit entry');
}

/** A token of the test's service for `resource` and `scope`, by client credentials. */
async function serviceToken(resource: string, scope = 'toolbus:caller'): Promise<string> {
  const res = await fetch(`${as.issuer}/token`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${SERVICE.id}:${SERVICE.secret}`).toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams({ grant_type: 'client_credentials', resource, scope }),
  });
  const body = (await res.json()) as { access_token?: string };
  assert.equal(res.status, 200, JSON.stringify(body));
  return body.access_token!;
}

test('toolbus up --oauth: the banner names the authorization server and the metadata', () => {
  assert.match(up.output(), new RegExp(`oauth\\s+MCP clients sign in at ${as.issuer}`));
  assert.ok(up.output().includes(`${url}/.well-known/oauth-protected-resource/mcp`), up.output());
});

test('an MCP SDK client with no pasted token: 401 → metadata → registration → approval → token → tools, as the user; then a refresh', async (t) => {
  const provider = new ApprovingOAuthProvider();
  const requests: string[] = [];
  const transport = () =>
    new StreamableHTTPClientTransport(new URL(mcpUrl), {
      authProvider: provider,
      fetch: recordingFetch(requests),
    });

  // First connect: the gateway says 401, the client discovers, registers and sends the user to approve.
  const first = transport();
  await assert.rejects(
    new Client({ name: 'oauth-roundtrip', version: '1.0.0' }).connect(first),
    (error: unknown) => error instanceof UnauthorizedError,
  );
  assert.ok(provider.callback?.get('code'), `the user approved: ${provider.callback?.toString()}`);
  await first.finishAuth(provider.callback!);

  const metadata = `${url}/.well-known/oauth-protected-resource/mcp`;
  assert.deepEqual(requests.slice(0, 2), [`POST ${mcpUrl} → 401`, `GET ${metadata} → 200`]);
  assert.ok(requests.includes(`POST ${as.issuer}/reg → 201`), requests.join('\n'));
  assert.ok(requests.includes(`POST ${as.issuer}/token → 200`), requests.join('\n'));
  assert.equal(as.registrations, 1);
  const exchange = as.tokenRequests.find((r) => r.grantType === 'authorization_code');
  assert.deepEqual(
    { resource: exchange?.resource, authMethod: exchange?.authMethod },
    { resource: mcpUrl, authMethod: 'none' },
    'a public client with PKCE, asking for the MCP endpoint as the resource (RFC 8707)',
  );
  const accessToken = provider.tokens()!.access_token;
  const claims = decodeJwt(accessToken);
  assert.equal(claims.aud, mcpUrl, 'the token is minted for the MCP endpoint');
  assert.equal(claims.sub, 'alice');
  assert.equal(claims.scope, 'toolbus:caller', 'the scope the metadata advertises, not toolbus:admin');

  // Connected with the token: tools/list and a tools/call, for alice.
  const client = new Client({ name: 'oauth-roundtrip', version: '1.0.0' });
  await client.connect(transport());
  t.after(() => client.close());
  const { tools } = await client.listTools();
  assert.ok(
    tools.some((tool) => tool.name === 'tell-joke'),
    tools.map((tool) => tool.name).join(', '),
  );
  const result = await client.callTool({ name: 'tell-joke', arguments: { topic: 'cats' } });
  assert.notEqual(result.isError, true, JSON.stringify(result));
  const entry = await auditEntry((e) => e['kind'] === 'call' && e['tool'] === 'tell-joke');
  assert.equal(entry['user'], 'alice', 'the call is for the token’s sub');
  assert.match(String(entry['caller']), /^mcp:jwt:alice@/);
  assert.equal(entry['outcome'], 'ok');

  // A refreshed token is minted for the same resource and works as well.
  assert.ok(provider.tokens()?.refresh_token, 'a refresh token was issued');
  assert.equal(await auth(provider, { serverUrl: mcpUrl }), 'AUTHORIZED');
  const refreshed = provider.tokens()!.access_token;
  assert.notEqual(refreshed, accessToken);
  assert.equal(decodeJwt(refreshed).aud, mcpUrl);
  assert.equal(as.tokenRequests.at(-1)?.grantType, 'refresh_token');
  const again = new Client({ name: 'oauth-roundtrip', version: '1.0.0' });
  await again.connect(transport());
  t.after(() => again.close());
  assert.ok((await again.listTools()).tools.length > 0);
});

test('the static admin token still works beside OAuth, on /mcp and the REST API', async (t) => {
  const client = new Client({ name: 'admin', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(mcpUrl), {
      requestInit: { headers: { Authorization: `Bearer ${ADMIN_TOKEN}` } },
    }),
  );
  t.after(() => client.close());
  assert.ok((await client.listTools()).tools.length >= 2);
  const res = await fetch(`${url}/api/v1/config/tool`, {
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
  });
  assert.equal(res.status, 200);
});

test('a token the same authorization server minted for another resource is refused with invalid_token', async () => {
  const other = await serviceToken('https://elsewhere.example.com/mcp');
  assert.equal(decodeJwt(other).aud, 'https://elsewhere.example.com/mcp');
  const r = await rawRequest(url, '/mcp', {
    method: 'POST',
    headers: { authorization: `Bearer ${other}`, 'content-type': 'application/json' },
    body: '{}',
  });
  assert.equal(r.status, 401);
  const challenge = String(r.headers['www-authenticate']);
  assert.ok(
    challenge.startsWith(`Bearer resource_metadata="${url}/.well-known/oauth-protected-resource/mcp"`),
    challenge,
  );
  assert.match(
    challenge,
    /error="invalid_token", error_description="the JWT was refused: its audience is none of '[^']+\/mcp', '[^']+'"/,
  );
  // The same service's token for this gateway's MCP endpoint is accepted: its user is the client.
  const mine = await serviceToken(mcpUrl);
  const ok = await rawRequest(url, '/mcp', {
    method: 'POST',
    headers: {
      authorization: `Bearer ${mine}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'svc', version: '1' } },
    }),
  });
  assert.equal(ok.status, 200, ok.body);
});

test('a token with the toolbus:admin scope but no roles claim is a caller, not an admin', async () => {
  // The authorization server grants the scope to any client that asks: only a roles claim makes an admin.
  const scoped = await serviceToken(url, 'toolbus:caller toolbus:admin');
  assert.equal(decodeJwt(scoped).scope, 'toolbus:caller toolbus:admin');
  assert.equal(decodeJwt(scoped)['roles'], undefined);
  const config = await rawRequest(url, '/api/v1/config/tool', {
    headers: { authorization: `Bearer ${scoped}` },
  });
  assert.equal(config.status, 403, config.body);
  const tools = await rawRequest(url, '/api/v1/tools', { headers: { authorization: `Bearer ${scoped}` } });
  assert.equal(tools.status, 200, tools.body);
});
