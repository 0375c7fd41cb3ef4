/**
 * The gateway as an OAuth 2.1 resource server (RFC 9728, RFC 8707, RFC 6750), in process against a
 * JWKS server run by the test (tokens signed here with jose): the protected resource metadata routes,
 * the `WWW-Authenticate` challenge of every 401, tokens minted for the resource URL, and that nothing
 * changes without `oauth`.
 */
import { after, before, describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose';
import { z } from 'zod';
import { FunctionTool, LiveToolSet, MemoryConfigStore, ToolbusError } from '../../src/index.js';
import {
  AccessPolicy,
  createGateway,
  type GatewayDeniedEvent,
  type GatewayOptions,
  type JwtOptions,
  type JwtVerifyOptions,
} from '../../src/gateway/index.js';
import { rawRequest, type RawResponse } from '../support/raw-http.js';

const ISSUER = 'https://idp.test.example';
const ADMIN = 'oauth-admin-token-0123456789';
const WELL_KNOWN = '/.well-known/oauth-protected-resource';

const echo = new FunctionTool(async ({ text }: { text: string }) => `echo: ${text}`, {
  name: 'echo',
  description: 'Echo the text',
  parameters: z.object({ text: z.string() }),
});

let jwks: Server;
let jwksUrl: string;
let signing: CryptoKey;
let impostor: CryptoKey;

before(async () => {
  const pair = await generateKeyPair('ES256');
  signing = pair.privateKey;
  impostor = (await generateKeyPair('ES256')).privateKey;
  const jwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
  jwks = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ keys: [jwk] }));
  });
  await new Promise<void>((resolve) => jwks.listen(0, '127.0.0.1', resolve));
  jwksUrl = `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/jwks.json`;
});

after(async () => {
  jwks.closeAllConnections();
  await new Promise<void>((resolve) => jwks.close(() => resolve()));
});

/** An access token of the test's provider for `audience`, as an authorization server mints one. */
function token(
  audience: string,
  options: { sub?: string; scope?: string; exp?: number | string; key?: CryptoKey } = {},
): Promise<string> {
  return new SignJWT(options.scope === undefined ? {} : { scope: options.scope })
    .setProtectedHeader({ alg: 'ES256', kid: 'k1', typ: 'at+jwt' })
    .setIssuer(ISSUER)
    .setAudience(audience)
    .setSubject(options.sub ?? 'alice')
    .setIssuedAt()
    .setExpirationTime(options.exp ?? '5m')
    .sign(options.key ?? signing);
}

interface Started {
  url: string;
  port: string;
  denied: GatewayDeniedEvent[];
}

/**
 * A gateway with the admin token, the test's JWT provider (`jwt`), a stand-in MCP handler that answers
 * who called, and `extra` options.
 */
async function start(
  t: TestContext,
  extra: Partial<GatewayOptions> = {},
  jwt: Partial<JwtOptions> = { resourceAudience: true, rolesFromScope: true },
): Promise<Started> {
  const denied: GatewayDeniedEvent[] = [];
  const policy = new AccessPolicy({ adminToken: ADMIN, jwt: { jwksUrl, issuer: ISSUER, ...jwt } });
  const store = new MemoryConfigStore();
  const tools = new LiveToolSet([echo]);
  const gateway = createGateway({
    tools,
    store,
    profiles: () => tools,
    policy,
    mcpHandler: async (_req, res, request) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ principal: request.principal, endpoint: request.endpoint }));
    },
    onDenied: (event) => void denied.push(event),
    ...extra,
  });
  const url = await gateway.listen({ port: 0 });
  t.after(async () => {
    await gateway.close();
    policy.close();
    await store.close();
  });
  return { url, port: new URL(url).port, denied };
}

const OAUTH = { authorizationServers: [ISSUER], scopesSupported: ['toolbus:caller'] };

function bearer(value: string, extra: Record<string, string> = {}): Record<string, string> {
  return { authorization: `Bearer ${value}`, ...extra };
}

function errorOf(response: RawResponse): { code: string; message: string } {
  return (JSON.parse(response.body) as { error: { code: string; message: string } }).error;
}

/** The parameters of a `WWW-Authenticate: Bearer k="v", …` value. */
function challengeOf(response: RawResponse): Record<string, string> {
  const header = response.headers['www-authenticate'];
  assert.equal(typeof header, 'string', 'a WWW-Authenticate header');
  assert.match(header as string, /^Bearer /);
  const params: Record<string, string> = {};
  for (const [, key, value] of (header as string).matchAll(/([a-z_]+)="([^"]*)"/g)) params[key!] = value!;
  return params;
}

