import { test } from 'node:test';
import assert from 'node:assert/strict';
import { anyGlobMatches, globMatches } from './glob.js';

test('globs: * is any run of characters, the rest is literal', () => {
  assert.ok(globMatches('tell-*', 'tell-joke'));
  assert.ok(globMatches('tell-*', 'tell-'));
  assert.ok(!globMatches('tell-*', 'tel-joke'));
  assert.ok(globMatches('*-joke', 'tell-joke'));
  assert.ok(globMatches('*', ''));
  assert.ok(globMatches('a*b*c', 'abc'));
  assert.ok(globMatches('a*b*c', 'axxbyyc'));
  assert.ok(!globMatches('a*b*c', 'acb'));
  assert.ok(!globMatches('ab*ba', 'aba'), 'the ends may not overlap');
  assert.ok(globMatches('get.*', 'get.x'), 'a dot is literal');
  assert.ok(!globMatches('get.*', 'getx'));
  assert.ok(!globMatches('exact', 'exactly'));
  assert.ok(anyGlobMatches(['x', 'get-*'], 'get-weather'));
  assert.ok(!anyGlobMatches([], 'anything'));
});
