import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CallIdSource } from './call-id.js';

test('call ids are unique within a source, across the 36-id blocks, and differ between sources', () => {
  const source = new CallIdSource();
  const ids = Array.from({ length: 36 * 40 + 7 }, () => source.next());
  assert.equal(new Set(ids).size, ids.length);
  for (const id of ids) assert.match(id, /^[0-9a-f]{16}-[0-9a-z]{2,}$/);
  const prefix = (id: string): string => id.slice(0, 17);
  assert.equal(new Set(ids.map(prefix)).size, 1, 'one prefix per source');
  assert.notEqual(prefix(new CallIdSource().next()), prefix(ids[0]!));
});
