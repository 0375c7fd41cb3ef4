/**
 * Identity, policy and quotas on a real `toolbus up`, on the embedded default and on a real
 * `nats-server`: keys made with `toolbus principal add`, JWTs of a JWKS server run by the test (tokens
 * signed here with jose), roles, the user taken from the principal, tool globs on REST, `/mcp` and the
 * agent's model request, rates, tool quotas and the in-flight cap, and every denial in the audit log
 * and the log.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';
import { chatCompletion, startFakeOpenAIServer } from '../fixtures/fake-openai-server.js';
import { startNatsServer } from '../support/nats-server.js';
import { interrupt, runCli, startCli } from '../support/cli.js';

const ADMIN_TOKEN = 'policy-admin-token-0123456789';
const ISSUER = 'https://idp.test';
const AUDIENCE = 'toolbus-gateway';

// A service with a tool that naps as long as it is asked: calls that stay in flight.
const NAP_SERVICE = `import { DynamicToolService, type MessageBus } from 'toolbus';

export default (bus: MessageBus) =>
  new DynamicToolService({
    bus,
    topic: 'nap',
    announce: {
      tools: [{ name: 'nap', description: 'Sleep a while', arguments: [{ name: 'ms', type: 'number', description: 'How long' }] }],
    },
    async invoke(user, _config, args) {
      await new Promise((resolve) => setTimeout(resolve, Number(args.ms)));
      return 'napped for ' + user;
    },
  });
`;

interface Jwks {
  url: string;
  sign(
    claims: Record<string, unknown>,
    options?: { expiresIn?: string; audience?: string; other?: boolean },
  ): Promise<string>;
}

/** A JWKS server on 127.0.0.1 with one RS256 key, and a signer for it (and for a key it does not serve). */
async function startJwks(t: TestContext): Promise<Jwks> {
  const served = await generateKeyPair('RS256');
  const other = await generateKeyPair('RS256');
  const jwk = { ...(await exportJWK(served.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ keys: [jwk] }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/jwks.json`,
    sign: (claims, options = {}) =>
      new SignJWT(claims)
        .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
        .setIssuer(ISSUER)
        .setAudience(options.audience ?? AUDIENCE)
        .setIssuedAt()
        .setExpirationTime(options.expiresIn ?? '10m')
        .sign(options.other ? other.privateKey : served.privateKey),
  };
}

interface Gateway {
  url: string;
  output(): string;
  /** `toolbus <args>` against the same store. */
  cli(args: string[]): ReturnType<typeof runCli>;
  /** A fetch with `Bearer token`. */
  req(token: string, path: string, init?: RequestInit): Promise<Response>;
}

async function startGateway(
  t: TestContext,
  natsUrl: string | undefined,
  jwks: Jwks,
  modelUrl: string,
): Promise<Gateway> {
  const home = await mkdtemp(join(tmpdir(), 'toolbus-policy-'));
  t.after(() => rm(home, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 }));
  await writeFile(join(home, 'package.json'), '{"type":"module"}');
  await writeFile(join(home, 'nap-service.ts'), NAP_SERVICE);
  const env = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    TOOLBUS_HOME: home,
    TOOLBUS_TOKEN: ADMIN_TOKEN,
    OPENAI_BASE_URL: modelUrl,
    TOOLBUS_MODEL: 'fake',
  };
  const where = natsUrl ? ['--nats', natsUrl] : [];
  const up = await startCli(
    [
      'up',
      '--port',
      '0',
      ...where,
      '--service',
      join(home, 'nap-service.ts'),
      '--jwt-jwks',
      jwks.url,
      '--jwt-issuer',
      ISSUER,
      '--jwt-audience',
      AUDIENCE,
    ],
    env,
    /Press Ctrl-C to stop\./,
  );
  t.after(async () => void (await interrupt(up.child)));
  const url = /gateway\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(up.output())?.[1];
  assert.ok(url, up.output());
  assert.match(up.output(), /jwt\s+tokens of https:\/\/idp\.test for toolbus-gateway/);
  return {
    url,
    output: up.output,
    cli: (args) => runCli([...args, ...where], env),
    req: (token, path, init = {}) =>
      fetch(`${url}${path}`, {
        ...init,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...init.headers },
      }),
  };
}

/** `toolbus principal add NAME ...`; resolves with the token it printed. */
async function addPrincipal(gateway: Gateway, name: string, flags: string[]): Promise<string> {
  const run = await gateway.cli(['principal', 'add', name, ...flags]);
  assert.equal(run.code, 0, run.stderr);
  const token = /tbk_[A-Za-z0-9_-]{43}/.exec(run.stdout)?.[0];
  assert.ok(token, run.stdout);
  return token;
}

/** What `POST /api/v1/tools/{name}/invoke` answers: a result, or an error. */
interface InvokeAnswer {
  content: string;
  isError: boolean;
  error: { code: string; message: string; rule?: string };
}

async function invoke(
  gateway: Gateway,
  token: string,
  tool: string,
  args: object,
  headers: Record<string, string> = {},
) {
  const res = await gateway.req(token, `/api/v1/tools/${tool}/invoke`, {
    method: 'POST',
    body: JSON.stringify(args),
    headers,
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as InvokeAnswer };
}

async function mcpClient(t: TestContext, gateway: Gateway, token: string): Promise<Client> {
  const client = new Client({ name: 'policy-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${gateway.url}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    }),
  );
  t.after(() => client.close());
  return client;
}

async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, ms = 10_000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function scenario(t: TestContext, natsUrl: string | undefined): Promise<void> {
  const jwks = await startJwks(t);
  const model = await startFakeOpenAIServer();
  t.after(() => model.close());
  const gateway = await startGateway(t, natsUrl, jwks, model.baseURL);
  await waitFor('the nap tool', async () =>
    (await (await gateway.req(ADMIN_TOKEN, '/api/v1/tools')).text()).includes('"nap"') ? true : undefined,
  );

  const dad = await addPrincipal(gateway, 'dad-bot', [
    '--role',
    'caller',
    '--user',
    'alice',
    '--tools',
    'tell-dad-*',
  ]);
  const backend = await addPrincipal(gateway, 'backend', ['--role', 'caller,impersonate']);
  const viewer = await addPrincipal(gateway, 'viewer', ['--role', 'approver']);
  const slow = await addPrincipal(gateway, 'slow', ['--role', 'caller', '--rate', '2/m']);
  const narrow = await addPrincipal(gateway, 'narrow', ['--role', 'caller', '--max-in-flight', '1']);

  await t.test('the default token is the admin principal; only admins read or write config', async () => {
    const put = await gateway.req(ADMIN_TOKEN, '/api/v1/config/prompt/hello', {
      method: 'PUT',
      body: JSON.stringify({ template: 'hi' }),
    });
    assert.equal(put.status, 200, await put.text());
    for (const method of ['GET', 'PUT'] as const) {
      const res = await gateway.req(dad, '/api/v1/config/prompt/hello', {
        method,
        ...(method === 'PUT' ? { body: JSON.stringify({ template: 'evil' }) } : {}),
      });
      assert.equal(res.status, 403);
      const body = (await res.json()) as { error: { code: string; rule: string; message: string } };
      assert.equal(body.error.code, 'forbidden');
      assert.equal(body.error.rule, 'role');
      assert.match(
        body.error.message,
        /principal 'dad-bot' may not read or write config: that takes the role admin/,
      );
    }
    const audit = await gateway.req(dad, '/api/v1/audit');
    assert.equal(audit.status, 403);
    const unknown = await gateway.req('tbk_not-a-key', '/api/v1/tools');
    assert.equal(unknown.status, 401);
  });

  await t.test('the user comes from the principal; naming another takes the impersonate role', async () => {
    const own = await invoke(gateway, dad, 'tell-dad-joke', { topic: 'cats' });
    assert.equal(own.status, 200, JSON.stringify(own.body));
    assert.match(own.body.content, /Hey alice!/, 'the tool service received the verified user');
    const asks: Record<string, string>[] = [{ 'x-toolbus-user': 'mallory' }, {}];
    for (const ask of asks) {
      const path = Object.keys(ask).length ? '' : '?user=mallory';
      const res = await gateway.req(dad, `/api/v1/tools/tell-dad-joke/invoke${path}`, {
        method: 'POST',
        body: JSON.stringify({ topic: 'cats' }),
        headers: ask,
      });
      assert.equal(res.status, 403);
      const body = (await res.json()) as { error: { rule: string; message: string } };
      assert.equal(body.error.rule, 'impersonate');
      assert.match(body.error.message, /only principals with the 'impersonate' role may set the user/);
    }
    const acting = await invoke(
      gateway,
      backend,
      'tell-joke',
      { topic: 'dogs' },
      { 'x-toolbus-user': 'bob' },
    );
    assert.equal(acting.status, 200);
    assert.match(acting.body.content, /Hey bob!/);
    const itself = await invoke(gateway, backend, 'tell-joke', { topic: 'dogs' });
    assert.match(itself.body.content, /Hey backend!/, "a key's user is its name unless --user is given");
  });

  await t.test(
    'a tool policy filters the REST list, MCP tools/list and the agent; other calls are refused',
    async (t) => {
      const list = (await (await gateway.req(dad, '/api/v1/tools')).json()) as { tools: { name: string }[] };
      assert.deepEqual(
        list.tools.map((tool) => tool.name),
        ['tell-dad-joke'],
      );
      const refused = await invoke(gateway, dad, 'tell-joke', { topic: 'cats' });
      assert.equal(refused.status, 403);
      assert.equal(refused.body.error.rule, 'tool-policy');
      assert.match(refused.body.error.message, /may not use tool 'tell-joke'/);

      const mcp = await mcpClient(t, gateway, dad);
      const listed = await mcp.listTools();
      assert.deepEqual(
        listed.tools.map((tool) => tool.name),
        ['tell-dad-joke'],
      );
      const call = await mcp.callTool({ name: 'tell-joke', arguments: { topic: 'cats' } });
      assert.equal(call.isError, true);
      assert.match(JSON.stringify(call.content), /may not use tool 'tell-joke'/);
      const allowed = await mcp.callTool({ name: 'tell-dad-joke', arguments: { topic: 'cats' } });
      assert.equal(allowed.isError ?? false, false);
      assert.match(JSON.stringify(allowed.content), /Hey alice!/);
      // A session is its principal's: another key cannot use its id to reach the session's tools.
      const sessionId = (mcp.transport as StreamableHTTPClientTransport | undefined)?.sessionId;
      assert.ok(sessionId);
      const hijack = await gateway.req(backend, '/mcp', {
        method: 'POST',
        headers: { 'mcp-session-id': sessionId, accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list', params: {} }),
      });
      assert.equal(hijack.status, 403);
      assert.match(await hijack.text(), /opened by another principal/);

      const before = model.requests.length;
      model.reply({ json: chatCompletion({ content: 'Here is one.' }) });
      const asked = await gateway.req(dad, '/api/v1/agent', {
        method: 'POST',
        body: JSON.stringify({ question: 'Tell me a joke' }),
      });
      assert.equal(asked.status, 200, await asked.clone().text());
      const sent = model.requests[before]?.body as { tools?: { function: { name: string } }[] } | undefined;
      assert.deepEqual(
        sent?.tools?.map((tool) => tool.function.name),
        ['tell-dad-joke'],
        'the model was offered only the tools of the principal',
      );
    },
  );

  await t.test('an approver sees tools but calls none', async () => {
    const list = await gateway.req(viewer, '/api/v1/tools');
    assert.equal(list.status, 200);
    const call = await invoke(gateway, viewer, 'tell-joke', { topic: 'x' });
    assert.equal(call.status, 403);
    assert.equal(call.body.error.rule, 'role');
  });

  await t.test(
    "beyond a principal's rate: 429 with Retry-After; over MCP a rate-limited error",
    async (t) => {
      for (let i = 0; i < 2; i++)
        assert.equal((await invoke(gateway, slow, 'tell-joke', { topic: 'x' })).status, 200);
      const over = await invoke(gateway, slow, 'tell-joke', { topic: 'x' });
      assert.equal(over.status, 429);
      assert.equal(over.body.error.code, 'rate-limited');
      assert.equal(over.body.error.rule, 'rate');
      const retry = Number(over.headers.get('retry-after'));
      assert.ok(retry >= 1 && retry <= 60, `Retry-After ${retry}`);
      const mcp = await mcpClient(t, gateway, slow);
      const result = await mcp.callTool({ name: 'tell-joke', arguments: { topic: 'x' } });
      assert.equal(result.isError, true);
      assert.match(JSON.stringify(result.content), /over its rate of 2\/m/);
    },
  );

  await t.test('a tool quota from config limits every caller of the tool', async () => {
    const put = await gateway.cli(['config', 'put', 'quota/tell-dad-joke', '{"rate":"1/h","per":"all"}']);
    assert.equal(put.code, 0, put.stderr);
    // The first call after the item arrives passes; the quota is shared, so the second caller is refused.
    const first = await waitFor('the quota to apply', async () => {
      const a = await invoke(gateway, backend, 'tell-dad-joke', { topic: 'x' });
      if (a.status === 200) {
        const b = await invoke(gateway, dad, 'tell-dad-joke', { topic: 'x' });
        return b.status === 429 ? b : undefined;
      }
      return a.status === 429 ? a : undefined;
    });
    assert.equal(first.body.error.rule, 'quota');
    assert.match(
      first.body.error.message,
      /tool 'tell-dad-joke' is over its quota of 1\/h for all callers together/,
    );
    assert.ok(Number(first.headers.get('retry-after')) > 60);
  });

  await t.test('a cap on calls in flight per principal', async () => {
    const long = invoke(gateway, narrow, 'nap', { ms: 1500 });
    const second = await waitFor('the first call to be in flight', async () => {
      const r = await invoke(gateway, narrow, 'tell-joke', { topic: 'x' });
      return r.status === 429 ? r : undefined;
    });
    assert.equal(second.body.error.code, 'too-many-requests');
    assert.equal(second.body.error.rule, 'in-flight');
    assert.match((await long).body.content, /napped for narrow/);
    assert.equal(
      (await invoke(gateway, narrow, 'tell-joke', { topic: 'x' })).status,
      200,
      'the slot is free again',
    );
  });

  await t.test(
    'JWTs: the claim is the user, roles from a claim; expired, wrong audience and wrong key get 401',
    async () => {
      const good = await jwks.sign({ sub: 'carol' });
      const call = await invoke(gateway, good, 'tell-joke', { topic: 'x' });
      assert.equal(call.status, 200, JSON.stringify(call.body));
      assert.match(call.body.content, /Hey carol!/);
      const approver = await jwks.sign({ sub: 'dave', roles: ['approver'] });
      assert.equal((await invoke(gateway, approver, 'tell-joke', { topic: 'x' })).status, 403);
      const cases: [string, string, RegExp][] = [
        ['expired', await jwks.sign({ sub: 'carol' }, { expiresIn: '-1h' }), /expired/],
        [
          'wrong audience',
          await jwks.sign({ sub: 'carol' }, { audience: 'someone-else' }),
          /audience is not 'toolbus-gateway'/,
        ],
        ['wrong key', await jwks.sign({ sub: 'carol' }, { other: true }), /signature does not verify|no key/],
      ];
      for (const [what, token, reason] of cases) {
        const res = await gateway.req(token, '/api/v1/tools');
        assert.equal(res.status, 401, what);
        const body = (await res.json()) as { error: { code: string; message: string } };
        assert.equal(body.error.code, 'unauthorized', what);
        assert.match(body.error.message, reason, what);
      }
    },
  );

  await t.test('principal remove: the key stops working', async () => {
    const run = await gateway.cli(['principal', 'remove', 'viewer']);
    assert.equal(run.code, 0, run.stderr);
    await waitFor('the key to be refused', async () =>
      (await gateway.req(viewer, '/api/v1/tools')).status === 401 ? true : undefined,
    );
  });

  await t.test(
    'every denial is in the audit log and the log, with principal, user, tool and rule',
    async () => {
      const entries = await waitFor('the denials in the audit log', async () => {
        const res = await gateway.req(ADMIN_TOKEN, '/api/v1/audit?limit=500');
        const body = (await res.json()) as { entries: Record<string, unknown>[] };
        const denied = body.entries.filter((e) => e.kind === 'denied');
        return denied.some((e) => e.tool === 'tell-joke' && String(e.caller).startsWith('mcp:dad-bot@'))
          ? denied
          : undefined;
      });
      const http = entries.find((e) => e.tool === 'tell-joke' && e.caller === 'http:dad-bot@127.0.0.1');
      assert.ok(http, JSON.stringify(entries));
      assert.equal(http.outcome, 'forbidden');
      assert.equal(http.user, 'alice');
      assert.ok(entries.some((e) => e.outcome === 'rate-limited' && e.caller === 'http:slow@127.0.0.1'));
      assert.ok(entries.some((e) => e.outcome === 'too-many-requests'));
      assert.ok(entries.some((e) => e.outcome === 'unauthorized'));
      const lines = gateway
        .output()
        .split('\n')
        .filter((line) => line.includes('"request.denied"'))
        .map((line) => JSON.parse(line) as Record<string, unknown>);
      assert.ok(
        lines.some((l) => l.rule === 'impersonate' && l.principal === 'dad-bot' && l.status === 403),
        gateway.output(),
      );
      assert.ok(lines.some((l) => l.rule === 'tool-policy' && l.tool === 'tell-joke' && l.surface === 'mcp'));
      assert.ok(lines.some((l) => l.rule === 'quota' && l.status === 429));
    },
  );
}

test('identity, policy and quotas on toolbus up (embedded: memory bus, SQLite)', async (t) => {
  await scenario(t, undefined);
});

test('identity, policy and quotas on toolbus up --nats (a real nats-server)', async (t) => {
  const nats = await startNatsServer({ jetstream: true });
  t.after(() => nats.stop());
  await scenario(t, nats.url);
});
