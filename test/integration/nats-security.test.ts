/**
 * NATS security against real `nats-server` processes: user and password, a token, an nkey, a creds
 * file, TLS with a CA, client certificates and the README's `nats-server.conf`. Right credentials work
 * through the library and the CLI; wrong ones fail at once, saying what to check, and never print the
 * secret or a file's folder.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { nkeys } from '@nats-io/transport-node';

type KeyPair = ReturnType<typeof nkeys.createUser>;
import { NatsBus, NatsKvConfigStore, NatsSecurityError, connectNats } from '../../src/bus/nats/index.js';
import { startNatsServer, type NatsServer, type NatsServerOptions } from '../support/nats-server.js';
import { runCli, startCli, interrupt } from '../support/cli.js';
import { readmeFile, readmeModule } from '../support/readme.js';

const run = promisify(execFile);

/** Far above how long a refusal takes, so a refusal that waited for it would fail the test. */
const CONNECT_TIMEOUT_MS = 20_000;
const AT_ONCE_MS = 5_000;

async function tempDir(t: { after(fn: () => Promise<void>): void }, prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

async function server(
  t: { after(fn: () => Promise<void>): void },
  options: NatsServerOptions,
): Promise<NatsServer> {
  const started = await startNatsServer(options);
  t.after(() => started.stop());
  return started;
}

/** The CLI's environment: no TOOLBUS_NATS_* of the machine running the tests. */
function cliEnv(home: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, HOME: process.env.HOME, TOOLBUS_HOME: home, ...extra };
}

/** Rejects like `connect()` should, and measures that it did not wait for the connect timeout. */
async function refused(
  connect: () => Promise<unknown>,
  expected: { problem: string; code: string; message: RegExp },
  secret?: string,
): Promise<void> {
  const started = Date.now();
  await assert.rejects(connect(), (error: unknown) => {
    assert.ok(error instanceof NatsSecurityError, String(error));
    assert.equal(error.name, 'NatsSecurityError');
    assert.equal(error.problem, expected.problem);
    assert.equal(error.code, expected.code);
    assert.match(error.message, expected.message);
    if (secret) assert.ok(!error.message.includes(secret), error.message);
    return true;
  });
  assert.ok(Date.now() - started < AT_ONCE_MS, `refused after ${Date.now() - started} ms, not at once`);
}

test('user and password: the bus and the config store work with them; a wrong password fails at once', async (t) => {
  const password = 'open-sesame-7';
  const nats = await server(t, { user: 'alice', password });
  const home = await tempDir(t, 'toolbus-nats-user-');
  const auth = { user: 'alice', password };

  const store = await NatsKvConfigStore.connect({ servers: nats.url, auth });
  await store.put('prompt', 'greeting', '"hello"');
  assert.deepEqual((await store.get('prompt', 'greeting'))?.value, 'hello');
  await store.close();
  // In the URL too (nats.js alone would ignore them).
  const url = `nats://alice:${password}@127.0.0.1:${nats.port}`;
  const bus = await NatsBus.connect({ servers: url });
  await bus.close();

  const timeouts = { connectTimeoutMs: CONNECT_TIMEOUT_MS, reconnect: false };
  await refused(
    () =>
      NatsBus.connect({ servers: nats.url, auth: { user: 'alice', password: 'wrong-pass' }, ...timeouts }),
    {
      problem: 'credentials-refused',
      code: 'unauthorized',
      message: /^NATS at nats:\/\/127\.0\.0\.1:\d+ refused the credentials \(authorization violation\)$/,
    },
    'wrong-pass',
  );
  await refused(() => NatsKvConfigStore.connect({ servers: nats.url, ...timeouts }), {
    problem: 'credentials-required',
    code: 'unauthorized',
    message: /requires credentials \(authorization violation\), and none were given/,
  });
  await refused(
    () => connectNats({ servers: `nats://alice:wrong-pass@127.0.0.1:${nats.port}`, ...timeouts }),
    {
      problem: 'credentials-refused',
      code: 'unauthorized',
      message: /^NATS at nats:\/\/127\.0\.0\.1:\d+ refused/,
    },
    'wrong-pass',
  );

  // The CLI: the user as a flag, the password as its variable (kept out of ps).
  const ok = await runCli(
    ['config', 'list', '--nats', nats.url, '--nats-user', 'alice'],
    cliEnv(home, { TOOLBUS_NATS_PASS: password }),
  );
  assert.equal(ok.code, 0, ok.stderr);
  assert.match(ok.stdout, /prompt\/greeting/);
  const bad = await runCli(
    ['config', 'list', '--nats', nats.url, '--nats-user', 'alice', '--nats-pass', 'wrong-pass'],
    cliEnv(home, { TOOLBUS_NATS_PASS: password }),
  );
  assert.equal(bad.code, 1);
  assert.match(
    bad.stderr,
    /NATS at nats:\/\/127\.0\.0\.1:\d+ refused the credentials \(authorization violation\): check --nats-user and --nats-pass/,
  );
  assert.ok(!bad.stderr.includes('wrong-pass') && !bad.stderr.includes(password), bad.stderr);
});

