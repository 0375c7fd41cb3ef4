import { test } from 'node:test';
import assert from 'node:assert/strict';
import { canonicalTopic, parseTopic } from './topics.js';

test('parseTopic hands out a fresh result each time, so a caller changing one changes no other', () => {
  const first = parseTopic('non-persistent://tg/request/joke');
  first.parts.push('changed');
  assert.deepEqual(parseTopic('non-persistent://tg/request/joke'), {
    canonical: 'request:tg:joke',
    parts: ['request', 'tg', 'joke'],
    persistent: false,
  });
  assert.equal(canonicalTopic('request:tg:joke'), 'request:tg:joke');
  assert.throws(() => canonicalTopic('bad topic'), /not a valid topic name/);
  assert.throws(() => canonicalTopic('bad topic'), /not a valid topic name/, 'an error is not remembered');
});
