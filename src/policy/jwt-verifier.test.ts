import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK, type JWTPayload } from 'jose';
import { ToolbusError } from '../errors/index.js';
import { AccessPolicy } from './access-policy.js';
import { createJwtVerifier, looksLikeJwt, type JwtOptions } from './jwt-verifier.js';
import { DEFAULT_MAX_IN_FLIGHT, type Role } from './principal.js';

const ISSUER = 'https://idp.test.example';
const AUDIENCE = 'toolbus-gateway';
const KID = 'key-1';

interface Jwks {
  server: Server;
  url: string;
  /** How the server answers: the key set, or a failure. */
  mode: 'keys' | 'error' | 'not-json';
  requests: number;
}

let signing: CryptoKey;
/** Signs with the same kid as the JWKS key, but is not it. */
let impostor: CryptoKey;
let jwks: Jwks;

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

async function stop(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

before(async () => {
  const pair = await generateKeyPair('ES256');
  signing = pair.privateKey;
  impostor = (await generateKeyPair('ES256')).privateKey;
  const publicJwk: JWK = { ...(await exportJWK(pair.publicKey)), kid: KID, alg: 'ES256', use: 'sig' };
  const state: Omit<Jwks, 'url'> = {
    mode: 'keys',
    requests: 0,
    server: createServer((req, res) => {
      state.requests++;
      if (req.url !== '/jwks.json' || state.mode === 'error') {
        res.writeHead(req.url === '/jwks.json' ? 500 : 404).end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(state.mode === 'not-json' ? 'not json' : JSON.stringify({ keys: [publicJwk] }));
    }),
  };
  const port = await listen(state.server);
  jwks = Object.assign(state, { url: `http://127.0.0.1:${port}/jwks.json` });
});

after(async () => {
  await stop(jwks.server);
});

function options(extra: Partial<JwtOptions> = {}): JwtOptions {
  return { jwksUrl: jwks.url, issuer: ISSUER, audience: AUDIENCE, ...extra };
}

interface SignOptions {
  key?: CryptoKey;
  kid?: string;
  sub?: string | undefined;
  issuer?: string;
  audience?: string | string[];
  /** Seconds since the epoch, or a jose time span. */
  exp?: number | string;
}

function sign(claims: JWTPayload = {}, opts: SignOptions = {}): Promise<string> {
  const jwt = new SignJWT(claims)
    .setProtectedHeader({ alg: 'ES256', kid: opts.kid ?? KID })
    .setIssuer(opts.issuer ?? ISSUER)
    .setAudience(opts.audience ?? AUDIENCE)
    .setIssuedAt()
    .setExpirationTime(opts.exp ?? '5m');
  const sub = 'sub' in opts ? opts.sub : 'alice';
  if (sub !== undefined) jwt.setSubject(sub);
  return jwt.sign(opts.key ?? signing);
}

async function assertRefused(promise: Promise<unknown>, code: string, ...fragments: string[]): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof ToolbusError, `a ToolbusError, got ${String(error)}`);
    assert.equal(error.code, code, error.message);
    for (const fragment of fragments) {
      assert.ok(error.message.includes(fragment), `${error.message} ∌ ${fragment}`);
    }
    return true;
  });
}

describe('looksLikeJwt', () => {
  test('three base64url parts, the last may be empty', () => {
    assert.equal(looksLikeJwt('eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhIn0.c2ln'), true);
    assert.equal(looksLikeJwt('a.b.'), true);
    for (const token of [
      'tbk_abcdef',
      'a.b',
      'a.b.c.d',
      '.b.c',
      'a..c',
      'a.b c.d',
      'a+b.c.d',
      'a.b.c=',
      '',
    ]) {
      assert.equal(looksLikeJwt(token), false, token);
    }
  });
});