test('a token, as an option, in the URL or as TOOLBUS_NATS_TOKEN; a wrong one fails at once', async (t) => {
  const token = 's3cret-token-42';
  const nats = await server(t, { token, jetstream: false });
  const home = await tempDir(t, 'toolbus-nats-token-');

  await (await NatsBus.connect({ servers: nats.url, auth: { token } })).close();
  await (await NatsBus.connect({ servers: `nats://${token}@127.0.0.1:${nats.port}` })).close();
  await refused(
    () =>
      NatsBus.connect({
        servers: nats.url,
        auth: { token: 'not-it' },
        connectTimeoutMs: CONNECT_TIMEOUT_MS,
        reconnect: false,
      }),
    { problem: 'credentials-refused', code: 'unauthorized', message: /refused the credentials/ },
    'not-it',
  );
  await assert.rejects(connectNats({ servers: `nats://${token}@127.0.0.1:${nats.port}`, auth: { token } }), {
    code: 'usage',
    message: /given twice/,
  });

  // `ask --nats` fails before it asks anything: the token is refused.
  const bad = await runCli(
    ['ask', 'hello?', '--nats', nats.url],
    cliEnv(home, { TOOLBUS_NATS_TOKEN: 'not-it' }),
  );
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /refused the credentials \(authorization violation\): check TOOLBUS_NATS_TOKEN\n/);
  assert.ok(!bad.stderr.includes('not-it'), bad.stderr);
  const inUrl = await runCli(
    ['tools', '--nats', `nats://not-it@127.0.0.1:${nats.port}`],
    cliEnv(home, { TOOLBUS_NATS_TOKEN: token }),
  );
  assert.equal(inUrl.code, 1);
  assert.match(
    inUrl.stderr,
    /refused the credentials \(authorization violation\): check the credentials in the --nats URL/,
  );
  assert.ok(!inUrl.stderr.includes('not-it'), inUrl.stderr);
});

