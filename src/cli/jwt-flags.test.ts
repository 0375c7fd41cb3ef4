import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { runMain } from '../../test/support/cli-in-process.js';
import { UsageError } from './command.js';
import { parseJwtFlags } from './jwt-flags.js';
import { ToolbusError } from '../errors/index.js';
import { createGateway } from '../gateway/index.js';
import { LiveToolSet } from '../tools/index.js';

const JWKS = 'https://idp.example.com/jwks.json';
const ISSUER = 'https://idp.example.com/';

function usage(fn: () => unknown, fragment: RegExp): void {
  assert.throws(fn, (e: unknown) => e instanceof UsageError && fragment.test(e.message));
}

describe('--jwt-* and --oauth flags', () => {
  test('--jwt-* alone: as before (the audience is required; no OAuth, no scope roles)', () => {
    assert.deepEqual(parseJwtFlags({}, {}, []), { jwt: undefined, oauth: undefined, publicUrl: undefined });
    const jwt = { 'jwt-jwks': JWKS, 'jwt-issuer': ISSUER };
    assert.deepEqual(parseJwtFlags({ ...jwt, 'jwt-audience': 'toolbus' }, {}, []), {
      jwt: { jwksUrl: JWKS, issuer: ISSUER, audience: 'toolbus' },
      oauth: undefined,
      publicUrl: undefined,
    });
    usage(() => parseJwtFlags(jwt, {}, []), /--jwt-jwks needs --jwt-issuer and --jwt-audience \(or --oauth/);
    usage(() => parseJwtFlags({ 'jwt-issuer': ISSUER }, {}, []), /need --jwt-jwks URL/);
    usage(
      () => parseJwtFlags({ ...jwt, 'jwt-jwks': 'http://idp.example.com/jwks', 'jwt-audience': 'a' }, {}, []),
      /--jwt-jwks takes an https URL \(http only on a loopback host\)/,
    );
  });

  test('--oauth: the resource URL is the audience, scopes name roles (caller, approver), the issuer is advertised', () => {
    const { jwt, oauth, publicUrl } = parseJwtFlags(
      { 'jwt-jwks': JWKS, 'jwt-issuer': ISSUER, oauth: true },
      {},
      [],
    );
    assert.deepEqual(jwt, { jwksUrl: JWKS, issuer: ISSUER, resourceAudience: true, rolesFromScope: true });
    assert.deepEqual(oauth, { authorizationServers: [ISSUER] });
    assert.equal(publicUrl, undefined);
  });

  test('--oauth-issuer and --oauth-scopes imply --oauth; --public-url is an origin', () => {
    const settings = parseJwtFlags(
      {
        'jwt-jwks': JWKS,
        'jwt-issuer': ISSUER,
        'jwt-audience': 'toolbus',
        'oauth-issuer': 'https://login.example.com/tenant',
        'oauth-scopes': 'toolbus:caller, toolbus:approver',
        'public-url': 'https://Tools.Example.com/',
      },
      {},
      ['*'],
    );
    assert.deepEqual(settings.oauth, {
      authorizationServers: ['https://login.example.com/tenant'],
      scopesSupported: ['toolbus:caller', 'toolbus:approver'],
    });
    assert.equal(settings.jwt?.audience, 'toolbus');
    assert.equal(settings.jwt?.resourceAudience, true);
    assert.equal(settings.publicUrl, 'https://tools.example.com');
  });

  test('the TOOLBUS_* variables stand for the flags', () => {
    const settings = parseJwtFlags(
      {},
      {
        TOOLBUS_JWT_JWKS: JWKS,
        TOOLBUS_JWT_ISSUER: ISSUER,
        TOOLBUS_OAUTH: '1',
        TOOLBUS_OAUTH_SCOPES: 'toolbus:caller',
        TOOLBUS_PUBLIC_URL: 'https://tools.example.com',
      },
      [],
    );
    assert.deepEqual(settings.oauth, { authorizationServers: [ISSUER], scopesSupported: ['toolbus:caller'] });
    assert.equal(settings.publicUrl, 'https://tools.example.com');
  });

  test('refused: --oauth without a provider, http off loopback, a path in --public-url, a bad scope, * without --public-url', () => {
    const jwt = { 'jwt-jwks': JWKS, 'jwt-issuer': ISSUER };
    usage(() => parseJwtFlags({ oauth: true }, {}, []), /--oauth needs --jwt-jwks URL and --jwt-issuer/);
    usage(() => parseJwtFlags({ 'oauth-scopes': 'toolbus:caller' }, {}, []), /--oauth needs --jwt-jwks/);
    usage(
      () => parseJwtFlags({ ...jwt, 'oauth-issuer': 'http://login.example.com' }, {}, []),
      /--oauth-issuer.* must be an https URL \(http only on a loopback host\), got 'http:\/\/login\.example\.com'/,
    );
    usage(
      () => parseJwtFlags({ ...jwt, 'jwt-issuer': 'http://idp.example.com', oauth: true }, {}, []),
      /--jwt-issuer.* must be an https URL/,
    );
    usage(() => parseJwtFlags({ ...jwt, 'oauth-issuer': `${ISSUER}?x=1` }, {}, []), /takes no query/);
    usage(
      () => parseJwtFlags({ ...jwt, 'oauth-scopes': 'a "b"' }, {}, []),
      /the OAuth scope '"b"' \(toolbus up --oauth-scopes.* is not a valid scope token/,
    );
    usage(
      () => parseJwtFlags({ 'public-url': 'https://example.com/toolbus' }, {}, []),
      /--public-url.* must be an origin .* without a path/,
    );
    usage(
      () => parseJwtFlags({ 'public-url': 'http://example.com' }, {}, []),
      /--public-url.* must be an https URL \(http only on a loopback host\)/,
    );
    usage(
      () => parseJwtFlags({ ...jwt, oauth: true }, {}, ['*']),
      /--allowed-hosts '\*'.* needs the public URL/,
    );
    // http on loopback is fine, for a provider on this machine.
    assert.equal(
      parseJwtFlags(
        { 'jwt-jwks': 'http://127.0.0.1:9/jwks', 'jwt-issuer': 'http://127.0.0.1:9', oauth: true },
        {},
        [],
      ).oauth?.authorizationServers[0],
      'http://127.0.0.1:9',
    );
  });

  test('--public-url follows the rule of createGateway({ publicUrl }): https, or http on a loopback host', () => {
    const accepted = (text: string): boolean => {
      const cli = (() => {
        try {
          return parseJwtFlags({ 'public-url': text }, {}, []).publicUrl !== undefined;
        } catch (error) {
          assert.ok(error instanceof UsageError, String(error));
          return false;
        }
      })();
      const gateway = (() => {
        try {
          createGateway({ tools: new LiveToolSet([]), token: 'public-url-rule-token-0123', publicUrl: text });
          return true;
        } catch (error) {
          assert.ok(error instanceof ToolbusError && error.code === 'usage', String(error));
          return false;
        }
      })();
      assert.equal(cli, gateway, `toolbus up and createGateway agree on '${text}'`);
      return cli;
    };
    for (const text of ['https://tools.example.com', 'http://127.0.0.1:8080', 'http://localhost:3000/']) {
      assert.equal(accepted(text), true, text);
    }
    for (const text of [
      'http://tools.example.com',
      'ftp://tools.example.com',
      'https://tools.example.com/toolbus',
      'https://tools.example.com/?x=1',
      'https://user:pw@tools.example.com',
      'not a url',
    ]) {
      assert.equal(accepted(text), false, text);
    }
  });

  test('toolbus up: a usage error (exit 2) before anything starts, and --help documents the flags with an example', async () => {
    const bad = await runMain(['up', '--oauth']);
    assert.equal(bad.code, 2, bad.stderr);
    assert.match(bad.stderr, /toolbus up: --oauth needs --jwt-jwks/);
    // The gateway's own checks are usage errors too.
    const insecure = await runMain(['up', '--public-url', 'http://tools.example.com']);
    assert.equal(insecure.code, 2, insecure.stderr);
    assert.match(insecure.stderr, /toolbus up: the public URL .* must be an https URL/);
    const help = await runMain(['up', '--help']);
    assert.equal(help.code, 0);
    for (const flag of ['--oauth ', '--oauth-issuer URL', '--oauth-scopes SCOPES', '--public-url URL']) {
      assert.ok(help.stdout.includes(flag), flag);
    }
    assert.match(help.stdout, /admin and impersonate come only\s+from the roles claim/);
    assert.match(
      help.stdout,
      /toolbus up --public-url https:\/\/tools\.example\.com \\\n\s+--jwt-jwks .* \\\n\s+--oauth/,
    );
  });
});