describe('createJwtVerifier options', () => {
  test('refuses a bad JWKS URL, a non-http URL, and a missing issuer or audience', () => {
    const usage = (fn: () => unknown, fragment: string) =>
      assert.throws(
        fn,
        (e: unknown) => e instanceof ToolbusError && e.code === 'usage' && e.message.includes(fragment),
      );
    usage(() => createJwtVerifier(options({ jwksUrl: 'not a url' })), 'is not a URL');
    usage(
      () => createJwtVerifier(options({ jwksUrl: 'file:///etc/jwks.json' })),
      'must be http(s), got file:',
    );
    usage(() => createJwtVerifier(options({ issuer: '' })), 'needs an issuer and an audience');
    usage(() => createJwtVerifier(options({ audience: '' })), 'needs an issuer and an audience');
    usage(() => createJwtVerifier(options({ audience: undefined })), 'needs an issuer and an audience');
    usage(
      () => createJwtVerifier(options({ issuer: '', resourceAudience: true })),
      'needs an issuer and an audience',
    );
    usage(
      () => createJwtVerifier(options({ rolesFromScope: ['caller', 'admn' as Role] })),
      "rolesFromScope lists 'admn', not roles",
    );
  });
});

describe('JwtVerifier.verify', () => {
  test('a valid token: principal jwt:<sub>, user sub, roles of the roles claim', async () => {
    const verifier = createJwtVerifier(options());
    const principal = await verifier.verify(await sign({ roles: ['caller', 'approver'] }));
    assert.deepEqual(principal, {
      name: 'jwt:alice',
      roles: ['caller', 'approver'],
      user: 'alice',
      via: 'jwt',
    });
  });

  test('roles as a space- or comma-separated string', async () => {
    const verifier = createJwtVerifier(options());
    assert.deepEqual((await verifier.verify(await sign({ roles: 'caller approver' }))).roles, [
      'caller',
      'approver',
    ]);
    assert.deepEqual((await verifier.verify(await sign({ roles: 'caller,impersonate' }))).roles, [
      'caller',
      'impersonate',
    ]);
    assert.deepEqual((await verifier.verify(await sign({ roles: ' admin ,  caller ' }))).roles, [
      'admin',
      'caller',
    ]);
  });

  test('no roles claim: the default roles', async () => {
    assert.deepEqual((await createJwtVerifier(options()).verify(await sign())).roles, ['caller']);
    const approvers = createJwtVerifier(options({ defaultRoles: ['approver'] }));
    assert.deepEqual((await approvers.verify(await sign())).roles, ['approver']);
  });

  test('unknown role names are dropped, never granted; a claim of another type grants none', async () => {
    const verifier = createJwtVerifier(options());
    assert.deepEqual((await verifier.verify(await sign({ roles: ['caller', 'superuser', 'Admin'] }))).roles, [
      'caller',
    ]);
    assert.deepEqual((await verifier.verify(await sign({ roles: ['root'] }))).roles, []);
    assert.deepEqual(
      (await verifier.verify(await sign({ roles: [] }))).roles,
      [],
      'an empty list is no default',
    );
    assert.deepEqual((await verifier.verify(await sign({ roles: 42 }))).roles, []);
    assert.deepEqual((await verifier.verify(await sign({ roles: ['caller', 7] }))).roles, ['caller']);
  });

  test('a custom user claim and roles claim', async () => {
    const verifier = createJwtVerifier(options({ userClaim: 'email', rolesClaim: 'groups' }));
    const principal = await verifier.verify(
      await sign({ email: 'bob@example.com', groups: ['approver'], roles: ['admin'] }, { sub: 'bob-id' }),
    );
    assert.equal(principal.name, 'jwt:bob@example.com');
    assert.equal(principal.user, 'bob@example.com');
    assert.deepEqual(principal.roles, ['approver'], 'the roles claim is not read');
    await assertRefused(
      verifier.verify(await sign({ groups: ['caller'] })),
      'unauthorized',
      "no 'email' claim",
    );
  });

  test('no user claim, or an empty one: unauthorized', async () => {
    const verifier = createJwtVerifier(options());
    await assertRefused(
      verifier.verify(await sign({}, { sub: undefined })),
      'unauthorized',
      "no 'sub' claim",
    );
    await assertRefused(verifier.verify(await sign({}, { sub: '' })), 'unauthorized', "no 'sub' claim");
  });

  test('one of several audiences is enough', async () => {
    const principal = await createJwtVerifier(options()).verify(
      await sign({}, { audience: ['other', AUDIENCE] }),
    );
    assert.equal(principal.user, 'alice');
  });

  test('an expired token: unauthorized, saying it expired', async () => {
    const verifier = createJwtVerifier(options());
    const expired = await sign({}, { exp: Math.floor(Date.now() / 1000) - 120 });
    await assertRefused(verifier.verify(expired), 'unauthorized', 'the JWT was refused', 'expired');
    // Within the clock tolerance it still passes.
    const lenient = createJwtVerifier(options({ clockToleranceSec: 300 }));
    assert.equal((await lenient.verify(expired)).user, 'alice');
  });

  test('a wrong audience: unauthorized, naming the audience', async () => {
    const verifier = createJwtVerifier(options());
    await assertRefused(
      verifier.verify(await sign({}, { audience: 'another-app' })),
      'unauthorized',
      `its audience is not '${AUDIENCE}'`,
    );
  });

  test('a wrong issuer: unauthorized, naming the issuer', async () => {
    const verifier = createJwtVerifier(options());
    await assertRefused(
      verifier.verify(await sign({}, { issuer: 'https://evil.example' })),
      'unauthorized',
      `its issuer is not '${ISSUER}'`,
    );
  });

  test('signed by another key under the same kid: unauthorized', async () => {
    const verifier = createJwtVerifier(options());
    await assertRefused(
      verifier.verify(await sign({ roles: ['admin'] }, { key: impostor })),
      'unauthorized',
      'its signature does not verify',
    );
  });

  test('signed by a key whose kid is not in the JWKS: unauthorized', async () => {
    const verifier = createJwtVerifier(options());
    await assertRefused(
      verifier.verify(await sign({ roles: ['admin'] }, { key: impostor, kid: 'key-2' })),
      'unauthorized',
      "no key of the provider's JWKS signed it",
    );
  });

  test('an unsigned (alg none) or garbled token: unauthorized', async () => {
    const verifier = createJwtVerifier(options());
    const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const now = Math.floor(Date.now() / 1000);
    const unsigned = `${b64({ alg: 'none' })}.${b64({ sub: 'mallory', iss: ISSUER, aud: AUDIENCE, exp: now + 300, roles: ['admin'] })}.`;
    await assertRefused(verifier.verify(unsigned), 'unauthorized', 'the JWT was refused');
    await assertRefused(verifier.verify('abc.def.ghi'), 'unauthorized', 'the JWT was refused');
    const valid = await sign({ roles: ['caller'] });
    const [header, , signature] = valid.split('.');
    const tampered = `${header}.${b64({ sub: 'mallory', iss: ISSUER, aud: AUDIENCE, exp: now + 300, roles: ['admin'] })}.${signature}`;
    await assertRefused(verifier.verify(tampered), 'unauthorized', 'its signature does not verify');
  });

  test('the JWKS is fetched once and cached', async () => {
    const verifier = createJwtVerifier(options());
    const before = jwks.requests;
    await verifier.verify(await sign());
    await verifier.verify(await sign({}, { sub: 'bob' }));
    assert.equal(jwks.requests - before, 1);
  });

  test('the JWKS server down (a closed port): unavailable', async () => {
    const closed = createServer();
    const port = await listen(closed);
    await stop(closed);
    const verifier = createJwtVerifier(options({ jwksUrl: `http://127.0.0.1:${port}/jwks.json` }));
    await assertRefused(
      verifier.verify(await sign()),
      'unavailable',
      `http://127.0.0.1:${port}`,
      'could not be fetched',
    );
  });

  test('the JWKS server failing (HTTP 500, or not JSON): unavailable, not the caller’s fault', async () => {
    for (const mode of ['error', 'not-json'] as const) {
      jwks.mode = mode;
      try {
        const verifier = createJwtVerifier(options());
        await assertRefused(verifier.verify(await sign()), 'unavailable', 'could not be fetched');
      } finally {
        jwks.mode = 'keys';
      }
    }
  });
});

