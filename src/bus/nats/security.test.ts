import { test } from 'node:test';
import assert from 'node:assert/strict';
import { nkeys } from '@nats-io/transport-node';
import {
  NatsSecurityError,
  authenticatorOf,
  parseServerUrls,
  redactServerUrl,
  securityFailure,
  tlsOptionsOf,
  type SecurityAttempt,
} from './security.js';
import { connectNats } from './connect.js';

const attempt: SecurityAttempt = {
  label: 'nats://h:4222',
  auth: true,
  tlsRequiredBy: undefined,
  clientCertificate: false,
};

test('parseServerUrls: credentials come out of the URLs (user:password or a token); tls:// asks for TLS', () => {
  assert.deepEqual(parseServerUrls(['nats://al%40ce:p%3Ass@h:4222']), {
    servers: ['nats://h:4222'],
    label: 'nats://h:4222',
    auth: { user: 'al@ce', password: 'p:ss' },
    tls: false,
  });
  const token = parseServerUrls(['tls://tok@a:4222', 'tls://tok@b:4222']);
  assert.deepEqual(token.auth, { token: 'tok' });
  assert.equal(token.label, 'tls://a:4222, tls://b:4222');
  assert.equal(token.tls, true);
  assert.deepEqual(parseServerUrls(['h:4222']).auth, undefined);
  assert.throws(() => parseServerUrls(['nats://a@h', 'nats://b@h']), { code: 'usage' });
  assert.equal(redactServerUrl('nats://u:p@h:1'), 'nats://h:1');
});

test('authenticatorOf: one kind of auth; a seed or creds text that cannot be used is named, not quoted', () => {
  const seed = new TextDecoder().decode(nkeys.createUser().getSeed());
  assert.equal(typeof authenticatorOf({ nkeySeed: seed }, 'x'), 'function');
  assert.throws(
    () => authenticatorOf({ nkeySeed: 'SUBOGUS' }, 'nats://h:4222'),
    (e: unknown) => {
      assert.ok(e instanceof NatsSecurityError);
      assert.equal(e.problem, 'credentials-invalid');
      assert.equal(e.code, 'invalid-config');
      assert.ok(!e.message.includes('SUBOGUS'), e.message);
      return true;
    },
  );
  assert.throws(
    () => authenticatorOf({ creds: 'secret junk' }, 'h'),
    (e: unknown) => {
      assert.ok(e instanceof NatsSecurityError && !e.message.includes('secret junk'));
      return true;
    },
  );
  assert.throws(
    () => authenticatorOf({ user: 'u', token: 't' } as unknown as { token: string }, 'h'),
    /exactly one of .*got user and token/,
  );
});

test('tlsOptionsOf: a CA, certificate or key that is not PEM is named; cert and key go together', () => {
  assert.deepEqual(tlsOptionsOf({}, 'h'), {});
  assert.throws(() => tlsOptionsOf({ ca: 'nope' }, 'h'), { problem: 'tls-ca-invalid' });
  assert.throws(() => tlsOptionsOf({ cert: 'nope', key: 'nope' }, 'h'), {
    problem: 'tls-certificate-invalid',
  });
  assert.throws(() => tlsOptionsOf({ cert: 'c' }, 'h'), { code: 'usage' });
});

test('securityFailure: what nats.js and Node report becomes a problem; anything else is not one', () => {
  const named = (name: string, message: string): Error => Object.assign(new Error(message), { name });
  assert.equal(
    securityFailure(named('AuthorizationError', 'Authorization Violation'), attempt)?.problem,
    'credentials-refused',
  );
  assert.equal(
    securityFailure(named('AuthorizationError', 'Authorization Violation'), { ...attempt, auth: false })
      ?.problem,
    'credentials-required',
  );
  assert.equal(
    securityFailure(named('UserAuthenticationExpiredError', 'User Authentication Expired'), attempt)?.problem,
    'credentials-expired',
  );
  const untrusted = Object.assign(new Error('self-signed certificate'), {
    code: 'DEPTH_ZERO_SELF_SIGNED_CERT',
  });
  assert.equal(securityFailure(untrusted, attempt)?.code, 'unavailable');
  assert.equal(
    securityFailure(named('ConnectionError', "server does not support 'tls'"), attempt)?.problem,
    'tls-unavailable',
  );
  assert.equal(securityFailure(named('ConnectionError', 'connection refused'), attempt), undefined);
});

test('connectNats: credentials in the URL and as auth are refused before dialling, without the secret', async () => {
  await assert.rejects(
    connectNats({ servers: 'nats://u:hunter2@127.0.0.1:1', auth: { token: 't' } }),
    (e: unknown) => {
      assert.equal((e as { code?: string }).code, 'usage');
      assert.ok(!(e as Error).message.includes('hunter2'));
      return true;
    },
  );
  const aborted = AbortSignal.abort();
  await assert.rejects(
    connectNats({ servers: 'nats://u:hunter2@127.0.0.1:1', signal: aborted }),
    (e: unknown) => {
      assert.match((e as Error).message, /connecting to NATS at nats:\/\/127\.0\.0\.1:1 was cancelled/);
      return true;
    },
  );
});
