import { test } from 'node:test';
import assert from 'node:assert/strict';
import { topicToSubject, checkSubjectPrefix } from './subjects.js';

test('the Pulsar, persistent and logical forms of a topic map to one subject', () => {
  assert.equal(topicToSubject('non-persistent://tg/request/joke'), 'request.tg.joke');
  assert.equal(topicToSubject('persistent://tg/request/joke'), 'request.tg.joke');
  assert.equal(topicToSubject('request:tg:joke'), 'request.tg.joke');
  assert.equal(topicToSubject('request:tg:agent:ws1:flow-1'), 'request.tg.agent.ws1.flow-1');
  assert.equal(topicToSubject('tool-descriptors'), 'tool-descriptors');
});

test('a prefix goes in front', () => {
  assert.equal(topicToSubject('request:tg:joke', 'tb'), 'tb.request.tg.joke');
  assert.equal(topicToSubject('tool-descriptors', 'acme.prod'), 'acme.prod.tool-descriptors');
});

test('a dot inside a part separates tokens; empty tokens and wildcards are rejected', () => {
  assert.equal(topicToSubject('request:tg:joke.v2'), 'request.tg.joke.v2');
  assert.throws(() => topicToSubject('request:tg:.joke'), {
    code: 'invalid-config',
    message: /'request:tg:.joke'/,
  });
  assert.throws(() => topicToSubject('a..b'), { code: 'invalid-config' });
  assert.throws(() => topicToSubject('request:tg:*'), { code: 'invalid-config' });
  assert.throws(() => topicToSubject('request:tg:>'), { code: 'invalid-config' });
  assert.throws(() => checkSubjectPrefix('a.*'), { code: 'invalid-config', message: /prefix 'a\.\*'/ });
  assert.throws(() => checkSubjectPrefix('a..b'), { code: 'invalid-config' });
});
