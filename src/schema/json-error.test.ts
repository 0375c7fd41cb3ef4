import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { findJsonError } from './index.js';

describe('findJsonError', () => {
  test('a leading byte order mark is reported where JSON.parse fails on it, not at the end', () => {
    const text = '\uFEFF{"a": 1}';
    assert.throws(() => JSON.parse(text), SyntaxError);
    const where = findJsonError(text);
    assert.equal(where?.position, 0);
    assert.equal(where?.line, 1);
    assert.equal(where?.column, 1);
    assert.match(where?.reason ?? '', /byte order mark/);
  });

  test('an error after the value still gets its own position', () => {
    assert.deepEqual(findJsonError('{"a": 1}}'), {
      line: 1,
      column: 9,
      position: 8,
      reason: "unexpected '}' after the end of the value",
    });
  });
});