test('an nkey seed file and a creds file; a file that is missing or not one is named, not its folder', async (t) => {
  const dir = await tempDir(t, 'toolbus-nats-nkey-');
  const user = nkeys.createUser();
  const seed = new TextDecoder().decode(user.getSeed());
  const nats = await server(t, {
    jetstream: false,
    config: `authorization { users: [ { nkey: ${user.getPublicKey()} } ] }\n`,
  });
  await (await NatsBus.connect({ servers: nats.url, auth: { nkeySeed: `${seed}\n` } })).close();
  const other = new TextDecoder().decode(nkeys.createUser().getSeed());
  await refused(
    () =>
      NatsBus.connect({
        servers: nats.url,
        auth: { nkeySeed: other },
        connectTimeoutMs: CONNECT_TIMEOUT_MS,
        reconnect: false,
      }),
    { problem: 'credentials-refused', code: 'unauthorized', message: /refused the credentials/ },
    other,
  );
  await refused(() => connectNats({ servers: nats.url, auth: { nkeySeed: 'SUNOTASEED' } }), {
    problem: 'credentials-invalid',
    code: 'invalid-config',
    message: /the nkey seed cannot be used/,
  });

  const seedFile = join(dir, 'service.nk');
  await writeFile(seedFile, `${other}\n`);
  const wrong = await runCli(['tools', '--nats', nats.url, '--nats-nkey', seedFile], cliEnv(dir));
  assert.equal(wrong.code, 1);
  assert.match(
    wrong.stderr,
    /refused the credentials \(authorization violation\): check --nats-nkey \(service\.nk\)\n/,
  );
  assert.ok(!wrong.stderr.includes(dir) && !wrong.stderr.includes(other), wrong.stderr);
  const missing = await runCli(
    ['tools', '--nats', nats.url, '--nats-creds', join(dir, 'private', 'user.creds')],
    cliEnv(dir),
  );
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /--nats-creds: cannot read 'user\.creds' \(no such file\)/);
  assert.ok(!missing.stderr.includes(dir), missing.stderr);

  // Decentralized auth: an operator, an account and a user, signed here as nsc would.
  const operator = nkeys.createOperator();
  const account = nkeys.createAccount();
  const credsUser = nkeys.createUser();
  const decentralized = await server(t, {
    jetstream: false,
    config:
      `operator: ${jwt(operator, operator.getPublicKey(), { type: 'operator', version: 2 })}\n` +
      `resolver: MEMORY\n` +
      `resolver_preload: { ${account.getPublicKey()}: ${jwt(operator, account.getPublicKey(), {
        type: 'account',
        version: 2,
        limits: { subs: -1, data: -1, payload: -1, imports: -1, exports: -1, wildcards: true, conn: -1 },
      })} }\n`,
  });
  const userJwt = jwt(account, credsUser.getPublicKey(), {
    type: 'user',
    version: 2,
    pub: {},
    sub: {},
    subs: -1,
    data: -1,
    payload: -1,
  });
  const creds =
    `-----BEGIN NATS USER JWT-----\n${userJwt}\n------END NATS USER JWT------\n\n` +
    `-----BEGIN USER NKEY SEED-----\n${new TextDecoder().decode(credsUser.getSeed())}\n------END USER NKEY SEED------\n`;
  await (await NatsBus.connect({ servers: decentralized.url, auth: { creds } })).close();
  const credsFile = join(dir, 'user.creds');
  await writeFile(credsFile, creds);
  const none = await runCli(['tools', '--nats', decentralized.url], cliEnv(dir));
  assert.equal(none.code, 1);
  assert.match(
    none.stderr,
    /requires credentials \(authorization violation\), and none were given: give --nats-user/,
  );
  await writeFile(credsFile, 'not a creds file');
  const garbled = await runCli(
    ['tools', '--nats', decentralized.url],
    cliEnv(dir, { TOOLBUS_NATS_CREDS: credsFile }),
  );
  assert.equal(garbled.code, 1);
  assert.match(garbled.stderr, /the creds file cannot be used: .*: check TOOLBUS_NATS_CREDS \(user\.creds\)/);
  assert.ok(!garbled.stderr.includes(dir), garbled.stderr);
});

