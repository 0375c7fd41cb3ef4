import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { JsonValue } from '../../../schema/index.js';
import { parseMcpConfig } from '../mcp-config.js';
import { parseOAuthConfig } from './oauth-config.js';
import { resolveMcpOAuthOptions } from './oauth-options.js';

const where = "config 'mcp/remote'";

describe("the 'oauth' object of an mcp item", () => {
  test('kebab-case fields become the oauth options; secrets are read from the environment', () => {
    const options = parseOAuthConfig(
      {
        grant: 'client_credentials',
        'client-id': 'reports',
        'client-secret': { env: 'REPORTS_SECRET' },
        'token-endpoint-auth-method': 'client_secret_post',
        scope: 'mcp:tools',
        issuer: 'https://as.example.com',
        'refresh-margin-ms': 5000,
      },
      where,
      { REPORTS_SECRET: 'the-secret' },
    );
    assert.deepEqual(options, {
      grant: 'client_credentials',
      clientId: 'reports',
      clientSecret: 'the-secret',
      tokenEndpointAuthMethod: 'client_secret_post',
      scope: 'mcp:tools',
      issuer: 'https://as.example.com',
      refreshMarginMs: 5000,
    });
    assert.deepEqual(parseOAuthConfig({ grant: 'authorization-code' }, where, {}), {
      grant: 'authorization_code',
    });
  });

  test('a secret written into config is refused: only {"env": NAME}', () => {
    for (const field of ['client-secret', 'private-key']) {
      assert.throws(() => parseOAuthConfig({ 'client-id': 'x', [field]: 'plain-text-secret' }, where, {}), {
        code: 'invalid-config',
        message: new RegExp(
          `'oauth.${field}' must be \\{"env": "VARIABLE_NAME"\\}: config never holds a secret`,
        ),
      });
    }
  });

  test('a variable that is not set is named, and no value is ever shown', () => {
    assert.throws(
      () => parseOAuthConfig({ 'client-id': 'x', 'client-secret': { env: 'MISSING_SECRET' } }, where, {}),
      { code: 'invalid-config', message: /environment variable 'MISSING_SECRET', which is not set/ },
    );
  });

  test('an unknown field or grant says what is expected', () => {
    assert.throws(() => parseOAuthConfig({ 'client-secrt': { env: 'X' } }, where, {}), {
      code: 'invalid-config',
      message: /no field 'client-secrt' \(did you mean 'client-secret'\?\)/,
    });
    assert.throws(() => parseOAuthConfig({ grant: 'password' }, where, {}), {
      message: /'oauth.grant' must be "authorization_code" or "client_credentials", got 'password'/,
    });
    assert.throws(() => parseOAuthConfig('yes', where, {}), { message: /'oauth' must be an object/ });
  });

  test('the checks of the oauth options apply, naming the fields as config does, also before secrets are read', () => {
    const check = (oauth: JsonValue, env?: Record<string, string>): void =>
      void parseMcpConfig(
        'remote',
        { url: 'https://mcp.example.com/mcp', oauth },
        env === undefined ? { readSecrets: false } : { env },
      );
    assert.throws(() => check({ grant: 'client_credentials' }), {
      code: 'invalid-config',
      message:
        /^config 'mcp\/remote': 'oauth.client-id' is needed for grant 'client_credentials': a service authenticates/,
    });
    assert.throws(() => check({ 'redirect-url': 'foo' }), {
      code: 'invalid-config',
      message: /^config 'mcp\/remote': 'oauth.redirect-url' must be an absolute URL, got 'foo'/,
    });
    assert.throws(
      () => check({ 'client-id': 'c', 'client-secret': { env: 'S' }, 'private-key': { env: 'K' } }),
      { message: /'oauth.client-secret' and 'oauth.private-key' are two ways to authenticate the client/ },
    );
    assert.throws(
      () => check({ 'client-secret': { env: 'S' } }, { S: 'secret-value' }),
      (error: Error) => {
        assert.match(error.message, /'oauth.client-id' is needed with a client secret or private key/);
        assert.ok(!error.message.includes('secret-value'));
        return true;
      },
    );
    assert.throws(() => check({ 'token-endpoint-auth-method': 'client_secret_jwt' }), {
      message:
        /'oauth.token-endpoint-auth-method' must be one of client_secret_basic, .*, got 'client_secret_jwt'/,
    });
    assert.throws(() => check({ 'refresh-margin-ms': -1 }), {
      message: /'oauth.refresh-margin-ms' must be a number of ms >= 0, got -1/,
    });
    assert.throws(() => check({ scope: '' }), {
      message: /'oauth.scope' must be a non-empty string, got an empty string/,
    });
    // A key that is not read yet cannot be checked; everything else is.
    check({ grant: 'client_credentials', 'client-id': 'c', 'private-key': { env: 'K' } });
  });

  test('parseMcpConfig: oauth needs a url, excludes a static token, and its secrets stay out of the connection key', () => {
    const env = { S: 'resolved-secret' };
    const config = parseMcpConfig(
      'remote',
      {
        url: 'https://mcp.example.com/mcp',
        oauth: { grant: 'client_credentials', 'client-id': 'c', 'client-secret': { env: 'S' } },
      },
      { env },
    );
    assert.equal('url' in config.params && config.params.oauth?.clientSecret, 'resolved-secret');
    assert.ok(!config.connectionKey.includes('resolved-secret'));
    assert.ok(config.connectionKey.includes('"remote"'), 'items with oauth do not share a session');
    assert.throws(() => parseMcpConfig('local', { command: 'node', oauth: {} }), {
      message: /'oauth' applies to a server reached over HTTP/,
    });
    assert.throws(
      () => parseMcpConfig('both', { url: 'https://mcp.example.com/mcp', 'auth-token': 't', oauth: {} }),
      { message: /give either 'oauth' or a token/ },
    );
  });
});

