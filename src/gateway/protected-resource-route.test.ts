import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import {
  bearerChallenge,
  requestOrigin,
  resourceMetadataUrl,
  resourcesOf,
} from './protected-resource-route.js';

/** A request as far as {@link requestOrigin} reads it. */
function request(localPort: number | undefined): IncomingMessage {
  return { socket: { localPort } } as unknown as IncomingMessage;
}

describe('bearerChallenge', () => {
  test('just Bearer when it says nothing; the parameters in order otherwise', () => {
    assert.equal(bearerChallenge({}), 'Bearer');
    assert.equal(
      bearerChallenge({
        resourceMetadata: 'https://t.example/.well-known/oauth-protected-resource/mcp',
        error: 'invalid_token',
        description: 'it has expired',
      }),
      'Bearer resource_metadata="https://t.example/.well-known/oauth-protected-resource/mcp", ' +
        'error="invalid_token", error_description="it has expired"',
    );
  });

  test('a description cannot break out of its quotes or the header (RFC 6750 §3 characters only)', () => {
    const header = bearerChallenge({
      error: 'invalid_token',
      description: 'its issuer is not "x", \\ nor\r\nSet-Cookie: a=b – ünïcode',
    });
    assert.equal(
      header,
      `Bearer error="invalid_token", error_description="its issuer is not 'x', ' nor??Set-Cookie: a=b ? ?n?code"`,
    );
    assert.equal(
      bearerChallenge({ description: 'x'.repeat(1000) }).length,
      'Bearer error_description=""'.length + 300,
    );
  });
});

describe('resource URLs', () => {
  test('a request path belongs to its endpoint and the gateway', () => {
    const o = 'https://t.example';
    assert.deepEqual(resourcesOf(o, '/mcp'), [`${o}/mcp`, o]);
    assert.deepEqual(resourcesOf(o, '/mcp/research'), [`${o}/mcp/research`, `${o}/mcp`, o]);
    assert.deepEqual(resourcesOf(o, '/api/v1/tools'), [o]);
    assert.deepEqual(resourcesOf(o, '/mcp/a/b'), [o], 'not an MCP endpoint');
    assert.equal(
      resourceMetadataUrl(o, '/mcp/research'),
      `${o}/.well-known/oauth-protected-resource/mcp/research`,
    );
    assert.equal(resourceMetadataUrl(o, '/api/v1/agent'), `${o}/.well-known/oauth-protected-resource`);
  });

  test('the origin: the public one, else http, the known host and the socket’s port', () => {
    assert.equal(requestOrigin(request(8888), 'localhost', 'https://t.example'), 'https://t.example');
    assert.equal(requestOrigin(request(8888), 'localhost', undefined), 'http://localhost:8888');
    assert.equal(
      requestOrigin(request(8888), 'tools.example.com', undefined),
      'http://tools.example.com:8888',
    );
    assert.equal(requestOrigin(request(8888), 'my_host', undefined), undefined, 'no safe URL');
    assert.equal(requestOrigin(request(80), '[::1]', undefined), 'http://[::1]');
    assert.equal(requestOrigin(request(8888), undefined, undefined), undefined, 'no known host');
    assert.equal(requestOrigin(request(8888), 'a"b', undefined), undefined, 'not safe in a URL or header');
    assert.equal(
      requestOrigin(request(undefined), 'localhost', undefined),
      undefined,
      'the socket is closed',
    );
  });
});