test('TLS: works with --nats-tls-ca, fails clearly without it, on a server without TLS, and without a client certificate', async (t) => {
  const dir = await tempDir(t, 'toolbus-nats-tls-');
  const pem = await makeCertificates(dir);
  const nats = await server(t, { tls: { cert: pem.serverCert, key: pem.serverKey } });
  const tlsUrl = `tls://127.0.0.1:${nats.port}`;
  const ca = await readText(pem.ca);

  const store = await NatsKvConfigStore.connect({ servers: tlsUrl, tls: { ca } });
  await store.put('prompt', 'tls', '"over TLS"');
  await store.close();
  // The server requires TLS: a nats:// URL is upgraded, and the CA still decides.
  await (await NatsBus.connect({ servers: nats.url, tls: { ca } })).close();
  await refused(() => NatsBus.connect({ servers: tlsUrl, connectTimeoutMs: CONNECT_TIMEOUT_MS }), {
    problem: 'tls-untrusted',
    code: 'unavailable',
    message: /the server's TLS certificate is not trusted/,
  });
  const plain = await server(t, { jetstream: false });
  await refused(
    () => NatsBus.connect({ servers: `tls://127.0.0.1:${plain.port}`, connectTimeoutMs: CONNECT_TIMEOUT_MS }),
    {
      problem: 'tls-unavailable',
      code: 'unavailable',
      message: /does not offer TLS, which a tls:\/\/ URL requires/,
    },
  );

  const ok = await runCli(
    ['config', 'get', 'prompt/tls', '--nats', tlsUrl, '--nats-tls-ca', pem.ca],
    cliEnv(dir),
  );
  assert.equal(ok.code, 0, ok.stderr);
  assert.equal(ok.stdout, '"over TLS"\n');
  const untrusted = await runCli(['config', 'list', '--nats', tlsUrl], cliEnv(dir));
  assert.equal(untrusted.code, 1);
  assert.match(
    untrusted.stderr,
    /NATS at tls:\/\/127\.0\.0\.1:\d+: the server's TLS certificate is not trusted \(.*\): give the CA that signed it with --nats-tls-ca FILE/,
  );

  // A server that verifies clients: the client certificate from the variables works; without it,
  // nats.js alone would wait for its connect timeout.
  const verifying = await server(t, {
    jetstream: false,
    tls: { cert: pem.serverCert, key: pem.serverKey, ca: pem.ca, verify: true },
  });
  const cert = await readText(pem.clientCert);
  const key = await readText(pem.clientKey);
  await (await NatsBus.connect({ servers: verifying.url, tls: { ca, cert, key } })).close();
  await refused(
    // Refused at the probe (1 s), before nats.js would time out; a short timeout lets the test end sooner.
    () => NatsBus.connect({ servers: verifying.url, tls: { ca }, connectTimeoutMs: 3_000 }),
    {
      problem: 'tls-client-certificate-required',
      code: 'unauthorized',
      message: /verifies TLS clients and no client certificate was given/,
    },
  );
  await refused(() => NatsBus.connect({ servers: verifying.url, tls: { ca, cert: key, key: cert } }), {
    problem: 'tls-certificate-invalid',
    code: 'invalid-config',
    message: /client certificate is not a PEM certificate/,
  });
  const env = cliEnv(dir, {
    TOOLBUS_NATS_TLS_CA: pem.ca,
    TOOLBUS_NATS_TLS_CERT: pem.clientCert,
    TOOLBUS_NATS_TLS_KEY: pem.clientKey,
  });
  const withCert = await runCli(['ask', 'anyone?', '--nats', verifying.url], env);
  assert.match(withCert.stderr, /no agent is listening on nats:\/\/127\.0\.0\.1:\d+/); // connected, then asked
  const noCert = await runCli(
    ['ask', 'anyone?', '--nats', verifying.url],
    cliEnv(dir, { TOOLBUS_NATS_TLS_CA: pem.ca }),
  );
  assert.equal(noCert.code, 1);
  assert.match(
    noCert.stderr,
    /verifies TLS clients and no client certificate was given: give --nats-tls-cert FILE/,
  );
});

