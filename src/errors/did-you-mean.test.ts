import { test } from 'node:test';
import assert from 'node:assert/strict';
import { closestName, didYouMean } from './index.js';

test('closestName suggests a likely typo (a missing, extra, wrong or swapped letter) and nothing far off', () => {
  const commands = ['up', 'tools', 'call', 'ask', 'config', 'service', 'mcp', 'init'];
  assert.equal(closestName('tols', commands), 'tools');
  assert.equal(closestName('toolz', commands), 'tools');
  assert.equal(closestName('cnofig', commands), 'config');
  assert.equal(closestName('servise', commands), 'service');
  assert.equal(closestName('CALL', commands), 'call');
  assert.equal(closestName('pu', commands), 'up');
  // Too far from every name, or too short to guess from.
  assert.equal(closestName('deploy', commands), undefined);
  assert.equal(closestName('x', commands), undefined);
  assert.equal(closestName('anything', []), undefined);
});

test('didYouMean is ready to append, and empty without a guess', () => {
  assert.equal(didYouMean('tool-servce', ['tool-service', 'http']), " (did you mean 'tool-service'?)");
  assert.equal(didYouMean('zzz', ['tool-service', 'http']), '');
});
