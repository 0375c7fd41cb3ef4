import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MsgHdrsImpl, type Msg } from '@nats-io/transport-node';
import { FAST_HEADERS, PUBLIC_HEADERS, parseHeaderBlock, type HeaderCodec } from './headers.js';

const CODECS: [string, HeaderCodec][] = [
  ['fast', FAST_HEADERS],
  ['public', PUBLIC_HEADERS],
];

/** The header block a codec hands to the client, as the client would put it on the wire. */
function wireText(codec: HeaderCodec, properties: Record<string, string>): string {
  const encoded = codec.encode('t', properties);
  assert.ok(encoded);
  const bytes = (encoded.headers as unknown as { encode(): Uint8Array }).encode();
  assert.equal(bytes.byteLength, encoded.byteLength, 'byteLength is the size on the wire');
  return new TextDecoder().decode(bytes);
}

for (const [name, codec] of CODECS) {
  test(`${name} codec: properties encode to one NATS header block`, () => {
    const properties = { id: 'abc-1', deadline: '42', traceparent: '00-x-y-01', reason: 'café: ☕' };
    assert.equal(
      wireText(codec, properties),
      'NATS/1.0\r\nid: abc-1\r\ndeadline: 42\r\ntraceparent: 00-x-y-01\r\nreason: café: ☕\r\n\r\n',
    );
    assert.equal(codec.encode('t', {}), undefined);
  });

  test(`${name} codec: properties NATS headers cannot carry reject with invalid-request naming them`, () => {
    assert.throws(() => codec.encode('request:tg:joke', { 'has space': 'x' }), {
      name: 'ToolbusError',
      code: 'invalid-request',
      message: /topic 'request:tg:joke'.*property 'has space'/,
    });
    assert.throws(() => codec.encode('t', { 'a:b': 'x' }), { code: 'invalid-request' });
    assert.throws(() => codec.encode('t', { id: 'line\r\nbreak' }), {
      code: 'invalid-request',
      message: /property 'id' must be a string without line breaks/,
    });
  });
}

test('a status line, repeated keys, colons in values and odd keys parse safely', () => {
  const parsed = parseHeaderBlock(
    'NATS/1.0 503\r\nid: a\r\nid: b\r\nurl: http://x:1/y\r\n__proto__: z\r\n\r\n',
  );
  assert.deepEqual({ ...parsed }, { id: 'a', url: 'http://x:1/y' });
  assert.equal(Object.getPrototypeOf(parsed), Object.prototype);
});

test('a message without the client internals is read through msg.headers by both codecs', () => {
  const msg = { headers: MsgHdrsImpl.fromRecord({ id: ['1', '2'], x: ['y'] }) } as unknown as Msg;
  for (const [, codec] of CODECS) {
    assert.deepEqual({ ...codec.decode(msg) }, { id: '1', x: 'y' });
    assert.deepEqual({ ...codec.decode({ headers: undefined } as unknown as Msg) }, {});
  }
});
