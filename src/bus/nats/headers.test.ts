import { test } from 'node:test';
import assert from 'node:assert/strict';
import { encodeProperties, parseHeaderBlock, decodeProperties } from './headers.js';
import type { Msg } from '@nats-io/transport-node';

test('properties encode to one NATS header block and parse back', () => {
  const headers = encodeProperties('t', { id: 'abc-1', deadline: '42', traceparent: '00-x-y-01' });
  assert.ok(headers);
  const text = new TextDecoder().decode(headers.encode());
  assert.equal(text, 'NATS/1.0\r\nid: abc-1\r\ndeadline: 42\r\ntraceparent: 00-x-y-01\r\n\r\n');
  assert.deepEqual({ ...parseHeaderBlock(text) }, { id: 'abc-1', deadline: '42', traceparent: '00-x-y-01' });
  assert.equal(encodeProperties('t', {}), undefined);
});

test('a status line, repeated keys, colons in values and odd keys parse safely', () => {
  const parsed = parseHeaderBlock(
    'NATS/1.0 503\r\nid: a\r\nid: b\r\nurl: http://x:1/y\r\n__proto__: z\r\n\r\n',
  );
  assert.deepEqual({ ...parsed }, { id: 'a', url: 'http://x:1/y' });
  assert.equal(Object.getPrototypeOf(parsed), Object.prototype);
});

test('properties NATS headers cannot carry reject with invalid-request naming them', () => {
  assert.throws(() => encodeProperties('request:tg:joke', { 'has space': 'x' }), {
    name: 'ToolbusError',
    code: 'invalid-request',
    message: /topic 'request:tg:joke'.*property 'has space'/,
  });
  assert.throws(() => encodeProperties('t', { 'a:b': 'x' }), { code: 'invalid-request' });
  assert.throws(() => encodeProperties('t', { id: 'line\r\nbreak' }), {
    code: 'invalid-request',
    message: /property 'id' must be a string without line breaks/,
  });
});

test('a message without the client internals is read through msg.headers', () => {
  const entries: [string, string[]][] = [
    ['id', ['1', '2']],
    ['x', ['y']],
  ];
  const msg = { headers: { [Symbol.iterator]: () => entries[Symbol.iterator]() } } as unknown as Msg;
  assert.deepEqual({ ...decodeProperties(msg) }, { id: '1', x: 'y' });
  assert.deepEqual({ ...decodeProperties({ headers: undefined } as unknown as Msg) }, {});
});
