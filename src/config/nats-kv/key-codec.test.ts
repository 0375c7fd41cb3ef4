import { test } from 'node:test';
import assert from 'node:assert/strict';
import { toKvKey, fromKvKey, encodeKeyPart, decodeKeyPart } from './key-codec.js';

test('type and key join with a dot; dots and equals signs inside them are escaped', () => {
  assert.equal(toKvKey('tool-service', 'joke-service'), 'tool-service.joke-service');
  assert.equal(toKvKey('tool', 'v1.2'), 'tool.v1=2E2');
  assert.equal(toKvKey('mcp', 'a=b'), 'mcp.a=3Db');
  assert.deepEqual(fromKvKey('tool.v1=2E2'), { type: 'tool', key: 'v1.2' });
  assert.deepEqual(fromKvKey('mcp.a=3Db'), { type: 'mcp', key: 'a=b' });
});

test('every encoded key uses only KV key characters and round-trips', () => {
  for (const name of ['x', 'a.b.c', '=', '==2E', 'naïve key/with spaces', '日本', 'a_b-c']) {
    const encoded = encodeKeyPart(name);
    assert.match(encoded, /^[-_=A-Za-z0-9]+$/);
    assert.equal(decodeKeyPart(encoded), name);
    assert.deepEqual(fromKvKey(toKvKey('t.y', name)), { type: 't.y', key: name });
  }
});

test('keys not written by the store are not read as items', () => {
  assert.equal(fromKvKey('no-dot'), undefined);
  assert.equal(fromKvKey('a.b.c'), undefined);
  assert.equal(fromKvKey('.b'), undefined);
});
