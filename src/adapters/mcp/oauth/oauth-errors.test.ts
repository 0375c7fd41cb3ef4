import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  IssuerMismatchError,
  OAuthError,
  RegistrationRejectedError,
  UnauthorizedError,
} from '@modelcontextprotocol/client';
import { oauthError, quoted } from './oauth-errors.js';

const hint = "run 'toolbus mcp login files'";

test('OAuth failures become toolbus codes with what to do; anything else is not theirs', () => {
  const needs = oauthError(new UnauthorizedError(), 'files', hint);
  assert.equal(needs?.code, 'unauthorized');
  assert.equal(needs?.message, `MCP server 'files' requires authorization (HTTP 401); ${hint}`);

  const rejected = oauthError(
    new RegistrationRejectedError({
      status: 400,
      body: '{"error":"invalid_client_metadata","error_description":"no such scope"}',
      submittedMetadata: { redirect_uris: [] },
    }),
    'files',
    hint,
  );
  assert.match(
    rejected?.message ?? '',
    /refused to register toolbus as a client \(HTTP 400 invalid_client_metadata: no such scope\); register a client there/,
  );

  const grant = oauthError(new OAuthError('invalid_grant', 'refresh token revoked'), 'files', hint);
  assert.match(
    grant?.message ?? '',
    /refused: invalid_grant: refresh token revoked \(the grant expired or was revoked; run/,
  );

  const down = oauthError(
    Object.assign(
      new TypeError('fetch failed', {
        cause: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' }),
      }),
      {
        [Symbol.for('mcp.authSeamEscape')]: true,
      },
    ),
    'files',
    hint,
  );
  assert.equal(down?.code, 'unavailable');
  assert.match(
    down?.message ?? '',
    /authorization server of MCP server 'files' could not be reached: fetch failed: connect ECONNREFUSED/,
  );

  assert.equal(oauthError(new Error('socket hang up'), 'files', hint), undefined, 'not an auth failure');
});

test("the issuer a redirect claims is never repeated (it may be an attacker's)", () => {
  const error = oauthError(
    new IssuerMismatchError('authorization_response', 'https://as.example.com', 'https://evil.example'),
    'files',
    hint,
  );
  assert.equal(error?.code, 'unauthorized');
  assert.ok(!error?.message.includes('evil'), error?.message);
});

test('quoted text is one line of at most 200 characters', () => {
  assert.equal(quoted('a\nb\u0007c'), 'a b c');
  assert.equal(quoted('x'.repeat(500)).length, 200);
});
