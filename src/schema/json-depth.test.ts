import { test } from 'node:test';
import assert from 'node:assert/strict';
import { jsonDepth } from './index.js';

test('jsonDepth counts nesting of arrays and objects, not brackets inside strings, and stops early', () => {
  assert.equal(jsonDepth('42'), 0);
  assert.equal(jsonDepth('"[[[{"'), 0);
  assert.equal(jsonDepth('[]'), 1);
  assert.equal(jsonDepth('{"a":[{"b":[]}],"c":{}}'), 4);
  assert.equal(jsonDepth('["\\"[[[", [1]]'), 2, 'an escaped quote does not end the string');
  const deep = '['.repeat(1_000_000) + ']'.repeat(1_000_000);
  assert.equal(jsonDepth(deep, 512), 513, 'stops just past the limit');
  assert.equal(jsonDepth(deep), 1_000_000);
});
