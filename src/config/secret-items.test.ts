import { test } from 'node:test';
import assert from 'node:assert/strict';
import { WITHHELD, configWriteRefusal, showConfigValue } from './index.js';

test('an mcp-oauth item is shown with its credentials withheld and named; other items unchanged', () => {
  const value = {
    server: 'https://mcp.example.com/mcp',
    client: {
      client_id: 'abc',
      client_secret: 'dcr-secret',
      registration_access_token: 'rat',
      issuer: 'https://as',
    },
    tokens: {
      access_token: 'at',
      refresh_token: 'rt',
      token_type: 'Bearer',
      scope: 'mcp:tools',
      id_token: 'it',
    },
    pending: { 'code-verifier': 'v', state: 's', 'started-at': 1 },
    'expires-at': 123,
    'some-new-field': 'x',
  };
  const shown = showConfigValue('mcp-oauth', value);
  assert.deepEqual(shown.withheld.sort(), [
    'client.client_secret',
    'client.registration_access_token',
    'pending.code-verifier',
    'pending.state',
    'some-new-field',
    'tokens.access_token',
    'tokens.id_token',
    'tokens.refresh_token',
  ]);
  const text = JSON.stringify(shown.value);
  for (const secret of ['dcr-secret', '"rat"', '"at"', '"rt"', '"it"', '"v"'])
    assert.ok(!text.includes(secret), secret);
  assert.equal((shown.value as { tokens: { access_token: string } }).tokens.access_token, WITHHELD);
  assert.equal((shown.value as { tokens: { scope: string } }).tokens.scope, 'mcp:tools');
  assert.equal((shown.value as { 'expires-at': number })['expires-at'], 123);

  const tool = { type: 'http', headers: { Authorization: 'Bearer x' } };
  assert.deepEqual(showConfigValue('tool', tool), { value: tool, withheld: [] });
  assert.deepEqual(showConfigValue('mcp-oauth', 'not an object'), { value: WITHHELD, withheld: ['(value)'] });
});

test('only toolbus writes an mcp-oauth item; the refusal says how to log in and out', () => {
  assert.match(
    configWriteRefusal('mcp-oauth', 'files') ?? '',
    /only toolbus writes \('toolbus mcp login files'\).*'toolbus mcp logout files' or 'toolbus config delete mcp-oauth\/files'/,
  );
  assert.equal(configWriteRefusal('mcp', 'files'), undefined);
});