describe('without oauth, nothing changes', () => {
  test('no metadata routes (404), and a 401 says just Bearer (invalid_token for a refused JWT)', async (t) => {
    const { url } = await start(t, {}, { audience: 'toolbus' });
    for (const path of [WELL_KNOWN, `${WELL_KNOWN}/mcp`, `${WELL_KNOWN}/mcp/p`]) {
      const r = await rawRequest(url, path);
      assert.equal(r.status, 404, path);
      assert.equal(errorOf(r).code, 'not-found');
    }
    const missing = await rawRequest(url, '/mcp', { method: 'POST', body: '{}' });
    assert.equal(missing.status, 401);
    assert.equal(missing.headers['www-authenticate'], 'Bearer');
    const refused = await rawRequest(url, '/api/v1/tools', { headers: bearer(await token('elsewhere')) });
    assert.equal(refused.status, 401);
    assert.equal(refused.headers['www-authenticate'], 'Bearer error="invalid_token"');
    assert.match(errorOf(refused).message, /its audience is not 'toolbus'/);
  });

  test('a JWT minted for the resource URL is refused unless the verifier takes resource audiences', async (t) => {
    const { url } = await start(t, { oauth: OAUTH }, { audience: 'toolbus' });
    const r = await rawRequest(url, '/mcp', {
      method: 'POST',
      body: '{}',
      headers: bearer(await token(`${url}/mcp`)),
    });
    assert.equal(r.status, 401);
    assert.match(errorOf(r).message, /its audience is not 'toolbus'/);
  });
});

describe('protected resource metadata (RFC 9728)', () => {
  test('served without a token: the resource, its authorization server, header tokens; nothing else', async (t) => {
    const { url } = await start(t, {
      oauth: { ...OAUTH, resourceDocumentation: 'https://docs.example.com/toolbus' },
    });
    const cases: [path: string, resource: string][] = [
      [WELL_KNOWN, url],
      [`${WELL_KNOWN}/mcp`, `${url}/mcp`],
      [`${WELL_KNOWN}/mcp/`, `${url}/mcp`],
      [`${WELL_KNOWN}/mcp/research`, `${url}/mcp/research`],
    ];
    for (const [path, resource] of cases) {
      const r = await rawRequest(url, path);
      assert.equal(r.status, 200, path);
      assert.match(String(r.headers['content-type']), /^application\/json/);
      assert.equal(r.headers['cache-control'], 'public, max-age=300');
      assert.deepEqual(JSON.parse(r.body), {
        resource,
        authorization_servers: [ISSUER],
        bearer_methods_supported: ['header'],
        scopes_supported: ['toolbus:caller'],
        resource_name: 'toolbus',
        resource_documentation: 'https://docs.example.com/toolbus',
      });
    }
  });

  test('a bad token does not matter on the metadata route (it is public)', async (t) => {
    const { url } = await start(t, { oauth: OAUTH });
    const r = await rawRequest(url, `${WELL_KNOWN}/mcp`, { headers: bearer(await token('elsewhere')) });
    assert.equal(r.status, 200);
  });

  test('the resource follows the Host name the gateway answers to, on the port it was reached at', async (t) => {
    const { url, port } = await start(t, { oauth: OAUTH });
    const resource = async (host: string) =>
      (
        JSON.parse((await rawRequest(url, `${WELL_KNOWN}/mcp`, { headers: { host } })).body) as {
          resource: string;
        }
      ).resource;
    assert.equal(await resource(`localhost:${port}`), `http://localhost:${port}/mcp`);
    assert.equal(await resource(`[::1]:${port}`), `http://[::1]:${port}/mcp`);
    // A Host naming another port does not make the resource that port's: the socket's port is.
    assert.equal(await resource('localhost:9'), `http://localhost:${port}/mcp`);
  });

  test('an allowed Host that makes no safe URL: 400 pointing at publicUrl, which fixes it', async (t) => {
    const { url, port } = await start(t, { oauth: OAUTH, allowedHosts: ['my_host'] });
    const r = await rawRequest(url, `${WELL_KNOWN}/mcp`, { headers: { host: `my_host:${port}` } });
    assert.equal(r.status, 400);
    assert.match(errorOf(r).message, /public URL/);
    const fixed = await start(t, { oauth: OAUTH, allowedHosts: ['my_host'], publicUrl: 'https://t.example' });
    const ok = await rawRequest(fixed.url, `${WELL_KNOWN}/mcp`, {
      headers: { host: `my_host:${fixed.port}` },
    });
    assert.equal(ok.status, 200);
  });

  test('a foreign Host or Origin is 403 as on every route', async (t) => {
    const { url, port } = await start(t, { oauth: OAUTH });
    const host = await rawRequest(url, `${WELL_KNOWN}/mcp`, {
      headers: { host: `rebind.attacker.example:${port}` },
    });
    assert.equal(host.status, 403);
    assert.match(errorOf(host).message, /Host header/);
    const origin = await rawRequest(url, WELL_KNOWN, { headers: { origin: 'https://attacker.example' } });
    assert.equal(origin.status, 403);
    assert.match(errorOf(origin).message, /Origin header/);
  });

  test('GET only: another method is 405 with Allow', async (t) => {
    const { url } = await start(t, { oauth: OAUTH });
    for (const method of ['POST', 'PUT', 'DELETE']) {
      const r = await rawRequest(url, `${WELL_KNOWN}/mcp`, {
        method,
        headers: { 'content-type': 'application/json' },
        body: '{}',
      });
      assert.equal(r.status, 405, method);
      assert.equal(r.headers['allow'], 'GET');
      assert.equal(errorOf(r).code, 'method-not-allowed');
    }
  });

  test('without an MCP endpoint only the gateway’s own metadata is served', async (t) => {
    const { url } = await start(t, { oauth: OAUTH, mcpHandler: undefined });
    assert.equal((await rawRequest(url, WELL_KNOWN)).status, 200);
    assert.equal((await rawRequest(url, `${WELL_KNOWN}/mcp`)).status, 404);
  });

  test('publicUrl: the resource is the public one, and its host is one the gateway answers to', async (t) => {
    const { url } = await start(t, { oauth: OAUTH, publicUrl: 'https://tools.example.com/' });
    for (const host of ['tools.example.com', new URL(url).host]) {
      const r = await rawRequest(url, `${WELL_KNOWN}/mcp`, { headers: { host } });
      assert.equal(r.status, 200, host);
      assert.equal((JSON.parse(r.body) as { resource: string }).resource, 'https://tools.example.com/mcp');
    }
    const missing = await rawRequest(url, '/mcp', {
      method: 'POST',
      body: '{}',
      headers: { host: 'tools.example.com' },
    });
    assert.equal(
      challengeOf(missing).resource_metadata,
      'https://tools.example.com/.well-known/oauth-protected-resource/mcp',
    );
  });
});