describe('JwtVerifier.verify, OAuth access tokens (RFC 8707 audience, scopes)', () => {
  const MCP = 'https://tools.example.com/mcp';
  const ROOT = 'https://tools.example.com';

  test('resourceAudience: a token minted for the resource URL it is sent to verifies', async () => {
    const verifier = createJwtVerifier(options({ resourceAudience: true }));
    const token = await sign({}, { audience: MCP });
    assert.equal((await verifier.verify(token, { resources: [MCP, ROOT] })).user, 'alice');
    // The configured audience still works beside it.
    assert.equal((await verifier.verify(await sign(), { resources: [MCP] })).user, 'alice');
  });

  test('resourceAudience: a token for another resource is refused, naming the audiences accepted', async () => {
    const verifier = createJwtVerifier(options({ resourceAudience: true }));
    await assertRefused(
      verifier.verify(await sign({}, { audience: 'https://other.example.com/mcp' }), {
        resources: [MCP, ROOT],
      }),
      'unauthorized',
      `its audience is none of '${AUDIENCE}', '${MCP}', '${ROOT}'`,
    );
    // A token for the resource, sent to another endpoint (not one of its resources), is refused too.
    await assertRefused(
      verifier.verify(await sign({}, { audience: MCP }), { resources: [ROOT] }),
      'unauthorized',
      'audience',
    );
  });

  test('without resourceAudience, the resource URLs are not audiences (the behaviour of --jwt-audience alone)', async () => {
    const verifier = createJwtVerifier(options());
    await assertRefused(
      verifier.verify(await sign({}, { audience: MCP }), { resources: [MCP] }),
      'unauthorized',
      `its audience is not '${AUDIENCE}'`,
    );
  });

  test('resourceAudience without a configured audience: only the resource URLs; none at all fails closed', async () => {
    const verifier = createJwtVerifier(options({ audience: undefined, resourceAudience: true }));
    assert.equal(
      (await verifier.verify(await sign({}, { audience: MCP }), { resources: [MCP] })).user,
      'alice',
    );
    await assertRefused(
      verifier.verify(await sign({}, { audience: AUDIENCE }), { resources: [MCP] }),
      'unauthorized',
      `its audience is not '${MCP}'`,
    );
    await assertRefused(
      verifier.verify(await sign({}, { audience: MCP })),
      'unauthorized',
      'no audience to check it against',
    );
  });

  test('rolesFromScope: toolbus:caller and toolbus:approver scopes are the roles of a token without a roles claim', async () => {
    const verifier = createJwtVerifier(options({ rolesFromScope: true }));
    const roles = async (claims: Record<string, unknown>) =>
      (await verifier.verify(await sign(claims))).roles;
    assert.deepEqual(await roles({ scope: 'toolbus:approver  toolbus:caller toolbus:caller' }), [
      'approver',
      'caller',
    ]);
    assert.deepEqual(await roles({ scp: ['toolbus:caller', 'toolbus:impersonate'] }), ['caller']);
    assert.deepEqual(
      await roles({ scope: 'toolbus:superuser toolbus:Admin admin' }),
      ['caller'],
      'none named: the default',
    );
    assert.deepEqual(await roles({ scope: 'openid profile' }), ['caller']);
    assert.deepEqual(await roles({}), ['caller']);
    assert.deepEqual(await roles({ scope: 42 }), ['caller']);
    assert.deepEqual(
      await roles({ roles: ['approver'], scope: 'toolbus:admin' }),
      ['approver'],
      'the roles claim wins',
    );
  });

  test('rolesFromScope: a toolbus:admin or toolbus:impersonate scope grants nothing unless listed (any user may ask for a scope)', async () => {
    const roles = async (rolesFromScope: JwtOptions['rolesFromScope'], claims: Record<string, unknown>) =>
      (await createJwtVerifier(options({ rolesFromScope })).verify(await sign(claims))).roles;
    assert.deepEqual(await roles(true, { scope: 'openid toolbus:admin offline_access' }), ['caller']);
    assert.deepEqual(await roles(true, { scope: 'toolbus:impersonate' }), ['caller']);
    assert.deepEqual(await roles(true, { scope: 'toolbus:admin toolbus:approver' }), ['approver']);
    assert.deepEqual(await roles(true, { roles: ['admin'], scope: 'toolbus:caller' }), ['admin']);
    // Listed explicitly, for a server that grants toolbus:admin to admins alone.
    const listed: Role[] = ['caller', 'admin'];
    assert.deepEqual(await roles(listed, { scope: 'toolbus:admin' }), ['admin']);
    assert.deepEqual(await roles(listed, { scope: 'toolbus:approver' }), ['caller'], 'not listed');
    assert.deepEqual(await roles([], { scope: 'toolbus:caller toolbus:approver' }), ['caller']);
    assert.deepEqual(await roles(false, { scope: 'toolbus:approver' }), ['caller']);
  });

  test('without rolesFromScope, a toolbus:admin scope grants nothing (a token without roles is a caller)', async () => {
    const verifier = createJwtVerifier(options());
    assert.deepEqual((await verifier.verify(await sign({ scope: 'toolbus:admin' }))).roles, ['caller']);
  });
});