describe('resolveMcpOAuthOptions', () => {
  test('a service grant needs a pre-registered client; a secret and a key exclude each other', () => {
    assert.throws(() => resolveMcpOAuthOptions({ grant: 'client_credentials' }), {
      code: 'invalid-config',
      message: /'oauth.clientId' is needed for grant 'client_credentials'/,
    });
    assert.throws(() => resolveMcpOAuthOptions({ clientId: 'c', clientSecret: 's', privateKey: 'k' }), {
      message: /two ways to authenticate the client/,
    });
    assert.throws(() => resolveMcpOAuthOptions({ clientMetadataUrl: 'http://example.com/client.json' }), {
      message: /'oauth.clientMetadataUrl' must be an https URL with a path/,
    });
    assert.throws(() => resolveMcpOAuthOptions({ redirectUrl: 'http://example.com/callback' }), {
      message: /https, or http on a loopback address/,
    });
  });

  test('a private key that is not PEM is refused without quoting it', () => {
    assert.throws(
      () =>
        resolveMcpOAuthOptions({
          grant: 'client_credentials',
          clientId: 'c',
          privateKey: 'SECRETKEYMATERIAL',
        }),
      (error: Error) => {
        assert.match(error.message, /'oauth.privateKey' must be a PEM private key/);
        assert.ok(!error.message.includes('SECRETKEYMATERIAL'));
        return true;
      },
    );
  });

  test('the signing algorithm follows the key', async () => {
    const { generateKeyPairSync } = await import('node:crypto');
    const pem = (key: ReturnType<typeof generateKeyPairSync>['privateKey']): string =>
      key.export({ type: 'pkcs8', format: 'pem' }).toString();
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
    const base = { grant: 'client_credentials', clientId: 'c' } as const;
    assert.equal(resolveMcpOAuthOptions({ ...base, privateKey: pem(ec) }).signingAlgorithm, 'ES256');
    assert.equal(resolveMcpOAuthOptions({ ...base, privateKey: pem(rsa) }).signingAlgorithm, 'RS256');
    assert.equal(
      resolveMcpOAuthOptions({ ...base, privateKey: pem(rsa), signingAlgorithm: 'PS256' }).signingAlgorithm,
      'PS256',
    );
  });
});