describe('401 challenges (RFC 6750, RFC 9728 §5.1)', () => {
  test('no token: resource_metadata of the endpoint, no error; the JSON body and the denial event as before', async (t) => {
    const { url, denied } = await start(t, { oauth: OAUTH });
    const cases: [path: string, metadata: string][] = [
      ['/mcp', `${url}${WELL_KNOWN}/mcp`],
      ['/mcp/research', `${url}${WELL_KNOWN}/mcp/research`],
      ['/api/v1/tools', `${url}${WELL_KNOWN}`],
    ];
    for (const [path, metadata] of cases) {
      const r = await rawRequest(url, path);
      assert.equal(r.status, 401, path);
      assert.equal(r.headers['www-authenticate'], `Bearer resource_metadata="${metadata}"`);
      assert.equal(errorOf(r).code, 'unauthorized');
      assert.match(errorOf(r).message, /Authorization: Bearer/);
    }
    assert.deepEqual(
      denied.map((e) => [e.status, e.path]),
      cases.map(([path]) => [401, path]),
    );
  });

  test('another scheme than Bearer (Basic): a challenge without error, as for no token', async (t) => {
    const basic = { authorization: `Basic ${Buffer.from('alice:secret').toString('base64')}` };
    const { url } = await start(t, { oauth: OAUTH });
    const r = await rawRequest(url, '/mcp', { method: 'POST', body: '{}', headers: basic });
    assert.equal(r.status, 401);
    assert.equal(r.headers['www-authenticate'], `Bearer resource_metadata="${url}${WELL_KNOWN}/mcp"`);
    const plain = await start(t, {}, { audience: 'toolbus' });
    const without = await rawRequest(plain.url, '/api/v1/tools', { headers: basic });
    assert.equal(without.status, 401);
    assert.equal(without.headers['www-authenticate'], 'Bearer');
  });

  test('a refused token: invalid_token and why (expired, audience, signature, unknown)', async (t) => {
    const { url } = await start(t, { oauth: OAUTH });
    const mcp = `${url}/mcp`;
    const cases: [what: string, value: string, reason: RegExp][] = [
      [
        'expired',
        await token(mcp, { exp: Math.floor(Date.now() / 1000) - 600 }),
        /the JWT was refused: it has expired/,
      ],
      [
        'another audience',
        await token('https://other.example.com/mcp'),
        /the JWT was refused: its audience is none of '.*\/mcp', '.*'/,
      ],
      ['another key', await token(mcp, { key: impostor }), /its signature does not verify/],
      ['an unknown key', 'tbk_not-a-key-of-this-gateway', /not a token, key or JWT this gateway accepts/],
    ];
    for (const [what, value, reason] of cases) {
      const r = await rawRequest(url, '/mcp', { method: 'POST', body: '{}', headers: bearer(value) });
      assert.equal(r.status, 401, what);
      const challenge = challengeOf(r);
      assert.equal(challenge.resource_metadata, `${url}${WELL_KNOWN}/mcp`, what);
      assert.equal(challenge.error, 'invalid_token', what);
      assert.match(challenge.error_description ?? '', reason, what);
      assert.equal(errorOf(r).code, 'unauthorized');
      if (what !== 'an unknown key') assert.equal(errorOf(r).message, challenge.error_description);
    }
  });
});