describe('AccessPolicy with jwt', () => {
  test('authenticates Bearer <jwt>; other tokens are unknown; a bad JWT is refused', async () => {
    const policy = new AccessPolicy({ jwt: options() });
    try {
      await policy.start();
      const principal = await policy.authenticate(
        `Bearer ${await sign({ roles: ['caller'] }, { sub: 'carol' })}`,
      );
      assert.deepEqual(principal, { name: 'jwt:carol', roles: ['caller'], user: 'carol', via: 'jwt' });
      assert.equal(policy.can(principal, 'call-tools'), true);
      assert.equal(policy.can(principal, 'config'), false);
      assert.equal(policy.userFor(principal, undefined, 'default-user'), 'carol');
      assert.equal(await policy.authenticate('Bearer tbk_not-a-jwt'), undefined);
      assert.equal(await policy.authenticate(undefined), undefined);
      await assertRefused(
        policy.authenticate(`Bearer ${await sign({}, { audience: 'elsewhere' })}`),
        'unauthorized',
        'audience',
      );
      // JWT principals get the default cap on calls in flight.
      for (let i = 0; i < DEFAULT_MAX_IN_FLIGHT; i++) assert.equal(policy.admit(principal).ok, true);
      assert.equal(policy.admit(principal).ok, false);
    } finally {
      policy.close();
    }
  });

  test('passes the resource URLs of the request to the verifier', async () => {
    const mcp = 'http://127.0.0.1:8888/mcp';
    const policy = new AccessPolicy({ jwt: options({ resourceAudience: true }), adminToken: 'owner-token' });
    try {
      const token = `Bearer ${await sign({}, { audience: mcp, sub: 'erin' })}`;
      assert.equal((await policy.authenticate(token, { resources: [mcp] }))?.name, 'jwt:erin');
      await assertRefused(policy.authenticate(token), 'unauthorized', 'audience');
      assert.equal((await policy.authenticate('Bearer owner-token', { resources: [mcp] }))?.name, 'admin');
    } finally {
      policy.close();
    }
  });

  test('reads the resource URLs only for a JWT checked by a verifier with resourceAudience', async () => {
    let reads = 0;
    const request = {
      get resources() {
        reads++;
        return ['http://127.0.0.1:8888/mcp'];
      },
    };
    const plain = new AccessPolicy({ jwt: options(), adminToken: 'owner-token' });
    const oauth = new AccessPolicy({ jwt: options({ resourceAudience: true }), adminToken: 'owner-token' });
    try {
      assert.equal((await oauth.authenticate('Bearer owner-token', request))?.name, 'admin');
      assert.equal(await oauth.authenticate('Bearer tbk_not-a-jwt', request), undefined);
      assert.equal(await oauth.authenticate(undefined, request), undefined);
      assert.equal((await plain.authenticate(`Bearer ${await sign()}`, request))?.name, 'jwt:alice');
      assert.equal(reads, 0, 'no JWT, or a verifier without resourceAudience: never read');
      assert.equal((await oauth.authenticate(`Bearer ${await sign()}`, request))?.name, 'jwt:alice');
      assert.equal(reads, 1, 'read once for the JWT');
    } finally {
      plain.close();
      oauth.close();
    }
  });

  test('takes a ready verifier too, and the admin token still wins', async () => {
    const verifier = createJwtVerifier(options());
    const policy = new AccessPolicy({ jwt: verifier, adminToken: 'owner-token' });
    try {
      assert.equal((await policy.authenticate('Bearer owner-token'))?.name, 'admin');
      assert.equal(
        (await policy.authenticate(`Bearer ${await sign({}, { sub: 'dave' })}`))?.name,
        'jwt:dave',
      );
    } finally {
      policy.close();
    }
  });
});
