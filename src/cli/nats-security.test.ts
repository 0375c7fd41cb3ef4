import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ToolbusError } from '../errors/index.js';
import { UsageError } from './command.js';
import { NatsSecurity, displayNatsUrl } from './nats-security.js';

const io = (env: NodeJS.ProcessEnv = {}, cwd = process.cwd()): { env: NodeJS.ProcessEnv; cwd: string } => ({
  env,
  cwd,
});
const URL = 'nats://127.0.0.1:4222';

/** A refusal as connectNats makes one: a ToolbusError with a `problem`. */
function refusal(
  problem: string,
  message = `NATS at ${URL} refused the credentials (authorization violation)`,
) {
  return Object.assign(new ToolbusError('unauthorized', message), { problem });
}

test('a flag wins over its variable, and the values become connectNats auth', () => {
  const security = NatsSecurity.fromFlags(
    { 'nats-user': 'alice' },
    io({ TOOLBUS_NATS_USER: 'bob', TOOLBUS_NATS_PASS: 'pw' }),
  );
  assert.deepEqual(security.connectOptions(URL), { auth: { user: 'alice', password: 'pw' } });
  assert.deepEqual(NatsSecurity.fromFlags({}, io({ TOOLBUS_NATS_TOKEN: 't' })).connectOptions(URL), {
    auth: { token: 't' },
  });
  assert.deepEqual(NatsSecurity.fromFlags({}, io()).connectOptions(URL), {});
});

test('usage errors: an empty flag, a password without a user, two ways to authenticate, half a client certificate', () => {
  const cases: [Parameters<typeof NatsSecurity.fromFlags>[0], NodeJS.ProcessEnv, RegExp][] = [
    [{ 'nats-user': '' }, {}, /--nats-user needs a value/],
    [{ 'nats-pass': 'pw' }, {}, /--nats-pass needs a user/],
    [{ 'nats-user': 'a' }, { TOOLBUS_NATS_TOKEN: 't' }, /--nats-user and TOOLBUS_NATS_TOKEN are two ways/],
    [{ 'nats-tls-cert': 'c.pem' }, {}, /--nats-tls-cert needs its private key/],
    [{}, { TOOLBUS_NATS_TLS_KEY: 'k.pem' }, /TOOLBUS_NATS_TLS_KEY needs its certificate/],
  ];
  for (const [values, env, message] of cases) {
    assert.throws(
      () => NatsSecurity.fromFlags(values, io(env)),
      (e: unknown) => {
        assert.ok(e instanceof UsageError);
        assert.match(e.message, message);
        return true;
      },
    );
  }
});

test('credentials in the URL replace the variables; next to a flag they are an error', () => {
  const withUrl = 'nats://alice:pw@127.0.0.1:4222';
  assert.deepEqual(NatsSecurity.fromFlags({}, io({ TOOLBUS_NATS_TOKEN: 't' })).connectOptions(withUrl), {});
  assert.throws(
    () => NatsSecurity.fromFlags({ 'nats-token': 't' }, io()).connectOptions(withUrl),
    /the --nats URL carries credentials and --nats-token gives others/,
  );
  assert.equal(displayNatsUrl(withUrl), URL);
  assert.equal(displayNatsUrl('tls://tok@[::1]:4222'), 'tls://[::1]:4222');
  assert.equal(displayNatsUrl(URL), URL);
});

test('files are read once, relative to the working folder; an unreadable one names the flag and the file only', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'toolbus-nats-security-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  await writeFile(join(dir, 'ca.pem'), 'CA TEXT');
  const security = NatsSecurity.fromFlags({ 'nats-tls-ca': 'ca.pem' }, io({}, dir));
  assert.deepEqual(security.connectOptions(URL), { tls: { ca: 'CA TEXT' } });
  await writeFile(join(dir, 'ca.pem'), 'CHANGED');
  assert.deepEqual(security.connectOptions(URL), { tls: { ca: 'CA TEXT' } });

  const missing = NatsSecurity.fromFlags({}, io({ TOOLBUS_NATS_CREDS: join(dir, 'secret', 'u.creds') }, dir));
  assert.throws(
    () => missing.connectOptions(URL),
    (e: unknown) => {
      assert.ok(e instanceof UsageError);
      assert.equal(e.message, "TOOLBUS_NATS_CREDS: cannot read 'u.creds' (no such file)");
      return true;
    },
  );
});

test('explain: a refusal gets the flag to check, never the secret; other errors pass as they are', () => {
  const security = NatsSecurity.fromFlags(
    { 'nats-user': 'alice', 'nats-creds': undefined },
    io({ TOOLBUS_NATS_PASS: 'hunter2' }),
  );
  const explained = security.explain(refusal('credentials-refused'), URL) as ToolbusError;
  assert.equal(explained.code, 'unauthorized');
  assert.equal(
    explained.message,
    `NATS at ${URL} refused the credentials (authorization violation): check --nats-user and TOOLBUS_NATS_PASS`,
  );
  assert.ok(!explained.message.includes('hunter2'));
  assert.match(
    (security.explain(refusal('credentials-refused'), 'nats://a:b@h:4222') as Error).message,
    /check the credentials in the --nats URL$/,
  );
  const tls = NatsSecurity.fromFlags({ 'nats-tls-ca': '/etc/private/ca.pem' }, io());
  assert.match(
    (tls.explain(refusal('tls-untrusted', 'untrusted'), URL) as Error).message,
    /^untrusted: check --nats-tls-ca \(ca\.pem\): it must hold the CA/,
  );
  assert.match(
    (NatsSecurity.fromFlags({}, io()).explain(refusal('tls-untrusted', 'untrusted'), URL) as Error).message,
    /give the CA that signed it with --nats-tls-ca FILE/,
  );
  const other = new ToolbusError('unavailable', 'cannot connect');
  assert.equal(security.explain(other, URL), other);
});