describe('tokens minted for the resource (RFC 8707)', () => {
  async function who(url: string, path: string, value: string, host?: string): Promise<RawResponse> {
    return rawRequest(url, path, {
      method: path.startsWith('/mcp') ? 'POST' : 'GET',
      headers: { ...bearer(value), 'content-type': 'application/json', ...(host ? { host } : {}) },
      ...(path.startsWith('/mcp') ? { body: '{}' } : {}),
    });
  }

  test('a token for /mcp works at /mcp and its profiles, not on the REST API; one for the gateway works everywhere', async (t) => {
    const { url } = await start(t, { oauth: OAUTH });
    const forMcp = await token(`${url}/mcp`, { sub: 'bob' });
    const atMcp = await who(url, '/mcp', forMcp);
    assert.equal(atMcp.status, 200, atMcp.body);
    assert.deepEqual(JSON.parse(atMcp.body), { principal: 'jwt:bob', endpoint: '/mcp' });
    assert.equal((await who(url, '/mcp/research', forMcp)).status, 200);
    const api = await who(url, '/api/v1/tools', forMcp);
    assert.equal(api.status, 401);
    assert.match(errorOf(api).message, /audience/);

    const forProfile = await token(`${url}/mcp/research`);
    assert.equal((await who(url, '/mcp/research', forProfile)).status, 200);
    assert.equal((await who(url, '/mcp', forProfile)).status, 401);
    assert.equal((await who(url, '/mcp/other', forProfile)).status, 401);

    const forGateway = await token(url);
    assert.equal((await who(url, '/api/v1/tools', forGateway)).status, 200);
    assert.equal((await who(url, '/mcp', forGateway)).status, 200);
  });

  test('a token for another port on this machine is refused, whatever Host the request names', async (t) => {
    const { url } = await start(t, { oauth: OAUTH });
    const other = await token('http://127.0.0.1:9/mcp');
    const r = await who(url, '/mcp', other, '127.0.0.1:9');
    assert.equal(r.status, 401);
    assert.equal(challengeOf(r).error, 'invalid_token');
  });

  test('the resource URLs are built only when read (a JWT checked with resourceAudience), not per request', async (t) => {
    // How the policy got the resource URLs: an accessor (built when read) or a value (built up front).
    const given: string[] = [];
    class Recording extends AccessPolicy {
      override authenticate(authorization: string | undefined, request: JwtVerifyOptions = {}) {
        given.push(Object.getOwnPropertyDescriptor(request, 'resources')?.get ? 'accessor' : 'value');
        return super.authenticate(authorization, request);
      }
    }
    const policy = new Recording({
      adminToken: ADMIN,
      jwt: { jwksUrl, issuer: ISSUER, resourceAudience: true },
    });
    const gateway = createGateway({ tools: new LiveToolSet([echo]), policy, oauth: OAUTH });
    const url = await gateway.listen({ port: 0 });
    t.after(async () => {
      await gateway.close();
      policy.close();
    });
    assert.equal((await rawRequest(url, '/api/v1/tools', { headers: bearer(ADMIN) })).status, 200);
    assert.equal((await rawRequest(url, '/api/v1/health')).status, 200);
    // Read through the accessor, the URLs are the request's.
    assert.equal((await rawRequest(url, '/api/v1/tools', { headers: bearer(await token(url)) })).status, 200);
    assert.deepEqual(given, ['accessor', 'accessor', 'accessor']);
  });

  test("allowedHosts '*' without oauth: a token for the URL of a Host only '*' lets in is refused (invalid_token)", async (t) => {
    // resourceAudience alone (no oauth, so publicUrl is not required): resource URLs come only from
    // names the gateway answers to by name, never from one the client chose.
    const { url, port } = await start(t, { allowedHosts: ['*'] }, { resourceAudience: true });
    const evil = `evil.example:${port}`;
    const r = await who(url, '/mcp', await token(`http://${evil}/mcp`), evil);
    assert.equal(r.status, 401, r.body);
    assert.equal(r.headers['www-authenticate'], 'Bearer error="invalid_token"');
    assert.match(errorOf(r).message, /the JWT was refused/);
    // The same kind of token for a name the gateway answers to by name is accepted.
    const local = `127.0.0.1:${port}`;
    assert.equal((await who(url, '/mcp', await token(`http://${local}/mcp`), local)).status, 200);
  });

  test('behind publicUrl, the public resource URL is the audience, not the local one', async (t) => {
    const { url } = await start(t, { oauth: OAUTH, publicUrl: 'https://tools.example.com' });
    assert.equal((await who(url, '/mcp', await token('https://tools.example.com/mcp'))).status, 200);
    assert.equal((await who(url, '/mcp', await token(`${url}/mcp`))).status, 401);
  });

  test('the admin token and the configured audience still work; a toolbus:admin scope is no admin', async (t) => {
    const { url } = await start(
      t,
      { oauth: OAUTH },
      { audience: 'toolbus', resourceAudience: true, rolesFromScope: true },
    );
    assert.equal((await who(url, '/api/v1/config/tool', ADMIN)).status, 200);
    assert.equal((await who(url, '/mcp', await token('toolbus'))).status, 200);
    for (const scope of ['toolbus:caller', 'toolbus:admin', 'toolbus:admin toolbus:impersonate']) {
      const r = await who(url, '/api/v1/config/tool', await token(url, { scope }));
      assert.equal(r.status, 403, scope);
      assert.equal(errorOf(r).code, 'forbidden', scope);
    }
    const caller = await who(url, '/mcp', await token(`${url}/mcp`, { scope: 'toolbus:admin' }));
    assert.equal(caller.status, 200, 'a caller still');
  });

  test('rolesFromScope listing admin: a toolbus:admin scope is an admin', async (t) => {
    const { url } = await start(
      t,
      { oauth: OAUTH },
      { resourceAudience: true, rolesFromScope: ['caller', 'approver', 'admin'] },
    );
    const r = await who(url, '/api/v1/config/tool', await token(url, { scope: 'toolbus:admin' }));
    assert.equal(r.status, 200, r.body);
  });
});

