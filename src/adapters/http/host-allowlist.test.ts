/**
 * @module Unit tests of host-allowlist.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isHostAllowed } from './host-allowlist.js';

test('allowlist: exact names case-insensitively, "*." for subdomains only, IPv6 with or without brackets', () => {
  const list = ['API.example.com', '*.internal.net', '[::1]', '127.0.0.1'];
  assert.equal(isHostAllowed('api.example.com', list), true);
  assert.equal(isHostAllowed('api.example.com.', list), true);
  assert.equal(isHostAllowed('evil-api.example.com', list), false);
  assert.equal(isHostAllowed('example.com', list), false);
  assert.equal(isHostAllowed('a.internal.net', list), true);
  assert.equal(isHostAllowed('a.b.internal.net', list), true);
  assert.equal(isHostAllowed('internal.net', list), false);
  assert.equal(isHostAllowed('xinternal.net', list), false);
  assert.equal(isHostAllowed('[::1]', list), true);
  assert.equal(isHostAllowed('127.0.0.2', list), false);
  assert.equal(isHostAllowed('anything', []), false);
});