test("the README's nats-server.conf: the gateway, the echo service and an agent each work as their own user", async (t) => {
  const passwords = { gateway: 'gw-pass-1', agent: 'agent-pass-2', echo: 'echo-pass-3' };
  const nats = await server(t, {
    config: readmeFile('nats-server.conf'),
    env: {
      NATS_GATEWAY_PASS: passwords.gateway,
      NATS_AGENT_PASS: passwords.agent,
      NATS_ECHO_PASS: passwords.echo,
    },
  });
  const home = await tempDir(t, 'toolbus-nats-readme-');
  const module = join(home, 'echo-service.ts');
  await writeFile(module, readmeModule('echo-service.ts'));
  await writeFile(join(home, 'package.json'), '{"type":"module"}');
  const children: ChildProcess[] = [];
  t.after(async () => {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  });
  const as = (role: keyof typeof passwords): NodeJS.ProcessEnv =>
    cliEnv(home, { TOOLBUS_NATS_USER: role, TOOLBUS_NATS_PASS: passwords[role] });

  const [up, service] = await Promise.all([
    startCli(['up', '--nats', nats.url, '--port', '0'], as('gateway'), /Press Ctrl-C to stop\./),
    startCli(['service', module, '--nats', nats.url], as('echo'), /running \(1 replica\)/),
  ]);
  children.push(up.child, service.child);
  const gateway = /gateway\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(up.output())?.[1];
  assert.ok(gateway, up.output());

  // Config is the gateway's to write, and only its.
  const admin = await NatsKvConfigStore.connect({
    servers: nats.url,
    auth: { user: 'gateway', password: passwords.gateway },
  });
  t.after(() => admin.close());
  await admin.put(
    'tool-service',
    'echo',
    '{"id":"echo","request-queue":"non-persistent://tg/request/echo","response-queue":"non-persistent://tg/response/echo","config-params":[{"name":"times","required":false}]}',
  );
  await admin.put(
    'tool',
    'echo',
    '{"type":"tool-service","name":"echo","description":"Repeat what the user says","service":"echo","times":2,"arguments":[{"name":"text","type":"string","description":"What to repeat"}]}',
  );
  const reader = await NatsKvConfigStore.connect({
    servers: nats.url,
    auth: { user: 'agent', password: passwords.agent },
  });
  t.after(() => reader.close());
  assert.equal((await reader.get('tool', 'echo'))?.key, 'echo');
  await assert.rejects(reader.put('tool', 'evil', '{}'), /Permissions Violation for Publish/);

  // An agent calls the service directly on the bus; the gateway calls it over HTTP.
  const call = await runCli(['call', 'echo', 'text=hi', '--user', 'bob', '--nats', nats.url], as('agent'));
  assert.equal(call.code, 0, call.stderr);
  assert.equal(call.stdout, 'bob said: hi bob said: hi\n');
  const token = (await readText(join(home, 'token'))).trim();
  const viaGateway = await fetch(`${gateway}/api/v1/tools/echo/invoke`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: '{"text":"yo"}',
  });
  assert.equal(viaGateway.status, 200);
  assert.match(await viaGateway.text(), /anonymous said: yo anonymous said: yo/);

  assert.equal(await interrupt(service.child), 0, service.output());
  assert.equal(await interrupt(up.child), 0, up.output());
  for (const secret of Object.values(passwords)) {
    assert.ok(!up.output().includes(secret) && !service.output().includes(secret));
  }
});

function readText(path: string): Promise<string> {
  return readFile(path, 'utf8');
}

/** A JWT as nsc signs one: `issuer` signs the claims about `subject`. */
function jwt(issuer: KeyPair, subject: string, nats: object): string {
  const encode = (value: string | Uint8Array): string => Buffer.from(value).toString('base64url');
  const header = encode(JSON.stringify({ typ: 'JWT', alg: 'ed25519-nkey' }));
  const claims = encode(
    JSON.stringify({
      jti: Math.random().toString(36).slice(2),
      iat: Math.floor(Date.now() / 1000),
      iss: issuer.getPublicKey(),
      sub: subject,
      name: subject.slice(0, 8),
      nats,
    }),
  );
  return `${header}.${claims}.${encode(issuer.sign(new TextEncoder().encode(`${header}.${claims}`)))}`;
}

/** A CA, a server certificate for 127.0.0.1 and localhost, and a client certificate, made with openssl. */
async function makeCertificates(
  dir: string,
): Promise<Record<'ca' | 'serverCert' | 'serverKey' | 'clientCert' | 'clientKey', string>> {
  const path = (name: string): string => join(dir, name);
  const key = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  await run('openssl', [
    'req',
    '-x509',
    ...key,
    '-keyout',
    path('ca-key.pem'),
    '-out',
    path('ca.pem'),
    '-days',
    '1',
    '-subj',
    '/CN=toolbus test CA',
  ]);
  await writeFile(
    path('server.ext'),
    'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n',
  );
  await writeFile(path('client.ext'), 'extendedKeyUsage=clientAuth\n');
  for (const [name, subject] of [
    ['server', '/CN=127.0.0.1'],
    ['client', '/CN=toolbus client'],
  ] as const) {
    await run('openssl', [
      'req',
      ...key,
      '-keyout',
      path(`${name}-key.pem`),
      '-out',
      path(`${name}.csr`),
      '-subj',
      subject,
    ]);
    await run('openssl', [
      'x509',
      '-req',
      '-in',
      path(`${name}.csr`),
      '-CA',
      path('ca.pem'),
      '-CAkey',
      path('ca-key.pem'),
      '-CAcreateserial',
      '-out',
      path(`${name}.pem`),
      '-days',
      '1',
      '-extfile',
      path(`${name}.ext`),
    ]);
  }
  return {
    ca: path('ca.pem'),
    serverCert: path('server.pem'),
    serverKey: path('server-key.pem'),
    clientCert: path('client.pem'),
    clientKey: path('client-key.pem'),
  };
}