describe('oauth options', () => {
  test('refused at creation: no server, http off loopback (servers and publicUrl), a path in publicUrl, a bad scope, * without publicUrl', () => {
    const base = { tools: new LiveToolSet([echo]), token: ADMIN };
    const usage = (options: Partial<GatewayOptions>, fragment: RegExp): void => {
      assert.throws(
        () => createGateway({ ...base, ...options }),
        (e: unknown) => e instanceof ToolbusError && e.code === 'usage' && fragment.test(e.message),
      );
    };
    usage({ oauth: { authorizationServers: [] } }, /at least one authorization server/);
    usage({ oauth: { authorizationServers: ['http://idp.example.com'] } }, /must be an https URL/);
    usage({ oauth: { authorizationServers: ['not a url'] } }, /must be a URL/);
    usage({ oauth: { authorizationServers: [`${ISSUER}?tenant=1`] } }, /no query/);
    usage({ oauth: { ...OAUTH, scopesSupported: ['two words'] } }, /not a valid scope token/);
    usage({ publicUrl: 'https://example.com/toolbus' }, /without a path/);
    usage({ publicUrl: 'ftp://example.com' }, /must be an https URL/);
    usage({ publicUrl: 'http://tools.example.com' }, /must be an https URL \(http only on a loopback host\)/);
    usage({ oauth: OAUTH, allowedHosts: ['*'] }, /with allowedHosts '\*'.* needs the public URL/);
    assert.doesNotThrow(() =>
      createGateway({
        ...base,
        oauth: { authorizationServers: ['http://127.0.0.1:9000'] },
        allowedHosts: ['*'],
        publicUrl: 'https://t.example',
      }),
    );
    assert.doesNotThrow(() => createGateway({ ...base, publicUrl: 'http://localhost:8080' }));
  });
});
